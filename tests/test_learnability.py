"""The learnability suite (falcon/experiments/learnability.py): the quick
suite end to end, its scores recomputed from the JSON, condition lists from
the command line, bad conditions stopped before any training, and results
that do not depend on the runtime."""

from __future__ import annotations

import json
import math

import pytest

import envs
from baselines import make_scheduler
from envs.errors import ConfigError
from falcon.experiments import learnability as lb

SLOW_FAST = (
    "{name: x, scenario: {paths: [{bandwidth_mbps: 50, rtt_ms: 10}, "
    "{bandwidth_mbps: 5, rtt_ms: 150}]}}"
)


def _quick(compose, *extra):
    return compose(
        "train",
        ["experiment=learnability", "quick=true", "progress=false", "runtime.workers=1", *extra],
    )


def test_quick_suite_end_to_end(compose, tmp_path):
    out = tmp_path / "suite"
    res = lb.run_job(_quick(compose, "tracking=none", f"output={out}"))
    assert res["mlflow_run_id"] is None and res["output"] == str(out)
    for name in (
        "learnability.json",
        "table.txt",
        "learnability.png",
        "summary.json",
        "config.json",
    ):
        assert (out / name).is_file(), name
    data = json.loads((out / "learnability.json").read_text())
    rules, learners = data["settings"]["rules"], data["settings"]["learners"]
    assert rules == [
        "minrtt",
        "blest",
        "ecf",
        "rr",
        "daps",
        "stms",
        "minrtt_or",
        "minrtt_xlink",
        "redundant",
    ]
    assert learners == ["dqn_off", "dqn_on"]
    refs = ["best_single_path", "best_fixed_split", "oracle", "crossfit_policy"]
    assert data["schedulers"] == [*rules, *refs, *learners]
    assert [c["name"] for c in data["conditions"]] == ["t1_4g_5g", "t1_4g_wlan", "t1_5g_wlan"]
    assert data["settings"]["seeds"] == [0, 1, 2]
    assert all(c["app"]["size_bytes"] == 200_000 for c in data["conditions"])
    # every scheduler has its runs; the best rule is the rule with the lowest median
    for cond, res_c in data["results"].items():
        sch = res_c["schedulers"]
        assert list(sch) == data["schedulers"]
        assert all(len(s["download_time_s"]["values"]) == 3 for s in sch.values())
        medians = {r: sch[r]["download_time_s"]["median"] for r in rules}
        assert res_c["best_rule"] == {
            "name": min(medians, key=medians.get),
            "median_s": min(medians.values()),
        }
        shares = {float(k): v["median"] for k, v in sch["best_fixed_split"]["shares"].items()}
        assert len(shares) == 11 and sch["best_fixed_split"]["share"] == min(shares, key=shares.get)
        # the references: the best single path is share 0 or 1; the oracle is, seed by seed, no slower
        # than any rule, any fixed share (single paths included); the best known is the lowest median
        single = min((0.0, 1.0), key=lambda s: shares[s])
        assert sch["best_single_path"]["download_time_s"]["median"] == shares[single]
        assert sch["best_single_path"]["path"] == (0 if single == 1.0 else 1)
        oracle = sch["oracle"]["download_time_s"]["values"]
        others = [sch[r]["download_time_s"]["values"] for r in rules]
        others += [v["values"] for v in sch["best_fixed_split"]["shares"].values()]
        assert all(o <= x[k] for x in others for k, o in enumerate(oracle))
        assert (
            sum(sch["oracle"]["chosen_counts"].values()) == 3
            and sch["oracle"]["candidates"] == 11 * 4 + 9
        )
        known = {n: s["download_time_s"]["median"] for n, s in sch.items()}
        assert res_c["best_known"]["median_s"] == min(known.values())
        assert res_c["headroom"] == pytest.approx(
            res_c["best_rule"]["median_s"] / min(known.values())
        )
        assert sch["oracle"]["ratio_best_known"] >= 1.0 and sch["oracle"]["ratio"] <= 1.0
        # the cross-fitted policy: each seed gets one of the candidates, never faster than the oracle there
        cross = sch["crossfit_policy"]["download_time_s"]["values"]
        assert (
            all(c >= o for c, o in zip(cross, oracle))
            and sch["crossfit_policy"]["candidates"] == 11 * 4 + 9
        )
        assert (
            sch["minrtt_xlink"]["redundancy_overhead"] > 0
            and sch["minrtt"]["redundancy_overhead"] == 0
        )
        for n in learners:
            exp = sch[n]["train"]["experience"]
            assert exp["packets"] > 0 and exp["episodes"] == {"dqn_on": 3, "dqn_off": 2}[n]
            assert exp["kind"] == {"dqn_on": "online", "dqn_off": "offline"}[n]
            assert (out / "models" / cond / n / "model.h5").is_file()
    # the suite score is the geometric mean of median / best-rule median over the conditions
    for n in data["schedulers"]:
        ratios = [
            r["schedulers"][n]["download_time_s"]["median"] / r["best_rule"]["median_s"]
            for r in data["results"].values()
        ]
        assert data["suite_score"][n] == pytest.approx(
            math.exp(sum(map(math.log, ratios)) / len(ratios))
        )
    assert min(data["suite_score"][r] for r in rules) >= 1.0
    for n, w in data["within_best_rule"].items():
        assert w["count"] == sum(
            r["schedulers"][n]["ratio"] <= 1.05 for r in data["results"].values()
        )
    assert set(data["within_best_known"]) == {*learners, "crossfit_policy"}
    for n, w in data["within_best_known"].items():
        assert w["count"] == sum(
            r["schedulers"][n]["ratio_best_known"] <= 1.05 for r in data["results"].values()
        )
        assert (
            f"{n}: within 5 % of the best known on {w['count']}/{w['of']}"
            in (out / "table.txt").read_text()
        )
    table = (out / "table.txt").read_text()
    assert "suite score" in table and "t1_5g_wlan" in table and "against the best known" in table
    assert data["headroom"]["count"] == sum(r["has_headroom"] for r in data["results"].values())
    metrics = lb.flat_metrics(data)  # what goes to MLflow
    assert metrics["suite_score/dqn_on"] == data["suite_score"]["dqn_on"]
    assert (
        metrics["t1_4g_5g/minrtt/median"]
        == data["results"]["t1_4g_5g"]["schedulers"]["minrtt"]["download_time_s"]["median"]
    )


