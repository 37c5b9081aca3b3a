"""The exact fluid model's objects (:mod:`baselines.stream_aware.fluid`):
exact numbers (:func:`q`), paths and streams, :class:`PathSet` (paths by
latency, the ECF thresholds, the isolated completion time ``C*``), the
schedule's :class:`Segment` and :class:`FluidResult`. Arithmetic is exact
(:class:`fractions.Fraction`)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction

Number = int | float | Fraction | Decimal | str


def q(x: Number) -> Fraction:
    """Exact conversion: ints, Fractions, Decimals, strings; floats by their repr."""
    if isinstance(x, Fraction):
        return x
    if isinstance(x, bool):
        raise TypeError("a boolean is not a number here")
    if isinstance(x, int):
        return Fraction(x)
    if isinstance(x, float):
        if not math.isfinite(x):
            raise ValueError(f"not a finite number: {x!r}")
        return Fraction(repr(x))
    if isinstance(x, Decimal | str):
        return Fraction(x)
    # numpy scalars and the like
    return q(float(x)) if not hasattr(x, "numerator") else Fraction(x)


@dataclass(frozen=True)
class FluidPath:
    """A path of the fluid model: ``rate`` [bytes / time unit], ``delay`` [time unit]."""

    rate: Fraction
    delay: Fraction

    @classmethod
    def of(cls, p) -> FluidPath:
        if isinstance(p, FluidPath):
            return p
        if isinstance(p, dict):
            return cls(q(p["rate"]), q(p["delay"]))
        rate, delay = p
        return cls(q(rate), q(delay))


@dataclass(frozen=True)
class FluidStream:
    """A message: ``size`` bytes released at ``release``; smaller ``priority`` = more urgent."""

    size: Fraction
    release: Fraction = Fraction(0)
    priority: int = 0

    @classmethod
    def of(cls, s) -> FluidStream:
        if isinstance(s, FluidStream):
            return s
        if isinstance(s, dict):
            size = s.get("size", s.get("size_bytes"))
            release = s.get("release", s.get("release_s", 0))
            return cls(q(size), q(release), int(s.get("priority", 0)))
        if isinstance(s, tuple | list):
            return cls(
                q(s[0]), q(s[1]) if len(s) > 1 else Fraction(0), int(s[2]) if len(s) > 2 else 0
            )
        return cls(q(s))


def _paths(paths) -> list[FluidPath]:
    out = [FluidPath.of(p) for p in paths]
    if not out:
        raise ValueError("give at least one path")
    for p in out:
        if p.rate <= 0 or p.delay < 0:
            raise ValueError(f"path {p}: rate must be > 0 and delay >= 0")
    return out


def _streams(streams) -> list[FluidStream]:
    out = [FluidStream.of(s) for s in streams]
    for s in out:
        if s.size <= 0 or s.release < 0:
            raise ValueError(f"stream {s}: size must be > 0 and release >= 0")
    return out


class PathSet:
    """Paths sorted by latency (ties: input order), with the ECF thresholds.

    ``order[j]`` is the input index of the j-th fastest path; ``th[j]`` its
    threshold; ``rsum[j] = sum_{i<=j} R_i`` and ``rdsum[j] = sum_{i<=j} R_i D_i``.
    """

    def __init__(self, paths):
        ps = _paths(paths)
        self.order = sorted(range(len(ps)), key=lambda i: (ps[i].delay, i))
        self.paths = [ps[i] for i in self.order]
        self.rate = [p.rate for p in self.paths]
        self.delay = [p.delay for p in self.paths]
        self.th: list[Fraction] = []
        self.rsum: list[Fraction] = []
        self.rdsum: list[Fraction] = []
        r = rd = Fraction(0)
        for p in self.paths:
            self.th.append(p.delay * r - rd)  # sum_{i<j} R_i (D_j - D_i)
            r += p.rate
            rd += p.rate * p.delay
            self.rsum.append(r)
            self.rdsum.append(rd)

    def __len__(self) -> int:
        return len(self.paths)

    def regime(self, size) -> int:
        """Index of the slowest path ECF uses for ``size`` bytes: max{j: size > TH_j} (0 if none)."""
        j = 0
        for k, th in enumerate(self.th):
            if size > th:
                j = k
        return j

    def completion(self, size) -> Fraction:
        """Isolated ECF remaining completion time ``C*(size)``; ``C*(0) = 0``."""
        size = q(size)
        if size <= 0:
            return Fraction(0)
        j = self.regime(size)
        return (size + self.rdsum[j]) / self.rsum[j]

    def completion_slope(self, size) -> Fraction:
        """d C*/d size just below ``size`` (the slope while the size shrinks)."""
        return 1 / self.rsum[self.regime(size)]


def thresholds(paths) -> list[Fraction]:
    """ECF size thresholds ``TH_j`` of the paths sorted by latency."""
    return PathSet(paths).th


def ecf_completion(size, paths) -> Fraction:
    """Minimum completion time of ``size`` bytes alone on ``paths`` (Eqs. 1-3 generalised)."""
    return PathSet(paths).completion(size)


@dataclass
class Segment:
    """Path ``path`` (input index) sends stream ``stream`` during [t0, t1]."""

    path: int
    stream: int
    t0: Fraction
    t1: Fraction


@dataclass
class FluidResult:
    """Per stream (input order): ``finish`` dates and ``completion`` = finish - release."""

    finish: list[Fraction]
    completion: list[Fraction]
    release: list[Fraction]
    segments: list[Segment] = field(default_factory=list)
    order_changes: int = 0
    events: int = 0
    order: tuple | None = None
    #: smallest |key difference| between an inserted stream and a stream of
    #: the same priority already in the order (online SRPT-ECF): how close
    #: the ordering decisions were to a tie
    insert_margin: Fraction | None = None

    def floats(self) -> list[float]:
        """Completion times as floats."""
        return [float(c) for c in self.completion]

    def sorted_completion(self) -> list[Fraction]:
        """The completion sequence (C_i) of the paper: completion times in increasing order."""
        return sorted(self.completion)

    def mean(self) -> Fraction:
        return sum(self.completion, Fraction(0)) / len(self.completion)

    def sent_by(self, path: int, stream: int | None = None) -> list[tuple[Fraction, Fraction]]:
        """Sending intervals of ``path`` (input index), optionally of one stream."""
        return [
            (s.t0, s.t1)
            for s in self.segments
            if s.path == path and (stream is None or s.stream == stream)
        ]

    def active_streams(self, t) -> int:
        """Streams released and not finished at ``t``."""
        t = q(t)
        return sum(1 for r, f in zip(self.release, self.finish) if r <= t < f)


class _Segments:
    """Builds merged sending segments."""

    def __init__(self, n_paths: int):
        self.open: list[Segment | None] = [None] * n_paths
        self.done: list[Segment] = []

    def send(self, path: int, stream: int, t0, t1) -> None:
        s = self.open[path]
        if s is not None and s.stream == stream and s.t1 == t0:
            s.t1 = t1
            return
        if s is not None:
            self.done.append(s)
        self.open[path] = Segment(path, stream, t0, t1)

    def close(self) -> list[Segment]:
        out = self.done + [s for s in self.open if s is not None]
        return sorted(out, key=lambda s: (s.t0, s.path))


def _min_pos(cands: Iterable) -> Fraction | None:
    best = None
    for c in cands:
        if c is not None and c >= 0 and (best is None or c < best):
            best = c
    return best


__all__ = [
    "Number",
    "q",
    "FluidPath",
    "FluidStream",
    "PathSet",
    "thresholds",
    "ecf_completion",
    "Segment",
    "FluidResult",
]
