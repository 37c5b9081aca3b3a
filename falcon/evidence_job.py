"""The meta-learning evidence job: ``python -m falcon.train experiment=meta_evidence``.

Runs :func:`falcon.experiments.meta_evidence.run_evidence` (does few-shot adaptation
from a cell's meta-model beat a random start and a jointly trained start on
held-out tasks of that cell?) with the settings of
``configs/experiment/meta_evidence.yaml``: the ``evidence:`` section (the
protocol), the ``bank`` preset (how the meta-models and the joint model are
trained; default ``paper``) and ``seed`` (test cells, held-out tasks,
evaluation seeds). Progress goes to stderr, the per-cell table to stdout.

Output folder (``output=`` or ``results/meta_evidence/<time>-<run id>``,
written atomically): ``evidence.json`` (every episode), ``table.txt``,
``meta_evidence.png`` (per cell: median download time after K fine-tuning
steps for (a), (b), (c) with minRTT as a reference, and the same before
fine-tuning), ``config.yaml``, ``summary.json`` (headline and per-cell
summaries). The MLflow run holds the settings as params, per-cell medians and
the headline counts as metrics, and the folder as artifacts.
"""

from __future__ import annotations

import json
import math
import shlex
import sys
from pathlib import Path

import numpy as np
import yaml

from envs.errors import ConfigError
from falcon.config import check_int, to_plain
from falcon.experiment import info, output_dir
from falcon.experiments.meta_evidence import (
    LABELS,
    START_POINTS,
    evidence_table,
    plan_evidence,
    run_evidence,
)

PLOT_FILE = "meta_evidence.png"
RESULTS_FILE = "evidence.json"
COLORS = {"meta": "tab:blue", "random": "tab:gray", "joint": "tab:orange"}


def evidence_config(cfg) -> dict:
    """The plain mapping :func:`falcon.experiments.meta_evidence.plan_evidence` takes, from the composed config."""
    from falcon.bank_job import bank_config

    ev = to_plain(cfg.get("evidence"))
    if ev is not None and not isinstance(ev, dict):
        raise ConfigError(f"evidence: expected a mapping, got {ev!r}")
    return {
        "evidence": dict(ev or {}),
        "bank": bank_config(cfg.get("bank") or "paper"),
        "seed": check_int(cfg, "seed", 0),
    }


def _quartiles(row: dict, policy: str) -> tuple[float, float]:
    v = [
        e["time_s"]
        for t in row["tasks"]
        for e in t["episodes"][policy]
        if math.isfinite(e["time_s"])
    ]
    return (float(np.percentile(v, 25)), float(np.percentile(v, 75))) if v else (math.nan, math.nan)


def plot_evidence(results: dict, out: Path) -> Path:
    """Per cell, median download time of (a), (b), (c) after K steps (top) and
    before fine-tuning (bottom), p25-p75 whiskers, minRTT as a black tick."""
    from baselines.mpl import use_agg

    use_agg()
    import matplotlib.pyplot as plt

    rows = results["cells"]
    ev = results["settings"]["evidence"]
    n = len(rows)
    x = np.arange(n)
    w = 0.26
    fig, axes = plt.subplots(2, 1, figsize=(max(7.0, 0.85 * n + 2.5), 7.5), sharex=True)
    for ax, kind, title in (
        (axes[0], "finetuned", f"after K={ev['finetune_steps']} fine-tuning steps"),
        (axes[1], "zero_shot", "before fine-tuning (zero-shot)"),
    ):
        for j, s in enumerate(START_POINTS):
            med = np.array([r["summary"]["median_s"][f"{s}/{kind}"] for r in rows])
            q = np.array([_quartiles(r, f"{s}/{kind}") for r in rows]).reshape(n, 2)
            err = np.vstack([np.clip(med - q[:, 0], 0, None), np.clip(q[:, 1] - med, 0, None)])
            ax.bar(
                x + (j - 1) * w,
                med,
                w,
                color=COLORS[s],
                label=LABELS[s],
                yerr=err,
                capsize=2,
                error_kw={"elinewidth": 0.8, "alpha": 0.7},
            )
        mr = [r["summary"]["median_s"]["minrtt"] for r in rows]
        ax.hlines(mr, x - 1.6 * w, x + 1.6 * w, colors="black", linewidth=2, label="minRTT")
        for i, r in enumerate(rows):
            if not r["summary"]["matters"]:
                ax.axvspan(i - 0.5, i + 0.5, color="0.9", zorder=0)
            if kind == "finetuned" and r["summary"]["meta_beats_both"]:
                ax.annotate(
                    "*",
                    (i, r["summary"]["median_s"]["meta/finetuned"]),
                    ha="center",
                    va="bottom",
                    fontsize=14,
                    color=COLORS["meta"],
                )
        ax.set_yscale("log")
        ax.set_ylabel("median download time [s]")
        ax.set_title(title)
        ax.grid(alpha=0.3, axis="y")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(
        handles, labels, loc="upper center", ncol=4, fontsize="small", bbox_to_anchor=(0.5, 0.94)
    )
    axes[1].set_xticks(x, [r["name"] for r in rows], rotation=45, ha="right")
    h = results["headline"]
    fig.suptitle(
        f"Meta-learning evidence: {ev['eval_size_bytes'] / 1e6:g} MB downloads, {ev['tasks_per_cell']} "
        f"held-out tasks x {ev['eval_seeds']} seeds per cell\n(a) beats (b) and (c) in "
        f"{h['meta_beats_both']}/{h['cells']} cells (*); grey: the path choice barely matters",
        fontsize="medium",
    )
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    path = Path(out) / PLOT_FILE
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _metrics(results: dict) -> dict[str, float]:
    out = {}
    for r in results["cells"]:
        s = r["summary"]
        for p, v in s["median_s"].items():
            if math.isfinite(v):
                out[f"{r['name']}/{p.replace('/', '_')}_median_s"] = v
        out[f"{r['name']}/meta_beats_both"] = float(s["meta_beats_both"])
        out[f"{r['name']}/spread"] = s["spread"] if math.isfinite(s["spread"]) else -1.0
    h = results["headline"]
    out.update(
        {
            "cells": float(h["cells"]),
            "meta_beats_both": float(h["meta_beats_both"]),
            "majority": float(h["majority"]),
            "matters_cells": float(h["where_choice_matters"]["cells"]),
            "matters_meta_beats_both": float(h["where_choice_matters"]["meta_beats_both"]),
        }
    )
    out.update({f"wins_{k}": float(v) for k, v in h["winners"].items()})
    out.update({k: float(v) for k, v in results["cpu_s"].items()})
    out["wall_s"] = float(results["wall_s"])
    return out


