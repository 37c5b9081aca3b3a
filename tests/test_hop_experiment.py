"""experiment=hop (falcon/experiments/hop.py): the quick variant end to end,
its outputs, and one-line errors for bad settings. Checks structure, not the outcome."""

from __future__ import annotations

import json
import math

import pytest

from envs.errors import ConfigError
from falcon.experiments import hop, hop_report


@pytest.fixture
def job_cfg(compose, tmp_path):
    def make(*extra, quick=True):
        return compose(
            "train",
            [
                "experiment=hop",
                f"quick={str(quick).lower()}",
                "tracking=none",
                f"output={tmp_path / 'hop'}",
                "progress=false",
                *extra,
            ],
        )

    return make


def test_quick_variant_end_to_end(job_cfg, tmp_path):
    res = hop.run_job(job_cfg())
    out = tmp_path / "hop"
    for name in (
        "hop.json",
        "hop.txt",
        "hop.png",
        "hop_leap.png",
        "hop_estimator.png",
        "config.json",
    ):
        assert (out / name).is_file(), name
    data = json.loads((out / "hop.json").read_text())
    names = ["hop", "ideal_jump", "leap", "cubic+minrtt", "bbr+dems"]
    assert list(data["summary"]) == ["balanced", "highly_unbalanced"]
    for cs in data["summary"].values():
        assert list(cs["schedulers"]) == names
        for name, p in cs["schedulers"].items():
            assert list(p["sizes"]) == (["leap"] if name == "leap" else ["100", "140"])
            for c in p["sizes"].values():
                assert 0.0 <= c["failure_probability"] <= 1.0 and c["runs"] == 1
        assert (
            cs["bound_empirical"]["goodput_mbps"] > 0 and cs["bound_gaussian"]["goodput_mbps"] > 0
        )
        assert cs["schedulers"]["leap"]["mean_block_kb"] > 0
        assert len(cs["schedulers"]["hop"]["estimator"]["below_q2"]) == 2
    assert set(data["summary"]["highly_unbalanced"]["failure_ratios"]) == {"bbr+dems/hop"}
    assert len(data["records"]) == 2 * (4 * 2 + 1)
    assert all(0.0 <= r["failure_probability"] <= 1.0 for r in data["records"])
    assert data["estimator_series"] and len(data["estimator_series"]["t_s"]) > 10
    assert data["paper"] == hop_report.PAPER and res["wall_s"] > 0
    text = (out / "hop.txt").read_text()
    assert "the paper's claims beside ours" in text and "46.4" in text


@pytest.mark.parametrize(
    "override, match",
    [
        ("hop.cases=[balanced,nowhere]", "unknown case 'nowhere'"),
        ("hop.schedulers=[hop,foo+minrtt]", r"unknown scheduler 'foo\+minrtt'"),
        ("hop.schedulers=[hop,bbr+nosuch]", "nosuch"),
        ("hop.runs=0", "runs"),
        ("hop.block_kb=[100,-5]", "block_kb"),
        ("hop.duration_s=0", "duration_s"),
        ("hop.block.p_thr=1.5", "p_thr"),
        ("+hop.hop_variants.bad={mode: sideways}", "hop_variants.bad"),
    ],
)
def test_config_errors(job_cfg, override, match):
    with pytest.raises(ConfigError, match=match) as e:
        hop.settings(job_cfg(override, quick=False))
    assert "\n" not in str(e.value)


def test_mean_ci():
    m, ci = hop.mean_ci([0.1, 0.2, 0.3])
    assert math.isclose(m, 0.2) and ci > 0
    assert math.isnan(hop.mean_ci([0.5])[1])
