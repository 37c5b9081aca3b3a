"""Bayesian online change-point detection (FALCON's online module).

:mod:`baselines.changepoint.bocpd` is the streaming, run-length-truncated
BOCPD (Adams and MacKay 2007) with Student-t (Normal-Gamma) and
Beta-Binomial observation models; it agrees with the PyPI package
``bayesian-changepoint-detection`` (the FALCON paper's reference [49]) on the
same data. :mod:`baselines.changepoint.detectors` runs it per path on RTT
samples and packet losses behind the ``update(path, sample, now) -> bool`` /
``reset()`` interface of :mod:`baselines.bandit.change`.
"""

from baselines.changepoint.bocpd import BOCPD, BetaBinomial, ObservationModel, StudentT
from baselines.changepoint.detectors import ChangeEvent, PathChangeDetector, StreamDetector

__all__ = [
    "BOCPD",
    "StudentT",
    "BetaBinomial",
    "ObservationModel",
    "PathChangeDetector",
    "StreamDetector",
    "ChangeEvent",
]
