"""Does meta-learning help? Few-shot adaptation from a cell's meta-model vs. two baselines.

The experiment behind GitHub issue #5 item 5 (``python -m falcon.train
experiment=meta_evidence``, :mod:`falcon.evidence_job`). On held-out tasks
inside a condition cell it compares the download time reached after ``K``
fine-tuning steps from three start points:

(a) ``meta``: the cell's Reptile meta-model (:func:`metalearning.reptile.reptile_cells`
    with the bank build settings, or read from a bank file);
(b) ``random``: a freshly initialised network, :func:`~metalearning.reptile.initial_params`
    of the build seed (the paper's start of every meta-model and of the joint model);
(c) ``joint``: one network trained on the pooled tasks of all tested cells
    (:func:`~metalearning.reptile.joint_train`: the same tasks, exploration
    seeds and total number of gradient steps as the meta-models of those cells).

With the build's ``generalist:`` (the bank presets' default) the meta-models
and the joint model both start from the build's generalist network
(:func:`metalearning.generalist.train_generalist`, trained again from the
recorded settings, as the build did), so (a) against (c) asks whether the
per-cell Reptile adds anything to the same number of pooled steps from the
same start; (b) stays the random network.

Protocol (every number is an :class:`EvidenceConfig` field):

1. Test cells: ``cells`` if given, else a sample of ``n_cells`` distinct
   cells drawn with ``SeedSequence((seed, CELLS_TAG))``.
2. Held-out tasks: per cell ``tasks_per_cell`` scenarios drawn with
   :meth:`~metalearning.grid.ConditionGrid.sample_task` from
   ``SeedSequence((seed, cell, HELD_OUT_TAG, j + 1))``. Training task
   ``i`` of a cell is seeded from ``SeedSequence((build seed, cell, i))``, a
   3-word entropy; the held-out entropy has 4 words with a non-zero last one,
   so no held-out stream equals a training stream (SeedSequence ignores
   trailing zero words only).
3. Per (cell, task, start point): fine-tuning experience is one episode of
   the task acted by the start network eps-greedily with
   ``finetune_epsilon`` (eps_s = 0.1), ``finetune_decisions`` transitions
   (:class:`~metalearning.collect.TaskCollector`; the three start points use
   the same emulator seed and exploration stream); then ``finetune_steps``
   (K = 16) DQN mini-batch steps (``batch_size``, default the DQN config's
   32) from the start point, target network = start, Adam fresh
   (:func:`~metalearning.reptile.inner_loop`, the Reptile inner loop).
4. Evaluation: the network acts greedily (epsilon 0) on full downloads of
   ``eval_size_bytes`` (2 MB) of the task, ``eval_seeds`` emulator seeds
   (the same for every policy), emulated time capped at ``max_duration_s``.
   Recorded per episode: download time [s] (the cap for a download that
   did not complete, flagged ``timed_out``: a censored value, the same cap
   for every policy) and the share of bytes sent on path 0. The same
   episodes are run for each start point before fine-tuning (zero-shot), for
   minRTT, and for the fixed single-path policies (``fixed_path<i>``: every
   packet on path ``i``).
5. Per cell: median download time of every policy over tasks x seeds; the
   winner among (a), (b), (c) after fine-tuning (lowest median; ``tie`` when
   the lowest is shared); ``meta_beats_both`` when (a)'s median is strictly
   below both others; paired win rates (share of (task, seed) episodes
   where (a) is faster than (b), resp. (c)); ``spread`` = (worst - best) /
   best median over every evaluated policy, and ``matters`` = ``spread >=
   matters_threshold`` (when every policy gives about the same time, the
   path choice, hence the start point, cannot matter in that cell). The same
   winner / beats-both for the zero-shot policies, and diagnostics of what
   the networks learned (:func:`summarize_cell`).

Headline: the number of cells where (a) beats both, over all tested cells and
over the cells where the choice matters. Everything is seeded: the same
settings give the same numbers (the learners run with
:data:`~metalearning.reptile.LEARNER_THREADS` threads).
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields

import numpy as np

from baselines.dqn.learner import BatchedDQN, DQNConfig
from baselines.dqn.network import NumpyQNet, QNetSpec
from baselines.dqn.policy import DQNScheduler
from baselines.dqn.policy import greedy_scheduler as policy_greedy
from baselines.rule_based import MinRTT
from envs.errors import ConfigError
from envs.runner import run_episode
from envs.scheduler import Scheduler
from falcon.experiments.meta_evidence_report import (
    LABELS,
    START_POINTS,
    _ranges,
    describe_cell,
    evidence_table,
    headline,
    summarize_cell,
)
from metalearning.bank import MetaModelBank
from metalearning.build import BankBuildSpec
from metalearning.checks import numbers_in, optional_positive_int, positive_ints
from metalearning.collect import TaskCollector, bulk_app
from metalearning.generalist import GeneralistConfig, train_generalist
from metalearning.grid import ConditionGrid
from metalearning.reptile import (
    LEARNER_THREADS,
    ReptileConfig,
    initial_params,
    inner_loop,
    joint_train,
    reptile_cells,
    split_params,
)

#: entropy word marking the held-out task streams ("HELD")
HELD_OUT_TAG = 0x48454C44
#: entropy word of the test-cell sample ("CELL")
CELLS_TAG = 0x43454C4C


@dataclass(frozen=True)
class EvidenceConfig:
    """The protocol's settings (keys of the ``evidence:`` config; module docstring).

    Attributes:
        cells: test cells (indices or names such as ``cell_042``); None: sample ``n_cells``.
        n_cells: cells sampled when ``cells`` is None.
        tasks_per_cell: held-out tasks per cell.
        finetune_steps: K, DQN mini-batch steps of the fine-tuning.
        finetune_mix: the share of the K-step move that is evaluated, ``theta
            + mix (W - theta)`` (1: the fine-tuned W, the paper; FALCON's
            ``finetune_mix``).
        batch_size: fine-tuning mini-batch size; None: the DQN config's.
        finetune_epsilon: exploration while collecting the fine-tuning experience (eps_s).
        finetune_decisions: transitions of fine-tuning experience per task.
        eval_seeds: evaluation episodes per task and policy (emulator seeds).
        eval_size_bytes: evaluated bulk download [bytes].
        max_duration_s: emulated-time cap of every episode [s].
        matters_threshold: relative spread of the policies' medians from
            which the path choice is said to matter in a cell.
        bank_path: read the meta-models from this bank file instead of
            training the test cells' meta-models.
    """

    cells: tuple | None = None
    n_cells: int = 12
    tasks_per_cell: int = 5
    finetune_steps: int = ReptileConfig.inner_steps
    finetune_mix: float = 1.0
    batch_size: int | None = None
    finetune_epsilon: float = 0.1
    finetune_decisions: int = 256
    eval_seeds: int = 3
    eval_size_bytes: int = 2_000_000
    max_duration_s: float = 120.0
    matters_threshold: float = 0.10
    bank_path: str | None = None

    def __post_init__(self):
        def bad(key, msg):
            raise ConfigError(f"evidence.{key}: {msg}, got {getattr(self, key)!r}")

        positive_ints(
            self,
            "evidence",
            "n_cells",
            "tasks_per_cell",
            "finetune_steps",
            "finetune_decisions",
            "eval_seeds",
            "eval_size_bytes",
        )
        optional_positive_int(self, "evidence", "batch_size")
        numbers_in(
            self,
            "evidence",
            ("finetune_epsilon", 0.0, 1.0, False),
            ("finetune_mix", 0.0, 1.0, False),
            ("max_duration_s", 0.0, math.inf, True),
            ("matters_threshold", 0.0, math.inf, False),
        )
        if self.cells is not None:
            if (
                isinstance(self.cells, str | bytes)
                or not isinstance(self.cells, Sequence)
                or not self.cells
            ):
                bad("cells", "must be a non-empty list of cell indices or names, or null")
            object.__setattr__(self, "cells", tuple(self.cells))
        if self.bank_path is not None:
            object.__setattr__(self, "bank_path", str(self.bank_path))

    @classmethod
    def from_dict(cls, cfg: Mapping | None) -> EvidenceConfig:
        """From a config mapping; unknown keys are a :class:`ConfigError`."""
        cfg = dict(cfg or {})
        known = [f.name for f in fields(cls)]
        unknown = set(cfg) - set(known)
        if unknown:
            raise ConfigError(f"evidence: unknown key(s) {sorted(unknown)}; known: {known}")
        return cls(**cfg)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["cells"] = None if self.cells is None else list(self.cells)
        return d


@dataclass(frozen=True)
class EvidencePlan:
    """Everything one run needs, validated (:func:`plan_evidence`)."""

    config: EvidenceConfig
    build: BankBuildSpec  # how the meta-models and the joint model are (were) trained
    cells: tuple[int, ...]
    seed: int  # cell sample, held-out tasks, evaluation seeds
    bank: MetaModelBank | None  # meta-models read from a file (config.bank_path)

    @property
    def grid(self) -> ConditionGrid:
        return self.build.grid

    @property
    def spec(self) -> QNetSpec:
        return self.build.qnet_spec

    def settings(self) -> dict:
        """JSON-able settings of the run (recorded with the results)."""
        return {
            "evidence": self.config.to_dict(),
            "seed": self.seed,
            "cells": list(self.cells),
            "build": self.build.settings(),
            "build_name": self.build.name,
            "meta_source": "bank file" if self.bank is not None else "trained (reptile_cells)",
        }


def _resolve_cells(cfg: EvidenceConfig, grid: ConditionGrid, seed: int) -> tuple[int, ...]:
    if cfg.cells is None:
        if cfg.n_cells > grid.n_cells:
            raise ConfigError(
                f"evidence.n_cells: the grid has {grid.n_cells} cells, got {cfg.n_cells}"
            )
        rng = np.random.default_rng(np.random.SeedSequence((seed, CELLS_TAG)))
        return tuple(sorted(int(c) for c in rng.choice(grid.n_cells, cfg.n_cells, replace=False)))
    names = {grid.name(c): c for c in range(grid.n_cells)}
    out = []
    for c in cfg.cells:
        if isinstance(c, str) and c in names:
            out.append(names[c])
        elif (
            not isinstance(c, bool)
            and isinstance(c, int | np.integer)
            and 0 <= int(c) < grid.n_cells
        ):
            out.append(int(c))
        else:
            raise ConfigError(
                f"evidence.cells: {c!r} is not a cell of the grid (0..{grid.n_cells - 1} "
                f"or {grid.name(0)}..{grid.name(grid.n_cells - 1)})"
            )
    if len(set(out)) != len(out):
        raise ConfigError("evidence.cells: a cell is listed twice")
    return tuple(out)


def _build_of_bank(bank: MetaModelBank, path: str) -> BankBuildSpec:
    """The build settings recorded in a bank file (the joint model must get the same)."""
    settings = bank.meta.get("settings")
    if not isinstance(settings, Mapping):
        raise ConfigError(
            f"evidence.bank_path: {path} records no build settings; the joint model "
            "needs them (build the bank with experiment=build_bank)"
        )
    return BankBuildSpec(
        name=str(bank.meta.get("preset", "file")),
        grid=bank.grid,
        hidden=bank.spec.hidden,
        dqn=DQNConfig.from_kwargs(**dict(settings.get("dqn") or {})),
        reptile=ReptileConfig.from_dict(settings.get("reptile")),
        seed=int(settings.get("seed", 0)),
        generalist=GeneralistConfig.from_mapping(settings.get("generalist")),
    )


def plan_evidence(cfg: Mapping) -> EvidencePlan:
    """Validate a run's config before anything is trained.

    ``cfg``: ``evidence`` (the :class:`EvidenceConfig` mapping), ``bank``
    (a bank build config mapping, :class:`~metalearning.build.BankBuildSpec`;
    ignored when ``evidence.bank_path`` is set: the file's recorded settings
    are used), ``seed`` (non-negative int, default 0).
    """
    ev = EvidenceConfig.from_dict(cfg.get("evidence"))
    seed = cfg.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ConfigError(f"seed: expected a non-negative integer, got {seed!r}")
    bank = None
    if ev.bank_path is not None:
        bank = MetaModelBank.read(ev.bank_path)
        build = _build_of_bank(bank, ev.bank_path)
    else:
        build = BankBuildSpec.from_config(dict(cfg.get("bank") or {}))
    cells = _resolve_cells(ev, build.grid, int(seed))
    return EvidencePlan(ev, build, cells, int(seed), bank)


# ---------------------------------------------------------------- policies


class FixedPath(Scheduler):
    """Every packet on one path (a reference: what ignoring the other path costs)."""

    def __init__(self, path: int):
        self.path = int(path)
        self.name = f"fixed_path{self.path}"

    def decide(self, view):
        return self.path


def greedy_scheduler(theta: np.ndarray, spec: QNetSpec) -> DQNScheduler:
    """A DQN scheduler acting greedily (epsilon 0) with flat parameters ``theta`` ``[P]``
    (:func:`baselines.dqn.policy.greedy_scheduler`, in the bank's MDP)."""
    return policy_greedy(split_params(spec, np.array(theta, np.float32)), spec)


def evaluate(
    scenario: Mapping, scheduler: Scheduler, seeds: Sequence[int], app: Mapping
) -> list[dict]:
    """Episodes of ``app`` on ``scenario`` (already capped), one per seed:
    ``{"time_s", "timed_out", "path0_share"}`` (``time_s``: the download time,
    or the emulated time at the cap for a download that did not complete)."""
    out = []
    for s in seeds:
        m = run_episode(scenario, app, scheduler, int(s)).metrics
        timed_out = bool(m["timed_out"])
        out.append(
            {
                "time_s": float(m["elapsed_s"] if timed_out else m["download_time_s"]),
                "timed_out": timed_out,
                "path0_share": float(m.get("path0_share", math.nan)),
            }
        )
    return out


# ---------------------------------------------------------------- start points


def train_start_points(plan: EvidencePlan, progress: Callable[[str], None]) -> tuple[dict, dict]:
    """``({"meta": [M, P], "random": [P], "joint": [P]}, cpu seconds per phase)``."""
    b = plan.build
    cells, spec = list(plan.cells), plan.spec
    cpu = {}
    n_iter = b.reptile.meta_iterations
    every = max(1, n_iter // 5)

    def tick(what):
        t0 = time.process_time()

        def report(it, info):
            if (it + 1) % every == 0 or it + 1 == n_iter:
                progress(
                    f"meta_evidence: {what} {it + 1}/{n_iter}  loss {info.get('loss', math.nan):.4g}  "
                    f"[cpu {time.process_time() - t0:.1f} s]"
                )

        return report

    t = time.process_time()
    start = None
    if b.generalist is not None:  # the build's start of every cell, and so of the joint model
        progress(
            f"meta_evidence: the generalist start of the build ({b.generalist.tasks} tasks, "
            f"{b.generalist.gradient_steps} steps)"
        )
        start, _ = train_generalist(
            b.grid,
            spec,
            b.dqn,
            b.generalist,
            b.seed,
            b.reptile.task_base,
            b.reptile.task_size_bytes,
            progress=False,
            reward_unit=b.reptile.reward_unit,
        )
    cpu["generalist_cpu_s"] = time.process_time() - t
    t = time.process_time()
    if plan.bank is not None:
        meta = np.stack([plan.bank.row(c) for c in cells]).astype(np.float32)
        progress(
            f"meta_evidence: meta-models of {len(cells)} cells read from {plan.config.bank_path}"
        )
    else:
        progress(
            f"meta_evidence: Reptile on {len(cells)} cells, {n_iter} meta-iterations, "
            f"{b.reptile.decisions_per_task} decisions per task"
        )
        meta = reptile_cells(
            cells,
            b.grid,
            spec,
            b.dqn,
            b.reptile,
            b.seed,
            progress=tick("reptile iteration"),
            init=None if start is None else np.tile(start, (len(cells), 1)),
        )
    cpu["meta_cpu_s"] = time.process_time() - t
    t = time.process_time()
    progress(
        f"meta_evidence: joint training on the pooled tasks of {len(cells)} cells, {n_iter} iterations "
        f"of {len(cells) * b.reptile.inner_steps} steps"
    )
    joint = joint_train(
        cells, b.grid, spec, b.dqn, b.reptile, b.seed, progress=tick("joint iteration"), init=start
    )
    cpu["joint_cpu_s"] = time.process_time() - t
    return {
        "meta": np.asarray(meta, np.float32),
        "random": initial_params(spec, b.seed),
        "joint": np.asarray(joint, np.float32),
    }, cpu


# ---------------------------------------------------------------- one task


def held_out_streams(seed: int, cell: int, task: int):
    """(task rng, fine-tuning collection seed, mini-batch seed sequences per
    start point, evaluation seeds generator) of held-out task ``task`` of ``cell``."""
    task_ss, collect_ss, batch_ss, eval_ss = np.random.SeedSequence(
        (int(seed), int(cell), HELD_OUT_TAG, int(task) + 1)
    ).spawn(4)
    return (
        np.random.default_rng(task_ss),
        int(collect_ss.generate_state(1, np.uint32)[0]),
        batch_ss.spawn(len(START_POINTS)),
        eval_ss,
    )


def held_out_task(plan: EvidencePlan, cell: int, task: int) -> dict:
    """The scenario of a held-out task (capped at ``max_duration_s``)."""
    task_rng = held_out_streams(plan.seed, cell, task)[0]
    scenario = plan.grid.sample_task(cell, task_rng, base=plan.build.reptile.task_base)
    scenario["max_duration_s"] = min(float(scenario["max_duration_s"]), plan.config.max_duration_s)
    return scenario


def run_task(
    plan: EvidencePlan,
    cell: int,
    task: int,
    starts: Sequence[np.ndarray],
    learner: BatchedDQN,
    collector: TaskCollector,
) -> dict:
    """One held-out task of ``cell``: fine-tune from every start point and evaluate every policy."""
    ev, spec = plan.config, plan.spec
    _, collect_seed, batch_ss, eval_ss = held_out_streams(plan.seed, cell, task)
    scenario = held_out_task(plan, cell, task)
    seeds = [int(x) for x in eval_ss.generate_state(ev.eval_seeds, np.uint32)]
    app = bulk_app(ev.eval_size_bytes)
    k, bsz = ev.finetune_steps, ev.batch_size or plan.build.dqn.batch_size
    thetas = np.stack(starts).astype(np.float32)
    m, n_in = len(starts), spec.n_inputs
    bs = np.zeros((k, m, bsz, n_in), np.float32)
    bs2 = np.zeros((k, m, bsz, n_in), np.float32)
    ba = np.zeros((k, m, bsz), np.int64)
    br = np.zeros((k, m, bsz), np.float32)
    bd = np.zeros((k, m, bsz), np.float32)
    sizes, pool = [], []
    for j, theta in enumerate(thetas):
        exp = collector.collect(
            scenario,
            split_params(spec, theta.copy()),
            collect_seed,
            ev.finetune_decisions,
            app=app,
            max_duration_s=ev.max_duration_s,
        )
        sizes.append(exp.n)
        pool.append(exp.states)
        if exp.n:
            idx = np.random.default_rng(batch_ss[j]).integers(0, exp.n, (k, bsz))
            bs[:, j], ba[:, j], br[:, j], bs2[:, j], bd[:, j] = (x[idx] for x in exp)
    tuned, losses = inner_loop(learner, thetas, (bs, ba, br, bs2, bd))
    if ev.finetune_mix != 1.0:
        tuned = thetas + np.float32(ev.finetune_mix) * (tuned - thetas)
    empty = np.asarray(sizes) == 0
    tuned[empty] = thetas[empty]  # no experience: nothing to fine-tune on
    diagnostics = _diagnostics(spec, thetas, tuned, [x for x in pool if len(x)])
    episodes = {}
    for j, name in enumerate(START_POINTS):
        episodes[f"{name}/zero_shot"] = evaluate(
            scenario, greedy_scheduler(thetas[j], spec), seeds, app
        )
        episodes[f"{name}/finetuned"] = evaluate(
            scenario, greedy_scheduler(tuned[j], spec), seeds, app
        )
    episodes["minrtt"] = evaluate(scenario, MinRTT(), seeds, app)
    for p in range(plan.grid.n_paths):
        episodes[f"fixed_path{p}"] = evaluate(scenario, FixedPath(p), seeds, app)
    return {
        "task": task,
        "eval_seeds": seeds,
        "collect_seed": collect_seed,
        "paths": [
            {
                k2: p[k2]
                for k2 in ("link", "bandwidth_mbps", "rtt_ms", "rtt_std_ms", "loss")
                if k2 in p
            }
            for p in scenario["paths"]
        ],
        "finetune_transitions": dict(zip(START_POINTS, (int(n) for n in sizes))),
        "finetune_loss": dict(zip(START_POINTS, (float(x) for x in losses))),
        "diagnostics": diagnostics,
        "episodes": episodes,
    }


def _diagnostics(
    spec: QNetSpec, starts: np.ndarray, tuned: np.ndarray, states: list[np.ndarray]
) -> dict:
    """What the networks do on the task's fine-tuning states (all start points pooled):
    per policy the share of greedy choices of path 0; the share of states where
    two policies choose the same path; how far fine-tuning moved each start
    point (L2 norm of the change relative to the start's norm)."""
    out: dict = {"states": int(sum(len(x) for x in states))}
    if not states:
        return out
    pool = np.concatenate(states).astype(np.float32)
    acts = {}
    for j, name in enumerate(START_POINTS):
        for kind, theta in (("zero_shot", starts[j]), ("finetuned", tuned[j])):
            q = NumpyQNet(split_params(spec, np.array(theta, np.float32)), spec)(pool)
            acts[f"{name}/{kind}"] = np.asarray(q).argmax(axis=1)
    out["greedy_path0_rate"] = {p: float(np.mean(a == 0)) for p, a in acts.items()}
    out["agreement"] = {
        f"{x}~{y}": float(np.mean(acts[x] == acts[y]))
        for x, y in (
            ("meta/finetuned", "random/finetuned"),
            ("meta/finetuned", "joint/finetuned"),
            ("random/finetuned", "joint/finetuned"),
            ("meta/zero_shot", "meta/finetuned"),
            ("random/zero_shot", "random/finetuned"),
            ("joint/zero_shot", "joint/finetuned"),
        )
    }
    out["finetune_step_rel"] = {
        name: float(np.linalg.norm(tuned[j] - starts[j]) / np.linalg.norm(starts[j]))
        for j, name in enumerate(START_POINTS)
    }
    return out


# ---------------------------------------------------------------- the experiment


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def run_evidence(
    cfg: Mapping | EvidencePlan, progress: Callable[[str], None] | None = _stderr
) -> dict:
    """Run the experiment (module docstring); a JSON-able dict.

    ``cfg``: a mapping for :func:`plan_evidence` or an :class:`EvidencePlan`.
    Returns ``settings``, ``cells`` (per cell: ``cell``, ``name``, ``ranges``,
    ``tasks`` with every episode, ``summary`` of :func:`summarize_cell`),
    ``headline`` (:func:`headline`) and ``cpu_s`` (process CPU seconds per
    phase) / ``wall_s``.
    """
    plan = cfg if isinstance(cfg, EvidencePlan) else plan_evidence(cfg)
    say = progress or (lambda _msg: None)
    t_wall, t_cpu = time.perf_counter(), time.process_time()
    params, cpu = train_start_points(plan, say)
    b, ev = plan.build, plan.config
    learner = BatchedDQN(
        plan.spec,
        len(START_POINTS),
        b.dqn,
        seed=b.seed,
        technique=b.reptile.technique,
        threads=LEARNER_THREADS,
    )
    collector = TaskCollector(plan.spec, ev.finetune_epsilon, b.reptile.reward_unit)
    t = time.process_time()
    rows = []
    for i, cell in enumerate(plan.cells):
        starts = [params["meta"][i], params["random"], params["joint"]]
        tasks = [
            run_task(plan, cell, j, starts, learner, collector) for j in range(ev.tasks_per_cell)
        ]
        summ = summarize_cell(tasks, ev.matters_threshold)
        summ["meta_from_init_rel"] = float(
            np.linalg.norm(starts[0] - starts[1]) / np.linalg.norm(starts[1])
        )
        rows.append(
            {
                "cell": cell,
                "name": plan.grid.name(cell),
                "ranges": _ranges(plan.grid, cell),
                "tasks": tasks,
                "summary": summ,
            }
        )
        tm = summ["finetuned_median_s"]
        say(
            f"meta_evidence: cell {i + 1}/{len(plan.cells)} {plan.grid.name(cell)}: after K={ev.finetune_steps} "
            f"(a) {tm['meta']:.3g} s (b) {tm['random']:.3g} s (c) {tm['joint']:.3g} s, "
            f"minRTT {summ['median_s']['minrtt']:.3g} s -> {summ['winner']}  "
            f"[cpu {time.process_time() - t:.1f} s]"
        )
    cpu["eval_cpu_s"] = time.process_time() - t
    cpu["total_cpu_s"] = time.process_time() - t_cpu
    return {
        "settings": plan.settings(),
        "cells": rows,
        "headline": headline(rows),
        "cpu_s": cpu,
        "wall_s": time.perf_counter() - t_wall,
    }


__all__ = [
    "EvidenceConfig",
    "EvidencePlan",
    "plan_evidence",
    "run_evidence",
    "run_task",
    "train_start_points",
    "summarize_cell",
    "headline",
    "evidence_table",
    "describe_cell",
    "held_out_streams",
    "held_out_task",
    "greedy_scheduler",
    "evaluate",
    "FixedPath",
    "START_POINTS",
    "LABELS",
    "HELD_OUT_TAG",
    "CELLS_TAG",
]
