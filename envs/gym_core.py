"""The completion MDP's side of the Gymnasium environment, compiled with the core.

:class:`CompletionCore` is the data and the per-decision work of
:class:`envs.gym_agents.CompletionAgent` (which adds the scheduler's class
attributes); :func:`hand_over` is the part of
:meth:`envs.gym_env.MultipathSchedulingEnv.step` between two decisions (of
either MDP): the action handed to the connection, the emulation run to the
next decision request. Both run on every decision of the environment
(and of its vector form), so they are in the compiled core: a decision then
costs no Python frame of its own. The ``.py`` build is the reference, and
both give the same episodes (``tests/test_gym_env.py``, ``tests/test_vector_env.py``).
"""

from __future__ import annotations

import math
from collections import deque

from envs.credit import CompletionCredit


class CompletionCore:
    """At a decision request it computes the state and stops the simulator;
    the action then goes through the MDP's decoding (probe, path or wait),
    and the completion credit of every decision is collected per step."""

    def __init__(self, hindsight_rtts: float, reward_unit: str):
        self.hindsight_rtts = hindsight_rtts
        self.reward_unit = reward_unit
        self.action = None  # the pending action (an int), consumed by decide()
        self.requested = False  # a decision is needed now
        self.sim = None
        self.state: list | object = []
        self.credits: list[float] = []  # per step (decision), NaN while unknown
        self.step_credit = 0.0
        self._credit: CompletionCredit | None = None
        self._steps: deque = deque()  # step index of each open record

    def reset(self, view) -> None:
        self.sim = view.sim
        self.action = None
        self.requested = False
        self.credits = []
        self.step_credit = 0.0
        self._credit = CompletionCredit(len(view.paths), self.hindsight_rtts, unit=self.reward_unit)
        self._steps = deque()

    def decide(self, view):
        a = self.action
        credit = self._credit
        now = self.sim.now
        if a is None:
            self.state = credit.observe(view, now)
            self._take(credit.ready(view, now))
            self.requested = True
            self.sim.stop()
            return None
        self.action = None
        _, d = credit.act(view, self.state, a, now)
        self._steps.append(len(self.credits))
        self.credits.append(math.nan)
        return d

    def _take(self, transitions) -> None:
        for t in transitions:
            i = self._steps.popleft()
            c = t[2]
            self.credits[i] = c
            self.step_credit += c

    def close_episode(self, view, now: float, done: bool) -> float:
        """Close every open decision; returns the credits that became known."""
        before = self.step_credit
        if self._credit is None:
            raise RuntimeError("close_episode before reset: no episode to close")
        self._take(self._credit.finish(view, now, done))
        self.credits = [0.0 if c != c else c for c in self.credits]
        return self.step_credit - before


def hand_over(agent, conn, app, sim, action: int, until: float) -> None:
    """One step of either MDP between two decisions: ``action`` to the decision
    ``agent`` asked for (if it asked), then the emulation run until its next
    request, the app's end, the time limit ``until`` [s] or the last event."""
    if agent.requested:
        agent.requested = False
        agent.action = action
        # a request inside try_send stops the simulator again; until then
        # a wait is a wait (Connection.try_send arms the pacer's wake-up)
        sim.stopped = False
        conn.try_send()  # consumes the action; may ask for the next one
        # defensive: if the state changed so that no packet was sent, the
        # action is dropped rather than applied to a later state
        agent.action = None
    advance(agent, app, sim, until)


def advance(agent, app, sim, until: float) -> None:
    """Run the emulator until ``agent`` requests a decision, the app completes,
    the time limit ``until`` [s] passes or no event is left."""
    while not agent.requested and not app.done:
        if sim.now >= until or not sim.pending:
            return
        sim.run(until)  # Simulator.run clears `stopped` first: never call it
        # with a request pending (handled by the loop condition)


__all__ = ["CompletionCore", "hand_over", "advance"]
