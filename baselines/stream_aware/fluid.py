"""Exact fluid model of stream-aware multipath scheduling (Jonglez, Heusse,
Gaujal, "SRPT-ECF: Challenging Round-Robin for Stream-Aware Multipath
Scheduling", FIT 2020).

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

What is here (the model's objects live in :mod:`baselines.stream_aware.fluid_model`
and are importable from here)

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
from collections.abc import Callable, Sequence
from fractions import Fraction

from baselines.stream_aware.fluid_model import (  # noqa: F401  (the public names of the fluid model)
    FluidPath,
    FluidResult,
    FluidStream,
    Number,
    PathSet,
    Segment,
    _min_pos,
    _paths,
    _Segments,
    _streams,
    ecf_completion,
    q,
    thresholds,
)

# --------------------------------------------------------------------------- SRPT-ECF


class _OrderedRun:
    """The event loop of :func:`_run_ordered`: between two events the order
    of the streams and the path allocation are constant; each iteration
    orders the released streams (:meth:`order`), allocates the paths
    (:meth:`allocate`), finds the time to the next event (:meth:`next_dt`)
    and sends at the allocated rates until then (:meth:`advance`)."""

    def __init__(
        self,
        streams: list[FluidStream],
        ps: PathSet,
        fixed_order: Sequence[int] | None,
        anticipate: bool,
        ordering: str,
    ):
        n, m = len(streams), len(ps)
        self.n, self.m, self.ps = n, m, ps
        self.fixed_order, self.anticipate, self.ordering = fixed_order, anticipate, ordering
        self.rem = [s.size for s in streams]
        self.rel = [s.release for s in streams]
        self.prio = [s.priority for s in streams]
        self.last: list[list[Fraction | None]] = [
            [None] * m for _ in range(n)
        ]  # last send time per (stream, path)
        self.finish: list[Fraction | None] = [None] * n
        self.segs = _Segments(m)
        self.t = min(self.rel) if n else Fraction(0)
        self.prev_seq: list[int] | None = None
        self.order_changes = 0
        self.kept: list[int] = []
        self.in_list: set[int] = set()
        self.insert_margin: Fraction | None = None

    def tin(self, k: int):
        """Latest arrival of what stream ``k`` has sent (None: nothing sent)."""
        delay = self.ps.delay
        vals = [lk + delay[j] for j, lk in enumerate(self.last[k]) if lk is not None]
        return max(vals) if vals else None

    def key(self, k: int) -> Fraction:
        """Eq. 5 at t: max(t + C*(unsent), latest arrival of what was sent)."""
        v = self.t + self.ps.completion(self.rem[k])
        ti = self.tin(k)
        return v if ti is None or v >= ti else ti

    # ---- order
    def order(self, released: list[int]) -> tuple[list[int], dict | None]:
        """The service order of this interval, and the Eq. 5 keys when the
        order is re-sorted continuously (None otherwise)."""
        rem, rel, prio, t = self.rem, self.rel, self.prio, self.t
        if self.fixed_order is not None:
            return [
                k for k in self.fixed_order if rem[k] > 0 and (self.anticipate or rel[k] <= t)
            ], None
        if self.ordering != "insert":
            # continuous re-sorting by Eq. 5 (key value at t from past sends
            # only; ties resolved by the key slopes, see allocate)
            keys = {k: self.key(k) for k in released}
            return sorted(released, key=lambda k: (prio[k], keys[k], rel[k], k)), keys
        # the paper's online rule: existing streams keep their relative
        # order; a newly released stream is inserted before the first
        # stream whose (priority, Eq. 5 key) is larger than its own
        seq = [k for k in self.kept if rem[k] > 0]
        new = sorted((k for k in released if k not in self.in_list), key=lambda k: (rel[k], k))
        if new:
            cur = {k: self.key(k) for k in seq}
            for k in new:
                kk = (prio[k], t + self.ps.completion(rem[k]))
                for s in seq:
                    if prio[s] == kk[0]:
                        gap = abs(cur[s] - kk[1])
                        if self.insert_margin is None or gap < self.insert_margin:
                            self.insert_margin = gap
                pos = next((i for i, s in enumerate(seq) if (prio[s], cur[s]) > kk), len(seq))
                seq.insert(pos, k)
                cur[k] = kk[1]
                self.in_list.add(k)
        self.kept = seq
        return seq, None

    # ---- allocation
    def _serve(self, seq: list[int]):
        """Cumulative unsent sizes along ``seq``, the stream each path
        serves, and per path the first position whose cumulative size
        exceeds its threshold."""
        th, rel, t = self.ps.th, self.rel, self.t
        cs = []
        acc = Fraction(0)
        for k in seq:
            acc += self.rem[k]
            cs.append(acc)
        serve: list[int | None] = [None] * self.m
        first_idx: list[int | None] = [None] * self.m
        for j in range(self.m):
            for i, k in enumerate(seq):
                if cs[i] > th[j]:
                    if first_idx[j] is None:
                        first_idx[j] = i
                    if rel[k] <= t:
                        serve[j] = k
                        break
        return cs, serve, first_idx

    def _slopes(self, seq: list[int], srate: dict, sdmax: dict) -> tuple[dict, dict]:
        """Per stream the slope of its Eq. 5 key under this allocation
        (key = max(t + C*(rem), T_in)), and T_in now."""
        ps, t = self.ps, self.t
        slope, tin_now = {}, {}
        for k in seq:
            r_k = srate.get(k, Fraction(0))
            s1 = 1 - r_k * ps.completion_slope(self.rem[k])
            ti = self.tin(k)
            if k in sdmax:
                cand = t + sdmax[k]
                ti = cand if ti is None or cand > ti else ti
                ti_slope = 1 if ti == cand else 0
            else:
                ti_slope = 0
            tin_now[k] = ti
            v1 = t + ps.completion(self.rem[k])
            if ti is None or v1 > ti:
                slope[k] = s1
            elif ti > v1:
                slope[k] = ti_slope
            else:
                slope[k] = max(s1, ti_slope)
        return slope, tin_now

    def allocate(self, seq: list[int], keys: dict | None, released: list[int]) -> dict:
        """The paths' allocation for ``seq`` (and, with continuous re-sorting,
        a fixed point for exact ties of key values: re-sorted by key slope)."""
        rate, delay, prio, rel = self.ps.rate, self.ps.delay, self.prio, self.rel
        slope = tin_now = None
        for _ in range(self.n + 1):
            cs, serve, first_idx = self._serve(seq)
            srate: dict[int, Fraction] = {}
            sdmax: dict[int, Fraction] = {}
            for j, k in enumerate(serve):
                if k is not None:
                    srate[k] = srate.get(k, Fraction(0)) + rate[j]
                    sdmax[k] = max(sdmax.get(k, delay[j]), delay[j])
            if keys is None:
                slope = None
                break
            slope, tin_now = self._slopes(seq, srate, sdmax)
            new_seq = sorted(released, key=lambda k: (prio[k], keys[k], slope[k], rel[k], k))
            if new_seq == seq:
                break
            seq = new_seq
        return {
            "seq": seq,
            "cs": cs,
            "serve": serve,
            "first_idx": first_idx,
            "srate": srate,
            "sdmax": sdmax,
            "slope": slope,
            "tin_now": tin_now,
        }

    # ---- next event
    def _key_events(self, a: dict, keys: dict, cands: list) -> None:
        """Times until a key changes slope or two neighbours' keys meet."""
        ps, t, rem, prio, th = self.ps, self.t, self.rem, self.prio, self.ps.th
        seq, srate, sdmax, slope, tin_now = (
            a["seq"],
            a["srate"],
            a["sdmax"],
            a["slope"],
            a["tin_now"],
        )
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
        for x, y in zip(seq, seq[1:]):
            if prio[x] != prio[y]:
                continue
            diff = keys[x] - keys[y]  # <= 0
            ds = slope[x] - slope[y]
            if ds > 0:
                cands.append(-diff / ds)

    def next_dt(self, a: dict, keys: dict | None, future: list) -> Fraction:
        """Time to the next event: a release, a stream finishing, a
        cumulative size crossing a threshold, or (continuous re-sorting) a
        key event."""
        th, rem = self.ps.th, self.rem
        seq, srate, serve, first_idx, cs = a["seq"], a["srate"], a["serve"], a["first_idx"], a["cs"]
        drain = []  # drain rate of each cumulative sum
        acc = Fraction(0)
        for k in seq:
            acc += srate.get(k, Fraction(0))
            drain.append(acc)
        cands: list[Fraction | None] = [f - self.t for f in future]
        for k, r_k in srate.items():
            cands.append(rem[k] / r_k)
        for j in range(self.m):
            i = first_idx[j]
            if i is not None and serve[j] is not None and drain[i] > 0:
                cands.append((cs[i] - th[j]) / drain[i])
        if keys is not None:
            self._key_events(a, keys, cands)
        dt = _min_pos(c for c in cands if c is None or c > 0)
        if dt is None:
            # nothing is served and nothing will be released: cannot happen with TH_0 = 0
            raise RuntimeError("fluid model: stalled")
        return dt

    # ---- advance
    def advance(self, a: dict, dt: Fraction) -> None:
        t, t1 = self.t, self.t + dt
        for j, k in enumerate(a["serve"]):
            if k is not None:
                self.segs.send(self.ps.order[j], k, t, t1)
                self.last[k][j] = t1
        for k, r_k in a["srate"].items():
            self.rem[k] -= r_k * dt
            if self.rem[k] <= 0:
                self.rem[k] = Fraction(0)
                self.finish[k] = self.tin(k)
        self.t = t1

    def note_order(self, seq: list[int]) -> None:
        """Stability bookkeeping: did the relative order of the streams
        present before and now change?"""
        if self.prev_seq is not None:
            common = set(self.prev_seq) & set(seq)
            if [k for k in self.prev_seq if k in common] != [k for k in seq if k in common]:
                self.order_changes += 1
        self.prev_seq = seq


