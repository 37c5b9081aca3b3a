"""The transfer references (falcon.experiments.transfer): choices made on one
learnability run's candidates, scored on another's."""

from __future__ import annotations

import json
import math

import pytest

from envs.errors import ConfigError
from falcon.experiments import transfer as tr


def _run(
    split: str, conditions: dict, rules=("r",), within: float = 1.05, bw: float = 10.0
) -> dict:
    """A learnability results file's shape: ``conditions`` maps a name to
    ``{candidate: times per seed}`` (rules are candidates too)."""
    results = {}
    for name, cands in conditions.items():
        medians = {k: tr._median(v) for k, v in cands.items()}
        best_rule = min(medians[r] for r in rules)
        scheds = {r: {"download_time_s": {"median": medians[r]}} for r in rules}
        scheds["oracle"] = {
            "download_time_s": {"median": min(medians.values())},
            "candidate_times_s": cands,
        }
        results[name] = {
            "best_rule": {"median_s": best_rule},
            "best_known": {"median_s": min(medians.values())},
            "schedulers": scheds,
        }
    scores = {}
    for r in rules:
        ratios = [
            res["schedulers"][r]["download_time_s"]["median"] / res["best_rule"]["median_s"]
            for res in results.values()
        ]
        scores[r] = math.exp(sum(map(math.log, ratios)) / len(ratios))
    return {
        "job": "learnability",
        "settings": {"split": split, "within": within, "rules": list(rules), "seeds": [0, 1, 2]},
        "conditions": [
            {"name": n, "scenario": {"paths": [{"bandwidth_mbps": bw}]}, "app": {}}
            for n in conditions
        ],
        "schedulers": [*rules, "oracle"],
        "results": results,
        "suite_score": scores,
    }


def _write(tmp_path, name: str, run: dict):
    folder = tmp_path / name
    folder.mkdir()
    (folder / "learnability.json").write_text(json.dumps(run))
    return folder


SOURCE = {
    # on a, the share beats the rule; on b, the rule is best
    "a": {"r": [2.0, 2.0, 2.0], "share=1": [1.0, 1.1, 0.9], "x": [3.0, 3.0, 3.0]},
    "b": {"r": [1.0, 1.0, 1.0], "share=1": [1.5, 1.5, 1.5], "x": [1.2, 1.2, 1.2]},
}
TARGET = {
    "a": {"r": [2.0, 2.0, 2.0], "share=1": [4.0, 4.0, 4.0], "x": [1.0, 1.0, 1.0]},
    "b": {"r": [1.0, 1.1, 0.9], "share=1": [2.0, 2.0, 2.0], "x": [1.0, 1.0, 1.0]},
    "c": {"r": [1.0, 1.0, 1.0], "share=1": [0.5, 0.5, 0.5], "x": [1.0, 1.0, 1.0]},  # no twin
}


def test_the_twin_policy_holds_what_won_on_the_twin_and_is_scored_on_the_target(tmp_path):
    src = _write(tmp_path, "src", _run("train", SOURCE))
    tgt = _write(tmp_path, "tgt", _run("validation", TARGET, bw=20.0))
    out = tr.transfer(src, tgt)
    a, b, c = (out["conditions"][n] for n in "abc")
    assert a["twin"]["candidate"] == "share=1" and a["twin"]["source_median_s"] == 1.0
    assert a["twin"]["median_s"] == 4.0 and a["twin"]["ratio"] == 2.0
    assert a["twin"]["ratio_best_known"] == 4.0 and not a["twin"]["within"]
    assert b["twin"]["candidate"] == "r" and b["twin"]["ratio"] == 1.0 and b["twin"]["within"]
    assert c["twin"] is None  # no source condition of that name
    # single: geometric mean over the source of median / best rule: r 1, share=1 sqrt(0.75), x sqrt(1.8)
    assert out["single"] == "share=1"
    assert out["single_source_score"] == pytest.approx(math.sqrt(0.5 * 1.5))
    assert c["single"]["candidate"] == "share=1" and c["single"]["ratio"] == 0.5
    # suite rows over the conditions with a twin (a, b)
    twin = out["suite"][tr.TWIN]
    assert twin["conditions"] == 2 and twin["within_best_known"] == 1
    assert twin["score_best_rule"] == pytest.approx(math.sqrt(2.0 * 1.0))
    assert out["target_best_rule"] == "r" and "r (best rule over the list)" in tr.table(out)
    assert out["suite"]["r"]["score_best_rule"] == pytest.approx(1.0)  # the best rule over the list
    assert out["suite"]["oracle"]["within_best_known"] == 2
    assert out["source"]["split"] == "train" and len(out["source"]["sha256"]) == 64


