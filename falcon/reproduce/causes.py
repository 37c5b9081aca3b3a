"""Measured causes of a claim that did not reproduce, from the experiment's own results.

A verdict that fails says why where the results can tell: whether two
schedulers took the very same time on the same downloads (one behaves as the
other), whether the gap is larger than the downloads' spread (a paired
bootstrap interval of the ratio of their medians or means), and for the
convergence experiment whether both schedulers already start at the target
(then no number of packets can separate them). Every figure is computed
from the records the experiment wrote; nothing here runs an emulation.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

#: resamples of the paired bootstrap, and its seed (a verdict is reproducible)
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 0
#: two download times [s] this close are the same download (same decisions)
SAME_TIME_RTOL = 1e-9
#: fewer pairs than this get no interval (a bootstrap of 3 downloads says nothing)
MIN_PAIRS = 10


def pairs_of(
    a: Mapping[tuple, float | None], b: Mapping[tuple, float | None]
) -> list[tuple[float, float]]:
    """``[(time of a, time of b), ...]`` of the downloads both ran (same key:
    seed, condition, download), finite times only, in key order."""
    out = []
    for key in sorted(set(a) & set(b), key=repr):
        if a[key] is None or b[key] is None:  # a download that did not finish
            continue
        ta, tb = float(a[key]), float(b[key])
        if math.isfinite(ta) and math.isfinite(tb):
            out.append((ta, tb))
    return out


def same_downloads(pairs: Sequence[tuple[float, float]]) -> int:
    """How many of ``pairs`` took the very same time (the same decisions)."""
    return sum(1 for x, y in pairs if abs(x - y) <= SAME_TIME_RTOL * max(abs(x), abs(y), 1e-12))


def paired_interval(
    pairs: Sequence[tuple[float, float]], stat: str = "median"
) -> tuple[float, float, float]:
    """``(ratio, lo, hi)``: ``stat`` (median or mean) of the first times over
    that of the second, and its 95 % paired bootstrap interval (the pairs
    resampled together, :data:`BOOTSTRAP_RESAMPLES` times)."""
    f = {"median": np.median, "mean": np.mean}[stat]
    arr = np.asarray(pairs, dtype=float)
    if arr.size == 0:
        return math.nan, math.nan, math.nan
    ratio = float(f(arr[:, 0]) / f(arr[:, 1]))
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    idx = rng.integers(0, len(arr), size=(BOOTSTRAP_RESAMPLES, len(arr)))
    boot = f(arr[idx, 0], axis=1) / f(arr[idx, 1], axis=1)
    lo, hi = np.percentile(boot, [2.5, 97.5])
    return ratio, float(lo), float(hi)


def compare(
    name_a: str, name_b: str, pairs: Sequence[tuple[float, float]], stat: str = "median"
) -> str:
    """One clause: how often ``a`` took ``b``'s very time, and the paired ratio
    of their ``stat`` with its interval (from :data:`MIN_PAIRS` pairs on),
    said as resolvable or not."""
    if not pairs:
        return f"{name_a} and {name_b} share no download"
    same = same_downloads(pairs)
    ratio, lo, hi = paired_interval(pairs, stat)
    head = f"{name_a} took {name_b}'s very time on {same} of {len(pairs)} downloads; "
    if len(pairs) < MIN_PAIRS:
        return head + f"{stat} {name_a}/{name_b} {ratio:.3f} (too few for an interval)"
    if lo <= 1.0 <= hi:
        verdict = "parity inside it: not resolvable at this scale"
    else:
        verdict = f"{name_a} resolvably {'slower' if ratio > 1 else 'faster'}"
    return head + (
        f"{stat} {name_a}/{name_b} {ratio:.3f} [95 % paired interval {lo:.3f}, {hi:.3f}], {verdict}"
    )


def keyed(records: Iterable[Mapping], key: Sequence[str], **where) -> dict[tuple, float | None]:
    """``{key values: download time [s] or None}`` of the records matching ``where``."""
    return {
        tuple(r[k] for k in key): r["download_time_s"]
        for r in records
        if all(r.get(k) == v for k, v in where.items())
    }


def convergence_cause(res: Mapping, a: str = "falcon", b: str = "mpeekaboo") -> str:
    """Why ``a`` did not reach the target before ``b`` with a score at least
    as high: their scores on the first downloads after the change (both at
    the target: the change cannot separate them), and the per-run medians
    on B (``a``'s over ``b``'s, the spread of the runs)."""
    target = float(res.get("settings", {}).get("target_score", math.nan))
    starts = res.get("start_scores", {})
    sa, sb = float(starts.get(a, math.nan)), float(starts.get(b, math.nan))
    parts = [f"first downloads after the change score {a} {sa:.3f}, {b} {sb:.3f}"]
    if sa >= target and sb >= target:
        parts.append(
            f"both already at the target {target:g}, so packets to the target cannot separate "
            "them: this B is no condition where A's policy is poor (experiment=convergence "
            "changes to one)"
        )
    runs = res.get("run_medians_b_s", {})
    ratios = [
        x / y
        for x, y in zip(runs.get(a, []), runs.get(b, []), strict=False)
        if math.isfinite(x) and math.isfinite(y) and y > 0
    ]
    if ratios:
        parts.append(
            f"per run, {a}'s median on B / {b}'s: {min(ratios):.3f} to {max(ratios):.3f} "
            f"({sum(r > 1 for r in ratios)} of {len(ratios)} runs slower)"
        )
    return "; ".join(parts)


def stress_cause(res: Mapping, behind: Sequence[tuple[float, str]], a: str = "falcon") -> str:
    """Why ``a`` trailed in the (interval, scheduler) pairs ``behind``: per
    pair the paired comparison of its downloads, and over every interval how
    often it took minRTT's very time."""
    key = ("seed_index", "condition", "download")
    recs = res.get("records", [])
    parts = []
    for iv, other in behind:
        pairs = pairs_of(
            keyed(recs, key, scheduler=a, interval_s=iv),
            keyed(recs, key, scheduler=other, interval_s=iv),
        )
        parts.append(f"{iv:g} s against {other}: {compare(a, other, pairs)}")
    if any(r.get("scheduler") == "minrtt" for r in recs):
        pairs = pairs_of(
            keyed(recs, ("interval_s", *key), scheduler=a),
            keyed(recs, ("interval_s", *key), scheduler="minrtt"),
        )
        parts.append(
            f"at every interval {a} took minRTT's very time on "
            f"{same_downloads(pairs)} of {len(pairs)} downloads"
        )
    return "; ".join(parts)


