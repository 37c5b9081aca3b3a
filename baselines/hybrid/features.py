"""Hybrid MPTCP's state: six features per subflow, measured over one time slot.

The paper's six, per subflow i (row i of the state, in path order), each
scaled to O(1) over the training ranges (4-128 Mbit/s, 3-300 ms):

====================  =====================================================
``send_rate``         bytes put on the wire during the slot (``bytes_sent``
                      delta, retransmissions and headers included), in
                      Mbit/s / 100
``throughput``        payload bytes newly acknowledged during the slot
                      (``payload_bytes_acked`` delta), Mbit/s / 100
``rtt``               sRTT at the end of the slot, ms / 100, at most 10
``window_change``     log2(cwnd now / cwnd at the previous slot's start,
                      before that slot's action), clipped to [-4, 4]: the
                      previous action plus what the inner loop (LIA) did
                      during the slot (with a held window: the action alone)
``share``             the schedule share h_i in force during the slot, [0, 1]
``rtt_excess``        sRTT minus the connection's min RTT (the smallest
                      ``min_rtt`` over its subflows; until one has an RTT
                      sample, its own sRTT: 0), ms / 100, in [0, 10]
====================  =====================================================

The reward of a slot (of the action taken at its start) is the paper's
``sum_i log(rate_i)``, ``rate_i`` the subflow's ``throughput`` over the slot
in Mbit/s, floored at ``rate_floor_mbps`` (a subflow that delivered nothing,
e.g. one not open yet, costs ``log(floor)`` rather than minus infinity).
"""

from __future__ import annotations

import math

import numpy as np

FEATURES = ("send_rate", "throughput", "rtt", "window_change", "share", "rtt_excess")
N_FEATURES = len(FEATURES)
#: Mbit/s per feature unit of the two rates
RATE_UNIT_MBPS = 100.0
#: ms per feature unit of the two RTT features
RTT_UNIT_MS = 100.0
RTT_CAP = 10.0
WINDOW_CHANGE_CAP = 4.0


class SlotMeter:
    """Per-subflow counters at the start of the current slot, and the features at its end."""

    __slots__ = ("t0", "sent", "acked", "cwnd")

    def __init__(self):
        self.t0 = 0.0
        self.sent: list[int] = []
        self.acked: list[int] = []
        self.cwnd: list[float] = []

    def start(self, paths, now: float) -> None:
        """A slot starts at ``now`` [s]: remember the counters and the windows (before any action)."""
        self.t0 = now
        self.sent = [p.bytes_sent for p in paths]
        self.acked = [p.payload_bytes_acked for p in paths]
        self.cwnd = [p.cc.cwnd for p in paths]

    def measure(self, paths, now: float, shares) -> tuple[np.ndarray, np.ndarray]:
        """``(x [S, 6] float32, throughput [S] in Mbit/s)`` of the slot ending at ``now`` [s]."""
        n = len(paths)
        dt = now - self.t0
        per_mbps = 8e-6 / dt if dt > 0.0 else 0.0
        base = math.inf
        for p in paths:
            if p.has_rtt_sample and p.min_rtt < base:
                base = p.min_rtt
        x = np.zeros((n, N_FEATURES), np.float32)
        thr = np.zeros(n, np.float64)
        for i, p in enumerate(paths):
            srtt = p.srtt
            thr[i] = (p.payload_bytes_acked - self.acked[i]) * per_mbps
            w0 = self.cwnd[i]
            dw = math.log2(p.cc.cwnd / w0) if w0 > 0.0 else 0.0
            excess = (srtt - base) * 1000.0 / RTT_UNIT_MS if base < math.inf else 0.0
            x[i] = (
                (p.bytes_sent - self.sent[i]) * per_mbps / RATE_UNIT_MBPS,
                thr[i] / RATE_UNIT_MBPS,
                min(srtt * 1000.0 / RTT_UNIT_MS, RTT_CAP),
                max(-WINDOW_CHANGE_CAP, min(WINDOW_CHANGE_CAP, dw)),
                shares[i],
                max(0.0, min(excess, RTT_CAP)),
            )
        return x, thr


def slot_reward(throughput_mbps, floor_mbps: float) -> float:
    """``sum_i log(max(rate_i, floor))``, rates in Mbit/s (module docstring)."""
    return float(sum(math.log(r if r > floor_mbps else floor_mbps) for r in throughput_mbps))


def schedule_shares(paths) -> list[float]:
    """``h_i = (w_i / tau_i) / sum_j (w_j / tau_j)``: windows [bytes] over sRTTs [s]."""
    rates = [p.cc.cwnd / p.srtt for p in paths]
    total = sum(rates)
    n = len(paths)
    return [r / total for r in rates] if total > 0.0 else [1.0 / n] * n


__all__ = ["FEATURES", "N_FEATURES", "SlotMeter", "slot_reward", "schedule_shares"]
