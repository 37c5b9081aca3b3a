"""Building the meta-model bank: chunks of cells, a process pool or Ray, checkpoints, resume.

The bank's cells are independent: a cell's meta-model depends only on the
build settings, the seed and the cell (:func:`metalearning.reptile.reptile_cells`
seeds everything from ``(seed, cell, iteration)`` and updates every model of a
batch exactly as if it were alone). So the build splits the cells into chunks
of ``chunk_size`` cells, each chunk is one job that trains its cells side by
side (one batched DQN update for the whole chunk), and the jobs run on
:func:`falcon.runtime`-like fan-out: inline, in a local process pool, or as Ray
tasks. Every runtime gives the same bank for the same settings.

Checkpoints: every ``checkpoint_every`` meta-iterations a chunk writes its
meta-parameters and the next iteration to ``<bank>.partial/chunk_<k>.npz``
(atomically). A build that is killed and started again with the same settings
skips finished chunks and resumes the others from their last checkpoint; since
the state carried between meta-iterations is the meta-parameters alone, the
resumed bank is bit-identical to an uninterrupted build. Checkpoints of other
settings (a different fingerprint) are ignored and overwritten. When every
chunk is done the bank file is written atomically and the checkpoints removed.
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from baselines.dqn.files import atomic_path
from baselines.dqn.learner import DQNConfig
from baselines.dqn.network import QNetSpec
from envs.errors import ConfigError, FalconInputError, is_whole_number
from envs.mdp import COMPLETION, PACKET_RATE, n_inputs
from envs.traces.guard import training_reads
from metalearning.bank import MetaModelBank, read_bank_header
from metalearning.checks import plain
from metalearning.generalist import GeneralistConfig, train_generalist
from metalearning.grid import ConditionGrid
from metalearning.reptile import ReptileConfig, reptile_cells

#: bumped whenever task collection or the inner loop changes what a build
#: computes (part of the fingerprint, so an older bank is rebuilt, not reused)
BUILD_VERSION = 9  # 5: the emulator's connection setup (envs/setup.py); 6: reward_unit;
#                                7: pacing and the setup's RTT samples (envs/path_sender.py, envs/setup.py);
#                                8: secondary paths open as QUIC stacks open them (path_validation: mutual);
#                                9: the server's setup datagram crosses the link, CUBIC's HyStart++ (defaults)

#: keys of a bank build config (``configs/bank/*.yaml``)
BUILD_KEYS = (
    "name",
    "path",
    "seed",
    "reward",
    "generalist",
    "hidden",
    "grid",
    "dqn",
    "reptile",
    "chunk_size",
    "checkpoint_every",
)


@dataclass(frozen=True)
class BankBuildSpec:
    """Everything a bank build depends on (``configs/bank/<preset>.yaml``).

    Attributes:
        name: preset name (recorded in the file).
        grid: the condition grid.
        hidden: hidden-layer widths of every meta-model.
        reward: the MDP the meta-models learn (:mod:`envs.mdp`, as its reward
            kind): ``"completion"`` (the default) or ``"packet_rate"`` (the
            paper's); it sets the networks' input width.
        generalist: every cell's Reptile starts from one network trained
            on tasks of the whole grid (:mod:`metalearning.generalist`);
            None: from random weights (the paper's).
        dqn: inner-loop DQN hyperparameters.
        reptile: Reptile settings (meta-iterations, K, epsilon, lambda, tasks).
        seed: build seed.
        chunk_size: cells trained side by side in one job.
        checkpoint_every: meta-iterations between checkpoints of a chunk.
    """

    name: str
    grid: ConditionGrid
    hidden: tuple[int, ...]
    dqn: DQNConfig
    reptile: ReptileConfig
    seed: int = 0
    reward: str = COMPLETION
    generalist: GeneralistConfig | None = None
    chunk_size: int = 73
    checkpoint_every: int = 10

    @classmethod
    def from_config(cls, cfg: Mapping) -> BankBuildSpec:
        cfg = dict(cfg)
        unknown = set(cfg) - set(BUILD_KEYS)
        if unknown:
            raise ConfigError(f"bank: unknown key(s) {sorted(unknown)}; known: {list(BUILD_KEYS)}")
        grid_cfg = dict(cfg.get("grid") or {})
        try:
            grid = ConditionGrid(**grid_cfg)
        except TypeError as e:
            raise ConfigError(f"bank.grid: {e}") from None
        hidden = cfg.get("hidden", [64, 64, 64])
        if isinstance(hidden, int):
            hidden = [hidden] * 3
        try:
            hidden = tuple(int(h) for h in hidden)
        except (TypeError, ValueError):
            raise ConfigError(
                f"bank.hidden: expected a list of layer widths, got {hidden!r}"
            ) from None
        if not hidden or min(hidden) < 1:
            raise ConfigError(f"bank.hidden: expected positive layer widths, got {list(hidden)}")
        dqn = DQNConfig.from_kwargs(**dict(cfg.get("dqn") or {}))
        try:
            reptile = ReptileConfig(**dict(cfg.get("reptile") or {}))
        except TypeError as e:
            raise ConfigError(f"bank.reptile: {e}") from None
        reward = cfg.get("reward", COMPLETION)
        if reward not in (COMPLETION, PACKET_RATE):
            raise ConfigError(
                f"bank.reward: expected {COMPLETION!r} or {PACKET_RATE!r} (the MDP of the "
                f"meta-models), got {reward!r}"
            )
        out = cls(
            name=str(cfg.get("name") or "custom"),
            grid=grid,
            hidden=hidden,
            dqn=dqn,
            reptile=reptile,
            seed=_int(cfg, "seed", 0, 0),
            reward=reward,
            generalist=GeneralistConfig.from_mapping(cfg.get("generalist")),
            chunk_size=_int(cfg, "chunk_size", 73, 1),
            checkpoint_every=_int(cfg, "checkpoint_every", 10, 1),
        )
        return out

    @property
    def qnet_spec(self) -> QNetSpec:
        n = self.grid.n_paths
        return QNetSpec(n_inputs(n, self.reward), n, self.hidden)

    def settings(self) -> dict:
        """The JSON-able settings that determine the bank's weights."""
        return {
            "grid": self.grid.to_dict(),
            "reward": self.reward,
            "generalist": None if self.generalist is None else self.generalist.to_dict(),
            "hidden": list(self.hidden),
            "dqn": self.dqn.to_dict(),
            "reptile": plain(asdict(self.reptile)),
            "seed": self.seed,
            "build_version": BUILD_VERSION,
        }

    def fingerprint(self) -> str:
        """Hash of :meth:`settings`: two builds with the same fingerprint give the same bank."""
        return _hash(self.settings())

    def checkpoint_fingerprint(self) -> str:
        """:meth:`fingerprint` plus the chunking (checkpoints are per chunk)."""
        return _hash({**self.settings(), "chunk_size": self.chunk_size})

    def chunks(self) -> list[list[int]]:
        n, k = self.grid.n_cells, self.chunk_size
        return [list(range(i, min(n, i + k))) for i in range(0, n, k)]


def _hash(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()[:16]


def _int(cfg: Mapping, key: str, default: int, lo: int) -> int:
    v = cfg.get(key, default)
    if v is None:
        v = default
    if not is_whole_number(v, lo):
        raise ConfigError(f"bank.{key}: expected an integer >= {lo}, got {v!r}")
    return v


# ---------------------------------------------------------------- checkpoints


def checkpoint_dir(bank_path: str | Path) -> Path:
    p = Path(bank_path)
    return p.with_name(p.name + ".partial")


def _chunk_file(ckpt_dir: Path, index: int) -> Path:
    return ckpt_dir / f"chunk_{index:04d}.npz"


def save_chunk_checkpoint(
    path: Path,
    fingerprint: str,
    cells: list[int],
    thetas: np.ndarray,
    next_iteration: int,
    history: list[dict],
) -> None:
    """Write one chunk's state atomically (``.npz``)."""
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as f:
            np.savez(
                f,
                thetas=np.asarray(thetas, np.float32),
                cells=np.asarray(cells, np.int64),
                next_iteration=np.int64(next_iteration),
                fingerprint=np.array(fingerprint),
                history=np.array(json.dumps(history)),
            )


def load_chunk_checkpoint(path: Path, fingerprint: str, cells: list[int]):
    """``(thetas, next_iteration, history)`` from a usable checkpoint, else None
    (missing, unreadable, or written by other settings)."""
    if not path.exists():
        return None
    try:
        with np.load(path, allow_pickle=False) as z:
            if str(z["fingerprint"]) != fingerprint or list(z["cells"]) != list(cells):
                return None
            return z["thetas"].copy(), int(z["next_iteration"]), json.loads(str(z["history"]))
    except (OSError, ValueError, KeyError):
        return None


# ---------------------------------------------------------------- chunk jobs


@dataclass(frozen=True)
class ChunkJob:
    index: int
    n_chunks: int
    cells: tuple[int, ...]
    spec: BankBuildSpec
    ckpt_dir: str
    verbose: bool = True
    start: np.ndarray | None = (
        None  # every cell's initial parameters [P] (the generalist); None: random
    )


def build_chunk(job: ChunkJob) -> dict:
    """Train one chunk's cells (resuming from its checkpoint); returns
    ``{"thetas": [m, P], "history": [...], "wall_s", "resumed_from"}``."""
    spec = job.spec
    fp = spec.checkpoint_fingerprint()
    cells = list(job.cells)
    path = _chunk_file(Path(job.ckpt_dir), job.index)
    n_iter = spec.reptile.meta_iterations
    state = load_chunk_checkpoint(path, fp, cells)
    fresh = (
        None if job.start is None else np.tile(np.asarray(job.start, np.float32), (len(cells), 1))
    )
    init, start, history = (fresh, 0, []) if state is None else state
    history = list(history)
    t0 = time.perf_counter()
    if start >= n_iter:
        return {
            "index": job.index,
            "thetas": init,
            "history": history,
            "wall_s": 0.0,
            "resumed_from": start,
        }
    label = f"bank chunk {job.index + 1}/{job.n_chunks} (cells {cells[0]}-{cells[-1]})"
    if job.verbose and start:
        print(f"{label}: resuming at meta-iteration {start}/{n_iter}", file=sys.stderr, flush=True)
    every = max(1, n_iter // 10)

    def progress(iteration: int, info: dict) -> None:
        history.append(
            {
                "iteration": int(iteration),
                **{k: float(v) for k, v in info.items() if isinstance(v, int | float)},
            }
        )
        done = iteration + 1
        if job.verbose and (done % every == 0 or done == n_iter):
            loss = info.get("loss", math.nan)
            print(
                f"{label}: meta-iteration {done}/{n_iter}  inner loss {loss:.4g}  "
                f"[{time.perf_counter() - t0:.1f} s]",
                file=sys.stderr,
                flush=True,
            )

    def checkpoint(thetas, next_iteration: int) -> None:
        save_chunk_checkpoint(path, fp, cells, thetas, next_iteration, history)

    with training_reads(
        f"building the meta-model bank ({label})"
    ):  # in the worker: no test trace file
        thetas = reptile_cells(
            cells,
            spec.grid,
            spec.qnet_spec,
            spec.dqn,
            spec.reptile,
            spec.seed,
            init=init,
            start_iteration=start,
            progress=progress,
            checkpoint=checkpoint,
            checkpoint_every=spec.checkpoint_every,
        )
    thetas = np.asarray(thetas, np.float32)
    save_chunk_checkpoint(path, fp, cells, thetas, n_iter, history)
    return {
        "index": job.index,
        "thetas": thetas,
        "history": history,
        "wall_s": time.perf_counter() - t0,
        "resumed_from": start,
    }


def generalist_start(
    spec: BankBuildSpec, ckpt: Path, progress: bool
) -> tuple[np.ndarray | None, dict | None]:
    """The generalist's parameters (trained once per build, kept in the
    checkpoint folder so that a resumed build does not train it again) and
    its record; ``(None, None)`` without ``generalist:``."""
    if spec.generalist is None:
        return None, None
    fp = spec.checkpoint_fingerprint()
    path = ckpt / "generalist.npz"
    try:
        with np.load(path) as z:
            if str(z["fingerprint"]) == fp:
                return z["start"].copy(), json.loads(str(z["record"]))
    except (OSError, ValueError, KeyError):
        pass
    r = spec.reptile
    with training_reads("training the meta-model bank's generalist"):
        start, record = train_generalist(
            spec.grid,
            spec.qnet_spec,
            spec.dqn,
            spec.generalist,
            spec.seed,
            r.task_base,
            r.task_size_bytes,
            progress=progress,
            reward_unit=r.reward_unit,
        )
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as f:
            np.savez(f, start=start, fingerprint=np.array(fp), record=np.array(json.dumps(record)))
    return start, record


def run_inline(jobs, worker) -> list:
    """The default fan-out: every job in this process, in order."""
    return [worker(job) for job in jobs]


def build_bank(
    spec: BankBuildSpec,
    path: str | Path,
    *,
    run_jobs: Callable = run_inline,
    resume: bool = True,
    progress: bool = True,
    runtime_label: str = "local",
    log: Callable[[dict, int | None], None] | None = None,
) -> MetaModelBank:
    """Build every cell's meta-model and write the bank to ``path`` (atomically).

    ``run_jobs(jobs, worker) -> [worker(job) for job in jobs]`` fans the chunk
    jobs out (in this process by default; the entry point passes a process
    pool or Ray, :func:`falcon.runtime.run_jobs`): jobs and worker are
    picklable and the results do not depend on where they ran.
    ``resume=False`` discards existing checkpoints. ``log(metrics, step)``
    receives the mean inner loss per meta-iteration (over all cells) once the
    build is done. No step of the build may read a test trace file
    (:func:`envs.traces.guard.training_reads`, entered here and in every
    chunk job).
    """
    path = Path(path)
    ckpt = checkpoint_dir(path)
    if not resume and ckpt.exists():
        shutil.rmtree(ckpt)
    ckpt.mkdir(parents=True, exist_ok=True)
    chunks = spec.chunks()
    t0 = time.perf_counter()
    with training_reads(
        f"building the meta-model bank {spec.name!r}"
    ):  # workers enter it again (build_chunk)
        start, generalist = generalist_start(spec, ckpt, progress)
        jobs = [
            ChunkJob(i, len(chunks), tuple(c), spec, str(ckpt), verbose=progress, start=start)
            for i, c in enumerate(chunks)
        ]
        results = run_jobs(jobs, build_chunk)
    wall = time.perf_counter() - t0
    params = np.concatenate([r["thetas"] for r in results], axis=0)
    n_iter = spec.reptile.meta_iterations
    curve = _mean_curve([r["history"] for r in results], n_iter)
    meta = {
        "preset": spec.name,
        "settings": spec.settings(),
        "fingerprint": spec.fingerprint(),
        "meta_iterations": [n_iter] * spec.grid.n_cells,
        "seed": spec.seed,
        "build_wall_s": wall,
        "chunk_size": spec.chunk_size,
        "runtime": runtime_label,
        "resumed_chunks": sum(1 for r in results if r["resumed_from"]),
        "loss_curve": curve,
        "generalist": generalist,
    }
    bank = MetaModelBank(spec.grid, spec.qnet_spec, params, meta)
    bank.write(path)
    shutil.rmtree(ckpt, ignore_errors=True)
    if log is not None:
        for i, loss in enumerate(curve):
            if math.isfinite(loss):
                log({"bank/inner_loss": loss}, i)
        log(
            {
                "bank/build_wall_s": wall,
                "bank/cells": float(spec.grid.n_cells),
                "bank/s_per_cell": wall / spec.grid.n_cells,
            },
            None,
        )
    return bank


def _mean_curve(histories: list[list[dict]], n_iter: int) -> list[float]:
    """Mean inner-loop loss per meta-iteration over the chunks."""
    sums, counts = np.zeros(n_iter), np.zeros(n_iter)
    for hist in histories:
        for h in hist:
            i = int(h.get("iteration", -1))
            v = h.get("loss")
            if 0 <= i < n_iter and v is not None and math.isfinite(v):
                sums[i] += v
                counts[i] += 1
    return [float(s / c) if c else math.nan for s, c in zip(sums, counts)]


def bank_matches(path: str | Path, spec: BankBuildSpec) -> bool:
    """True when ``path`` is a bank built with exactly these settings (reads
    its header only; :meth:`MetaModelBank.read` still validates the models)."""
    path = Path(path)
    if not path.exists():
        return False
    try:
        grid, meta = read_bank_header(path)
    except FalconInputError:  # unreadable, not a bank: rebuild
        return False
    return grid == spec.grid and meta.get("fingerprint") == spec.fingerprint()


__all__ = [
    "BankBuildSpec",
    "build_bank",
    "build_chunk",
    "bank_matches",
    "checkpoint_dir",
    "save_chunk_checkpoint",
    "load_chunk_checkpoint",
    "BUILD_KEYS",
    "ChunkJob",
    "run_inline",
]
