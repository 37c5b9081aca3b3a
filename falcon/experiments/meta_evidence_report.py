"""The statistics and the table of the meta-learning evidence
(:mod:`falcon.experiments.meta_evidence`): per cell, the medians and paired
comparisons of the start points, the headline counts, and the text table."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from metalearning.grid import ConditionGrid

#: the compared start points: (a) the cell's meta-model, (b) random init, (c) joint training
START_POINTS = ("meta", "random", "joint")
LABELS = {"meta": "(a) meta-model", "random": "(b) random init", "joint": "(c) joint training"}

# ---------------------------------------------------------------- statistics


def _median(values: Sequence[float]) -> float:
    finite = [v for v in values if math.isfinite(v)]
    return float(np.median(finite)) if finite else math.nan


def summarize_cell(tasks: Sequence[dict], threshold: float) -> dict:
    """One cell's statistics over its tasks x evaluation seeds.

    ``median_s`` per policy [s]; ``winner`` / ``meta_beats_both`` after
    fine-tuning and ``zero_shot_winner`` / ``meta_beats_both_zero_shot``
    before; paired shares of episodes where (a) is faster than / slower than
    / exactly as fast as (b) and (c); ``spread`` and ``matters`` (module
    docstring); diagnostics: ``single_path_share`` (share of the learned
    policies' episodes sending >= 95 % of the bytes on one path),
    ``greedy_agreement`` and ``greedy_path0_rate`` (on the fine-tuning
    states), ``timed_out`` counts, ``path0_share_median``.
    """
    policies = list(tasks[0]["episodes"])
    times = {p: [e["time_s"] for t in tasks for e in t["episodes"][p]] for p in policies}
    med = {p: _median(v) for p, v in times.items()}
    tuned = {s: med[f"{s}/finetuned"] for s in START_POINTS}
    zero = {s: med[f"{s}/zero_shot"] for s in START_POINTS}
    a = times["meta/finetuned"]
    paired = {}
    for other in ("random", "joint"):
        o = times[f"{other}/finetuned"]
        paired[f"meta_faster_than_{other}"] = float(np.mean([x < y for x, y in zip(a, o)]))
        paired[f"meta_slower_than_{other}"] = float(np.mean([x > y for x, y in zip(a, o)]))
        paired[f"meta_same_as_{other}"] = float(np.mean([x == y for x, y in zip(a, o)]))
    learned = [
        e["path0_share"]
        for t in tasks
        for p in policies
        if p.split("/")[0] in START_POINTS
        for e in t["episodes"][p]
    ]
    finite = [v for v in med.values() if math.isfinite(v)]
    spread = (max(finite) - min(finite)) / min(finite) if finite and min(finite) > 0 else math.nan
    timed_out = {
        p: int(sum(e["timed_out"] for t in tasks for e in t["episodes"][p])) for p in policies
    }
    share = {
        p: _median([e["path0_share"] for t in tasks for e in t["episodes"][p]]) for p in policies
    }
    diag = [t["diagnostics"] for t in tasks if "agreement" in t["diagnostics"]]
    agreement = {
        k: float(np.mean([d["agreement"][k] for d in diag]))
        for k in (diag[0]["agreement"] if diag else {})
    }
    path0_rate = {
        k: float(np.mean([d["greedy_path0_rate"][k] for d in diag]))
        for k in (diag[0]["greedy_path0_rate"] if diag else {})
    }
    return {
        "median_s": med,
        "finetuned_median_s": tuned,
        "zero_shot_median_s": zero,
        "winner": _winner(tuned),
        "meta_beats_both": _beats_both(tuned),
        "zero_shot_winner": _winner(zero),
        "meta_beats_both_zero_shot": _beats_both(zero),
        "single_path_share": float(np.mean([x <= 0.05 or x >= 0.95 for x in learned]))
        if learned
        else math.nan,
        "greedy_agreement": agreement,
        "greedy_path0_rate": path0_rate,
        **paired,
        "spread": spread,
        "matters": bool(math.isfinite(spread) and spread >= threshold),
        "timed_out": timed_out,
        "path0_share_median": share,
        "n_episodes": len(a),
    }


def _winner(medians: Mapping[str, float]) -> str:
    """The start point of the lowest median, ``tie`` when it is shared."""
    best = min(medians.values())
    leaders = [s for s in START_POINTS if medians[s] == best]
    return leaders[0] if len(leaders) == 1 else "tie"


def _beats_both(medians: Mapping[str, float]) -> bool:
    return bool(medians["meta"] < medians["random"] and medians["meta"] < medians["joint"])


def headline(cells: Sequence[dict]) -> dict:
    """Counts over the tested cells (and over those where the path choice matters)."""

    def count(rows):
        wins = {
            s: sum(1 for r in rows if r["summary"]["winner"] == s) for s in (*START_POINTS, "tie")
        }
        k = sum(1 for r in rows if r["summary"]["meta_beats_both"])
        zs = {
            s: sum(1 for r in rows if r["summary"]["zero_shot_winner"] == s)
            for s in (*START_POINTS, "tie")
        }
        return {
            "cells": len(rows),
            "meta_beats_both": k,
            "majority": k > len(rows) / 2,
            "winners": wins,
            "zero_shot_meta_beats_both": sum(
                1 for r in rows if r["summary"]["meta_beats_both_zero_shot"]
            ),
            "zero_shot_winners": zs,
        }

    matters = [r for r in cells if r["summary"]["matters"]]
    return {**count(cells), "where_choice_matters": count(matters)}


def _ranges(grid: ConditionGrid, cell: int) -> list[dict]:
    return [
        {k: [lo, hi if math.isfinite(hi) else None] for k, (lo, hi) in r.items()}
        for r in grid.ranges(cell)
    ]


def _fmt_range(lo, hi, scale=1.0) -> str:
    return f"{lo * scale:g}-{'inf' if hi is None else f'{hi * scale:g}'}"


def describe_cell(row: dict) -> str:
    """Short label of a cell's ranges: per path ``loss%/RTT ms/dev%``."""
    parts = []
    for r in row["ranges"]:
        parts.append(
            f"{_fmt_range(*r['loss'], 100)}%/{_fmt_range(*r['rtt_ms'])}ms/{_fmt_range(*r['dev_ratio'], 100)}%"
        )
    return " | ".join(parts)


def evidence_table(results: dict) -> str:
    """The per-cell table: medians [s] after K steps (a, b, c), zero-shot, minRTT, winner."""
    k = results["settings"]["evidence"]["finetune_steps"]
    head = [
        "cell",
        "(a) meta",
        "(b) random",
        "(c) joint",
        "zs (a)",
        "zs (b)",
        "zs (c)",
        "minRTT",
        "a<b",
        "a<c",
        "spread",
        "winner",
        "ranges path0 | path1 (loss/RTT/dev)",
    ]
    rows = []
    for r in results["cells"]:
        s = r["summary"]
        m = s["median_s"]
        rows.append(
            [
                r["name"],
                *(f"{m[f'{p}/finetuned']:.3g}" for p in START_POINTS),
                *(f"{m[f'{p}/zero_shot']:.3g}" for p in START_POINTS),
                f"{m['minrtt']:.3g}",
                f"{s['meta_faster_than_random']:.2f}",
                f"{s['meta_faster_than_joint']:.2f}",
                f"{s['spread']:.2f}" + ("" if s["matters"] else "*"),
                s["winner"] + (" !" if s["meta_beats_both"] else ""),
                describe_cell(r),
            ]
        )
    widths = [max(len(x[c]) for x in [head, *rows]) for c in range(len(head))]

    def line(cells):
        return "  ".join(
            c.ljust(w) if j in (0, len(cells) - 1) else c.rjust(w)
            for j, (c, w) in enumerate(zip(cells, widths))
        )

    h = results["headline"]
    hm = h["where_choice_matters"]
    ev = results["settings"]["evidence"]
    foot = [
        f"median download time [s] of {ev['eval_size_bytes']} B over {ev['tasks_per_cell']} held-out tasks x "
        f"{ev['eval_seeds']} seeds; (a)-(c): after K={k} fine-tuning steps; zs: zero-shot (before); "
        f"a<b, a<c: share of paired episodes where (a) is faster; ! = (a) beats both; "
        f"* = spread < {ev['matters_threshold']:g} (path choice barely matters)",
        f"(a) beats (b) and (c) in {h['meta_beats_both']}/{h['cells']} cells "
        f"(winners: {h['winners']}); where the choice matters: {hm['meta_beats_both']}/{hm['cells']}",
        f"zero-shot (before fine-tuning): (a) beats (b) and (c) in {h['zero_shot_meta_beats_both']}/{h['cells']} "
        f"cells (winners: {h['zero_shot_winners']})",
    ]
    return "\n".join(
        [line(head), "  ".join("-" * w for w in widths), *(line(r) for r in rows), *foot]
    )


__all__ = [
    "START_POINTS",
    "LABELS",
    "summarize_cell",
    "headline",
    "evidence_table",
    "describe_cell",
]