def test_the_command_line_wins_over_the_quick_variant(run_cli, tmp_path):
    """quick=true merges the job's quick_variant, but never over a key given on
    the command line (the variant sets max_conditions 3 and runs 3)."""
    out = tmp_path / "one"
    res = run_cli(
        "train",
        "experiment=learnability",
        "quick=true",
        "tracking=none",
        f"output={out}",
        "learnability.max_conditions=1",
        "runs=2",
        "learnability.learners=[]",
        "learnability.rules=[minrtt]",
        "learnability.fixed_split_shares=[0.0,1.0]",
        "learnability.oracle=false",
        "runtime.workers=1",
    )
    assert res.returncode == 0, res.stderr
    data = json.loads((out / "learnability.json").read_text())
    assert [c["name"] for c in data["conditions"]] == ["t1_4g_5g"]
    assert data["settings"]["seeds"] == [0, 1]
    assert data["conditions"][0]["app"]["size_bytes"] == 200_000  # the rest of the variant holds


def test_without_keys_drops_the_nodes_of_dotted_paths():
    from falcon.experiments.common import without_keys

    tree = {"runs": 3, "a": {"b": 1, "c": {"d": 2, "e": 3}}}
    assert without_keys(tree, ["runs", "a.c.d", "a.x.y", "zz"]) == {"a": {"b": 1, "c": {"e": 3}}}
    assert without_keys(tree, ["a.c"]) == {"runs": 3, "a": {"b": 1}}
    assert tree["a"]["c"] == {"d": 2, "e": 3}  # a copy


