"""Ground-truth references for HOP: the "ideal JUMP" estimator and the
no-queueing bound (the HOP paper's two references).

Both read the emulator's links, which no sender can: they are yardsticks.

* :class:`OracleEstimator` knows each path's true capacity distribution over
  a block's window (the empirical distribution of the bytes the bottleneck
  offers between a block release and its deadline minus the one-way delay,
  over every block release of the run) and the true backlog of its queue.
  Fed to JUMP it is the paper's "ideal JUMP": what a perfect estimator buys.
* :func:`no_queueing_bound`: the largest block a perfect scheduler could
  deliver with probability ``p_thr`` if every block found empty queues: the
  ``1 - p_thr`` quantile over blocks of the summed window capacities.
"""

from __future__ import annotations

import math

import numpy as np

from envs.deadline import window_capacity


class OracleEstimator:
    """True capacity distribution and backlog of one path (module docstring);
    the interface of :class:`baselines.hop.skip.SkipEstimator`."""

    def __init__(
        self, path, packet_bytes: int, period_s: float, duration_s: float, deadline_s: float
    ):
        self.path = path
        self.deadline_s = float(deadline_s)
        self.L = float(packet_bytes)
        self.period_s = float(period_s)
        self.n = max(1, int(duration_s / period_s + 1e-9))
        self.min_rtt = float(path.delay.mean_rtt)
        self.has_sample = True
        self._windows: dict[int, np.ndarray] = {}
        self.p_out = 0.0

    def on_sent(self, now: float, first_pn: int, n: int) -> None:
        pass

    def on_ack(self, pn: int, sent_time: float, now: float) -> None:
        pass

    def window_samples(self, deadline_s: float) -> np.ndarray:
        """Sorted window capacities [bytes] over every block release for deadline ``deadline_s``."""
        key = int(round(deadline_s * 1e6))
        w = self._windows.get(key)
        if w is None:
            w = np.sort(
                [window_capacity(self.path, i * self.period_s, deadline_s) for i in range(self.n)]
            )
            self._windows[key] = w
        return w

    @property
    def rate(self) -> float:
        """Mean capacity over the block windows [bytes/s]."""
        w = self.window_samples(self.deadline_s)
        return float(w.mean()) / max(1e-9, self.deadline_s - self.min_rtt / 2)

    @property
    def rate_std(self) -> float:
        """Standard deviation of the window-average capacity [bytes/s]."""
        w = self.window_samples(self.deadline_s)
        return float(w.std()) / max(1e-9, self.deadline_s - self.min_rtt / 2)

    def forecast(self, now: float, window_s: float) -> tuple[float, float]:
        w = self.window_samples(window_s + self.min_rtt / 2)
        return float(w.mean()), float(w.std())

    def backlog_bytes(self, now: float) -> float:
        return float(self.path.link.occupancy(now)[1])

    def lateness(self, now: float, deadline_s: float, n: int) -> np.ndarray:
        """P(window capacity < backlog + j L), j = 1..n."""
        if n <= 0:
            return np.zeros(0)
        w = self.window_samples(deadline_s)
        need = self.backlog_bytes(now) + self.L * np.arange(1, n + 1)
        return np.searchsorted(w, need, side="left") / len(w)

    def on_time_at_rate(self, now: float, deadline_s: float, n: int, rate: float) -> int:
        """How many of ``n`` packets of a burst sent now make ``deadline_s`` at capacity ``rate`` [bytes/s]."""
        if n <= 0:
            return 0
        w = rate * (deadline_s - self.min_rtt / 2)
        return int(max(0.0, min(n, (w - self.backlog_bytes(now)) // self.L)))


def no_queueing_bound(window_capacity_bytes: np.ndarray, p_thr: float, period_s: float) -> dict:
    """The bound from per-block, per-path window capacities [bytes] (blocks x
    paths): ``block_bytes`` (the ``1 - p_thr`` quantile of the per-block
    sums) and ``goodput_mbps`` (that block every ``period_s``)."""
    total = np.asarray(window_capacity_bytes, dtype=float).sum(axis=1)
    b = float(np.quantile(total, 1.0 - p_thr, method="lower"))
    return {"block_bytes": b, "goodput_mbps": b * 8 / period_s / 1e6}


def gaussian_bound(
    means_mbps, stds_mbps, one_way_s, deadline_s: float, p_thr: float, period_s: float
) -> dict:
    """The same bound for independent Gaussian path capacities constant over
    the window (the synthetic cases: redrawn every period, windows inside
    one draw): quantile of ``sum_i C_i (T - d_i)``."""
    from statistics import NormalDist

    w = [max(0.0, deadline_s - d) for d in one_way_s]
    mean = sum(m * wi for m, wi in zip(means_mbps, w))
    std = math.sqrt(sum((s * wi) ** 2 for s, wi in zip(stds_mbps, w)))
    q = mean + std * NormalDist().inv_cdf(1.0 - p_thr)  # Mbit per window
    return {"block_bytes": q * 1e6 / 8, "goodput_mbps": q / period_s}


__all__ = ["OracleEstimator", "gaussian_bound", "no_queueing_bound"]
