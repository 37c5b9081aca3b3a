"""Per-path change detection for multipath scheduling (FALCON's online module).

:class:`PathChangeDetector` runs, for every path, one BOCPD on the RTT
samples and one on the packet losses, and satisfies the interface of
:mod:`baselines.bandit.change` (``update(path, sample, now) -> bool`` with an
RTT sample in seconds, ``reset()``, a ``detections`` list of ``(time, path)``),
so it can be injected wherever a ``ChangeDetector`` is expected (e.g.
``MPeekaboo(detector=PathChangeDetector())``; ``make_detector`` passes such
an object through). Losses need their own feed, ``update_loss``.

RTT signal (``update_rtt``, also ``update``)
--------------------------------------------
Samples are averaged over groups of ``rtt_group`` consecutive samples (default
4) and the group mean, in milliseconds, enters the Student-t model through a
cube root: ``y = (mean RTT in ms) ** (1/3)``. Why: the emulator draws
per-packet RTTs as ``mean * Gamma(shape 1/cv^2)`` (``envs.link.DelayModel``),
with std/mean ratios up to 150 % in the condition grid. For cv >= 1 the
Gamma has many near-zero draws, which a Gaussian model reads as a short new
low-RTT regime: per-sample values gave 20-60 false alarms per 10 000 samples
at cv 1-1.5 in log space and 1-14 in cube-root space. The mean of 4 draws is
a Gamma with 4x the shape, and the cube root is the Wilson-Hilferty
normalising transform of a Gamma; together they bring the false alarms to
about 1 per million samples (the log of the group mean gives 3-5x more than
its cube root). The cube root is not scale-free, so the prior is weak: mu =
50 ms ** (1/3), kappa = 0.01 (mean essentially unknown), alpha = 1, beta =
0.5 (prior precision 2, a std of ~0.7 in cube-root units; the actual std
ranges from ~0.03 at 5 ms / cv 0.1 to ~2 at 600 ms / cv 1.5); beta 0.1
with kappa 0.1 gave the same delays and ~5x more false alarms. A detection is only possible
at the end of a group, so delays are multiples of ``rtt_group`` samples.

Loss signal (``update_loss``)
-----------------------------
Losses are counted over groups of ``loss_group`` packets (default 100, the
paper's "binomial" trick) and the count enters a Beta-Binomial model with a
Beta(0.5, 20) prior (mean 2.4 %, weak). Groups of 20-50 packets detect big
jumps a little earlier but give 4-20x more false alarms.

Detection rule
--------------
With a constant hazard ``P(r_t = 0) = H`` after every update, so the
package's change-point mass carries no information, and thresholding
``P(r_t <= k)`` fires on single outliers: one far sample moves the mass to
``r = 1`` (the prior predictive explains it best) and back over the next few
samples (a 5-sigma outlier after 300 Gaussian samples puts 0.92 on
``r <= 3``; from about 6 sigma on, one sample is a change for BOCPD, whose
model has no outlier component). What works, over a grid of means 5-600 ms,
std ratios 10-150 %, mean changes 1.5x-5x both ways and loss rates 0-20 %
(``benchmarks/bocpd_detection.py``):

    a change is reported after update ``t`` when
    ``P(min_lag <= r_t <= t - anchor - min_run) > threshold``

i.e. the posterior is confident that a new segment started at least
``min_lag`` updates ago (one outlier is not enough: ``min_lag`` further
samples must fit the new segment better than the old one) and at least
``min_run`` updates after the last report (``anchor``: the update count at
the last report, 0 at the reset). The upper bound is the refractory rule:
the mass of an already reported change sits at ``r >= t - anchor`` and is
never counted again, so a change is reported once however long its mass
stays high; a second change less than ``min_run`` updates after a report is
merged into it. The catch-all bin ``r >= max_run_length`` is never counted.
Defaults: ``min_lag`` 4 RTT groups (16 samples) / 2 loss groups (200
packets), ``threshold`` 0.8, ``min_run`` 10 updates, hazard 1/1000 updates,
``max_run_length`` 300 updates. A larger ``min_lag`` or ``threshold`` trades
delay for fewer false alarms; without an upper window on ``r`` slow-evidence
changes (cv 1.5, 1.5x) are still reported after 50+ groups.

An optional ``refractory_s`` additionally mutes a path's signal for that many
seconds after one of its reports.

Closed loop caveat: per-ACK RTTs in the emulator include self-induced
queueing (slow start, congestion-control sawtooth), which *is* a change of
the RTT distribution and is reported as one. On 30 MB minRTT downloads:
up to 27 reports in the first second (slow start), then 1-4 per 10 000 RTT
samples on the Table I pairs and 6-12 on a 50 Mbit/s 10 ms + 5 Mbit/s
150 ms pair with 1-BDP buffers. Whether FALCON acts on such reports (e.g.
only when the covering condition cell changes) is for the integration to
decide.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from baselines.changepoint.bocpd import BOCPD, BetaBinomial, StudentT

#: default Normal-Gamma prior on cube-root-ms RTT group means (see module doc)
RTT_PRIOR = {"alpha": 1.0, "beta": 0.5, "kappa": 0.01, "mu": 50.0 ** (1.0 / 3.0)}
#: default Beta prior on the per-packet loss rate
LOSS_PRIOR = {"alpha": 0.5, "beta": 20.0}


@dataclass(frozen=True)
class ChangeEvent:
    """One detection: ``time`` [s], ``path``, ``signal`` ("rtt" or "loss"),
    ``lag``: samples (RTT samples or packets) between the estimated change
    point and the detection (MAP run length in the counted window times the
    group size), ``probability``: the posterior mass that fired."""

    time: float
    path: int
    signal: str
    lag: int
    probability: float


class StreamDetector:
    """One BOCPD on a stream of group statistics plus the detection rule.

    ``feed(y)`` updates the BOCPD with one (already transformed) value and
    returns the MAP run length of the counted window on a detection, else
    None.
    """

    def __init__(
        self, bocpd: BOCPD, threshold: float = 0.8, min_lag: int = 4, min_run: int = 10
    ) -> None:
        if not 0.0 < threshold < 1.0:
            raise ValueError(f"threshold must be in (0, 1), got {threshold}")
        if int(min_lag) != min_lag or min_lag < 1:
            raise ValueError(f"min_lag must be an integer >= 1, got {min_lag}")
        if int(min_run) != min_run or min_run < 1:
            raise ValueError(f"min_run must be an integer >= 1, got {min_run}")
        if min_lag >= bocpd.max_run_length:
            raise ValueError(
                f"min_lag ({min_lag}) must be below max_run_length ({bocpd.max_run_length})"
            )
        self.bocpd = bocpd
        self.threshold = float(threshold)
        self.min_lag = int(min_lag)
        self.min_run = int(min_run)
        self.anchor = 0
        self.probability = 0.0  #: the rule's statistic after the last update

    def reset(self) -> None:
        self.bocpd.reset()
        self.anchor = 0
        self.probability = 0.0

    def feed(self, y: float) -> int | None:
        b = self.bocpd
        post = b.update(y)
        hi = min(b.t - self.anchor - self.min_run, b.max_run_length - 1, len(post) - 1)
        lo = self.min_lag
        if hi < lo:
            self.probability = 0.0
            return None
        window = post[lo : hi + 1]
        p = float(window.sum())
        self.probability = p
        if p > self.threshold:
            self.anchor = b.t
            return lo + int(window.argmax())
        return None


class _PathState:
    __slots__ = ("rtt", "rtt_sum", "rtt_n", "loss", "lost", "sent", "last_time")

    def __init__(self, rtt: StreamDetector, loss: StreamDetector) -> None:
        self.rtt = rtt
        self.loss = loss
        self.rtt_sum = 0.0
        self.rtt_n = 0
        self.lost = 0
        self.sent = 0
        self.last_time = {"rtt": -math.inf, "loss": -math.inf}


class PathChangeDetector:
    """BOCPD change detection on each path's RTT samples and packet losses.

    Parameters (all have tested defaults, see the module docstring):
    ``rtt_group`` samples per RTT group, ``rtt_hazard`` / ``loss_hazard``
    expected segment length in groups, ``rtt_prior`` / ``loss_prior`` prior
    parameters (StudentT: alpha, beta, kappa, mu in cube-root-ms units;
    Beta: alpha, beta), ``loss_group`` packets per loss count,
    ``max_run_length`` / ``tail_threshold`` BOCPD truncation (per signal, in
    groups), ``threshold``, ``rtt_min_lag`` / ``loss_min_lag``, ``min_run``:
    the detection rule, ``refractory_s``: seconds a path's signal stays muted
    after a detection.
    """

    name = "bocpd"

    def __init__(
        self,
        *,
        rtt_group: int = 4,
        rtt_hazard: float = 1000.0,
        rtt_prior: dict | None = None,
        loss_group: int = 100,
        loss_hazard: float = 1000.0,
        loss_prior: dict | None = None,
        max_run_length: int = 300,
        tail_threshold: float = 1e-9,
        threshold: float = 0.8,
        rtt_min_lag: int = 4,
        loss_min_lag: int = 2,
        min_run: int = 10,
        refractory_s: float = 0.0,
    ) -> None:
        if int(rtt_group) != rtt_group or rtt_group < 1:
            raise ValueError(f"rtt_group must be an integer >= 1, got {rtt_group}")
        if int(loss_group) != loss_group or loss_group < 1:
            raise ValueError(f"loss_group must be an integer >= 1, got {loss_group}")
        if not refractory_s >= 0.0:
            raise ValueError(f"refractory_s must be >= 0, got {refractory_s}")
        self.rtt_group = int(rtt_group)
        self.loss_group = int(loss_group)
        self.rtt_hazard = float(rtt_hazard)
        self.loss_hazard = float(loss_hazard)
        self.rtt_prior = {**RTT_PRIOR, **(rtt_prior or {})}
        self.loss_prior = {**LOSS_PRIOR, **(loss_prior or {})}
        self.max_run_length = int(max_run_length)
        self.tail_threshold = float(tail_threshold)
        self.threshold = float(threshold)
        self.rtt_min_lag = int(rtt_min_lag)
        self.loss_min_lag = int(loss_min_lag)
        self.min_run = int(min_run)
        self.refractory_s = float(refractory_s)
        self._new_path(-1)  # validate every parameter now, not at the first sample
        self.reset()

    # ------------------------------------------------------------------ state
    def _new_path(self, path: int) -> _PathState:
        rtt = StreamDetector(
            BOCPD(
                self.rtt_hazard,
                StudentT(**self.rtt_prior),
                self.max_run_length,
                self.tail_threshold,
            ),
            self.threshold,
            self.rtt_min_lag,
            self.min_run,
        )
        loss = StreamDetector(
            BOCPD(
                self.loss_hazard,
                BetaBinomial(self.loss_group, **self.loss_prior),
                self.max_run_length,
                self.tail_threshold,
            ),
            self.threshold,
            self.loss_min_lag,
            self.min_run,
        )
        return _PathState(rtt, loss)

    def reset(self) -> None:
        """Forget every path (called at connection start)."""
        self._paths: dict[int, _PathState] = {}
        self.detections: list[tuple[float, int]] = []  #: (time [s], path), as TwoWindowDetector
        self.events: list[ChangeEvent] = []

    def _state(self, path: int) -> _PathState:
        st = self._paths.get(path)
        if st is None:
            st = self._paths[path] = self._new_path(path)
        return st

    def _report(
        self, st: _PathState, path: int, signal: str, now: float, lag: int, prob: float
    ) -> bool:
        if now - st.last_time[signal] < self.refractory_s:
            return False
        st.last_time[signal] = now
        self.detections.append((now, path))
        self.events.append(ChangeEvent(now, path, signal, lag, prob))
        return True

    # ------------------------------------------------------------------ feeds
    def update(self, path: int, sample: float, now: float) -> bool:
        """``baselines.bandit.change`` interface: one RTT sample [s]."""
        return self.update_rtt(path, sample, now)

    def update_rtt(self, path: int, rtt_s: float, now: float) -> bool:
        """Feed one RTT sample [s] of ``path``; True when a change is detected."""
        if not (rtt_s >= 0.0 and math.isfinite(rtt_s)):
            raise ValueError(f"PathChangeDetector: RTT must be finite and >= 0, got {rtt_s}")
        st = self._state(path)
        st.rtt_sum += rtt_s
        st.rtt_n += 1
        if st.rtt_n < self.rtt_group:
            return False
        y = (1000.0 * st.rtt_sum / st.rtt_n) ** (1.0 / 3.0)
        st.rtt_sum = 0.0
        st.rtt_n = 0
        det = st.rtt
        r = det.feed(y)
        if r is None:
            return False
        return self._report(st, path, "rtt", now, r * self.rtt_group, det.probability)

    def update_loss(self, path: int, lost: bool, now: float) -> bool:
        """Feed the fate of one packet of ``path`` (True: lost); True on a change."""
        st = self._state(path)
        st.sent += 1
        if lost:
            st.lost += 1
        if st.sent < self.loss_group:
            return False
        k = st.lost
        st.lost = 0
        st.sent = 0
        det = st.loss
        r = det.feed(k)
        if r is None:
            return False
        return self._report(st, path, "loss", now, r * self.loss_group, det.probability)

    # ------------------------------------------------------------------ views
    def bocpd(self, path: int, signal: str = "rtt") -> BOCPD:
        """The BOCPD of ``path``'s ``signal`` ("rtt" or "loss")."""
        st = self._state(path)
        if signal == "rtt":
            return st.rtt.bocpd
        if signal == "loss":
            return st.loss.bocpd
        raise ValueError(f"signal must be 'rtt' or 'loss', got {signal!r}")

    @property
    def paths(self) -> list[int]:
        return sorted(self._paths)

    def nbytes(self) -> int:
        """Bytes held in all paths' BOCPD arrays (bounded by max_run_length)."""
        return sum(s.rtt.bocpd.nbytes() + s.loss.bocpd.nbytes() for s in self._paths.values())