def test_condition_list_from_the_command_line(run_cli, tmp_path, compose):
    out = tmp_path / "one"
    res = run_cli(
        "train",
        "experiment=learnability",
        "quick=true",
        "tracking=none",
        f"output={out}",
        "learnability.learners=[]",
        "learnability.fixed_split_shares=[0.0,0.5,1.0]",
        "runs=2",
        "learnability.oracle=false",
        "runtime.workers=1",
        f"learnability.conditions=[{SLOW_FAST}]",
    )
    assert res.returncode == 0, res.stderr
    data = json.loads((out / "learnability.json").read_text())
    assert [c["name"] for c in data["conditions"]] == ["x"]
    assert data["conditions"][0]["app"]["size_bytes"] == 200_000  # quick: 200 kB files
    assert set(data["results"]["x"]["schedulers"]["best_fixed_split"]["shares"]) == {
        "0.0",
        "0.5",
        "1.0",
    }
    assert "oracle" not in data["results"]["x"]["schedulers"]
    jobs = [line for line in res.stderr.splitlines() if line.startswith("learnability: [")]
    assert len(jobs) == 10 and all(
        " x " in line for line in jobs
    )  # one line per rule + fixed split
    # without quick: a condition with no app is a 2 MB bulk download
    _, _, conds, _ = lb.settings(
        compose(
            "train",
            [
                "experiment=learnability",
                f"learnability.conditions=[{SLOW_FAST}]",
                "learnability.learners=[]",
                "learnability.deployed=[]",
            ],
        )
    )
    assert conds[0]["app"]["kind"] == "bulk" and conds[0]["app"]["size_bytes"] == 2_000_000


@pytest.mark.parametrize(
    "path0, message",
    [
        ("{bandwidth_mbps: -5, rtt_ms: 10}", "paths[0].bandwidth_mbps: -5"),
        ("{bandwidth_mbps: 5, rtt_msec: 10}", "unknown key(s) ['rtt_msec']"),
        ("{trace: no/such.csv, rtt_ms: 10}", "no/such.csv: no such file"),
    ],
)
def test_bad_condition_exits_2_before_training(run_cli, tmp_path, path0, message):
    out = tmp_path / "bad"
    cond = (
        f"{{name: good, scenario: {{paths: [{{link: 4g}}, {{link: 5g}}]}}}}, "
        f"{{name: bad, scenario: {{paths: [{path0}, {{link: wlan}}]}}}}"
    )
    res = run_cli(
        "train",
        "experiment=learnability",
        "tracking=none",
        f"output={out}",
        f"learnability.conditions=[{cond}]",
    )
    assert res.returncode == 2, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], res.stderr
    assert "bad" in lines[0]
    assert not out.exists() and not list(tmp_path.glob(".bad*"))


@pytest.mark.parametrize(
    "overrides, message",
    [
        (
            ["learnability.conditions=[{name: x, scenario: {paths: [{link: 4g}]}}]"],
            "expected 2 paths",
        ),
        (
            [
                "learnability.conditions=[{name: x, scenario: {paths: [{link: 4g}, {link: 5g}]}, appp: {}}]"
            ],
            "unknown key(s) ['appp']",
        ),
        (
            [
                "learnability.conditions=[{name: x, scenario: {paths: [{link: 4g}, {link: 5g}]}, app: {kind: video}}]"
            ],
            "app.kind: unknown app 'video'",
        ),
        (["learnability.learners=[mpeekaboo]"], "'mpeekaboo' has no train: section"),
        (
            ["learnability.learners=[minrtt]"],
            "minrtt listed more than once among rules, learners and deployed",
        ),
        (
            ["learnability.deployed=[dqn_off,dqn_off]"],
            "learnability.deployed: dqn_off listed twice",
        ),
        (["learnability.deployed=[dqn_off]"], "dqn_off listed more than once"),
        (
            ["learnability.rules=[dqn_on]", "learnability.learners=[]"],
            "'dqn_on' has a train: section",
        ),
        (
            ["learnability.fixed_split_shares=[0.5,1.5]"],
            "fixed_split_shares: share: expected a number in [0, 1]",
        ),
        (["learnability.fixed_split_shares=[0.0,0.5]"], "must include 0 and 1"),
        (
            ["learnability.oracle={thresholds: [0.5], reinject: [false]}"],
            "oracle.thresholds: threshold: expected",
        ),
        (
            ["learnability.oracle={thresholds: [null], reinject: [maybe]}"],
            "oracle.reinject: expected",
        ),
        (
            ["learnability.agent_overrides={nosuch: {epsilon: 0}}"],
            "agent_overrides: unknown agent 'nosuch'",
        ),
        (["learnability.rules=[nosuch]"], "unknown agent 'nosuch'"),
        (["learnability.sequential=yes"], "learnability.sequential: expected true or false"),
    ],
)
def test_bad_settings_are_one_line_errors(compose, overrides, message):
    with pytest.raises(ConfigError) as e:
        lb.settings(compose("train", ["experiment=learnability", *overrides]))
    assert message in str(e.value) and "\n" not in str(e.value)


