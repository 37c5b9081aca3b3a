"""FalconScheduler: FALCON's online learning module (paper Algorithm 1, Sec. IV) in the emulator.

State, action and reward are DQN-On's (:class:`baselines.dqn.policy.DQNScheduler`)
in the MDP the bank's meta-models were built on (:attr:`MetaModelBank.reward
<metalearning.bank.MetaModelBank.reward>`: the completion MDP of the bank
presets, or the paper's per-packet credit ``packet_rate`` for a bank built
with ``reward: packet_rate``). What FALCON adds, per connection:

1. **Change detection.** Every ACK feeds its RTT sample (ACK time - send
   time) and every packet fate (acked / declared lost) to a
   :class:`baselines.changepoint.PathChangeDetector` (BOCPD per path on RTT
   and on binomial loss counts; ``detector:`` passes its parameters). A new
   detector per connection. ``detection: never`` disables it (the only
   trigger is then the connection start).
2. **Estimation window.** At connection start and after every detection a
   window opens (:mod:`falcon.online.estimator`: the changed path's window
   restarts, keeping the samples the detector places after the change). It
   closes when every path has ``window.min_rtt_samples`` RTT samples and
   ``window.min_loss_packets`` packet fates, or, with usable partial data,
   ``window.max_window_s`` emulated seconds after the trigger that opened
   it (a trigger while a window is open restarts the changed path's
   samples, not the deadline). The current policy keeps scheduling
   meanwhile, with exploration ``epsilon`` (the paper's eps_s = 0.1;
   default 0, greedy: ``configs/agent/falcon_paper.yaml`` has the paper's).
3. **Selection.** The estimated :class:`~metalearning.grid.PathCondition`
   of every path picks the covering cell, ``bank.select(conditions)``
   (``selection: random``: a uniformly random cell, only to show that
   selection matters). If the cell is the one of the model in use, the
   model is kept (``same_cell: keep``, default: the detector also reports
   self-induced changes such as slow start, and the deployed model was
   already fine-tuned for that cell; ``reload`` adapts anew).
4. **Few-shot adaptation.** Otherwise the cell's meta-model Theta is loaded
   into the learner (online and target networks), the Adam state is reset,
   and the learner's small replay memory is refilled with the transitions
   decided since the trigger. Once it holds ``min_transitions`` (default:
   the batch size) transitions, one trainer job of ``finetune_steps`` (K;
   the paper's 16, ``configs/agent/falcon_paper.yaml``) DQN mini-batch steps runs under the cost model of
   :class:`baselines.dqn.async_trainer.AsyncTrainer`: the job costs ``K x
   train_step_cost_s`` of emulated time; the *old* policy keeps
   scheduling through the collection and the K steps (the paper's reading;
   ``act_on_selection: true`` lets the selected meta-model act from its
   selection on instead: measured on the stress test it does not help),
   then the fine-tuned network is deployed and
   acts with ``deployed_epsilon`` (default 0: greedy; the paper: eps_s =
   0.1). A job still running when a newer adaptation starts is discarded
   at its end. ``finetune_steps: 0`` (the default) deploys the selected
   meta-model at once, and continual updates take it from there: the K =
   16 steps on the first post-change transitions did no better on any of
   FALCON's jobs (docs/explanation/falcon_notes.md, "K = 0 by default"), every meta-model of the bank
   staying close to the generalist it started from (``experiment=meta_evidence``).
5. **Continual updates** (``continual: true``; the paper's eps_s "for
   fine-tuning and continual updates", ``configs/agent/falcon_paper.yaml``):
   after deployment the learner keeps training DQN-On-style (one step per
   ``continual_train_interval`` transitions, each costing emulated time) on
   the post-change replay, deploying after each step. Off by default: with
   pacing, on the trace-driven mobile 5G + 5G scenario they taught the
   deployed meta-model to wait for the slower path while the faster one had
   room (1 384 such decisions in 20 downloads, 45 without them) and cost
   8.5 % of download time (paired geometric mean, 60 runs); on the static
   scenarios they gained 0-2 % (docs/explanation/falcon_notes.md, "Continual updates between connections").
   With K > 0 and no deployment guard they are what repairs a bad
   fine-tuning (36-52 s downloads in the convergence test without them).
   **Between connections** (``continual_between: true``, the default, with
   ``continual`` off): the deployed model acts unchanged within a
   connection, and when the next connection starts it takes the same
   updates on the transitions it collected, then acts with them. FALCON
   thus still learns across downloads (convergence test, new physics:
   relative score 1.085-1.227 after 1 000 packets on the new condition,
   0.892-0.976 without), at a cost of 0.2-0.7 % in the stress test (6 seeds, paired).
6. **Offline loop** (``offline:``; :mod:`falcon.online.offline_update`):
   each transition is tagged with the cell the scheduler believed it was in
   and every T_upd the touched cells' meta-models take a Reptile step
   toward K DQN steps on that experience. FALCON-N: ``offline: null``.

Before the first selection of a connection the scheduler acts with the
``fallback``: ``prior`` = the meta-model of the cell of
``prior_conditions``; ``last`` (default) = the last deployed model (the
model persists across the episodes of one scheduler object, like DQN-On's),
or the prior cell's meta-model if none was deployed yet.

Losses of packets sent in slow start count as fates, not losses, in the
estimate (``loss_in_slow_start: false``; see :mod:`falcon.online.estimator`).
The bank file is read once per process (:func:`falcon.online.bank_cache.cached_bank`; every
evaluation job builds its scheduler): FALCON-N shares it, FALCON's offline
loop updates a private copy of the parameters.

For experiments: :attr:`FalconScheduler.events` (the newest ``max_events``
:class:`falcon.online.events.AdaptationEvent`), counters ``changes``, ``selections``,
``adaptations``, ``deployments``, ``kept``, ``guarded`` and ``decisions`` (online
packets), :meth:`FalconScheduler.stats`.

:class:`falcon.online.falcon_s.FalconSScheduler` (FALCON-S, web pages) only changes the state:
see its docstring.
"""

