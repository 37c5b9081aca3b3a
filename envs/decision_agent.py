"""The base of the Gymnasium environment's agents (:mod:`envs.gym_agents`), compiled
with the core below the connection, so that the connection calls an agent's
``decide`` as a C method (:meth:`envs.transport.Connection.try_send`) instead of
looking it up by name at every decision."""

from __future__ import annotations


class DecisionAgent:
    """What the step between two decisions reads and writes of either MDP's
    agent (:func:`envs.gym_core.hand_over`): the pending action and whether the
    agent asked for a decision; subclasses give :meth:`decide`."""

    def __init__(self):
        self.action = None  # the pending action (an int), consumed by decide()
        self.requested = False  # a decision is needed now

    def decide(self, view):
        """The scheduler's decision on connection ``view`` (:class:`envs.scheduler.Scheduler`)."""
        raise NotImplementedError


__all__ = ["DecisionAgent"]
