"""The scheduler adapter: a Q-network plugged into the emulator's scheduler hook.

:class:`DQNScheduler` is an :class:`envs.scheduler.Scheduler`. At every
decision request it computes the state of its MDP (:mod:`envs.mdp`: the
completion MDP by default, or the paper's), evaluates the deployed
Q-network (:class:`~baselines.dqn.network.NumpyQNet`) and acts on the path
of the highest Q-value, or a uniformly random one with probability
``epsilon`` (fixed epsilon-greedy, :class:`envs.explore.EpsilonDraws`).

When it learns or logs (:attr:`DQNScheduler.recording`), it also closes
transitions, with the MDP's rewards as :mod:`envs.mdp` defines them (the
environment's definitions, so an agent trained here and one trained through
``MultipathSchedulingEnv`` see the same MDP); :meth:`DQNScheduler.end_episode`
closes the last (``done`` when the application completed).

Reward ``"packet_rate"`` (the paper MDP's) is the per-packet
credit of FALCON's MDP attributed to the decision that sent the packet:
the throughput obtained upon the selection, ``RTT_SCALE_S / (t_ack -
t_decision)`` (:func:`envs.gym_env.ack_credit`, the unit of the
environment's ``"ack_rate"``) when the packet the decision sent is
acknowledged, 0 when it is declared lost. Time spent waiting for a congested
path's window counts, so the credit reflects congestion as well as RTT. The
transition of decision ``i`` is complete when its packet's fate is known and
decision ``i + 1`` has observed the next state. A path's pending decisions
are matched to its ACK/loss callbacks in sending order (first in, first
out); a PTO probe (sent without a decision) or a loss detected after later
ACKs shifts the credit by one neighbouring packet, which is rare and
harmless. The environment's step rewards (``"goodput"``, ``"goodput_rate"``)
give a decision the goodput of the interval up to the next decision, which
is 0 for every decision answered at the same instant as its successor and
positive for one that blocks on a congested path, so with per-decision
discounting a DQN learns to block on the slow path (measured: see
``docs/reference/formats/model_formats.md``, "Reward").

Subclasses: :class:`~baselines.dqn.dqn_on.DQNOn` (learns online, with the
asynchronous trainer) and :class:`~baselines.dqn.dqn_off.DQNOff` (trained
offline, greedy, never adapts).
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from baselines.dqn.fields import DecisionFieldAttributes
from baselines.dqn.learner import TECHNIQUES, BatchedDQN, DQNConfig
from baselines.dqn.network import NumpyQNet, QNetSpec
from baselines.dqn.replay import ReplayMemory
from envs.credit import CompletionCredit
from envs.errors import ConfigError
from envs.mdp import (
    ALL_REWARDS,
    COMPLETION,
    COMPLETION_UNIT,
    HINDSIGHT_RTTS,
    PACKET_RATE,
    ack_credit,
    check_reward_unit,
    completion_features_into,
    feature_names,
    n_inputs,
    observe_into,
    probe_path,
    reward_of_inputs,
    step_reward,
)
from envs.rules import DQNFields
from envs.runner import closing_metrics, setup_episode
from envs.scheduler import ConnectionView, Decision, Scheduler
from envs.sim import collector_paused

MODEL_FILE = "model.h5"
CONFIG_FILE = "agent.json"
#: reward kinds of the adapter: every reward of :mod:`envs.mdp`
ADAPTER_REWARDS = ALL_REWARDS
#: pending per-path decisions kept for the packet_rate reward (older ones are dropped)
MAX_PENDING = 100_000
#: the completion-MDP decision's methods: a subclass that keeps all of them has its
#: decisions taken in the compiled core (envs.rules.completion_decision)
NATIVE_HOOKS = ("_decide_completion", "_completion_action", "_choose")


def _hidden(hidden) -> tuple[int, ...]:
    if isinstance(hidden, int):
        hidden = (hidden,) * 3
    try:
        out = tuple(int(h) for h in hidden)
    except (TypeError, ValueError):
        raise ConfigError(f"hidden: expected a list of layer widths, got {hidden!r}") from None
    if not out:
        raise ConfigError("hidden: at least one hidden layer is needed")
    return out


class DQNScheduler(DecisionFieldAttributes, Scheduler):
    """A DQN-driven scheduler (module docstring); the base of DQN-On and DQN-Off.

    Args:
        hidden: hidden-layer widths (an int ``w`` means three layers of ``w``).
        epsilon: exploration probability of the fixed epsilon-greedy policy.
        seed: seeds the network initialisation, the replay sampling and the
            exploration draws.
        reward: the reward kind, which names the MDP (:mod:`envs.mdp`): one of
            the paper MDP's (``"packet_rate"``, ``"goodput"``,
            ``"goodput_rate"``, ``"ack_rate"``) or ``"completion"`` (the default:
            path-or-wait actions, completion-time reward, its own state).
        hindsight_rtts: completion reward: path estimates taken this many
            smoothed RTTs (of the slowest path) after a decision.
        reward_unit: completion reward: ``"packet"`` (the default: the time
            one packet takes at the aggregate estimated rate) or ``"time"``
            (10 ms), :data:`envs.mdp.COMPLETION_UNITS`.
        gamma, lr, batch_size, tau, loss, huber_delta, double_q, grad_clip, cql_alpha:
            :class:`~baselines.dqn.learner.DQNConfig`.
        replay_capacity: transitions kept in the replay memory.
        technique: batched-gradient implementation (``bmm``, ``autograd``, ``vmap``).
        model: path of a saved model (HDF5 file or a directory with
            ``model.h5``) to start from instead of a fresh network.
    """

    name = "dqn"
    #: the completion credit's ``states`` (envs.credit.CompletionCredit): the transitions
    #: carry float32 rows (True), or their row numbers in the credit's state log ("log")
    credit_states: bool | str = True
    #: the completion credit keeps the closed transitions in its transition log
    #: (CompletionCredit.transition_log, with credit_states "log") instead of handing
    #: each to on_transition
    credit_log_transitions = False
    #: on the completion MDP, the compiled core takes the decisions that _decide_completion
    #: would (envs.rules.completion_decision) while _native_completion says it may
    native_rule = "completion_dqn"

    def __init__(
        self,
        hidden=(64, 64, 64),
        epsilon: float = 0.1,
        seed: int = 0,
        reward: str = COMPLETION,
        gamma: float = DQNConfig.gamma,
        lr: float = DQNConfig.lr,
        batch_size: int = DQNConfig.batch_size,
        tau: float = DQNConfig.tau,
        loss: str = DQNConfig.loss,
        huber_delta: float = DQNConfig.huber_delta,
        double_q: bool = DQNConfig.double_q,
        grad_clip: float | None = DQNConfig.grad_clip,
        replay_capacity: int = 50_000,
        technique: str = "bmm",
        model: str | None = None,
        hindsight_rtts: float = HINDSIGHT_RTTS,
        cql_alpha: float = DQNConfig.cql_alpha,
        reward_unit: str = COMPLETION_UNIT,
    ):
        if reward not in ADAPTER_REWARDS:
            raise ConfigError(
                f"reward: unknown reward {reward!r}; choose one of {list(ADAPTER_REWARDS)}"
            )
        epsilon = float(epsilon)
        if not 0.0 <= epsilon <= 1.0:
            raise ConfigError(f"epsilon: must be in [0, 1], got {epsilon}")
        if int(replay_capacity) < 1:
            raise ConfigError(
                f"replay_capacity: must be a positive integer, got {replay_capacity!r}"
            )
        if technique not in TECHNIQUES:
            raise ConfigError(f"technique: unknown {technique!r}; known: {list(TECHNIQUES)}")
        # epsilon, recording, decisions, ...: the fields of baselines.dqn.fields
        self._fields = DQNFields()
        self.hidden = _hidden(hidden)
        self.epsilon = epsilon
        self.seed = int(seed)
        self.reward_kind = reward
        self.learner_config = DQNConfig(
            lr=float(lr),
            batch_size=int(batch_size),
            gamma=float(gamma),
            tau=float(tau),
            loss=loss,
            huber_delta=float(huber_delta),
            double_q=bool(double_q),
            grad_clip=None if grad_clip is None else float(grad_clip),
            cql_alpha=float(cql_alpha),
        )
        self.replay_capacity = int(replay_capacity)
        self.technique = technique
        self.spec: QNetSpec | None = None
        self.learner: BatchedDQN | None = None
        self.replay: ReplayMemory | None = None
        self.qnet = None
        self.rng = np.random.default_rng(self.seed)
        self._per_packet = reward == PACKET_RATE
        self._completion = reward == COMPLETION
        if not float(hindsight_rtts) >= 0.0:
            raise ConfigError(f"hindsight_rtts: must be >= 0, got {hindsight_rtts!r}")
        self.hindsight_rtts = float(hindsight_rtts)
        self.reward_unit = check_reward_unit(reward_unit)
        self._credit = None
        self._pending: list[deque] = []  # per path: decisions waiting for their packet's fate
        self._last_rec: list | None = None
        self._native_completion = False
        self.recording = False
        #: optional experience recorder (baselines.dqn.experience.ExperienceRecorder)
        self.recorder = None
        self.behaviour = None
        self.decisions = 0
        self.record_budget = None
        self._view: ConnectionView | None = None
        self._vals: list[float] = []
        self._prev_state = None
        self._prev_action = 0
        self._t_prev = 0.0
        self._delivered_prev = 0
        self._ack_credit = 0.0
        self._ack_count = 0
        if model is not None:
            self.load(model)

    @property  # the connection reads it once per episode, nobody assigns it: hence the ignore
    def wants_packet_feedback(self) -> bool:  # type: ignore[override]
        """Per-packet ACK/loss callbacks: only when rewards are computed from them."""
        return self.recording and self.reward_kind in ("ack_rate", PACKET_RATE)

    # ---------------------------------------------------------- model
    def build(self, n_paths: int) -> None:
        """Create the network, learner and replay memory for ``n_paths`` paths."""
        self.spec = QNetSpec(n_inputs(n_paths, self.reward_kind), n_paths, self.hidden)
        self.learner = BatchedDQN(
            self.spec, 1, self.learner_config, seed=self.seed, technique=self.technique
        )
        self.replay = ReplayMemory(self.replay_capacity, self.spec.n_inputs, 1, seed=self.seed + 1)
        self.deploy()

    def deploy(self) -> None:
        """Copy the learner's current weights to the acting network."""
        learner = self.learner
        self.qnet = NumpyQNet(learner.split_flat(learner.flat_weights(0)), self.spec)

    @property
    def n_paths(self) -> int | None:
        return None if self.spec is None else self.spec.n_actions

    def q_values(self, states) -> np.ndarray:
        """Q-values of the deployed network for states ``[B, n_inputs]`` (or one state)."""
        if self.qnet is None:
            raise ConfigError(
                f"{self.name}: the model is not built yet (no episode or fit has run)"
            )
        return self.qnet(np.asarray(states, dtype=np.float32))

    # ---------------------------------------------------------- scheduling
    def reset(self, view: ConnectionView) -> None:
        n = len(view.paths)
        if self.spec is None:
            self.build(n)
        elif self.spec.n_actions != n:
            raise ConfigError(
                f"{self.name}: the model was built for {self.spec.n_actions} paths, "
                f"the scenario has {n}"
            )
        self._view = view
        if self.behaviour is not None:
            self.behaviour.reset(view)
        self._vals = [0.0] * (4 * n)
        # the default state writer goes to the credit as is: no Python frame per state
        features = (
            None
            if type(self)._completion_features is DQNScheduler._completion_features
            else self._completion_features
        )
        logs = (self.credit_states, self.credit_log_transitions)
        self._credit = (
            CompletionCredit(n, self.hindsight_rtts, features, self.reward_unit, *logs)
            if self._completion
            else None
        )
        self._native_completion = self._completion and all(
            getattr(type(self), hook) is getattr(DQNScheduler, hook) for hook in NATIVE_HOOKS
        )
        self._prev_state = None
        self._t_prev = view.now
        self._delivered_prev = view.delivered
        self._ack_credit = 0.0
        self._ack_count = 0
        self._pending = [deque() for _ in range(n)]
        self._last_rec = None

    def decide(self, view: ConnectionView) -> int | Decision | None:
        if self._completion:
            return self._decide_completion(view)
        vals = observe_into(view, self._vals)
        state = np.array(vals, dtype=np.float32)
        if self._per_packet:
            if self.recording:
                return self._decide_per_packet(view, state)
        elif self.recording:
            now = view.sim.now
            if self._prev_state is not None:
                r = step_reward(
                    self.reward_kind,
                    view.delivered - self._delivered_prev,
                    now - self._t_prev,
                    view.payload,
                    self._ack_credit,
                    self._ack_count,
                )
                self.on_transition(
                    self._prev_state, self._prev_action, r, state, False, self._t_prev
                )
            budget = self.record_budget
            if budget is not None:
                if budget <= 0:
                    self._prev_state = None
                    view.sim.stop()
                    return self._choose(state)
                self.record_budget = budget - 1
            self._t_prev = now
            self._delivered_prev = view.delivered
            self._ack_credit = 0.0
            self._ack_count = 0
        a = self._choose(state)
        self._prev_state = state
        self._prev_action = a
        self.decisions += 1
        return a

    def _decide_completion(self, view: ConnectionView):
        """Completion MDP: act on its state; a full path means wait."""
        now = view.sim.now
        credit = self._credit
        record = self.recording
        budget = self.record_budget
        if record and budget is not None and budget <= 0:
            record = False
            if credit.has_open_decision:  # close the budget's last decision now
                for t in credit.finish(view, now, False):
                    self.on_transition(*t)
                view.sim.stop()
        state = credit.observe(view, now, record)  # a float32 row
        if record:
            for t in credit.ready(view, now, observed=True):
                self.on_transition(*t)
            if budget is not None:
                self.record_budget = budget - 1
        a = probe_path(view)  # a probe needs no Q-values (nor an exploration draw)
        if a is None:  # (a state log's row number is no network input: the row is)
            a = self._completion_action(
                view, np.asarray(credit.latest_state()) if credit.log_states else state
            )
        d = credit.act(view, state, a, now, record)
        self.decisions += 1
        return d

    def _completion_action(self, view: ConnectionView, state) -> int:
        """The completion-MDP action on ``state`` (subclasses may refine the choice)."""
        return self._choose(state)

    def _completion_features(
        self, view: ConnectionView, now: float, finish: float, vals: list
    ) -> list:
        """The completion-MDP state writer (subclasses may refine it, same size)."""
        return completion_features_into(view, now, finish, vals)

    def _choose(self, state) -> int:
        a = self._draws.explore(
            self.epsilon, self.spec.n_actions
        )  # rng.random() < eps: rng.integers(n)
        if a >= 0:
            return a
        if self.behaviour is not None:
            return self._behaviour_action()
        if self.qnet is None:
            raise ValueError(f"{self.name}: no Q-network to act with")
        return self.qnet.argmax(state)

    def _behaviour_action(self) -> int:
        """The behaviour scheduler's choice as an action: its path, or for a
        wait the lowest-srtt path without room (wait for it)."""
        view = self._view
        d = self.behaviour.decide(view)
        if d is not None:
            return d if type(d) is int else d.path
        full = [p for p in view.paths if not p.has_room]
        return min(full, key=lambda p: p.srtt).index if full else 0

    def _decide_per_packet(self, view: ConnectionView, state):
        last = self._last_rec
        if last is not None:
            last[3] = state
            if last[4] is not None:
                self.on_transition(last[0], last[1], last[4], state, False, last[2])
        a = self._choose(state)
        self._prev_state = state
        self._prev_action = a
        self.decisions += 1
        budget = self.record_budget
        if budget is not None:
            if budget <= 0:  # budget used up: act, record nothing more
                self._last_rec = None
                self._stop_if_complete(view)
                return a
            self.record_budget = budget - 1
        rec = [
            state,
            a,
            view.sim.now,
            None,
            None,
        ]  # state, action, decision time, next state, reward
        dq = self._pending[a]
        dq.append(rec)
        if len(dq) > MAX_PENDING:
            dq.popleft()
        self._last_rec = rec
        return a

    def _stop_if_complete(self, view: ConnectionView) -> None:
        if self._last_rec is None and not any(self._pending):
            view.sim.stop()

    def _resolve(self, path: int, now: float, acked: bool, sent_time: float | None = None) -> None:
        dq = self._pending[path] if path < len(self._pending) else None
        if not dq:
            return  # a packet no decision sent (PTO probe) or an already dropped one
        if sent_time is not None and dq[0][2] > sent_time + 1e-12:
            # sent before the oldest pending decision: a PTO probe or a late ACK
            # of a packet already declared lost; matching it would credit a
            # decision taken at this very instant with 0.1 s / ~0 s
            return
        rec = dq.popleft()
        reward = rec[4] = ack_credit(now, rec[2]) if acked else 0.0
        if rec[3] is not None:
            self.on_transition(rec[0], rec[1], reward, rec[3], False, rec[2])
        if self.record_budget is not None and self.record_budget <= 0 and self._view is not None:
            self._stop_if_complete(self._view)

    def on_packet_acked(self, view: ConnectionView, path: int, size: int, sent_time: float) -> None:
        if self._per_packet:
            if self.recording:
                self._resolve(path, view.sim.now, True, sent_time)
            return
        self._ack_credit += ack_credit(view.sim.now, sent_time)
        self._ack_count += 1

    def on_packet_lost(self, view: ConnectionView, path: int, size: int, sent_time: float) -> None:
        if self._per_packet and self.recording:
            self._resolve(path, view.sim.now, False, sent_time)

    def drive_episode(
        self,
        scenario,
        app,
        seed: int,
        max_duration_s: float | None = None,
        setup: Callable | None = None,
    ) -> dict[str, float]:
        """One download with this scheduler (learning as it learns): the
        emulation set up, ``setup(emulation, connection)`` before it starts
        (e.g. to schedule condition changes), run for ``max_duration_s``
        emulated seconds (None: the scenario's), the last transition closed
        (:meth:`end_episode`); the episode metrics. DQN-On and FALCON drive
        their online episodes through here."""
        with collector_paused():  # the whole episode: envs/sim.py's docstring says why
            emu, conn, application, s = setup_episode(scenario, app, self, seed)
            if setup is not None:
                setup(emu, conn)
            end = emu.sim.run(
                s["max_duration_s"] if max_duration_s is None else float(max_duration_s)
            )
            self.end_episode(application.done)
            return closing_metrics(emu, conn, application, end)

    def end_episode(self, terminated: bool) -> None:
        """Close the episode's last transition (``done = terminated``: the
        application completed) at the current emulated time."""
        view = self._view
        if self._completion:
            if view is not None and self._credit is not None and self.recording:
                for t in self._credit.finish(view, view.sim.now, bool(terminated)):
                    self.on_transition(*t)
            self._prev_state = None
            return
        if self._per_packet:
            last = self._last_rec
            if view is not None and last is not None and self.recording and last[4] is not None:
                state = np.array(observe_into(view, self._vals), dtype=np.float32)
                self.on_transition(last[0], last[1], last[4], state, bool(terminated), last[2])
            self._last_rec = None
            self._prev_state = None
            self._pending = [deque() for _ in self._pending]
            return
        if view is None or self._prev_state is None or not self.recording:
            self._prev_state = None
            return
        now = view.sim.now
        r = step_reward(
            self.reward_kind,
            view.delivered - self._delivered_prev,
            now - self._t_prev,
            view.payload,
            self._ack_credit,
            self._ack_count,
        )
        state = np.array(observe_into(view, self._vals), dtype=np.float32)
        self.on_transition(
            self._prev_state, self._prev_action, r, state, bool(terminated), self._t_prev
        )
        self._prev_state = None

    def on_transition(self, state, action, reward, next_state, done, time) -> None:
        """A transition was closed (hook; the base class only logs it)."""
        if self.recorder is not None:
            self.recorder.add(state, action, reward, next_state, done, time)

    # ---------------------------------------------------------- persistence
    def hyperparameters(self) -> dict:
        return {
            "hidden": list(self.hidden),
            "epsilon": self.epsilon,
            "seed": self.seed,
            "reward": self.reward_kind,
            "replay_capacity": self.replay_capacity,
            "technique": self.technique,
            "hindsight_rtts": self.hindsight_rtts,
            "reward_unit": self.reward_unit,
            **self.learner_config.to_dict(),
        }

    def save(self, directory) -> None:
        """Write ``model.h5`` (the documented HDF5 layout, see
        ``docs/reference/formats/model_formats.md``) and ``agent.json`` (hyperparameters) to
        ``directory``."""
        from baselines.dqn.export import ModelRecord, write_hdf5

        if self.learner is None:
            raise ConfigError(f"{self.name}: nothing to save, the model was never built")
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        rec = ModelRecord(
            name=self.name,
            spec=self.spec,
            weights=self.learner.get_weights(0),
            attrs={
                "agent": type(self).__name__,
                "feature_names": feature_names(self.n_paths, self.reward_kind),
                "hyperparameters": json.dumps(self.hyperparameters()),
                "reward": self.reward_kind,
            },
        )
        write_hdf5(directory / MODEL_FILE, [rec])
        tmp = directory / f".{CONFIG_FILE}.tmp"
        tmp.write_text(
            json.dumps(
                {
                    "class": f"{type(self).__module__}:{type(self).__name__}",
                    **self.hyperparameters(),
                },
                indent=2,
            )
        )
        tmp.replace(directory / CONFIG_FILE)

    def load(self, path) -> None:
        """Start from the weights of a saved model (HDF5 file, or a directory
        holding ``model.h5``); the architecture must match ``hidden``."""
        from baselines.dqn.export import ModelFileError, read_hdf5

        p = Path(path)
        if p.is_dir():
            p = p / MODEL_FILE
        records = read_hdf5(p)
        rec = records[0]
        if rec.spec.n_inputs != n_inputs(rec.spec.n_actions, self.reward_kind):
            raise ModelFileError(
                f"{p}: model takes {rec.spec.n_inputs} inputs for {rec.spec.n_actions} "
                f"paths, the {self.reward_kind!r} MDP has "
                f"{n_inputs(rec.spec.n_actions, self.reward_kind)}"
            )
        if rec.spec.hidden != self.hidden:
            raise ModelFileError(
                f"{p}: model has hidden layers {list(rec.spec.hidden)}, the agent "
                f"is configured with {list(self.hidden)}"
            )
        self.hidden = rec.spec.hidden
        self.spec = rec.spec
        self.learner = BatchedDQN(
            self.spec, 1, self.learner_config, seed=self.seed, technique=self.technique
        )
        self.learner.set_weights(rec.weights)
        self.replay = ReplayMemory(self.replay_capacity, self.spec.n_inputs, 1, seed=self.seed + 1)
        self.deploy()

    def __getstate__(self):
        st = dict(self.__dict__)
        st["_view"] = None  # never carry a live connection into a copy
        return st


