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

Both classes are part of the emulator core (``base.pxd``): a trace-driven
link asks its capacity trace for ``cum_bytes`` and ``time_at`` on every
packet, and its delay and loss series for ``value_at``. The ``.py`` module
keeps the segments in Python lists and looks them up with :mod:`bisect` and
``divmod`` (the fastest pure Python has); the compiled module keeps them in
typed arrays and runs the same binary searches, and CPython's float
``divmod`` and ``%`` step for step (:func:`_floor_div`, :func:`_mod`: C's
``fmod`` and ``floor``), so both give the same bits.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from dataclasses import dataclass

import numpy as np

#: True in the compiled module (an extension's ``__file__`` is not the ``.py``)
COMPILED = not __file__.endswith(".py")


def _floor_div(x: float, y: float) -> float:
    """``divmod(x, y)[0]`` for floats (``y != 0``), as CPython computes it:
    ``fmod``, the quotient of the rest, snapped to the nearest whole number."""
    if y == 0.0:
        raise ZeroDivisionError("float divmod()")
    mod = math.fmod(x, y)
    div = (x - mod) / y
    if mod:
        if (y < 0) != (mod < 0):
            div -= 1.0
    if div:
        q = float(math.floor(div)) if math.isfinite(div) else div  # (C's floor keeps inf, NaN)
        return q + 1.0 if div - q > 0.5 else q
    return math.copysign(0.0, x / y)


def _mod(x: float, y: float) -> float:
    """``x % y`` (and ``divmod(x, y)[1]``) for floats (``y != 0``), as CPython
    computes it: ``fmod``, moved to the sign of ``y``."""
    if y == 0.0:
        raise ZeroDivisionError("float modulo")
    mod = math.fmod(x, y)
    if mod:
        if (y < 0) != (mod < 0):
            mod += y
        return mod
    return math.copysign(0.0, y)


def _bisect_right(a, x: float) -> int:
    """:func:`bisect.bisect_right` on the sorted ``a``."""
    lo = 0
    hi = len(a)
    while lo < hi:
        mid = (lo + hi) // 2
        if x < a[mid]:
            hi = mid
        else:
            lo = mid + 1
    return lo


def _bisect_left(a, x: float) -> int:
    """:func:`bisect.bisect_left` on the sorted ``a``."""
    lo = 0
    hi = len(a)
    while lo < hi:
        mid = (lo + hi) // 2
        if a[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


def _segments(values: np.ndarray):
    """A segment column as the lookups read it: a list (``.py``) or a typed array."""
    return np.ascontiguousarray(values, dtype=np.float64) if COMPILED else values.tolist()


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
        self._set_columns(cum)
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
        trace._set_columns(np.array([0.0, rate]))
        trace.total = trace.constant_rate = rate
        trace.is_constant = True
        return trace

    def _set_columns(self, cum: np.ndarray) -> None:
        """The lookups' columns of ``times``, ``rates`` and ``cum`` (the
        cumulative capacity at each segment start and at the period's end):
        lists in the ``.py`` module, where bisect on a list is several times
        faster than ``np.searchsorted`` on a scalar, typed arrays compiled."""
        self._t = _segments(self.times)
        self._r = _segments(self.rates)
        self._cum = _segments(cum)

    @property
    def mean_rate(self) -> float:
        """Average capacity over one period [bytes/s]."""
        return self.total / self.period

    def __reduce__(self):  # (copies and pickles: the compiled lookups' columns are rebuilt)
        return CapacityTrace, (self.times, self.rates, self.period, self.name)

    def cum_bytes(self, t: float) -> float:
        """Capacity delivered in [0, t] [bytes]."""
        if self.is_constant:
            return self.constant_rate * t
        if COMPILED:
            loops = _floor_div(t, self.period)
            tt = _mod(t, self.period)
            i = _bisect_right(self._t, tt) - 1
        else:
            loops, tt = divmod(t, self.period)
            i = bisect_right(self._t, tt) - 1
        return loops * self.total + self._cum[i] + self._r[i] * (tt - self._t[i])

    def time_at(self, c: float) -> float:
        """Smallest time t with ``cum_bytes(t) >= c`` [s]."""
        if self.is_constant:
            return c / self.constant_rate
        # bisect_left: the segment whose cumulative span (cum[i], cum[i+1]]
        # holds cc, so it never lands on a zero-rate segment (empty span).
        if COMPILED:
            loops = _floor_div(c, self.total)
            cc = _mod(c, self.total)
            i = _bisect_left(self._cum, cc) - 1
        else:
            loops, cc = divmod(c, self.total)
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
        self._t = _segments(self.times)
        self._v = _segments(self.values)
        self.is_constant = len(self.times) == 1

    def __reduce__(self):  # (copies and pickles: as CapacityTrace's)
        return StepSeries, (self.times, self.values, self.period)

    def value_at(self, t: float) -> float:
        """The value at time ``t`` [s] (looped)."""
        if self.is_constant:
            return self._v[0]
        if COMPILED:
            return self._v[_bisect_right(self._t, _mod(t, self.period)) - 1]
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
