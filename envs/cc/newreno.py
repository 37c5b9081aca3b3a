"""NewReno congestion control as specified for QUIC (RFC 9002 §7, Appendix B).

Units: bytes and seconds. ``cwnd``, ``ssthresh``, ``min_window`` and
``max_window`` are bytes (floats); ``mss`` is the packet size on the wire
[bytes].

* Slow start (``cwnd < ssthresh``): ``cwnd += acked_bytes`` (byte counting).
* Congestion avoidance: ``cwnd += mss * acked_bytes / cwnd``, i.e. about one
  ``mss`` per congestion window of acknowledged bytes (one per RTT).
* Congestion event (a loss of a packet sent after the current recovery period
  started): ``ssthresh = cwnd * kLossReductionFactor`` (0.5),
  ``cwnd = max(ssthresh, min_window)``, ``recovery_start = now``.
* No increase for ACKs of packets sent at or before ``recovery_start``.
* ``cwnd`` never exceeds ``max_window``.

Not modelled here (the transport's job if wanted): the RFC 9002 §7.8 rule not
to grow an under-utilised (application-limited) window, and ECN.
"""

from __future__ import annotations

from .base import CongestionController

#: RFC 9002 kLossReductionFactor.
LOSS_REDUCTION_FACTOR = 0.5


class NewReno(CongestionController):
    """RFC 9002 NewReno, byte counting.

    Also the base class of CUBIC and the coupled controllers: subclasses
    override :meth:`on_ack` and/or :meth:`_reduce` (the window reduction of
    one congestion event); the recovery-period bookkeeping lives in
    :meth:`on_loss`.
    """

    name = "newreno"
    #: True for controllers that read the other members of their group
    coupled = False

    def on_ack(self, now: float, acked_bytes: int, sent_time: float, rtt) -> None:
        """``acked_bytes`` [bytes] newly acked by one ACK frame; ``sent_time`` [s]
        of the largest newly acked packet."""
        if sent_time <= self.recovery_start:
            return
        cwnd = self.cwnd
        if cwnd < self.ssthresh:
            cwnd += acked_bytes
        else:
            cwnd += self.mss * acked_bytes / cwnd
        self.cwnd = cwnd if cwnd < self.max_window else self.max_window

    def on_loss(self, now: float, lost_bytes: int, sent_time: float) -> None:
        """One lost packet of ``lost_bytes`` [bytes] sent at ``sent_time`` [s]; at
        most one window reduction per recovery period (RFC 9002 §7.3.2)."""
        if sent_time <= self.recovery_start:
            return
        self.recovery_start = now
        self._reduce(now)

    def _reduce(self, now: float) -> None:
        """Window reduction of one congestion event (RFC 9002 §7.3.2)."""
        ssthresh = self.cwnd * LOSS_REDUCTION_FACTOR
        self.ssthresh = ssthresh
        self.cwnd = ssthresh if ssthresh > self.min_window else self.min_window

    def on_persistent_congestion(self, now: float) -> None:
        """RFC 9002 §7.6.2: collapse to the minimum window and leave recovery.

        Not called by the transport unless it detects persistent congestion;
        call it after the :meth:`on_loss` calls for the lost packets.
        """
        self.cwnd = self.min_window
        self.recovery_start = -1.0
