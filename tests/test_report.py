"""Summary statistics, the table, plots and the summary JSON (pure functions)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from falcon.report import describe, flat_metrics, plot_metric, summarize, summary_table, write_json


def _records():
    recs = []
    for agent, base in (("minrtt", 1.0), ("blest", 2.0)):
        for seed in (2, 0, 1):  # out of order on purpose
            recs.append(
                {
                    "scenario": "s1",
                    "app": "bulk",
                    "agent": agent,
                    "seed": seed,
                    "metrics": {"download_time_s": base + seed, "goodput_mbps": 10.0 * (seed + 1)},
                }
            )
    return recs


def test_describe():
    s = describe([4.0, 1.0, 3.0, 2.0])
    assert s == {
        "n": 4,
        "median": 2.5,
        "p25": 1.75,
        "p75": 3.25,
        "mean": 2.5,
        "values": [4.0, 1.0, 3.0, 2.0],
    }


def test_describe_non_finite_values():
    s = describe([1.0, math.nan, 3.0, math.inf])
    assert s["n"] == 4 and s["values"] == [1.0, None, 3.0, None]
    assert s["median"] == 2.0 and s["mean"] == 2.0
    empty = describe([math.nan])
    assert empty["median"] is None and empty["values"] == [None]


def test_unfinished_runs_can_rank_after_every_finished_one():
    nan = float("nan")
    finished = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]
    dropped = describe([*finished, nan, nan, nan], unfinished="drop")
    last = describe([*finished, nan, nan, nan], unfinished="last")
    assert dropped["median"] == 4.0 and dropped["n"] == last["n"] == 10
    # over all 10 runs: positions 4.5 (median) and 2.25 (p25) are finished runs, 6.75 is not
    assert last["median"] == pytest.approx(5.5) and last["p25"] == pytest.approx(3.25)
    assert last["p75"] is None and last["mean"] is None
    assert last["values"] == dropped["values"]
    assert describe(finished, unfinished="last") == describe(finished)
    with pytest.raises(ValueError, match="unfinished"):
        describe(finished, unfinished="skip")


def test_summarize_structure_and_seed_order():
    summary = summarize(_records(), seeds=[0, 1, 2], job="evaluate")
    assert summary["schedulers"] == ["minrtt", "blest"]
    assert summary["scenarios"] == ["s1"] and summary["apps"] == ["bulk"]
    dt = summary["results"]["s1"]["bulk"]["blest"]["download_time_s"]
    assert dt["values"] == [2.0, 3.0, 4.0]  # seed order
    assert (dt["n"], dt["median"], dt["p25"], dt["p75"], dt["mean"]) == (3, 3.0, 2.5, 3.5, 3.0)


def test_table_lists_schedulers_and_skips_missing_metrics():
    table = summary_table(
        summarize(_records(), seeds=[0, 1, 2]),
        ["download_time_s", "oqs_mean_bytes", "goodput_mbps"],
    )
    lines = table.splitlines()
    assert lines[0].startswith("scenario s1 | app bulk | 3 runs")
    assert "download_time_s median [p25, p75]" in lines[1] and "goodput_mbps (median)" in lines[1]
    assert "oqs_mean_bytes" not in table
    assert lines[3].split()[:4] == ["minrtt", "2", "[1.5,", "2.5]"]
    assert lines[4].split()[0] == "blest"


def test_json_roundtrip_and_flat_metrics(tmp_path):
    recs = _records()
    recs[0]["metrics"]["download_time_s"] = math.inf  # a timed-out run must not break the JSON
    summary = summarize(recs, seeds=[0, 1, 2])
    write_json(summary, tmp_path / "summary.json")
    assert json.loads((tmp_path / "summary.json").read_text()) == summary
    flat = flat_metrics(summary)
    assert flat["blest/download_time_s_median"] == 3.0
    assert set(flat) >= {
        "minrtt/goodput_mbps_p25",
        "minrtt/goodput_mbps_p75",
        "minrtt/goodput_mbps_mean",
    }
    two = summarize(recs + [{**recs[0], "scenario": "s2"}], seeds=[0, 1, 2])
    assert "s2/bulk/minrtt/goodput_mbps_median" in flat_metrics(two)
    assert "s2/bulk/minrtt/download_time_s_median" not in flat_metrics(two)  # its only value is inf


def test_plot_writes_one_png_per_group(tmp_path):
    paths = plot_metric(summarize(_records(), seeds=[0, 1, 2]), "download_time_s", tmp_path)
    assert [p.name for p in paths] == ["download_time_s__s1__bulk.png"]
    assert paths[0].read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("metric", ["no_such_metric"])
def test_plot_of_missing_metric_writes_nothing(tmp_path, metric):
    assert plot_metric(summarize(_records(), seeds=[0, 1, 2]), metric, tmp_path) == []


def test_active_objects_counts_requested_and_unfinished():
    import numpy as np

    from falcon.report import active_objects

    grid = np.array([0.0, 0.5, 1.0, 1.5, 2.5])
    # object 0: [0, 2), object 1: [1, 1.2), object 2 never completed (NaN)
    got = active_objects([0.0, 1.0, 0.2], [2.0, 0.2, math.nan], grid)
    assert got.tolist() == [1, 1, 2, 1, 0]


def test_multi_object_apps_get_pooled_stats_and_the_objects_plot(tmp_path):
    from falcon.jobs import Job, run_episode_job
    from falcon.report import plot_objects, summarize

    app = {
        "kind": "streams",
        "streams": [
            {"release_s": 0.0, "size_bytes": 20_000},
            {"release_s": 0.1, "size_bytes": 5_000},
        ],
    }
    scenario = {"paths": [{"link": "4g"}, {"link": "wlan"}]}
    records = []
    for seed in (0, 1):
        job = Job(
            seed,
            "s",
            "a",
            "minrtt",
            seed,
            scenario,
            app,
            {"_target_": "baselines.rule_based.minrtt.MinRTT"},
        )
        records.append(
            {"scenario": "s", "app": "a", "agent": "minrtt", "seed": seed, **run_episode_job(job)}
        )
    assert records[0]["objects"]["release"] == [0.0, 0.1]
    summary = summarize(records, seeds=[0, 1])
    pooled = summary["results"]["s"]["a"]["minrtt"]["object_completion_s"]
    assert pooled["n"] == 4 and all(v > 0 for v in pooled["values"])
    [png] = plot_objects(records, tmp_path)
    assert png.stat().st_size > 10_000


def test_every_scheduler_is_set_against_the_best_other_with_a_bootstrap_interval():
    from falcon.compare import compare_to_best

    rng = np.random.default_rng(4)
    base = rng.gamma(20.0, 0.015, 40)
    vals = {
        "a": list(base),
        "slower": list(base * 1.10),
        "noisy": list(base * rng.lognormal(0.0, 0.3, 40)),
    }
    cmp = compare_to_best(vals)
    assert cmp["slower"]["best_other"] == "a"
    assert cmp["slower"]["paired"] == pytest.approx(1.10)
    lo, hi = cmp["slower"]["paired_ci"]
    assert 1.0 < lo <= 1.10 <= hi  # a fixed 10 % is told apart from 1 by the paired interval
    lo, hi = cmp["noisy"]["ratio_ci"]
    assert lo < cmp["noisy"]["ratio"] < hi and hi - lo > 0.05
    assert compare_to_best(vals) == cmp  # seeded
    assert compare_to_best({"a": [1.0, 2.0]}) == {}  # one scheduler: nothing to compare
    assert compare_to_best({"a": [1.0, None, 2.0], "b": [1.0, 1.0, None]}) == {}  # < 3 common seeds
    summary = summarize(_records(), seeds=[0, 1, 2])
    assert set(summary["comparison"]["s1"]["bulk"]) == {"minrtt", "blest"}
    table = summary_table(summary, ["download_time_s"])
    assert "median / best other's [95 % CI]" in table and " vs blest" in table


def _runs(n: int, agents=("minrtt", "blest")) -> list[dict]:
    return [
        {
            "scenario": "s1",
            "app": "bulk",
            "agent": agent,
            "seed": seed,
            "metrics": {"download_time_s": 1.0 + k + 0.1 * seed},
        }
        for k, agent in enumerate(agents)
        for seed in range(n)
    ]


@pytest.mark.parametrize("runs, warned", [(3, True), (4, True), (5, False), (8, False)])
def test_intervals_over_fewer_than_five_runs_carry_a_one_line_warning(runs, warned):
    table = summary_table(summarize(_runs(runs), seeds=list(range(runs))), ["download_time_s"])
    assert "median / best other's [95 % CI]" in table
    notes = [line for line in table.splitlines() if line.startswith("warning:")]
    if warned:
        assert len(notes) == 1 and f"rest on {runs} runs" in notes[0], table
    else:
        assert notes == [], table


def test_the_fidelity_table_warns_of_intervals_over_few_runs():
    from pathlib import Path

    from falcon.deploy.fidelity_table import render

    result = json.loads((Path(__file__).parents[1] / "docs/fidelity/fidelity.json").read_text())
    assert "warning:" not in render(result)  # 10 runs and more
    result["cells"][0]["real_verified"] = 4
    [line] = [x for x in render(result).splitlines() if x.startswith("warning:")]
    assert "rest on 4 runs" in line


@pytest.mark.parametrize("runs", [1, 2])
def test_a_missing_comparison_column_says_why(runs):
    table = summary_table(summarize(_runs(runs), seeds=list(range(runs))), ["download_time_s"])
    assert "best other" not in table.splitlines()[1]  # no column
    [note] = [line for line in table.splitlines() if line.startswith("no comparison column")]
    assert f"{runs} runs" in note and "runs>=3" in note


def test_a_comparison_lost_to_timeouts_says_so():
    recs = _runs(4)
    for r in recs[:2]:
        r["metrics"]["download_time_s"] = math.inf  # two timed-out runs leave 2 of 4 usable
    table = summary_table(summarize(recs, seeds=[0, 1, 2, 3]), ["download_time_s"])
    assert "2 of 4 runs with a finite download_time_s for all" in table


def test_one_scheduler_has_no_comparison_and_no_note():
    table = summary_table(summarize(_runs(2, ("minrtt",)), seeds=[0, 1]), ["download_time_s"])
    assert len(table.splitlines()) == 4


def _saved_figures(monkeypatch) -> list:
    """The figures falcon.report saves from now on (each still written as a PNG)."""
    import falcon.report as report

    figs, save = [], report.save_figure
    monkeypatch.setattr(
        report, "save_figure", lambda fig, path, **kw: (figs.append(fig), save(fig, path, **kw))[1]
    )
    return figs


def test_the_cdf_shows_every_scheduler_from_0_to_1_and_identical_curves_stay_apart(
    tmp_path, monkeypatch
):
    recs = _runs(3, ("minrtt", "rr", "ecf", "stuck"))
    for r in recs:
        if r["agent"] in ("rr", "ecf"):  # identical to minrtt's
            r["metrics"]["download_time_s"] = 1.0 + 0.1 * r["seed"]
        if r["agent"] == "stuck":  # every run timed out
            r["metrics"]["download_time_s"] = math.inf
    figs = _saved_figures(monkeypatch)
    [png] = plot_metric(summarize(recs, seeds=[0, 1, 2]), "download_time_s", tmp_path)
    assert png.is_file() and len(figs) == 1
    ax = figs[0].axes[0]
    assert ax.get_ylim() == (0.0, 1.0)
    lines = ax.get_lines()
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["minrtt (n=3)", "rr (n=3)", "ecf (n=3)", "stuck (n=0)"]
    for line in lines[:3]:
        assert list(line.get_ydata()) == pytest.approx([0.0, 1 / 3, 2 / 3, 1.0])
    assert [list(line.get_xdata()) for line in lines[:3]] == [[1.0, 1.0, 1.1, 1.2]] * 3
    styles = [(line.get_linestyle(), line.get_marker()) for line in lines]
    assert len(set(styles)) == len(styles) and all(m not in ("", "None") for _, m in styles)
    widths = [line.get_linewidth() for line in lines]
    assert widths == sorted(widths, reverse=True) and widths[0] > widths[-1]


def test_the_objects_cdf_starts_at_0_with_a_style_per_scheduler(tmp_path, monkeypatch):
    from falcon.report import plot_objects

    objects = {"release": [0.0, 0.1], "completion": [0.5, 0.7]}
    recs = [
        {"scenario": "s", "app": "a", "agent": ag, "seed": 0, "metrics": {}, "objects": objects}
        for ag in ("minrtt", "rr")
    ]
    figs = _saved_figures(monkeypatch)
    plot_objects(recs, tmp_path)
    ax_cdf, ax_act = figs[0].axes
    assert ax_cdf.get_ylim() == (0.0, 1.0)
    for ax in (ax_cdf, ax_act):
        styles = {(line.get_linestyle(), line.get_marker()) for line in ax.get_lines()}
        assert len(styles) == 2
    assert [list(line.get_ydata()) for line in ax_cdf.get_lines()] == [[0.0, 0.5, 1.0]] * 2
