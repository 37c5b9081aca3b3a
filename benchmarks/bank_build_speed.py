"""Speed of the batched Reptile build: collection, inner loops, meta-iterations.

    python -m benchmarks.bank_build_speed [--repeats 3] [--cells 81] [--quick] [--out FILE]

Reports (one JSON line per figure on stdout, a short table on stderr):

* ``collect``: decisions per CPU-second of task collection (one 2 MB task in
  each of ``--collect-cells`` cells spread over the grid, 512 decisions,
  eps 0.3, a fresh network; :mod:`metalearning.collect`), and how many tasks
  ended before the budget.
* ``inner_loop``: milliseconds of one batched inner loop (K = 16 DQN steps,
  batch 32, load of Theta and Adam reset included;
  :func:`metalearning.reptile.inner_loop`) for ``M`` = 1, 27, 81, 729 models
  on synthetic batches, and per model.
* ``meta_iteration``: cells per second of a whole meta-iteration (sample,
  collect, inner loop, Reptile step) over ``--cells`` cells spread over the
  grid: ``M = 1`` sequentially (one :func:`~metalearning.reptile.reptile_cells`
  call per cell, one cell after another) against all of them batched in one
  call; their ratio is the speed-up of the batched build.
* ``parallel``: the batched meta-iteration in 2 worker processes at once
  (each its own chunk of ``--cells`` cells; spawned, started together),
  cells per second of both together.
* ``extrapolation``: wall time of 729 cells x 100 meta-iterations on 1
  worker (batched rate) and 2 workers (measured parallel rate), and on idle
  cores (from the CPU-time rate).

Wall-clock figures suffer when other processes share the cores (the run
records the load average); the CPU-time figures (``*_per_cpu_s``, collection
per CPU-second) are the ones to compare across runs.

Every figure is the median over ``--repeats`` repeats (each repeat is in the
JSON too): the development machine is shared and its timings are noisy.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import sys
import time

import numpy as np

from baselines.dqn.files import atomic_path
from baselines.dqn.learner import BatchedDQN, DQNConfig
from baselines.dqn.network import QNetSpec
from envs.mdp import COMPLETION, n_inputs
from metalearning.collect import TaskCollector, bulk_app
from metalearning.grid import ConditionGrid
from metalearning.reptile import (
    LEARNER_THREADS,
    ReptileConfig,
    initial_params,
    inner_loop,
    reptile_cells,
)

BANK_CELLS = 729
BANK_ITERATIONS = 100


def spread(n_cells: int, k: int, offset: int = 0) -> list[int]:
    """``k`` cells evenly spread over ``0..n_cells-1`` (starting at ``offset``)."""
    k = max(1, min(k, n_cells))
    return sorted({(offset + (i * n_cells) // k) % n_cells for i in range(k)})


def bench_collect(
    grid: ConditionGrid, spec: QNetSpec, cfg: ReptileConfig, n_cells: int, repeats: int
) -> dict:
    cells = spread(grid.n_cells, n_cells)
    collector = TaskCollector(spec, cfg.epsilon)
    tasks = [grid.sample_task(c, np.random.default_rng(c), base=cfg.task_base) for c in cells]
    app = bulk_app(cfg.task_size_bytes)
    rates, short, n_total, cpu_per_task = [], 0, 0, []
    for _ in range(repeats):
        n_total, cpu, short = 0, 0.0, 0
        for i, task in enumerate(tasks):
            exp = collector.collect(
                task, None, i, cfg.decisions_per_task, app, cfg.task_max_duration_s
            )
            n_total += exp.n
            cpu += collector.last_info["cpu_s"]
            short += exp.n < cfg.decisions_per_task
        rates.append(n_total / cpu)
        cpu_per_task.append(cpu / len(tasks))
    return {
        "figure": "collect",
        "tasks": len(tasks),
        "decisions_per_task": cfg.decisions_per_task,
        "transitions": n_total,
        "short_tasks": int(short),
        "decisions_per_cpu_s": statistics.median(rates),
        "repeats": rates,
        "cpu_ms_per_task": 1000 * statistics.median(cpu_per_task),
    }


def bench_inner(
    spec: QNetSpec, cfg: ReptileConfig, dqn: DQNConfig, sizes: list[int], repeats: int
) -> list[dict]:
    out = []
    k, b, n_in = cfg.inner_steps, cfg.mini_batch(dqn), spec.n_inputs
    for m in sizes:
        rng = np.random.default_rng(m)
        batches = (
            rng.uniform(0, 5, (k, m, b, n_in)).astype(np.float32),
            rng.integers(0, 2, (k, m, b)),
            rng.uniform(0, 5, (k, m, b)).astype(np.float32),
            rng.uniform(0, 5, (k, m, b, n_in)).astype(np.float32),
            np.zeros((k, m, b), np.float32),
        )
        t0 = time.perf_counter()
        learner = BatchedDQN(spec, m, dqn, seed=0, technique=cfg.technique, threads=LEARNER_THREADS)
        create = time.perf_counter() - t0
        thetas = np.tile(initial_params(spec, 0), (m, 1))
        inner_loop(learner, thetas, batches)  # warm-up
        times = []
        for _ in range(max(repeats, 3)):
            t0 = time.perf_counter()
            inner_loop(learner, thetas, batches)
            times.append(time.perf_counter() - t0)
        ms = 1000 * statistics.median(times)
        out.append(
            {
                "figure": "inner_loop",
                "models": m,
                "steps": k,
                "batch_size": b,
                "ms": ms,
                "ms_per_model": ms / m,
                "learner_create_ms": 1000 * create,
                "repeats_ms": [1000 * t for t in times],
            }
        )
    return out


def _one_iteration(cells, grid, spec, dqn, cfg, seed: int) -> tuple[float, float, dict]:
    """Wall and CPU time [s] of one meta-iteration of ``cells`` in one call, and its info."""
    info: dict = {}
    t0, c0 = time.perf_counter(), time.process_time()
    reptile_cells(cells, grid, spec, dqn, cfg, seed, progress=lambda it, i: info.update(i))
    return time.perf_counter() - t0, time.process_time() - c0, info


def bench_meta_iteration(grid, spec, dqn, cfg: ReptileConfig, n_cells: int, repeats: int) -> dict:
    one = ReptileConfig(**{**cfg.to_dict(), "meta_iterations": 1})
    cells = spread(grid.n_cells, n_cells)
    seq, bat, seq_cpu, bat_cpu, split = [], [], [], [], []
    for r in range(repeats):
        wall = cpu = 0.0
        for c in cells:
            dt, dc, _ = _one_iteration([c], grid, spec, dqn, one, seed=r)
            wall += dt
            cpu += dc
        seq.append(len(cells) / wall)
        seq_cpu.append(len(cells) / cpu)
        dt, dc, info = _one_iteration(cells, grid, spec, dqn, one, seed=r)
        bat.append(len(cells) / dt)
        bat_cpu.append(len(cells) / dc)
        split.append((info["collect_s"], info["train_s"]))
    s, b = statistics.median(seq), statistics.median(bat)
    sc, bc = statistics.median(seq_cpu), statistics.median(bat_cpu)
    return {
        "figure": "meta_iteration",
        "cells": len(cells),
        "sequential_cells_per_s": s,
        "batched_cells_per_s": b,
        "speedup": b / s,
        "sequential_cells_per_cpu_s": sc,
        "batched_cells_per_cpu_s": bc,
        "speedup_cpu": bc / sc,
        "batched_collect_s": statistics.median(x[0] for x in split),
        "batched_train_s": statistics.median(x[1] for x in split),
        "repeats_sequential": seq,
        "repeats_batched": bat,
    }


def _worker(args) -> None:
    barrier, queue, cells, grid_dict, spec_dict, dqn_dict, cfg_dict, iterations = args
    grid = ConditionGrid.from_dict(grid_dict)
    spec = QNetSpec(**spec_dict)
    cfg = ReptileConfig(**{**cfg_dict, "meta_iterations": iterations})
    barrier.wait()
    t0, c0 = time.perf_counter(), time.process_time()
    reptile_cells(cells, grid, spec, DQNConfig(**dqn_dict), cfg, seed=0)
    queue.put((time.perf_counter() - t0, time.process_time() - c0))


def bench_parallel(
    grid, spec, dqn, cfg: ReptileConfig, n_cells: int, repeats: int, workers: int = 2
) -> dict:
    ctx = mp.get_context("spawn")
    barrier, queue = ctx.Barrier(workers), ctx.Queue()
    chunks = [spread(grid.n_cells, n_cells, offset=w * 4 + 1) for w in range(workers)]
    procs = [
        ctx.Process(
            target=_worker,
            args=(
                (
                    barrier,
                    queue,
                    chunk,
                    grid.to_dict(),
                    spec.to_dict(),
                    dqn.to_dict(),
                    cfg.to_dict(),
                    repeats,
                ),
            ),
        )
        for chunk in chunks
    ]
    for p in procs:
        p.start()
    times = [queue.get(timeout=600) for _ in procs]
    for p in procs:
        p.join()
    total = sum(len(c) for c in chunks) * repeats
    walls = [t[0] for t in times]
    return {
        "figure": "parallel",
        "workers": workers,
        "cells_per_worker": len(chunks[0]),
        "iterations": repeats,
        "cells_per_s": total / max(walls),
        "worker_wall_s": walls,
        "worker_cpu_s": [t[1] for t in times],
    }


def extrapolate(
    batched_cells_per_s: float,
    parallel_cells_per_s: float | None = None,
    batched_cells_per_cpu_s: float | None = None,
) -> dict:
    """Wall time [s] of the bank build (729 cells x 100 meta-iterations):
    ``workers_1_s`` at the measured batched rate, ``workers_2_s`` at the
    measured rate of 2 workers, and ``*_idle_s``: the same from the CPU-time
    rate, i.e. on otherwise idle cores (``workers_2_idle_s`` assumes 2 free
    cores and no contention between the workers)."""
    work = BANK_CELLS * BANK_ITERATIONS
    out = {
        "figure": "extrapolation",
        "cells": BANK_CELLS,
        "meta_iterations": BANK_ITERATIONS,
        "workers_1_s": work / batched_cells_per_s,
    }
    if parallel_cells_per_s:
        out["workers_2_s"] = work / parallel_cells_per_s
    if batched_cells_per_cpu_s:
        out["workers_1_idle_s"] = work / batched_cells_per_cpu_s
        out["workers_2_idle_s"] = work / batched_cells_per_cpu_s / 2
    return out


def main(argv=None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--cells", type=int, default=81, help="cells of the batched meta-iteration")
    ap.add_argument("--collect-cells", type=int, default=27, help="tasks of the collection figure")
    ap.add_argument(
        "--models", type=int, nargs="+", default=[1, 27, 81, 729], help="M of the inner-loop figure"
    )
    ap.add_argument("--no-parallel", action="store_true", help="skip the 2-worker measurement")
    ap.add_argument(
        "--quick", action="store_true", help="tiny settings (a smoke test, not a measurement)"
    )
    ap.add_argument("--out", help="also write the JSON lines to this file")
    args = ap.parse_args(argv)
    if args.quick:
        args.repeats, args.cells, args.collect_cells, args.models = 1, 3, 3, [1, 3]
    grid = ConditionGrid()
    spec = QNetSpec(n_inputs(grid.n_paths, COMPLETION), grid.n_paths)  # the bank presets' MDP
    dqn = DQNConfig()
    cfg = ReptileConfig(decisions_per_task=64 if args.quick else 512)
    t_start = time.perf_counter()
    load0 = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    report = [bench_collect(grid, spec, cfg, args.collect_cells, args.repeats)]
    report += bench_inner(spec, cfg, dqn, args.models, args.repeats)
    meta = bench_meta_iteration(grid, spec, dqn, cfg, args.cells, args.repeats)
    report.append(meta)
    par = None
    if not args.no_parallel:
        par = bench_parallel(grid, spec, dqn, cfg, args.cells, args.repeats)
        report.append(par)
    report.append(
        extrapolate(
            meta["batched_cells_per_s"],
            par["cells_per_s"] if par else None,
            meta["batched_cells_per_cpu_s"],
        )
    )
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    report.append(
        {
            "figure": "run",
            "wall_s": time.perf_counter() - t_start,
            "cpus": os.cpu_count(),
            "load_avg_1min_start": load0,
            "load_avg_1min": load,
            "quick": bool(args.quick),
        }
    )
    lines = [json.dumps(r) for r in report]
    print("\n".join(lines))
    if args.out:
        with atomic_path(args.out) as tmp:
            tmp.write_text("\n".join(lines) + "\n")
    _table(report)
    return report


def _table(report: list[dict]) -> None:
    err = sys.stderr
    for r in report:
        f = r["figure"]
        if f == "collect":
            print(
                f"collection: {r['decisions_per_cpu_s']:8.0f} decisions/CPU-s  ({r['cpu_ms_per_task']:.1f} ms "
                f"CPU per {r['decisions_per_task']}-decision task; {r['short_tasks']}/{r['tasks']} short)",
                file=err,
            )
        elif f == "inner_loop":
            print(
                f"inner loop M={r['models']:4d}: {r['ms']:8.1f} ms  ({r['ms_per_model']:.2f} ms/model)",
                file=err,
            )
        elif f == "meta_iteration":
            print(
                f"meta-iteration, {r['cells']} cells: sequential {r['sequential_cells_per_s']:.1f} cells/s, "
                f"batched {r['batched_cells_per_s']:.1f} cells/s (speed-up {r['speedup']:.2f}x; batched "
                f"collect {r['batched_collect_s']:.2f} s + train {r['batched_train_s']:.2f} s)",
                file=err,
            )
            print(
                f"  per CPU-s: sequential {r['sequential_cells_per_cpu_s']:.1f}, batched "
                f"{r['batched_cells_per_cpu_s']:.1f} cells (speed-up {r['speedup_cpu']:.2f}x)",
                file=err,
            )
        elif f == "parallel":
            print(
                f"{r['workers']} workers x {r['cells_per_worker']} cells: {r['cells_per_s']:.1f} cells/s",
                file=err,
            )
        elif f == "extrapolation":
            two = f", 2 workers {r['workers_2_s'] / 60:.1f} min" if "workers_2_s" in r else ""
            print(
                f"729 cells x 100 meta-iterations: 1 worker {r['workers_1_s'] / 60:.1f} min{two}",
                file=err,
            )
            if "workers_1_idle_s" in r:
                print(
                    f"  on idle cores (CPU-time rate): 1 worker {r['workers_1_idle_s'] / 60:.1f} min, "
                    f"2 workers {r['workers_2_idle_s'] / 60:.1f} min",
                    file=err,
                )
        elif f == "run":
            print(
                f"benchmark wall {r['wall_s']:.0f} s on {r['cpus']} CPUs (1-min load average "
                f"{r['load_avg_1min_start']:.1f} at the start, {r['load_avg_1min']:.1f} at the end)",
                file=err,
            )


if __name__ == "__main__":
    main()
