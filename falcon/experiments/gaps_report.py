"""Report of the GAPS experiment (:mod:`falcon.experiments.gaps`): the
paper's claims beside ours, the text table and the plots."""

from __future__ import annotations

import math
from collections.abc import Mapping

from baselines.palette import color, colors
from falcon import report, seeds
from falcon.experiments import common

#: THE PAPER'S numbers (GAPS: Liao et al., IFIP Networking 2020), not ours: every value of the "gaps"
#: figure's claims in data/seed_claims.yaml (their one home), shown beside
#: ours in gaps.txt and gaps.json
PAPER: dict = {
    "source": seeds.source("gaps"),
    **{k: v for c in seeds.figure("gaps")["claims"] for k, v in c["values"].items()},
}


def _vs(a: float, b: float) -> float:
    return (a - b) / b * 100.0 if math.isfinite(a) and math.isfinite(b) and b != 0 else math.nan


def claims(summary: Mapping) -> list[dict]:
    """One row per claim: ``{claim, paper, ours: {scheduler: value}}``; our
    value of every scheduler (the paper's is for GAPS). Relative changes
    are vs STMS (NaN without an STMS run); deviations: the default
    setting's median, and the range of the medians over every two-path
    setting."""
    d = summary.get("default", {})
    names = list(d)

    def rel(setting: str, metric: str) -> dict:
        per = summary.get(setting, {})
        ref = per.get("stms", {}).get(metric, math.nan)
        return {n: _vs(m[metric], ref) for n, m in per.items()}

    dev_range = {}
    for n in names:
        vals = [
            per[n]["gap_deviation"]
            for per in summary.values()
            if n in per
            and per[n].get("gap_deviation_unit") == "%"
            and math.isfinite(per[n]["gap_deviation"])
        ]
        dev_range[n] = [float(min(vals)), float(max(vals))] if vals else None
    return [
        {
            "claim": "p99 OQS, default setting [KB]",
            "paper": f"< {PAPER['gaps_p99_oqs_kb_below']:g}",
            "ours": {n: d[n]["oqs_p99_kb"] for n in names},
        },
        {
            "claim": "p99 OQS after the warm-up, default setting [KB]",
            "paper": "-",
            "ours": {n: d[n]["oqs_p99_kb_steady"] for n in names},
        },
        {
            "claim": "mean OQS vs STMS's mean [%]",
            "paper": f"{PAPER['gaps_oqs_vs_stms_pct']:+g}",
            "ours": rel("default", "oqs_mean_kb"),
        },
        {"claim": "p99 OQS vs STMS's p99 [%]", "paper": "-", "ours": rel("default", "oqs_p99_kb")},
        {
            "claim": "GAP deviation, default setting [%]",
            "paper": "GAPS {:g}-{:g}; baselines {:g}-{:g}".format(
                *PAPER["gaps_gap_deviation_pct"], *PAPER["baselines_gap_deviation_pct"]
            ),
            "ours": {
                n: d[n]["gap_deviation"] if d[n].get("gap_deviation_unit") == "%" else math.nan
                for n in names
            },
        },
        {
            "claim": "GAP deviation, range over two-path settings [%]",
            "paper": "(as above)",
            "ours": {n: (f"{r[0]:.1f}-{r[1]:.1f}" if r else "-") for n, r in dev_range.items()},
        },
        {
            "claim": "goodput vs STMS [%]",
            "paper": f"{PAPER['gaps_goodput_vs_stms_pct']:+g}",
            "ours": rel("default", "goodput_mbps"),
        },
        {
            "claim": "application (reorder) delay vs STMS [%]",
            "paper": f"{PAPER['gaps_app_delay_vs_stms_pct']:+g}",
            "ours": rel("default", "app_delay_ms"),
        },
        {
            "claim": "FCT short flow vs STMS [%]",
            "paper": f"{PAPER['gaps_fct_short_vs_stms_pct']:+g}",
            "ours": rel("fct_short", "fct_s"),
        },
        {
            "claim": "FCT long flow vs STMS [%]",
            "paper": f"{PAPER['gaps_fct_long_vs_stms_pct']:+g}",
            "ours": rel("fct_long", "fct_s"),
        },
    ]


