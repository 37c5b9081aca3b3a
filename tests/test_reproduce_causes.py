"""Measured causes of claims that did not reproduce (falcon/reproduce/causes.py):
computed from the results JSON alone, and quoted by the failing verdicts."""

from __future__ import annotations

import numpy as np
import pytest

from falcon.reproduce import causes
from falcon.reproduce.claims import check_convergence, check_real_world, check_stress, check_web

FIG = {
    "claims": [
        {"id": "dqn_on_slow", "values": {"dqn_on_packets": 100000}},
        {"id": "falcon_fast", "values": {"falcon_packets": 600, "mpeekaboo_packets": 6000}},
        {
            "id": "falcon_beats_mpeekaboo",
            "values": {"falcon_gain_pct": 23.6, "falcon_n_gain_pct": 18.7},
        },
        {"id": "falcon_s_beats_falcon", "values": {"max_gain_pct": 13.6}},
    ]
}


def test_the_same_downloads_and_the_paired_interval():
    same = [(1.0, 1.0), (2.0, 2.0), (3.0, 3.5)]
    assert causes.same_downloads(same) == 2
    assert causes.pairs_of({(0,): 1.0, (1,): None, (2,): 3.0}, {(0,): 2.0, (1,): 1.0}) == [
        (1.0, 2.0)
    ]
    rng = np.random.default_rng(1)
    base = rng.lognormal(0.0, 0.3, 40)
    slower = [(1.3 * x, x) for x in base]  # every download 30 % slower: resolvable
    ratio, lo, hi = causes.paired_interval(slower)
    assert ratio == pytest.approx(1.3) and 1.0 < lo <= 1.3 <= hi
    assert "resolvably slower" in causes.compare("a", "b", slower)
    noisy = [(x * y, y) for x, y in zip(rng.lognormal(0.0, 0.3, 40), base, strict=True)]
    assert "not resolvable" in causes.compare("a", "b", noisy)
    assert "too few for an interval" in causes.compare("a", "b", slower[:3])
    assert causes.paired_interval(slower) == causes.paired_interval(slower)  # seeded


def _stress_records(falcon_like_minrtt: bool):
    rng = np.random.default_rng(0)
    recs = []
    for seed_index in range(2):
        for condition in range(6):
            t = float(rng.uniform(0.5, 2.0))
            times = {
                "minrtt": t,
                "falcon": t if falcon_like_minrtt else 1.05 * t,
                "mpeekaboo": 0.8 * t,
            }
            for name, x in times.items():
                recs.append(
                    {
                        "scheduler": name,
                        "interval_s": 2.0,
                        "seed_index": seed_index,
                        "condition": condition,
                        "download": 0,
                        "download_time_s": x,
                    }
                )
    return recs


def test_a_failing_stress_verdict_says_falcon_took_minrtts_times_and_the_paired_gap():
    res = {
        "scores": {
            "falcon": [{"interval_s": 2.0, "score": 0.9}],
            "mpeekaboo": [{"interval_s": 2.0, "score": 1.1}],
            "minrtt": [{"interval_s": 2.0, "score": 0.9}],
        },
        "records": _stress_records(True),
    }
    (v,) = check_stress(res, FIG)
    assert not v.reproduced
    assert "took minRTT's very time on 12 of 12 downloads" in v.reason
    assert "2 s against mpeekaboo: falcon took mpeekaboo's very time on 0 of 12" in v.reason
    assert "falcon resolvably slower" in v.reason
    assert "not measured" not in v.reason


def test_a_failing_convergence_verdict_gives_the_start_scores_and_the_runs():
    curve = [{"n": 4, "score": 0.95, "median_packets": 0.0}]
    res = {
        "settings": {"target_score": 0.9},
        "start_scores": {"falcon": 0.93, "mpeekaboo": 0.99},
        "packets_to_target": {"falcon": 0.0, "mpeekaboo": 0.0, "dqn_on": float("nan")},
        "curves": {"falcon": curve, "mpeekaboo": [{"n": 4, "score": 1.01, "median_packets": 0.0}]},
        "run_medians_b_s": {"falcon": [1.0, 1.2], "mpeekaboo": [1.1, 1.0]},
    }
    v = next(v for v in check_convergence(res, FIG) if v.claim_id == "falcon_fast")
    assert not v.reproduced
    assert "falcon 0.930, mpeekaboo 0.990; both already at the target 0.9" in v.reason
    assert "0.909 to 1.200 (1 of 2 runs slower)" in v.reason


def test_failing_web_and_update_verdicts_give_paired_comparisons():
    def per(values):
        return {"download_time_s": {"median": float(np.median(values)), "values": values}}

    web = {
        "results": {
            "mobile": {
                "web_github": {
                    "falcon": per([1.0, 2.0, 3.0]),
                    "minrtt": per([1.0, 2.0, 3.0]),
                    "mpeekaboo": per([0.9, 1.8, 2.7]),
                }
            }
        }
    }
    v = next(v for v in check_web(web, FIG) if v.claim_id == "falcon_beats_others")
    assert (
        "against mpeekaboo" in v.reason and "falcon took minRTT's very time on 3 of 3" in v.reason
    )

    def rec(name, day, d, t):
        return {"scheduler": name, "day": day, "download": d, "download_time_s": t}

    summary = {"all": {"mean_time_s": 1.0}}
    rw = {
        "results": {
            "static": {
                "summary": {"falcon": summary, "falcon_n": summary, "mpeekaboo": summary},
                "offline_updates": {"falcon": [{"day": 1, "cells": 2}, {"day": 2, "cells": 1}]},
                "records": [
                    rec(n, 1, d, 1.0 + d) for n in ("falcon", "falcon_n") for d in range(3)
                ],
            }
        }
    }
    v = next(v for v in check_real_world(rw, FIG) if v.claim_id == "updates_help")
    assert not v.reproduced
    assert (
        "static: 2 offline updates of 3 cells in all; falcon took falcon_n's very time on 3 of 3"
        in v.reason
    )
