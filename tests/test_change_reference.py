"""The reference of the convergence experiment's A -> B change
(falcon/experiments/change_reference.py): the best known policy on B, and the
check that A's best policy is poor enough on B for adaptation to show."""

from __future__ import annotations

import math

import pytest

from envs.errors import ConfigError
from envs.scenario import normalise_scenario
from falcon.experiments import change_reference, convergence

APP = {"kind": "bulk", "size_bytes": 200_000}


def two_paths(rate0: float, rate1: float) -> dict:
    return normalise_scenario(
        {
            "paths": [
                {"bandwidth_mbps": rate0, "rtt_ms": 30.0},
                {"bandwidth_mbps": rate1, "rtt_ms": 30.0},
            ]
        }
    )


def ref(**over) -> dict:
    sec = {"rules": ["minrtt"], "shares": [0.0, 1.0], "runs": 3, "min_gap": 0.2, **over}
    return change_reference.check_reference(
        {"kind": "best_known", "best_known": sec}, "convergence.reference"
    )


def test_the_best_known_on_b_is_the_candidate_with_the_lowest_median():
    # A: path 0 fast; B: path 0 a trickle, so sending everything on path 1 wins
    a, b = two_paths(40.0, 10.0), two_paths(0.5, 40.0)
    out = change_reference.best_known(a, b, APP, ref(), seed=0, where="x", progress=False)
    assert out["a_policy"] in ("minrtt", "share=1")  # path 0 carries (almost) all on A
    assert out["policy"] == "share=0"  # everything on path 1
    assert out["median_time_s"] == min(out["medians_b_s"].values())
    assert out["a_policy_gap"] >= 0.2 and len(out["times"]) == 3
    assert out["median_time_s"] == pytest.approx(sorted(out["times"])[1])


def test_a_change_the_a_policy_handles_is_refused_naming_the_gap():
    a = two_paths(40.0, 10.0)
    with pytest.raises(ConfigError, match=r"cannot show adaptation.*0% behind.*min_gap"):
        change_reference.best_known(a, a, APP, ref(), seed=0, where="x", progress=False)
    # min_gap 0 accepts it
    out = change_reference.best_known(a, a, APP, ref(min_gap=0), seed=0, where="x", progress=False)
    assert out["a_policy_gap"] == pytest.approx(0.0)


@pytest.mark.parametrize(
    "section, match",
    [
        ({"kind": "oracle"}, "kind: expected one of"),
        ({"kind": "best_known", "bogus": 1}, r"unknown key\(s\) \['bogus'\]"),
        ({"best_known": {"rules": [], "shares": []}}, "no candidate policy"),
        ({"best_known": {"rules": ["minrtt"], "shares": [1.5]}}, r"shares: expected .* \[0, 1\]"),
        ({"best_known": {"rules": ["minrtt"], "min_gap": -0.1}}, "min_gap"),
        ({"best_known": {"rules": ["minrtt"], "gradient_steps": 9}}, "gradient_steps"),
        ({"kind": "dqn_off", "dqn_off": {"shares": [0]}}, r"dqn_off: unknown key"),
    ],
)
def test_bad_reference_settings_are_one_line_errors(section, match):
    with pytest.raises(ConfigError, match=match):
        change_reference.check_reference(section, "convergence.reference")


def test_the_default_change_can_show_adaptation(compose):
    """The shipped condition B: A's best policy is at least 20 % behind the
    best known on B (a few downloads per candidate; the job itself uses 20)."""
    cfg = compose("train", ["experiment=convergence", "convergence.reference.best_known.runs=5"])
    _, sec, a, b, _ = convergence.settings(cfg)
    r = sec["reference"]
    assert r["kind"] == "best_known" and r["min_gap"] == 0.2
    out = change_reference.best_known(
        a, b, {"kind": "bulk", "size_bytes": 2_000_000}, r, 0, "x", False
    )
    assert out["a_policy_gap"] >= 0.2 and math.isfinite(out["median_time_s"])


def test_the_papers_setting_stays_runnable(compose):
    cfg = compose("train", ["experiment=convergence_paper"])
    _, sec, _, b, _ = convergence.settings(cfg)
    assert sec["reference"]["kind"] == "dqn_off" and sec["reference"]["gradient_steps"] == 2000
    assert b["paths"][0]["loss"] == pytest.approx(0.02)
