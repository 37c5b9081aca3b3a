"""What a scheduler may read: the typed views of :meth:`envs.scheduler.Scheduler.decide`.

The connection hands itself to its scheduler as a :class:`ConnectionView`
(the live :class:`envs.transport.Connection`, compiled or pure Python), whose
``paths`` are :class:`PathView` objects (:class:`envs.path_sender.PathSender`)
and whose ``streams_pending()`` are :class:`StreamView` objects
(:class:`envs.streams.SendStream`). These protocols list the whole surface a
scheduler may use; everything else on those objects is the emulator's own
state and may change without notice. Every member is read-only except the few
calls named as such (``wake_at``, ``penalise``, the clock's ``schedule`` and
``stop``).

Units: seconds and bytes. The protocols are :func:`typing.runtime_checkable`:
``isinstance(view, ConnectionView)`` checks that the members exist (not
their types), which is what tests/test_scheduler_contract.py asserts of an
emulated episode's real view. A type checker (``make typecheck``) checks the
types statically.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from envs.cc.base import CongestionController


@runtime_checkable
class PathView(Protocol):
    """One path of the connection, as its sender sees it."""

    @property
    def index(self) -> int:
        """Position of the path in ``view.paths`` (what ``decide`` returns to pick it)."""
        ...

    @property
    def mss(self) -> int:
        """Size of a full data packet on the wire [bytes]."""
        ...

    @property
    def payload(self) -> int:
        """Stream payload of a full data packet [bytes]."""
        ...

    @property
    def cwnd(self) -> float:
        """Congestion window [bytes]."""
        ...

    @property
    def ssthresh(self) -> float:
        """Slow-start threshold [bytes]."""
        ...

    @property
    def in_slow_start(self) -> bool:
        """``cwnd < ssthresh``."""
        ...

    @property
    def cc(self) -> CongestionController:
        """The path's congestion controller (read it; only a scheduler that co-controls
        the window, such as the hybrid agent, calls into it)."""
        ...

    @property
    def bytes_in_flight(self) -> int:
        """Bytes sent and neither acknowledged nor declared lost [bytes]."""
        ...

    @property
    def packets_in_flight(self) -> int:
        """Packets sent and neither acknowledged nor declared lost."""
        ...

    @property
    def srtt(self) -> float:
        """Smoothed RTT [s] (RFC 9002; the initial 0.333 s guess until ``has_rtt_sample``)."""
        ...

    @property
    def rttvar(self) -> float:
        """RTT variation [s]."""
        ...

    @property
    def min_rtt(self) -> float:
        """Smallest RTT sample [s]."""
        ...

    @property
    def latest_rtt(self) -> float:
        """Latest RTT sample [s]."""
        ...

    @property
    def min_srtt(self) -> float:
        """Smallest ``srtt`` seen so far [s]."""
        ...

    @property
    def max_srtt(self) -> float:
        """Largest ``srtt`` seen so far [s]."""
        ...

    @property
    def has_rtt_sample(self) -> bool:
        """An RTT sample has been taken on this path."""
        ...

    @property
    def is_open(self) -> bool:
        """The path is validated and may carry data (``envs/setup.py``)."""
        ...

    @property
    def open_time(self) -> float:
        """When the path may carry data [s]."""
        ...

    @property
    def has_room(self) -> bool:
        """Open, ``bytes_in_flight + mss <= cwnd`` and the pacer holds a packet, now."""
        ...

    @property
    def packets_sent(self) -> int:
        """Data packets sent so far."""
        ...

    @property
    def packets_acked(self) -> int:
        """Data packets acknowledged so far."""
        ...

    @property
    def packets_lost(self) -> int:
        """Data packets declared lost so far."""
        ...

    @property
    def bytes_sent(self) -> int:
        """Bytes sent so far, on the wire [bytes]."""
        ...

    @property
    def payload_bytes_acked(self) -> int:
        """Stream payload acknowledged on this path so far [bytes]."""
        ...

    @property
    def retransmissions(self) -> int:
        """Retransmitted packets sent on this path so far."""
        ...

    @property
    def ack_delay(self) -> float:
        """ACK delay reported by the latest ACK frame [s] (RFC 9002 §5.3)."""
        ...

    def rtt_sample(self, sent_time: float, now: float) -> float:
        """RTT sample [s] of a packet sent at ``sent_time`` and acknowledged at ``now`` [s],
        corrected by the ACK delay."""
        ...

    def may_send(self, now: float) -> bool:
        """``has_room`` at emulated time ``now`` [s]."""
        ...


@runtime_checkable
class StreamView(Protocol):
    """A stream with unsent data (``view.streams_pending()``)."""

    @property
    def stream_id(self) -> int:
        """The stream's id."""
        ...

    @property
    def size(self) -> int:
        """The stream's size [bytes]."""
        ...

    @property
    def remaining(self) -> int:
        """Bytes not yet sent [bytes]."""
        ...

    @property
    def sent_offset(self) -> int:
        """Highest offset sent so far [bytes]."""
        ...

    @property
    def weight(self) -> float:
        """Weight of the default stream choice (smooth weighted round robin)."""
        ...

    @property
    def priority(self) -> int:
        """Priority given by the application."""
        ...

    @property
    def release_time(self) -> float:
        """When the application released the stream [s]."""
        ...

    @property
    def swrr_current(self) -> float:
        """Smooth weighted round-robin counter (the default choice maximises it plus ``weight``)."""
        ...