def table(results: Mapping) -> str:
    summary = results["summary"]
    rows = []
    for sname, per in summary.items():
        for name, m in per.items():
            dev = m["gap_deviation"]
            dev_s = (
                "-"
                if not math.isfinite(dev)
                else f"{dev:.1f}{'' if m['gap_deviation_unit'] == '%' else ' pkt'}"
            )
            rows.append(
                [
                    sname,
                    name,
                    m["oqs_mean_kb"],
                    m["oqs_p99_kb"],
                    m["oqs_mean_kb_steady"],
                    m["oqs_p99_kb_steady"],
                    m["true_gap_packets"],
                    m["mean_gap_packets"],
                    dev_s,
                    m["app_delay_ms"],
                    m["goodput_mbps"],
                    m["fct_s"],
                    f"{int(m['timed_out'])}/{m['runs']}",
                ]
            )
    names = list(summary.get("default", {}))
    claim_rows = [
        [c["claim"], c["paper"], *[_cell(c["ours"].get(n)) for n in names]]
        for c in results["claims"]
    ]
    sizes = {s["name"]: s for s in results["setting_list"]}
    notes = [
        f"seeds {results['seeds']}; medians over seeds (per-seed values in gaps.json); KB = 1000 bytes",
        f"steady: OQS samples from {results['settings']['warmup_s']:g} s after the first arrival on "
        "(without the slow-start exit's loss burst)",
        "TRUE GAP: static GAP [packets of payload] with the lowest mean OQS (FixedGap sweep, per seed); "
        "GAP deviation = |mean realised GAP - TRUE GAP| / TRUE GAP [%], median over the seeds whose TRUE GAP "
        "is > 0 ('pkt': every TRUE GAP 0, absolute packets); "
        "'-': not computed (n > 2 subflows, FCT settings)",
        "app delay = mean reorder (head-of-line) delay per byte: time integral of the OQS / bytes "
        "delivered (Little's law), the delay the reorder queue adds on top of the network delay",
    ]
    long_ = sizes.get("fct_long")
    if long_ is not None and long_.get("scale", 1.0) != 1.0:
        notes.append(
            f"FCT long flow SCALED DOWN: {long_['size_bytes'] / 1e6:g} MB instead of "
            f"{long_['nominal_bytes'] / 1e6:g} MB (fct.long_scale = {long_['scale']:g})"
        )
    elif long_ is not None:
        notes.append(
            f"FCT long flow: {long_['size_bytes'] / 1e6:g} MB; short: "
            f"{sizes['fct_short']['size_bytes'] / 1e6:g} MB"
        )
    return (
        "GAPS experiment: out-of-order queue (OQS) and GAP schedulers per setting\n"
        + common.format_table(
            [
                "setting",
                "scheduler",
                "OQS mean KB",
                "OQS p99 KB",
                "steady mean KB",
                "steady p99 KB",
                "TRUE GAP",
                "mean GAP",
                "GAP dev %",
                "app delay ms",
                "goodput Mb/s",
                "FCT s",
                "timeouts",
            ],
            rows,
        )
        + "\nthe paper's claims (for GAPS) beside ours (default setting unless stated; vs STMS = "
        "(ours - STMS) / STMS)\n"
        + common.format_table(["claim", "paper (GAPS)", *names], claim_rows)
        + "\n"
        + "\n".join(f"* {n}" for n in notes)
        + "\n"
    )


def _cell(v):
    if v is None:
        return "-"
    return v


# ---------------------------------------------------------------- plots
def plot(results: Mapping, path) -> None:
    """``gaps.png``: OQS CDF of the default setting; beside it
    ``gaps_sweeps.png`` (mean and p99 OQS per sweep) and ``gaps_bars.png``
    (default vs poor network, FCT)."""
    from pathlib import Path

    from baselines.mpl import use_agg

    use_agg()
    import matplotlib.pyplot as plt

    path = Path(path)
    cdf = results["oqs_cdf"]
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for name, xs in cdf["oqs_kb"].items():
        ax.plot(xs, cdf["quantiles"], label=name, color=color(name))
    ax.axvline(
        results["paper"]["gaps_p99_oqs_kb_below"],
        color="grey",
        linestyle="--",
        linewidth=1,
        label="paper: GAPS p99 < 100 KB",
    )
    ax.set_xlabel("OQS [KB]")
    ax.set_ylabel("CDF")
    ax.set_title("Out-of-order queue, default setting (all seeds)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    report.save_figure(fig, path)
    _plot_sweeps(results, path.with_name(path.stem + "_sweeps.png"), plt)
    _plot_bars(results, path.with_name(path.stem + "_bars.png"), plt)


def _plot_sweeps(results: Mapping, path, plt) -> None:
    summary = results["summary"]
    groups: dict[str, list] = {}
    for s in results["setting_list"]:
        if s["group"] not in ("default", "poor", "fct"):
            groups.setdefault(s["group"], []).append(s)
    if not groups:
        return
    fig, axes = plt.subplots(2, len(groups), figsize=(3.2 * len(groups), 5.6), squeeze=False)
    for col, (group, sts) in enumerate(groups.items()):
        cat = any(isinstance(s["x"], str) for s in sts)
        xs = list(range(len(sts))) if cat else [s["x"] for s in sts]
        for row, metric in enumerate(("oqs_mean_kb", "oqs_p99_kb")):
            ax = axes[row][col]
            for name in summary[sts[0]["name"]]:
                ax.plot(
                    xs,
                    [summary[s["name"]][name][metric] for s in sts],
                    marker="o",
                    label=name,
                    color=color(name),
                )
            if cat:
                ax.set_xticks(xs)
                ax.set_xticklabels([str(s["x"]) for s in sts])
            elif group == "loss":
                ax.set_xscale("log")
            ax.set_xlabel(group)
            ax.set_ylabel("OQS mean [KB]" if row == 0 else "OQS p99 [KB]")
            ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.suptitle("GAPS sweeps: OQS per setting (median over seeds)")
    report.save_figure(fig, path)


def _plot_bars(results: Mapping, path, plt) -> None:
    summary = results["summary"]
    panels = [
        (s, m, lab)
        for s, m, lab in (
            ("default", "oqs_mean_kb", "OQS mean [KB]"),
            ("default", "oqs_p99_kb", "OQS p99 [KB]"),
            ("poor", "oqs_mean_kb", "poor: OQS mean [KB]"),
            ("poor", "oqs_p99_kb", "poor: OQS p99 [KB]"),
            ("fct_short", "fct_s", "FCT short [s]"),
            ("fct_long", "fct_s", "FCT long [s]"),
        )
        if s in summary
    ]
    if not panels:
        return
    fig, axes = plt.subplots(1, len(panels), figsize=(2.6 * len(panels), 3.6), squeeze=False)
    for ax, (s, metric, label) in zip(axes[0], panels):
        names = list(summary[s])
        vals = [summary[s][n][metric] for n in names]
        ax.bar(
            range(len(names)), [v if math.isfinite(v) else 0.0 for v in vals], color=colors(names)
        )
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels(names, rotation=60, fontsize=7)
        ax.set_title(label, fontsize=9)
        ax.grid(alpha=0.3, axis="y")
    report.save_figure(fig, path)


__all__ = ["PAPER", "claims", "table", "plot"]
