"""DAPS: delay-aware packet scheduler (Kuhn et al., ICC 2014).

Rules (reconstructed from the paper and the released MPTCP DAPS module):

* Paths with an RTT sample are sorted by srtt; d_i = srtt_i / 2 rounded to a
  multiple of 4 ms (half up; at least one 4 ms tick); cwnd_i is a smoothed
  cwnd (7/8 old + 1/8 new, sampled at most once per srtt of the path), in
  packets (rounded, at least 1).
* A schedule over ticks t = 1 .. lcm(d_i): at each t every path with
  t mod d_i = 0 gets cwnd_i consecutive segments of the sequence space, paths
  in srtt order. The schedule is rebuilt when all its segments have been
  handed out; if it yields nothing (no path has an RTT sample) the decision
  falls back to minRTT.

How the plan is executed with this framework's scheduler hook (the paper is
silent): the kernel module hands each in-order segment to the subflow that
owns it and lets it queue there; here a decision committed to a path without
room blocks the connection, so DAPS uses gaps instead. Each path, when it has
room, sends the next segment the schedule gives it; if segments owned by
other paths come before it and are not sent yet, it sends with
``Decision(path, gap=(position - first unsent position) * payload)``, i.e. it
leaves the gap for the faster path, which is what the schedule means. When
several paths have room the one whose next segment comes first is used.
When the owner of the next segments has no room and no other path may send
(its segments of this schedule are used up), DAPS waits (``None``).

Further decisions: retransmissions (``view.retransmit_bytes > 0``, sent
first by the transport, gap ignored) and probes of unprobed paths follow
minRTT and consume no segment of the schedule; a path whose gap would reach
past the data still unsent (see :func:`common.gap_limit`) does not send; the
schedule is cut at ``max_schedule_ticks`` ticks when the lcm is longer (it
keeps at least one round of the slowest path). Any number of paths.
"""

from __future__ import annotations

import math

from baselines.rule_based.common import INF, gap_limit, minrtt_choice
from envs.errors import ConfigError
from envs.scheduler import ConnectionView, Decision, Scheduler

_EXHAUSTED = object()


def delay_ticks(srtt: float, granularity: float) -> int:
    """d = srtt / 2 rounded (half up) to a multiple of ``granularity``, in
    ticks of ``granularity`` (at least 1)."""
    d = int(srtt / 2.0 / granularity + 0.5 + 1e-9)
    return d if d > 1 else 1


def build_schedule(order, delays, cwnds, max_ticks: int):
    """The DAPS plan.

    ``order``: path indices sorted by srtt; ``delays[k]`` (ticks) and
    ``cwnds[k]`` (segments) belong to ``order[k]``. Returns ``(period,
    blocks)``: the schedule length in ticks and the list of
    ``(path, first_position, count)`` blocks in sequence order.
    """
    period = 1
    for d in delays:
        period = period * d // math.gcd(period, d)
    if period > max_ticks:
        period = max(max_ticks, max(delays))
    blocks = []
    pos = 0
    n = len(order)
    for t in range(1, period + 1):
        for k in range(n):
            if t % delays[k] == 0:
                c = cwnds[k]
                blocks.append((order[k], pos, c))
                pos += c
    return period, blocks