def test_results_do_not_depend_on_the_runtime(compose):
    """Inline and a two-process pool give the same numbers (learner included)."""
    cfg = compose(
        "train",
        [
            "experiment=learnability",
            "quick=true",
            "runs=2",
            "learnability.max_conditions=1",
            "learnability.rules=[minrtt,rr]",
            "learnability.learners=[dqn_on]",
            "learnability.fixed_split_shares=[0.0,0.3,1.0]",
            "learnability.oracle={thresholds: [null, 2], reinject: [true]}",
            "learnability.agent_overrides={dqn_on: {train: {episodes: 1}}}",
        ],
    )
    _, sec, conds, agents = lb.settings(cfg)

    def numbers(workers):
        res = lb.run_learnability(
            sec, conds, agents, {"name": "local", "workers": workers}, progress=False
        )
        return {
            c: {
                n: (s["download_time_s"]["values"], s.get("share"))
                for n, s in r["schedulers"].items()
            }
            for c, r in res["results"].items()
        }, res["suite_score"]

    assert numbers(1) == numbers(2)


def test_fixed_split_holds_its_share_in_the_emulator():
    scen = {"paths": [{"bandwidth_mbps": 50, "rtt_ms": 10}, {"bandwidth_mbps": 5, "rtt_ms": 150}]}
    for share in (0.0, 0.3, 1.0):
        m = envs.run_episode(
            scen,
            {"kind": "bulk", "size_bytes": 300_000},
            make_scheduler("fixed_split", share=share),
            0,
        ).metrics
        assert m["timed_out"] == 0 and m["path0_share"] == pytest.approx(share, abs=0.01)


def test_a_deployed_scheduler_is_evaluated_from_its_config_and_scored_like_a_learner(
    compose, tmp_path
):
    """FALCON joins the suite deployed from a bank (here a tiny untrained
    one), never trained on the condition, judged against the rules."""
    from baselines.dqn.network import QNetSpec
    from metalearning import ConditionGrid, MetaModelBank

    bank = MetaModelBank.initial(ConditionGrid(2), QNetSpec(19, 2, (8, 8, 8)), seed=0).write(
        tmp_path / "b.h5"
    )
    cfg = compose(
        "train",
        [
            "experiment=learnability",
            "runs=2",
            "learnability.max_conditions=1",
            "learnability.bulk_size_bytes=200000",
            "progress=false",
            "learnability.rules=[minrtt,rr]",
            "learnability.learners=[]",
            "learnability.deployed=[falcon]",
            "learnability.fixed_split_shares=[0.0,0.5,1.0]",
            "learnability.oracle=false",
            f"learnability.agent_overrides={{falcon: {{bank: '{bank}'}}}}",
        ],
    )
    _, sec, conds, agents = lb.settings(cfg)
    res = lb.run_learnability(sec, conds, agents, {"name": "local", "workers": 1}, progress=False)
    assert res["schedulers"] == ["minrtt", "rr", "best_single_path", "best_fixed_split", "falcon"]
    st = res["results"]["t1_4g_5g"]["schedulers"]["falcon"]
    assert len(st["download_time_s"]["values"]) == 2 and "train" not in st
    best = res["results"]["t1_4g_5g"]["best_rule"]["median_s"]
    assert st["ratio"] == pytest.approx(st["download_time_s"]["median"] / best)
    assert res["within_best_rule"]["falcon"]["of"] == 1 and res["settings"]["deployed"] == [
        "falcon"
    ]
    assert res["suite_score"]["falcon"] == pytest.approx(st["ratio"])
    assert "falcon" in lb.table(res)


