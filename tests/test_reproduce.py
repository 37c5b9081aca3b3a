"""falcon.reproduce: the seed-claims file, the catalogue, the verdicts read
from runs' JSON, the report, the reuse of finished runs, failures."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import yaml

from envs.errors import ConfigError
from falcon import seeds
from falcon.reproduce import catalog, claims, runs


# ---------------------------------------------------------------- the data file
def test_seed_claims_file_is_complete_and_consistent():
    doc = seeds.load()
    for sid, s in doc["seeds"].items():  # cited by authors, title, venue and year
        assert s["paper"] and s["cite"][-4:].isdigit(), sid
    assert {f["experiment"] for f in doc["figures"]} <= set(catalog.BY_NAME)
    assert {f["id"] for f in doc["figures"]} == set(claims.CHECKS)
    # every seed paper has at least one figure
    assert {f["seed"] for f in doc["figures"]} == set(doc["seeds"])


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: d.pop("figures"), "missing key 'figures'"),
        (lambda d: d["seeds"]["falcon"].pop("cite"), "seeds.falcon: missing key 'cite'"),
        (lambda d: d["figures"][0].update(seed="nope"), "unknown seed 'nope'"),
        (lambda d: d["figures"].append(dict(d["figures"][0])), "duplicate figure id"),
        (lambda d: d["figures"][0]["claims"][0].pop("values"), "missing key 'values'"),
        (lambda d: d["figures"][0]["claims"][0].update(values=[1, 2]), "expected Mapping"),
    ],
)
def test_a_malformed_seed_claims_file_gets_one_line(tmp_path, mutate, message):
    doc = yaml.safe_load(seeds.default_path().read_text())
    mutate(doc)
    path = tmp_path / "seed_claims.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(ConfigError, match=message) as e:
        seeds.load(path)
    assert "\n" not in str(e.value)
    path.write_text("figures: [unclosed")
    with pytest.raises(ConfigError, match="not valid YAML"):
        seeds.load(path)


def test_the_experiments_quote_the_papers_from_the_data_file():
    """The GAPS, HOP and hybrid reports' PAPER numbers are the data file's, not typed in."""
    from falcon.experiments import gaps_report, hop_report, hybrid_report

    assert (
        gaps_report.PAPER["gaps_oqs_vs_stms_pct"]
        == seeds.claim_values("gaps", "oqs_vs_stms")["gaps_oqs_vs_stms_pct"]
    )
    assert set(hop_report.PAPER) == {c["id"] for c in seeds.figure("hop")["claims"]}
    assert hybrid_report.PAPER["cpu"].startswith(seeds.claim("hybrid", "cpu")["text"])
    numbers = [
        v for f in seeds.load()["figures"] for c in f["claims"] for v in c["values"].values()
    ]
    assert numbers, "the data file holds the papers' numbers"


# ---------------------------------------------------------------- the catalogue
@pytest.mark.parametrize("scale", catalog.SCALES)
def test_every_hydra_command_composes(compose, scale):
    """Each experiment's overrides name keys that exist (a typo fails here, not after an hour)."""
    for exp in catalog.EXPERIMENTS:
        if not exp.hydra:
            continue
        argv = exp.command(scale, "/tmp/x", catalog.BANK_PRESET[scale])
        assert argv[:2] == ["-m", exp.module]
        config = {"falcon.train": "train", "falcon.evaluate": "evaluate"}[exp.module]
        cfg = compose(config, argv[2:])
        assert cfg.output == "/tmp/x" and cfg.tracking.enabled is False


def test_select_adds_the_bank_and_rejects_unknown_names():
    names = [e.name for e in catalog.select(["k_impact"])]
    assert names == ["bank", "k_impact"]
    assert [e.name for e in catalog.select("srpt_toys")] == ["srpt_toys"]
    assert len(catalog.select(None)) == len(catalog.EXPERIMENTS)
    with pytest.raises(ConfigError, match="unknown experiment.*'nope'"):
        catalog.select(["nope"])


# ---------------------------------------------------------------- verdicts from JSON
def _summary(medians: dict) -> dict:
    return {
        "results": {
            sc: {"bulk": {ag: {"download_time_s": {"median": m}} for ag, m in per.items()}}
            for sc, per in medians.items()
        }
    }


