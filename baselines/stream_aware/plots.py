"""Figures of stream-aware scheduling (SRPT-ECF paper, Figs. 9 and 10).

* :func:`plot_completion_cdf`: CDF of per-stream completion times, one curve
  per scheduler (all seeds pooled), optional fluid-model reference curves
  and vertical bars at the path latencies.
* :func:`plot_active_streams`: number of active streams (released, not
  completed) over time, one curve per scheduler (mean over seeds on a common
  time grid), from per-stream release and completion dates.

matplotlib is imported on use with the Agg backend (no display needed).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

#: the project's scheduler colours (:mod:`baselines.palette`), the same in every figure
from baselines.palette import COLORS, color


def _plt():
    from baselines.mpl import use_agg

    use_agg()
    import matplotlib.pyplot as plt

    return plt


def active_streams(
    release: Sequence[float], finish: Sequence[float], grid: np.ndarray | None = None
):
    """Number of active streams over time.

    A stream is active on ``[release, finish)``; a stream that never
    finished (NaN) stays active. Returns ``(t, n)``: the step function's
    breakpoints and values (``n[i]`` holds on ``[t[i], t[i+1])``), or its
    values on ``grid`` when given.
    """
    rel = np.asarray(release, dtype=float)
    fin = np.asarray(finish, dtype=float)
    fin = np.where(np.isnan(fin), np.inf, fin)
    if grid is not None:
        grid = np.asarray(grid, dtype=float)
        return np.searchsorted(np.sort(rel), grid, side="right") - np.searchsorted(
            np.sort(fin), grid, side="right"
        )
    ev_t = np.concatenate([rel, fin[np.isfinite(fin)]])
    ev_d = np.concatenate([np.ones(len(rel)), -np.ones(int(np.isfinite(fin).sum()))])
    order = np.lexsort((ev_d, ev_t))  # at equal times: completions before releases
    t, d = ev_t[order], ev_d[order]
    n = np.cumsum(d)
    # keep the last value of each time
    keep = np.append(t[1:] != t[:-1], True)
    return np.concatenate([[0.0], t[keep]]), np.concatenate([[0.0], n[keep]])


def ecdf(values) -> tuple[np.ndarray, np.ndarray]:
    """(sorted values, cumulative fractions) of the finite values."""
    v = np.sort(np.asarray([x for x in values if not math.isnan(x)], dtype=float))
    return v, np.arange(1, len(v) + 1) / max(len(v), 1)


def plot_completion_cdf(
    times: Mapping[str, Sequence[float]],
    path=None,
    *,
    fluid: Mapping[str, Sequence[float]] | None = None,
    latencies: Sequence[float] | None = None,
    title: str | None = None,
):
    """CDF of stream completion times [s] per scheduler (``times[name]``: all
    streams of all seeds). ``fluid``: reference curves (dashed); ``latencies``:
    vertical bars (e.g. the paths' one-way delays). Saves to ``path`` if given;
    returns the figure."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for name, vals in times.items():
        x, y = ecdf(vals)
        ax.step(x, y, where="post", label=name, color=color(name))
    for name, vals in (fluid or {}).items():
        x, y = ecdf(vals)
        ax.step(
            x,
            y,
            where="post",
            linestyle="--",
            linewidth=1.0,
            label=f"{name} (fluid model)",
            color=color(name),
        )
    for i, d in enumerate(latencies or []):
        ax.axvline(
            d,
            color="grey",
            linewidth=0.8,
            linestyle=":",
            label="path latencies" if i == 0 else None,
        )
    ax.set_xlabel("stream completion time [s]")
    ax.set_ylabel("CDF")
    ax.set_ylim(0, 1.01)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    if path is not None:
        fig.savefig(Path(path), dpi=120)
        plt.close(fig)
    return fig


def plot_active_streams(
    runs: Mapping[str, Sequence[tuple[Sequence[float], Sequence[float]]]],
    path=None,
    *,
    points: int = 2000,
    title: str | None = None,
):
    """Active streams over time per scheduler. ``runs[name]``: one
    ``(release dates, finish dates)`` pair per seed; the curve is the mean
    over seeds on a common grid. Saves to ``path`` if given; returns the figure."""
    plt = _plt()
    t_end = 0.0
    for pairs in runs.values():
        for rel, fin in pairs:
            f = np.asarray(fin, dtype=float)
            t_end = max(
                t_end,
                float(np.nanmax(f)) if np.isfinite(f).any() else 0.0,
                float(np.max(rel)) if len(rel) else 0.0,
            )
    grid = np.linspace(0.0, t_end * 1.02 if t_end > 0 else 1.0, points)
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for name, pairs in runs.items():
        if not pairs:
            continue
        mean = np.mean([active_streams(r, f, grid) for r, f in pairs], axis=0)
        ax.step(grid, mean, where="post", label=name, color=color(name))
    ax.set_xlabel("time since the first request [s]")
    ax.set_ylabel(
        "active streams" + (" (mean over seeds)" if any(len(p) > 1 for p in runs.values()) else "")
    )
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    if path is not None:
        fig.savefig(Path(path), dpi=120)
        plt.close(fig)
    return fig


__all__ = ["active_streams", "ecdf", "plot_completion_cdf", "plot_active_streams", "COLORS"]