def undominated_action(view: ConnectionView, action: int) -> int:
    """Completion MDP: ``action``, unless it waits for a path without room
    while a path with room has an RTT sample and a smoothed RTT no larger:
    then the path with room of the lowest smoothed RTT. A packet sent there
    now arrives no later than the one the wait would send once the full path
    has room, so the wait is dominated; a wait for a *faster* full path (ECF's
    and BLEST's) is kept."""
    paths = view.paths
    waited = paths[action]
    if waited.has_room:
        return action
    best = None
    for p in paths:
        if p.has_room and p.has_rtt_sample and p.srtt <= waited.srtt:
            if best is None or p.srtt < best.srtt:
                best = p
    return action if best is None else best.index


def greedy_scheduler(
    weights: Sequence[np.ndarray],
    spec: QNetSpec,
    hindsight_rtts: float = HINDSIGHT_RTTS,
    reward_unit: str = COMPLETION_UNIT,
) -> DQNScheduler:
    """A scheduler acting greedily (epsilon 0, recording nothing) with the
    network ``weights`` (``[W0, b0, ...]``) of ``spec``, in the MDP its input
    width names (:func:`envs.mdp.reward_of_inputs`). No learner is built."""
    reward = reward_of_inputs(spec.n_inputs, spec.n_actions)
    if reward is None:
        raise ConfigError(
            f"a network of {spec.n_inputs} inputs for {spec.n_actions} paths matches no MDP"
        )
    s = DQNScheduler(
        hidden=spec.hidden,
        epsilon=0.0,
        reward=reward,
        hindsight_rtts=hindsight_rtts,
        reward_unit=reward_unit,
    )
    s.spec = spec  # preset: reset() then builds no learner
    s.qnet = NumpyQNet(weights, spec)
    return s


__all__ = [
    "DQNScheduler",
    "greedy_scheduler",
    "MODEL_FILE",
    "CONFIG_FILE",
    "PACKET_RATE",
    "COMPLETION",
]
