"""Congestion-control interface (per path; coupled controllers share a group).

Units: bytes and seconds. ``mss`` is the packet size on the wire [bytes].

The transport calls, per path:

* ``on_packet_sent(now, size)`` when a packet leaves;
* ``on_ack(now, acked_bytes, sent_time, rtt)`` once per ACK frame with the
  bytes newly acknowledged (sum over packets), the send time of the largest
  newly acked packet [s] and the path's RTT estimator (``rtt.srtt``,
  ``rtt.min_rtt``, ``rtt.latest_rtt`` [s]);
* ``on_loss(now, lost_bytes, sent_time)`` for each lost packet; a reduction
  happens at most once per recovery period (a loss of a packet sent before
  the current recovery started is ignored), as RFC 9002 §7.3.2;
* ``on_pto(now)`` when a probe timeout fires (no reduction by default).

``pacing_rate`` [bytes/s] is the controller's own pacing rate, read by the
path's pacer (:meth:`envs.path_sender.PathSender.pace_rate`); 0 (every
window-based controller) leaves the pacer its usual ``gain x cwnd / srtt``.
Rate-based controllers (BBR) set it.

Coupled controllers (LIA, OLIA, BALIA) of one connection share a
:class:`CouplingGroup` and read each other's ``cwnd`` and ``srtt`` through it.
"""

from __future__ import annotations


class RttEstimate:
    """The RTT estimate a controller's ``on_ack`` reads: smoothed, minimum and
    latest round trip [s]. The path sender (:class:`envs.path_sender.PathSender`)
    is one; any object with these three attributes will do, and controllers of
    the compiled core read an ``RttEstimate``'s as C fields (an attribute
    lookup built a Python float per ACK)."""

    __slots__ = ("srtt", "min_rtt", "latest_rtt")
    srtt: float
    min_rtt: float
    latest_rtt: float


class CouplingGroup:
    """The subflows of one connection whose windows are coupled."""

    __slots__ = ("members",)

    def __init__(self):
        self.members: list[CongestionController] = []

    def add(self, cc: "CongestionController") -> None:
        self.members.append(cc)


class CongestionController:
    """NewReno-shaped base: slow start, recovery period, minimum window."""

    name = "base"

    def __init__(
        self,
        mss: int,
        initial_window_packets: int = 32,
        min_window_packets: int = 2,
        max_window_bytes: float = float("inf"),
        group: CouplingGroup | None = None,
    ):
        self.mss = mss
        self.cwnd = float(initial_window_packets * mss)
        self.ssthresh = float("inf")
        self.min_window = float(min_window_packets * mss)
        self.max_window = float(max_window_bytes)
        self.recovery_start = -1.0
        #: smoothed RTT of the path [s]; kept current by the transport so
        #: coupled controllers can read it across subflows.
        self.srtt = 0.333
        #: the controller's pacing rate [bytes/s]; 0: the pacer's gain x cwnd / srtt
        self.pacing_rate = 0.0
        self.group = group
        if group is not None:
            group.add(self)

    @property
    def in_slow_start(self) -> bool:
        return self.cwnd < self.ssthresh

    def in_recovery(self, sent_time: float) -> bool:
        return sent_time <= self.recovery_start

    def on_packet_sent(self, now: float, size: int) -> None:
        pass

    def on_ack(self, now: float, acked_bytes: int, sent_time: float, rtt) -> None:
        raise NotImplementedError

    def on_loss(self, now: float, lost_bytes: int, sent_time: float) -> None:
        raise NotImplementedError

    def penalise(self) -> None:
        """Linux MPTCP's penalisation of a subflow that holds the connection's window
        back (``mptcp_rcv_buf_optimization``): halve the window, not below
        ``min_window`` (Linux: one packet), and the slow-start threshold, not below
        two packets, unless in slow start."""
        in_slow_start = self.cwnd < self.ssthresh
        half = self.cwnd / 2
        self.cwnd = half if half > self.min_window else self.min_window
        if not in_slow_start:
            half = self.ssthresh / 2
            self.ssthresh = half if half > 2 * self.mss else float(2 * self.mss)

    def on_pto(self, now: float) -> None:
        pass
