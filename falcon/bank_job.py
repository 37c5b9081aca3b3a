"""The bank-building job: ``python -m falcon.train experiment=build_bank [bank=paper] [runtime=ray]``.

Builds the meta-model bank of ``configs/bank/<preset>.yaml`` (one meta-model
per condition cell, :mod:`metalearning.build`) into the preset's ``path``,
with progress on stderr, resumable checkpoints, and an MLflow run holding the
settings, the convergence curve (mean inner-loop loss per meta-iteration) as
metrics and as a plot, and a summary. A bank that already exists with the
same settings is reused unless ``rebuild=true``.

:func:`ensure_bank` is the same step for the agents that need a bank (FALCON's
``fit``): reuse or build, then return the loaded bank. Jobs that ask for the
same bank at once build it once: the first builds under the lock file
``<path>.lock`` (:mod:`falcon.locks`), the others wait, saying so in one
line, and reuse it.
"""

from __future__ import annotations

import functools
import json
import math
import shlex
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from envs.errors import ConfigError
from falcon.config import check_runtime, load_group, to_plain
from falcon.experiment import info, output_dir
from falcon.locks import lock_beside
from falcon.paths import bank_cache_path

if TYPE_CHECKING:
    from metalearning.bank import MetaModelBank

SUMMARY_FILE = "bank_summary.json"


def bank_config(bank) -> dict:
    """A bank build config: a preset name (``configs/bank/<name>.yaml``) or a
    mapping. Its ``path`` is the file the bank is read from or built into:
    as given, or when null the user cache's file of the build's fingerprint
    (:func:`falcon.paths.bank_cache_path`), the same from every working folder."""
    if isinstance(bank, str):
        cfg = to_plain(load_group("bank", bank))
    else:
        bank = to_plain(bank)
        if not isinstance(bank, Mapping):
            raise ConfigError(f"bank: expected a preset name or a mapping, got {bank!r}")
        cfg = dict(bank)
    if not cfg.get("path"):
        from metalearning.build import BankBuildSpec  # torch: only when a bank is needed

        spec = BankBuildSpec.from_config(cfg)
        cfg["path"] = str(bank_cache_path(spec.name, spec.fingerprint()))
    return cfg


def _runner(runtime: Mapping | None, progress: bool):
    from falcon.runtime import run_jobs

    rt = check_runtime(dict(runtime or {"name": "local", "workers": 1}))
    return functools.partial(run_jobs, runtime=rt, progress=progress, desc="bank chunks"), rt


def ensure_bank(
    bank, runtime: Mapping | None = None, *, rebuild: bool = False, progress: bool = True, log=None
) -> tuple[MetaModelBank, bool]:
    """The bank of ``bank`` (preset name or config): read it from its path when
    it was built with the same settings, else build it (once across processes:
    one that finds another building it waits, then reuses it, even with
    ``rebuild``). Returns ``(bank, built)``."""
    from metalearning.build import BankBuildSpec, bank_matches  # torch: only when a bank is needed

    cfg = bank_config(bank)
    path = cfg["path"]
    spec = BankBuildSpec.from_config(cfg)
    if not rebuild and bank_matches(path, spec):
        return _reused(path, spec), False
    with lock_beside(
        path, waiting=f"bank: another process is building {path}; waiting for it"
    ) as waited:
        if (waited or not rebuild) and bank_matches(path, spec):
            return _reused(path, spec, ", built by another process meanwhile,"), False
        return _build(spec, path, runtime, progress, log), True


def _reused(path, spec, how: str = "") -> MetaModelBank:
    from falcon.online.bank_cache import cached_bank  # the copy FALCON's schedulers then share

    info(f"bank: reusing {path}{how} (preset {spec.name!r}, fingerprint {spec.fingerprint()})")
    return cached_bank(str(path))


def _build(spec, path, runtime: Mapping | None, progress: bool, log) -> MetaModelBank:
    from metalearning.build import build_bank

    run_jobs, rt = _runner(runtime, progress)
    n_chunks = len(spec.chunks())
    info(
        f"bank: building {spec.grid.n_cells} meta-models (preset {spec.name!r}, "
        f"{spec.reptile.meta_iterations} meta-iterations per cell, {n_chunks} chunks of "
        f"<= {spec.chunk_size} cells) on runtime={rt['name']} -> {path}"
    )
    t0 = time.perf_counter()
    bank_obj = build_bank(
        spec, path, run_jobs=run_jobs, progress=progress, runtime_label=rt["name"], log=log
    )
    info(f"bank: {spec.grid.n_cells} meta-models in {time.perf_counter() - t0:.1f} s -> {path}")
    return bank_obj


