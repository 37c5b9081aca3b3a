"""STTF: shortest transfer time first (Hurtig et al., IEEE/ACM ToN 2018).

The next packet goes to the path that would deliver it first. Estimated
delivery time of one more packet on path i [s]:

    t_i = (bytes_in_flight_i + mss_i) / bw_i + min_rtt_i / 2

the data queued ahead of it on that path plus the packet itself, drained at
the path's bandwidth estimate, plus the one-way propagation delay. ``bw_i``
is the congestion controller's delivery-rate estimate ``path.cc.bandwidth``
[bytes/s] when it has a positive one (BBR), else ``cwnd / srtt`` (any other
controller); ``min_rtt_i`` is the path's minimum RTT (its srtt until the
first sample).

Decisions (the paper schedules from the subflows' send buffers; here a
decision committed to a path without room blocks the connection, so):

* Every open path is compared, with room or not. If the earliest delivery
  is on a path with room, send there. If it is on a path without
  congestion-window room, STTF waits (returns ``None``, as BLEST and ECF
  wait for the fast path): that path's queue term already counts the time
  until its window opens, so a packet sent elsewhere would arrive later.
  The connection asks again after the next ACK or loss.
* Ties go to the lowest path index.
* Paths without an RTT sample are probed first as minRTT does (no estimate
  exists yet); paths not open yet (connection setup) are not candidates.
* Retransmissions are the transport's (sent first, on the chosen path).

Any number of paths.
"""

from __future__ import annotations

from baselines.rule_based.common import INF
from envs.scheduler import ConnectionView, Decision, Scheduler


def bandwidth_estimate(p) -> float:
    """Path ``p``'s bandwidth estimate [bytes/s]: ``p.cc.bandwidth`` when
    positive, else cwnd / srtt (0 if neither is known)."""
    cc = getattr(p, "cc", None)
    bw = getattr(cc, "bandwidth", 0.0) if cc is not None else 0.0
    if bw is not None and bw > 0.0:
        return float(bw)
    return p.cwnd / p.srtt if p.srtt > 0.0 else 0.0


def delivery_time(p) -> float:
    """Estimated time [s] until one more packet sent on ``p`` now is delivered."""
    bw = bandwidth_estimate(p)
    if bw <= 0.0:
        return INF
    one_way = p.min_rtt if p.min_rtt < INF else p.srtt
    return (p.bytes_in_flight + p.mss) / bw + one_way * 0.5


class STTF(Scheduler):
    name = "sttf"

    def decide(self, view: ConnectionView) -> int | Decision | None:
        best = -1
        best_t = INF
        probe = -1
        probe_sent = INF
        for i, p in enumerate(view.paths):
            if not getattr(p, "is_open", True):
                continue
            if not p.has_rtt_sample:
                if p.has_room and p.packets_sent < probe_sent:
                    probe = i
                    probe_sent = p.packets_sent
                continue
            t = delivery_time(p)
            if t < best_t:
                best = i
                best_t = t
        if probe >= 0:
            return probe
        if best < 0 or not view.paths[best].has_room:
            return None
        return best