def test_an_unfinished_median_is_never_the_choice(tmp_path):
    source = {"a": {"r": [2.0, 2.0, 2.0], "fast_but_cut": [0.5, None, None]}}
    target = {"a": {"r": [2.0, 2.0, 2.0], "fast_but_cut": [0.5, 0.5, 0.5]}}
    out = tr.transfer(
        _write(tmp_path, "s", _run("train", source)),
        _write(tmp_path, "t", _run("test", target, bw=20.0)),
    )
    assert out["conditions"]["a"]["twin"]["candidate"] == "r"


@pytest.mark.parametrize(
    "source_split, target_split, message",
    [
        ("test", "validation", "ran the test list, whose files are for reporting only"),
        ("validation", "validation", "both ran the validation list"),
    ],
)
def test_splits_that_cannot_transfer_are_refused(tmp_path, source_split, target_split, message):
    src = _write(tmp_path, "src", _run(source_split, SOURCE))
    tgt = _write(tmp_path, "tgt", _run(target_split, TARGET, bw=20.0))
    with pytest.raises(ConfigError, match=message):
        tr.transfer(src, tgt)


def test_bad_inputs_are_one_line_errors(tmp_path):
    good = _write(tmp_path, "good", _run("train", SOURCE))
    no_times = _run("validation", TARGET, bw=20.0)
    del no_times["results"]["b"]["schedulers"]["oracle"]["candidate_times_s"]
    other = dict(TARGET, b={"r": [1.0] * 3, "y": [1.0] * 3, "x": [1.0] * 3})
    (tmp_path / "broken.json").write_text("{not json")
    (tmp_path / "other_job.json").write_text(json.dumps({"job": "convergence"}))
    same = _write(tmp_path, "same", _run("validation", TARGET))  # a and b as in the source
    trace = {"paths": [{"trace": "mahimahi_cellular_lte/ATT-LTE-driving.down"}]}
    source_trace = _run("train", SOURCE)
    target_trace = _run("validation", TARGET, bw=20.0)
    source_trace["conditions"][0]["scenario"] = target_trace["conditions"][2]["scenario"] = trace
    cases = [
        (same, r"shares \['condition a', 'condition b'\]"),
        (_write(tmp_path, "no_times", no_times), "condition 'b' has no candidate times"),
        (_write(tmp_path, "other", _run("validation", other, bw=20.0)), "its candidates differ"),
        (tmp_path / "broken.json", "not a JSON file"),
        (tmp_path / "other_job.json", "not a learnability results file"),
        (tmp_path / "missing", "no learnability.json there"),
    ]
    for target, message in cases:
        with pytest.raises(ConfigError, match=message) as e:
            tr.transfer(good, target)
        assert "\n" not in str(e.value)
    with pytest.raises(ConfigError, match="ATT-LTE-driving.down"):  # one trace file in both
        tr.transfer(
            _write(tmp_path, "src_trace", source_trace), _write(tmp_path, "tgt_trace", target_trace)
        )


def test_the_suite_records_every_candidate_and_the_command_transfers_between_lists(
    compose, tmp_path, capsys
):
    from falcon.experiments import learnability as lb

    def run(split: str) -> dict:
        cfg = compose(
            "train",
            [
                "experiment=learnability",
                f"conditions={split}",
                "quick=true",
                "runs=3",
                "learnability.max_conditions=2",
                "learnability.learners=[]",
                "learnability.deployed=[]",
                "learnability.rules=[minrtt,ecf]",
                "learnability.fixed_split_shares=[0.0,0.5,1.0]",
            ],
        )
        _, sec, conds, agents = lb.settings(cfg)
        return lb.run_learnability(sec, conds, agents, {"name": "local", "workers": 1}, False)

    source, target = run("train"), run("validation")
    for res in target["results"].values():  # the oracle is the per-seed best of the recorded times
        oracle = res["schedulers"]["oracle"]
        times = oracle["candidate_times_s"]
        assert len(times) == oracle["candidates"] and {"minrtt", "ecf"} <= set(times)
        best = [min(v[k] for v in times.values() if v[k] is not None) for k in range(3)]
        assert oracle["download_time_s"]["values"] == best
    src = _write(tmp_path, "src", source)
    tgt = _write(tmp_path, "tgt", target)
    tr.main([str(src), str(tgt), "-o", str(tmp_path / "out")])
    printed = capsys.readouterr().out
    result = json.loads((tmp_path / "out" / "transfer.json").read_text())
    assert (tmp_path / "out" / "transfer.txt").read_text() in printed
    for name, entry in result["conditions"].items():
        medians = {
            k: tr._median(v)
            for k, v in source["results"][name]["schedulers"]["oracle"]["candidate_times_s"].items()
        }
        assert entry["twin"]["candidate"] == min(medians, key=medians.get)
        values = target["results"][name]["schedulers"]["oracle"]["candidate_times_s"]
        assert entry["twin"]["median_s"] == tr._median(values[entry["twin"]["candidate"]])
    with pytest.raises(SystemExit) as e:  # the same list on both sides
        tr.main([str(tgt), str(tgt), "-o", str(tmp_path / "again")])
    assert e.value.code == 2 and not (tmp_path / "again").exists()
