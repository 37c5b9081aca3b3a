"""The sender's state of one path of a connection (:mod:`envs.transport`):
its congestion controller, RFC 9002 RTT estimate, packet-number space,
sent-but-unacknowledged packets, loss-detection timer and pacer. Units:
seconds and bytes.

The pacer is quic-go's (``congestion/pacer.go``), one per path: a token
budget [bytes] that refills at the pacing rate ``gain x cwnd / srtt``
(gain 1.25) up to a burst of ``max(burst_packets x mss, rate x (min_delay
+ kGranularity))``, starts full, and loses each packet's size when it is
sent. A packet may leave when the budget holds one ``mss``; when it does
not, the connection wakes up ``max(min_delay, time to refill)`` after the
last send (quic-go's ``TimeUntilSend``). Until a path's first RTT sample its
bandwidth estimate is unbounded (quic-go), so it is not paced. Probe packets
(PTO) are sent regardless of the budget, as the congestion window is
ignored for them, and still spend it. A rate-based controller (BBR) that
sets its own ``cc.pacing_rate`` > 0 [bytes/s] is paced at that rate
instead; the others leave it 0.
"""

from __future__ import annotations

import math

from envs.cc.base import CongestionController, RttEstimate
from envs.sent import SentPackets

K_GRANULARITY = 0.001  # s, RFC 9002 kGranularity
_GRANULARITY = K_GRANULARITY  # its C double in the compiled core (path_sender.pxd)
K_INITIAL_RTT = 0.333  # s, RFC 9002 kInitialRtt
INF = math.inf
#: pacing settings of a path (``scenario.pacing``, docs/reference/formats/scenario_schema.md): quic-go's pacer
PACING_DEFAULTS: dict = {"enabled": True, "gain": 1.25, "burst_packets": 10, "min_delay_ms": 1.0}
PACING_OFF: dict = {**PACING_DEFAULTS, "enabled": False}