def test_fig2_verdicts_follow_the_numbers_in_the_json():
    fig = seeds.figure("falcon_fig2")
    faster = _summary(
        {
            "static_a": {"falcon": 0.8, "minrtt": 1.0, "blest": 1.2},
            "mobile_b": {"falcon": 1.0, "mpeekaboo": 1.25},
        }
    )
    v = {x.claim_id: x for x in claims.verdicts(fig, faster)}
    assert v["learning_beats_rules_static"].reproduced is True
    assert v["learning_beats_rules_static"].ours["largest gain [%]"] == pytest.approx(20.0)
    assert v["falcon_beats_mpeekaboo_mobile"].reproduced is True
    assert v["falcon_beats_mpeekaboo_mobile"].ours["gain [%]"] == pytest.approx(20.0)
    slower = _summary(
        {
            "static_a": {"falcon": 1.01, "minrtt": 1.0, "blest": 1.2},
            "mobile_b": {"falcon": 1.3, "mpeekaboo": 1.25},
        }
    )
    v = {x.claim_id: x for x in claims.verdicts(fig, slower)}
    assert (
        v["learning_beats_rules_static"].reproduced is False
        and "34.5" in v["learning_beats_rules_static"].reason
    )
    assert v["falcon_beats_mpeekaboo_mobile"].reproduced is False
    # a scale without M-Peekaboo cannot judge that claim
    v = {x.claim_id: x for x in claims.verdicts(fig, _summary({"mobile_b": {"falcon": 1.0}}))}
    assert v["falcon_beats_mpeekaboo_mobile"].reproduced is None


def test_every_figure_without_results_is_not_assessed():
    for fig in seeds.load()["figures"]:
        got = claims.verdicts(fig, None, "the experiment failed (boom)")
        assert [v.claim_id for v in got] == [c["id"] for c in fig["claims"]]
        assert all(v.reproduced is None and "boom" in v.reason for v in got)


def test_hop_and_toys_verdicts():
    hop = {
        "summary": {
            "balanced": {
                "schedulers": {
                    "hop": {"max_block_kb": 140.0, "fraction_of_bound": 0.88},
                    "ideal_jump": {"max_block_kb": 140.0},
                }
            },
            "highly_unbalanced": {"failure_ratios": {"bbr+dems/hop": {"100": 5.0, "140": 5.0}}},
        },
        "claims": {"leap": {"mean_block_kb": 152.0, "failure_probability": 0.02}},
    }
    v = {x.claim_id: x for x in claims.verdicts(seeds.figure("hop"), hop)}
    assert (
        v["balanced"].reproduced is False
        and v["balanced"].ours["largest block meeting 98 % [kB]"] == 140.0
    )
    assert v["unbalanced"].reproduced is None
    assert v["highly_unbalanced"].reproduced is True
    assert v["leap"].reproduced is True
    from falcon.experiments import srpt_toys

    res = srpt_toys.run_toys(
        {
            "paths": [[200, 5], [500, 10]],
            "fig3_bytes": 10000,
            "pair_bytes": [900, 800],
            "quantum_bytes": 150,
            "fig8_streams": [[2000, 0], [400, 4], [300, 6]],
        }
    )
    assert all(v.reproduced for v in claims.verdicts(seeds.figure("srpt_toys"), res))
    assert res["fig5"]["completion_ms"] == [9.0, 11.0] and math.isclose(
        res["fig3"]["switch_ms"], 90 / 7
    )


# ---------------------------------------------------------------- the command
def _cfg(compose, tmp_path, uri, *extra):
    return compose("reproduce", [f"output={tmp_path / 'rep'}", f"tracking.uri={uri}", *extra])


