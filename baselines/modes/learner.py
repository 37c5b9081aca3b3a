"""DQN-Off on the mode MDP: a Q-network over traffic-split modes, trained
offline per condition from behaviour data that covers the oracle family.

:meth:`DQNModes.fit` logs the behaviour episodes
(:func:`baselines.modes.experience.collect`), trains ``models`` Q-networks
side by side on the log (:class:`baselines.dqn.learner.BatchedDQN`, inputs
normalised by the log's mean and spread) and deploys their mean Q-values (an
ensemble: one network's estimates of a return-to-go are noisy enough to
switch on noise). At each epoch the mode with the highest mean Q-value is
chosen, unless the mode in force is within a switch margin of it; the margin
is chosen from ``switch_margins`` by the lowest mean log download time on
``validation_episodes`` fresh episodes of the training condition
(:func:`baselines.dqn.selection.successive_halving`; seeds ``seed +
VALIDATION_SEED_OFFSET + k``, disjoint from the logged ones and from an
evaluation's ``0 .. runs-1``). A margin of infinity holds the first choice:
the best mode for the condition's start. Up to ``constant_candidates`` modes
held throughout and, with ``probe``, a probe (:mod:`baselines.modes.probe`:
a prefix mode for a few epochs, then the mode that was fastest from the
nearest of many probed states, held) enter the same selection.

Why a second MDP beside the completion MDP (:mod:`envs.mdp`): there the
action is a path per packet and the reward a fluid prediction from the
congestion controllers' estimates, discounted at 0.9 per decision, so the
learned policy is greedy in that prediction, which is the reasoning of ECF
and minRTT: it cannot see a path that stalls (its estimates do not move
without ACKs) and it never weighs a choice whose pay-off comes seconds later
(sending nothing on a path that will collapse). Here a decision holds for an
epoch, the state has what each path delivered and how long it has been
silent, and the return is the download time itself (docs/explanation/mdps.md,
the mode MDP).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np

from baselines.dqn.dqn_off import VALIDATION_SEED_OFFSET
from baselines.dqn.learner import BatchedDQN, DQNConfig
from baselines.dqn.network import NumpyQNet, QNetSpec
from baselines.dqn.selection import STATISTICS, download_cost, successive_halving
from baselines.modes import files
from baselines.modes.experience import (
    TASK_SEED_STRIDE,
    collect_on_policy,
    collect_tasks,
    fastest_constant_modes,
    mc_transitions,
    pool,
    reward_constants,
    transitions,
)
from baselines.modes.features import n_inputs
from baselines.modes.online_dqn import check_online_train, online_dqn
from baselines.modes.probe import ProbeChooser, ProbeModel, check_probe, fit_probe
from baselines.modes.scheduler import (
    DEFAULT_RULES,
    DEFAULT_SHARES,
    ModeScheduler,
    make_modes,
    mode_index,
)
from envs import run_episode
from envs.errors import ConfigError, check_flag, is_whole_number
from envs.scheduler import ConnectionView, Decision, Scheduler, Trainable

#: what the Q-network is fitted to: ``mc``, each constant mode's return-to-go
#: (:func:`baselines.modes.experience.mc_transitions`, generalised policy
#: improvement over the modes); ``td``, DQN's bootstrapped target on the shaped
#: per-epoch reward over every logged epoch (:func:`baselines.modes.experience.transitions`)
TARGETS = ("mc", "td")


def hold_or_switch(
    q: np.ndarray, current: int | None, margin: float, members=None, state=None
) -> int:
    """The argmax of ``q``, or ``current`` where no mode beats it by more than
    ``margin``; with ``members`` (an ensemble, :func:`members_agree`) also
    ``current`` unless every member values the argmax above it on ``state``."""
    best = int(np.argmax(q))
    if current is None:
        return best
    if q[best] > q[current] + margin and (
        members is None or members_agree(members, state, best, current)
    ):
        return best
    return current


#: the on-policy episodes of policy round ``r`` (task 0) have the seeds
#: ``seed + POLICY_SEED_OFFSET + POLICY_ROUND_STRIDE * r + k``: apart from the
#: behaviour log's (``seed + k``) and the validation episodes' (``seed + 500 000 + k``)
POLICY_SEED_OFFSET = 20_000
POLICY_ROUND_STRIDE = 5_000
#: the online candidate's training downloads have the seeds ``seed + ONLINE_CANDIDATE_OFFSET
#: + ONLINE_SEED_OFFSET + k`` (:mod:`baselines.modes.online_dqn`)
ONLINE_CANDIDATE_OFFSET = 60_000
#: the probe candidate's downloads have the seeds ``seed + PROBE_SEED_OFFSET + k``
#: (:mod:`baselines.modes.probe`)
PROBE_SEED_OFFSET = 80_000
#: epochs the online candidate's replay keeps
ONLINE_REPLAY_CAPACITY = 50_000

#: the candidate switch margins, by default
DEFAULT_MARGINS = (0.0, 0.1, 0.3, None)


def members_agree(q, state: np.ndarray, new: int, old: int) -> bool:
    """Every member network of the ensemble ``q`` values mode ``new`` above
    ``old`` on ``state`` (a ``q`` without members: True)."""
    nets = getattr(q, "nets", None)
    if not nets:
        return True
    for net in nets:
        v = net(state)
        if not float(v[new]) > float(v[old]):
            return False
    return True


class ModePolicy:
    """The chooser of one download: ``constant`` at every epoch if given, else
    ``first`` (if given) in the first epoch, then the argmax of ``q``, unless
    the mode in force is within ``margin`` of it (:func:`hold_or_switch`), or
    (``agree``) unless a member network of ``q`` disagrees with the switch
    (:func:`members_agree`)."""

    def __init__(
        self,
        q,
        margin: float = 0.0,
        constant: int | None = None,
        first: int | None = None,
        agree: bool = False,
    ) -> None:
        self.q, self.margin, self.constant, self.first = q, margin, constant, first
        self.agree = agree
        self.current: int | None = None

    def __call__(self, state: np.ndarray) -> int:
        if self.constant is not None:
            return self.constant
        if self.current is None and self.first is not None:
            self.current = self.first
            return self.current
        members = self.q if self.agree else None
        self.current = hold_or_switch(self.q(state), self.current, self.margin, members, state)
        return self.current


class Ensemble:
    """The mean Q-values of several networks (one state ``[n_inputs]``)."""

    def __init__(self, nets: Sequence[NumpyQNet]) -> None:
        self.nets = list(nets)

    def __call__(self, state: np.ndarray) -> np.ndarray:
        q = self.nets[0](state).astype(np.float64)
        for net in self.nets[1:]:
            q += net(state)
        return q / len(self.nets)


def check_margins(margins) -> list[float]:
    """``switch_margins`` as floats >= 0 (null: infinity, never switch after the first choice)."""
    if not isinstance(margins, list | tuple) or not margins:
        raise ConfigError(
            f"switch_margins: expected a non-empty list of numbers >= 0 or null, got {margins!r}"
        )
    out = []
    for m in margins:
        if m is None:
            out.append(math.inf)
        elif isinstance(m, bool) or not isinstance(m, int | float) or not m >= 0:
            raise ConfigError(f"switch_margins: expected numbers >= 0 or null, got {m!r}")
        else:
            out.append(float(m))
    return out


class DQNModes(Scheduler, Trainable):
    """A learned mode scheduler (module docstring).

    Args:
        shares: the modes' shares of packets on path 0.
        reinject: the modes' tail re-injection values.
        rules: rules of the field that are modes too (``configs/agent`` names).
        hidden: hidden-layer widths of the Q-networks.
        gamma: discount per epoch (``target: td``).
        target: :data:`TARGETS`.
        switch_margins: the candidate margins (in Q's units: ``target: mc``,
            the log of the remaining time, so 0.1 is about 10 %; null: never
            switch after the first choice): a deployed model changes mode only for a mean Q-value gain
            above the margin; ``fit`` keeps the one with the lowest validation
            download time.
        constant_candidates: how many modes held for the whole download the
            selection may deploy instead of the Q-values: the ones with the
            lowest median behaviour download times, fastest first (so the
            learned policy is never judged worse than the constant modes it
            could have kept; more than one, because the behaviour's few seeds
            per mode rank close modes by chance). 0: the Q-values only.
        selection_statistic: what ranks the candidates on the validation
            episodes (:data:`baselines.dqn.selection.STATISTICS`): the
            interquartile mean of their log download times (the mean of the
            middle half: the suite scores medians, and a mean lets a few
            outage-hit downloads outvote the typical one), the mean or the median.
        lr, batch_size, tau, double_q, cql_alpha: :class:`baselines.dqn.learner.DQNConfig`
            (``cql_alpha``: conservative Q-learning, which keeps the greedy
            mode on what the log supports).
        seed: initial weights and mini-batches.
        first_mode: a rule of ``rules`` held in the first epoch, before the
            state says anything about the condition (then the Q-values
            choose; null: the Q-values from the first epoch). A rule that
            re-injects (``redundant``) keeps packets sent on a path that turns
            out to be in an outage from waiting for it. Applied when deployed
            and in the selection; not stored in the model file.
        probe: null, or ``{prefix, epochs, seeds, neighbours}``
            (:mod:`baselines.modes.probe`): one more candidate of the
            selection, which runs the mode ``prefix`` for ``epochs`` epochs and
            then holds the mode that was fastest from the nearest states of
            ``seeds`` probed downloads of the training condition (one
            condition only; its prefix, not ``first_mode``, opens its
            downloads). Stored in the model file when selected.
        model: a saved model (``model.h5`` or its folder) instead of training;
            with ``constant_candidates: 0`` its Q-policy is deployed even
            where its selection kept a constant mode or the probe (an ablation).
    """

    name = "dqn_modes"
    reinjects = True
    #: its decisions are its mode scheduler's, the compiled core's between epochs (envs.rules)
    native_rule = "modes"

    def __init__(
        self,
        shares: Sequence[float] = DEFAULT_SHARES,
        reinject: Sequence[bool] = (False, True),
        rules: Sequence[str] = DEFAULT_RULES,
        hidden: Sequence[int] = (64, 64),
        gamma: float = 0.98,
        lr: float = 1e-3,
        batch_size: int = 64,
        tau: float = 0.01,
        double_q: bool = True,
        cql_alpha: float = 0.0,
        target: str = "mc",
        switch_margins: Sequence[float | None] = DEFAULT_MARGINS,
        constant_candidates: int = 3,
        selection_statistic: str = "iqm",
        first_mode: str | None = None,
        switch_agreement: bool = False,
        probe: Mapping | None = None,
        seed: int = 0,
        model: str | None = None,
    ) -> None:
        if target not in TARGETS:
            raise ConfigError(f"target: unknown {target!r}; known: {list(TARGETS)}")
        self.target = target
        self.margins = check_margins(list(switch_margins))
        self.switch_margin = self.margins[0]
        if not is_whole_number(constant_candidates, 0):
            raise ConfigError(
                f"constant_candidates: expected a whole number >= 0, got {constant_candidates!r}"
            )
        self.constant_candidates = constant_candidates
        if selection_statistic not in STATISTICS:
            raise ConfigError(
                f"selection_statistic: unknown {selection_statistic!r}; known: {list(STATISTICS)}"
            )
        self.selection_statistic = selection_statistic
        #: a mode held for the whole download instead of the Q-values (the selected candidate), or None
        self.constant_mode: int | None = None
        self.modes = make_modes(list(shares), list(reinject), list(rules))
        self.hidden = tuple(int(h) for h in hidden)
        self.config = DQNConfig(
            lr=float(lr),
            batch_size=int(batch_size),
            tau=float(tau),
            double_q=bool(double_q),
            gamma=0.0 if target == "mc" else float(gamma),
            cql_alpha=float(cql_alpha),
        )
        self.first_mode = first_mode
        self.switch_agreement = check_flag(switch_agreement, "switch_agreement")
        self.seed = int(seed)
        self.q: Ensemble | None = None
        self.spec: QNetSpec | None = None
        #: the download's mode scheduler (made at reset), which takes every decision
        self.mode_scheduler: ModeScheduler | None = None
        self.probe_settings = check_probe(probe, self.modes, self.name)
        #: the selected probe candidate (deployed instead of the Q-values), or None
        self.probe_model: ProbeModel | None = None
        if model is not None:
            self.load(model)
        self._first()  # a first_mode that is not a mode: one error line now, not at the first decision

    # ------------------------------------------------------------ acting
    def policy(self) -> ModePolicy | ProbeChooser:
        """A fresh chooser for one download: the selected probe or constant
        mode, or the greedy mode of the mean Q-values with the selected switch margin."""
        if self.q is None:
            raise ConfigError(
                f"{self.name}: no trained model (train it with falcon.train, or give model=PATH)"
            )
        if self.probe_model is not None:
            return self.probe_model.chooser()
        return ModePolicy(
            self.q, self.switch_margin, self.constant_mode, self._first(), self.switch_agreement
        )

    def _first(self) -> int | None:
        """The index of ``first_mode`` among the modes, or None."""
        return mode_index(self.modes, self.first_mode, self.name)

    def reset(self, view: ConnectionView) -> None:
        self.mode_scheduler = ModeScheduler(self.modes, self.policy())
        self.mode_scheduler.reset(view)

    def decide(self, view: ConnectionView) -> int | Decision | None:
        return self.mode_scheduler.decide(view)

    # ------------------------------------------------------------ training
    def fit(
        self,
        scenario,
        app,
        seed: int = 0,
        seeds_per_mode: int = 24,
        switching_episodes: int = 120,
        switch_prob: float = 0.3,
        common_seeds: bool = False,
        branches: int = 1,
        gradient_steps: int = 4000,
        models: int = 4,
        validation_episodes: int = 128,
        policy_rounds: int = 0,
        policy_episodes: int = 60,
        deviate_prob: float = 0.1,
        online_episodes: int = 0,
        online_epsilon: float = 0.1,
        online_learning_starts: int = 200,
        online_updates_per_step: int = 4,
        tasks: Sequence[tuple] | None = None,
        log: Callable | None = None,
        progress: bool = True,
    ) -> dict:
        """Log, train ``models`` networks (their mean is the deployed Q), select
        the switch margin (module docstring); returns summary metrics.

        ``tasks``: ``[(scenario, app), ...]`` to train one policy for all of
        them instead of ``(scenario, app)`` (a generalist, deployed on
        conditions it has not seen). Each task is logged with the seeds
        ``seed + TASK_SEED_STRIDE * i + k``; its returns are in its own unit
        (a 20th of its median download time) and its epochs share one unit
        of sampling weight, so that a slow task neither dominates the fit nor
        the scale of the Q-values; validation episodes cycle over the tasks
        (episode ``k`` on task ``k mod n``, cost: mean log download time, so
        every task counts by its relative speed). The constant candidates are
        the modes with the lowest mean over tasks of their log median times.

        ``common_seeds``: every mode is held on the same behaviour seeds (paired
        comparisons: the constant candidates are ranked on the same networks);
        ``branches`` > 1: the switching episodes branch several modes from one
        seed's identical state (:func:`baselines.modes.experience.collect`).

        ``policy_rounds``: rounds of approximate policy iteration after the
        fit on the behaviour log (``target: mc`` only): each round logs
        ``policy_episodes`` downloads per task of the greedy policy of the
        current Q-values, each with one random mode at an epoch drawn with
        probability ``deviate_prob`` per epoch
        (:func:`baselines.modes.experience.collect_on_policy`; seeds ``seed +
        POLICY_SEED_OFFSET + POLICY_ROUND_STRIDE * r + k`` on task 0), adds
        their return-to-go from the deviation on (the value of a mode
        followed by the policy, where the behaviour log has the value of a
        mode held to the end) and fits the networks again on everything, so
        that the greedy policy can improve on the policy rather than only on
        the held modes.

        ``online_episodes`` (one condition only): one more candidate of the
        selection, a Q-network learned online on the condition as DQN-On on
        the mode MDP learns it (:func:`baselines.modes.online_dqn.online_dqn`:
        ``online_episodes`` epsilon-greedy downloads, seeds ``seed +
        ONLINE_CANDIDATE_OFFSET + ...``, reward unit the behaviour's), its
        greedy policy with each switch margin: it may switch on states the
        behaviour log's held modes never led to; the validation episodes
        decide whether it is deployed instead."""
        say = print if progress else None
        tasks = [(scenario, app)] if tasks is None else [tuple(t) for t in tasks]
        if not tasks:
            raise ConfigError(f"{self.name}: tasks: expected at least one (scenario, app)")
        train_on = self._check_rounds_and_online(
            len(tasks), policy_rounds, online_episodes, online_epsilon,
            online_learning_starts, online_updates_per_step,
        )  # fmt: skip
        self._check_behaviour(len(tasks), common_seeds, branches)
        logs = collect_tasks(
            tasks,
            self.modes,
            seed,
            seeds_per_mode,
            switching_episodes,
            switch_prob,
            say,
            once=self.target == "mc",
            common_seeds=common_seeds,
            branches=branches,
        )
        parts, units = [], []
        for episodes in logs:
            unit_s, rate_ref = reward_constants(episodes)
            parts.append(
                [mc_transitions(episodes, unit_s)]
                if self.target == "mc"
                else [transitions(episodes, self.config.gamma, unit_s, rate_ref)]
            )
            units.append(unit_s)
        data = pool([pool(p) for p in parts])
        mean = data.states.mean(0)
        spread = np.maximum(data.states.std(0), 1e-3)
        self.spec = QNetSpec(
            n_inputs(2),
            len(self.modes),
            self.hidden,
            input_offset=tuple(mean.tolist()),
            input_scale=tuple(spread.tolist()),
        )
        weights, losses = self._train(data, int(models), int(gradient_steps))
        self.q = Ensemble([NumpyQNet(w, self.spec) for w in weights])
        if policy_rounds:
            data = self._policy_rounds(tasks, parts, units, seed, policy_rounds, policy_episodes, deviate_prob, models, gradient_steps, say)  # fmt: skip
        online = (
            self._online_candidate(tasks[0], seed, units[0], train_on, say) if train_on else None
        )
        constants = (
            fastest_constant_modes(logs, len(self.modes), self.constant_candidates)
            if self.constant_candidates
            else []
        )
        probe = self._fit_probe(tasks, seed, say) if self.probe_settings else None
        best, record = self._select(
            tasks, seed, int(validation_episodes), say, constants, online and online[0], probe
        )
        online_selected = self._deploy(best, constants, online, probe)
        out = {
            "tasks": float(len(tasks)),
            "behaviour_episodes": float(sum(len(e) for e in logs)),
            "transitions": float(len(data.actions)),
            "policy_rounds": float(policy_rounds),
            "reward_unit_s": units[0] if len(units) == 1 else math.nan,
            "final_loss": float(np.mean(losses[-1])) if losses else math.nan,
            "switch_margin": self.switch_margin if math.isfinite(self.switch_margin) else -1.0,
            "constant_mode": -1.0 if self.constant_mode is None else float(self.constant_mode),
            "online_selected": 1.0 if online_selected else 0.0,
            "probe_selected": 1.0 if self.probe_model is not None else 0.0,
            "selected_mean_cost": float(record[best]["mean_cost"] or math.nan),
        }
        if log is not None:
            log({f"train/{self.name}/{k}": v for k, v in out.items()}, None)
        return out

    def _check_behaviour(self, n_tasks: int, common_seeds, branches) -> None:
        """The behaviour log's ``common_seeds`` and ``branches``, and a probe on one task only."""
        if self.probe_settings and n_tasks != 1:
            raise ConfigError(f"{self.name}: probe trains on one condition, not on tasks")
        if not isinstance(common_seeds, bool):
            raise ConfigError(
                f"{self.name}: common_seeds: expected true or false, got {common_seeds!r}"
            )
        if not is_whole_number(branches, 1):
            raise ConfigError(
                f"{self.name}: branches: expected a whole number >= 1, got {branches!r}"
            )

    def _check_rounds_and_online(
        self, n_tasks, policy_rounds, online_episodes, epsilon, learning_starts, updates
    ) -> dict | None:
        """``policy_rounds`` and the online candidate's settings checked before any
        logging; returns :func:`check_online_train`'s dict, or None without it."""
        if not is_whole_number(policy_rounds, 0):
            raise ConfigError(
                f"{self.name}: policy_rounds: expected a whole number >= 0, got {policy_rounds!r}"
            )
        if policy_rounds and self.target != "mc":
            raise ConfigError(f"{self.name}: policy_rounds needs target: mc, not {self.target!r}")
        if not online_episodes:
            return None
        if n_tasks != 1:
            raise ConfigError(f"{self.name}: online_episodes trains on one condition, not on tasks")
        return check_online_train(
            self.name, online_episodes, epsilon, learning_starts, updates, ONLINE_REPLAY_CAPACITY
        )

    def _online_candidate(self, task, seed: int, unit_s: float, train: dict, say):
        """``(Q-values, spec)`` of a network learned online on ``task`` (:meth:`fit`)."""
        scenario, app = task
        spec = QNetSpec(n_inputs(2), len(self.modes), self.hidden)
        weights, _ = online_dqn(
            spec, self.config, self.modes, scenario, app, seed + ONLINE_CANDIDATE_OFFSET,
            unit_s, train, net_seed=self.seed, name=self.name, say=say,
        )  # fmt: skip
        return Ensemble([NumpyQNet(weights, spec)]), spec

    def _fit_probe(self, tasks, seed: int, say) -> ProbeModel:
        """The probe candidate's data (:func:`baselines.modes.probe.fit_probe`) on the one task."""
        assert self.probe_settings is not None and len(tasks) == 1
        n = self.probe_settings["seeds"]
        (scenario, app) = tasks[0]
        model = fit_probe(
            scenario,
            app,
            self.modes,
            self.probe_settings,
            [seed + PROBE_SEED_OFFSET + k for k in range(n)],
        )
        if say is not None:
            say(f"{self.name}: probed {n} downloads x {len(self.modes)} modes")
        return model

    def _deploy(self, best: int, constants: Sequence[int], online, probe=None) -> bool:
        """Deploy the selection's candidate ``best`` (:meth:`_select`'s indices);
        True when it is the online candidate's."""
        nq, nc = len(self.margins), len(constants)
        no = nq if online is not None else 0
        self.probe_model = probe if probe is not None and best == nq + nc + no else None
        if self.probe_model is not None:
            return False
        self.constant_mode = constants[best - nq] if nq <= best < nq + nc else None
        if best < nq:
            self.switch_margin = self.margins[best]
        elif best >= nq + nc:
            self.q, self.spec = online
            self.switch_margin = self.margins[best - nq - nc]
        return best >= nq + nc

    def _policy_rounds(
        self, tasks, parts, units, seed, rounds, episodes, deviate_prob, models, steps, say
    ):
        """``rounds`` (>= 1) of approximate policy iteration (:meth:`fit`): ``parts[i]``
        (task ``i``'s transitions) grows by each round's on-policy downloads
        and ``self.q`` is fitted again on all of them; returns the last fit's data."""
        for r in range(int(rounds)):
            for i, (scen, app_i) in enumerate(tasks):
                episodes_i, starts = collect_on_policy(
                    scen,
                    app_i,
                    self.modes,
                    lambda: ModePolicy(self.q, 0.0, first=self._first()),
                    seed + TASK_SEED_STRIDE * i + POLICY_SEED_OFFSET + POLICY_ROUND_STRIDE * r,
                    episodes,
                    deviate_prob,
                )
                parts[i].append(mc_transitions(episodes_i, units[i], starts))
            data = pool([pool(p) for p in parts])
            weights, _ = self._train(data, int(models), int(steps))
            self.q = Ensemble([NumpyQNet(w, self.spec) for w in weights])
            if say is not None:
                say(f"modes: policy round {r + 1}/{rounds}: {len(data.actions)} transitions")
        return data

    def _train(self, data, n_models: int, steps: int):
        """``(final weight list of each of n_models networks, per-step losses)``."""
        if n_models < 1 or steps < 1:
            raise ConfigError("modes: models and gradient_steps must be >= 1")
        learner = BatchedDQN(self.spec, n_models, self.config, seed=self.seed)
        rng = np.random.default_rng(self.seed + 1)
        n, b = len(data.actions), self.config.batch_size
        losses = []
        for _ in range(steps):
            idx = (
                rng.integers(0, n, size=(n_models, b))
                if data.weights is None
                else rng.choice(n, size=(n_models, b), p=data.weights)
            )
            loss = learner.update(
                data.states[idx],
                data.actions[idx],
                data.rewards[idx],
                data.next_states[idx],
                data.dones[idx],
            )
            losses.append(loss.detach().numpy())
        return [learner.get_weights(m) for m in range(n_models)], losses

    def _select(
        self, tasks, seed: int, budget: int, say, constants: Sequence[int], online=None, probe=None
    ):
        """The candidate with the lowest ``selection_statistic`` of its log
        download times on validation episodes (episode ``k`` on task ``k mod
        len(tasks)``): a switch margin
        (index into ``margins``), or, index ``len(margins) + j``, holding the
        mode ``constants[j]``, or, index ``len(margins) + len(constants) + m``,
        the Q-values ``online`` with the switch margin ``margins[m]``, or, the
        last index, the ``probe``."""
        nq, nc = len(self.margins), len(constants)
        no = nq if online is not None else 0
        n = nq + nc + no + (1 if probe is not None else 0)
        if n == 1:
            return 0, [{"candidate": 0, "episodes": 0, "mean_cost": None, "cost": None}]

        def evaluate(i: int, k: int) -> float:
            policy: ModePolicy | ProbeChooser
            if probe is not None and i == nq + nc + no:
                policy = probe.chooser()
            elif i < nq:
                policy = ModePolicy(
                    self.q, self.margins[i], first=self._first(), agree=self.switch_agreement
                )
            elif i < nq + nc:
                policy = ModePolicy(None, constant=constants[i - nq])
            else:
                policy = ModePolicy(online, self.margins[i - nq - nc], first=self._first())
            sched = ModeScheduler(self.modes, policy)
            scenario, app = tasks[k % len(tasks)]
            return download_cost(
                run_episode(scenario, app, sched, seed=seed + VALIDATION_SEED_OFFSET + k).metrics
            )

        return successive_halving(
            n, evaluate, max(budget, n), progress=say, statistic=self.selection_statistic
        )

    # ------------------------------------------------------------ files
    def save(self, directory) -> Path:
        """``directory/model.h5`` (:mod:`baselines.modes.files`)."""
        if self.q is None:
            raise ConfigError(f"{self.name}: nothing to save (not trained)")
        return files.write_model(
            Path(directory) / "model.h5",
            [n.weights for n in self.q.nets],
            self.spec,
            self.modes,
            self.switch_margin,
            self.constant_mode,
            self.probe_model,
        )

    def load(self, path) -> None:
        members, self.spec, self.modes, self.switch_margin, self.constant_mode, probe = (
            files.read_model(path)
        )
        self.probe_model = probe
        self.margins = [self.switch_margin]
        self.q = Ensemble([NumpyQNet(w, self.spec) for w in members])
        if not self.constant_candidates:  # the Q-policy, not the kept constant mode or probe
            self.constant_mode = None
            self.probe_model = None


__all__ = ["DQNModes", "ModePolicy", "TARGETS", "Ensemble", "hold_or_switch", "check_margins"]
