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


def compare_to_best(values: Mapping[str, Sequence[float | None]], n_boot: int = N_BOOT,
                    seed: int = BOOT_SEED) -> dict[str, dict]:
    """``{scheduler: {best_other, ratio, ratio_ci, paired, paired_ci, n}}``
    for per-seed values of a lower-is-better metric (``None`` or non-finite:
    that seed is left out for everyone). Empty with fewer than two
    schedulers or :data:`MIN_SEEDS` common finite seeds."""
    names = list(values)
    if len(names) < 2:
        return {}
    n = min(len(v) for v in values.values())
    x = np.array([[math.nan if v is None else float(v) for v in values[k][:n]] for k in names], dtype=float)
    ok = np.isfinite(x).all(axis=0) & (x > 0).all(axis=0)
    x = x[:, ok]
    if x.shape[1] < MIN_SEEDS:
        return {}
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, x.shape[1], size=(n_boot, x.shape[1]))
    boot = x[:, idx]                                   # [scheduler, resample, seed]
    med = np.median(x, axis=1)
    boot_med = np.median(boot, axis=2)                 # [scheduler, resample]
    logs = np.log(x)
    boot_logs = logs[:, idx]                           # [scheduler, resample, seed]
    out = {}
    for i, name in enumerate(names):
        others = [j for j in range(len(names)) if j != i]
        best = others[int(np.argmin(med[others]))]
        # in every resample the best other is the one with the lowest median there
        b_best = np.array(others)[np.argmin(boot_med[others], axis=0)]
        cols = np.arange(n_boot)
        ratios = boot_med[i] / boot_med[b_best, cols]
        paired = np.exp((boot_logs[i] - boot_logs[b_best, cols]).mean(axis=1))
        out[name] = {"best_other": names[best], "n": int(x.shape[1]),
                     "ratio": float(med[i] / med[best]),
                     "ratio_ci": [float(v) for v in np.percentile(ratios, [2.5, 97.5])],
                     "paired": float(np.exp((logs[i] - logs[best]).mean())),
                     "paired_ci": [float(v) for v in np.percentile(paired, [2.5, 97.5])]}
    return out


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


__all__ = ["compare_to_best", "comparisons", "format_comparison", "N_BOOT", "BOOT_SEED"]
