"""FALCON's online experiments (falcon/experiments/): each job end to end at a
tiny budget (its quick_variant) through run_job with a composed config and a
tiny in-memory bank, checking the outputs' structure and determinism, not the
outcome."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from conftest import mlflow_runs

from baselines.dqn.network import QNetSpec
from envs.errors import ConfigError
from falcon.experiments import common, convergence, k_impact, overhead, real_world, stress
from metalearning.bank import MetaModelBank
from metalearning.grid import ConditionGrid, PathCondition


@pytest.fixture(scope="module")
def tiny_bank():
    """729 untrained small networks: FALCON runs, selects and fine-tunes as usual."""
    return MetaModelBank.initial(ConditionGrid(), QNetSpec(8, 2, (16, 16, 16)), seed=3)


@pytest.fixture
def job_cfg(compose, tmp_path, monkeypatch, tiny_bank):
    monkeypatch.setattr(common, "experiment_bank", lambda cfg, progress=True: tiny_bank)

    def make(job, *extra, tracking="tracking=none"):
        return compose(
            "train",
            [
                f"experiment={job}",
                "quick=true",
                tracking,
                f"output={tmp_path / job}",
                "progress=false",
                *extra,
            ],
        )

    return make


# ---------------------------------------------------------------- helpers
def test_paired_score_is_the_geometric_mean_of_ratios_over_common_downloads():
    ref = {"a": 1.0, "b": 4.0, "d": 1.0}
    mine = {"a": 2.0, "b": 1.0, "e": 9.0}  # d / e unpaired
    score, n = common.paired_score(ref, mine)
    assert n == 2 and score == pytest.approx(math.sqrt(0.5 * 4.0))
    # a ratio of medians would see 1.5 / 1.5 here; pairing sees the per-download gain
    assert common.paired_score({"x": 1.0, "y": 2.0}, {"x": 0.5, "y": 1.0}) == (
        pytest.approx(2.0),
        2,
    )
    assert math.isnan(common.paired_score({"a": 1.0}, {"b": 1.0})[0])


def test_paired_score_ranks_an_unfinished_download_last():
    ref = {"a": 1.0, "b": 4.0, "c": 2.0}
    # left out, the unfinished download c would give sqrt(0.5 * 4) = 1.41
    assert common.paired_score(ref, {"a": 2.0, "b": 1.0, "c": math.nan}) == (0.0, 3)
    assert common.paired_score({**ref, "c": math.nan}, {"a": 2.0, "b": 1.0, "c": 3.0}) == (
        math.inf,
        3,
    )
    # neither finished c: a tie, the others' ratios stand
    score, n = common.paired_score({**ref, "c": math.inf}, {"a": 2.0, "b": 1.0, "c": math.nan})
    assert n == 3 and score == pytest.approx((0.5 * 4.0) ** (1 / 3))
    both = common.paired_score({"a": 1.0, "b": math.nan}, {"a": math.nan, "b": 1.0})
    assert math.isnan(both[0]) and both[1] == 2


def test_relative_score_ranks_unfinished_downloads_last():
    assert common.relative_score([1.0, 2.0, 3.0], [4.0, 4.0, math.nan]) == pytest.approx(0.5)
    # dropping the two unfinished downloads would put the median at 1.0 and score 2.0
    assert common.relative_score([2.0, 2.0, 2.0], [1.0, math.nan, math.nan]) == 0.0
    assert common.relative_score([1.0], [math.nan]) == 0.0
    assert math.isnan(common.relative_score([math.nan], [1.0]))
    assert math.isnan(common.relative_score([1.0], []))
    assert common.ranked_median([3.0, None, 1.0, 2.0]) == 2.5
    assert common.ranked_median([1.0, math.nan]) == math.inf
    assert math.isnan(common.ranked_median([]))


def test_bins():
    edges = common.log_bin_edges(100, 10_000, 2)
    assert (
        edges[0] == 0.0
        and edges[1] == 100
        and edges[-1] == pytest.approx(10_000)
        and len(edges) == 6
    )
    assert (
        common.bin_of(0, edges) == 0
        and common.bin_of(150, edges) == 1
        and common.bin_of(1e6, edges) is None
    )
    assert 0 < common.bin_centre(edges, 0) < 100 < common.bin_centre(edges, 1) < edges[2]
    with pytest.raises(ConfigError):
        common.log_bin_edges(100, 10, 1)


def test_packets_to_target_is_where_the_score_stays_above_it():
    def curve(*scores):
        return [
            {"n": 0 if s is None else 3, "score": s, "median_packets": float(100 * k)}
            for k, s in enumerate(scores)
        ]

    assert convergence.packets_to_target(curve(1.2, 1.0, 0.95), 0.9) == 0.0
    assert convergence.packets_to_target(curve(0.5, 0.95, 0.8, 0.92, 0.99), 0.9) == 300.0
    assert (
        convergence.packets_to_target(curve(0.5, None, 0.95, None), 0.9) == 200.0
    )  # empty bins skipped
    assert math.isnan(convergence.packets_to_target(curve(0.95, 0.5), 0.9))


def test_with_conditions_overrides_paths_only():
    base = {"name": "x", "paths": [{"link": "4g"}, {"link": "5g"}]}
    out = common.with_conditions(base, [{"rtt_ms": 80.0}, None])
    assert out["paths"][0] == {"link": "4g", "rtt_ms": 80.0} and out["paths"][1] == {"link": "5g"}
    assert base["paths"][0] == {"link": "4g"}
    with pytest.raises(ConfigError):
        common.with_conditions(base, [{}, {}, {}])


def test_shifted_schedule_starts_with_the_condition_in_force():
    scheds = stress.path_schedules(2, 0.5, 4, seed=1)
    assert scheds == stress.path_schedules(2, 0.5, 4, seed=1)
    # the conditions do not depend on the interval
    other = stress.path_schedules(2, 8.0, 4, seed=1)
    assert [{k: v for k, v in s.items() if k != "at_s"} for s in other[0]] == [
        {k: v for k, v in s.items() if k != "at_s"} for s in scheds[0]
    ]
    s = stress.shifted({"paths": [{"link": "4g"}, {"link": "5g"}]}, scheds, 0.7)
    seg = s["paths"][0]["schedule"]
    assert seg[0]["at_s"] == 0.0 and seg[0]["rtt_ms"] == scheds[0][1]["rtt_ms"]
    assert [x["at_s"] for x in seg[1:]] == pytest.approx([0.3, 0.8])


def test_sparse_bank_and_min_k(tiny_bank):
    grid = ConditionGrid(subranges=2)
    conds = [PathCondition(0.001, 29.2, 4.8), PathCondition(0.02, 80.0, 40.0)]
    cells = k_impact.cross_cells(grid, conds)
    assert grid.cell_index(conds) in cells and 1 < len(cells) <= 49
    spec = tiny_bank.spec
    trained = {c: np.full(tiny_bank.params.shape[1], 0.5, np.float32) for c in cells}
    bank = k_impact.SparseBank(grid, spec, trained, tiny_bank.params[0])
    assert bank.select(conds) in cells
    assert float(bank.weights(bank.select(conds))[0].mean()) == pytest.approx(0.5)
    outside = next(c for c in range(grid.n_cells) if c not in cells)
    assert np.allclose(
        np.concatenate([w.ravel() for w in bank.weights(outside)]), tiny_bank.params[0]
    )
    assert k_impact.min_k([1, 2, 4], [0.5, 0.96, 1.0], 0.95) == 2
    assert k_impact.min_k([1], [math.nan], 0.95) is None


# ---------------------------------------------------------------- jobs
def test_convergence_job(job_cfg, mlflow_uri, tmp_path):
    res = convergence.run_job(job_cfg("convergence", tracking=f"tracking.uri={mlflow_uri}"))
    out = tmp_path / "convergence"
    for name in ("convergence.json", "convergence.txt", "convergence.png", "summary.json"):
        assert (out / name).is_file(), name
    data = json.loads((out / "convergence.json").read_text())
    assert set(data["curves"]) == {"falcon", "dqn_on", "mpeekaboo"}
    edges = data["settings"]["bin_edges"]
    for curve in data["curves"].values():
        assert [r["bin"] for r in curve] == list(range(len(edges) - 1))
        assert sum(r["n"] for r in curve) == 2 * 3  # runs x downloads on B
    b = [
        r
        for r in data["records"]
        if r["phase"] == "B" and r["scheduler"] == "falcon" and r["run"] == 0
    ]
    assert b[0]["packets_before"] == 0 and b[1]["packets_before"] == b[0]["packets"]
    assert data["reference"]["median_time_s"] > 0
    # the reference: the best known policy on B, which A's best policy trails by >= 20 %
    assert data["reference"]["kind"] == "best_known" and data["reference"]["a_policy_gap"] >= 0.2
    assert set(data["start_scores"]) == set(data["curves"])
    assert set(data["packets_to_target"]) == set(data["curves"])
    assert "stays >= 0.9" in (out / "convergence.txt").read_text()
    client, runs = mlflow_runs(mlflow_uri)
    assert len(runs) == 1 and runs[0].info.run_id == res["mlflow_run_id"]
    assert "score/falcon" in runs[0].data.metrics
    assert {a.path for a in client.list_artifacts(runs[0].info.run_id)} >= {
        "convergence.png",
        "convergence.json",
    }


def test_convergence_is_reproducible(compose, tiny_bank):
    cfg = compose(
        "train",
        [
            "experiment=convergence",
            "quick=true",
            "quick_variant.convergence.schedulers=[falcon,mpeekaboo]",
            "runs=1",
        ],
    )
    _, sec, a, b, app = convergence.settings(cfg)
    r1 = convergence.run_convergence(sec, a, b, app, tiny_bank, progress=False)
    r2 = convergence.run_convergence(sec, a, b, app, tiny_bank, progress=False)
    key = [
        (r["scheduler"], r["phase"], r["index"], r["download_time_s"], r["packets"])
        for r in r1["records"]
    ]
    assert key == [
        (r["scheduler"], r["phase"], r["index"], r["download_time_s"], r["packets"])
        for r in r2["records"]
    ]
    assert r1["reference"]["times"] == r2["reference"]["times"]


def test_stress_job(job_cfg, tmp_path):
    res = stress.run_job(job_cfg("stress_paper"))
    out = tmp_path / "stress_paper"
    for name in ("stress.json", "stress.txt", "stress.png", "summary.json"):
        assert (out / name).is_file(), name
    data = json.loads((out / "stress.json").read_text())
    ivs = data["settings"]["intervals_s"]
    assert set(data["scores"]) == {"dqn_off", "falcon", "minrtt"}
    for rows in data["scores"].values():
        assert [r["interval_s"] for r in rows] == ivs and all(r["n"] >= 1 for r in rows)
    assert all(r["score"] == pytest.approx(1.0) for r in data["scores"]["dqn_off"])
    assert all(r["paired_score"] == pytest.approx(1.0) for r in data["scores"]["dqn_off"])
    for iv, row in zip(ivs, data["scores"]["minrtt"]):
        ref = {
            (r["seed_index"], r["condition"], r["download"]): r["download_time_s"]
            for r in data["records"]
            if r["scheduler"] == "dqn_off" and r["interval_s"] == iv
        }
        own = {
            (r["seed_index"], r["condition"], r["download"]): r["download_time_s"]
            for r in data["records"]
            if r["scheduler"] == "minrtt" and r["interval_s"] == iv
        }
        score, pairs = common.paired_score(ref, own)
        assert row["paired_score"] == pytest.approx(score) and row["pairs"] == pairs >= 1
    assert "paired score per change interval" in (out / "stress.txt").read_text()
    # each scheduler against the best other at each interval, where there are >= 3 paired downloads
    first = data["scores"]["minrtt"][0]
    assert first["pairs"] >= 3
    v = first["vs_best_other"]
    assert (
        v["best_other"] in {"dqn_off", "falcon"}
        and v["ratio_ci"][0] <= v["ratio"] <= v["ratio_ci"][1]
    )
    text = (out / "stress.txt").read_text()
    assert "best other scheduler's, 95 % bootstrap interval" in text
    # intervals over fewer than 5 paired downloads carry the one-line warning
    n = min(
        r["vs_best_other"]["n"]
        for rows in data["scores"].values()
        for r in rows
        if r.get("vs_best_other")
    )
    assert (f"the 95 % intervals rest on {n} runs" in text) == (n < 5)
    # every download starts within its condition; sessions are reproducible
    for r in data["records"]:
        assert r["start_s"] < (r["condition"] + 1) * r["interval_s"]
    again = stress.run_job(job_cfg("stress_paper"))
    assert [r["download_time_s"] for r in again["records"]] == [
        r["download_time_s"] for r in res["records"]
    ]


def test_stress_alternates_with_b_and_scores_against_the_best_known_policy(job_cfg, tmp_path):
    stress.run_job(job_cfg("stress", "quick_variant.stress.n_conditions=4"))
    data = json.loads((tmp_path / "stress" / "stress.json").read_text())
    ref = data["reference"]
    assert ref["kind"] == "best_known" and ref["a_policy_gap"] >= 0.2
    b = data["settings"]["condition_b"]
    # the conditions alternate A, B, A, B: A is the scenario's, B sets condition_b's fields
    sched = data["conditions"]["0"]
    for path, (p, over) in enumerate(zip(data["scenario"]["paths"], b, strict=True)):
        a = {k: p[k] for k in ("bandwidth_mbps", "rtt_ms", "rtt_std_ms", "loss")}
        for j, seg in enumerate(sched[path]):
            want = a if j % 2 == 0 else {**a, **(over or {})}
            assert {k: seg[k] for k in a} == pytest.approx(want), (path, j)
    # per interval, the reference is the candidate with the lowest median; it scores 1
    for iv, row in zip(data["settings"]["intervals_s"], data["scores"]["best_known"], strict=True):
        cands = {r["scheduler"] for r in data["records"] if r["scheduler"].startswith("known:")}
        med = {
            c: float(
                np.median(
                    [
                        r["download_time_s"]
                        for r in data["records"]
                        if r["scheduler"] == c and r["interval_s"] == iv
                    ]
                )
            )
            for c in cands
        }
        assert row["policy"] == min(med, key=med.get) and row["score"] == pytest.approx(1.0)
    assert "best known policy per interval" in (tmp_path / "stress" / "stress.txt").read_text()


@pytest.mark.parametrize(
    "extra, msg",
    [
        (["stress.changes=sometimes"], "stress.changes: expected one of"),
        (["stress.condition_b=[null]"], "stress.condition_b: expected one entry per path"),
        (["stress.condition_b=[{speed: 3}, null]"], r"stress.condition_b\[0\]: expected null or"),
        (["stress.changes=random"], "best_known needs changes: alternate"),
        (["stress.condition_b=[{loss: 2.0}, null]"], "loss"),
    ],
)
def test_bad_stress_settings_are_one_error_line(job_cfg, extra, msg):
    with pytest.raises(ConfigError, match=msg):
        stress.settings(job_cfg("stress", *extra))


def test_k_impact_job(job_cfg, tmp_path):
    k_impact.run_job(job_cfg("k_impact"))
    out = tmp_path / "k_impact"
    for name in ("k_impact.json", "k_impact.txt", "k_impact.png", "summary.json"):
        assert (out / name).is_file(), name
    data = json.loads((out / "k_impact.json").read_text())
    rows = data["curves"]["1"]["rows"]
    assert [r["k"] for r in rows] == data["settings"]["ks"] and all(r["n"] == 2 for r in rows)
    assert data["curves"]["1"]["min_k"] in data["settings"]["ks"]


def test_k_impact_with_a_sparse_bank(compose, tiny_bank):
    cfg = compose(
        "train", ["experiment=k_impact", "quick=true", "quick_variant.k_impact.ks=[2]", "runs=1"]
    )
    _, sec, a, b, app = k_impact.settings(cfg)
    sec["subranges"] = [2]
    grid = ConditionGrid(subranges=2)
    sparse = k_impact.SparseBank(
        grid, tiny_bank.spec, {0: tiny_bank.params[1]}, tiny_bank.params[0]
    )
    res = k_impact.run_k_impact(sec, a, b, app, lambda n: sparse, progress=False)
    assert res["banks"]["2"] == {"cells": grid.n_cells, "sparse": True, "trained_cells": 1}
    row = res["curves"]["2"]["rows"][0]
    assert row["untrained_selections"] <= row["selections"]


def test_overhead_job(job_cfg, tmp_path, mlflow_uri):
    res = overhead.run_job(job_cfg("overhead", tracking=f"tracking.uri={mlflow_uri}"))
    out = tmp_path / "overhead"
    for name in ("overhead.json", "overhead.txt", "overhead.png", "summary.json"):
        assert (out / name).is_file(), name
    data = json.loads((out / "overhead.json").read_text())
    sec = data["settings"]
    assert set(data["summary"]) == {"falcon", "minrtt"} and sec["change"]["at_s"] == 0.03
    n = round(sec["duration_s"] / sec["sample_s"])
    for recs in data["records"].values():
        assert len(recs) == sec["runs"]
        for r in recs:
            assert r["t_s"] == pytest.approx([sec["sample_s"] * (k + 1) for k in range(n)])
            assert len(r["cpu_ms"]) == len(r["memory_mb"]) == n and min(r["cpu_ms"]) >= 0.0
    # FALCON holds a learner, replay memories and its offline loop's copy of the bank: more than minRTT
    assert data["summary"]["falcon"]["memory_mb_end"] > data["summary"]["minrtt"]["memory_mb_end"]
    assert "falcon / minrtt" in (out / "overhead.txt").read_text()
    # the change is a schedule segment of the configured path
    assert res["scenario"]["paths"][0]["schedule"]["segments"][0]["at_s"] == 0.03
    client, runs = mlflow_runs(mlflow_uri)
    assert len(runs) == 1 and "cpu_ms/falcon" in runs[0].data.metrics
    assert "overhead.png" in {a.path for a in client.list_artifacts(runs[0].info.run_id)}


def test_real_world_job(job_cfg, tmp_path):
    """Fig. 7's protocol on one setting: identical trace stretches for every
    scheduler, day windows of the held-out traces, FALCON = FALCON-N on day 1,
    an offline update at the end of each day."""
    real_world.run_job(job_cfg("real_world", "~real_world.settings.static_5g_wlan"))
    out = tmp_path / "real_world"
    for name in ("real_world.json", "real_world.txt", "real_world.png", "summary.json"):
        assert (out / name).is_file(), name
    data = json.loads((out / "real_world.json").read_text())
    sec = data["settings"]
    days, per_day = sec["days"], sec["downloads_per_day"]
    r = data["results"]["mobile_4g_5g"]
    assert list(data["results"]) == ["mobile_4g_5g"]
    assert set(r["summary"]) == {"falcon", "falcon_n", "minrtt", "dqn_off"}
    recs = r["records"]
    by = {(x["scheduler"], x["day"], x["download"]): x for x in recs}
    assert len(by) == len(recs) == 4 * days * per_day
    for (_, day, i), x in by.items():
        assert x["trace_starts"] == by[("minrtt", day, i)]["trace_starts"]
        for p, st in enumerate(x["trace_starts"]):
            test = sec["settings"]["mobile_4g_5g"]["paths"][p]["test"]
            assert st["file"] == test[0]
            period = real_world.trace_windows(test, None)[0][2]
            assert (day - 1) * period / days <= st["start_s"] < day * period / days
    # the morning update touched cells; FALCON-N is FALCON without the day-end updates
    assert r["morning_update"]["cells"]
    assert [u["day"] for u in r["offline_updates"]["falcon"]] == list(range(1, days + 1))
    assert "falcon_n" not in r["offline_updates"]
    t = {
        n: [by[(n, 1, i)]["download_time_s"] for i in range(per_day)]
        for n in ("falcon", "falcon_n")
    }
    assert t["falcon"] == t["falcon_n"]
    assert "falcon vs falcon_n" in (out / "real_world.txt").read_text()
    again = real_world.run_job(job_cfg("real_world", "~real_world.settings.static_5g_wlan"))
    assert [x["download_time_s"] for x in again["results"]["mobile_4g_5g"]["records"]] == [
        x["download_time_s"] for x in recs
    ]


def test_real_world_morning_update_touches_only_visited_cells(compose, tiny_bank):
    cfg = compose("train", ["experiment=real_world", "quick=true"])
    _, sec, app = real_world.settings(cfg)
    setting = sec["settings"]["mobile_4g_5g"]
    base = real_world.base_scenario(setting)
    before = tiny_bank.params.copy()
    # no connection setup, no pacing and half-BDP buffers (a trace path's default is one BDP at its
    # p95 rate): the untrained networks must select within two short downloads (paced, the first
    # one ends at 0.40 s, before FALCON's window, restarted by the slow start's change signals, closes)
    mornings = [
        {
            **s,
            "setup": "none",
            "pacing": False,
            "paths": [{**p, "buffer_bdp": 0.5} for p in s["paths"]],
        }
        for s in real_world.morning_scenarios(base, setting, 2, 5, 0)
    ]
    bank, rec = real_world.morning_bank(tiny_bank, "falcon", None, mornings, app, 5, progress=False)
    assert rec["cells"] and np.array_equal(tiny_bank.params, before)  # the built bank is untouched
    for c in range(tiny_bank.grid.n_cells):
        assert np.array_equal(bank.row(c), before[c]) == (c not in rec["cells"])
    with pytest.raises(ConfigError, match="offline loop"):
        real_world.morning_bank(
            tiny_bank,
            "falcon_n",
            None,
            real_world.morning_scenarios(base, setting, 1, 5, 0),
            app,
            5,
            progress=False,
        )


def test_bad_settings_are_one_line_errors(compose):
    with pytest.raises(ConfigError, match="test: 2 files for 5 days"):
        real_world.settings(
            compose(
                "train",
                [
                    "experiment=real_world",
                    "real_world.settings.mobile_4g_5g.paths.0.test=[a.csv,b.csv]",
                ],
            )
        )
    with pytest.raises(ConfigError, match="persist_across_days"):
        real_world.settings(
            compose("train", ["experiment=real_world", "real_world.persist_across_days=3"])
        )
    with pytest.raises(ConfigError, match="ks"):
        k_impact.settings(compose("train", ["experiment=k_impact", "k_impact.ks=[-1]"]))
    with pytest.raises(ConfigError, match="intervals_s"):
        stress.settings(compose("train", ["experiment=stress", "stress.intervals_s=[-1]"]))
    with pytest.raises(ConfigError, match="schedulers"):
        convergence.settings(
            compose("train", ["experiment=convergence", "convergence.schedulers=[]"])
        )
    with pytest.raises(ConfigError, match="change.at_s"):
        overhead.settings(compose("train", ["experiment=overhead", "overhead.change.at_s=5"]))
    with pytest.raises(ConfigError, match="sample_s"):
        overhead.settings(compose("train", ["experiment=overhead", "overhead.sample_s=1.0"]))
