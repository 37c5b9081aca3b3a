"""What a loaded trace holds, in one line: how the file was read (format,
sample period), its length, its rate (mean, p5, p95) and its outages.

A run prints one such line per trace file before its episodes, so a file read
in the wrong unit (a mean of 12 500 Mbit/s where 12.5 was meant) or with a
long outage shows at once. Rates are in Mbit/s; the percentiles and the
outage share are taken over windows of ``max(sample period, 100 ms)`` of the
capacity curve (a Mahimahi trace's 1-ms bins are 0 or a multiple of
12 Mbit/s, which says nothing on its own), weighted by time.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from envs.traces.base import CapacityTrace, PathTrace
from envs.traces.catalog import traces_dir

#: the shortest window the rate percentiles and the outage share are taken over [s]
MIN_WINDOW_S = 0.1
#: a window whose rate is below this share of the mean counts as an outage
OUTAGE_SHARE_OF_MEAN = 0.01


@dataclass(frozen=True)
class TraceStats:
    """Summary of one loaded trace (rates in Mbit/s, times in s)."""

    format: str
    sample_period_s: float
    duration_s: float
    mean_mbps: float
    p5_mbps: float
    p95_mbps: float
    #: share of the time (0..1) whose window rate is below 1 % of the mean
    outage_share: float
    window_s: float


def window_rates(cap: CapacityTrace, window_s: float) -> tuple[np.ndarray, np.ndarray]:
    """Mean capacity [bytes/s] of consecutive windows of ``window_s`` over one
    period (the last one shorter), and each window's length [s]."""
    edges = np.append(np.arange(0.0, cap.period, window_s), cap.period)
    edges = edges[np.concatenate(([True], np.diff(edges) > 0))]
    knots_t = np.append(cap.times, cap.period)
    knots_c = np.concatenate(([0.0], np.cumsum(cap.rates * np.diff(knots_t))))
    lengths = np.diff(edges)
    return np.diff(np.interp(edges, knots_t, knots_c)) / lengths, lengths


def weighted_quantile(values: np.ndarray, weights: np.ndarray, q: float) -> float:
    """The smallest value below or at which a share ``q`` of the total weight lies."""
    order = np.argsort(values, kind="stable")
    cum = np.cumsum(weights[order])
    k = int(np.searchsorted(cum, q * cum[-1], side="left"))
    return float(values[order][min(k, len(values) - 1)])


def trace_stats(trace: PathTrace) -> TraceStats:
    """:class:`TraceStats` of a loaded trace (module docstring)."""
    cap = trace.capacity
    window = max(trace.sample_period_s, MIN_WINDOW_S)
    rates, lengths = window_rates(cap, window)
    mbps = rates * 8 / 1e6
    mean = cap.mean_rate * 8 / 1e6
    outage = float(lengths[mbps < OUTAGE_SHARE_OF_MEAN * mean].sum() / cap.period)
    return TraceStats(
        trace.format or "synthetic",
        trace.sample_period_s,
        cap.period,
        mean,
        weighted_quantile(mbps, lengths, 0.05),
        weighted_quantile(mbps, lengths, 0.95),
        outage,
        window,
    )


def display_name(source: str) -> str:
    """``source`` relative to the shipped ``data/traces/`` when it lies there, else as given."""
    try:
        return str(Path(source).resolve().relative_to(traces_dir().resolve()))
    except ValueError:
        return source


def _seconds(s: float) -> str:
    return f"{s * 1000:.3g} ms" if s < 1 else f"{s:.3g} s"


def _mbps(x: float) -> str:
    return f"{x:.0f}" if x >= 100 else f"{x:.2f}" if x >= 0.01 else f"{x:.2g}"


def summary_line(trace: PathTrace) -> str:
    """One line: ``trace NAME: FORMAT, sample ..., DURATION, mean ... Mbit/s, p5 ... /
    p95 ... Mbit/s (... windows), ... % of the time below 1 % of the mean, sha256 ...``."""
    s = trace_stats(trace)
    sample = _seconds(s.sample_period_s) if s.sample_period_s > 0 else "n/a"
    digest = f", sha256 {trace.sha256[:16]}" if trace.sha256 else ""
    return (
        f"trace {display_name(trace.source)}: {s.format}, sample {sample}, {s.duration_s:.1f} s, "
        f"mean {_mbps(s.mean_mbps)} Mbit/s, p5 {_mbps(s.p5_mbps)} / p95 {_mbps(s.p95_mbps)} Mbit/s "
        f"({_seconds(s.window_s)} windows), {100 * s.outage_share:.1f} % of the time below 1 % of the mean"
        f"{digest}"
    )


__all__ = [
    "TraceStats",
    "trace_stats",
    "summary_line",
    "window_rates",
    "weighted_quantile",
    "display_name",
    "MIN_WINDOW_S",
    "OUTAGE_SHARE_OF_MEAN",
]