def test_each_learner_ratio_gets_a_bootstrap_interval_and_resolvably_behind_is_counted():
    from falcon.experiments.learnability_report import score_condition, suite_summary
    from falcon.experiments.learnability_settings import FIXED, METRIC

    def runs(times):
        return {"runs": [{METRIC: t, "timed_out": 0.0} for t in times], "wall_s": 0.0}

    base = [1.0, 1.1, 0.9, 1.2, 1.05, 0.95, 1.15, 0.85, 1.0, 1.1]
    out = {
        "minrtt": runs(base),
        "rr": runs([t * 1.02 for t in base]),
        "slow": runs([t * 1.20 for t in base]),
        "close": runs([t * 1.01 for t in base]),
        FIXED: {
            "shares": {0.5: [{METRIC: t * 1.3, "timed_out": 0.0} for t in base]},
            "wall_s": 0.0,
        },
    }
    sec = {
        "rules": ["minrtt", "rr"],
        "learners": ["slow", "close"],
        "deployed": [],
        "within": 1.05,
        "beat_margin": 0.1,
        "headroom_margin": 0.1,
    }
    res = score_condition(out, sec)
    slow, close = (
        res["schedulers"]["slow"]["vs_best_rule"],
        res["schedulers"]["close"]["vs_best_rule"],
    )
    assert slow["best"] == "minrtt" and slow["paired"] == pytest.approx(1.20)
    assert slow["ratio_ci"][0] > 1.05  # 20 % behind on every seed: resolved
    assert close["ratio_ci"][0] <= 1.05
    summary = suite_summary({"c": res}, sec)
    assert summary["resolvably_behind"]["slow"]["conditions"] == ["c"]
    assert summary["resolvably_behind"]["close"]["count"] == 0


def test_the_oracle_takes_per_seed_the_fastest_candidate():
    from falcon.experiments.oracle import (
        captured,
        check_oracle,
        label,
        member_groups,
        per_seed_best,
    )

    nan = math.nan
    best, chosen = per_seed_best({"a": [3.0, nan, 2.0, nan], "b": [1.0, 5.0, 2.0, nan]})
    assert best[:3] == [1.0, 5.0, 2.0] and math.isnan(best[3])
    assert chosen == ["b", "b", "a", None]  # ties: the first listed
    groups = member_groups([0.0, 0.5, 1.0], {"thresholds": [None, 2.0], "reinject": [False, True]})
    assert [len(g) for g in groups] == [3, 3, 3]  # (none, off) is the fixed split's own
    assert {(g[0]["threshold"], g[0]["reinject"]) for g in groups} == {
        (None, True),
        (2.0, False),
        (2.0, True),
    }
    assert label(0.3, None, False) == "share=0.3,threshold=none,reinject=off"
    assert captured(2.0, 1.0, 1.5) == 0.5 and captured(2.0, 2.0, 1.5) is None
    with pytest.raises(ConfigError, match=r"x: unknown key\(s\) \['shares'\]"):
        check_oracle({"thresholds": [None], "reinject": [True], "shares": [1]}, "x")
    assert check_oracle(False, "x") is None