def _run_ordered(
    streams: list[FluidStream],
    ps: PathSet,
    fixed_order: Sequence[int] | None,
    anticipate: bool,
    max_events: int,
    ordering: str = "insert",
) -> FluidResult:
    run = _OrderedRun(streams, ps, fixed_order, anticipate, ordering)
    rem, rel = run.rem, run.rel
    events = 0
    while True:
        live = [k for k in range(run.n) if rem[k] > 0]
        if not live:
            break
        released = [k for k in live if rel[k] <= run.t]
        future = [rel[k] for k in live if rel[k] > run.t]
        if not released:
            run.t = min(future)
            continue
        events += 1
        if events > max_events:
            raise RuntimeError(
                f"fluid model: more than {max_events} events (a bug or a Zeno schedule)"
            )
        seq, keys = run.order(released)
        alloc = run.allocate(seq, keys, released)
        run.note_order(alloc["seq"])
        run.advance(alloc, run.next_dt(alloc, keys, future))
    fin = [f if f is not None else rel[k] for k, f in enumerate(run.finish)]
    return FluidResult(
        finish=fin,
        completion=[f - r for f, r in zip(fin, rel)],
        release=rel,
        segments=run.segs.close(),
        order_changes=run.order_changes,
        events=events,
        order=tuple(fixed_order) if fixed_order is not None else None,
        insert_margin=run.insert_margin,
    )