from __future__ import annotations

import copy
import math
import sys
import time as _time
from collections import deque
from collections.abc import Callable, Mapping

import numpy as np

from baselines.changepoint.detectors import PathChangeDetector
from baselines.dqn.async_trainer import AsyncTrainer, calibrate
from baselines.dqn.learner import BatchedDQN
from baselines.dqn.network import NumpyQNet
from baselines.dqn.policy import DQNScheduler, undominated_action
from baselines.dqn.replay import ReplayMemory
from baselines.rule_based.common import minrtt_choice
from baselines.rule_based.reinjection import tail_copy
from envs.errors import ConfigError, check_flag, is_whole_number
from envs.mdp import (
    observe_into,
)
from envs.scheduler import Trainable
from falcon.online.adaptation import FewShotAdaptation
from falcon.online.bank_cache import cached_bank
from falcon.online.estimator import ConditionEstimator, WindowConfig
from falcon.online.events import COLLECTING, DEPLOYED, FINETUNING, IDLE, AdaptationEvent
from falcon.online.events import prior_conditions as resolve_prior
from falcon.online.offline_update import OfflineUpdater
from falcon.online.trigger import ChangeTriggers

SELECTIONS = ("bank", "random")
DETECTIONS = ("bocpd", "never")
FALLBACKS = ("last", "prior")
SAME_CELL = ("keep", "reload")


def _adaptation_settings(
    deployed_epsilon, finetune_steps, finetune_mix, min_transitions, batch_size: int
) -> tuple[float, int, float, int]:
    """The checked ``(deployed_epsilon, finetune_steps, finetune_mix, min_transitions)``."""
    deployed_epsilon, finetune_mix = float(deployed_epsilon), float(finetune_mix)
    if not 0.0 <= deployed_epsilon <= 1.0:
        raise ConfigError(f"deployed_epsilon: must be in [0, 1], got {deployed_epsilon}")
    if isinstance(finetune_steps, bool) or int(finetune_steps) < 0:
        raise ConfigError(
            f"finetune_steps: must be a non-negative integer (0: deploy the selected "
            f"meta-model as is), got {finetune_steps!r}"
        )
    if not 0.0 <= finetune_mix <= 1.0:
        raise ConfigError(f"finetune_mix: must be in [0, 1], got {finetune_mix}")
    n = batch_size if min_transitions is None else int(min_transitions)
    if n < 1:
        raise ConfigError(f"min_transitions: must be positive, got {min_transitions!r}")
    return deployed_epsilon, int(finetune_steps), finetune_mix, n


