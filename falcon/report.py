"""Summary statistics, the comparison table, plots and the summary JSON.

Pure functions on per-episode records ``{"scenario", "app", "agent", "seed",
"metrics": {name: float}}``. The summary (docs/reference/formats/summary_json.md) nests
``results[scenario][app][scheduler][metric] = {n, median, p25, p75, mean,
values}``; ``values`` are the per-seed values in seed order, with ``null`` for
a non-finite value (the statistics are taken over the finite ones).
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from baselines.palette import color, colors
from falcon.compare import comparisons, few_runs_warning, format_comparison, no_comparison_reason

SCHEMA_VERSION = 1
STATS = ("median", "p25", "p75", "mean")


#: how :func:`describe` treats a value that is not finite (a run that did not finish)
UNFINISHED = ("drop", "last")


def describe(values: Sequence[float], unfinished: str = "drop") -> dict:
    """n, median, p25, p75, mean (linear-interpolated percentiles) and the raw values.

    ``unfinished``: what a non-finite value (NaN, None: a run that did not
    finish) counts as. ``"drop"``: left out, the statistics are the finite
    values'. ``"last"``: slower than every finished run, so that the median
    and quartiles are over all ``n`` runs (a quartile that falls among the
    unfinished ones is None) and the mean is None when a run did not finish:
    dropping them would rank a scheduler that times out on its slowest runs
    ahead of one that finishes them."""
    if unfinished not in UNFINISHED:
        raise ValueError(f"unfinished: expected one of {UNFINISHED}, got {unfinished!r}")
    raw = [float(v) if v is not None and math.isfinite(float(v)) else None for v in values]
    finite = np.array([v for v in raw if v is not None], dtype=float)
    if unfinished == "last" and finite.size < len(raw):
        ranked = np.concatenate([np.sort(finite), np.full(len(raw) - finite.size, np.inf)])
        quartiles = [_rank_quantile(ranked, q) for q in (0.25, 0.5, 0.75)]
        p25, median, p75 = quartiles
        return {
            "n": len(raw),
            "median": median,
            "p25": p25,
            "p75": p75,
            "mean": None,
            "values": raw,
        }
    if finite.size:
        p25, median, p75 = (float(x) for x in np.percentile(finite, [25, 50, 75]))
        mean = float(finite.mean())
    else:
        p25 = median = p75 = mean = None
    return {"n": len(raw), "median": median, "p25": p25, "p75": p75, "mean": mean, "values": raw}


def _rank_quantile(ranked: np.ndarray, q: float) -> float | None:
    """The ``q`` quantile of sorted values (``+inf`` last) by linear
    interpolation, as ``np.percentile`` takes it; None where it involves an infinite value."""
    pos = q * (len(ranked) - 1)
    lo, hi = math.floor(pos), math.ceil(pos)
    if not math.isfinite(ranked[hi]):
        return None
    return float(ranked[lo] + (ranked[hi] - ranked[lo]) * (pos - lo))


def _ordered(items: Iterable[str]) -> list[str]:
    out: list[str] = []
    for x in items:
        if x not in out:
            out.append(x)
    return out


def summarize(
    records: Sequence[dict],
    *,
    seeds: Sequence[int],
    job: str = "evaluate",
    extra: dict | None = None,
    compare: str | None = "download_time_s",
) -> dict:
    """The summary dict (JSON-serialisable) of a set of episode records;
    with ``compare``, that (lower-is-better) metric's comparison of every
    scheduler with the best other one (:mod:`falcon.compare`)."""
    scenarios = _ordered(r["scenario"] for r in records)
    apps = _ordered(r["app"] for r in records)
    agents = _ordered(r["agent"] for r in records)
    results: dict = {}
    for sc in scenarios:
        for app in apps:
            for ag in agents:
                rows = sorted(
                    (r for r in records if (r["scenario"], r["app"], r["agent"]) == (sc, app, ag)),
                    key=lambda r: r["seed"],
                )
                if not rows:
                    continue
                metrics = _ordered(k for r in rows for k in r["metrics"])
                stats = {
                    m: describe([r["metrics"].get(m, math.nan) for r in rows]) for m in metrics
                }
                pooled = [t for r in rows if "objects" in r for t in r["objects"]["completion"]]
                if pooled:  # every object of every run, runs in seed order
                    stats["object_completion_s"] = describe(pooled)
                results.setdefault(sc, {}).setdefault(app, {})[ag] = stats
    summary = {
        "schema_version": SCHEMA_VERSION,
        "job": job,
        "seeds": [int(s) for s in seeds],
        "runs": len(seeds),
        "scenarios": scenarios,
        "apps": apps,
        "schedulers": agents,
        "results": results,
    }
    if compare is not None:
        cmp = comparisons(summary, compare)
        if cmp:
            summary["comparison_metric"] = compare
            summary["comparison"] = cmp
    summary.update(extra or {})
    return summary


def groups(summary: dict) -> list[tuple[str, str, dict]]:
    """(scenario, app, {scheduler: {metric: stats}}) blocks of a summary."""
    return [
        (sc, app, by_agent)
        for sc, by_app in summary["results"].items()
        for app, by_agent in by_app.items()
    ]


def _fmt(x) -> str:
    if x is None:
        return "-"
    ax = abs(x)
    if ax != 0 and (ax >= 1e5 or ax < 1e-3):
        return f"{x:.3g}"
    return f"{x:.4g}" if ax < 1000 else f"{x:.0f}"


def _line(cells: Sequence[str], widths: Sequence[int]) -> str:
    """First column left-aligned, the others right-aligned."""
    return "  ".join(
        c.ljust(w) if j == 0 else c.rjust(w) for j, (c, w) in enumerate(zip(cells, widths))
    )


def summary_table(summary: dict, metrics: Sequence[str]) -> str:
    """The comparison table: per scenario and app, one row per scheduler.

    The first metric shows median [p25, p75]; the others their median.
    Metrics no scheduler has are left out.
    """
    blocks = []
    for sc, app, by_agent in groups(summary):
        present = [m for m in metrics if any(m in st for st in by_agent.values())]
        if not present:
            present = _ordered(m for st in by_agent.values() for m in st)[:1]
        head = ["scheduler"]
        for i, m in enumerate(present):
            head.append(f"{m} median [p25, p75]" if i == 0 else f"{m} (median)")
        cmp = summary.get("comparison", {}).get(sc, {}).get(app, {})
        if cmp:
            head.append(
                f"median / best other's [95 % CI] ({summary.get('comparison_metric', present[0])})"
            )
        rows = []
        for ag, st in by_agent.items():
            row = [ag]
            for i, m in enumerate(present):
                s = st.get(m)
                if s is None:
                    row.append("-")
                elif i == 0:
                    row.append(f"{_fmt(s['median'])} [{_fmt(s['p25'])}, {_fmt(s['p75'])}]")
                else:
                    row.append(_fmt(s["median"]))
            if cmp:
                row.append(format_comparison(cmp[ag]) if ag in cmp else "-")
            rows.append(row)
        widths = [max(len(r[c]) for r in [head, *rows]) for c in range(len(head))]

        n = max((s.get("n", 0) for st in by_agent.values() for s in st.values()), default=0)
        title = f"scenario {sc} | app {app} | {n} runs per scheduler"
        blocks.append(
            "\n".join(
                [
                    title,
                    _line(head, widths),
                    "  ".join("-" * w for w in widths),
                    *(_line(r, widths) for r in rows),
                    *_comparison_notes(summary, cmp, by_agent, present[0]),
                ]
            )
        )
    return "\n\n".join(blocks)


def _comparison_notes(summary: dict, cmp: dict, by_agent: dict, first: str) -> list[str]:
    """The lines under a block's table: why its comparison column is missing,
    or that its intervals rest on too few runs (:mod:`falcon.compare`)."""
    if cmp:
        note = few_runs_warning(min(c["n"] for c in cmp.values()))
    else:
        metric = summary.get("comparison_metric", first)
        values = {ag: st[metric]["values"] for ag, st in by_agent.items() if metric in st}
        note = no_comparison_reason(values, metric)
    return [note] if note else []


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)


def save_figure(fig, path, dpi: int = 120, tight: bool = True) -> Path:
    """Lay out (``tight``: matplotlib's tight layout), write (PNG) and close a
    matplotlib figure; its path. Figures made by :func:`new_figure` need no
    closing; pyplot ones are closed."""
    if tight:
        fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None and plt.fignum_exists(getattr(fig, "number", -1)):
        plt.close(fig)
    return Path(path)


def new_figure(nrows: int = 1, ncols: int = 1, **kwargs):
    """``(figure, axes)`` of a figure outside pyplot's global state (no
    backend to pick, nothing to close, safe in threads). ``kwargs``: those
    of :class:`matplotlib.figure.Figure` (``figsize``, ...)."""
    from matplotlib.figure import Figure

    fig = Figure(**kwargs)
    return fig, fig.subplots(nrows, ncols)


#: metric-name suffix -> the unit an axis label shows
_UNITS = (("_mbps", "Mbit/s"), ("_bytes", "bytes"), ("_ms", "ms"), ("_s", "s"))


def axis_label(metric: str) -> str:
    """``download_time_s`` -> ``download time [s]``: a metric's name as an axis label with its unit."""
    for suffix, unit in _UNITS:
        if metric.endswith(suffix):
            return f"{metric[: -len(suffix)].replace('_', ' ')} [{unit}]"
    return metric.replace("_", " ")