def srpt_ecf(
    streams,
    paths,
    *,
    ordering: str = "insert",
    order: Sequence[int] | None = None,
    anticipate: bool = False,
    max_events: int = 1_000_000,
) -> FluidResult:
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


def offline_oracle(
    streams,
    paths,
    metric: str | Callable[[FluidResult], Fraction] = "mean",
    *,
    anticipate: bool = True,
    max_streams: int = 8,
) -> FluidResult:
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
        raise ValueError(
            f"offline_oracle: {len(ss)} streams means {math.factorial(len(ss))} orders; "
            f"raise max_streams if you mean it"
        )
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
        for k in sorted(
            (k for k in range(n) if not joined[k] and rel[k] <= t), key=lambda k: (rel[k], k)
        ):
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
            last_arrival[k] = (
                arr if last_arrival[k] is None or arr > last_arrival[k] else last_arrival[k]
            )
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
    return FluidResult(
        finish=fin,
        completion=[f - r for f, r in zip(fin, rel)],
        release=rel,
        segments=segs.close(),
        events=events,
    )


__all__ = [
    "FluidPath",
    "FluidStream",
    "FluidResult",
    "PathSet",
    "Segment",
    "q",
    "thresholds",
    "ecf_completion",
    "ecf_single",
    "ecf_switch_times",
    "srpt_ecf",
    "offline_oracle",
    "sa_ecf",
]