@runtime_checkable
class EventClock(Protocol):
    """The emulation's clock (``view.sim``): learners that act on a timer use it."""

    @property
    def now(self) -> float:
        """Current emulated time [s]."""
        ...

    def schedule(self, time: float, callback: Callable[[Any], object], arg: Any = None) -> None:
        """Run ``callback(arg)`` at emulated ``time`` [s]."""
        ...

    def stop(self) -> None:
        """End the current run of the event loop (an outside agent then decides)."""
        ...


@runtime_checkable
class ConnectionView(Protocol):
    """The connection as a scheduler sees it: the argument of ``decide`` and of the hooks."""

    @property
    def now(self) -> float:
        """Current emulated time [s]."""
        ...

    @property
    def sim(self) -> EventClock:
        """The emulation's clock."""
        ...

    @property
    def paths(self) -> Sequence[PathView]:
        """The paths, in index order."""
        ...

    @property
    def payload(self) -> int:
        """Stream payload carried by one full packet [bytes]."""
        ...

    @property
    def send_window(self) -> int:
        """Connection flow-control credit left [bytes]."""
        ...

    @property
    def pending_bytes(self) -> int:
        """Data not yet sent, retransmissions included [bytes]."""
        ...

    @property
    def retransmit_bytes(self) -> int:
        """Data waiting for retransmission [bytes]."""
        ...

    @property
    def bytes_acked(self) -> int:
        """Application data acknowledged so far [bytes]."""
        ...

    @property
    def delivered(self) -> int:
        """Data the client has received in order so far [bytes]."""
        ...

    @property
    def peer_oqs(self) -> int:
        """The receiver's out-of-order queue as the latest ACK reported it [bytes]."""
        ...

    @property
    def no_new_data(self) -> bool:
        """Nothing new can be sent now (all sent, or flow control blocked)."""
        ...

    @property
    def flow_blocked(self) -> bool:
        """New data waits for connection flow-control credit."""
        ...

    @property
    def reinjected_bytes(self) -> int:
        """Payload re-injected so far [bytes]."""
        ...

    def streams_pending(self) -> Sequence[StreamView]:
        """The released streams with unsent data."""
        ...

    def wake_at(self, time: float) -> None:
        """Ask the scheduler again at emulated ``time`` [s]."""
        ...

    def reinject_source(self, path: int) -> int | None:
        """The path whose frame a re-injection on ``path`` would copy (None: nothing)."""
        ...

    def reinject_sent_time(self, path: int) -> float | None:
        """When that frame was sent [s] (None: nothing to copy)."""
        ...

    def penalise(self, path: int) -> bool:
        """Halve ``path``'s congestion window (Linux MPTCP's penalisation, at most once
        per smoothed RTT); whether it did."""
        ...


__all__ = ["ConnectionView", "PathView", "StreamView", "EventClock"]
