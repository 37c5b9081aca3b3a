"""Schedulers that copy data in flight onto another path (re-injection and
redundancy, :mod:`envs.scheduler`): the mechanisms real multipath stacks have
beside the path choice.

* :class:`MinRTTOpportunistic` (``minrtt_or``): Linux MPTCP's default
  scheduler with its opportunistic retransmission and penalisation
  (C. Raiciu et al., "How Hard Can It Be? Designing and Implementing a
  Deployable Multipath TCP", NSDI 2012, Section 4.2; ``mptcp_rcv_buf_optimization``
  in the kernel's ``mptcp_output.c``). minRTT; when the connection's window
  (here: QUIC connection flow control) blocks new data, the fastest path
  with room re-sends the oldest data in flight on a slower path, and that
  slower path's congestion window is halved, at most once per its RTT.
* :class:`MinRTTTailReinjection` (``minrtt_xlink``): XLINK-style re-injection
  (Z. Zheng et al., "XLINK: QoE-Driven Multi-Path QUIC Transport in Large-scale
  Video Services", SIGCOMM 2021): minRTT; when nothing new can be sent (all
  data sent, or flow control blocked), a path with room re-injects the
  oldest data still in flight on another path, so the tail of a transfer
  does not wait for a slow or lossy path's timeouts. ``when_blocked=False``
  copies only once all data has been sent, never while flow control holds
  new data back (:func:`tail_copy`).
* :class:`Redundant` (``redundant``): every packet on every path (tquic's
  redundant scheduler, two copies per frame): the minRTT choice copies what
  another path carries whenever there is such a frame, else sends new data.

The copies cost bytes: the episode metrics of these schedulers carry
``reinjected_bytes`` and ``redundancy_overhead`` (re-injected payload bytes
over the application's bytes).
"""

from __future__ import annotations

from baselines.rule_based.common import minrtt_choice
from envs.errors import check_flag
from envs.scheduler import ConnectionView, Decision, Scheduler


class MinRTTOpportunistic(Scheduler):
    """minRTT with Linux MPTCP's opportunistic retransmission and penalisation
    (module docstring). Any number of paths.

    When flow control blocks new data, the minRTT path ``c`` with room copies
    the oldest frame in flight on another path ``s`` (``view.reinject_source``)
    if ``s`` is slower (higher srtt) than ``c``, and ``s`` is penalised
    (``view.penalise``: cwnd halved at most once per its srtt); otherwise it
    waits. With window room and data to send it is minRTT exactly.

    Args:
        penalise: halve the slower path's window when its data is re-sent
            (the kernel's default; False: opportunistic retransmission alone).
    """

    name = "minrtt_or"
    reinjects = True
    native_rule = "minrtt_until_tail"  # minRTT decided in the compiled core (envs.rules)

    def __init__(self, penalise: bool = True) -> None:
        self.penalise = bool(penalise)

    def decide(self, view: ConnectionView) -> int | Decision | None:
        paths = view.paths
        c = minrtt_choice(paths)
        if c is None or not view.no_new_data:
            return c
        if not view.flow_blocked:
            return None  # all data sent: the kernel's OR does nothing at the tail
        s = view.reinject_source(c)
        if s is None or paths[s].srtt <= paths[c].srtt:
            return None
        if self.penalise:
            view.penalise(s)
        return Decision(c, reinject=True)


def tail_copy(view: ConnectionView, path: int | None, when_blocked: bool = True) -> Decision | None:
    """For a scheduler asked when nothing new can be sent (``view.no_new_data``):
    a re-injection on ``path`` of the oldest frame in flight on another path,
    or None (wait) when there is nothing to copy, no ``path``, or, with
    ``when_blocked`` False, new data is only held back by flow control (then
    a copy would take the room the new data gets with the next credit)."""
    if path is None or (not when_blocked and view.flow_blocked):
        return None
    if view.reinject_source(path) is None:
        return None
    return Decision(path, reinject=True)


class MinRTTTailReinjection(Scheduler):
    """minRTT; when nothing new can be sent, the minRTT path with room
    re-injects the oldest frame in flight on another path (module
    docstring). Any number of paths. Each frame is copied at most once.

    Args:
        when_blocked: copy also while connection flow control blocks new data
            (XLINK's; False: only once all data has been sent, the tail proper).
    """

    name = "minrtt_xlink"
    reinjects = True
    native_rule = "minrtt_until_tail"  # minRTT decided in the compiled core (envs.rules)

    def __init__(self, when_blocked: bool = True) -> None:
        self.when_blocked = check_flag(when_blocked, "when_blocked")

    def decide(self, view: ConnectionView) -> int | Decision | None:
        c = minrtt_choice(view.paths)
        if c is None or not view.no_new_data:
            return c
        return tail_copy(view, c, self.when_blocked)


class Redundant(Scheduler):
    """Every frame on two paths: the minRTT path with room copies the oldest
    frame another path carries alone, else sends new data (module docstring)."""

    name = "redundant"
    reinjects = True

    def decide(self, view: ConnectionView) -> int | Decision | None:
        c = minrtt_choice(view.paths)
        if c is None:
            return None
        if view.reinject_source(c) is not None:
            return Decision(c, reinject=True)
        return None if view.no_new_data else c


__all__ = ["MinRTTOpportunistic", "MinRTTTailReinjection", "Redundant", "tail_copy"]