def _summary(results: dict, run_id: str | None) -> dict:
    cells = [
        {"cell": r["cell"], "name": r["name"], "ranges": r["ranges"], **r["summary"]}
        for r in results["cells"]
    ]
    return {
        "job": "meta_evidence",
        "headline": results["headline"],
        "cells": cells,
        "settings": results["settings"],
        "cpu_s": results["cpu_s"],
        "wall_s": results["wall_s"],
        "mlflow_run_id": run_id,
    }


def run_evidence_job(cfg) -> dict:
    """``experiment=meta_evidence``: run the experiment, tracked; returns the results dict."""
    from falcon.cli import staged_output
    from falcon.tracking import flatten, tracked_run

    plain = evidence_config(cfg)
    plan = plan_evidence(plain)  # bad settings fail here, before a run is opened
    tracking = to_plain(cfg.get("tracking")) or {"enabled": False}
    run_name = tracking.get("run_name") or f"meta_evidence:{plan.build.name}:{len(plan.cells)}cells"
    tags = {
        "falcon.job": "meta_evidence",
        "falcon.bank": plan.build.name,
        "falcon.command": shlex.join(["python -m falcon.train", *sys.argv[1:]]),
    }
    with tracked_run(tracking, run_name=run_name, tags=tags) as tracker:
        tracker.log_params(
            flatten(
                {
                    "evidence": plain["evidence"],
                    "bank": plain["bank"],
                    "seed": plan.seed,
                    "cells": [int(c) for c in plan.cells],
                }
            )
        )
        out = output_dir(cfg, "meta_evidence", tracker.run_id)
        with staged_output(out) as tmp:
            results = run_evidence(plan, progress=info if cfg.get("progress", True) else None)
            table = evidence_table(results)
            (tmp / "table.txt").write_text(table + "\n")
            plot_evidence(results, tmp)
            (tmp / RESULTS_FILE).write_text(json.dumps(results, indent=1, allow_nan=True) + "\n")
            (tmp / "config.yaml").write_text(yaml.safe_dump(to_plain(cfg), sort_keys=False))
            summary = _summary(results, tracker.run_id)
            (tmp / "summary.json").write_text(
                json.dumps(summary, indent=1, allow_nan=True) + "\n"
            )  # last
        tracker.log_metrics(_metrics(results))
        tracker.set_tags(
            {
                "falcon.meta_beats_both": f"{results['headline']['meta_beats_both']}/"
                f"{results['headline']['cells']}"
            }
        )
        tracker.log_artifacts(out)
    print(table, flush=True)
    info(f"meta_evidence: results in {out}")
    if tracker.run_id:
        info(f"mlflow run {tracker.run_id} in {tracker.uri}")
    return results


__all__ = ["run_evidence_job", "plot_evidence", "evidence_config"]