def test_reproduce_writes_the_report_and_reuses_finished_runs(
    compose, tmp_path, mlflow_uri, monkeypatch
):
    from falcon.reproduce.__main__ import reproduce

    model = reproduce(_cfg(compose, tmp_path, mlflow_uri, "only=[srpt_toys]"))
    out = tmp_path / "rep" / "quick"
    md, html = (out / "report.md").read_text(), (out / "report.html").read_text()
    assert model["totals"]["reproduced"] == 4 and not model["failed"]
    run_id = model["experiments"]["srpt_toys"]["run_id"]
    assert run_id and run_id in md and run_id in html
    # our numbers in the report are the run's JSON's
    res = json.loads(
        (Path(model["experiments"]["srpt_toys"]["output"]) / "srpt_toys.json").read_text()
    )
    assert "12.86" in md and f"{res['fig8']['stream0_gain_pct']:.4g}" in md
    # the paper's number and its source come from the data file
    assert "stream0_gain_pct: 18" in md and seeds.load()["seeds"]["srpt_ecf"]["cite"] in md
    assert (out / "figures" / "srpt_toys-srpt_toys.png").is_file()
    from mlflow.tracking import MlflowClient

    run = MlflowClient(tracking_uri=mlflow_uri).get_run(run_id)
    assert run.info.status == "FINISHED" and run.data.tags[runs.KEY_TAG]

    again = reproduce(_cfg(compose, tmp_path, mlflow_uri, "only=[srpt_toys]"))
    assert again["experiments"]["srpt_toys"]["status"] == "reused"
    assert again["experiments"]["srpt_toys"]["run_id"] == run_id
    # other code: another key, a new run
    monkeypatch.setattr(runs, "code_state", lambda: {"commit": "other", "changes": ""})
    third = reproduce(_cfg(compose, tmp_path, mlflow_uri, "only=[srpt_toys]"))
    assert third["experiments"]["srpt_toys"]["status"] == "ran"
    assert third["experiments"]["srpt_toys"]["run_id"] != run_id


def test_a_failing_experiment_is_reported_and_the_rest_runs(
    compose, tmp_path, mlflow_uri, monkeypatch
):
    from falcon.reproduce.__main__ import reproduce

    broken = catalog.Experiment(
        "srpt_toys",
        "falcon.train",
        {"quick": ("experiment=srpt_toys", "srpt_toys.paths=7")},
        result="srpt_toys.json",
        what="broken on purpose",
    )
    monkeypatch.setitem(catalog.BY_NAME, "srpt_toys", broken)
    monkeypatch.setattr(catalog, "EXPERIMENTS", (broken,))
    model = reproduce(_cfg(compose, tmp_path, mlflow_uri, "only=[srpt_toys]"))
    assert model["failed"] == ["srpt_toys"]
    md = (tmp_path / "rep" / "quick" / "report.md").read_text()
    assert "**Failed:**" in md and "srpt_toys.paths" in md
    assert model["totals"]["not assessed"] == len(seeds.figure("srpt_toys")["claims"])


def test_bad_scale_is_one_line(compose, tmp_path, mlflow_uri):
    from falcon.reproduce.__main__ import reproduce

    with pytest.raises(ConfigError, match="scale: expected one of quick, paper"):
        reproduce(_cfg(compose, tmp_path, mlflow_uri, "scale=huge"))


def test_verdict_rules_read_the_papers_numbers_from_the_data_file():
    """Change a number in the figure's entry and the rule moves with it: none is typed into a check."""
    import copy

    fig = copy.deepcopy(seeds.figure("falcon_fig10"))
    res = {
        "summary": {
            "falcon": {"cpu_ms_mean": 1.2, "memory_mb_end": 1.2},
            "minrtt": {"cpu_ms_mean": 1.0, "memory_mb_end": 1.0},
        }
    }
    assert claims.verdicts(fig, res)[0].reproduced is False  # +20 % against twice 3 % and 6 %
    fig["claims"][0]["values"] = {"cpu_extra_pct": 15.0, "memory_extra_pct": 15.0}
    v = claims.verdicts(fig, res)[0]
    assert v.reproduced is True and "30 %" in v.rule
    gaps = copy.deepcopy(seeds.figure("gaps"))
    summary = {
        "summary": {
            "default": {
                "gaps": {
                    "oqs_p99_kb": 300.0,
                    "oqs_mean_kb": 50.0,
                    "goodput_mbps": 1.0,
                    "app_delay_ms": 1.0,
                },
                "stms": {
                    "oqs_p99_kb": 400.0,
                    "oqs_mean_kb": 60.0,
                    "goodput_mbps": 1.0,
                    "app_delay_ms": 1.0,
                },
            }
        }
    }
    assert claims.verdicts(gaps, summary)[0].reproduced is False
    gaps["claims"][0]["values"]["gaps_p99_oqs_kb_below"] = 500.0
    assert claims.verdicts(gaps, summary)[0].reproduced is True
