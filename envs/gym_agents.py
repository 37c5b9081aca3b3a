"""The schedulers through which :class:`envs.gym_env.MultipathSchedulingEnv`
hands each decision to the agent: :class:`PacketAgent` (the per-packet and
per-interval rewards: the agent picks a path for the next packet) and
:class:`CompletionAgent` (the completion MDP: path-or-wait actions, credited
with the completion time). Each pauses the emulation at a decision and
resumes it with the agent's action (:mod:`envs.mdp` holds the MDPs)."""

from __future__ import annotations

import math
from collections import deque

from envs.credit import CompletionCredit
from envs.mdp import (
    COMPLETION_UNIT,
    ack_credit,
)
from envs.scheduler import ConnectionView, Decision, EventClock, Scheduler


class PacketAgent(Scheduler):
    """Answers decision requests with the action the environment set; with none
    set it flags the request, stops the simulator and waits."""

    name = "gym-agent"
    #: its None means "stop and ask the agent", not a wait: no idle re-ask
    reask_when_idle = False

    def __init__(self, ack_feedback: bool, per_decision: bool = False):
        self.action: int | None = None  # pending action, consumed by decide()
        self.requested = False  # a decision is needed now
        # read by the Connection at construction: per-packet ACK callbacks
        # only for the ack_rate and packet_rate rewards
        self.wants_packet_feedback = ack_feedback or per_decision
        self.per_decision = per_decision
        self.sim: EventClock | None = None
        self.ack_credit = 0.0
        self.ack_count = 0
        # packet_rate: the current step's index, per step its credit (NaN while
        # unknown) and decision time, per path the steps awaiting their packet's fate
        self.step_index = 0
        self.credits: list[float] = []
        self.decided_at: list[float] = []
        self.pending: list[deque] = []
        self.step_credit = 0.0

    def reset(self, view: ConnectionView) -> None:
        self.sim = view.sim
        self.action = None
        self.requested = False
        self.ack_credit = 0.0
        self.ack_count = 0
        self.step_index = 0
        self.credits = []
        self.decided_at = []
        self.pending = [deque() for _ in view.paths]
        self.step_credit = 0.0

    def decide(self, view: ConnectionView) -> int | Decision | None:
        a = self.action
        if a is not None:
            self.action = None
            if self.per_decision:
                i = self.step_index
                self.decided_at[i] = self.sim.now
                self.pending[a].append(i)
            return a
        self.requested = True
        self.sim.stop()
        return None

    def on_packet_acked(self, view: ConnectionView, path: int, size: int, sent_time: float) -> None:
        if self.per_decision:
            self._resolve(path, True)
            return
        self.ack_credit += ack_credit(self.sim.now, sent_time)
        self.ack_count += 1

    def on_packet_lost(self, view: ConnectionView, path: int, size: int, sent_time: float) -> None:
        if self.per_decision:
            self._resolve(path, False)

    def _resolve(self, path: int, acked: bool) -> None:
        # first in, first out per path, as the adapter (baselines.dqn.policy):
        # a PTO probe or a reordered loss shifts the credit by one packet
        dq = self.pending[path]
        if not dq:
            return  # a packet no decision sent (PTO probe)
        i = dq.popleft()
        c = ack_credit(self.sim.now, self.decided_at[i]) if acked else 0.0
        self.credits[i] = c
        self.step_credit += c

    def begin_step(self) -> None:
        """packet_rate: a new step (its credit is unknown until its packet's fate is)."""
        self.step_index = len(self.credits)
        self.credits.append(math.nan)
        self.decided_at.append(math.nan)
        self.step_credit = 0.0

    def close_episode(self, now: float) -> float:
        """packet_rate: give the decisions still unresolved the credit of an
        ACK at ``now`` (steps that sent nothing: 0); returns their sum."""
        extra = 0.0
        for i, c in enumerate(self.credits):
            if c != c:  # NaN: unresolved
                t = self.decided_at[i]
                c = 0.0 if t != t else ack_credit(now, t)
                self.credits[i] = c
                extra += c
        for dq in self.pending:
            dq.clear()
        return extra


class CompletionAgent(Scheduler):
    """The completion MDP's side of the environment (:mod:`envs.mdp`): at a
    decision request it computes the state and stops the simulator; the
    action then goes through the MDP's decoding (probe, path or wait), and
    the completion credit of every decision is collected per step."""

    name = "gym-agent"
    reask_when_idle = False  # a wait is on a full path: its ACK asks again

    def __init__(self, hindsight_rtts: float, reward_unit: str = COMPLETION_UNIT):
        self.hindsight_rtts = hindsight_rtts
        self.reward_unit = reward_unit
        self.action: int | None = None
        self.requested = False
        self.sim: EventClock | None = None
        self.state: list[float] = []
        self.credits: list[float] = []  # per step (decision), NaN while unknown
        self.step_credit = 0.0
        self._credit: CompletionCredit | None = None
        self._steps: deque = deque()  # step index of each open record

    def reset(self, view: ConnectionView) -> None:
        self.sim = view.sim
        self.action = None
        self.requested = False
        self.credits = []
        self.step_credit = 0.0
        self._credit = CompletionCredit(len(view.paths), self.hindsight_rtts, unit=self.reward_unit)
        self._steps = deque()

    def decide(self, view: ConnectionView) -> int | Decision | None:
        a = self.action
        now = self.sim.now
        if a is None:
            self.state = self._credit.observe(view, now)
            self._take(self._credit.ready(view, now))
            self.requested = True
            self.sim.stop()
            return None
        self.action = None
        _, d = self._credit.act(view, self.state, a, now)
        self._steps.append(len(self.credits))
        self.credits.append(math.nan)
        return d

    def _take(self, transitions) -> None:
        for t in transitions:
            i = self._steps.popleft()
            self.credits[i] = t[2]
            self.step_credit += t[2]

    def close_episode(self, view: ConnectionView, now: float, done: bool) -> float:
        """Close every open decision; returns the credits that became known."""
        before = self.step_credit
        self._take(self._credit.finish(view, now, done))
        self.credits = [0.0 if c != c else c for c in self.credits]
        return self.step_credit - before


__all__ = ["PacketAgent", "CompletionAgent"]