class PathSender(RttEstimate):
    """Sender-side state of one path; also the read-only path view of schedulers.
    Its ``srtt``, ``min_rtt`` and ``latest_rtt`` are those of :class:`RttEstimate`."""

    __slots__ = (
        "index",
        "path",
        "cc",
        "mss",
        "payload",
        "rttvar",
        "min_srtt",
        "max_srtt",
        "has_rtt_sample",
        "bytes_in_flight",
        "next_pn",
        "sent",
        "largest_acked",
        "loss_time",
        "pto_count",
        "time_of_last_ack_eliciting",
        "timer_deadline",
        "timer_pending_at",
        "packets_sent",
        "packets_acked",
        "packets_lost",
        "bytes_sent",
        "payload_bytes_acked",
        "retransmissions",
        "max_ack_delay",
        "pto_base",
        "cc_on_sent",
        "ack_delay",
        "is_open",
        "open_time",
        "clock",
        "pace_gain",
        "pace_burst_bytes",
        "pace_min_delay",
        "pace_budget",
        "pace_last",
    )

    def __init__(
        self,
        index: int,
        path,
        cc: CongestionController,
        mss: int,
        payload: int,
        max_ack_delay: float,
        clock=None,
        pacing: dict | None = None,
    ):
        self.index = index
        self.path = path
        self.cc = cc
        self.mss = mss
        self.payload = payload
        self.srtt = K_INITIAL_RTT
        self.rttvar = K_INITIAL_RTT / 2
        self.min_rtt = INF
        self.latest_rtt = 0.0
        self.min_srtt = INF
        self.max_srtt = 0.0
        self.has_rtt_sample = False
        self.bytes_in_flight = 0
        self.next_pn = 0
        self.sent = SentPackets()  # in flight, by packet number (envs.sent)
        self.largest_acked = -1
        self.loss_time = INF
        self.pto_count = 0
        self.time_of_last_ack_eliciting = 0.0
        self.timer_deadline = INF
        self.timer_pending_at = INF
        self.packets_sent = 0
        self.packets_acked = 0
        self.packets_lost = 0
        self.bytes_sent = 0
        self.payload_bytes_acked = 0
        self.retransmissions = 0
        self.max_ack_delay = max_ack_delay
        #: ACK delay [s] the receiver reported in the latest ACK frame on this
        #: path, capped at max_ack_delay (RFC 9002 §5.3); set before the
        #: frame's per-packet feedback, so :meth:`rtt_sample` can use it
        self.ack_delay = 0.0
        #: False until the path is validated after the connection setup
        #: (envs.setup): a closed path has no window room
        self.is_open = True
        self.open_time = 0.0  # when it may carry data [s] (envs.setup.establish)
        self.pto_base = self.srtt + 4 * self.rttvar + max_ack_delay
        #: the simulator whose ``now`` :attr:`has_room` reads (the pacer needs the time)
        self.clock = clock
        #: pacing (module docstring): gain 0 = off; budget [bytes] and time [s] at the last send
        pacing = pacing or PACING_OFF
        self.pace_gain = float(pacing["gain"]) if pacing["enabled"] else 0.0
        self.pace_burst_bytes = float(pacing["burst_packets"] * mss)
        self.pace_min_delay = pacing["min_delay_ms"] / 1000.0
        self.pace_budget = INF
        self.pace_last = -1.0
        # skip the per-packet call for controllers that do not override it
        overridden = type(cc).on_packet_sent is not CongestionController.on_packet_sent
        self.cc_on_sent = cc.on_packet_sent if overridden else None

    # -- read-only view -------------------------------------------------
    @property
    def cwnd(self) -> float:
        return self.cc.cwnd

    @property
    def ssthresh(self) -> float:
        return self.cc.ssthresh

    @property
    def in_slow_start(self) -> bool:
        return self.cc.cwnd < self.cc.ssthresh

    @property
    def has_room(self) -> bool:
        """The path may take a packet now: open, window room and pacing budget."""
        return self.may_send(self.clock.now)

    def may_send(self, now: float) -> bool:
        """:attr:`has_room` at time ``now`` [s]."""
        if not self.is_open or self.bytes_in_flight + self.mss > self.cc.cwnd:
            return False
        return self.pace_gain == 0.0 or self.pace_ok(now)

    @property
    def packets_in_flight(self) -> int:
        return len(self.sent)

    @property
    def name(self) -> str:
        return self.path.name

    # -- RFC 9002 §5.3 ----------------------------------------------------
    def update_rtt(self, latest: float, ack_delay: float) -> int:
        self.latest_rtt = latest
        if not self.has_rtt_sample:
            self.has_rtt_sample = True
            self.min_rtt = latest
            self.srtt = latest
            self.rttvar = latest / 2
        else:
            if latest < self.min_rtt:
                self.min_rtt = latest
            if ack_delay > self.max_ack_delay:
                ack_delay = self.max_ack_delay
            adjusted = latest - ack_delay if latest >= self.min_rtt + ack_delay else latest
            self.rttvar = 0.75 * self.rttvar + 0.25 * abs(self.srtt - adjusted)
            self.srtt = 0.875 * self.srtt + 0.125 * adjusted
        srtt = self.srtt
        if srtt < self.min_srtt:
            self.min_srtt = srtt
        if srtt > self.max_srtt:
            self.max_srtt = srtt
        self.cc.srtt = srtt
        v4 = 4.0 * self.rttvar
        self.pto_base = srtt + (v4 if v4 > _GRANULARITY else _GRANULARITY) + self.max_ack_delay
        return 0

    def rtt_sample(self, sent_time: float, now: float) -> float:
        """RTT sample [s] of a packet sent at ``sent_time`` and acknowledged at
        ``now`` by the latest ACK frame, corrected by that frame's ACK delay as
        RFC 9002 §5.3 corrects the smoothed RTT: the delay is subtracted
        unless the result would fall below ``min_rtt`` (and not before the
        first RTT sample). The delay is the receiver's wait before ACKing the
        frame's largest packet, so a packet acknowledged with it waited at
        least that long: what is left is path delay and queueing."""
        rtt = now - sent_time
        if self.has_rtt_sample and rtt >= self.min_rtt + self.ack_delay:
            rtt -= self.ack_delay
        return rtt

    def pto_period(self) -> float:
        """RFC 9002 §6.2.1 PTO period without backoff [s]."""
        return self.pto_base

    # -- pacing (module docstring) ----------------------------------------
    def pace_rate(self) -> float:
        """Pacing rate [bytes/s]: the controller's own ``cc.pacing_rate`` when it sets one
        (> 0: BBR), else gain x cwnd / srtt; infinite before the first RTT sample."""
        r = self.cc.pacing_rate
        if r > 0.0:
            return r
        if not self.has_rtt_sample:
            return INF
        return self.pace_gain * self.cc.cwnd / self.srtt

    def pace_ok(self, now: float) -> bool:
        """The budget holds one ``mss`` at ``now`` [s] (the refill counted at today's rate)."""
        b = self.pace_budget
        if b >= self.mss or not self.has_rtt_sample:
            return True
        # the same expression as pace_release, so a wake-up at that time finds the budget
        return now >= self.pace_last + (self.mss - b) / self.pace_rate()

    def pace_release(self) -> float:
        """When the connection should ask again for a path :meth:`pace_ok` refuses [s]."""
        d = (self.mss - self.pace_budget) / self.pace_rate()
        return self.pace_last + (d if d > self.pace_min_delay else self.pace_min_delay)

    def pace_sent(self, now: float, size: int) -> int:
        """Spend ``size`` [bytes] of the budget for a packet sent at ``now`` [s]."""
        rate = self.pace_rate()
        burst = rate * (self.pace_min_delay + _GRANULARITY)
        if burst < self.pace_burst_bytes:
            burst = self.pace_burst_bytes
        b = self.pace_budget
        if self.pace_last >= 0.0 and b < burst:
            b += rate * (now - self.pace_last)
        if b > burst:
            b = burst
        self.pace_budget = b - size if b > size else 0.0
        self.pace_last = now
        return 0


def pace_wake_time(paths, now: float) -> float:
    """The earliest :meth:`PathSender.pace_release` of the paths that have
    window room but no pacing budget at ``now`` [s]; infinity if none."""
    t = INF
    for p in paths:
        if (
            p.pace_gain > 0.0
            and p.is_open
            and p.bytes_in_flight + p.mss <= p.cc.cwnd
            and not p.pace_ok(now)
        ):
            r = p.pace_release()
            if r < t:
                t = r
    return t


__all__ = [
    "PathSender",
    "K_GRANULARITY",
    "K_INITIAL_RTT",
    "PACING_DEFAULTS",
    "PACING_OFF",
    "pace_wake_time",
]