def test_the_oracle_is_reproducible_from_the_seed(compose):
    cfg = compose(
        "train",
        [
            "experiment=learnability",
            "quick=true",
            "runs=2",
            "learnability.max_conditions=1",
            "learnability.learners=[]",
            "learnability.rules=[minrtt]",
            "learnability.fixed_split_shares=[0.0,0.5,1.0]",
        ],
    )
    _, sec, conds, agents = lb.settings(cfg)

    def oracle():
        res = lb.run_learnability(
            sec, conds, agents, {"name": "local", "workers": 1}, progress=False
        )
        o = res["results"]["t1_4g_5g"]["schedulers"]["oracle"]
        return o["download_time_s"]["values"], o["chosen"]

    assert oracle() == oracle()


def test_crossfit_picks_each_seeds_policy_on_the_other_half_of_the_seeds():
    from falcon.experiments.oracle import crossfit_best, per_seed_best

    nan = float("nan")
    # a is best on the even positions' medians, b on the odd ones'; c never finishes
    cands = {"a": [1.0, 5.0, 1.2, 5.0], "b": [3.0, 2.0, 3.0, 2.2], "c": [nan, nan, nan, nan]}
    values, chosen = crossfit_best(cands)
    # even positions are scored with the choice made on the odd ones (b), and the reverse
    assert chosen == ["b", "a", "b", "a"] and values == [3.0, 5.0, 3.0, 5.0]
    best, _ = per_seed_best(cands)
    assert best == [1.0, 2.0, 1.2, 2.2] and all(v >= b for v, b in zip(values, best))
    values, chosen = crossfit_best({"c": [nan, nan]})
    assert chosen == [None, None] and all(v != v for v in values)
    # d's fold medians over its finished runs only would be 1.0; its unfinished runs rank last
    values, chosen = crossfit_best({"d": [1.0, 1.0, nan, nan, nan, nan], "e": [2.0] * 6})
    assert chosen == ["e"] * 6


def test_a_scheduler_that_times_out_on_its_slowest_runs_does_not_rank_ahead():
    from falcon.experiments.learnability_report import score_condition
    from falcon.experiments.learnability_settings import FIXED, METRIC

    def runs(times):
        return {
            "runs": [{METRIC: t, "timed_out": 0.0 if t == t else 1.0} for t in times],
            "wall_s": 0.0,
        }

    base = [1.0, 1.1, 0.9, 1.2, 1.05, 0.95, 1.15, 0.85, 1.0, 1.1]
    nan = float("nan")
    # "cut": 2 % faster than minRTT where it finishes, and it does not finish its 5 slowest
    cut = [nan if t >= 1.05 else 0.98 * t for t in base]
    out = {
        "minrtt": runs(base),
        "cut": runs(cut),
        FIXED: {"shares": {0.5: runs([t * 1.3 for t in base])["runs"]}, "wall_s": 0.0},
    }
    sec = {
        "rules": ["minrtt"],
        "learners": ["cut"],
        "deployed": [],
        "within": 1.05,
        "beat_margin": 0.1,
        "headroom_margin": 0.1,
    }
    res = score_condition(out, sec)
    cut_st = res["schedulers"]["cut"]
    assert cut_st["timed_out"] == 5 and cut_st[METRIC]["n"] == 10
    # over its 5 finished runs its median would be 0.98 x 0.95 s, ahead; over all 10 it is unfinished
    assert cut_st[METRIC]["median"] is None and cut_st["ratio"] is None
    assert res["best_known"]["name"] != "cut"


