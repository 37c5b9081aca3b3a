"""Behaviour data and transitions of the mode MDP (:mod:`baselines.modes`).

**Behaviour.** Every mode held for a whole download on ``seeds_per_mode``
seeds (so the log contains every member of the oracle family's grid that
the modes span, the single paths among them), then ``switching_episodes``
episodes that start in a random mode and switch to a uniformly random one at
each epoch with probability ``switch_prob`` (so the log contains mode
changes, and their consequences, in states the constant modes reach).

**Reward.** Per epoch ``k`` (decision at ``t_k``, the next at ``t_{k+1}``, the
last epoch ending when the download completes):
``r_k = -(t_{k+1} - t_k) / u + gamma * phi_{k+1} - phi_k`` with the potential
``phi = -unacknowledged bytes / (rate_ref * u)`` (0 at completion). The
shaping is potential-based (Ng, Harada and Russell, ICML 1999), so the
optimal policy is that of ``-download time``; it tells an epoch that moved
data from one that did not, long before the download ends. The condition's
constants: ``u`` = its median behaviour download time / :data:`EPOCHS_PER_MEDIAN`
(an episode's return is then about ``-EPOCHS_PER_MEDIAN`` whatever the
bandwidth), ``rate_ref`` = the median of the episodes' first unacknowledged
bytes / that median time [bytes/s].
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from baselines.modes.scheduler import ModeScheduler
from envs import run_episode
from envs.errors import ConfigError

#: the reward's time unit is the median behaviour download time / this
EPOCHS_PER_MEDIAN = 20.0


@dataclass
class Episode:
    """One logged download: per decision the state, mode, time [s] and
    unacknowledged bytes; ``end_s``: when it completed or was cut at the
    scenario's time limit (``truncated``) [s, the same clock]."""

    states: np.ndarray
    modes: np.ndarray
    times: np.ndarray
    unacked: np.ndarray
    end_s: float
    download_time_s: float
    truncated: bool = False


class _Behaviour:
    """A chooser: a fixed mode, or a random mode that changes at each epoch with
    probability ``switch_prob`` (``once``: at most one change, then held)."""

    def __init__(
        self,
        n_modes: int,
        rng: np.random.Generator | None,
        fixed: int | None,
        switch_prob: float,
        once: bool = False,
    ):
        self.n, self.rng, self.fixed, self.p, self.once = n_modes, rng, fixed, switch_prob, once
        self.current = fixed if fixed is not None else int(rng.integers(n_modes))
        self.switched = False

    def __call__(self, state) -> int:
        if self.fixed is None and not (self.once and self.switched) and self.rng.random() < self.p:
            self.current = int(self.rng.integers(self.n))
            self.switched = True
        return self.current


class Branch:
    """A chooser: mode ``prefix`` for the first ``epochs`` epochs, then ``target``
    held (the branches of one seed share the prefix, decision for decision)."""

    def __init__(self, prefix: int, epochs: int, target: int):
        self.prefix, self.epochs, self.target, self.epoch = prefix, epochs, target, 0

    def __call__(self, state) -> int:
        mode = self.prefix if self.epoch < self.epochs else self.target
        self.epoch += 1
        return mode


def log_episode(scenario, app, modes, chooser, seed: int) -> Episode:
    """Run one download with ``chooser`` and return its log (an episode cut at
    the scenario's time limit is kept, ``truncated``, its download time the
    time limit: a lower bound)."""
    sched = ModeScheduler(modes, chooser)
    m = run_episode(scenario, app, sched, seed=seed).metrics
    if not sched.trace:
        raise ConfigError(f"modes: a behaviour episode (seed {seed}) made no decision")
    states, chosen, times, unacked = zip(*sched.trace)
    done = math.isfinite(m["download_time_s"])
    return Episode(
        np.stack(states),
        np.asarray(chosen, np.int64),
        np.asarray(times),
        np.asarray(unacked),
        float(m["elapsed_s"]),
        float(m["download_time_s"] if done else m["elapsed_s"]),
        not done,
    )


