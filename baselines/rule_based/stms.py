"""STMS: slide-together multipath scheduler (Shi et al., 2018), a RECONSTRUCTION.

There is no public code of STMS; this class is rebuilt from the description
in the GAPS paper (Liao et al., IFIP Networking 2020). What is STMS's:
the fast path takes in-order data; a slower path sends later sequence
numbers, leaving a gap that the fast path fills meanwhile, so that data
arrives in order; the gap is adapted from acknowledged data ("delta =
data_acked if > 2 and sent on the slower path, else -data_acked; GAP +=
EWMA(delta) over an adjust interval", EWMA gain 1/8). What is ours (the
description is silent), documented here:

Path choice
    minRTT (unprobed paths probed first). If the choice is *f* (the lowest
    srtt, see :mod:`baselines.rule_based.common`), retransmissions are
    pending, or the chosen path is unprobed: a plain ``int`` (no gap).
    Otherwise ``Decision(path, gap=G)``, G >= 0 bytes (possibly 0).

Gap of a slower path i [payload bytes] = model + learned correction
    model_i = sum over probed paths j with srtt_j < srtt_i of
    (cwnd_j / srtt_j) * (srtt_i - srtt_j) / 2 * payload / mss: the data the
    faster paths deliver during path i's extra one-way delay (symmetric
    delays assumed). With two paths this is cwnd_f / srtt_f * (srtt_s -
    srtt_f) / 2: 0 when the RTTs are equal. G = model_i + corr_i, clamped to
    [0, max_gap_bytes] and to :func:`common.gap_limit`, rounded to whole
    packets.

Adapting corr_i from acked data (``wants_packet_feedback``)
    The sender cannot see MPTCP's connection-level data ACK, so "data_acked"
    is estimated per acknowledged gapped packet: a packet sent on path i at
    t0 and acked at t1 reached the receiver about (t1 - t0) / 2 after t0;
    the data that faster path j delivered before it is what j sent during
    D_j = (t1 - t0) / 2 - srtt_j / 2 after t0, estimated as j's bytes sent
    over [t0, t1] (from a snapshot of ``bytes_sent`` taken at t0) times
    D_j / (t1 - t0). Summed over j, that is F, the gap this packet should
    have had. delta = F - G_now (G_now = the current unclamped model +
    correction) is the data released at the receiver when the packet arrived
    (> 0: the packet arrived late, fast data waited behind it; < 0: it
    arrived early and waited). STMS's rule: if delta > ``dead_band_packets``
    packets (2) the sample counts +delta, otherwise -|delta|. Each sample
    updates ewma_i with gain ``ewma_gain`` (1/8); once per adjust interval
    (default: the path's srtt) corr_i += ewma_i and ewma_i restarts from 0
    (the error it measured has been applied; measuring it against the
    current gap, not the one the packet was sent with, avoids correcting the
    same error again for every packet still in flight, which oscillates).
    corr_i is kept so that model_i + corr_i stays in [0, max_gap_bytes]
    (no wind-up).

Any number of paths: each slower path has its own gap and correction
(as for GAPS, :mod:`baselines.gaps.agent`: the fastest has gap 0, path i
sends the first unsent packet at offset >= GAP_i from the head).
"""

from __future__ import annotations

from collections import deque

from baselines.rule_based.common import (
    INF,
    fastest,
    gap_limit,
    minrtt_choice,
    model_gap_bytes,
    round_to_packets,
)
from envs.errors import ConfigError
from envs.scheduler import ConnectionView, Decision, Scheduler