class DAPS(Scheduler):
    name = "daps"

    def __init__(
        self,
        delay_granularity_s: float = 0.004,
        cwnd_gain: float = 0.125,
        max_schedule_ticks: int = 4096,
    ) -> None:
        if delay_granularity_s <= 0.0:
            raise ConfigError(f"daps: delay_granularity_s must be > 0, got {delay_granularity_s}")
        if not 0.0 < cwnd_gain <= 1.0:
            raise ConfigError(f"daps: cwnd_gain must be in (0, 1], got {cwnd_gain}")
        if max_schedule_ticks < 1:
            raise ConfigError(f"daps: max_schedule_ticks must be >= 1, got {max_schedule_ticks}")
        self.delay_granularity_s = float(delay_granularity_s)
        self.cwnd_gain = float(cwnd_gain)
        self.max_schedule_ticks = int(max_schedule_ticks)
        self._init_state(0)

    def _init_state(self, n: int) -> None:
        self._n = n
        self._scwnd = [0.0] * n  # smoothed cwnd [bytes], 0 = no sample yet
        self._scwnd_t = [-INF] * n  # time of the last cwnd sample
        self._blocks: list[list[tuple[int, int]]] = [[] for _ in range(n)]
        self._bi = [0] * n  # cursor: block index per path
        self._bo = [0] * n  # cursor: offset inside the block
        self._next = [INF] * n  # next schedule position per path
        self.period = 0  # length of the current schedule [ticks]
        self.schedule: list[tuple[int, int, int]] = []  # (path, first_position, count)

    def reset(self, view: ConnectionView) -> None:
        self._init_state(len(view.paths))

    # ------------------------------------------------------------------
    def decide(self, view: ConnectionView) -> int | Decision | None:
        paths = view.paths
        if len(paths) != self._n:
            self._init_state(len(paths))
        self._sample_cwnd(paths, view.now)
        c = minrtt_choice(paths)
        if c is None:
            return None
        if view.retransmit_bytes > 0 or not paths[c].has_rtt_sample:
            return c
        r = self._from_schedule(view, paths)
        if r is _EXHAUSTED:
            self.rebuild(view)
            r = self._from_schedule(view, paths)
            if r is _EXHAUSTED:
                return c
        return r

    def _sample_cwnd(self, paths, now: float) -> None:
        scwnd = self._scwnd
        last = self._scwnd_t
        g = self.cwnd_gain
        for i, p in enumerate(paths):
            if now - last[i] >= p.srtt:
                if scwnd[i] > 0.0:
                    scwnd[i] += g * (p.cwnd - scwnd[i])
                else:
                    scwnd[i] = float(p.cwnd)
                last[i] = now

    def rebuild(self, view: ConnectionView) -> None:
        """Build a new schedule from the current srtts and smoothed cwnds."""
        paths = view.paths
        order = [i for i, p in enumerate(paths) if p.has_rtt_sample]
        order.sort(key=lambda i: (paths[i].srtt, i))
        gran = self.delay_granularity_s
        delays = [delay_ticks(paths[i].srtt, gran) for i in order]
        cwnds = []
        for i in order:
            p = paths[i]
            w = self._scwnd[i] if self._scwnd[i] > 0.0 else p.cwnd
            seg = int(w / p.mss + 0.5)
            cwnds.append(seg if seg > 1 else 1)
        self.period, self.schedule = build_schedule(order, delays, cwnds, self.max_schedule_ticks)
        blocks = self._blocks
        for i in range(self._n):
            blocks[i] = []
        for i, start, count in self.schedule:
            blocks[i].append((start, count))
        for i in range(self._n):
            self._bi[i] = 0
            self._bo[i] = 0
            self._next[i] = blocks[i][0][0] if blocks[i] else INF

    def _from_schedule(self, view: ConnectionView, paths):
        nxt = self._next
        head = INF
        for x in nxt:
            if x < head:
                head = x
        if head == INF:
            return _EXHAUSTED
        payload = view.payload
        limit = -1
        best = -1
        best_pos = INF
        for i, p in enumerate(paths):
            pos = nxt[i]
            if pos < best_pos and p.has_room:
                if pos > head:
                    if limit < 0:
                        limit = gap_limit(view)
                    if (pos - head) * payload > limit:
                        continue
                best = i
                best_pos = pos
        if best < 0:
            return None
        self._advance(best)
        if best_pos == head:
            return best
        return Decision(best, gap=int(best_pos - head) * payload)

    def _advance(self, i: int) -> None:
        blocks = self._blocks[i]
        bi = self._bi[i]
        bo = self._bo[i] + 1
        start, count = blocks[bi]
        if bo >= count:
            bi += 1
            bo = 0
            self._bi[i] = bi
            if bi >= len(blocks):
                self._bo[i] = 0
                self._next[i] = INF
                return
            start = blocks[bi][0]
        self._bo[i] = bo
        self._next[i] = start + bo
