"""End-to-end tests of python -m falcon.evaluate / falcon.train on tiny configs."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from conftest import mlflow_runs

TINY = ["experiment=tiny"]


def _check_stats(stats: dict) -> None:
    vals = [v for v in stats["values"] if v is not None]
    assert stats["n"] == len(stats["values"])
    assert math.isclose(stats["median"], float(np.median(vals)))
    assert math.isclose(stats["mean"], float(np.mean(vals)))
    assert stats["p25"] <= stats["median"] <= stats["p75"]


def test_evaluate_end_to_end(run_cli, tmp_path, mlflow_uri):
    out = tmp_path / "out"
    res = run_cli(
        "evaluate",
        *TINY,
        "agent_list=[minrtt,ecf]",
        "runs=3",
        "seed=5",
        f"output={out}",
        f"tracking.uri={mlflow_uri}",
    )
    assert res.returncode == 0, res.stderr
    # the table: a header and one row per scheduler
    assert "download_time_s median [p25, p75]" in res.stdout
    rows = [line.split()[0] for line in res.stdout.splitlines()]
    assert "minrtt" in rows and "ecf" in rows

    summary = json.loads((out / "summary.json").read_text())
    assert summary["schema_version"] == 1
    assert summary["schedulers"] == ["minrtt", "ecf"]
    assert summary["seeds"] == [5, 6, 7]
    block = summary["results"]["static_4g_5g"]["bulk"]
    for sched in ("minrtt", "ecf"):
        for metric in ("download_time_s", "goodput_mbps", "oqs_mean_bytes", "retransmissions"):
            stats = block[sched][metric]
            assert stats["n"] == 3 and len(stats["values"]) == 3
            _check_stats(stats)
        assert all(v > 0 for v in block[sched]["download_time_s"]["values"])
    assert (out / "table.txt").read_text().strip() in res.stdout
    assert (out / "download_time_s__static_4g_5g__bulk.png").stat().st_size > 1000
    assert (out / "config.yaml").is_file() and (out / "plan.yaml").is_file()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out.")]  # no staging left

    client, runs = mlflow_runs(mlflow_uri)
    assert len(runs) == 1
    run = runs[0]
    assert run.info.status == "FINISHED"
    assert run.info.run_id == summary["mlflow_run_id"]
    assert run.data.params["runs"] == "3"
    assert run.data.params["scenario.paths.0.link"] == "4g"
    assert run.data.params["agent_names"] == "minrtt,ecf"
    assert math.isclose(
        run.data.metrics["minrtt/download_time_s_median"],
        block["minrtt"]["download_time_s"]["median"],
    )
    artifacts = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {
        "summary.json",
        "table.txt",
        "config.yaml",
        "download_time_s__static_4g_5g__bulk.png",
    } <= artifacts


def test_train_evaluates_rule_based_agents(run_cli, tmp_path, mlflow_uri):
    out = tmp_path / "out"
    res = run_cli("train", *TINY, f"output={out}", f"tracking.uri={mlflow_uri}")
    assert res.returncode == 0, res.stderr
    assert "'minrtt' has nothing to train" in res.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["job"] == "train" and summary["schedulers"] == ["minrtt", "rr"]
    _, runs = mlflow_runs(mlflow_uri)
    assert [r.info.status for r in runs] == ["FINISHED"]
    assert runs[0].data.tags["falcon.job"] == "train"


def test_train_section_on_a_scheduler_without_training_is_one_error_line(run_cli, tmp_path):
    res = run_cli(
        "train",
        *TINY,
        "agent=minrtt",
        "+agent.train={episodes: 1}",
        f"output={tmp_path / 'out'}",
        "tracking=none",
        timeout=120,
    )
    assert res.returncode == 2
    assert res.stderr.strip().splitlines()[-1] == (
        "error: agent 'minrtt': has a train: section but MinRTT has no "
        "training step (not an envs.scheduler.Trainable)"
    )


def test_train_trains_a_learning_agent(run_cli, tmp_path, mlflow_uri):
    out = tmp_path / "out"
    res = run_cli(
        "train",
        *TINY,
        "agent=minrtt",
        "agent._target_=learner_stub.StubLearner",
        "+agent.tag=t1",
        "+agent.train={episodes:2}",
        f"output={out}",
        f"tracking.uri={mlflow_uri}",
    )
    assert res.returncode == 0, res.stderr
    assert "training agent 'minrtt'" in res.stderr
    model = json.loads((out / "models" / "minrtt" / "model.json").read_text())
    assert model["tag"] == "t1" and model["episodes"] == 2 and model["mean_download_time_s"] > 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["schedulers"] == ["minrtt"]  # agent= on the command line: that agent alone
    client, runs = mlflow_runs(mlflow_uri)
    run = runs[0]
    assert run.info.status == "FINISHED"
    assert "train/minrtt/mean_download_time_s" in run.data.metrics
    assert len(client.get_metric_history(run.info.run_id, "train/minrtt/download_time_s")) == 2
    assert [a.path for a in client.list_artifacts(run.info.run_id, "models/minrtt")] == [
        "models/minrtt/model.json"
    ]


def test_multirun_sweep(run_cli, tmp_path, mlflow_uri):
    out = tmp_path / "sweep"
    res = run_cli(
        "evaluate",
        "-m",
        *TINY,
        "runs=1",
        "agent_list=[minrtt]",
        "scenario=static_4g_5g,single_path",
        f"output={out}",
        f"tracking.uri={mlflow_uri}",
    )
    assert res.returncode == 0, res.stderr
    scen = [json.loads((out / str(i) / "summary.json").read_text())["scenarios"] for i in (0, 1)]
    assert scen == [["static_4g_5g"], ["single_path"]]
    _, runs = mlflow_runs(mlflow_uri)
    assert [r.info.status for r in runs] == ["FINISHED", "FINISHED"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["agent_list=[minrtt,nosuch]"], "unknown agent 'nosuch' (known: "),
        (["scenario=nosuch"], "unknown scenario 'nosuch' (known: "),
        (["runs=abc"], "runs: expected an integer >= 1, got 'abc'"),
        (["scenario.paths.0.loss=2"], "paths[0].loss"),
        (["scenario.paths.1.trace=no/such/trace.csv"], "trace no/such/trace.csv: no such file"),
        (["scenario.nosuchkey=1"], "unknown config key 'scenario.nosuchkey': Could not override"),
        (
            ["scenario.ack={every: 2, nosuch: 1}"],
            "cannot add 'nosuch' to 'scenario.ack' by replacing the whole mapping",
        ),
    ],
)
def test_bad_input_is_one_error_line(run_cli, tmp_path, args, message):
    out = tmp_path / "out"
    res = run_cli("evaluate", *TINY, *args, f"output={out}", "tracking=none", timeout=120)
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), res.stderr
    assert message in lines[0]
    assert not out.exists() and not any(p.name.startswith(".out") for p in tmp_path.iterdir())


def test_train_default_is_the_main_job(compose):
    from falcon.config import make_plan

    cfg = compose("train")
    plan = make_plan(
        cfg, choices={"scenario": "static_4g_5g", "app": "bulk", "agent": "minrtt"}, cli_keys=set()
    )
    assert [n for n, _ in plan.agents] == ["falcon", "minrtt", "blest", "ecf", "rr"]
    assert dict(plan.agents)["falcon"]["bank"] is None  # the run's bank= preset
    assert cfg.bank.name == "quick" and cfg.job == "train"
    assert [n for n, _ in plan.scenarios] == [
        "static_4g_5g",
        "static_4g_wlan",
        "static_5g_wlan",
        "mobile_5g_5g",
    ]  # Fig. 2
    assert plan.seeds == list(range(120))  # the paper's repetitions
    assert cfg.runtime.name == "local" and cfg.tracking.enabled


def test_console_scripts_name_the_entry_points(tmp_path):
    """falcon-train, falcon-evaluate, falcon-export and falcon-bench
    (pyproject.toml) each point at the main() of its ``python -m`` module, and
    the installed ones find their configs from any working directory."""
    import importlib
    import subprocess
    import sys
    import tomllib
    from pathlib import Path

    scripts = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())[
        "project"
    ]["scripts"]
    assert set(scripts) == {"falcon-train", "falcon-evaluate", "falcon-export", "falcon-bench"}
    for name, target in scripts.items():
        module, func = target.split(":")
        package = "falcon." + name.split("-")[1]
        assert module in (package, package + ".__main__") and callable(
            getattr(importlib.import_module(module), func)
        )
        script = Path(sys.executable).parent / name
        if script.exists():  # installed by make setup (editable)
            res = subprocess.run(
                [str(script), "--help"], cwd=tmp_path, capture_output=True, text=True, timeout=120
            )
            expected = (
                "usage: python -m falcon.bench"
                if name == "falcon-bench"
                else "== What the keys mean =="
            )
            assert res.returncode == 0 and expected in res.stdout, res.stderr


def test_multirun_writes_one_summary_of_the_sweep(run_cli, tmp_path):
    out = tmp_path / "sweep"
    res = run_cli(
        "evaluate",
        "-m",
        *TINY,
        "runs=1",
        "agent_list=[minrtt,rr]",
        "scenario=static_4g_5g,single_path",
        f"output={out}",
        "tracking=none",
    )
    assert res.returncode == 0, res.stderr
    data = json.loads((out / "multirun_summary.json").read_text())
    jobs = data["jobs"]
    assert [j["num"] for j in jobs] == [0, 1]
    assert [
        "scenario=static_4g_5g" in jobs[0]["overrides"],
        "scenario=single_path" in jobs[1]["overrides"],
    ] == [True, True]
    for j, scen in zip(jobs, ("static_4g_5g", "single_path")):
        assert j["output"] == str(out / str(j["num"]))
        one = json.loads((out / str(j["num"]) / "summary.json").read_text())
        assert (
            j["medians"][scen]["bulk"]["rr"]["download_time_s"]
            == one["results"][scen]["bulk"]["rr"]["download_time_s"]["median"]
        )
    table = (out / "multirun_table.txt").read_text().splitlines()
    assert len(table) == 1 + 2 * 2 and "single_path" in table[-1]


def test_evaluating_rule_based_schedulers_does_not_import_torch(tmp_path):
    """Rule-based runs start fast: torch (~1.6 s to import) is loaded only
    when a learned scheduler or a bank is needed."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from hydra import compose, initialize_config_dir\n"
        "from falcon.config import CONFIG_DIR\n"
        "from falcon.evaluate import run_evaluate_job\n"
        "with initialize_config_dir(str(CONFIG_DIR), version_base='1.3'):\n"
        "    cfg = compose('evaluate', ['agent_list=[minrtt,ecf]', 'runs=1', 'tracking=none',\n"
        f"                              'progress=false', 'output={tmp_path / 'out'}'])\n"
        "run_evaluate_job(cfg)\n"
        "print('torch' in sys.modules)\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip().splitlines()[-1] == "False"