class STMS(Scheduler):
    name = "stms"
    wants_packet_feedback = True

    def __init__(
        self,
        ewma_gain: float = 0.125,
        dead_band_packets: float = 2.0,
        adjust_interval_s: float | None = None,
        max_gap_bytes: int | None = None,
        max_records: int = 4096,
    ) -> None:
        if not 0.0 < ewma_gain <= 1.0:
            raise ConfigError(f"stms: ewma_gain must be in (0, 1], got {ewma_gain}")
        if adjust_interval_s is not None and adjust_interval_s < 0.0:
            raise ConfigError(f"stms: adjust_interval_s must be >= 0, got {adjust_interval_s}")
        if max_gap_bytes is not None and max_gap_bytes < 0:
            raise ConfigError(f"stms: max_gap_bytes must be >= 0, got {max_gap_bytes}")
        self.ewma_gain = float(ewma_gain)
        self.dead_band_packets = float(dead_band_packets)
        self.adjust_interval_s = adjust_interval_s
        self.max_gap_bytes = INF if max_gap_bytes is None else float(max_gap_bytes)
        self.max_records = int(max_records)
        self._init_state(0)

    def _init_state(self, n: int) -> None:
        self._n = n
        self.corr = [0.0] * n  # learned correction per path [bytes]
        self._ewma = [0.0] * n
        self._last_adjust = [-INF] * n
        # per path: (send time, bytes_sent snapshot of every path) of gapped packets
        self._records = [deque(maxlen=self.max_records) for _ in range(n)]

    def reset(self, view: ConnectionView) -> None:
        self._init_state(len(view.paths))
        now = view.now
        for i in range(self._n):
            self._last_adjust[i] = now

    # ------------------------------------------------------------------
    def model_gap(self, paths, i: int) -> float:
        """Data [payload bytes] the paths faster than ``i`` deliver during
        path ``i``'s extra one-way delay (:func:`common.model_gap_bytes`)."""
        return model_gap_bytes(paths, i)

    def gap_estimate(self, paths, i: int) -> float:
        """Current (unrounded, not data-limited) gap of path ``i`` [bytes]."""
        g = self.model_gap(paths, i) + self.corr[i]
        if g < 0.0:
            return 0.0
        return g if g < self.max_gap_bytes else self.max_gap_bytes

    def decide(self, view: ConnectionView) -> int | Decision | None:
        paths = view.paths
        if len(paths) != self._n:
            self._init_state(len(paths))
        c = minrtt_choice(paths)
        if c is None:
            return None
        if view.retransmit_bytes > 0 or not paths[c].has_rtt_sample or c == fastest(paths):
            return c
        gap = round_to_packets(self.gap_estimate(paths, c), view.payload)
        if gap > 0:
            lim = gap_limit(view)
            if gap > lim:
                gap = lim - lim % view.payload
        self._records[c].append((view.now, tuple([p.bytes_sent for p in paths])))
        return Decision(c, gap=gap)

    def on_packet_acked(self, view: ConnectionView, path: int, size: int, sent_time: float) -> None:
        if path >= self._n:
            return
        q = self._records[path]
        if not q:
            return
        while q and q[0][0] < sent_time:
            q.popleft()
        if not q or q[0][0] != sent_time:
            return
        _, snap = q.popleft()
        now = view.now
        rtt = view.paths[path].rtt_sample(sent_time, now)
        if rtt <= 0.0:
            return
        paths = view.paths
        owd = 0.5 * rtt
        r_i = paths[path].srtt
        ideal = 0.0
        for j, p in enumerate(paths):
            if j == path or not p.has_rtt_sample or p.srtt >= r_i:
                continue
            d = owd - 0.5 * p.srtt
            if d > 0.0:
                ideal += (p.bytes_sent - snap[j]) * d / rtt * p.payload / p.mss
        model = self.model_gap(paths, path)
        cur = model + self.corr[path]
        if cur < 0.0:
            cur = 0.0
        delta = ideal - cur
        if delta <= self.dead_band_packets * view.payload:
            delta = -abs(delta)
        ew = self._ewma[path]
        ew += self.ewma_gain * (delta - ew)
        interval = self.adjust_interval_s if self.adjust_interval_s is not None else r_i
        if now - self._last_adjust[path] >= interval:
            corr = self.corr[path] + ew
            lo = -model
            hi = self.max_gap_bytes - model
            if corr < lo:
                corr = lo
            elif corr > hi:
                corr = hi
            self.corr[path] = corr
            self._last_adjust[path] = now
            ew = 0.0
        self._ewma[path] = ew
