"""Each scheduler against the best other one, with bootstrap confidence intervals.

Every scheduler of a comparison runs the same seeds, so the per-seed
values are paired. For a lower-is-better metric (download time, page load
time) :func:`compare_to_best` gives, per scheduler:

* ``ratio``: its median over the best *other* scheduler's median (the one
  with the lowest median; 1.02 = 2 % slower), the README's "FALCON / best
  other";
* ``paired``: the geometric mean over seeds of its value over the best
  other's on the same seed, which compares like with like where a ratio of
  medians moves with whichever seed sits at the median;
* a 95 % interval for each (``ratio_ci``, ``paired_ci``): a percentile
  bootstrap that resamples the seeds with replacement, jointly for every
  scheduler (they are paired), and picks the best other anew in every
  resample, so the interval also carries the uncertainty of *which* rule is
  the best. An interval that contains 1 says that the seeds cannot tell the
  two apart.

The resampling is seeded (:data:`BOOT_SEED`): the same values give the same
intervals.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

#: bootstrap resamples and their seed
N_BOOT = 2000
BOOT_SEED = 0
#: fewer paired seeds than this: no comparison
MIN_SEEDS = 3
#: fewer paired runs than this: printed intervals carry a warning line
#: (:func:`few_runs_warning`; n runs have at most C(2n-1, n) distinct
#: resamples: 10 for 3 runs, 35 for 4, so the percentiles sit on a handful
#: of values)
MIN_RUNS_FOR_INTERVALS = 5


def _usable(values: Mapping[str, Sequence[float | None]]) -> tuple[list[str], np.ndarray]:
    """``(names, x[scheduler, seed])`` over the seeds finite and positive for everyone."""
    names = list(values)
    n = min(len(v) for v in values.values())
    x = np.array(
        [[math.nan if v is None else float(v) for v in values[k][:n]] for k in names], dtype=float
    )
    ok = np.isfinite(x).all(axis=0) & (x > 0).all(axis=0)
    return names, x[:, ok]


def _paired_matrix(
    values: Mapping[str, Sequence[float | None]],
) -> tuple[list[str], np.ndarray] | None:
    """:func:`_usable`; None with fewer than :data:`MIN_SEEDS` seeds."""
    names, x = _usable(values)
    return None if x.shape[1] < MIN_SEEDS else (names, x)


def few_runs_warning(n: int) -> str | None:
    """The line to print beside 95 % bootstrap intervals over ``n`` paired
    runs when ``n`` < :data:`MIN_RUNS_FOR_INTERVALS`; None otherwise."""
    if n >= MIN_RUNS_FOR_INTERVALS:
        return None
    return (
        f"warning: the 95 % intervals rest on {n} runs; bootstrap intervals over fewer than "
        f"{MIN_RUNS_FOR_INTERVALS} runs are degenerate (too few distinct resamples): "
        f"use runs>={MIN_RUNS_FOR_INTERVALS}"
    )


def no_comparison_reason(values: Mapping[str, Sequence[float | None]], metric: str) -> str | None:
    """Why :func:`compare_to_best` of ``values`` is empty, in one line (None
    when it is not, or with fewer than two schedulers: nothing to compare)."""
    if len(values) < 2:
        return None
    n = min(len(v) for v in values.values())
    usable = _usable(values)[1].shape[1]
    if usable >= MIN_SEEDS:
        return None
    which = f"{n} runs" if usable == n else f"{usable} of {n} runs with a finite {metric} for all"
    return (
        f"no comparison column: {which}; comparing each scheduler with the best other "
        f"needs at least {MIN_SEEDS} (runs>={MIN_SEEDS}, {MIN_RUNS_FOR_INTERVALS} or more "
        f"for useful intervals)"
    )


def _against(x: np.ndarray, i: int, refs: list[int], idx: np.ndarray) -> dict:
    """Row ``i`` of ``x`` against the best of rows ``refs`` (lowest median),
    with the bootstrap intervals of the module docstring (resamples ``idx``)."""
    med = np.median(x, axis=1)
    best = refs[int(np.argmin(med[refs]))]
    boot_med = np.median(x[:, idx], axis=2)  # [row, resample]
    b_best = np.array(refs)[np.argmin(boot_med[refs], axis=0)]
    cols = np.arange(idx.shape[0])
    logs = np.log(x)
    boot_logs = logs[:, idx]  # [row, resample, seed]
    ratios = boot_med[i] / boot_med[b_best, cols]
    paired = np.exp((boot_logs[i] - boot_logs[b_best, cols]).mean(axis=1))
    return {
        "best": best,
        "n": int(x.shape[1]),
        "ratio": float(med[i] / med[best]),
        "ratio_ci": [float(v) for v in np.percentile(ratios, [2.5, 97.5])],
        "paired": float(np.exp((logs[i] - logs[best]).mean())),
        "paired_ci": [float(v) for v in np.percentile(paired, [2.5, 97.5])],
    }


def compare_to_best(
    values: Mapping[str, Sequence[float | None]], n_boot: int = N_BOOT, seed: int = BOOT_SEED
) -> dict[str, dict]:
    """``{scheduler: {best_other, ratio, ratio_ci, paired, paired_ci, n}}``
    for per-seed values of a lower-is-better metric (``None`` or non-finite:
    that seed is left out for everyone). Empty with fewer than two
    schedulers or :data:`MIN_SEEDS` common finite seeds."""
    if len(values) < 2 or (m := _paired_matrix(values)) is None:
        return {}
    names, x = m
    idx = np.random.default_rng(seed).integers(0, x.shape[1], size=(n_boot, x.shape[1]))
    out = {}
    for i, name in enumerate(names):
        r = _against(x, i, [j for j in range(len(names)) if j != i], idx)
        out[name] = {"best_other": names[r.pop("best")], **r}
    return out


def compare_to_references(
    values: Sequence[float | None],
    references: Mapping[str, Sequence[float | None]],
    n_boot: int = N_BOOT,
    seed: int = BOOT_SEED,
) -> dict:
    """One scheduler's per-seed ``values`` against the best of
    ``references`` (e.g. the rules of the learnability suite; the best one
    chosen anew in every resample): ``{best, ratio, ratio_ci, paired,
    paired_ci, n}``, or ``{}`` with fewer than :data:`MIN_SEEDS` common seeds."""
    if not references:
        return {}
    m = _paired_matrix({"\0test": values, **references})
    if m is None:
        return {}
    names, x = m
    idx = np.random.default_rng(seed).integers(0, x.shape[1], size=(n_boot, x.shape[1]))
    r = _against(x, 0, list(range(1, len(names))), idx)
    r["best"] = names[r["best"]]
    return r


def comparisons(summary: Mapping, metric: str) -> dict:
    """:func:`compare_to_best` of ``metric`` for every scenario and app of a
    summary (``report.summarize``): ``{scenario: {app: {scheduler: ...}}}``."""
    out: dict = {}
    for sc, by_app in summary["results"].items():
        for app, by_agent in by_app.items():
            vals = {ag: st[metric]["values"] for ag, st in by_agent.items() if metric in st}
            cmp = compare_to_best(vals)
            if cmp:
                out.setdefault(sc, {})[app] = cmp
    return out


def format_comparison(c: Mapping) -> str:
    """``1.023 [0.98, 1.07] vs rr`` (ratio of medians and its interval)."""
    lo, hi = c["ratio_ci"]
    return f"{c['ratio']:.3f} [{lo:.3f}, {hi:.3f}] vs {c['best_other']}"


__all__ = [
    "compare_to_best",
    "compare_to_references",
    "comparisons",
    "format_comparison",
    "few_runs_warning",
    "no_comparison_reason",
    "MIN_RUNS_FOR_INTERVALS",
    "N_BOOT",
    "BOOT_SEED",
]
