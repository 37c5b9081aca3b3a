"""Tables and plots of experiment=hop (:mod:`falcon.experiments.hop`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

from baselines.palette import color
from falcon import report, seeds
from falcon.experiments.common import format_table

#: the paper's headline claims (Chiariotti et al., IEEE/ACM ToN 2021), from data/seed_claims.yaml
PAPER = seeds.claim_texts("hop")


def _geo(ratios: Mapping) -> float:
    v = [x for x in ratios.values() if isinstance(x, float) and math.isfinite(x) and x > 0]
    return math.exp(sum(math.log(x) for x in v) / len(v)) if v else math.nan


def claims(summary: Mapping, sec: Mapping) -> dict:
    """Our numbers beside each claim."""
    out = {}
    for case in ("balanced", "unbalanced"):
        if case in summary and "hop" in summary[case]["schedulers"]:
            p = summary[case]["schedulers"]["hop"]
            out[case] = {
                "paper": PAPER[case],
                "max_block_kb": p["max_block_kb"],
                "rate_mbps": p["max_block_rate_mbps"],
                "fraction_of_bound": p["fraction_of_bound"],
                "bound_mbps": summary[case]["bound_empirical"]["goodput_mbps"],
            }
    hu = summary.get("highly_unbalanced")
    if hu:
        out["highly_unbalanced"] = {
            "paper": PAPER["highly_unbalanced"],
            **{f"geomean {k}": _geo(v) for k, v in hu["failure_ratios"].items()},
        }
    bal = summary.get("balanced")
    leaps = [n for n, k in sec["kinds"].items() if k == "leap"]
    if bal and leaps:
        p = bal["schedulers"][leaps[0]]
        out["leap"] = {
            "paper": PAPER["leap"],
            "mean_block_kb": p["mean_block_kb"],
            "failure_probability": p["sizes"]["leap"]["failure_probability"],
        }
    return out


def table(res: Mapping) -> str:
    sec = res["settings"]
    lines = [
        f"HOP (Chiariotti et al., IEEE/ACM ToN 2021): {sec['runs']} run(s) x {sec['duration_s']:g} s, p_thr {sec['block']['p_thr']}, "
        f"deadline {sec['block']['deadline_s'] * 1e3:g} ms, period {sec['block']['period_s'] * 1e3:g} ms; "
        f"failure = mean over runs (+- 95 % t-interval)\n"
    ]
    for case, cs in res["summary"].items():
        label = f" [{sec['traces'].get('label', 'SUBSTITUTE traces')}]" if case == "traces" else ""
        eb, gb = cs["bound_empirical"], cs["bound_gaussian"]
        lines.append(
            f"== {case}{label}: no-queueing bound {eb['block_bytes'] / 1e3:.1f} kB = "
            f"{eb['goodput_mbps']:.1f} Mb/s (empirical); Gaussian {gb['block_bytes'] / 1e3:.1f} kB = "
            f"{gb['goodput_mbps']:.1f} Mb/s"
        )
        rows = []
        for name, p in cs["schedulers"].items():
            for s, c in p["sizes"].items():
                rows.append(
                    [
                        name,
                        s,
                        c["failure_probability"],
                        c["failure_ci95"],
                        c["goodput_mbps"],
                        c["redundancy"],
                        c["mean_block_bytes"] / 1e3,
                        c["runs"],
                    ]
                )
        lines.append(
            format_table(
                ["scheduler", "kB", "failure", "ci95", "goodput", "redund", "block_kB", "runs"],
                rows,
            )
        )
        rows = [
            [
                n,
                p["max_block_kb"],
                p["max_block_rate_mbps"],
                p["max_block_goodput_mbps"],
                p["fraction_of_bound"],
            ]
            for n, p in cs["schedulers"].items()
            if "leap" not in p["sizes"]
        ]
        lines.append(
            "max block meeting p_thr:\n"
            + format_table(["scheduler", "max_kB", "rate_Mbps", "goodput", "of_bound"], rows)
        )
        for k, v in cs["failure_ratios"].items():
            lines.append(
                f"failure ratio {k}: " + ", ".join(f"{s} kB {x:.2f}" for s, x in v.items())
            )
        for n, p in cs["schedulers"].items():
            if "estimator" in p:
                e = p["estimator"]
                lines.append(
                    f"estimator {n}: below 2 % quantile per path "
                    + ", ".join(f"{x:.3f}" for x in e["below_q2"])
                    + "; mean forecast / realised kB "
                    + ", ".join(
                        f"{a / 1e3:.1f}/{b / 1e3:.1f}"
                        for a, b in zip(e["mean_forecast"], e["mean_realised"])
                    )
                )
            if "mean_block_kb" in p:
                lines.append(
                    f"LEAP {n}: mean block {p['mean_block_kb']:.1f} kB, "
                    f"failure {p['sizes']['leap']['failure_probability']:.3f}"
                )
        lines.append("")
    lines.append("the paper's claims beside ours:")
    for k, c in res["claims"].items():
        ours = ", ".join(
            f"{a} {b:.3f}" if isinstance(b, float) else f"{a} {b}"
            for a, b in c.items()
            if a != "paper"
        )
        lines.append(f"  {k}: paper: {c['paper']} | ours: {ours}")
    return "\n".join(lines) + "\n"


def plot(res: Mapping, path: Path) -> Path:
    from baselines.mpl import use_agg

    use_agg()
    import matplotlib.pyplot as plt

    summary = res["summary"]
    n = len(summary)
    fig, axes = plt.subplots(1, n, figsize=(4.2 * n, 3.8), squeeze=False)
    target = 1.0 - res["settings"]["block"]["p_thr"]
    for ax, (case, cs) in zip(axes[0], summary.items()):
        for name, p in cs["schedulers"].items():
            pts = [
                (float(s), c["failure_probability"]) for s, c in p["sizes"].items() if s != "leap"
            ]
            pts = [(x, max(y, 1e-4)) for x, y in pts if math.isfinite(y)]
            if pts:
                ax.plot(*zip(*pts), marker="o", label=name, color=color(name))
        ax.axhline(target, color="grey", linestyle="--", linewidth=1)
        ax.set_yscale("log")
        ax.set_title(case)
        ax.set_xlabel("block size [kB]")
        ax.set_ylabel("failure probability")
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
    report.save_figure(fig, path)
    # LEAP histogram
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for case, cs in summary.items():
        for name, p in cs["schedulers"].items():
            if p.get("block_sizes_kb"):
                ax.hist(p["block_sizes_kb"], bins=30, alpha=0.5, label=f"{name} {case}")
    ax.set_xlabel("LEAP block size [kB]")
    ax.set_ylabel("blocks")
    ax.legend(fontsize=8)
    report.save_figure(fig, path.with_name(path.stem + "_leap.png"))
    # estimator: forecast vs realised over time
    fig, ax = plt.subplots(figsize=(8, 4.0))
    s = res.get("estimator_series")
    if s:
        for i in range(len(s["realised_kb"][0]) if s["realised_kb"] else 0):
            ax.plot(
                s["t_s"],
                [r[i] for r in s["realised_kb"]],
                linewidth=0.8,
                label=f"realised path {i}",
            )
            ax.plot(
                s["t_s"],
                [r[i] for r in s["forecast_mean_kb"]],
                linewidth=0.8,
                label=f"forecast mean path {i}",
            )
            ax.plot(
                s["t_s"],
                [r[i] for r in s["forecast_q2_kb"]],
                linewidth=0.6,
                linestyle=":",
                label=f"forecast 2 % quantile path {i}",
            )
    ax.set_xlabel("block release [s]")
    ax.set_ylabel("window capacity [kB]")
    ax.legend(fontsize=7)
    report.save_figure(fig, path.with_name(path.stem + "_estimator.png"))
    return path


__all__ = ["PAPER", "claims", "table", "plot"]
