"""FALCON's meta-model bank on the mode MDP (:mod:`baselines.modes`).

The completion-MDP bank (:mod:`metalearning.bank`) holds one per-packet
Q-network per cell of a grid of loss, RTT and RTT spread: its meta-models
imitate ECF and minRTT, and no cell of it holds "leave the path that
collapses" (docs/explanation/falcon.md). This bank holds mode Q-networks
(a mode per epoch: a traffic split, a rule of the field, tail re-injection;
Q = the log of the remaining download time if the mode is held), and its
cells are learned from tasks, not fixed by a grid:

1. **Tasks.** Two-path conditions of the train split (a condition list and
   pairs recombined from its paths, :func:`falcon.experiments.condition_lists.recombined_tasks`),
   each logged with every mode held and with mode changes
   (:func:`baselines.modes.experience.collect`); MC transitions in the
   task's own time unit.
2. **Cells.** A task's *profile* is the log median download time of every
   mode held throughout, minus its best: which modes work there. The
   profiles are clustered (k-means, ``cells`` clusters): a cell is a set of
   conditions where the same modes win (an outage-prone path is one where the
   re-injecting modes win, whatever its rate and RTT).
3. **Meta-models.** ``Theta`` is trained over all tasks, then each cell's
   meta-model continues from ``Theta`` on its own tasks only (``members``
   chains per cell, an ensemble: one network's estimate of a remaining time
   is noisy enough to switch modes on noise). ``training: reptile``: with
   Reptile (Nichol et al., 2018), FALCON's meta-learning, an initialisation
   that adapts in a few steps; ``joint``: ordinary DQN steps on the tasks
   pooled (each task the same share), the best estimate before any step
   (:mod:`falcon.online.modes` has the measurements).
4. **Condition estimation.** A classifier (the same network shape, one
   output per cell, cross-entropy) learns the cell of a task from every
   state logged on it; online (:mod:`falcon.online.modes`) its
   log-probabilities are averaged over the epochs seen on a condition, so
   the estimate sharpens with evidence and carries across downloads.

Everything random is seeded from ``seed``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from baselines.dqn.learner import BatchedDQN, DQNConfig
from baselines.dqn.network import NumpyQNet, QNetSpec
from baselines.modes.experience import (
    Episode,
    Transitions,
    constant_mode_times,
    mc_transitions,
    reward_constants,
)
from baselines.modes.history import check_downloads, with_history
from baselines.modes.learner import Ensemble
from envs.errors import ConfigError
from metalearning.reptile import _load_stack, _read_stack, initial_params, reptile_step

#: how the meta-models are trained: ``reptile`` (FALCON's: an initialisation that
#: adapts in a few steps) or ``joint`` (ordinary DQN steps on the pooled tasks:
#: the best zero-shot estimate; the ablation of the meta-learning)
TRAININGS = ("reptile", "joint")


@dataclass
class ModeBank:
    """Cells of mode meta-models and the classifier that tells them apart.

    ``spec``: the Q-networks' architecture (inputs normalised by the pooled
    log); ``cells[c][e]``: weight list ``[W0, b0, ...]`` of member ``e`` of
    cell ``c``; ``meta``: the members of ``Theta``, the meta-model of every
    task (the ``selection: global`` ablation); ``classifier`` / ``classifier_spec``:
    the cell classifier; ``cell_tasks``: task indices per cell;
    ``history_downloads``: the past downloads the condition memory of
    :mod:`baselines.modes.history` summarises (0: the states have none)."""

    modes: list
    spec: QNetSpec
    cells: list[list[list[np.ndarray]]]
    meta: list[list[np.ndarray]]
    classifier: list[np.ndarray]
    classifier_spec: QNetSpec
    cell_tasks: list[list[int]]
    history_downloads: int = 0

    def __post_init__(self) -> None:
        self._q = [Ensemble([NumpyQNet(w, self.spec) for w in c]) for c in self.cells]
        self._meta = Ensemble([NumpyQNet(w, self.spec) for w in self.meta])
        self._cls = NumpyQNet(self.classifier, self.classifier_spec)

    @property
    def n_cells(self) -> int:
        return len(self.cells)

    def q(self, cell: int | None) -> Ensemble:
        """The meta-model of ``cell`` (None: ``Theta``)."""
        return self._meta if cell is None else self._q[cell]

    def cell_log_probs(self, state: np.ndarray) -> np.ndarray:
        """``log p(cell | state)`` ``[n_cells]``."""
        z = self._cls(state).astype(np.float64)
        z -= z.max()
        return z - math.log(float(np.exp(z).sum()))


# ---------------------------------------------------------------- cells
def profile(episodes: Sequence[Episode], n_modes: int) -> np.ndarray:
    """Log median download time of every mode held throughout, minus the best ``[n_modes]``."""
    times = constant_mode_times(episodes)
    if len(times) < n_modes:
        raise ConfigError(
            "mode bank: a task has no episode holding some mode (seeds_per_mode >= 1)"
        )
    v = np.array([math.log(max(float(np.median(times[m])), 1e-9)) for m in range(n_modes)])
    return v - v.min()


def kmeans(points: np.ndarray, k: int, seed: int, iterations: int = 100) -> np.ndarray:
    """Cluster labels ``[n]`` of Lloyd's k-means, seeded k-means++ start; empty
    clusters are dropped and the labels renumbered in order of first task.
    (A few dozen points: the twenty lines here instead of a new dependency.)"""
    n = len(points)
    k = min(int(k), n)
    rng = np.random.default_rng(seed)
    centres = [points[int(rng.integers(n))]]
    for _ in range(1, k):
        d = np.min([((points - c) ** 2).sum(1) for c in centres], axis=0)
        centres.append(points[int(rng.choice(n, p=d / d.sum()))] if d.sum() > 0 else points[0])
    c = np.array(centres)
    labels = np.zeros(n, np.int64)
    for _ in range(iterations):
        labels_new = np.argmin(((points[:, None, :] - c[None]) ** 2).sum(-1), axis=1)
        if _ and np.array_equal(labels_new, labels):
            break
        labels = labels_new
        c = np.array(
            [points[labels == j].mean(0) if (labels == j).any() else c[j] for j in range(k)]
        )
    order = list(dict.fromkeys(labels.tolist()))
    return np.array([order.index(x) for x in labels], np.int64)


# ---------------------------------------------------------------- Reptile
def _batches(parts: Sequence[Transitions], tasks: np.ndarray, steps: int, size: int, rng):
    """Mini-batches ``[steps, M, size, ...]``, model ``m`` drawing from task ``tasks[m]``
    by its sampling weights."""
    idx = [
        rng.choice(
            len(parts[t].actions), size=(steps, size), p=parts[t].weights / parts[t].weights.sum()
        )
        for t in tasks
    ]

    def stack(key):
        return np.stack(
            [getattr(parts[t], key)[i] for t, i in zip(tasks, idx, strict=True)], axis=1
        )

    return tuple(stack(k) for k in ("states", "actions", "rewards", "next_states", "dones"))


def reptile(
    spec: QNetSpec,
    config: DQNConfig,
    parts: Sequence[Transitions],
    groups: Sequence[Sequence[int]],
    thetas: np.ndarray,
    iterations: int,
    inner_steps: int,
    meta_lr: float,
    seed: int,
) -> np.ndarray:
    """Reptile chains side by side: chain ``m`` (``thetas[m]``, ``[M, P]``)
    samples its tasks from ``groups[m]``; each iteration, ``inner_steps`` DQN
    steps from ``Theta`` on one task, then ``Theta += lambda_i (W - Theta)``,
    ``lambda_i`` annealed linearly from ``meta_lr`` towards 0. Returns ``[M, P]``."""
    rng = np.random.default_rng(seed)
    learner = BatchedDQN(spec, len(thetas), config, seed=seed, threads=1)
    for i in range(int(iterations)):
        tasks = np.array([g[int(rng.integers(len(g)))] for g in groups])
        batches = _batches(parts, tasks, int(inner_steps), config.batch_size, rng)
        lam = meta_lr * (1.0 - i / max(int(iterations), 1))
        thetas, _ = reptile_step(learner, thetas, batches, lam)
    return thetas


def joint(
    spec: QNetSpec,
    config: DQNConfig,
    parts: Sequence[Transitions],
    groups: Sequence[Sequence[int]],
    thetas: np.ndarray,
    steps: int,
    seed: int,
) -> np.ndarray:
    """Chains side by side, ``steps`` ordinary DQN steps each from ``thetas``
    ``[M, P]``: chain ``m``'s mini-batch of a step is drawn from one task of
    ``groups[m]`` (uniform), so every task weighs the same. Returns ``[M, P]``."""
    rng = np.random.default_rng(seed)
    learner = BatchedDQN(spec, len(thetas), config, seed=seed, threads=1)
    _load_stack(learner, thetas)
    for _ in range(int(steps)):
        tasks = np.array([g[int(rng.integers(len(g)))] for g in groups])
        s, a, r, s2, d = _batches(parts, tasks, 1, config.batch_size, rng)
        learner.update(s[0], a[0], r[0], s2[0], d[0])
    return _read_stack(learner)


def _train_classifier(spec: QNetSpec, states, labels, weights, steps: int, lr: float, seed: int):
    """Cross-entropy fit of a :class:`QNetSpec`-shaped network: logits of the cell of each
    state, mini-batches drawn by ``weights``; its weight list."""
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    layers = [spec.n_inputs, *spec.hidden, spec.n_actions]
    params = []
    for i, o in zip(layers[:-1], layers[1:], strict=True):
        params += [torch.randn(i, o) * math.sqrt(2.0 / i), torch.zeros(o)]
    for p in params:
        p.requires_grad_(True)
    opt = torch.optim.Adam(params, lr=lr)
    off = torch.tensor(spec.input_offset, dtype=torch.float32)
    scale = torch.tensor(spec.input_scale, dtype=torch.float32)
    x_all = torch.from_numpy(states.astype(np.float32))
    y_all = torch.from_numpy(labels.astype(np.int64))
    p = weights / weights.sum()
    for _ in range(int(steps)):
        i = torch.from_numpy(rng.choice(len(labels), size=256, p=p))
        h = (x_all[i] - off) / scale
        for k in range(0, len(params) - 2, 2):
            h = torch.relu(h @ params[k] + params[k + 1])
        loss = torch.nn.functional.cross_entropy(h @ params[-2] + params[-1], y_all[i])
        opt.zero_grad()
        loss.backward()
        opt.step()
    return [p.detach().numpy().astype(np.float32) for p in params]


def build_mode_bank(
    logs: Sequence[Sequence[Episode]],
    modes: list,
    *,
    cells: int = 6,
    members: int = 2,
    hidden: Sequence[int] = (64, 64),
    config: DQNConfig | None = None,
    meta_iterations: int = 2000,
    cell_iterations: int = 1000,
    inner_steps: int = 8,
    meta_lr: float = 0.5,
    classifier_steps: int = 2000,
    training: str = "reptile",
    history_downloads: int = 0,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
) -> tuple[ModeBank, dict]:
    """The bank of the module docstring from one behaviour log per task; ``(bank, metrics)``.
    ``history_downloads`` > 0: the states carry the condition memory of
    :mod:`baselines.modes.history` (each episode twice: no past, and up to
    that many other episodes of its task as the past)."""
    config = config or DQNConfig(gamma=0.0)
    if len(logs) < 2:
        raise ConfigError(f"mode bank: needs at least 2 tasks, got {len(logs)}")
    history_downloads = check_downloads(history_downloads)
    if history_downloads:
        logs = with_history(logs, history_downloads, seed)
    parts = [mc_transitions(ep, reward_constants(ep)[0]) for ep in logs]
    states = np.concatenate([p.states for p in parts])
    mean, spread = states.mean(0), np.maximum(states.std(0), 1e-3)
    spec = QNetSpec(
        states.shape[1],
        len(modes),
        tuple(int(h) for h in hidden),
        "relu",
        tuple(mean.tolist()),
        tuple(spread.tolist()),
    )
    labels = kmeans(np.stack([profile(ep, len(modes)) for ep in logs]), cells, seed)
    n_cells, e = int(labels.max()) + 1, int(members)
    cell_tasks = [np.flatnonzero(labels == c).tolist() for c in range(n_cells)]
    all_tasks = list(range(len(logs)))
    theta0 = np.stack([initial_params(spec, seed + m) for m in range(e)])
    if training not in TRAININGS:
        raise ConfigError(f"training: unknown {training!r}; known: {list(TRAININGS)}")

    def train(groups, thetas, iterations, chain_seed):
        if training == "joint":
            return joint(spec, config, parts, groups, thetas, iterations * inner_steps, chain_seed)
        return reptile(
            spec, config, parts, groups, thetas, iterations, inner_steps, meta_lr, chain_seed
        )

    meta = train([all_tasks] * e, theta0, meta_iterations, seed)
    if progress:
        progress(
            f"mode bank: Theta after {meta_iterations} {training} iterations over {len(logs)} tasks"
        )
    start = np.repeat(meta, n_cells, axis=0)  # row c * e + m: member m of cell c
    groups = [cell_tasks[r // e] for r in range(n_cells * e)]
    cell_thetas = train(groups, start, cell_iterations, seed + 1)
    cls_spec = QNetSpec(
        spec.n_inputs, n_cells, spec.hidden, "relu", spec.input_offset, spec.input_scale
    )
    weights = np.concatenate([p.weights / p.weights.sum() for p in parts])
    cls_labels = np.concatenate([np.full(len(p.actions), labels[t]) for t, p in enumerate(parts)])
    classifier = _train_classifier(
        cls_spec, states, cls_labels, weights, classifier_steps, 1e-3, seed + 2
    )
    learner = BatchedDQN(spec, 1, config, seed=seed)
    bank = ModeBank(
        list(modes),
        spec,
        [[learner.split_flat(cell_thetas[c * e + m]) for m in range(e)] for c in range(n_cells)],
        [learner.split_flat(meta[m]) for m in range(e)],
        classifier,
        cls_spec,
        cell_tasks,
        history_downloads,
    )
    hits = np.mean(
        [
            np.argmax(bank.cell_log_probs(s)) == y
            for s, y in zip(states[::7], cls_labels[::7], strict=True)
        ]
    )
    if progress:
        progress(
            f"mode bank: {n_cells} cells of {[len(t) for t in cell_tasks]} tasks; "
            f"classifier right on {hits:.0%} of the logged states"
        )
    return bank, {
        "cells": float(n_cells),
        "tasks": float(len(logs)),
        "classifier_accuracy": float(hits),
    }


__all__ = ["ModeBank", "build_mode_bank", "profile", "kmeans", "reptile", "joint", "TRAININGS"]
