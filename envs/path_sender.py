"""The sender's state of one path of a connection (:mod:`envs.transport`):
its congestion controller, RFC 9002 RTT estimate, packet-number space,
sent-but-unacknowledged packets and loss-detection timer. Units: seconds
and bytes."""

from __future__ import annotations

import math

from envs.cc.base import CongestionController

K_GRANULARITY = 0.001           # s, RFC 9002 kGranularity
K_INITIAL_RTT = 0.333           # s, RFC 9002 kInitialRtt
INF = math.inf


class PathSender:
    """Sender-side state of one path; also the read-only path view of schedulers."""

    __slots__ = ("index", "path", "cc", "mss", "payload", "srtt", "rttvar", "min_rtt",
                 "latest_rtt", "min_srtt", "max_srtt", "has_rtt_sample", "bytes_in_flight",
                 "next_pn", "sent", "largest_acked", "loss_time", "pto_count",
                 "time_of_last_ack_eliciting", "timer_deadline", "timer_pending_at",
                 "packets_sent", "packets_acked", "packets_lost", "bytes_sent",
                 "payload_bytes_acked", "retransmissions", "max_ack_delay", "pto_base",
                 "cc_on_sent", "ack_delay", "is_open", "open_time")

    def __init__(self, index: int, path, cc: CongestionController, mss: int, payload: int,
                 max_ack_delay: float):
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
        self.sent: dict[int, tuple] = {}   # pn -> sent tuple; insertion order == pn order
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
        self.open_time = 0.0                  # when it may carry data [s] (envs.setup.establish)
        self.pto_base = self.srtt + 4 * self.rttvar + max_ack_delay
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
        return self.is_open and self.bytes_in_flight + self.mss <= self.cc.cwnd

    @property
    def packets_in_flight(self) -> int:
        return len(self.sent)

    @property
    def name(self) -> str:
        return self.path.name

    # -- RFC 9002 §5.3 ----------------------------------------------------
    def update_rtt(self, latest: float, ack_delay: float) -> None:
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
        self.pto_base = srtt + (v4 if v4 > K_GRANULARITY else K_GRANULARITY) + self.max_ack_delay

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


__all__ = ["PathSender", "K_GRANULARITY", "K_INITIAL_RTT"]