def _check_choices(selection, detection, fallback, same_cell, kw: Mapping) -> None:
    """Raise :class:`ConfigError` for an unknown choice or a network key of
    :class:`FalconScheduler` (its network comes from the bank)."""
    for key, val, allowed in (
        ("selection", selection, SELECTIONS),
        ("detection", detection, DETECTIONS),
        ("fallback", fallback, FALLBACKS),
        ("same_cell", same_cell, SAME_CELL),
    ):
        if val not in allowed:
            raise ConfigError(f"{key}: unknown {val!r}; choose one of {list(allowed)}")
    if "hidden" in kw or "model" in kw:
        raise ConfigError("falcon: the network comes from the bank (no hidden: or model: keys)")


def _check_bank_mdp(bank, reward: str | None, unit: str | None) -> None:
    """Raise :class:`ConfigError` when a given ``reward`` or reward ``unit`` is not the bank's."""
    if reward is not None and reward != bank.reward:
        raise ConfigError(
            f"reward: the bank's meta-models were built on the {bank.reward!r} MDP, "
            f"got {reward!r} (null: the bank's)"
        )
    if unit is not None and unit != bank.reward_unit:
        raise ConfigError(
            f"reward_unit: the bank's meta-models learned rewards in {bank.reward_unit!r} "
            f"units, got {unit!r} (null: the bank's)"
        )


def _check_guard_every(guard_every) -> None:
    """Raise :class:`ConfigError` unless ``guard_every`` is an integer >= 2."""
    if not is_whole_number(guard_every, 2):
        raise ConfigError(
            f"guard_every: expected an integer >= 2 (every n-th post-change transition "
            f"held out), got {guard_every!r}"
        )