def resolve_agent_banks(plan, bank, runtime: Mapping | None = None, progress: bool = True):
    """Give every agent config of ``plan`` whose ``bank`` is null (FALCON's
    default) the run's bank: the file of ``bank`` (preset or config), reused
    when it was built with the same settings, else built now. Returns the plan."""
    needs = [
        i
        for i, (_, a) in enumerate(plan.agents)
        if isinstance(a, Mapping) and "bank" in a and a["bank"] is None
    ]
    if not needs:
        return plan
    cfg = bank_config(bank or "quick")
    ensure_bank(cfg, runtime, progress=progress)
    path = str(Path(cfg["path"]).resolve())
    from falcon.jobs import instantiate_agent

    agents = list(plan.agents)
    for i in needs:
        name, a = agents[i]
        agents[i] = (name, {**a, "bank": path})
        instantiate_agent(name, agents[i][1])  # fail now on a bad agent config
    plan.agents = agents
    return plan


def _plot_curve(curve: list[float], out: Path) -> Path | None:
    finite = [(i + 1, v) for i, v in enumerate(curve) if v is not None and math.isfinite(v)]
    if not finite:
        return None
    from baselines.mpl import use_agg

    use_agg()
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(
        [i for i, _ in finite], [v for _, v in finite], marker="o" if len(finite) < 30 else None
    )
    ax.set_xlabel("meta-iteration")
    ax.set_ylabel("mean inner-loop TD loss (all cells)")
    ax.set_title("Meta-model bank: Reptile convergence")
    ax.grid(alpha=0.3)
    from falcon.report import save_figure

    path = save_figure(fig, out / "bank_convergence.png")
    return path


def run_build_job(cfg) -> dict:
    """``experiment=build_bank``: build (or reuse) the configured bank, tracked."""
    from falcon.cli import staged_output
    from falcon.tracking import flatten, tracked_run
    from metalearning.build import BankBuildSpec

    bank_cfg = bank_config(cfg.get("bank") or "quick")
    spec = BankBuildSpec.from_config(bank_cfg)
    runtime = check_runtime(cfg.get("runtime"))
    tracking = to_plain(cfg.get("tracking")) or {"enabled": False}
    run_name = tracking.get("run_name") or f"build_bank:{spec.name}"
    tags = {
        "falcon.job": "build_bank",
        "falcon.bank": spec.name,
        "falcon.runtime": runtime["name"],
        "falcon.command": shlex.join(["python -m falcon.train", *sys.argv[1:]]),
    }
    progress = bool(cfg.get("progress", True))
    with tracked_run(tracking, run_name=run_name, tags=tags) as tracker:
        tracker.log_params(flatten({"bank": bank_cfg, "runtime": runtime}))
        out = output_dir(cfg, "build_bank", tracker.run_id)
        with staged_output(out) as tmp:
            t0 = time.perf_counter()
            bank, built = ensure_bank(
                bank_cfg,
                runtime,
                rebuild=bool(cfg.get("rebuild", False)),
                progress=progress,
                log=tracker.log_metrics,
            )
            wall = time.perf_counter() - t0
            meta = bank.meta
            curve = list(meta.get("loss_curve") or [])
            summary = {
                "job": "build_bank",
                "preset": spec.name,
                "path": str(bank_cfg["path"]),
                "built": built,
                "cells": spec.grid.n_cells,
                "meta_iterations_per_cell": spec.reptile.meta_iterations,
                "fingerprint": spec.fingerprint(),
                "wall_time_s": wall,
                "build_wall_s": meta.get("build_wall_s"),
                "runtime": runtime["name"],
                "loss_curve": curve,
                "mlflow_run_id": tracker.run_id,
            }
            _plot_curve(curve, tmp)
            (tmp / "bank.json").write_text(json.dumps(bank_cfg, indent=2, default=str) + "\n")
            (tmp / SUMMARY_FILE).write_text(json.dumps(summary, indent=2, default=str) + "\n")
            (tmp / "summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
        tracker.log_metrics({"bank/wall_time_s": wall, "bank/built": float(built)})
        # the bank file itself (~26 MB for 729 64x3 models) stays at bank.path;
        # the run records where it is and which settings made it
        tracker.set_tags(
            {
                "falcon.bank_path": str(Path(bank_cfg["path"]).resolve()),
                "falcon.bank_fingerprint": spec.fingerprint(),
            }
        )
        tracker.log_artifacts(out)
    info(f"bank summary: {out / SUMMARY_FILE}")
    return summary


__all__ = ["ensure_bank", "run_build_job", "bank_config", "resolve_agent_banks"]