def web_cause(summary: Mapping, others: Sequence[str], a: str = "falcon") -> str:
    """Why ``a``'s page load times are not below the best of ``others``: per
    page the paired comparison with the other of the lower median, and how
    often it took minRTT's very time."""
    parts, same, total = [], 0, 0
    for sc, apps in summary.get("results", {}).items():
        for app, per in apps.items():
            if a not in per or not all(n in per for n in others):
                continue
            mine = dict(enumerate(per[a]["download_time_s"]["values"]))
            best = min(others, key=lambda n: float(per[n]["download_time_s"]["median"]))
            theirs = dict(enumerate(per[best]["download_time_s"]["values"]))
            parts.append(f"{sc} / {app} against {best}: {compare(a, best, pairs_of(mine, theirs))}")
            if "minrtt" in per:
                p = pairs_of(mine, dict(enumerate(per["minrtt"]["download_time_s"]["values"])))
                same, total = same + same_downloads(p), total + len(p)
    if total:
        parts.append(f"{a} took minRTT's very time on {same} of {total} page loads")
    return "; ".join(parts)


def updates_cause(res: Mapping, a: str = "falcon", b: str = "falcon_n") -> str:
    """Why the updated bank (``a``) is not faster than the frozen one (``b``):
    per setting the paired comparison of their mean download times, and the
    offline updates that were applied."""
    parts = []
    for name, setting in res.get("results", {}).items():
        recs = setting.get("records", [])
        pairs = pairs_of(
            keyed(recs, ("day", "download"), scheduler=a),
            keyed(recs, ("day", "download"), scheduler=b),
        )
        updates = setting.get("offline_updates", {}).get(a, [])
        cells = sum(int(u.get("cells", 0)) for u in updates)
        parts.append(
            f"{name}: {len(updates)} offline updates of {cells} cells in all; "
            + compare(a, b, pairs, stat="mean")
        )
    return "; ".join(parts)


__all__ = [
    "pairs_of",
    "same_downloads",
    "paired_interval",
    "compare",
    "keyed",
    "convergence_cause",
    "stress_cause",
    "web_cause",
    "updates_cause",
]