def test_the_trace_aware_oracle_reruns_the_oracles_choice_on_fresh_noise(compose):
    from envs import run_episode
    from envs.emulation import pin_trace_draws
    from falcon.experiments.oracle import RESAMPLE_SEED_OFFSET, TRACE_ORACLE
    from falcon.jobs import instantiate_agent

    paths = "[{bandwidth_mbps: 20, rtt_ms: 30{noise}}, {bandwidth_mbps: 6, rtt_ms: 80{noise}}]"
    noisy = ", rtt_std_ms: 8, loss: 0.02"
    conditions = (
        f"[{{name: quiet, scenario: {{paths: {paths.replace('{noise}', '')}}}}}, "
        f"{{name: noisy, scenario: {{paths: {paths.replace('{noise}', noisy)}}}}}]"
    )
    cfg = compose(
        "train",
        [
            "experiment=learnability",
            "runs=3",
            f"learnability.conditions={conditions}",
            "learnability.bulk_size_bytes=200000",
            "learnability.learners=[]",
            "learnability.deployed=[]",
            "learnability.rules=[minrtt,blest]",
            "learnability.fixed_split_shares=[0.0,0.5,1.0]",
            "learnability.oracle.thresholds=[null]",
            "learnability.oracle.reinject=[false,true]",
            "learnability.oracle.resample=true",
        ],
    )
    _, sec, conds, agents = lb.settings(cfg)
    assert sec["oracle"]["resample"] is True
    res = lb.run_learnability(sec, conds, agents, {"name": "local", "workers": 1}, progress=False)
    assert res["schedulers"][-1] == TRACE_ORACLE
    # the reach of the best known: the causal references' counts, the trace-aware oracle's too
    assert set(res["within_best_known"]) == {"crossfit_policy", TRACE_ORACLE}
    assert res["within_best_known"][TRACE_ORACLE]["count"] == sum(
        r["schedulers"][TRACE_ORACLE]["ratio_best_known"] <= 1.05 for r in res["results"].values()
    )
    quiet = res["results"]["quiet"]["schedulers"]
    # no delay or loss draws: the rerun is the very run, so nothing separates the two oracles
    assert (
        quiet[TRACE_ORACLE]["download_time_s"]["values"]
        == quiet["oracle"]["download_time_s"]["values"]
    )
    noisy_res = res["results"]["noisy"]["schedulers"]
    oracle, trace = noisy_res["oracle"], noisy_res[TRACE_ORACLE]
    assert trace["chosen"] == oracle["chosen"]
    # every candidate the oracle may choose has the agent config its job ran
    assert len(lb.candidate_agents(sec, agents)) == oracle["candidates"] == 3 + 3 + 2
    assert trace["download_time_s"]["values"] != oracle["download_time_s"]["values"]
    # each value is the oracle's choice run on the seed's pinned traces with the offset seed
    c = next(c for c in conds if c["name"] == "noisy")
    k, pick = 1, oracle["chosen"][1]
    if pick in sec["rules"]:
        agent = instantiate_agent(pick, agents[pick])
    else:
        fields = dict(kv.split("=") for kv in pick.split(","))
        agent = instantiate_agent(
            "split_threshold",
            {
                **agents["split_threshold"],
                "share": float(fields["share"]),
                "threshold": None,
                "reinject": fields["reinject"] == "on",
            },
        )
    seed = res["settings"]["seeds"][k]
    again = run_episode(
        pin_trace_draws(c["scenario"], seed), c["app"], agent, seed=seed + RESAMPLE_SEED_OFFSET
    ).metrics["download_time_s"]
    assert trace["download_time_s"]["values"][k] == again


def test_the_oracles_resample_key_is_checked():
    from falcon.experiments.oracle import check_oracle

    with pytest.raises(ConfigError, match=r"x.resample: expected true or false, got 'yes'"):
        check_oracle({"thresholds": [None], "reinject": [True], "resample": "yes"}, "x")
    assert "resample" not in check_oracle({"thresholds": [None], "reinject": [True]}, "x")


