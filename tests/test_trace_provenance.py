"""Every run says what it read: one line per trace file (format, sample period,
duration, mean / p5 / p95 rate, outage share) and each file's SHA-256 in
plan.yaml and the MLflow params (envs/traces/summary.py, falcon/trace_provenance.py)."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
import yaml
from conftest import mlflow_runs

from envs.traces import load_trace, traces_dir
from envs.traces.summary import summary_line, trace_stats, weighted_quantile
from falcon.trace_provenance import plan_traces, summary_lines, trace_params, traces_read

TMOBILE = "mahimahi_cellular_lte/TMobile-LTE-short.down"


def sha256(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_loaded_trace_knows_its_format_digest_and_sample_period(tmp_path):
    t = load_trace(TMOBILE)
    assert (t.format, t.sample_period_s, t.sha256) == (
        "mahimahi",
        1e-3,
        sha256(traces_dir() / TMOBILE),
    )
    f = tmp_path / "user.csv"
    f.write_text("time_ms,rate_kbps\n0,1000\n250,3000\n500,0\n750,2000\n")
    u = load_trace(f)
    assert (u.format, u.sample_period_s, u.sha256) == ("step", 0.25, sha256(f))


def test_stats_of_a_step_trace(tmp_path):
    """1 s at 10, 1 s at 0, 8 s at 20 Mbit/s: mean 17, p5 0, p95 20, 10 % of the time in an outage."""
    f = tmp_path / "s.csv"
    f.write_text("time_s,rate_mbps\n0,10\n1,0\n" + "".join(f"{t},20\n" for t in range(2, 10)))
    s = trace_stats(load_trace(f))
    assert (s.format, s.duration_s, s.sample_period_s, s.window_s) == ("step", 10.0, 1.0, 1.0)
    assert s.mean_mbps == pytest.approx(17.0)
    assert (s.p5_mbps, s.p95_mbps) == (0.0, 20.0)
    assert s.outage_share == pytest.approx(0.1)


def test_weighted_quantile():
    v, w = np.array([3.0, 1.0, 2.0]), np.array([1.0, 1.0, 8.0])
    assert [weighted_quantile(v, w, q) for q in (0.05, 0.1, 0.5, 0.95)] == [1.0, 1.0, 2.0, 3.0]


def test_the_summary_line_shows_a_unit_mistake_at_once(tmp_path):
    line = summary_line(load_trace(TMOBILE))
    assert line.startswith(
        f"trace {TMOBILE}: mahimahi, sample 1 ms, 140.0 s, mean 16.70 Mbit/s, p5 "
    )
    assert "(100 ms windows)" in line and "% of the time below 1 % of the mean" in line
    assert line.endswith(f"sha256 {sha256(traces_dir() / TMOBILE)[:16]}") and "\n" not in line
    f = tmp_path / "kbps_as_mbps.txt"  # kbit/s values read as Mbit/s
    f.write_text("0 12500\n1 12500\n")
    assert "mean 12500 Mbit/s" in summary_line(load_trace(f, "rate_series"))


def scenario(trace) -> dict:
    return {
        "name": "single_path",
        "paths": [{"trace": trace, "rtt_ms": 60}, {"bandwidth_mbps": 10, "rtt_ms": 20}],
    }


def test_params_and_plan_entries_tell_a_users_trace_from_the_stock_one(tmp_path):
    user = tmp_path / "mine.down"
    user.write_text("0\n1\n1\n3\n")
    stock, mine = traces_read([("a", scenario(TMOBILE))]), traces_read([("a", scenario(str(user)))])
    key = "scenario.paths.0.trace_sha256"
    assert trace_params(stock, 1) == {key: sha256(traces_dir() / TMOBILE)}
    assert trace_params(mine, 1) == {key: sha256(user)}
    both = traces_read(
        [("a", scenario(TMOBILE)), ("b", scenario({"file": str(user), "format": "mahimahi"}))]
    )
    assert set(trace_params(both, 2)) == {
        "scenario.a.paths.0.trace_sha256",
        "scenario.b.paths.0.trace_sha256",
    }
    assert plan_traces(both)[1] == {
        "scenario": "b",
        "path": 0,
        "file": str(user),
        "format": "mahimahi",
        "sha256": sha256(user),
    }
    assert len(summary_lines(both + stock)) == 2  # one line per distinct trace


def test_a_run_prints_and_records_what_it_read(tmp_path, mlflow_uri, compose, capsys):
    from falcon.experiment import run_pipeline

    user = tmp_path / "user.csv"
    user.write_text("time_s,rate_kbps\n0,12500\n1,12500\n")
    out = tmp_path / "out"
    cfg = compose(
        "evaluate",
        [
            "experiment=tiny",
            "scenario=single_path",
            "scenario.paths.0.bandwidth_mbps=null",
            f"scenario.paths.0.trace={user}",
            "agent_list=[minrtt]",
            "runs=1",
            "app.size_bytes=100000",
            f"output={out}",
            f"tracking.uri={mlflow_uri}",
            "progress=false",
        ],
    )
    run_pipeline(cfg, "evaluate")
    err = capsys.readouterr().err
    assert (
        f"trace {user}: step, sample 1 s, 2.0 s, mean 12.50 Mbit/s, p5 12.50 / p95 12.50 Mbit/s"
        in err
    )
    plan = yaml.safe_load((out / "plan.yaml").read_text())
    assert plan["traces"] == [
        {
            "scenario": "single_path",
            "path": 0,
            "file": str(user),
            "format": "step",
            "sha256": sha256(user),
        }
    ]
    _, (run,) = mlflow_runs(mlflow_uri)
    assert run.data.params["scenario.paths.0.trace_sha256"] == sha256(user)
