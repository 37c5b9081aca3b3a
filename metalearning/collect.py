"""Experience of one meta-learning task: an emulated episode acted eps-greedily.

A *task* of the meta-learner (FALCON paper Sec. IV-A) is a scenario
sampled inside a condition cell. Its experience is the transitions of one
emulated bulk download acted by the cell's current meta-model with fixed
epsilon-greedy exploration (eps_l = 0.3 while building meta-models), in the
MDP the network's input width names (:mod:`envs.mdp`): the completion MDP
(path-or-wait actions, the completion-time reward; the bank presets'
default) or the paper's (per-packet credit ``RTT_SCALE_S / (t_ack -
t_decision)``, 0 for a lost packet).

:class:`TaskCollector` is a :class:`~baselines.dqn.policy.DQNScheduler`
trimmed for this: no learner and no replay memory are built (transitions go
to plain lists through :meth:`on_transition`), and one collector serves task
after task in a worker, each with its own weights (a
:class:`~baselines.dqn.network.NumpyQNet`) and exploration stream. The
scheduler's ``record_budget`` records exactly ``decisions`` decisions and
stops the simulator as soon as all their transitions are complete (their
packets' fate is known and the next state was observed).

Defaults of a task (all overridable): the app is a bulk download of
:data:`DEFAULT_TASK_BYTES` (2 MB, the paper's file; about 1 500 packets of
1 350 bytes, more than the default 512 decisions), and the emulated time is
capped at :data:`DEFAULT_TASK_MAX_DURATION_S` (120 s) so that no task runs
for a scenario's longer ``max_duration_s``. The cap costs little CPU time
(a slow lossy task has few events) and a shorter one starves the hardest
cells (measured, 512 decisions, eps 0.3, fresh network: on 81 cells spread
over the grid a 30 s cap left 11 tasks short of the budget, 120 s none; on
the worst cells, loss >= 5 %, RTT >= 200 ms, deviation >= 80 % on both paths,
30 s left 90 % of the tasks short, median 279 transitions, 120 s 10 %,
median 512, for 1.6x their CPU time). When the episode
ends first (download complete or time cap), the collector returns the
transitions it completed, possibly fewer than ``decisions``: decisions whose
packet's fate is still unknown are dropped. ``done = 1`` marks the episode's
last transition only if the download completed and that transition was
complete (the download completes when the receiver holds every byte, often
before the last ACKs return, so most tasks have no ``done``).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np

from baselines.dqn.network import NumpyQNet, QNetSpec, init_params
from baselines.dqn.policy import DQNScheduler
from envs.credit import CompletionCredit
from envs.errors import ConfigError
from envs.mdp import COMPLETION_UNIT, reward_of_inputs
from envs.runner import setup_episode
from envs.scenario import normalise_scenario
from envs.seeds import ChildSeed, generator
from envs.sim import collector_paused
from envs.traces.guard import training_reads

#: bulk download of a task [bytes] (the paper's 2 MB file)
DEFAULT_TASK_BYTES = 2_000_000
#: cap of a task's emulated duration [s]
DEFAULT_TASK_MAX_DURATION_S = 120.0


class Experience(NamedTuple):
    """Transitions of one task, oldest completion first (a plain 5-tuple).

    ``states`` / ``next_states`` ``[N, n_inputs]`` float32, ``actions`` ``[N]``
    int64 (path index), ``rewards`` ``[N]`` float32 (the MDP's reward),
    ``dones`` ``[N]`` float32 (1 at most for the last transition of
    a completed download).
    """

    states: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    next_states: np.ndarray
    dones: np.ndarray

    @property
    def n(self) -> int:
        """The number of transitions."""
        return int(self.actions.shape[0])


def bulk_app(size_bytes: int) -> dict:
    """The app config of a task: a bulk download of ``size_bytes``."""
    if int(size_bytes) < 1:
        raise ConfigError(f"task_size_bytes: must be a positive integer, got {size_bytes!r}")
    return {"kind": "bulk", "size_bytes": int(size_bytes)}


class TaskCollector(DQNScheduler):
    """An eps-greedy DQN scheduler that only records (module docstring).

    Args:
        spec: the Q-network architecture (its ``n_actions`` must match every
            task's number of paths).
        epsilon: exploration probability.
        reward_unit: unit of the completion reward (:data:`envs.mdp.COMPLETION_UNITS`).
    """

    name = "reptile-collector"
    #: on the completion MDP the credit keeps the transitions (its transition log: no
    #: tuple nor on_transition call per transition) with their states' row numbers in
    #: its state log, gathered in one copy at the end of the task
    credit_states = "log"
    credit_log_transitions = True

    def __init__(self, spec: QNetSpec, epsilon: float = 0.3, reward_unit: str = COMPLETION_UNIT):
        reward = reward_of_inputs(spec.n_inputs, spec.n_actions)
        if reward is None:
            raise ConfigError(
                f"{self.name}: a network of {spec.n_inputs} inputs for {spec.n_actions} paths "
                "matches no MDP of envs/mdp.py"
            )
        super().__init__(
            hidden=spec.hidden,
            epsilon=epsilon,
            seed=0,
            reward=reward,
            replay_capacity=1,
            reward_unit=reward_unit,
        )
        self.spec = spec
        self.recording = True
        self._buf: list[list] = [[], [], [], [], []]
        #: facts about the last collected episode (see :meth:`collect`)
        self.last_info: dict[str, float] = {}

    def build(self, n_paths: int) -> None:  # never builds a learner
        if n_paths != self.spec.n_actions:
            raise ConfigError(
                f"{self.name}: the network has {self.spec.n_actions} actions, "
                f"the task has {n_paths} paths"
            )

    def deploy(self) -> None:
        pass

    def set_weights(self, weights: Sequence[np.ndarray] | None, init_seed: int = 0) -> None:
        """Act with ``weights`` (``[W0, b0, ...]``); None: a fresh
        :func:`~baselines.dqn.network.init_params` network of ``init_seed``."""
        if weights is None:
            weights = [p[0].numpy() for p in init_params(self.spec, 1, init_seed)]
        expected = [s for i, o in self.spec.layer_sizes for s in ((i, o), (o,))]
        if len(weights) != len(expected) or any(
            tuple(np.shape(w)) != s for w, s in zip(weights, expected)
        ):
            raise ConfigError(
                f"{self.name}: weights of shapes {[tuple(np.shape(w)) for w in weights]} "
                f"do not match the network {expected}"
            )
        self.qnet = NumpyQNet(weights, self.spec)

    def on_transition(self, state, action, reward, next_state, done, time) -> None:
        b = self._buf
        b[0].append(state)
        b[1].append(action)
        b[2].append(reward)
        b[3].append(next_state)
        b[4].append(done)

    def collect(
        self,
        scenario: Mapping,
        weights: Sequence[np.ndarray] | None,
        seed: int,
        decisions: int,
        app: Mapping | None = None,
        max_duration_s: float | None = DEFAULT_TASK_MAX_DURATION_S,
        normalised: bool = False,
    ) -> Experience:
        """One episode of ``app`` (default: a :data:`DEFAULT_TASK_BYTES` bulk
        download) on ``scenario``; at most ``decisions`` transitions.

        ``seed`` seeds the emulation (``seed``) and the exploration draws
        (``SeedSequence((seed, 1))``). ``max_duration_s`` caps the
        scenario's emulated duration (None: the scenario's own). Sets
        :attr:`last_info`: ``transitions``, ``decisions`` (all decisions
        taken, also after the budget), ``emulated_s``, ``completed`` (1.0 if
        the download finished), ``cpu_s`` (process CPU time of the episode).
        A scenario naming a test trace file of ``data/traces/split.yaml`` is
        refused (:func:`envs.traces.guard.training_reads`). ``normalised``:
        ``scenario`` is already :func:`~envs.scenario.normalise_scenario`'s
        output (as :meth:`metalearning.grid.ConditionGrid.sample_task` returns
        it), so it is copied, not normalised again (about 40 µs a task); the
        caller's dict is not modified.
        """
        if int(decisions) < 1:
            raise ConfigError(f"decisions_per_task: must be a positive integer, got {decisions!r}")
        # a task's network is met once: nothing kept; a normalised one copied (max_duration_s)
        s = dict(scenario) if normalised else normalise_scenario(scenario, keep=False)
        if max_duration_s is not None:
            if not float(max_duration_s) > 0:
                raise ConfigError(f"task_max_duration_s: must be positive, got {max_duration_s!r}")
            s["max_duration_s"] = min(float(s["max_duration_s"]), float(max_duration_s))
        if len(s["paths"]) != self.spec.n_actions:
            raise ConfigError(
                f"{self.name}: the network has {self.spec.n_actions} actions, the task has "
                f"{len(s['paths'])} paths"
            )
        self.set_weights(weights, init_seed=int(seed))
        self.rng = generator(ChildSeed((int(seed), 1)))  # default_rng(SeedSequence((seed, 1)))
        self._buf = [[], [], [], [], []]
        d0 = self.decisions
        cpu0 = time.process_time()
        self.record_budget = int(decisions)
        with (
            collector_paused(),
            training_reads(f"collecting experience ({self.name})"),
        ):  # no test trace file
            try:
                emu, _conn, application, s = setup_episode(
                    s, app or bulk_app(DEFAULT_TASK_BYTES), self, int(seed), normalised=True
                )
                end = emu.sim.run(s["max_duration_s"])
            finally:
                self.record_budget = None
            self.end_episode(application.done)
            self._view = None
            credit = self._credit  # (None on another MDP: its transitions are in _buf)
            exp = _logged_experience(credit) if credit is not None else None
            completed = float(bool(application.done))
            emu.close()
            del emu, _conn, application, credit  # freed before the pause ends
        b = self._buf
        self._buf = [[], [], [], [], []]
        if exp is None:
            k = self.spec.n_inputs
            exp = Experience(
                _stacked(b[0], k),
                _numbers(b[1], np.int64),
                _numbers(b[2], np.float32),
                _stacked(b[3], k),
                _numbers(b[4], np.float32),
            )
        n = exp.n
        self.last_info = {
            "transitions": float(n),
            "decisions": float(self.decisions - d0),
            "emulated_s": float(end),
            "completed": completed,
            "cpu_s": time.process_time() - cpu0,
        }
        return exp


def _numbers(values: list, dtype) -> np.ndarray:
    """``values`` (Python numbers) as a NumPy array of ``dtype``: ``np.fromiter`` takes
    them one by one, where ``np.asarray`` of a list inspects every element for its
    type and shape first."""
    return np.fromiter(values, dtype, len(values))


def _stacked(states: list, k: int) -> np.ndarray:
    """The ``states`` (sequences of ``k`` floats) as one float32 ``[len(states), k]`` array."""
    if not states:
        return np.empty((0, k), np.float32)
    return np.concatenate(states, dtype=np.float32).reshape(len(states), k)


def _logged_experience(credit: CompletionCredit) -> Experience:
    """The completion credit's transition log as an :class:`Experience`: the states
    are rows of its state log, gathered in one copy (a row object per state, then a
    copy of each, cost a sixth of a task's collection)."""
    log = credit.transition_log()
    states = credit.state_log()
    return Experience(
        states[log["states"]],
        log["actions"],
        log["rewards"].astype(np.float32),
        states[log["next_states"]],
        log["dones"].astype(np.float32),
    )


def collect_task_experience(
    scenario: Mapping,
    weights: Sequence[np.ndarray] | None,
    spec: QNetSpec,
    epsilon: float,
    seed: int,
    decisions: int,
    app: Mapping | None = None,
    max_duration_s: float | None = DEFAULT_TASK_MAX_DURATION_S,
    reward_unit: str = COMPLETION_UNIT,
) -> Experience:
    """The experience of one task (module docstring): a one-off
    :meth:`TaskCollector.collect` (``weights`` None: a fresh network seeded
    by ``seed``). Loops over many tasks should reuse one :class:`TaskCollector`."""
    return TaskCollector(spec, epsilon, reward_unit).collect(
        scenario, weights, seed, decisions, app, max_duration_s
    )


__all__ = [
    "Experience",
    "TaskCollector",
    "collect_task_experience",
    "bulk_app",
    "DEFAULT_TASK_BYTES",
    "DEFAULT_TASK_MAX_DURATION_S",
]