def test_sequential_runs_a_deployed_schedulers_seeds_on_one_instance(monkeypatch):
    """learnability.sequential: one scheduler for all seeds of a condition, and
    its own run_episode (a learner keeps what it learned); a fresh one per seed
    otherwise. A scheduler without memory gives the same times either way."""
    import falcon.jobs
    from baselines.rule_based.minrtt import MinRTT

    made, episodes = [], []

    class Remembering(MinRTT):
        def run_episode(self, scenario, app, seed):
            episodes.append((id(self), seed))
            return envs.run_episode(scenario, app, self, seed).metrics

    def instantiate(name, cfg, **objects):
        made.append(name)
        return Remembering()

    monkeypatch.setattr(falcon.jobs, "instantiate_agent", instantiate)
    base = dict(
        condition=0,
        condition_name="x",
        scheduler="remembering",
        kind="deployed",
        scenario={"name": "x", "paths": [{"link": "4g"}, {"link": "5g"}]},
        app={"kind": "bulk", "size_bytes": 100_000},
        agent={"_target_": "unused"},
        seeds=(3, 4, 5),
    )
    seq = lb.run_unit(lb.Unit(**base, sequential=True))["runs"]
    assert made == ["remembering"] and [s for _, s in episodes] == [3, 4, 5]
    assert len({i for i, _ in episodes}) == 1  # one instance ran all three
    fresh = lb.run_unit(lb.Unit(**base))["runs"]
    assert len(made) == 4 and len(episodes) == 3  # a fresh scheduler per seed, envs.run_episode
    assert [r["download_time_s"] for r in seq] == [r["download_time_s"] for r in fresh]


def _random_dqn_off(folder, seed: int):
    agent = make_scheduler("dqn_off", seed=seed)
    agent.build(2)
    agent.save(folder)


def test_a_deployed_model_named_per_condition_is_each_conditions_own(compose, tmp_path):
    """``{condition}`` in a deployed scheduler's model: each condition deploys the
    model of its name (models trained per condition on another list)."""
    from falcon.experiments.condition_lists import list_conditions
    from falcon.experiments.learnability_settings import CONDITION_FIELD

    listed = [c["name"] for c in list_conditions("dev", "test")]
    for seed, name in enumerate(listed):  # every listed condition's model is checked
        _random_dqn_off(tmp_path / name, seed)
    names = listed[:2]
    template = f"{tmp_path}/{CONDITION_FIELD}"
    overrides = [
        "runs=2",
        "learnability.max_conditions=2",
        "learnability.bulk_size_bytes=200000",
        "learnability.rules=[minrtt]",
        "learnability.learners=[]",
        "learnability.deployed=[dqn_off]",
        "learnability.fixed_split_shares=[0.0,1.0]",
        "learnability.oracle=false",
    ]
    cfg = _deploy(
        compose, *overrides, f"learnability.agent_overrides={{dqn_off: {{model: '{template}'}}}}"
    )
    _, sec, conds, agents = lb.settings(cfg)
    units = [u for u in lb.make_units(conds, agents, sec) if u.kind == "deployed"]
    assert [u.agent["model"] for u in units] == [f"{tmp_path}/{n}" for n in names]
    res = lb.run_learnability(sec, conds, agents, {"name": "local", "workers": 1}, progress=False)
    for c in conds:  # each condition's times are those of its own model
        own = [
            envs.run_episode(
                c["scenario"],
                c["app"],
                make_scheduler("dqn_off", model=str(tmp_path / c["name"])),
                s,
            ).metrics["download_time_s"]
            for s in sec_seeds(sec)
        ]
        assert (
            res["results"][c["name"]]["schedulers"]["dqn_off"]["download_time_s"]["values"] == own
        )
    # a condition without its model fails before anything runs, naming the file
    (tmp_path / names[1] / "model.h5").unlink()
    with pytest.raises(ConfigError, match=f"{tmp_path}/{names[1]}") as e:
        lb.settings(cfg)
    assert "\n" not in str(e.value)
    # the field is for deployed schedulers only
    with pytest.raises(ConfigError, match=r"\{condition\} is for deployed schedulers"):
        lb.settings(
            _deploy(
                compose,
                *overrides[:-3],
                "learnability.deployed=[]",
                "learnability.learners=[dqn_off]",
                f"learnability.agent_overrides={{dqn_off: {{model: '{template}'}}}}",
            )
        )


def sec_seeds(sec) -> list[int]:
    return list(range(sec["seed"], sec["seed"] + sec["runs"]))


def _deploy(compose, *extra):
    return compose(
        "train", ["experiment=learnability", "progress=false", "runtime.workers=1", *extra]
    )
