"""The schedulers through which :class:`envs.gym_env.MultipathSchedulingEnv`
hands each decision to the agent: :class:`PacketAgent` (the per-packet and
per-interval rewards: the agent picks a path for the next packet) and
:class:`CompletionAgent` (the completion MDP: path-or-wait actions, credited
with the completion time). Each pauses the emulation at a decision and
resumes it with the agent's action (:mod:`envs.mdp` holds the MDPs)."""

from __future__ import annotations

import math
from collections import deque

from envs.decision_agent import DecisionAgent
from envs.gym_core import CompletionCore
from envs.mdp import (
    COMPLETION_UNIT,
    ack_credit,
)
from envs.scheduler import ConnectionView, Decision, EventClock, Scheduler


class PacketAgent(DecisionAgent, Scheduler):
    """Answers decision requests with the action the environment set; with none
    set it flags the request, stops the simulator and waits."""

    name = "gym-agent"
    #: its None means "stop and ask the agent", not a wait: no idle re-ask
    reask_when_idle = False

    def __init__(self, ack_feedback: bool, per_decision: bool = False):
        DecisionAgent.__init__(self)  # the pending action, consumed by decide(); the request flag
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


class CompletionAgent(CompletionCore, Scheduler):
    """The completion MDP's side of the environment (:mod:`envs.mdp`): at a
    decision request it computes the state and stops the simulator; the
    action then goes through the MDP's decoding (probe, path or wait), and
    the completion credit of every decision is collected per step. Its work
    is :class:`envs.gym_core.CompletionCore`'s, in the compiled core."""

    name = "gym-agent"
    reask_when_idle = False  # a wait is on a full path: its ACK asks again

    def __init__(self, hindsight_rtts: float, reward_unit: str = COMPLETION_UNIT):
        CompletionCore.__init__(self, hindsight_rtts, reward_unit)


__all__ = ["PacketAgent", "CompletionAgent"]
