"""Reptile over DQN parameters, batched over many condition cells.

FALCON's meta-models (Wu et al., arXiv 2022, Sec. IV-A, V-A)
are one DQN per condition cell, each meta-trained with Reptile (Nichol et al.
2018) on tasks sampled inside its cell. One meta-iteration ``i`` of a cell
with meta-parameters ``Theta``:

1. sample a task (a scenario) inside the cell
   (:meth:`metalearning.grid.ConditionGrid.sample_task`);
2. collect its experience by acting with ``Theta``, eps-greedy with
   ``epsilon`` = eps_l = 0.3 (:mod:`metalearning.collect`);
3. ``W`` = ``Theta`` after ``inner_steps`` (K = 16) DQN mini-batch steps
   (size 32) on that experience: online and target networks both start at
   ``Theta``, Adam starts from zero moments;
4. ``Theta <- Theta + lambda_i (W - Theta)``, with ``lambda_i`` annealed
   linearly from ``meta_lr`` (0.1) at the first meta-iteration towards
   ``meta_lr_final`` (0) over ``meta_iterations`` (the schedule of the Reptile
   reference code: ``lambda_i = meta_lr + (meta_lr_final - meta_lr) i / N``,
   so the last iteration still moves).

:func:`reptile_cells` runs this for ``M`` cells at once: the tasks are
collected one after another, then the ``M`` inner loops are one
:class:`~baselines.dqn.learner.BatchedDQN` of ``M`` models (each model's
mini-batches drawn from its own task), so the inner loops of a whole chunk of
the bank cost about as much as a few single ones.

Reproducibility: everything random in a cell's meta-iteration (task, emulation
and exploration, mini-batch indices) is seeded from ``(seed, cell,
iteration)`` alone (``numpy.random.SeedSequence``); the learner runs with one
intra-op thread and updates every model of the stack exactly as if it were
alone; the state carried from one meta-iteration to the next is ``Theta``
only. So a cell's meta-model is bit-identical whichever cells share its batch,
however the cells are chunked over workers, and when a run is resumed from a
checkpoint at an iteration boundary (``init`` = the checkpoint,
``start_iteration`` = its next iteration).

:func:`joint_train` is the baseline of the meta-learning evidence: one DQN
trained by ordinary DQN steps on tasks pooled from all the given cells, with
as many gradient steps as Reptile performs over them.

Parameter vectors are per-model flat ``[P]`` float32 in the layout of
:meth:`BatchedDQN.flat_weights <baselines.dqn.learner.BatchedDQN.flat_weights>`
(``W0, b0, W1, ...`` flattened; :func:`split_params` splits one).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields

import numpy as np
import torch

from baselines.dqn.learner import TECHNIQUES, BatchedDQN, DQNConfig
from baselines.dqn.network import QNetSpec, init_params
from baselines.dqn.replay import ReplayMemory
from envs.errors import ConfigError
from envs.mdp import (
    COMPLETION,
    COMPLETION_UNIT,
    COMPLETION_UNITS,
    PACKET_RATE,
    n_inputs,
    reward_of_inputs,
)
from envs.scenario import SCENARIO_DEFAULTS
from envs.seeds import ChildSeed, generator
from metalearning.checks import numbers_in, optional_positive_int, plain, positive_ints
from metalearning.collect import (
    DEFAULT_TASK_BYTES,
    DEFAULT_TASK_MAX_DURATION_S,
    Experience,
    TaskCollector,
    bulk_app,
)

#: intra-op threads of the inner-loop learner: fixed, so that results do not
#: depend on the machine or the batch (CPU kernels are deterministic for a
#: fixed thread count)
LEARNER_THREADS = 1


@dataclass(frozen=True)
class ReptileConfig:
    """Reptile settings (every field is a key of the bank's ``reptile:`` config).

    Attributes:
        meta_iterations: meta-iterations per cell (N).
        inner_steps: DQN mini-batch steps per inner loop (K, paper: 16).
        batch_size: inner-loop mini-batch size; null: the DQN config's (32).
        epsilon: exploration while collecting a task (eps_l, paper: 0.3).
        meta_lr: Reptile step size lambda at the first meta-iteration.
        meta_lr_final: lambda approached linearly at the last one.
        decisions_per_task: transitions collected per task (default 512 =
            16 x 32, each transition seen once on average).
        task_size_bytes: bulk download of a task [bytes].
        task_max_duration_s: cap of a task's emulated duration [s].
        task_base: extra scenario keys of every task (e.g. ``cc``; ``paths``:
            path keys the grid does not set, see ``ConditionGrid.sample_task``).
        technique: batched-gradient implementation of the learner.
        reward_unit: unit of the completion reward (:data:`envs.mdp.COMPLETION_UNITS`):
            ``packet`` (default) or ``time`` (10 ms, the banks before it).
    """

    meta_iterations: int = 100
    inner_steps: int = 16
    batch_size: int | None = None
    epsilon: float = 0.3
    meta_lr: float = 0.1
    meta_lr_final: float = 0.0
    decisions_per_task: int = 512
    task_size_bytes: int = DEFAULT_TASK_BYTES
    task_max_duration_s: float = DEFAULT_TASK_MAX_DURATION_S
    task_base: dict = field(default_factory=lambda: {"cc": "olia"})
    technique: str = "bmm"
    reward_unit: str = COMPLETION_UNIT

    def __post_init__(self):
        def bad(key, msg):
            raise ConfigError(f"reptile.{key}: {msg}, got {getattr(self, key)!r}")

        positive_ints(
            self,
            "reptile",
            "meta_iterations",
            "inner_steps",
            "decisions_per_task",
            "task_size_bytes",
        )
        optional_positive_int(self, "reptile", "batch_size")
        numbers_in(
            self,
            "reptile",
            ("epsilon", 0.0, 1.0, False),
            ("meta_lr", 0.0, 1.0, True),
            ("meta_lr_final", 0.0, 1.0, False),
            ("task_max_duration_s", 0.0, math.inf, True),
        )
        if not isinstance(self.task_base, Mapping):
            bad("task_base", "must be a mapping of scenario keys")
        base = plain(self.task_base)
        unknown = set(base) - set(SCENARIO_DEFAULTS)
        if unknown:
            bad("task_base", f"unknown scenario key(s) {sorted(unknown)}")
        object.__setattr__(self, "task_base", base)
        if self.technique not in TECHNIQUES:
            bad("technique", f"must be one of {list(TECHNIQUES)}")
        if self.reward_unit not in COMPLETION_UNITS:
            bad("reward_unit", f"must be one of {list(COMPLETION_UNITS)}")

    @classmethod
    def from_dict(cls, cfg: Mapping | None) -> ReptileConfig:
        """From a config mapping; unknown keys are a :class:`ConfigError`."""
        cfg = dict(cfg or {})
        known = {f.name for f in fields(cls)}
        unknown = set(cfg) - known
        if unknown:
            raise ConfigError(f"reptile: unknown key(s) {sorted(unknown)}; known: {sorted(known)}")
        return cls(**cfg)

    def to_dict(self) -> dict:
        return asdict(self)

    def meta_lr_at(self, iteration: int) -> float:
        """lambda of meta-iteration ``iteration`` (0-based; module docstring)."""
        frac = float(iteration) / self.meta_iterations
        return self.meta_lr + (self.meta_lr_final - self.meta_lr) * frac

    def mini_batch(self, dqn_config: DQNConfig) -> int:
        return int(self.batch_size if self.batch_size is not None else dqn_config.batch_size)


# ---------------------------------------------------------------- parameters


def split_params(spec: QNetSpec, row: np.ndarray) -> list[np.ndarray]:
    """``[W0, b0, ...]`` views into one model's flat parameters ``[P]``."""
    out, off = [], 0
    for i, o in spec.layer_sizes:
        out.append(row[off : off + i * o].reshape(i, o))
        off += i * o
        out.append(row[off : off + o])
        off += o
    if off != row.shape[-1]:
        raise ConfigError(f"parameters: expected {off} values for the network, got {row.shape[-1]}")
    return out


def initial_params(spec: QNetSpec, seed: int) -> np.ndarray:
    """The common starting point of every cell: model 0 of
    :func:`~baselines.dqn.network.init_params` of ``seed``, flat ``[P]``."""
    return np.concatenate([p[0].reshape(-1).numpy() for p in init_params(spec, 1, seed)]).astype(
        np.float32
    )


def _tensor_sizes(spec: QNetSpec) -> list[int]:
    return [n for i, o in spec.layer_sizes for n in (i * o, o)]


def _load_stack(learner: BatchedDQN, thetas: np.ndarray) -> None:
    """Online and target networks of the stack <- ``thetas`` ``[M, P]``;
    Adam reset (the learner's flat buffer is tensor by tensor over models)."""
    cols, off = [], 0
    for n in _tensor_sizes(learner.spec):
        cols.append(thetas[:, off : off + n].reshape(-1))
        off += n
    flat = torch.from_numpy(np.concatenate(cols))
    with torch.no_grad():
        learner.flat.detach().copy_(flat)
        learner.target_flat.copy_(flat)
    learner.reset_optimizer()


def _read_stack(learner: BatchedDQN) -> np.ndarray:
    """The online parameters of the stack as ``[M, P]`` (per-model layout)."""
    m = learner.n_models
    with torch.no_grad():
        return np.concatenate([p.detach().reshape(m, -1).numpy() for p in learner.params], axis=1)


def inner_loop(learner: BatchedDQN, thetas: np.ndarray, batches) -> tuple[np.ndarray, np.ndarray]:
    """The ``M`` inner loops of a meta-iteration: online and target networks
    <- ``thetas`` ``[M, P]``, Adam reset, then one DQN step per mini-batch.

    ``batches``: ``(states, actions, rewards, next_states, dones)`` with a
    leading step axis, ``[K, M, B, ...]``. Returns ``W`` ``[M, P]`` and the
    mean loss over the ``K`` steps per model ``[M]``.
    """
    _load_stack(learner, thetas)
    s, a, r, s2, d = batches
    k = len(s)
    loss_sum = torch.zeros(learner.n_models, dtype=torch.float64)
    for step in range(k):
        loss_sum += learner.update(s[step], a[step], r[step], s2[step], d[step]).double()
    return _read_stack(learner), (loss_sum / max(k, 1)).numpy()


def reptile_step(
    learner: BatchedDQN,
    thetas: np.ndarray,
    batches,
    meta_lr: float,
    discard: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """One Reptile meta-step of ``M`` models side by side (module docstring,
    steps 3-4): ``W`` = :func:`inner_loop` from ``thetas`` ``[M, P]`` on
    ``batches`` ``[K, M, B, ...]``, then ``thetas + meta_lr (W - thetas)``.
    ``discard`` (bool ``[M]``): models whose ``W`` is dropped (their task
    had no transitions). Returns the new ``[M, P]`` and the mean inner loss
    per model ``[M]``. The bank build and FALCON's offline loop
    (:mod:`falcon.online.offline_update`) both step through here."""
    w, losses = inner_loop(learner, thetas, batches)
    if discard is not None:
        w[discard] = thetas[discard]  # a task without transitions teaches nothing
    return thetas + np.float32(meta_lr) * (w - thetas), losses


# ---------------------------------------------------------------- tasks


def _streams(seed: int, cell: int, iteration: int):
    """(task rng, emulation/exploration seed, mini-batch rng) of one cell's meta-iteration:
    from the three children of ``SeedSequence((seed, cell, iteration))``, computed as
    :class:`envs.seeds.ChildSeed` (the same streams, without NumPy's 60 µs of
    SeedSequence objects per task)."""
    entropy = (int(seed), int(cell), int(iteration))
    return (
        generator(ChildSeed(entropy, (0,))),
        int(ChildSeed(entropy, (1,)).generate_state(1, np.uint32)[0]),
        generator(ChildSeed(entropy, (2,))),
    )


def _collect(
    collector: TaskCollector,
    grid,
    cell: int,
    theta: np.ndarray,
    spec: QNetSpec,
    cfg: ReptileConfig,
    task_rng,
    collect_seed: int,
) -> Experience:
    scenario = grid.sample_task(cell, task_rng, base=cfg.task_base)
    return collector.collect(
        scenario,
        split_params(spec, theta.copy()),
        collect_seed,
        cfg.decisions_per_task,
        app=bulk_app(cfg.task_size_bytes),
        max_duration_s=cfg.task_max_duration_s,
        normalised=True,  # sample_task's scenario
    )


def _check_cells(cells: Sequence[int], grid) -> list[int]:
    out = []
    for c in cells:
        if (
            isinstance(c, bool)
            or not isinstance(c, int | np.integer)
            or not 0 <= int(c) < grid.n_cells
        ):
            raise ConfigError(f"cells: {c!r} is not a cell of the grid (0..{grid.n_cells - 1})")
        out.append(int(c))
    if not out:
        raise ConfigError("cells: no cell given")
    if len(set(out)) != len(out):
        raise ConfigError("cells: a cell is listed twice")
    return out


def _check_common(spec: QNetSpec, grid, seed: int) -> None:
    if spec.n_actions != grid.n_paths or reward_of_inputs(spec.n_inputs, spec.n_actions) is None:
        raise ConfigError(
            f"spec: the network has {spec.n_inputs} inputs / {spec.n_actions} actions, the grid "
            f"has {grid.n_paths} paths (an MDP of envs/mdp.py takes {n_inputs(grid.n_paths, PACKET_RATE)} "
            f"or {n_inputs(grid.n_paths, COMPLETION)} inputs)"
        )
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ConfigError(f"seed: expected a non-negative integer, got {seed!r}")


# ---------------------------------------------------------------- Reptile


def _start_params(spec: QNetSpec, seed: int, m: int, init: np.ndarray | None) -> np.ndarray:
    """``[m, P]`` float32: ``init`` (checked) or :func:`initial_params` of ``seed`` for every cell."""
    if init is None:
        return np.tile(initial_params(spec, seed), (m, 1))
    thetas = np.array(init, dtype=np.float32)
    if thetas.shape != (m, spec.n_parameters):
        raise ConfigError(
            f"init: expected shape [{m}, {spec.n_parameters}], got {list(thetas.shape)}"
        )
    return thetas


def reptile_cells(
    cells: Sequence[int],
    grid,
    spec: QNetSpec,
    dqn_config: DQNConfig | None,
    reptile_config: ReptileConfig,
    seed: int,
    init: np.ndarray | None = None,
    start_iteration: int = 0,
    progress: Callable[[int, dict], None] | None = None,
    checkpoint: Callable[[np.ndarray, int], None] | None = None,
    checkpoint_every: int = 10,
) -> np.ndarray:
    """Meta-train the meta-models of ``cells`` side by side (module docstring).

    Args:
        cells: cell indices of ``grid`` (a :class:`metalearning.grid.ConditionGrid`).
        spec: the Q-network architecture (its input width names the MDP, :mod:`envs.mdp`).
        dqn_config: the inner-loop DQN update (lr, gamma, tau, loss, ...).
        reptile_config: :class:`ReptileConfig`.
        seed: the build seed (initialisation and every random stream).
        init: ``[M, P]`` meta-parameters to start from (a checkpoint); None:
            every cell starts from :func:`initial_params` of ``seed``.
        start_iteration: the first meta-iteration to run (a resumed run).
        progress: ``progress(iteration, info)`` after every meta-iteration;
            ``info``: ``loss`` (mean inner loss over cells and steps),
            ``decisions`` (transitions collected), ``reward`` (mean over the
            tasks of their mean reward), ``short_tasks`` (tasks that ended
            before ``decisions_per_task``), ``lambda``, ``cells``, ``wall_s``,
            ``collect_s``, ``train_s`` [s].
        checkpoint: ``checkpoint(thetas, next_iteration)`` after every
            ``checkpoint_every``-th meta-iteration (``thetas`` is a copy).

    Returns:
        ``[M, P]`` float32 meta-parameters after ``meta_iterations``.
    """
    cfg = reptile_config
    dqn_config = dqn_config or DQNConfig()
    cells = _check_cells(cells, grid)
    _check_common(spec, grid, seed)
    n_iter = cfg.meta_iterations
    if isinstance(start_iteration, bool) or not 0 <= int(start_iteration) <= n_iter:
        raise ConfigError(f"start_iteration: must be in [0, {n_iter}], got {start_iteration!r}")
    if int(checkpoint_every) < 1:
        raise ConfigError(f"checkpoint_every: must be a positive integer, got {checkpoint_every!r}")
    m = len(cells)
    thetas = _start_params(spec, seed, m, init)
    if int(start_iteration) == n_iter:
        return thetas
    k, bsz, cap = cfg.inner_steps, cfg.mini_batch(dqn_config), cfg.decisions_per_task
    learner = BatchedDQN(
        spec, m, dqn_config, seed=seed, technique=cfg.technique, threads=LEARNER_THREADS
    )
    collector = TaskCollector(spec, cfg.epsilon, cfg.reward_unit)
    # every task's transitions padded to the budget; row j = cell j
    buf_s, buf_s2 = (
        np.zeros((m, cap, spec.n_inputs), np.float32),
        np.zeros((m, cap, spec.n_inputs), np.float32),
    )
    buf_a, buf_r, buf_d = (
        np.zeros((m, cap), np.int64),
        np.zeros((m, cap), np.float32),
        np.zeros((m, cap), np.float32),
    )
    rows = np.arange(m)[None, :, None]
    for it in range(int(start_iteration), n_iter):
        t0 = time.perf_counter()
        idx = np.zeros((m, k, bsz), np.int64)
        sizes = np.zeros(m, np.int64)
        rewards = []
        for j, cell in enumerate(cells):
            task_rng, collect_seed, batch_rng = _streams(seed, cell, it)
            exp = _collect(collector, grid, cell, thetas[j], spec, cfg, task_rng, collect_seed)
            n = sizes[j] = exp.n
            buf_s[j, :n], buf_a[j, :n], buf_r[j, :n], buf_s2[j, :n], buf_d[j, :n] = exp
            if n:
                idx[j] = batch_rng.integers(0, n, (k, bsz))
                rewards.append(float(exp.rewards.mean()))
        t1 = time.perf_counter()
        ix = idx.transpose(1, 0, 2)  # [K, M, B]: step-major, contiguous per step
        empty = sizes == 0
        lam = np.float32(cfg.meta_lr_at(it))
        thetas[:], losses = reptile_step(
            learner,
            thetas,
            (buf_s[rows, ix], buf_a[rows, ix], buf_r[rows, ix], buf_s2[rows, ix], buf_d[rows, ix]),
            lam,
            empty,
        )
        t2 = time.perf_counter()
        if progress is not None:
            losses = losses[~empty]
            progress(
                it,
                {
                    "loss": float(losses.mean()) if losses.size else math.nan,
                    "decisions": int(sizes.sum()),
                    "reward": float(np.mean(rewards)) if rewards else math.nan,
                    "short_tasks": int((sizes < cap).sum()),
                    "lambda": float(lam),
                    "cells": m,
                    "wall_s": t2 - t0,
                    "collect_s": t1 - t0,
                    "train_s": t2 - t1,
                },
            )
        if checkpoint is not None and (it + 1) % int(checkpoint_every) == 0:
            checkpoint(thetas.copy(), it + 1)
    return thetas


# ---------------------------------------------------------------- joint training


def joint_train(
    cells: Sequence[int],
    grid,
    spec: QNetSpec,
    dqn_config: DQNConfig | None,
    reptile_config: ReptileConfig,
    seed: int,
    iterations: int | None = None,
    init: np.ndarray | None = None,
    replay_capacity: int = 50_000,
    progress: Callable[[int, dict], None] | None = None,
) -> np.ndarray:
    """One DQN trained on tasks pooled from all ``cells`` (the joint-training
    baseline of the meta-learning evidence); flat parameters ``[P]``.

    Iteration ``i`` (of ``iterations``, default ``meta_iterations``) collects
    one task per cell exactly as :func:`reptile_cells` does (same task and
    exploration seeds, acting with the current joint network), adds it to one
    replay memory (``replay_capacity``), then runs ``len(cells) *
    inner_steps`` ordinary DQN steps (Adam and target network carried on)
    on mini-batches sampled from the pooled memory: the same number of
    gradient steps as Reptile spends on these cells. Starts from ``init``
    ``[P]`` or :func:`initial_params` of ``seed``, as Reptile does.
    ``progress(iteration, info)``: ``loss``, ``decisions``, ``reward``,
    ``wall_s``.
    """
    cfg = reptile_config
    dqn_config = dqn_config or DQNConfig()
    cells = _check_cells(cells, grid)
    _check_common(spec, grid, seed)
    n_iter = cfg.meta_iterations if iterations is None else int(iterations)
    if n_iter < 0:
        raise ConfigError(f"iterations: must be non-negative, got {iterations!r}")
    theta = initial_params(spec, seed) if init is None else np.array(init, dtype=np.float32)
    if theta.shape != (spec.n_parameters,):
        raise ConfigError(f"init: expected shape [{spec.n_parameters}], got {list(theta.shape)}")
    learner = BatchedDQN(
        spec, 1, dqn_config, seed=seed, technique=cfg.technique, threads=LEARNER_THREADS
    )
    _load_stack(learner, theta[None])
    replay = ReplayMemory(
        replay_capacity, spec.n_inputs, 1, seed=np.random.SeedSequence((int(seed), 0x6A6F696E))
    )  # "join"
    collector = TaskCollector(spec, cfg.epsilon, cfg.reward_unit)
    bsz, steps = cfg.mini_batch(dqn_config), len(cells) * cfg.inner_steps
    for it in range(n_iter):
        t0 = time.perf_counter()
        acting = learner.flat_weights(0)
        decisions, rewards = 0, []
        for cell in cells:
            task_rng, collect_seed, _ = _streams(seed, cell, it)
            exp = _collect(collector, grid, cell, acting, spec, cfg, task_rng, collect_seed)
            replay.extend(*exp)
            decisions += exp.n
            if exp.n:
                rewards.append(float(exp.rewards.mean()))
        loss = 0.0
        if len(replay):
            for _ in range(steps):
                loss += float(learner.update(*replay.sample(bsz))[0])
        if progress is not None:
            progress(
                it,
                {
                    "loss": loss / steps if len(replay) else math.nan,
                    "decisions": decisions,
                    "reward": float(np.mean(rewards)) if rewards else math.nan,
                    "wall_s": time.perf_counter() - t0,
                },
            )
    return learner.flat_weights(0).astype(np.float32)


__all__ = [
    "ReptileConfig",
    "reptile_cells",
    "joint_train",
    "split_params",
    "initial_params",
    "inner_loop",
    "LEARNER_THREADS",
]