def collect(
    scenario,
    app,
    modes,
    seed: int,
    seeds_per_mode: int,
    switching_episodes: int,
    switch_prob: float,
    progress=None,
    once: bool = False,
    common_seeds: bool = False,
    branches: int = 1,
) -> list[Episode]:
    """The behaviour log (module docstring); seeds ``seed + k``; ``once``: the
    switching episodes change mode at most once; ``common_seeds``: every mode
    is held on the same seeds ``seed, ..., seed + seeds_per_mode - 1`` (then
    the switching episodes), else each mode on its own; ``branches`` > 1: the
    switching episodes come in groups of that many on one seed, each a
    random mode for a drawn number of epochs (at least one, geometric with
    ``switch_prob``), then a different one of the group's distinct modes held
    (:class:`Branch`): the values of several modes from the very same state."""
    rng = np.random.default_rng(seed)
    episodes, k = [], 0
    for mode in range(len(modes)):
        if common_seeds:
            k = 0
        for _ in range(int(seeds_per_mode)):
            episodes.append(
                log_episode(scenario, app, modes, _Behaviour(len(modes), None, mode, 0.0), seed + k)
            )
            k += 1
    if int(branches) > 1:
        n = len(modes)
        for _ in range(-(-int(switching_episodes) // int(branches))):
            prefix, epochs = int(rng.integers(n)), int(rng.geometric(switch_prob))
            for target in rng.choice(n, size=min(int(branches), n), replace=False):
                episodes.append(
                    log_episode(scenario, app, modes, Branch(prefix, epochs, int(target)), seed + k)
                )
            k += 1
    else:
        for _ in range(int(switching_episodes)):
            behaviour = _Behaviour(len(modes), rng, None, switch_prob, once)
            episodes.append(log_episode(scenario, app, modes, behaviour, seed + k))
            k += 1
    if progress is not None:
        progress(
            f"modes: logged {len(episodes)} behaviour episodes, "
            f"{sum(len(e.modes) for e in episodes)} decisions"
        )
    return episodes


#: task ``i`` of several is logged with the seeds ``seed + TASK_SEED_STRIDE * i + k``
TASK_SEED_STRIDE = 100_000


def collect_tasks(
    tasks: Sequence[tuple],
    modes,
    seed: int,
    seeds_per_mode: int,
    switching_episodes: int,
    switch_prob: float,
    progress=None,
    once: bool = False,
    common_seeds: bool = False,
    branches: int = 1,
) -> list[list[Episode]]:
    """:func:`collect` on every ``(scenario, app)`` of ``tasks``, task ``i`` from
    the seed ``seed + TASK_SEED_STRIDE * i``; one log per task."""
    return [
        collect(
            scen,
            app,
            modes,
            seed + TASK_SEED_STRIDE * i,
            seeds_per_mode,
            switching_episodes,
            switch_prob,
            progress,
            once,
            common_seeds,
            branches,
        )
        for i, (scen, app) in enumerate(tasks)
    ]


class _Deviating:
    """The chooser of an on-policy episode: ``policy`` (a fresh chooser of the
    learned policy) at every epoch but one, where a uniformly random mode is
    taken instead; that epoch is drawn with probability ``deviate_prob`` at
    each epoch until one is (:attr:`deviated_at`; None: the episode followed
    the policy throughout)."""

    def __init__(self, policy, n_modes: int, rng: np.random.Generator, deviate_prob: float):
        self.policy, self.n, self.rng, self.p = policy, n_modes, rng, deviate_prob
        self.epoch = 0
        self.deviated_at: int | None = None

    def __call__(self, state) -> int:
        mode = self.policy(state)
        if self.deviated_at is None and self.rng.random() < self.p:
            self.deviated_at = self.epoch
            mode = int(self.rng.integers(self.n))
            self.policy.current = mode  # the policy goes on from the mode in force
        self.epoch += 1
        return mode


def collect_on_policy(
    scenario, app, modes, make_policy, seed: int, episodes: int, deviate_prob: float
) -> tuple[list[Episode], list[int]]:
    """``episodes`` downloads of the policy ``make_policy()`` (a fresh chooser
    per download) with one random deviation each (:class:`_Deviating`), seeds
    ``seed + k``; returns the episodes and, per episode, the first epoch whose
    return-to-go is that of its mode followed by the policy (the deviation's,
    or 0 when there was none), for :func:`mc_transitions`' ``starts``."""
    if not 0.0 < float(deviate_prob) <= 1.0:
        raise ConfigError(f"modes: deviate_prob must be in (0, 1], got {deviate_prob!r}")
    rng = np.random.default_rng(seed)
    out, starts = [], []
    for k in range(int(episodes)):
        chooser = _Deviating(make_policy(), len(modes), rng, float(deviate_prob))
        out.append(log_episode(scenario, app, modes, chooser, seed + k))
        starts.append(chooser.deviated_at or 0)
    return out, starts


@dataclass
class Transitions:
    """Arrays over transitions; ``weights``: sampling probabilities (None: uniform)."""

    states: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    next_states: np.ndarray
    dones: np.ndarray
    weights: np.ndarray | None = None


def constant_mode_times(episodes: Sequence[Episode]) -> dict[int, list[float]]:
    """Download times [s] of the episodes that held one mode throughout, by mode."""
    times: dict[int, list[float]] = {}
    for e in episodes:
        if len(set(e.modes.tolist())) == 1:
            times.setdefault(int(e.modes[0]), []).append(e.download_time_s)
    return times


def constant_mode_costs(logs: Sequence[Sequence[Episode]], n_modes: int) -> np.ndarray:
    """``[n_modes]``: each mode held throughout, its mean over the tasks of the
    log of its median constant-mode download time [log s] (one task: the log
    of its median), so that every task counts by its relative speed; ``inf``
    for a mode some task never held throughout."""
    cost = np.zeros(n_modes)
    for episodes in logs:
        times = constant_mode_times(episodes)
        cost += [
            math.log(max(float(np.median(times[m])), 1e-9)) if m in times else math.inf
            for m in range(n_modes)
        ]
    return cost / max(len(logs), 1)


def fastest_constant_modes(logs: Sequence[Sequence[Episode]], n_modes: int, k: int) -> list[int]:
    """Up to ``k`` modes held throughout with the lowest :func:`constant_mode_costs`,
    fastest first (ties: the lower index); only modes every task held throughout."""
    cost = constant_mode_costs(logs, n_modes)
    held = [m for m in range(n_modes) if math.isfinite(cost[m])]
    if not held:
        raise ConfigError(
            "modes: no constant-mode episode to choose a constant mode from (seeds_per_mode >= 1)"
        )
    return sorted(held, key=lambda m: (cost[m], m))[: max(int(k), 0)]


def pool(parts: Sequence[Transitions]) -> Transitions:
    """The transitions of several tasks as one set; each task's sampling
    weights are scaled to sum to ``1 / len(parts)`` (uniform weights where a
    task has none), so every task has the same share of the mini-batches."""
    if len(parts) == 1:
        return parts[0]
    weights = [
        (
            np.full(len(p.actions), 1.0 / len(p.actions))
            if p.weights is None
            else p.weights / p.weights.sum()
        )
        / len(parts)
        for p in parts
    ]
    return Transitions(
        np.concatenate([p.states for p in parts]),
        np.concatenate([p.actions for p in parts]),
        np.concatenate([p.rewards for p in parts]),
        np.concatenate([p.next_states for p in parts]),
        np.concatenate([p.dones for p in parts]),
        np.concatenate(weights),
    )


def reward_constants(episodes: Sequence[Episode]) -> tuple[float, float]:
    """``(u [s], rate_ref [bytes/s])`` of a condition (module docstring)."""
    median = float(np.median([e.download_time_s for e in episodes]))
    first = float(np.median([e.unacked[0] for e in episodes]))
    return median / EPOCHS_PER_MEDIAN, first / max(median, 1e-9)


def mc_transitions(
    episodes: Sequence[Episode], unit_s: float, starts: Sequence[int] | None = None
) -> Transitions:
    """Each episode's epochs from its last change of mode on (every epoch of a
    constant-mode episode), with their return-to-go as a terminal reward:
    ``r_k = -log(1 + (end - t_k) / u)``, done. A Q-network fitted to them (a
    DQN update with ``gamma = 0`` is a regression) estimates, per mode, the
    log of the remaining download time if that mode is held from the state
    on. The log, because download times over real traces are heavy-tailed
    (one outage can make a download ten times the median) while the suite
    ranks medians: fitted to the time itself, the mean is what is estimated,
    and a mode with the best median and a rare outage loses to a mode that is
    mediocre every time (measured on lte_wifi: ECF, median 0.50 s, mean
    1.80 s). Acting
    greedily on it is generalised policy improvement over the modes (Barreto
    et al., NeurIPS 2017): never worse than holding the best of them, where
    the estimates are right. An episode that changed mode once contributes the
    epochs after the change: the value of a mode from a state another mode
    led to, which constant episodes never show. ``weights``: each episode's
    epochs share one unit of weight, so a slow episode (many epochs) does not
    outweigh a fast one.

    ``starts``: per episode the first epoch to use instead (an on-policy
    episode's epoch of deviation, :func:`collect_on_policy`: from there on
    its return-to-go is that of its mode, then the policy)."""
    s, r, a, w = [], [], [], []
    for j, e in enumerate(episodes):
        if starts is None:
            changes = np.flatnonzero(e.modes[1:] != e.modes[:-1])
            start = int(changes[-1]) + 1 if len(changes) else 0
        else:
            start = int(starts[j])
        s.append(e.states[start:])
        r.append(-np.log1p((e.end_s - e.times[start:]) / unit_s))
        a.append(e.modes[start:])
        w.append(np.full(len(e.modes) - start, 1.0 / (len(e.modes) - start)))
    states = np.concatenate(s).astype(np.float32)
    n = len(states)
    return Transitions(
        states,
        np.concatenate(a),
        np.concatenate(r).astype(np.float32),
        states.copy(),
        np.ones(n, np.float32),
        np.concatenate(w) / len(episodes),
    )


def transitions(
    episodes: Sequence[Episode], gamma: float, unit_s: float, rate_ref: float
) -> Transitions:
    """Every episode's epochs as ``(s, a, r, s', done)`` (module docstring)."""
    s, a, r, s2, d = [], [], [], [], []
    for e in episodes:
        n = len(e.modes)
        ends = np.append(e.times[1:], e.end_s)
        phi = -e.unacked / (rate_ref * unit_s)
        phi_next = np.append(phi[1:], phi[-1] if e.truncated else 0.0)
        r.append(-(ends - e.times) / unit_s + gamma * phi_next - phi)
        s.append(e.states)
        a.append(e.modes)
        # the last s' is bootstrapped only for a cut episode (from its last state: the best guess there is)
        s2.append(np.concatenate([e.states[1:], e.states[-1:]]))
        d.append(np.append(np.zeros(n - 1), 0.0 if e.truncated else 1.0))
    return Transitions(
        np.concatenate(s).astype(np.float32),
        np.concatenate(a),
        np.concatenate(r).astype(np.float32),
        np.concatenate(s2).astype(np.float32),
        np.concatenate(d).astype(np.float32),
    )


__all__ = [
    "Episode",
    "Transitions",
    "EPOCHS_PER_MEDIAN",
    "Branch",
    "log_episode",
    "collect",
    "collect_tasks",
    "collect_on_policy",
    "TASK_SEED_STRIDE",
    "reward_constants",
    "transitions",
    "mc_transitions",
    "constant_mode_costs",
    "fastest_constant_modes",
]
