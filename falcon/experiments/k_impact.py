"""Impact of K (paper Fig. 8) and of the number of sub-ranges (Fig. 9).

    python -m falcon.train experiment=k_impact
    python -m falcon.train experiment=k_impact quick=true      # seconds (the quick_variant)

**Score vs K.** The convergence protocol (:mod:`falcon.experiments.convergence`,
same conditions A -> B and DQN-Off reference on B) for FALCON only, once
per K in ``ks`` (``finetune_steps``; K = 0: the selected meta-model as
built, zero-shot): per run ``downloads_a`` downloads
on A then ``downloads_b`` on B; score(K) = median DQN-Off time on B /
median FALCON time over the B downloads of all runs (the downloads right
after the change: the ones the K-step fine-tuning acts on). FALCON runs
with ``offline: null`` by default (FALCON-N: the offline loop's T_upd of
10 downloads would not fire within a run anyway, and this keeps every run
on the same bank).

**Minimum K per number of sub-ranges.** For each ``n`` in ``subranges``
the same K sweep runs on a bank whose grid splits every range into ``n``
parts (729 n^6 cells for two paths). ``n = 1`` uses the run's bank
(``bank=`` preset). For ``n > 1`` a full bank is out of reach here (n = 2:
46 656 cells, ~1.7 GB of parameters and ~64x the quick bank's build
time), so :func:`sparse_bank` meta-trains, with the preset's Reptile
settings and seed, only the cells around the conditions the test visits:
the cells of A, of B and of the fallback's prior conditions, plus for
each path the cells one sub-range away along one dimension (a "cross" of
<= 7 path cells per path, <= 49 cells per condition). Every other cell
holds the initial parameters (one shared row, :class:`SparseBank`); the
results record how many selections fell outside the trained cells
(``untrained_selections``). Minimum K of ``n`` = the smallest K whose
score reaches ``min_k_fraction`` of the best score over K for that ``n``.

Outputs: ``k_impact.json``, ``k_impact.txt``, ``k_impact.png`` (score vs K,
one line per n); MLflow metrics ``score/n<n>`` and ``median_time_s/n<n>``
with step = K, and ``min_k/n<n>``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence

import numpy as np

from envs.errors import ConfigError, is_whole_number
from envs.mdp import COMPLETION_UNIT
from falcon.config import to_plain
from falcon.experiment import info
from falcon.experiments import common
from falcon.experiments.convergence import a_then_b, ab_settings
from metalearning.grid import ConditionGrid, PathCondition, conditions_of_scenario

JOB = "k_impact"


class SparseBank:
    """A meta-model bank over a grid too large to hold: the rows of
    ``trained`` cells, every other cell at ``default`` (the initial
    parameters). What :class:`falcon.online.scheduler.FalconScheduler`
    reads of a bank (``grid``, ``spec``, ``reward``, ``reward_unit``, ``select``,
    ``weights``); no offline loop (``params`` is None)."""

    def __init__(
        self,
        grid: ConditionGrid,
        spec,
        trained: Mapping[int, np.ndarray],
        default: np.ndarray,
        reward_unit: str = COMPLETION_UNIT,
    ):
        self.grid = grid
        self.reward_unit = reward_unit
        self.spec = spec
        self.trained = {int(c): np.asarray(r, np.float32) for c, r in trained.items()}
        self.default = np.asarray(default, np.float32)
        self.params = None
        self.meta = {"sparse": True, "trained_cells": sorted(self.trained)}

    @property
    def reward(self) -> str:
        """The MDP of the meta-models (told by their input width, as a bank's)."""
        from envs.mdp import reward_of_inputs

        return reward_of_inputs(self.spec.n_inputs, self.spec.n_actions)

    def select(self, conds: Sequence[PathCondition]) -> int:
        return self.grid.cell_index(conds)

    def weights(self, cell: int) -> list[np.ndarray]:
        from metalearning.bank import split_row

        return split_row(self.trained.get(int(cell), self.default), self.spec)


def cross_cells(grid: ConditionGrid, conds: Sequence[PathCondition]) -> set[int]:
    """The cell of ``conds`` and, per path, the path cells one range index
    away along one dimension (all combinations over the paths)."""
    n_loss, n_rtt, n_dev = grid.n_ranges
    per_path = []
    for c in conds:
        il, ir, idv = grid.range_indices(grid.path_cell(c))
        near = {(il, ir, idv)}
        for d in (-1, 1):
            near |= {(il + d, ir, idv), (il, ir + d, idv), (il, ir, idv + d)}
        per_path.append(
            [
                (a * n_rtt + b) * n_dev + e
                for a, b, e in near
                if 0 <= a < n_loss and 0 <= b < n_rtt and 0 <= e < n_dev
            ]
        )
    cells = {0}
    for pcs in per_path:
        cells = {c * grid.n_path_cells + pc for c in cells for pc in pcs}
    return cells


def sparse_bank(
    bank_cfg: Mapping,
    subranges: int,
    condition_sets: Sequence[Sequence[PathCondition]],
    progress: bool = True,
) -> SparseBank:
    """Meta-train (the preset's Reptile settings and seed) the cross
    neighbourhoods of ``condition_sets`` on a grid with ``subranges`` parts
    per range; the rest at the initial parameters."""
    from metalearning.build import BankBuildSpec
    from metalearning.reptile import initial_params, reptile_cells

    cfg = dict(bank_cfg)
    cfg["grid"] = {**dict(cfg.get("grid") or {}), "subranges": int(subranges)}
    spec = BankBuildSpec.from_config(cfg)
    grid, qspec = spec.grid, spec.qnet_spec
    cells = sorted(set().union(*(cross_cells(grid, c) for c in condition_sets)))
    t0 = time.perf_counter()
    rows = reptile_cells(cells, grid, qspec, spec.dqn, spec.reptile, spec.seed)
    if progress:
        info(
            f"{JOB}: sparse bank n={subranges}: {len(cells)} of {grid.n_cells} cells meta-trained "
            f"({spec.reptile.meta_iterations} meta-iterations) [{time.perf_counter() - t0:.1f} s]"
        )
    return SparseBank(
        grid,
        qspec,
        dict(zip(cells, rows)),
        initial_params(qspec, spec.seed),
        spec.reptile.reward_unit,
    )


def min_k(ks: Sequence[int], scores: Sequence[float], fraction: float) -> int | None:
    """Smallest K whose score reaches ``fraction`` x the best score (None: no finite score)."""
    fin = [s for s in scores if math.isfinite(s)]
    if not fin:
        return None
    best = max(fin)
    for k, s in zip(ks, scores):
        if math.isfinite(s) and s >= fraction * best:
            return int(k)
    return None


def settings(cfg):
    cfg, sec = common.job_config(cfg, JOB)
    sec, scen_a, scen_b, app = ab_settings(cfg, sec, JOB)
    ks = sec.get("ks")
    if not isinstance(ks, list) or not ks or any(not is_whole_number(k, 0) for k in ks):
        raise ConfigError(
            f"{JOB}.ks: expected a list of non-negative integers (0: zero-shot), got {ks!r}"
        )
    subs = sec.get("subranges") or [1]
    if not isinstance(subs, list) or any(not is_whole_number(n, 1) for n in subs):
        raise ConfigError(f"{JOB}.subranges: expected a list of positive integers, got {subs!r}")
    frac = float(sec.get("min_k_fraction", 0.95))
    if not 0 < frac <= 1:
        raise ConfigError(f"{JOB}.min_k_fraction: expected a fraction in (0, 1], got {frac}")
    sec.update(
        {"ks": [int(k) for k in ks], "subranges": [int(n) for n in subs], "min_k_fraction": frac}
    )
    sec.setdefault("agent", "falcon")
    return cfg, sec, scen_a, scen_b, app


def run_k_impact(
    sec: dict, scen_a: dict, scen_b: dict, app: Mapping, bank_for, progress: bool = True, log=None
) -> dict:
    """``bank_for(n)`` gives the bank of ``n`` sub-ranges."""
    t0 = time.perf_counter()
    seed = sec["seed"]
    ref_cfg = dict(sec.get("reference") or {})
    ref, ref_info = common.train_reference([scen_b], app, seed + 900_000, ref_cfg, progress)
    ref_runs = common.check_positive_int(ref_cfg, "runs", 20)
    ref_times = common.reference_times(
        ref, scen_b, app, [seed + 800_000 + i for i in range(ref_runs)]
    )
    ref_median = common.ranked_median(ref_times)
    base_cfg = common.agent_config(
        sec["agent"], (sec.get("agent_overrides") or {}).get(sec["agent"])
    )
    curves, records, banks = {}, [], {}
    for n in sec["subranges"]:
        bank = bank_for(n)
        trained = getattr(bank, "trained", None)
        banks[n] = {
            "cells": int(bank.grid.n_cells),
            "sparse": trained is not None,
            "trained_cells": len(trained) if trained is not None else int(bank.grid.n_cells),
        }
        rows = []
        for k in sec["ks"]:
            t1 = time.perf_counter()
            acfg = {**base_cfg, "finetune_steps": int(k)}
            times, selections, untrained = [], 0, 0
            for run in range(sec["runs"]):
                sched = common.build_agent(sec["agent"], acfg, seed + run, bank)
                base_seed = seed + 10_000 * (run + 1)
                recs = a_then_b(
                    sched, scen_a, scen_b, app, sec["downloads_a"], sec["downloads_b"], base_seed
                )
                for r in recs:
                    r.update({"subranges": n, "k": k, "run": run})
                records.extend(recs)
                times += [r["download_time_s"] for r in recs if r["phase"] == "B"]
                cells = [e.cell for e in sched.events if e.cell is not None]
                selections += len(cells)
                if trained is not None:
                    untrained += sum(1 for c in cells if c not in trained)
            row = {
                "k": int(k),
                "n": len(times),
                "median_time_s": common.ranked_median(times),
                "score": common.relative_score(ref_times, times),
                "selections": selections,
                "untrained_selections": untrained,
            }
            rows.append(row)
            if log is not None:
                log(
                    {f"score/n{n}": row["score"], f"median_time_s/n{n}": row["median_time_s"]},
                    step=int(k),
                )
            if progress:
                info(
                    f"{JOB}: n={n} K={k}: score {row['score']:.3f} (median {row['median_time_s']:.3f} s, "
                    f"{len(times)} downloads) [{time.perf_counter() - t1:.1f} s]"
                )
        mk = min_k(sec["ks"], [r["score"] for r in rows], sec["min_k_fraction"])
        curves[n] = {"rows": rows, "min_k": mk}
        if log is not None and mk is not None:
            log({f"min_k/n{n}": float(mk)})
    return {
        "job": JOB,
        "settings": sec,
        "scenario_a": scen_a,
        "scenario_b": scen_b,
        "app": dict(app),
        "reference": {"median_time_s": ref_median, "times": ref_times, "train": ref_info},
        "banks": {str(n): b for n, b in banks.items()},
        "curves": {str(n): c for n, c in curves.items()},
        "records": records,
        "wall_s": time.perf_counter() - t0,
    }


def table(results: dict) -> str:
    rows = []
    for n, c in results["curves"].items():
        for r in c["rows"]:
            rows.append(
                [
                    n,
                    r["k"],
                    r["n"],
                    r["median_time_s"],
                    r["score"],
                    f"{r['untrained_selections']}/{r['selections']}",
                ]
            )
    mins = [
        [
            n,
            c["min_k"] if c["min_k"] is not None else "-",
            results["banks"][n]["trained_cells"],
            results["banks"][n]["cells"],
        ]
        for n, c in results["curves"].items()
    ]
    frac = results["settings"]["min_k_fraction"]
    return (
        f"relative score after the change (DQN-Off median on B "
        f"{results['reference']['median_time_s']:.3f} s / FALCON median on B) vs K\n"
        + common.format_table(
            ["subranges", "K", "downloads", "median time s", "score", "untrained sel."], rows
        )
        + f"\nminimum K (score >= {frac:g} x the best over K)\n"
        + common.format_table(["subranges", "min K", "trained cells", "cells"], mins)
    )


def plot(results: dict, path) -> None:
    series = {
        f"n = {n} sub-range(s)": ([r["k"] for r in c["rows"]], [r["score"] for r in c["rows"]])
        for n, c in results["curves"].items()
    }
    common.plot_series(
        path,
        series,
        xlabel="K (fine-tuning steps)",
        ylabel="relative score (DQN-Off / FALCON)",
        title="Impact of K after a change",
        logx=True,
        xticks=results["settings"]["ks"],
        schedulers=False,
    )


def run_job(cfg) -> dict:
    """``experiment=k_impact``: the tracked job."""
    cfg, sec, scen_a, scen_b, app = settings(cfg)
    progress = bool(cfg.get("progress", True))

    def bank_for(n: int):
        if n == 1:
            return common.experiment_bank(cfg, progress)
        from falcon.bank_job import bank_config

        bcfg = bank_config(to_plain(cfg.get("bank")) or "quick")
        acfg = common.agent_config(
            sec["agent"], (sec.get("agent_overrides") or {}).get(sec["agent"])
        )
        prior = [
            PathCondition(float(p["loss"]), float(p["rtt_ms"]), float(p["rtt_std_ms"]))
            for p in acfg.get("prior_conditions") or []
        ]
        sets = [conditions_of_scenario(scen_a), conditions_of_scenario(scen_b)]
        if len(prior) == len(sets[0]):
            sets.append(prior)
        return sparse_bank(bcfg, n, sets, progress)

    def body(tracker, folder):
        return common.publish(
            tracker,
            folder,
            JOB,
            run_k_impact(sec, scen_a, scen_b, app, bank_for, progress, tracker.log_metrics),
            table,
            plot,
        )

    return common.run_tracked(
        cfg, JOB, {"k_impact": sec, "app": app, "bank": to_plain(cfg.get("bank"))}, body
    )


__all__ = [
    "run_job",
    "run_k_impact",
    "SparseBank",
    "sparse_bank",
    "cross_cells",
    "min_k",
    "settings",
]