#: per scheduler (in order), a line style and a marker: curves that coincide stay visible
LINESTYLES = ("-", "--", "-.", ":")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


def curve_style(i: int, n: int, points: int) -> dict:
    """Plot keywords of the ``i``-th of ``n`` curves of ``points`` points:
    its own line style and hollow marker (a distinct pair for the first 32),
    the earlier curves drawn wider and with larger markers, so a later curve
    drawn on top of an identical one leaves it showing."""
    return {
        "linestyle": LINESTYLES[(i + i // len(MARKERS)) % len(LINESTYLES)],
        "marker": MARKERS[i % len(MARKERS)],
        "markevery": max(1, points // 12),
        "markersize": 4.0 + 2.0 * (n - 1 - i) / max(1, n - 1),
        "markerfacecolor": "none",
        "linewidth": 1.2 + 1.3 * (n - 1 - i) / max(1, n - 1),
    }


def cdf_curve(values: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """``(x, y)`` of the empirical CDF for a ``where="post"`` step plot,
    starting at y = 0 at the smallest value (not at 1/n)."""
    x = np.sort(np.asarray(values, dtype=float))
    return np.concatenate([x[:1], x]), np.arange(x.size + 1) / x.size


def plot_metric(summary: dict, metric: str, out_dir: Path) -> list[Path]:
    """One PNG per scenario x app: the metric's empirical CDF (y from 0 to 1)
    and a box plot per scheduler; every scheduler with the metric is in the
    legend (``n=0`` without a finite value), each with its own line style
    and marker (:func:`curve_style`)."""
    written = []
    for sc, app, by_agent in groups(summary):
        data = {
            ag: [v for v in st[metric]["values"] if v is not None]
            for ag, st in by_agent.items()
            if metric in st
        }
        if not any(data.values()):
            continue
        fig, (ax_cdf, ax_box) = new_figure(1, 2, figsize=(11, 4.2))
        for i, (ag, vals) in enumerate(data.items()):
            x, y = cdf_curve(vals) if vals else ([], [])
            ax_cdf.step(
                x,
                y,
                where="post",
                label=f"{ag} (n={len(vals)})",
                color=color(ag),
                clip_on=False,  # the markers at y = 1 whole
                **curve_style(i, len(data), len(x)),
            )
        ax_cdf.set_ylim(0.0, 1.0)
        ax_cdf.set_xlabel(axis_label(metric))
        ax_cdf.set_ylabel("CDF")
        ax_cdf.grid(alpha=0.3)
        ax_cdf.legend(fontsize="small")
        box = ax_box.boxplot(
            list(data.values()), showfliers=True, patch_artist=True, medianprops={"color": "black"}
        )
        for patch, c in zip(box["boxes"], colors(data)):
            patch.set_facecolor(c)
        ax_box.set_xticks(range(1, len(data) + 1), list(data.keys()))
        ax_box.set_ylabel(axis_label(metric))
        ax_box.grid(alpha=0.3, axis="y")
        fig.suptitle(f"{metric}: scenario {sc}, app {app}")
        # fixed margins: a tight layout would render every figure's text twice
        fig.subplots_adjust(left=0.07, right=0.985, bottom=0.12, top=0.88, wspace=0.22)
        path = save_figure(
            fig,
            Path(out_dir) / f"{_slug(metric)}__{_slug(sc)}__{_slug(app)}.png",
            dpi=100,
            tight=False,
        )
        written.append(path)
    return written


def active_objects(
    release: Sequence[float], completion: Sequence[float], grid: np.ndarray
) -> np.ndarray:
    """Number of objects requested and not yet complete at each time of
    ``grid`` [s]; objects of unknown request or completion time are left out."""
    from baselines.stream_aware.plots import active_streams

    rel = np.asarray(release, dtype=float)
    end = rel + np.asarray(completion, dtype=float)
    ok = np.isfinite(rel) & np.isfinite(end)
    return active_streams(rel[ok], end[ok], grid)


def plot_objects(records: Sequence[dict], out_dir: Path, points: int = 400) -> list[Path]:
    """For apps of several objects (web pages, stream traces), one PNG per
    scenario x app: the CDF of per-object completion times (all objects of
    all runs) and the mean number of active objects (streams) over time."""
    from baselines.mpl import use_agg

    use_agg()
    import matplotlib.pyplot as plt

    written = []
    blocks: dict = {}
    for r in records:
        if "objects" in r:
            blocks.setdefault((r["scenario"], r["app"]), {}).setdefault(r["agent"], []).append(
                r["objects"]
            )
    for (sc, app), by_agent in blocks.items():
        horizon = max(
            (
                rel + c
                for runs in by_agent.values()
                for o in runs
                for rel, c in zip(o["release"], o["completion"])
                if math.isfinite(rel + c)
            ),
            default=0.0,
        )
        if horizon <= 0:
            continue
        grid = np.linspace(0.0, horizon, points)
        fig, (ax_cdf, ax_act) = plt.subplots(1, 2, figsize=(11, 4.2))
        for i, (ag, runs) in enumerate(by_agent.items()):
            done = [c for o in runs for c in o["completion"] if math.isfinite(c)]
            x, y = cdf_curve(done) if done else ([], [])
            ax_cdf.step(
                x,
                y,
                where="post",
                label=f"{ag} (n={len(done)})",
                color=color(ag),
                clip_on=False,
                **curve_style(i, len(by_agent), len(x)),
            )
            active = np.mean(
                [active_objects(o["release"], o["completion"], grid) for o in runs], axis=0
            )
            ax_act.step(
                grid,
                active,
                where="post",
                label=ag,
                color=color(ag),
                **curve_style(i, len(by_agent), grid.size),
            )
        ax_cdf.set_ylim(0.0, 1.0)
        ax_cdf.set_xlabel("object (stream) completion time [s]")
        ax_cdf.set_ylabel("CDF")
        ax_cdf.legend(fontsize="small")
        ax_act.set_xlabel("time since the first request [s]")
        ax_act.set_ylabel(f"active objects (mean of {len(next(iter(by_agent.values())))} runs)")
        ax_act.legend(fontsize="small")
        for ax in (ax_cdf, ax_act):
            ax.grid(alpha=0.3)
        fig.suptitle(f"objects: scenario {sc}, app {app}")
        path = save_figure(fig, Path(out_dir) / f"objects__{_slug(sc)}__{_slug(app)}.png", dpi=110)
        written.append(path)
    return written


def write_json(summary: dict, path: Path) -> None:
    Path(path).write_text(json.dumps(summary, indent=1, allow_nan=False) + "\n")


def flat_metrics(summary: dict) -> dict[str, float]:
    """MLflow metrics of a summary: ``<scheduler>/<metric>_<stat>``.

    Runs over more than one scenario or app prefix ``<scenario>/<app>/``.
    """
    blocks = groups(summary)
    prefix_all = len(blocks) > 1
    out = {}
    for sc, app, by_agent in blocks:
        pre = f"{_slug(sc)}/{_slug(app)}/" if prefix_all else ""
        for ag, st in by_agent.items():
            for m, s in st.items():
                for stat in STATS:
                    if s[stat] is not None:
                        out[f"{pre}{_slug(ag)}/{_slug(m)}_{stat}"] = s[stat]
        for ag, c in summary.get("comparison", {}).get(sc, {}).get(app, {}).items():
            out[f"{pre}{_slug(ag)}/vs_best_other_ratio"] = c["ratio"]
            out[f"{pre}{_slug(ag)}/vs_best_other_paired"] = c["paired"]
    return out


__all__ = [
    "describe",
    "summarize",
    "summary_table",
    "save_figure",
    "plot_metric",
    "write_json",
    "flat_metrics",
    "groups",
    "SCHEMA_VERSION",
]
