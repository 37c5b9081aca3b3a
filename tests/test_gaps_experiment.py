"""experiment=gaps (falcon/experiments/gaps.py): the quick variant end to end
with rule-based schedulers only, its outputs, and one-line errors for bad
settings. Checks structure, not the outcome."""

from __future__ import annotations

import json
import math

import pytest

from envs.errors import ConfigError
from falcon.experiments import gaps, gaps_report


@pytest.fixture
def job_cfg(compose, tmp_path):
    def make(*extra, quick=True):
        return compose(
            "train",
            [
                "experiment=gaps",
                f"quick={str(quick).lower()}",
                "tracking=none",
                f"output={tmp_path / 'gaps'}",
                "progress=false",
                *extra,
            ],
        )

    return make


def test_quick_variant_end_to_end(job_cfg, tmp_path):
    res = gaps.run_job(job_cfg())
    out = tmp_path / "gaps"
    for name in (
        "gaps.json",
        "gaps.txt",
        "gaps.png",
        "gaps_sweeps.png",
        "gaps_bars.png",
        "config.json",
    ):
        assert (out / name).is_file(), name
    data = json.loads((out / "gaps.json").read_text())
    names = ["minrtt", "daps", "stms", "blest_gap", "ecf_gap"]  # the quick variant: rule-based only
    settings = [s["name"] for s in data["setting_list"]]
    assert settings[0] == "default" and {
        "poor",
        "fct_short",
        "fct_long",
        "subflows_3",
        "cc_cubic",
    } <= set(settings)
    for s in settings:
        assert list(data["summary"][s]) == names
        for m in data["summary"][s].values():
            assert m["runs"] == 1 and m["oqs_p99_kb"] >= m["oqs_mean_kb"] >= 0 and m["fct_s"] > 0
    assert len(data["records"]) == len(settings) * len(names)
    # TRUE GAP on two-path settings only; minRTT never gaps
    assert "default" in data["true_gap"] and "subflows_3" not in data["true_gap"]
    d = data["summary"]["default"]
    assert d["minrtt"]["mean_gap_packets"] == 0 and math.isfinite(d["stms"]["true_gap_packets"])
    assert all(math.isnan(m["gap_deviation"]) for m in data["summary"]["subflows_3"].values())
    assert set(data["oqs_cdf"]["oqs_kb"]) == set(names)
    # the long FCT flow is scaled down in quick mode, and the output says so
    long_ = next(s for s in data["setting_list"] if s["name"] == "fct_long")
    assert long_["size_bytes"] == 5_120_000
    text = (out / "gaps.txt").read_text()
    assert "SCALED DOWN" in text and "the paper's claims" in text and "-68.3" in text
    assert data["paper"] == gaps_report.PAPER and res["wall_s"] > 0
    # RTTs are drawn per seed, the same in every setting
    rtts = {tuple(r["rtts_ms"]) for r in data["records"] if r["setting"] in ("default", "cc_cubic")}
    assert len(rtts) == 1


def test_scenario_of_a_setting():
    base = gaps.build_settings(
        {
            "size_bytes": 10,
            "default": {
                "rtt_fast_ms": [20, 50],
                "rtt_slow_ms": [50, 100],
                "bandwidth_mbps": 50,
                "loss": 1e-4,
                "buffer_packets": 100,
                "buffer_bytes": None,
                "cc": "balia",
                "host_buffer_mb": 6,
                "subflows": 4,
            },
        }
    )[0]
    s = gaps.scenario_for(base["params"], 3, 60)
    rtts = [p["rtt_ms"] for p in s["paths"]]
    assert len(rtts) == 4 and 20 <= rtts[0] <= 50 and 50 <= rtts[-1] <= 100 and rtts == sorted(rtts)
    assert s["cc"] == "balia" and s["flow_control"] == {
        "initial_window_bytes": 6291456,
        "max_window_bytes": 6291456,
    }
    assert (
        gaps.path_rtts_ms(base["params"], 3)
        == gaps.path_rtts_ms(base["params"], 3)
        != gaps.path_rtts_ms(base["params"], 4)
    )
    assert gaps.app_delay_ms([0.0, 1.0, 3.0], [0, 100, 0], 1000) == pytest.approx(200.0)


@pytest.mark.parametrize(
    "override, key",
    [
        ("gaps.default.loss=2", "gaps.default.loss"),
        ("gaps.default.cc=reno2", "gaps.default.cc"),
        ("gaps.sweeps.subflows=[2,9]", "gaps.sweeps.subflows.subflows"),
        ("gaps.schedulers=[minrtt,gaps_nope]", "gaps_nope"),
        ("gaps.seeds=0", "seeds"),
        ("gaps.fct.long_scale=2", "gaps.fct.long_scale"),
    ],
)
def test_bad_settings_give_one_line_errors(job_cfg, override, key):
    with pytest.raises(ConfigError) as e:  # the full config (quick=true would replace these keys)
        gaps.settings(
            job_cfg(override, "gaps.schedulers=[minrtt]", quick=False)
            if "schedulers" not in override
            else job_cfg(override, quick=False)
        )
    assert "\n" not in str(e.value) and key in str(e.value)


def test_unavailable_scheduler_is_a_clear_error(monkeypatch):
    from falcon.experiments import common

    monkeypatch.setattr(
        common, "agent_config", lambda n, o=None: {"_target_": "baselines.gaps.nothing_here.X"}
    )
    with pytest.raises(ConfigError, match="'ghost' is not available") as e:
        gaps.check_scheduler_names({"schedulers": ["ghost"]})
    assert "\n" not in str(e.value)


def test_summary_never_takes_a_median_of_mixed_deviation_units():
    base = {k: 1.0 for k in gaps.RUN_METRICS}
    recs = [
        {
            **base,
            "setting": "default",
            "scheduler": "stms",
            "seed": s,
            "timed_out": 0.0,
            "true_gap_packets": tg,
            "gap_deviation": dev,
            "gap_deviation_unit": unit,
        }
        for s, (tg, dev, unit) in enumerate([(0, 3.0, "packets"), (10, 20.0, "%"), (20, 40.0, "%")])
    ]
    m = gaps.summarise(recs, {"settings": [{"name": "default"}], "schedulers": ["stms"]})[
        "default"
    ]["stms"]
    assert (
        m["gap_deviation"] == 30.0
        and m["gap_deviation_unit"] == "%"
        and m["gap_deviation_seeds"] == 2
    )
    m = gaps.summarise(recs[:1], {"settings": [{"name": "default"}], "schedulers": ["stms"]})[
        "default"
    ]["stms"]
    assert (m["gap_deviation"], m["gap_deviation_unit"]) == (3.0, "packets")
