"""The one internal trace representation.

A path's capacity over time is a :class:`CapacityTrace`: a piecewise-constant
rate (bytes/s) over segments that start at ``times`` [s], repeated with period
``period`` [s] (traces loop, as Mahimahi's ``mm-link`` does). Its integral,
the cumulative capacity ``C(t)`` [bytes], is piecewise linear; the bottleneck
serves a FIFO queue along it, so a packet entering service when the link has
served ``c`` bytes leaves at ``C^-1(c + size)``.

Delay and loss can also vary over time: a :class:`StepSeries` holds a
piecewise-constant value (one-way delay in s, loss probability) with the same
looping rule. :class:`PathTrace` bundles what one file can say about a path.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from dataclasses import dataclass

import numpy as np


class CapacityTrace:
    """Piecewise-constant, looped capacity.

    ``times``: segment start times [s], ``times[0] == 0``, strictly increasing,
    all ``< period``. ``rates``: capacity in each segment [bytes/s], ``>= 0``.
    ``period``: loop length [s].
    """

    __slots__ = (
        "times",
        "rates",
        "period",
        "name",
        "_t",
        "_r",
        "_cum",
        "total",
        "is_constant",
        "constant_rate",
    )

    def __init__(self, times, rates, period: float, name: str = "trace"):
        times = np.asarray(times, dtype=np.float64)
        rates = np.asarray(rates, dtype=np.float64)
        if times.ndim != 1 or times.shape != rates.shape or len(times) == 0:
            raise ValueError(f"{name}: times and rates must be equal-length 1-D arrays")
        if times[0] != 0.0 or np.any(np.diff(times) <= 0) or times[-1] >= period:
            raise ValueError(
                f"{name}: segment times must start at 0, increase, and stay below the period"
            )
        if np.any(rates < 0) or not np.all(np.isfinite(rates)):
            raise ValueError(f"{name}: rates must be finite and non-negative")
        durations = np.diff(np.append(times, period))
        cum = np.concatenate(([0.0], np.cumsum(rates * durations)))
        if cum[-1] <= 0:
            raise ValueError(f"{name}: trace has zero capacity over its whole period")
        self.times, self.rates, self.period, self.name = times, rates, float(period), name
        # Python lists: bisect on lists is several times faster than
        # np.searchsorted on scalars, and this sits on the per-packet path.
        self._t = times.tolist()
        self._r = rates.tolist()
        self._cum = cum.tolist()
        self.total = float(cum[-1])
        self.is_constant = len(times) == 1
        self.constant_rate = float(rates[0]) if self.is_constant else None

    @classmethod
    def constant(cls, rate_bytes_per_s: float, name: str = "constant") -> "CapacityTrace":
        rate = float(rate_bytes_per_s)
        if not 0.0 < rate < math.inf:
            return cls([0.0], [rate], 1.0, name)  # raises the general constructor's error
        # the general constructor's fields for one segment of 1 s, without its array
        # checks (~15 us; every constant-rate path of every episode builds one)
        trace = cls.__new__(cls)
        trace.times, trace.rates, trace.period, trace.name = (
            np.array([0.0]),
            np.array([rate]),
            1.0,
            name,
        )
        trace._t, trace._r, trace._cum = [0.0], [rate], [0.0, rate]
        trace.total = trace.constant_rate = rate
        trace.is_constant = True
        return trace

    @property
    def mean_rate(self) -> float:
        """Average capacity over one period [bytes/s]."""
        return self.total / self.period

    def cum_bytes(self, t: float) -> float:
        """Capacity delivered in [0, t] [bytes]."""
        if self.is_constant:
            return self.constant_rate * t
        loops, tt = divmod(t, self.period)
        i = bisect_right(self._t, tt) - 1
        return loops * self.total + self._cum[i] + self._r[i] * (tt - self._t[i])

    def time_at(self, c: float) -> float:
        """Smallest time t with ``cum_bytes(t) >= c`` [s]."""
        if self.is_constant:
            return c / self.constant_rate
        loops, cc = divmod(c, self.total)
        # bisect_left: the segment whose cumulative span (cum[i], cum[i+1]]
        # holds cc, so it never lands on a zero-rate segment (empty span).
        i = bisect_left(self._cum, cc) - 1
        if i < 0:
            return loops * self.period
        return loops * self.period + self._t[i] + (cc - self._cum[i]) / self._r[i]

    def scaled(self, factor: float) -> "CapacityTrace":
        """The same shape with every rate multiplied by ``factor``."""
        return CapacityTrace(self.times, self.rates * factor, self.period, self.name)

    def __repr__(self) -> str:
        return (
            f"CapacityTrace({self.name!r}, {len(self.times)} segments, "
            f"period={self.period:.3f}s, mean={self.mean_rate * 8 / 1e6:.2f} Mbit/s)"
        )


class StepSeries:
    """A piecewise-constant, looped value over time (delay [s], loss [0..1])."""

    __slots__ = ("times", "values", "period", "_t", "_v", "is_constant")

    def __init__(self, times, values, period: float):
        self.times = np.asarray(times, dtype=np.float64)
        self.values = np.asarray(values, dtype=np.float64)
        if self.times[0] != 0.0 or np.any(np.diff(self.times) <= 0) or self.times[-1] >= period:
            raise ValueError(
                "step series times must start at 0, increase, and stay below the period"
            )
        self.period = float(period)
        self._t = self.times.tolist()
        self._v = self.values.tolist()
        self.is_constant = len(self._t) == 1

    def value_at(self, t: float) -> float:
        if self.is_constant:
            return self._v[0]
        return self._v[bisect_right(self._t, t % self.period) - 1]

    @property
    def mean(self) -> float:
        durations = np.diff(np.append(self.times, self.period))
        return float(np.sum(self.values * durations) / self.period)


@dataclass
class PathTrace:
    """Everything a trace file says about one path direction.

    ``capacity`` is required; ``delay`` (one-way propagation delay [s]) and
    ``loss`` (packet loss probability) are present only when the file has them
    (e.g. the step format ``time_ms,bw_kbps,delay_ms,loss``, or Raca 5G ping
    columns) and override the scenario's constant values.
    Provenance, for logs (set by :func:`envs.traces.load_trace`): ``source``,
    the file it came from; ``format``, how it was read; ``sha256``, the
    digest of the file's bytes; ``sample_period_s``, the file's sampling
    interval [s] (0: not from a file).
    """

    capacity: CapacityTrace
    delay: StepSeries | None = None
    loss: StepSeries | None = None
    source: str = ""
    format: str = ""
    sha256: str = ""
    sample_period_s: float = 0.0
