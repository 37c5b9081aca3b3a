"""The meta-learning evidence experiment (falcon/experiments/meta_evidence.py, falcon/evidence_job.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from envs.errors import ConfigError
from falcon.experiments.meta_evidence import (
    HELD_OUT_TAG,
    START_POINTS,
    headline,
    held_out_task,
    plan_evidence,
    run_evidence,
    summarize_cell,
)
from metalearning.grid import ConditionGrid

#: a seconds-long protocol: 2 cells, 1 held-out task, 1 evaluation seed, 200 kB
TINY = [
    "experiment=meta_evidence",
    "tracking=none",
    "progress=false",
    "bank.reptile.meta_iterations=2",
    "bank.reptile.decisions_per_task=48",
    "evidence.n_cells=2",
    "evidence.tasks_per_cell=1",
    "evidence.eval_seeds=1",
    "evidence.finetune_decisions=48",
    "evidence.eval_size_bytes=200000",
    "evidence.max_duration_s=30",
    "+bank.generalist.tasks=2",
    "+bank.generalist.gradient_steps=20",
    "+bank.generalist.models=2",
    "+bank.generalist.checkpoints=1",
    "+bank.generalist.validation_tasks=1",
    "+bank.generalist.validation_episodes=2",
]
TINY_GENERALIST = {
    "tasks": 2,
    "gradient_steps": 20,
    "models": 2,
    "checkpoints": 1,
    "validation_tasks": 1,
    "validation_episodes": 2,
}

TINY_PLAIN = {
    "seed": 0,
    "bank": {
        "name": "tiny",
        "seed": 0,
        "reptile": {"meta_iterations": 2, "decisions_per_task": 48},
        "generalist": TINY_GENERALIST,
        "grid": {"bandwidth_mbps": [1, 1200]},
    },
    "evidence": {
        "n_cells": 2,
        "tasks_per_cell": 1,
        "eval_seeds": 1,
        "finetune_decisions": 48,
        "eval_size_bytes": 200000,
        "max_duration_s": 30.0,
    },
}


def _times(results: dict) -> list:
    return [
        (r["cell"], p, e["time_s"], e["path0_share"])
        for r in results["cells"]
        for t in r["tasks"]
        for p, eps in t["episodes"].items()
        for e in eps
    ]


def test_tiny_job_end_to_end_and_deterministic(compose, tmp_path, mlflow_uri):
    from conftest import mlflow_runs

    from falcon.evidence_job import PLOT_FILE, RESULTS_FILE, run_evidence_job

    out = tmp_path / "out"
    cfg = compose(
        "train", [*TINY, f"output={out}", "tracking=mlflow", f"tracking.uri={mlflow_uri}"]
    )
    res = run_evidence_job(cfg)
    for name in (PLOT_FILE, RESULTS_FILE, "table.txt", "summary.json", "config.yaml"):
        assert (out / name).is_file(), name
    assert (out / PLOT_FILE).stat().st_size > 10_000
    assert len(res["cells"]) == 2
    for row in res["cells"]:
        (task,) = row["tasks"]
        assert set(task["episodes"]) == {
            *(f"{s}/{k}" for s in START_POINTS for k in ("zero_shot", "finetuned")),
            "minrtt",
            "fixed_path0",
            "fixed_path1",
        }
        assert all(len(v) == 1 and v[0]["time_s"] > 0 for v in task["episodes"].values())
        assert all(0 < n <= 48 for n in task["finetune_transitions"].values())
        s = row["summary"]
        assert s["winner"] in (*START_POINTS, "tie")
        assert s["meta_beats_both"] == (
            s["finetuned_median_s"]["meta"]
            < min(s["finetuned_median_s"]["random"], s["finetuned_median_s"]["joint"])
        )
    h = res["headline"]
    assert h["cells"] == 2 and h["meta_beats_both"] == sum(
        r["summary"]["meta_beats_both"] for r in res["cells"]
    )
    assert (
        res["cpu_s"]["generalist_cpu_s"] > 0
    )  # the build's generalist start: meta-models and joint model
    summary = json.loads((out / "summary.json").read_text())
    assert summary["headline"] == h and [c["name"] for c in summary["cells"]] == [
        r["name"] for r in res["cells"]
    ]
    assert "(a) beats (b) and (c) in" in (out / "table.txt").read_text()
    _, runs = mlflow_runs(mlflow_uri)
    (run,) = runs
    assert run.info.status == "FINISHED" and run.data.metrics["cells"] == 2.0
    assert run.data.params["evidence.finetune_steps"] == "16"
    # the same settings again (through the library call): the same numbers
    again = run_evidence(TINY_PLAIN, progress=None)
    assert [r["cell"] for r in again["cells"]] == [r["cell"] for r in res["cells"]]
    assert _times(again) == _times(res)
    assert again["headline"] == h


def test_bad_config_is_one_line_config_error(compose, tmp_path):
    from falcon.evidence_job import run_evidence_job

    for ev, match in (
        ({"cells": [729]}, "evidence.cells: 729 is not a cell"),
        ({"cells": ["cell_999"]}, "evidence.cells: 'cell_999' is not a cell"),
        ({"cells": [3, 3]}, "listed twice"),
        ({"finetune_steps": 0}, "evidence.finetune_steps: must be a positive integer"),
        ({"eval_seeds": -1}, "evidence.eval_seeds"),
        ({"finetune_epsilon": 2}, "evidence.finetune_epsilon"),
        ({"finetune_mix": -0.5}, "evidence.finetune_mix"),
        ({"n_cells": 1000}, "evidence.n_cells"),
        ({"K": 16}, "evidence: unknown key"),
    ):
        with pytest.raises(ConfigError, match=match) as e:
            plan_evidence({**TINY_PLAIN, "evidence": ev})
        assert "\n" not in str(e.value)
    # through the job: rejected before any run or output folder exists
    with pytest.raises(ConfigError, match="evidence.finetune_steps") as e:
        run_evidence_job(
            compose("train", [*TINY, "evidence.finetune_steps=0", f"output={tmp_path / 'o'}"])
        )
    assert "\n" not in str(e.value)
    assert not (tmp_path / "o").exists()


def test_cells_by_name_or_index_and_seeded_sample():
    plan = plan_evidence({**TINY_PLAIN, "evidence": {"cells": ["cell_004", 431]}})
    assert plan.cells == (4, 431)
    a = plan_evidence({**TINY_PLAIN, "evidence": {"n_cells": 12}}).cells
    assert (
        a == plan_evidence({**TINY_PLAIN, "evidence": {"n_cells": 12}}).cells and len(set(a)) == 12
    )
    assert a != plan_evidence({**TINY_PLAIN, "seed": 1, "evidence": {"n_cells": 12}}).cells


def test_held_out_tasks_differ_from_training_tasks():
    from metalearning.reptile import _streams

    plan = plan_evidence({**TINY_PLAIN, "evidence": {"cells": [100], "tasks_per_cell": 3}})
    grid: ConditionGrid = plan.grid
    base = plan.build.reptile.task_base
    train = [grid.sample_task(100, _streams(0, 100, i)[0], base=base)["paths"] for i in range(50)]
    held = [held_out_task(plan, 100, j)["paths"] for j in range(3)]
    assert all(h != t for h in held for t in train)
    assert held[0] != held[1]
    # the held-out entropy ends with a non-zero word (SeedSequence ignores trailing zeros only)
    assert (
        np.random.SeedSequence((0, 100, HELD_OUT_TAG, 1)).entropy
        != np.random.SeedSequence((0, 100, 0)).entropy
    )


def _task(times: dict[str, list[float]]) -> dict:
    return {
        "episodes": {
            p: [{"time_s": t, "timed_out": False, "path0_share": 0.5} for t in v]
            for p, v in times.items()
        },
        "diagnostics": {},
    }


def test_summarize_cell_winner_tie_and_spread():
    base = {"minrtt": [2.0, 2.0], "fixed_path0": [3.0, 3.0], "fixed_path1": [9.0, 9.0]}
    zs = {f"{s}/zero_shot": [5.0, 5.0] for s in START_POINTS}
    win = summarize_cell(
        [
            _task(
                {
                    **base,
                    **zs,
                    "meta/finetuned": [1.0, 1.5],
                    "random/finetuned": [2.0, 1.0],
                    "joint/finetuned": [4.0, 4.0],
                }
            )
        ],
        threshold=0.1,
    )
    assert win["winner"] == "meta" and win["meta_beats_both"]
    assert win["meta_faster_than_random"] == 0.5 and win["meta_faster_than_joint"] == 1.0
    assert win["spread"] == pytest.approx((9.0 - 1.25) / 1.25) and win["matters"]
    assert win["zero_shot_winner"] == "tie" and not win["meta_beats_both_zero_shot"]
    assert win["single_path_share"] == 0.0 and win["meta_same_as_random"] == 0.0
    tie = summarize_cell(
        [_task({**base, **zs, **{f"{s}/finetuned": [2.0, 2.0] for s in START_POINTS}})], 0.1
    )
    assert tie["winner"] == "tie" and not tie["meta_beats_both"]
    flat = summarize_cell(
        [_task({p: [2.0, 2.0] for p in [*base, *zs, *(f"{s}/finetuned" for s in START_POINTS)]})],
        0.1,
    )
    assert flat["spread"] == 0.0 and not flat["matters"]
    h = headline([{"summary": win}, {"summary": tie}, {"summary": flat}])
    assert (h["cells"], h["meta_beats_both"], h["majority"]) == (3, 1, False)
    assert h["where_choice_matters"]["cells"] == 2 and h["winners"]["tie"] == 2
