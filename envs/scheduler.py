"""The scheduler hook: what a multipath scheduler sees and returns.

Whenever the connection could send a packet it calls ``scheduler.decide(view)``.
The scheduler answers with

* an ``int``: the index of the path that carries the next packet (the next
  in-order data: retransmissions first, then new data of the stream chosen by
  the application's stream scheduler);
* ``None`` (:data:`WAIT`): send nothing now; the connection asks again after
  the next ACK, loss or application event;
* a :class:`Decision`: a path plus which data (a stream, or a sequence gap for
  GAP-style schedulers such as STMS/GAPS), or a re-injection: a copy of data
  already in flight on another path (``Decision(path, reinject=True)``).

If the chosen path has no congestion-window room the packet is committed to
that path and leaves as soon as the window opens (no other decision is asked
for meanwhile). Rule-based schedulers normally only pick paths with room.

The ``view`` is the live :class:`envs.transport.Connection`; schedulers must
treat it as read-only. Its surface is typed by the protocols of
:mod:`envs.views` (:class:`~envs.views.ConnectionView`, its paths
:class:`~envs.views.PathView`; ``make typecheck`` checks every scheduler of
envs/ and baselines/ against them; docs/guide/scheduler_contract.md):

``view.now``                 current emulated time [s]
``view.paths``               list of path senders, each with
    ``index``, ``cwnd`` [bytes], ``ssthresh`` [bytes], ``in_slow_start``,
    ``bytes_in_flight`` [bytes], ``packets_in_flight``,
    ``srtt``/``rttvar``/``min_rtt``/``latest_rtt`` [s] (``srtt`` is the
    RFC 9002 initial 0.333 s guess until ``has_rtt_sample``),
    ``min_srtt``/``max_srtt`` [s] (extremes of srtt seen so far),
    ``has_rtt_sample``, ``is_open`` (False until the path is validated after
    the connection setup, ``envs/setup.py``), ``open_time`` [s] (when it
    may carry data), ``has_room`` (open, bytes_in_flight + mss <= cwnd,
    and the pacer's budget holds a packet: ``envs/path_sender.py``),
    ``packets_sent``, ``packets_acked``, ``packets_lost``, ``bytes_sent``,
    ``retransmissions``, ``mss`` [bytes on the wire], ``payload`` [bytes],
    ``ack_delay`` [s] (reported by the latest ACK frame, RFC 9002 §5.3),
    ``rtt_sample(sent_time, now)`` (a packet's RTT sample [s] corrected by
    that ACK delay: what per-packet feedback consumers should use)
``view.send_window``         connection flow-control credit left [bytes]
``view.pending_bytes``       data not yet sent, retransmissions included [bytes]
``view.retransmit_bytes``    data waiting for retransmission [bytes]
``view.bytes_acked``         application data acknowledged so far [bytes]
``view.peer_oqs``            the receiver's out-of-order queue [bytes] as the
                             latest ACK frame reported it (0 before the first)
``view.streams_pending()``   list of streams with unsent data (``stream_id``,
                             ``remaining`` [bytes], ``size``, ``weight``,
                             ``priority``, ``release_time``, ``sent_offset``,
                             ``swrr_current``: the stream's smooth weighted
                             round-robin counter, the default stream choice
                             being the pending stream maximising
                             ``swrr_current + weight``)
``view.payload``             stream payload carried by one packet [bytes]

One call is allowed: ``view.wake_at(t)`` asks the scheduler again at emulated
time ``t`` [s] (a wait that only holds until a known date).

Re-injection and redundancy (off unless a scheduler sets ``reinjects = True``).
A re-injection sends, on the chosen path, a copy of the frame that has been in
flight longest (earliest sent) among the frames that are in flight on *other*
paths as their only copy; the receiver keeps whichever copy arrives first and
drops the other (it costs bytes on the wire, counted as ``reinjected_bytes``
in the episode metrics). Redundancy is re-injection of every packet: a path
with room copies what another path carries. A scheduler with ``reinjects``
is asked for decisions also when nothing new can be sent (all data sent, or
connection flow control blocked) while a copy could be made; it answers
``Decision(path, reinject=True)`` or waits (any other answer then sends
nothing). A re-injection is sent only on a path with room; on a path without
it, the decision counts as a wait. Its view adds

``view.reinject_source(path)``  the path whose frame a re-injection on
                                ``path`` would copy, or ``None`` (nothing to copy)
``view.reinject_sent_time(path)``  when that frame was sent [s] (``None``: nothing)
``view.no_new_data``            nothing new can be sent now (all data sent, or flow
                                control blocked), only retransmissions or copies
``view.flow_blocked``           new data waits for connection flow-control credit
``view.reinjected_bytes``       payload bytes re-injected so far [bytes]
``view.penalise(path)``         Linux MPTCP's penalisation of a subflow that holds
                                the window back: halve ``path``'s congestion window
                                (and its ssthresh outside slow start), at most once
                                per smoothed RTT of that path; returns whether it did
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from envs.views import ConnectionView, EventClock, PathView, StreamView

WAIT = None


@dataclass(frozen=True, slots=True)
class Decision:
    """A path plus a choice of data.

    ``stream_id``: send from this stream instead of the application's choice.
    ``gap``: skip this many bytes ahead of the next unsent offset of the
    stream (the skipped bytes stay unsent and are sent later, normally by a
    faster path); 0 means the next in-order data.
    ``reinject``: send a copy of the frame in flight longest on another path
    (module docstring; needs a scheduler with ``reinjects = True``); when
    there is none, the next data as usual (nothing while no new data can be sent).
    """

    path: int
    stream_id: int | None = None
    gap: int = 0
    reinject: bool = False


class Scheduler(ABC):
    """Base class of every scheduler. Subclasses implement :meth:`decide` (abstract: a
    subclass without it cannot be instantiated).

    Learning schedulers that need per-packet feedback set
    ``wants_packet_feedback = True`` and override :meth:`on_packet_acked` /
    :meth:`on_packet_lost`; the connection skips those calls otherwise, which
    keeps the per-packet loop free of work nobody asked for.
    """

    #: short registry name, e.g. "minrtt"
    name: str = "scheduler"
    #: call on_packet_acked / on_packet_lost for every packet
    wants_packet_feedback: bool = False
    #: after a wait (None) with nothing in flight on any path, the connection
    #: asks again 1 ms later, since no ACK or loss will wake it up
    reask_when_idle: bool = True
    #: what :meth:`decide` computes, when the compiled core can take the
    #: decision without calling it (a name of :data:`envs.rule_codes.RULES`);
    #: None: :meth:`decide` is called for every decision
    native_rule: str | None = None
    #: the scheduler may answer ``Decision(path, reinject=True)`` (module docstring):
    #: the connection then also asks it when nothing new can be sent, and counts copies
    reinjects: bool = False

    # the hooks below are optional: empty unless a subclass overrides them (hence noqa B027)
    def reset(self, view: ConnectionView) -> None:  # noqa: B027
        """Called once when a connection starts using this scheduler."""

    @abstractmethod
    def decide(self, view: ConnectionView) -> int | Decision | None:
        """The next packet's path (an index into ``view.paths``), a :class:`Decision`,
        or None (:data:`WAIT`): module docstring."""

    def on_packet_acked(  # noqa: B027
        self, view: ConnectionView, path: int, size: int, sent_time: float
    ) -> None:
        """A packet of ``size`` bytes sent at ``sent_time`` [s] on ``path`` was acked."""

    def on_packet_lost(  # noqa: B027
        self, view: ConnectionView, path: int, size: int, sent_time: float
    ) -> None:
        """A packet of ``size`` bytes sent at ``sent_time`` [s] on ``path`` was declared lost."""


#: ``log(metrics, step=None)`` of :meth:`Trainable.fit`: one point of the learning curve
LogFn = Callable[..., object]


@runtime_checkable
class Trainable(Protocol):
    """A scheduler with a training step before it is evaluated (a protocol:
    any object with a ``fit`` method is one; learners also name it as a base).

    ``python -m falcon.train`` (and the experiments of falcon.experiments)
    call ``fit(scenario=..., app=..., seed=..., log=..., progress=..., **train)``
    on every agent whose config has a ``train:`` section (``train`` = that
    section's keys, which each learner declares as keyword parameters with
    defaults, so an unknown key is a TypeError), then ``save(directory)``
    when the scheduler has one. ``log(metrics, step=None)`` takes the
    learning curve (MLflow); ``progress`` whether to print progress;
    ``fit`` returns summary metrics (or None).
    Learners: DQN-On, DQN-Off, Peekaboo, GAPS, the hybrid agent, dqn_modes, FALCON.
    """

    def fit(
        self,
        scenario: Mapping[str, Any],
        app: Mapping[str, Any],
        *,
        seed: int = 0,
        log: LogFn | None = None,
        progress: bool = True,
    ) -> Mapping[str, float] | None:
        """Train on episodes of ``app`` over ``scenario`` from ``seed`` on; summary metrics."""
        ...


class FirstWithRoom(Scheduler):
    """The first path (in index order) with window room, else wait: the
    cheapest possible Python scheduler, used to measure the emulator's own
    cost per packet (``benchmarks/emulator_speed.py``)."""

    name = "first_with_room"

    def decide(self, view: ConnectionView) -> int | None:
        for p in view.paths:
            if p.has_room:
                return p.index
        return None


__all__ = [
    "WAIT",
    "Decision",
    "Scheduler",
    "Trainable",
    "LogFn",
    "FirstWithRoom",
    "ConnectionView",
    "PathView",
    "StreamView",
    "EventClock",
]
