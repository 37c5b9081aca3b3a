"""Exact fluid model of stream-aware multipath scheduling (Jonglez, Heusse,
Gaujal, "SRPT-ECF", FIT 2020; spec: ``design/SPEC-srpt-ecf.md``).

Model. Path ``p`` has a fixed rate ``R_p`` (bytes per time unit) and a fixed
latency ``D_p``: a byte sent on ``p`` at ``t`` arrives at ``t + D_p``. A
stream is finished when its last byte arrives; its completion time is the
finish date minus its release date. Any time unit works as long as rates and
delays agree (the toy examples use bytes/ms and ms; the emulator comparisons
use bytes/s and s with ``D_p`` the one-way propagation delay).

Arithmetic is exact: every input is turned into a :class:`fractions.Fraction`
(a float through its shortest ``repr``, so ``0.067`` is 67/1000) and every
event time is solved exactly, so the paper's toy examples come out exactly
(Fig. 3: 160/7 ms, Fig. 5: (9, 11) ms). Results can be turned into floats.

What is here

* :class:`PathSet`: paths sorted by latency, the ECF thresholds
  ``TH_j = sum_{i<j} R_i (D_j - D_i)`` and the isolated ECF completion time
  ``C*(S)`` (remaining completion time of ``S`` bytes alone on all paths).
* :func:`ecf_single`: the ECF schedule of one stream (Fig. 3).
* :func:`srpt_ecf`: SRPT-ECF for a set of streams, offline (all released at
  once) or online (release dates). Streams are ordered lexicographically by
  (priority, Eq. 5 key, release, id) with key = ``max(t + C*(unsent),
  T_in-flight)`` in absolute time; as in the paper (Section IV-A) a released
  stream is *inserted* into the order and the relative order of the others
  is kept (re-sorting everything by Eq. 5 is unstable, see ``ordering``).
  Path ``j`` serves the first stream in that order whose cumulative unsent
  size (its own plus everything ahead of it) exceeds ``TH_j``, else it idles.
* :func:`offline_oracle`: the paper's offline algorithm (Section IV-B) for a
  few streams: every priority order is tried; each allocates in that order
  with ECF on cumulative sizes *including streams not yet released*
  (anticipation), giving the paths to lower-priority released streams while
  a higher-priority one is not released; the best order for the metric wins.
* :func:`sa_ecf`: SA-ECF (round robin across streams with a byte quantum,
  ECF on the aggregate unsent bytes). Round robin is quantum-granular: a free
  path takes the next quantum of the round (at most ``quantum`` bytes of the
  stream whose turn it is) if the aggregate unsent size exceeds its
  threshold, and sends it at its rate. On Fig. 6 this gives (11, 45/4) ms.
  The paper prints (11, 11.2): 11.25 rounded to one decimal half-to-even
  (``round(11.25, 1) == 11.2`` in Python, the language of the paper's
  simulator); a fluid processor-sharing round robin would give (11, 11)
  instead, so the quantum-granular reading is the one that matches.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Sequence
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
            return cls(q(s[0]), q(s[1]) if len(s) > 1 else Fraction(0),
                       int(s[2]) if len(s) > 2 else 0)
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
            self.th.append(p.delay * r - rd)          # sum_{i<j} R_i (D_j - D_i)
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
        return [(s.t0, s.t1) for s in self.segments
                if s.path == path and (stream is None or s.stream == stream)]

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


# --------------------------------------------------------------------------- SRPT-ECF


def _run_ordered(streams: list[FluidStream], ps: PathSet, fixed_order: Sequence[int] | None,
                 anticipate: bool, max_events: int, ordering: str = "insert") -> FluidResult:
    n, m = len(streams), len(ps)
    rem = [s.size for s in streams]
    rel = [s.release for s in streams]
    prio = [s.priority for s in streams]
    last: list[list[Fraction | None]] = [[None] * m for _ in range(n)]  # last send time per (stream, path)
    finish: list[Fraction | None] = [None] * n
    segs = _Segments(m)
    th, rate, delay = ps.th, ps.rate, ps.delay
    t = min(rel) if n else Fraction(0)
    prev_seq: list[int] | None = None
    order_changes = 0
    events = 0

    def tin(k: int):
        vals = [lk + delay[j] for j, lk in enumerate(last[k]) if lk is not None]
        return max(vals) if vals else None

    def _key(k: int) -> Fraction:
        """Eq. 5 at t: max(t + C*(unsent), latest arrival of what was sent)."""
        v = t + ps.completion(rem[k])
        ti = tin(k)
        return v if ti is None or v >= ti else ti

    kept: list[int] = []
    in_list: set[int] = set()
    insert_margin: Fraction | None = None

    while True:
        live = [k for k in range(n) if rem[k] > 0]
        if not live:
            break
        released = [k for k in live if rel[k] <= t]
        future = [rel[k] for k in live if rel[k] > t]
        if not released:
            t = min(future)
            continue
        events += 1
        if events > max_events:
            raise RuntimeError(f"fluid model: more than {max_events} events (a bug or a Zeno schedule)")

        # ---- order
        keys = None
        if fixed_order is not None:
            seq = [k for k in fixed_order if rem[k] > 0 and (anticipate or rel[k] <= t)]
        elif ordering == "insert":
            # the paper's online rule: existing streams keep their relative
            # order; a newly released stream is inserted before the first
            # stream whose (priority, Eq. 5 key) is larger than its own
            seq = [k for k in kept if rem[k] > 0]
            new = sorted((k for k in released if k not in in_list), key=lambda k: (rel[k], k))
            if new:
                cur = {k: _key(k) for k in seq}
                for k in new:
                    kk = (prio[k], t + ps.completion(rem[k]))
                    for s in seq:
                        if prio[s] == kk[0]:
                            gap = abs(cur[s] - kk[1])
                            if insert_margin is None or gap < insert_margin:
                                insert_margin = gap
                    pos = next((i for i, s in enumerate(seq) if (prio[s], cur[s]) > kk), len(seq))
                    seq.insert(pos, k)
                    cur[k] = kk[1]
                    in_list.add(k)
            kept = seq
        else:
            # continuous re-sorting by Eq. 5 (key value at t from past sends
            # only; ties resolved by the key slopes below)
            keys = {k: _key(k) for k in released}
            seq = sorted(released, key=lambda k: (prio[k], keys[k], rel[k], k))

        # ---- allocation (and, online, a fixed point for exact ties of key values)
        for _ in range(n + 1):
            cs = []
            acc = Fraction(0)
            for k in seq:
                acc += rem[k]
                cs.append(acc)
            serve: list[int | None] = [None] * m
            first_idx: list[int | None] = [None] * m
            for j in range(m):
                for i, k in enumerate(seq):
                    if cs[i] > th[j]:
                        if first_idx[j] is None:
                            first_idx[j] = i
                        if rel[k] <= t:
                            serve[j] = k
                            break
            srate: dict[int, Fraction] = {}
            sdmax: dict[int, Fraction] = {}
            for j, k in enumerate(serve):
                if k is not None:
                    srate[k] = srate.get(k, Fraction(0)) + rate[j]
                    sdmax[k] = max(sdmax.get(k, delay[j]), delay[j])
            if keys is None:
                slope = None
                break
            # key slopes under this allocation: key = max(t + C*(rem), T_in)
            slope = {}
            tin_now = {}
            for k in seq:
                r_k = srate.get(k, Fraction(0))
                s1 = 1 - r_k * ps.completion_slope(rem[k])
                ti = tin(k)
                if k in sdmax:
                    cand = t + sdmax[k]
                    ti = cand if ti is None or cand > ti else ti
                    ti_slope = 1 if ti == cand else 0
                else:
                    ti_slope = 0
                tin_now[k] = ti
                v1 = t + ps.completion(rem[k])
                if ti is None or v1 > ti:
                    slope[k] = s1
                elif ti > v1:
                    slope[k] = ti_slope
                else:
                    slope[k] = max(s1, ti_slope)
            new_seq = sorted(released, key=lambda k: (prio[k], keys[k], slope[k], rel[k], k))
            if new_seq == seq:
                break
            seq = new_seq

        # stability bookkeeping: relative order of streams present before and now
        if prev_seq is not None:
            common = set(prev_seq) & set(seq)
            if [k for k in prev_seq if k in common] != [k for k in seq if k in common]:
                order_changes += 1
        prev_seq = seq

        # drain rate of each cumulative sum
        drain = []
        acc = Fraction(0)
        for k in seq:
            acc += srate.get(k, Fraction(0))
            drain.append(acc)

        # ---- next event
        cands: list[Fraction | None] = [f - t for f in future]
        for k, r_k in srate.items():
            cands.append(rem[k] / r_k)
        for j in range(m):
            i = first_idx[j]
            if i is not None and serve[j] is not None and drain[i] > 0:
                cands.append((cs[i] - th[j]) / drain[i])
        if keys is not None:
            v1s, vslope = {}, {}
            for k in seq:
                r_k = srate.get(k, Fraction(0))
                v1s[k] = t + ps.completion(rem[k])
                vslope[k] = 1 - r_k * ps.completion_slope(rem[k])
                if r_k > 0:
                    # C* changes slope when rem crosses a threshold
                    for thj in th[1:]:
                        if rem[k] > thj:
                            cands.append((rem[k] - thj) / r_k)
                ti = tin_now[k]
                if ti is not None:
                    ts = 1 if (k in sdmax and ti == t + sdmax[k]) else 0
                    dv = v1s[k] - ti
                    ds = vslope[k] - ts
                    if dv > 0 and ds < 0:
                        cands.append(dv / -ds)
                    elif dv < 0 and ds > 0:
                        cands.append(-dv / ds)
            for a, b in zip(seq, seq[1:]):
                if prio[a] != prio[b]:
                    continue
                diff = keys[a] - keys[b]           # <= 0
                ds = slope[a] - slope[b]
                if ds > 0:
                    cands.append(-diff / ds)
        dt = _min_pos(c for c in cands if c is None or c > 0)
        if dt is None:
            # nothing is served and nothing will be released: cannot happen with TH_0 = 0
            raise RuntimeError("fluid model: stalled")

        # ---- advance
        t1 = t + dt
        for j, k in enumerate(serve):
            if k is not None:
                segs.send(ps.order[j], k, t, t1)
                last[k][j] = t1
        for k, r_k in srate.items():
            rem[k] -= r_k * dt
            if rem[k] <= 0:
                rem[k] = Fraction(0)
                finish[k] = tin(k)
        t = t1

    fin = [f if f is not None else rel[k] for k, f in enumerate(finish)]
    return FluidResult(finish=fin, completion=[f - r for f, r in zip(fin, rel)], release=rel,
                       segments=segs.close(), order_changes=order_changes, events=events,
                       order=tuple(fixed_order) if fixed_order is not None else None,
                       insert_margin=insert_margin)


def srpt_ecf(streams, paths, *, ordering: str = "insert", order: Sequence[int] | None = None,
             anticipate: bool = False, max_events: int = 1_000_000) -> FluidResult:
    """SRPT-ECF completion times.

    ``streams``: sizes, ``(size, release, priority)`` tuples, dicts
    (``size``/``size_bytes``, ``release``/``release_s``, ``priority``) or
    :class:`FluidStream`. All released at the same date = the offline
    problem of Section III; otherwise the online algorithm of Section IV-A.
    ``paths``: ``(rate, delay)`` pairs, dicts or :class:`FluidPath`.

    ``ordering``:

    * ``"insert"`` (default, the paper's online rule): streams released
      together are sorted by (priority, C*(size), release, id); a stream
      released later is inserted before the first stream whose (priority,
      Eq. 5 key) exceeds its own, and the relative order of the others never
      changes. Offline this is SRPT by size, which the theorem makes optimal.
    * ``"resort"``: every stream is re-sorted by (priority, Eq. 5 key)
      continuously (key crossings are exact events). Not the algorithm: the
      in-flight term jumps to ``t + D_slow`` as soon as a slow path carries
      a byte of a stream, which can put that stream behind a larger one and
      make the allocation oscillate (``order_changes`` > 0) and lose the
      optimality; kept to study that effect.

    ``order`` replaces the ordering by a fixed priority order of stream
    indices (the offline oracle's building block); ``anticipate`` then counts
    streams not yet released in the cumulative sizes.
    """
    if ordering not in ("insert", "resort"):
        raise ValueError(f"ordering: 'insert' or 'resort', not {ordering!r}")
    ss = _streams(streams)
    if order is not None and sorted(order) != list(range(len(ss))):
        raise ValueError("order must be a permutation of the stream indices")
    return _run_ordered(ss, PathSet(paths), order, anticipate, max_events, ordering)


def ecf_single(size, paths, release=0) -> FluidResult:
    """ECF schedule of one stream of ``size`` bytes (Fig. 3)."""
    return srpt_ecf([(size, release)], paths)


def ecf_switch_times(size, paths) -> list[Fraction]:
    """Per path (input order): the date at which ECF stops using it for one stream
    of ``size`` bytes released at 0 (0 for a path it never uses)."""
    res = ecf_single(size, paths)
    n = len(_paths(paths))
    out = [Fraction(0)] * n
    for s in res.segments:
        out[s.path] = max(out[s.path], s.t1)
    return out


METRICS: dict[str, Callable[[FluidResult], Fraction]] = {
    "mean": lambda r: r.mean(),
    "max": lambda r: max(r.completion),
    "sum": lambda r: sum(r.completion, Fraction(0)),
}


def offline_oracle(streams, paths, metric: str | Callable[[FluidResult], Fraction] = "mean",
                   *, anticipate: bool = True, max_streams: int = 8) -> FluidResult:
    """The paper's offline algorithm: try every priority order, keep the best.

    Each order allocates the paths in that order with ECF on cumulative sizes
    (including streams not released yet when ``anticipate``), serving a
    lower-priority released stream while a higher-priority one is not
    released. ``metric``: ``"mean"``, ``"max"``, ``"sum"`` or a function of a
    :class:`FluidResult` (smaller is better); ties keep the first order in
    lexicographic order. ``result.order`` is the winning order.
    """
    ss = _streams(streams)
    if len(ss) > max_streams:
        raise ValueError(f"offline_oracle: {len(ss)} streams means {math.factorial(len(ss))} orders; "
                         f"raise max_streams if you mean it")
    score = METRICS[metric] if isinstance(metric, str) else metric
    ps = PathSet(paths)
    best = best_score = None
    for perm in itertools.permutations(range(len(ss))):
        r = _run_ordered(ss, ps, perm, anticipate, 1_000_000)
        sc = score(r)
        if best is None or sc < best_score:
            best, best_score = r, sc
    return best


# --------------------------------------------------------------------------- SA-ECF


def sa_ecf(streams, paths, quantum=150, weights: Sequence | None = None) -> FluidResult:
    """SA-ECF: round robin across streams, ``quantum`` x weight bytes per turn,
    with ECF on the aggregate unsent bytes (a free path ``j`` takes the next
    turn's bytes only if the aggregate unsent size exceeds ``TH_j``; it then
    idles until a release). Streams join the round at its tail when released.
    Simultaneous decisions go to the lowest-latency path first.
    """
    ss = _streams(streams)
    ps = PathSet(paths)
    n, m = len(ss), len(ps)
    quantum = q(quantum)
    w = [q(x) for x in weights] if weights is not None else [Fraction(1)] * n
    rem = [s.size for s in ss]
    rel = [s.release for s in ss]
    finish: list[Fraction | None] = [None] * n
    last_arrival: list[Fraction | None] = [None] * n
    busy = [Fraction(0)] * m
    ring: list[int] = []
    ptr = 0
    joined = [False] * n
    segs = _Segments(m)
    unsent = Fraction(0)
    t = min(rel)
    events = 0
    while True:
        events += 1
        # releases at t join the tail of the round (just before the pointer)
        for k in sorted((k for k in range(n) if not joined[k] and rel[k] <= t),
                        key=lambda k: (rel[k], k)):
            joined[k] = True
            ring.insert(ptr, k)
            ptr += 1
            unsent += rem[k]
        if ring:
            ptr %= len(ring)
        for j in range(m):
            if busy[j] > t or not ring or unsent <= ps.th[j]:
                continue
            k = ring[ptr]
            size = min(quantum * w[k], rem[k])
            t1 = t + size / ps.rate[j]
            busy[j] = t1
            segs.send(ps.order[j], k, t, t1)
            arr = t1 + ps.delay[j]
            last_arrival[k] = arr if last_arrival[k] is None or arr > last_arrival[k] else last_arrival[k]
            rem[k] -= size
            unsent -= size
            if rem[k] <= 0:
                finish[k] = last_arrival[k]
                ring.pop(ptr)
                if ring:
                    ptr %= len(ring)
                else:
                    ptr = 0
            else:
                ptr = (ptr + 1) % len(ring)
        nxt = [b for b in busy if b > t] if ring else []
        nxt += [rel[k] for k in range(n) if not joined[k]]
        if not nxt:
            break
        t = min(nxt)
    fin = [f if f is not None else rel[k] for k, f in enumerate(finish)]
    return FluidResult(finish=fin, completion=[f - r for f, r in zip(fin, rel)], release=rel,
                       segments=segs.close(), events=events)


__all__ = ["FluidPath", "FluidStream", "FluidResult", "PathSet", "Segment", "q", "thresholds",
           "ecf_completion", "ecf_single", "ecf_switch_times", "srpt_ecf", "offline_oracle",
           "sa_ecf"]
