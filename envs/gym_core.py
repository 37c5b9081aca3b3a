"""The completion MDP's side of the Gymnasium environment, compiled with the core.

:class:`CompletionCore` is the data and the per-decision work of
:class:`envs.gym_agents.CompletionAgent` (which adds the scheduler's class
attributes), a :class:`envs.decision_agent.DecisionAgent`; :func:`hand_over` is the part of
:meth:`envs.gym_env.MultipathSchedulingEnv.step` between two decisions (of
either MDP): the action handed to the connection, the emulation run to the
next decision request. :class:`EpisodeRun` holds one episode's agent,
connection and simulator and takes the completion MDP's step through
them; :func:`step_runs` steps a batch of episodes in one call (the vector
environment's step). All run on every decision of the environment (and of its
vector form), so they are in the compiled core: a decision then costs no
Python frame of its own. The ``.py`` build is the reference, and both give
the same episodes (``tests/test_gym_env.py``, ``tests/test_vector_env.py``).
"""

from __future__ import annotations

import math

from envs.credit import CompletionCredit
from envs.decision_agent import DecisionAgent

#: a decision's credit while it is unknown (one NaN object, not a module lookup per decision)
_UNKNOWN = math.nan


class CompletionCore(DecisionAgent):
    """At a decision request it computes the state and stops the simulator;
    the action then goes through the MDP's decoding (probe, path or wait),
    and the completion credit of every decision is collected per step."""

    def __init__(self, hindsight_rtts: float, reward_unit: str):
        self.hindsight_rtts = hindsight_rtts
        self.reward_unit = reward_unit
        DecisionAgent.__init__(self)
        self.sim = None
        self.state: list | object = []
        self.credits: list[float] = []  # per step (decision), NaN while unknown
        self.step_credit = 0.0
        self._credit: CompletionCredit | None = None
        # the step (index of credits) the next closed transition rewards: the records
        # close in the order they were opened, one per step
        self._credited = 0

    def reset(self, view) -> None:
        self.sim = view.sim
        self.action = None
        self.requested = False
        self.credits = []
        self.step_credit = 0.0
        # only the rewards come out of the credit: the observation is read with state_into
        self._credit = CompletionCredit(
            len(view.paths), self.hindsight_rtts, unit=self.reward_unit, states=False
        )
        self._credited = 0

    def decide(self, view):
        a = self.action
        credit = self._credit
        now = self.sim.now
        if a is None:
            self.state = credit.observe(view, now)
            first = self._credited
            k = credit.ready_rewards(view, now, self.credits, first)
            for i in range(first, first + k):
                self.step_credit += self.credits[i]
            self._credited = first + k
            self.requested = True
            self.sim.stop()
            return None
        self.action = None
        d = credit.act(view, self.state, a, now)
        self.credits.append(_UNKNOWN)
        return d

    def _take(self, transitions) -> None:
        for t in transitions:
            c = t[2]
            self.credits[self._credited] = c
            self._credited += 1
            self.step_credit += c

    def close_episode(self, view, now: float, done: bool) -> float:
        """Close every open decision; returns the credits that became known."""
        before = self.step_credit
        if self._credit is None:
            raise RuntimeError("close_episode before reset: no episode to close")
        self._take(self._credit.finish(view, now, done))
        self.credits = [0.0 if c != c else c for c in self.credits]
        return self.step_credit - before


#: outcomes of :meth:`EpisodeRun.step` (and :meth:`EpisodeRun.count`)
RUNNING = 0
TERMINATED = 1
TRUNCATED = 2


class EpisodeRun:
    """One episode of the environment, as the step between two decisions needs it:
    the agent, connection and simulator, the time limit ``until`` [s], the
    decision limit ``max_steps`` (-1: none) and the decisions taken (``steps``).
    :class:`envs.gym_env.MultipathSchedulingEnv` makes one at every reset; the
    vector environment steps a batch of them in one call (:func:`step_runs`)."""

    def __init__(self, agent, conn, sim, until: float, max_steps: int):
        self.agent = agent
        # the completion agent step() works through, found once (None: another MDP's)
        self._core = agent if isinstance(agent, CompletionCore) else None
        self.conn = conn
        self.sim = sim
        self.until = until
        self.max_steps = max_steps
        self.steps = 0
        self.reward = 0.0  # the completion MDP's reward of the latest step

    def step(self, action: int) -> int:
        """One decision of the completion MDP (the agent is a
        :class:`CompletionCore`): ``action`` handed over, the emulation run to
        the next request; its reward in ``reward``. Returns the outcome."""
        agent = self._core
        if agent is None:
            raise TypeError("EpisodeRun.step: the agent is not the completion MDP's")
        agent.step_credit = 0.0
        hand_over(agent, self.conn, self.sim, action, self.until)
        self.reward = agent.step_credit
        return self.count(agent.requested)

    def count(self, requested: bool) -> int:
        """Count the decision just taken (``requested``: the agent asks for the
        next one); returns :data:`TERMINATED` when the app completed,
        :data:`TRUNCATED` when the emulation stopped without a request (time
        limit, no event left) or ``max_steps`` is reached, else :data:`RUNNING`."""
        self.steps += 1
        if self.conn.finished:  # the app completed (App._finish)
            return TERMINATED
        if not requested or 0 <= self.max_steps <= self.steps:
            return TRUNCATED
        return RUNNING


def first_bad_action(actions, n: int) -> int:
    """The index of the first of ``actions`` (int64) outside ``[0, n)``, or -1."""
    for i in range(len(actions)):
        if not 0 <= actions[i] < n:
            return i
    return -1


def step_runs(runs: list, actions, obs, rewards, outcomes) -> int:
    """One completion-MDP decision of every run of ``runs`` that is not None:
    run ``i`` takes ``actions[i]`` (int64) and writes its reward into
    ``rewards[i]`` (float64), its outcome into ``outcomes[i]`` (int8) and, while
    it runs on, its next state into row ``i`` of ``obs`` (float32). Returns how
    many runs ended. The vector environment's step, without a Python frame per
    instance."""
    ended = 0
    for i in range(len(runs)):
        run = runs[i]
        if run is None:
            continue
        outcome = run.step(int(actions[i]))  # (a Python int in the .py core too)
        rewards[i] = run.reward
        outcomes[i] = outcome
        if outcome == RUNNING:
            agent = run._core
            agent._credit.state_into(obs[i])
        else:
            ended += 1
    return ended


def hand_over(agent, conn, sim, action: int, until: float) -> None:
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
    advance(agent, conn, sim, until)


def advance(agent, conn, sim, until: float) -> None:
    """Run the emulator until ``agent`` requests a decision, the app completes
    (connection ``conn`` is ``finished``: :meth:`envs.apps.base.App._finish`),
    the time limit ``until`` [s] passes or no event is left."""
    while not agent.requested and not conn.finished:
        if sim.now >= until or not sim.queued():
            return
        sim.run(until)  # Simulator.run clears `stopped` first: never call it
        # with a request pending (handled by the loop condition)


__all__ = [
    "CompletionCore",
    "EpisodeRun",
    "step_runs",
    "first_bad_action",
    "hand_over",
    "advance",
    "RUNNING",
    "TERMINATED",
    "TRUNCATED",
]
