"""falcon.bench: the benchmark run on a tiny benchmark (tests/bench_tiny.py),
its results file and its scores recomputed from the runs, the benchmark id,
the leaderboard's merge of several files and the one-line errors."""

from __future__ import annotations

import copy
import json
import math
import re
import statistics

import pytest
from bench_tiny import TRACE, compose_tiny, run_tiny

from envs.errors import ConfigError
from falcon.bench import definition as bdef
from falcon.bench import leaderboard
from falcon.bench import results as bres
from falcon.bench.run import run_job

REFS = ["minrtt", "rr", "best_single_path", "best_fixed_split", "oracle", "crossfit_policy"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Two results files of the tiny benchmark: blest and ecf, then daps."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    from falcon.config import CONFIG_DIR

    def compose(name, overrides):
        with initialize_config_dir(str(CONFIG_DIR), version_base="1.3"):
            return hydra_compose(config_name=name, overrides=overrides)

    root = tmp_path_factory.mktemp("bench")
    return (
        run_tiny(compose, root / "a", "[blest,ecf]"),
        run_tiny(compose, root / "b", "[daps]"),
    )


def test_results_file_schema_and_scores(files):
    data = bres.load(files[0])
    assert data["kind"] == bres.KIND and data["schema_version"] == bres.SCHEMA_VERSION
    assert re.fullmatch(r"falcon-bench-v1-[0-9a-f]{12}", data["benchmark"]["id"])
    assert data["schedulers"] == ["blest", "ecf"] and data["mlflow"] is None
    defn = data["benchmark"]["definition"]
    assert defn["seeds"] == [0, 1, 2] and defn["build"]["emulator_build"] >= 9
    traces = {c["name"]: c["traces"] for c in defn["splits"]["validation"]}
    from envs.traces.split import content_hash

    assert traces["fast_slow"] == []
    assert traces["wifi_lte"] == [{"path": 0, "file": TRACE, "sha256": content_hash(TRACE)}]
    assert bdef.benchmark_id(defn) == data["benchmark"]["id"]
    split = data["splits"]["validation"]
    assert list(split["conditions"]) == ["fast_slow", "wifi_lte"]
    for res in split["conditions"].values():
        assert list(res["references"]) == REFS and list(res["schedulers"]) == ["blest", "ecf"]
        every = {**res["references"], **res["schedulers"]}
        for e in every.values():
            assert len(e["runs"]) == 3 and e["median_s"] == statistics.median(e["runs"])
        rules = {n: every[n]["median_s"] for n in ("minrtt", "rr")}
        assert res["best_rule"] == {
            "name": min(rules, key=rules.get),
            "median_s": min(rules.values()),
        }
        # the best known is over the rules and references, never the benchmarked schedulers
        known = {n: e["median_s"] for n, e in res["references"].items()}
        assert res["best_known"] == {
            "name": min(known, key=known.get),
            "median_s": min(known.values()),
        }
        br, bk = res["best_rule"]["median_s"], res["best_known"]["median_s"]
        assert res["has_headroom"] == (bk <= 0.9 * br)
        for e in every.values():
            assert e["ratio_best_rule"] == pytest.approx(e["median_s"] / br)
            assert e["ratio_best_known"] == pytest.approx(e["median_s"] / bk)
            want = (br - e["median_s"]) / (br - bk) if res["has_headroom"] else None
            assert e["headroom_captured"] == pytest.approx(want)
        assert res["schedulers"]["blest"]["vs_best_rule"]["best"] == res["best_rule"]["name"]
    for name, s in split["suite"].items():
        ratios = [
            (r["schedulers"].get(name) or r["references"][name])["ratio_best_rule"]
            for r in split["conditions"].values()
        ]
        want = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        assert s["score_best_rule"] == pytest.approx(want) and s["conditions"] == 2
    # the same benchmark, another scheduler: the same id and bit-identical references
    other = bres.load(files[1])
    assert other["benchmark"] == data["benchmark"]
    for c, res in other["splits"]["validation"]["conditions"].items():
        mine = data["splits"]["validation"]["conditions"][c]["references"]
        assert {n: e["runs"] for n, e in res["references"].items()} == {
            n: e["runs"] for n, e in mine.items()
        }


def test_benchmark_id_pins_conditions_traces_seeds_and_build(files, monkeypatch):
    defn = bres.load(files[0])["benchmark"]["definition"]
    bid = bdef.benchmark_id(defn)

    def changed(fn):
        d = copy.deepcopy(defn)
        fn(d)
        return bdef.benchmark_id(d)

    vs = defn["splits"]["validation"]
    assert changed(lambda d: d["seeds"].append(3)) != bid
    assert changed(lambda d: d["splits"]["validation"][0]["app"].update(size_bytes=1)) != bid
    assert (
        changed(lambda d: d["splits"]["validation"][1]["traces"][0].update(sha256="0" * 64)) != bid
    )
    assert changed(lambda d: d["build"].update(emulator_build=0)) != bid
    assert changed(lambda d: d["splits"].update(test=vs)) != bid
    assert changed(lambda d: None) == bid
    monkeypatch.setattr(bdef, "build_version", lambda: {"emulator_build": -1, "falcon": "x"})
    sec = bdef.check_section(
        _section(
            conditions={"validation": [{"name": "x", "scenario": _TWO}]}, splits=["validation"]
        )
    )
    moved = bdef.definition(sec, 0, bdef.load_conditions(sec))
    assert moved["build"] == {"emulator_build": -1, "falcon": "x"}


_TWO = {"paths": [{"bandwidth_mbps": 10, "rtt_ms": 10}, {"bandwidth_mbps": 5, "rtt_ms": 50}]}


def _section(**over):
    """The bench: section as configs/bench.yaml has it, with ``over``."""
    from hydra import compose, initialize_config_dir

    from falcon.config import CONFIG_DIR, to_plain

    with initialize_config_dir(str(CONFIG_DIR), version_base="1.3"):
        sec = to_plain(compose(config_name="bench").bench)
    return {**sec, **over}


def test_shipped_benchmark_defines_every_split():
    sec = bdef.check_section(_section())
    conds = bdef.load_conditions(sec)
    assert list(conds) == ["train", "validation", "test"] and all(conds.values())
    defn = bdef.definition(sec, 0, conds)
    assert len(defn["seeds"]) == 30 and defn["oracle"] == {
        "thresholds": [None, 1.5],
        "reinject": [False, True],
    }
    files = {t["file"] for c in defn["splits"]["test"] for t in c["traces"]}
    assert files and all(
        len(t["sha256"]) == 64 for c in defn["splits"]["test"] for t in c["traces"]
    )


def test_leaderboard_merges_files(files, tmp_path):
    page = leaderboard.build(files, tmp_path / "board")
    board = json.loads((tmp_path / "board" / "board.json").read_text())
    rows = board["splits"]["validation"]["rows"]
    names = [r["name"] for r in rows]
    assert sorted(names) == sorted(["blest", "ecf", "daps", *REFS])
    kinds = {r["name"]: r["kind"] for r in rows}
    assert kinds["daps"] == kinds["blest"] == "scheduler" and kinds["minrtt"] == "rule"
    assert kinds["oracle"] == "reference"
    assert {r["name"]: r["source"] for r in rows if r["kind"] == "scheduler"} == {
        "blest": "bench.json",
        "ecf": "bench.json",
        "daps": "bench.json",
    }
    scores = [r["score_best_rule"] for r in rows]
    assert scores == sorted(scores)  # best first
    html = page.read_text()
    for n in names:
        assert f"data-scheduler='{n}'" in html
    # offline: nothing to fetch (XML namespaces are names, not fetches)
    assert "<svg" in html and not re.search(r"(src|href)=['\"]?(https?:|//)", html)
    assert "<script src" not in html and "<link" not in html and not re.search(r"url\((?!#)", html)


def test_leaderboard_refuses_conflicts(files, tmp_path):
    other = json.loads(files[1].read_text())
    other["benchmark"]["id"] = "falcon-bench-v1-000000000000"
    bad = tmp_path / "other.json"
    bad.write_text(json.dumps(other))
    with pytest.raises(ConfigError, match=r"benchmark falcon-bench-v1-000000000000 is not .*"):
        leaderboard.merge([files[0], bad])
    with pytest.raises(ConfigError, match=r"scheduler 'blest' on split validation is also in"):
        leaderboard.merge([files[0], files[0]])
    with pytest.raises(ConfigError, match="give at least one results file"):
        leaderboard.merge([])


@pytest.mark.parametrize(
    "text, message",
    [
        ("{", "not a JSON file"),
        ('{"kind": "other"}', "not a falcon.bench results file"),
        ('{"kind": "falcon.bench.results", "schema_version": 99}', "schema_version 99"),
        ('{"kind": "falcon.bench.results", "schema_version": 1}', "missing or malformed"),
    ],
)
def test_load_errors(tmp_path, text, message):
    path = tmp_path / "r.json"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        bres.load(path)
    with pytest.raises(ConfigError, match="no such results file"):
        bres.load(tmp_path / "missing.json")


def test_leaderboard_cli_one_line_error(files, tmp_path, run_cli):
    other = json.loads(files[1].read_text())
    other["benchmark"]["id"] = "falcon-bench-v1-000000000000"
    bad = tmp_path / "other.json"
    bad.write_text(json.dumps(other))
    r = run_cli("bench", "leaderboard", str(files[0]), str(bad), "-o", str(tmp_path / "b"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and r.stderr.startswith("error: ")
    assert not (tmp_path / "b" / "index.html").exists()
    r = run_cli("bench", "leaderboard", *map(str, files), "-o", str(tmp_path / "ok"))
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "ok" / "index.html").is_file()
    r = run_cli("bench", "nonsense")
    assert r.returncode == 2 and "unknown command 'nonsense'" in r.stderr


@pytest.mark.parametrize(
    "extra, message",
    [
        ([], "agent_list: name the schedulers to benchmark"),
        (["agent_list=[minrtt]"], "minrtt is a rule or reference of the benchmark"),
        (["agent_list=[no_such_agent]"], "'no_such_agent'"),
        (
            ["agent_list=[blest]", "bench.splits=[test]"],
            r"\['test'\] not among the benchmark's splits",
        ),
        (["agent_list=[blest]", "+bench.nonsense=1"], r"unknown key\(s\) \['nonsense'\]"),
        (["agent_list=[blest]", "bench.runs=0"], "bench.runs: expected an integer >= 1"),
        (["agent_list=[blest]", "bench.fixed_split_shares=[0.5,1.0]"], "must include 0 and 1"),
        (
            [
                "agent_list=[blest]",
                "bench.conditions={validation: [{name: x, scenario: {paths: []}}]}",
            ],
            "bench.conditions.validation",
        ),
    ],
)
def test_run_errors(compose, tmp_path, extra, message):
    with pytest.raises(ConfigError, match=message):
        run_job(compose_tiny(compose, "tracking=none", f"output={tmp_path / 'o'}", *extra))
    assert not (tmp_path / "o").exists()


def test_run_tracked_keeps_the_mlflow_run(compose, tmp_path, mlflow_uri):
    from conftest import mlflow_runs

    out = run_tiny(
        compose, tmp_path / "t", "[blest]", "tracking=mlflow", f"tracking.uri={mlflow_uri}"
    )
    data = bres.load(out)
    m = data["mlflow"]
    client, runs = mlflow_runs(mlflow_uri)
    assert [r.info.run_id for r in runs] == [m["run_id"]]
    assert m["tracking_uri"] == mlflow_uri and m["experiment_id"] == runs[0].info.experiment_id
    assert m["artifact_uri"] == f"runs:/{m['run_id']}/bench.json" and m["run_url"] is None
    metrics = runs[0].data.metrics
    assert metrics["validation/score_best_rule/blest"] == pytest.approx(
        data["splits"]["validation"]["suite"]["blest"]["score_best_rule"]
    )
    assert runs[0].data.tags["falcon.benchmark"] == data["benchmark"]["id"]
    page = leaderboard.build([out], tmp_path / "board").read_text()
    assert m["run_id"][:8] in page


def test_results_do_not_depend_on_the_runtime(files, compose, tmp_path):
    two = bres.load(run_tiny(compose, tmp_path / "w2", "[blest]", "runtime.workers=2"))
    one = bres.load(files[0])
    assert two["benchmark"] == one["benchmark"]
    for c, res in two["splits"]["validation"]["conditions"].items():
        mine = one["splits"]["validation"]["conditions"][c]
        assert res["references"] == mine["references"]
        assert res["schedulers"]["blest"] == mine["schedulers"]["blest"]


def test_run_command_line_bad_input_is_one_line(run_cli, tmp_path):
    r = run_cli("bench", "run", "tracking=none", f"output={tmp_path / 'o'}")
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith("error: agent_list: name the schedulers to benchmark")
    r = run_cli("bench")
    assert r.returncode == 2 and "usage: python -m falcon.bench run" in r.stdout


def test_import_path_scheduler_from_outside_the_project(compose, tmp_path):
    pytest.importorskip("falcon.plugins", reason="no scheduler plug-ins in this tree")
    data = bres.load(run_tiny(compose, tmp_path / "p", "[bench_tiny:ThirtySeventy]"))
    assert data["schedulers"] == ["thirty_seventy"]
    assert data["agents"]["thirty_seventy"]["_target_"].endswith("ThirtySeventy")
    assert "thirty_seventy" in data["plugins"]  # its provenance
    for res in data["splits"]["validation"]["conditions"].values():
        assert len(res["schedulers"]["thirty_seventy"]["runs"]) == 3


def test_mlflow_server_run_gets_a_link(files, tmp_path, monkeypatch):
    """With an HTTP tracking server the results keep the run's address and the page links it."""
    from types import SimpleNamespace

    import falcon.tracking_store
    from falcon.bench import run as brun

    run = SimpleNamespace(info=SimpleNamespace(experiment_id="7"))
    monkeypatch.setattr(
        falcon.tracking_store, "open_client", lambda uri: SimpleNamespace(get_run=lambda rid: run)
    )
    tracker = SimpleNamespace(run_id="abcdef0123456789", uri="http://mlflow.example.org:5000/")
    m = brun._mlflow(tracker, {"tracking": {"experiment": "bench"}})
    assert m["run_url"] == "http://mlflow.example.org:5000/#/experiments/7/runs/abcdef0123456789"
    assert m["experiment"] == "bench" and m["experiment_id"] == "7"
    assert brun._mlflow(SimpleNamespace(run_id=None, uri=None), {}) is None
    data = json.loads(files[0].read_text())
    data["mlflow"] = m
    linked = tmp_path / "linked.json"
    linked.write_text(json.dumps(data))
    html = leaderboard.build([linked], tmp_path / "board").read_text()
    assert f"<a href='{m['run_url']}'" in html and html.count("<a href=") == 2  # blest, ecf


def test_the_trace_aware_oracle_is_a_reference_where_it_was_computed():
    from falcon.bench.run import score_condition

    def st(median):
        return {bdef.METRIC: {"median": median, "p25": median, "p75": median, "n": 3, "values": []}}

    res = {
        "best_rule": {"name": "minrtt", "median_s": 2.0},
        "schedulers": {
            "minrtt": st(2.0),
            "oracle": st(1.0),
            "trace_aware_oracle": st(1.5),
            "mine": st(1.6),
        },
    }
    out = score_condition(res, ["minrtt"], ["mine"], 0.1)
    assert set(out["references"]) == {"minrtt", "oracle", "trace_aware_oracle"}
    assert out["references"]["trace_aware_oracle"]["ratio_best_known"] == pytest.approx(1.5)
    del res["schedulers"]["trace_aware_oracle"]  # a run without oracle.resample
    assert "trace_aware_oracle" not in score_condition(res, ["minrtt"], ["mine"], 0.1)["references"]