class FalconScheduler(ChangeTriggers, FewShotAdaptation, DQNScheduler, Trainable):
    """FALCON (module docstring).

    Args:
        bank: the meta-model bank: path of its HDF5 file or a
            :class:`metalearning.bank.MetaModelBank`.
        epsilon: eps_s, exploration while estimating, collecting and fine-tuning.
        deployed_epsilon: exploration of the deployed fine-tuned model.
        finetune_steps: K (0: the selected meta-model is deployed as is, zero-shot).
        finetune_mix: the share of the K-step move deployed, ``theta + mix
            (W - theta)`` (1: the fine-tuned W, the paper; 0: theta).
        deploy_guard: judge the fine-tuned network against the meta-model on
            held-out post-change transitions before deploying it (False: the
            paper's, always the fine-tuned one).
        guard_every: every ``guard_every``-th post-change transition is held
            out for the guard (at least 2).
        act_on_selection: the selected meta-model acts from its selection on,
            while the fine-tuning data is collected and the K steps run
            (False, default: the previous policy acts until the fine-tuned
            network is deployed, the paper's).
        min_transitions: post-change transitions before fine-tuning (None: batch size).
        train_step_cost_s: emulated time of one gradient step [s] (``"auto"``: measured).
        selection, detection, fallback, same_cell: module docstring.
        prior_conditions: per path ``{loss, rtt_ms, rtt_std_ms}`` of the prior cell.
        window: :class:`~falcon.online.estimator.WindowConfig` keys.
        detector: :class:`~baselines.changepoint.PathChangeDetector` keyword arguments.
        continual, continual_train_interval: continual updates after deployment
            (one DQN step per ``continual_train_interval`` transitions).
        continual_between: with ``continual`` off, the same updates between
            connections (item 5 of the module docstring).
        offline: :class:`~falcon.online.offline_update.OfflineUpdater` keys, or
            None (FALCON-N).
        max_events: adaptation events kept (newest).
        tail_reinject: once all data has been sent, the minRTT path with room
            re-sends the oldest frame in flight on another path
            (:func:`baselines.rule_based.reinjection.tail_copy`, XLINK's tail
            re-injection without its copies while flow control blocks), so
            that the last packets on a lossy or slowed path do not wait for
            its loss recovery; FALCON's network still places every new packet
            and retransmission (False: the paper's, no copies).
        skip_dominated_waits: a wait the network chooses for a path without
            room while a path with room has a smoothed RTT no larger sends on
            that path instead (:func:`baselines.dqn.policy.undominated_action`;
            the paper MDP commits a packet to its path and has no waits;
            False: the paper's, every choice the network's).
        seed, reward, gamma, lr, batch_size, tau, loss, huber_delta, double_q,
        grad_clip, replay_capacity, technique: as :class:`DQNScheduler`
        (the network architecture is the bank's).
        log_every: progress line every N episodes of :meth:`fit`.
    """

    name = "falcon"

    def __init__(
        self,
        bank,
        *,
        epsilon: float = 0.0,
        deployed_epsilon: float = 0.0,
        finetune_steps: int = 0,
        finetune_mix: float = 1.0,
        min_transitions: int | None = None,
        deploy_guard: bool = True,
        guard_every: int = 4,
        act_on_selection: bool = False,
        train_step_cost_s: float | str = 0.00045,
        selection: str = "bank",
        detection: str = "bocpd",
        fallback: str = "last",
        same_cell: str = "keep",
        prior_conditions=None,
        window: Mapping | None = None,
        detector: Mapping | None = None,
        loss_in_slow_start: bool = False,
        ack_delay_corrected: bool = True,
        continual: bool = False,
        continual_between: bool = True,
        continual_train_interval: int = 16,
        offline: Mapping | None = None,
        max_events: int = 10_000,
        tail_reinject: bool = True,
        skip_dominated_waits: bool = True,
        replay_capacity: int = 4096,
        reward: str | None = None,
        log_every: int = 5,
        **kw,
    ):
        _check_choices(selection, detection, fallback, same_cell, kw)
        self.bank = cached_bank(
            bank, private=isinstance(offline, Mapping) and bool(offline.get("enabled", True))
        )
        _check_bank_mdp(self.bank, reward, kw.pop("reward_unit", None))
        super().__init__(
            hidden=self.bank.spec.hidden,
            epsilon=epsilon,
            reward=self.bank.reward,
            replay_capacity=replay_capacity,
            reward_unit=self.bank.reward_unit,
            **kw,
        )
        self.epsilon_s = self.epsilon
        self.deployed_epsilon, self.finetune_steps, self.finetune_mix, self.min_transitions = (
            _adaptation_settings(
                deployed_epsilon,
                finetune_steps,
                finetune_mix,
                min_transitions,
                self.learner_config.batch_size,
            )
        )
        _check_guard_every(guard_every)
        self.deploy_guard, self.guard_every = bool(deploy_guard), guard_every
        self.act_on_selection = bool(act_on_selection)
        train_step_cost_s = self._train_step_cost(train_step_cost_s)
        self.selection = selection
        self.detection = detection
        self.fallback = fallback
        self.same_cell = same_cell
        self.prior_conditions = prior_conditions
        self.prior = resolve_prior(prior_conditions, self.bank.grid.n_paths)
        if isinstance(max_events, bool) or int(max_events) < 1:
            raise ConfigError(f"max_events: must be a positive integer, got {max_events!r}")
        self.window_config = WindowConfig.from_mapping(window)
        self.detector_kw = dict(detector or {})
        try:
            PathChangeDetector(**self.detector_kw)
        except (TypeError, ValueError) as e:
            raise ConfigError(f"detector: {e}") from None
        self.loss_in_slow_start = bool(loss_in_slow_start)
        self.ack_delay_corrected = bool(ack_delay_corrected)
        self.continual = bool(continual)
        self.continual_between = bool(continual_between)
        self.offline = OfflineUpdater.from_config(
            offline, self.bank, self.learner_config, self.seed, self.technique
        )
        self.offline_config = None if offline is None else dict(offline)
        self.max_events = int(max_events)
        #: the transport asks for decisions at the tail only of a scheduler that re-injects
        self.tail_reinject = self.reinjects = check_flag(tail_reinject, "tail_reinject")
        self.skip_dominated_waits = check_flag(skip_dominated_waits, "skip_dominated_waits")
        self.log_every = max(1, int(log_every))
        self._init_trainers(train_step_cost_s, continual_train_interval)
        self.recording = True
        self._select_rng = np.random.default_rng([self.seed, 7])
        self._init_state()

    def _train_step_cost(self, train_step_cost_s: float | str) -> float:
        """The emulated cost [s] of one training step: the given seconds, or for ``"auto"``
        this machine's, measured (:func:`calibrate`)."""
        if train_step_cost_s == "auto":
            return calibrate(
                self.hidden, n_paths=self.bank.spec.n_actions, technique=self.technique
            )
        if isinstance(train_step_cost_s, str):
            raise ConfigError(
                f"train_step_cost_s: expected seconds or 'auto', got {train_step_cost_s!r}"
            )
        return train_step_cost_s

    def _init_trainers(self, train_step_cost_s: float, continual_train_interval: int) -> None:
        """The few-shot fine-tuner and the continual trainer, each charging
        ``train_step_cost_s`` [s] of emulated time per training step."""
        self.finetuner = AsyncTrainer(
            self._ft_train,
            self._ft_deploy,
            self._ft_ready,
            step_cost_s=train_step_cost_s,
            train_interval=1,
            steps_per_update=max(1, self.finetune_steps),
        )
        self.trainer = AsyncTrainer(
            self._ct_train,
            self._ct_deploy,
            self._ct_ready,
            step_cost_s=train_step_cost_s,
            train_interval=int(continual_train_interval),
            steps_per_update=1,
        )

    def _init_state(self) -> None:
        """The model, adaptation, connection and record state of a new scheduler."""
        # model and adaptation state (persist across episodes)
        self.cell: int | None = None  # cell of the model in use / being fine-tuned
        self.deployed_cell: int | None = None  # cell of the deployed model (None: a fallback)
        self.phase = IDLE
        self._gen = 0  # adaptation generation (stale jobs are ignored)
        self._ft_gen = -1
        self._ct_gen = -1
        self._adapt_event: AdaptationEvent | None = None
        self._ft_mark = 0
        self._held_out = None  # transitions held out of the K steps (the guard's)
        # per connection
        self.estimator: ConditionEstimator | None = None
        self.detector: PathChangeDetector | None = None
        self._window: ReplayMemory | None = None
        self._estimating = False
        self._overdue = False
        self._event: AdaptationEvent | None = None
        self._trigger_time = 0.0
        self._window_gen = 0
        self._elapsed_s = 0.0  # emulated time of the finished episodes
        self._offline_gen = 0
        # records and counters
        self.events: deque[AdaptationEvent] = deque(maxlen=self.max_events)
        self.episode = -1
        self.changes = 0
        self.selections = 0
        self.adaptations = 0
        self.deployments = 0
        self.kept = 0
        self.guarded = 0  # K-step adaptations where the guard deployed the meta-model
        self._between_new = 0  # deployed-model transitions not yet trained on between connections
        self.between_steps = 0  # DQN steps taken between connections

    # ---------------------------------------------------------- model
    @property
    def wants_packet_feedback(self) -> bool:
        return True

    @property
    def step_cost_s(self) -> float:
        return self.finetuner.step_cost_s

    def build(self, n_paths: int) -> None:
        spec = self.bank.spec
        if spec.n_actions != n_paths:
            raise ConfigError(
                f"{self.name}: the bank was built for {spec.n_actions} paths, "
                f"the scenario has {n_paths}"
            )
        self.spec = spec
        self.learner = BatchedDQN(
            spec, 1, self.learner_config, seed=self.seed, technique=self.technique
        )
        self.replay = ReplayMemory(self.replay_capacity, spec.n_inputs, 1, seed=self.seed + 1)
        self._window = ReplayMemory(self.replay_capacity, spec.n_inputs, 1, seed=self.seed + 2)
        self.prior_cell = int(self.bank.select(self.prior))
        self._load(self.prior_cell)
        self.deploy()

    def deploy(self) -> None:
        """Copy the learner's weights to the acting network (and keep them,
        for the ``last`` fallback)."""
        self._deployed_flat = self.learner.flat_weights(0)
        self.qnet = NumpyQNet(self.learner.split_flat(self._deployed_flat), self.spec)

    def _load(self, cell: int) -> None:
        """Meta-model ``cell`` into the learner (online + target), fresh optimiser."""
        self.learner.set_weights(self.bank.weights(cell))
        self.learner.reset_optimizer()

    def _set_epsilon(self) -> None:
        adapting = self._estimating or self.phase in (IDLE, COLLECTING, FINETUNING)
        self.epsilon = self.epsilon_s if adapting else self.deployed_epsilon

    def _now(self) -> float:
        return self._view.sim.now if self._view is not None else math.nan

    # ---------------------------------------------------------- connection
    def reset(self, view) -> None:
        prev = self._view
        if prev is not None and prev is not view:
            self._elapsed_s += prev.sim.now
        super().reset(view)
        n = len(view.paths)
        self.episode += 1
        self.finetuner.attach(view.sim)
        self.trainer.attach(view.sim)
        self._train_between()
        if self.estimator is None or self.estimator.n_paths != n:
            self.estimator = ConditionEstimator(
                n, self.window_config, prior=self.prior if len(self.prior) == n else None
            )
        else:
            self.estimator.reset()
        self.detector = (
            PathChangeDetector(**self.detector_kw) if self.detection == "bocpd" else None
        )
        self._ca_since = [math.inf] * n
        self._window.clear()
        if self.fallback == "prior" or self.deployed_cell is None:
            self._gen += 1  # a job of the previous connection is void
            self._load(self.prior_cell)
            self.deploy()
            self.cell = self.deployed_cell = None
            self.phase = IDLE
        else:  # "last": the last deployed model acts
            if self.phase != DEPLOYED:  # the learner holds an undeployed meta-model
                self._gen += 1
                self.learner.set_weights(self.learner.split_flat(self._deployed_flat))
                self.learner.reset_optimizer()
            self.cell = self.deployed_cell
            self.phase = DEPLOYED
        off = self.offline
        if off is not None:
            if off.episode_started():
                off.update(reason="episodes")
            if off.interval_s is not None:
                self._offline_gen += 1
                view.sim.schedule(
                    max(0.0, off.next_due_s - self._elapsed_s), self._offline_due, self._offline_gen
                )
        self._open_window(None, "start")

    def _offline_due(self, gen: int) -> None:
        off = self.offline
        if gen != self._offline_gen or self._view is None:
            return
        now = self._elapsed_s + self._view.sim.now
        if off.time_due(now):
            off.update(reason="interval")
            off.advance(now)
        if self._view.sim.pending == 0:
            return  # nothing else will happen: let the episode end (stall detection)
        self._view.sim.schedule(
            self._view.sim.now + max(1e-9, off.next_due_s - now), self._offline_due, gen
        )

    # ---------------------------------------------------------- decisions
    def _observe(self, view) -> list:
        """The state written into ``self._vals`` (FALCON: the DQN state)."""
        return observe_into(view, self._vals)

    def decide(self, view):
        if self.tail_reinject and view.no_new_data:  # asked only because copies may go
            return tail_copy(view, minrtt_choice(view.paths), when_blocked=False)
        if self._completion:
            return self._decide_completion(view)
        state = np.array(self._observe(view), dtype=np.float32)
        return self._decide_per_packet(view, state)

    def _completion_action(self, view, state) -> int:
        a = self._choose(state)
        return undominated_action(view, a) if self.skip_dominated_waits else a

    def on_transition(self, state, action, reward, next_state, done, time) -> None:
        self.replay.add(state, action, reward, next_state, done)
        if self.phase == DEPLOYED:
            self._between_new += 1
        if self._estimating and time >= self._trigger_time:
            self._window.add(state, action, reward, next_state, done)
        elif self.offline is not None and self.cell is not None:
            self.offline.add(self.cell, state, action, reward, next_state, done)
        if self.recorder is not None:
            self.recorder.add(state, action, reward, next_state, done, time)
        self.finetuner.notify()
        if self.continual:
            self.trainer.notify()

    def end_episode(self, terminated: bool) -> None:
        """Close the last transition with this scheduler's own state (FALCON-S)."""
        if self._completion:
            super().end_episode(terminated)
            return
        view, last = self._view, self._last_rec
        if view is not None and last is not None and last[4] is not None:
            state = np.array(self._observe(view), dtype=np.float32)
            self.on_transition(last[0], last[1], last[4], state, bool(terminated), last[2])
        self._last_rec = None
        self._prev_state = None
        self._pending = [deque() for _ in self._pending]

    # ---------------------------------------------------------- episodes
    def run_episode(
        self,
        scenario,
        app,
        seed: int,
        max_duration_s: float | None = None,
        setup: Callable | None = None,
    ) -> dict[str, float]:
        """One download with online adaptation; its metrics plus FALCON's
        counters. ``setup(emulation, connection)`` runs before the emulation
        starts (e.g. to schedule condition changes)."""
        m = self.drive_episode(scenario, app, seed, max_duration_s, setup)
        m.update(self.stats())
        return m

    def fit(
        self,
        scenario,
        app,
        seed: int = 0,
        episodes: int = 10,
        log: Callable | None = None,
        progress: bool = True,
        max_duration_s: float | None = None,
    ) -> dict[str, float]:
        """``episodes`` online downloads (seeds ``seed, seed+1, ...``), the
        model and bank persisting across them; ``log(metrics, step)`` gets
        one point per episode. Returns summary metrics."""
        times = []
        t0 = _time.perf_counter()
        for ep in range(int(episodes)):
            m = self.run_episode(scenario, app, seed + ep, max_duration_s)
            times.append(m["download_time_s"])
            if log is not None:
                log(m, step=ep)
            if progress and ((ep + 1) % self.log_every == 0 or ep + 1 == episodes):
                print(
                    f"{self.name}: episode {ep + 1}/{episodes}  download {m['download_time_s']:.3f} s  "
                    f"changes {self.changes}  adaptations {self.adaptations}  packets {self.decisions}  "
                    f"[{_time.perf_counter() - t0:.1f} s]",
                    file=sys.stderr,
                    flush=True,
                )
        k = max(1, min(5, len(times)))
        return {
            "episodes": float(len(times)),
            "final_download_time_s": float(np.nanmedian(times[-k:])) if times else math.nan,
            "wall_time_s": _time.perf_counter() - t0,
            **self.stats(),
        }

    def stats(self) -> dict[str, float]:
        out = {
            "changes": float(self.changes),
            "selections": float(self.selections),
            "adaptations": float(self.adaptations),
            "deployments": float(self.deployments),
            "kept": float(self.kept),
            "guarded": float(self.guarded),
            "between_steps": float(self.between_steps),
            "online_packets": float(self.decisions),
        }
        if self.offline is not None:
            out.update(self.offline.stats())
        return out

    def hyperparameters(self) -> dict:
        return {
            **super().hyperparameters(),
            "deployed_epsilon": self.deployed_epsilon,
            "finetune_steps": self.finetune_steps,
            "finetune_mix": self.finetune_mix,
            "deploy_guard": self.deploy_guard,
            "guard_every": self.guard_every,
            "act_on_selection": self.act_on_selection,
            "min_transitions": self.min_transitions,
            "train_step_cost_s": self.finetuner.step_cost_s,
            "selection": self.selection,
            "detection": self.detection,
            "fallback": self.fallback,
            "same_cell": self.same_cell,
            "window": dict(self.window_config.__dict__),
            "detector": self.detector_kw,
            "continual": self.continual,
            "continual_between": self.continual_between,
            "continual_train_interval": self.trainer.train_interval,
            "offline": self.offline_config,
            "tail_reinject": self.tail_reinject,
            "skip_dominated_waits": self.skip_dominated_waits,
        }

    def __deepcopy__(self, memo):
        # FALCON-N never writes its bank: copies (one per evaluation job) share it
        if self.offline is None:
            memo[id(self.bank)] = self.bank
        new = type(self).__new__(type(self))
        memo[id(self)] = new
        for k, v in self.__getstate__().items():
            setattr(new, k, copy.deepcopy(v, memo))
        return new


__all__ = ["FalconScheduler", "AdaptationEvent", "cached_bank"]
