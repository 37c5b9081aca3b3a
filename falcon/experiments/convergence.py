"""Convergence after a change (paper Fig. 3 and Fig. 4): relative score vs online packets.

    python -m falcon.train experiment=convergence             # default budget (~10 min on 2 cores)
    python -m falcon.train experiment=convergence quick=true  # seconds (the quick_variant)

Protocol (every number is a key of ``configs/experiment/convergence.yaml``):

1. **Conditions.** A = the run's scenario (default Table I 4G + 5G) with
   ``condition_a`` per-path overrides; B = the same links with
   ``condition_b`` (default: the 4G path turns into the outage-prone
   stretch of a 5G drive, a train-split trace; the 5G path stays).
2. **Reference** (:mod:`falcon.experiments.change_reference`). Default
   ``kind: best_known``: every candidate policy (rules and fixed splits)
   runs ``runs`` downloads on A and on B; the one with the lowest median on
   B is the *best known*, its times are the numerator of every score; the
   policy best on A must be at least ``min_gap`` (20 %) behind it on B, or
   the job stops (a change A's policy already handles cannot show
   adaptation: on the paper's B, 80 +- 40 ms and 2 % loss on the 4G path,
   M-Peekaboo scored 0.99 and FALCON 0.93 on the first download after the
   change). ``kind: dqn_off`` (``experiment=convergence_paper``, with the
   paper's B): DQN-Off trained offline on logs of B, as the paper.
3. **Runs.** For each of ``runs`` runs and each scheduler of
   ``schedulers``: a fresh scheduler (agent config + ``agent_overrides``,
   seed = ``seed + run``); DQN-On(N)/(W) first buffer their nearby
   conditions of B (+-3 %, +-6 %) and pre-train; then ``downloads_a``
   downloads on A, then ``downloads_b`` downloads on B, the learner
   persisting across all of them (a new connection per download: fresh
   congestion state, as the paper resets state before every request, so
   the change A -> B is seen at the first connection on B; FALCON detects
   it through its estimation window at the connection start, the bandit
   through its change detector / continued learning). Download seeds are
   the same for every scheduler of a run.
4. **Online packets.** For download ``i`` on B, x = packets sent on B
   before it (0 for the first). Downloads are pooled over runs into bins
   ``[0, lo)`` then ``per_decade`` log bins up to ``hi``
   (:func:`~falcon.experiments.common.log_bin_edges`); the score of a bin
   = the reference's median time on B / median time of the scheduler's downloads in
   the bin. With 2 MB downloads (~1 550 packets each) x takes the values
   0, ~1.5e3, ~3e3, ...: the bins between 1e2 and 1e3 stay empty, the
   first bin holds the first download after the change (adaptation
   included), and the largest x reached is about ``(downloads_b - 1) x
   1 550`` (the default stops near 1e4; the paper's axis reaches 1e5,
   which needs ~65 downloads per run: set ``downloads_b`` accordingly).

M-Peekaboo's agent config starts every connection from a fresh model
(``fresh_per_connection: true``); here it is overridden to false, so that
it learns across downloads like the others (otherwise it could not
converge past one download). Outputs: ``convergence.json`` (settings,
reference, per-bin scores, every download), ``convergence.txt`` (the
table), ``convergence.png`` (score vs packets); MLflow metrics
``score/<scheduler>`` and ``median_time_s/<scheduler>`` with step = the
bin's centre in packets, and ``packets_to_target/<scheduler>``: the online
packets on B after which the score stays at least ``target_score`` (0.9,
:func:`packets_to_target`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping

import numpy as np

from envs.errors import ConfigError
from envs.scenario import normalise_scenario
from falcon.config import check_int, to_plain
from falcon.experiment import info
from falcon.experiments import change_reference, common
from falcon.experiments.generalists import train_generalists

JOB = "convergence"


def a_then_b(
    scheduler, scen_a, scen_b, app, downloads_a: int, downloads_b: int, seed: int
) -> list[dict]:
    """``downloads_a`` downloads on A then ``downloads_b`` on B with one
    scheduler (seeds ``seed + i`` on A, ``seed + 100 + i`` on B). One record
    per download: phase, index, seed, ``packets_before`` (online packets on
    the same condition before it), ``packets``, ``download_time_s``,
    ``timed_out`` and FALCON's counters when it has them."""
    out = []
    for phase, scen, n, base in (
        ("A", scen_a, downloads_a, seed),
        ("B", scen_b, downloads_b, seed + 100),
    ):
        packets = 0.0
        for i in range(n):
            m = common.download(scheduler, scen, app, base + i)
            rec = {
                "phase": phase,
                "index": i,
                "seed": base + i,
                "packets_before": packets,
                "packets": m.get("packets_sent", math.nan),
                "download_time_s": m["download_time_s"],
                "timed_out": m.get("timed_out", 0.0),
            }
            for k in ("adaptations", "deployments", "changes", "kept"):
                if k in m:
                    rec[k] = m[k]
            out.append(rec)
            packets += m.get("packets_sent", 0.0)
    return out


def bin_scores(records: list[dict], edges: list[float], ref_times: list[float]) -> list[dict]:
    """Per bin of ``packets_before``: the downloads on B in it, their median
    time, and the relative score against ``ref_times``."""
    groups: dict[int, list[dict]] = {}
    for r in records:
        if r["phase"] != "B":
            continue
        b = common.bin_of(r["packets_before"], edges)
        if b is not None:
            groups.setdefault(b, []).append(r)
    rows = []
    for b in range(len(edges) - 1):
        rs = groups.get(b, [])
        times = [r["download_time_s"] for r in rs]
        rows.append(
            {
                "bin": b,
                "lo": edges[b],
                "hi": edges[b + 1],
                "centre": common.bin_centre(edges, b),
                "n": len(rs),
                "median_packets": float(np.median([r["packets_before"] for r in rs]))
                if rs
                else math.nan,
                "median_time_s": common.ranked_median(times),
                "score": common.relative_score(ref_times, times),
            }
        )
    return rows


def ab_settings(cfg, sec: dict, where: str = JOB) -> tuple[dict, dict, dict, dict]:
    """Validate the A -> B keys of a job section (``runs`` and ``seed`` from
    the run's config); ``(section, scenario A, scenario B, app)``."""
    check_int(cfg, "runs", 1)
    check_int(cfg, "seed", 0)
    sec["runs"], sec["seed"] = int(cfg.runs), int(cfg.seed)
    sec["downloads_a"] = common.check_positive_int(sec, "downloads_a", lo=0)
    sec["downloads_b"] = common.check_positive_int(sec, "downloads_b")
    base = to_plain(cfg.scenario)
    try:
        scen_a = normalise_scenario(common.with_conditions(base, sec.get("condition_a")))
        scen_b = normalise_scenario(common.with_conditions(base, sec.get("condition_b")))
    except ConfigError as e:
        raise ConfigError(f"{where}: {e}") from None
    return sec, scen_a, scen_b, to_plain(cfg.app)


def settings(cfg):
    """Validated ``(cfg, section, scenario A, scenario B, app)`` of the job."""
    cfg, sec = common.job_config(cfg, JOB)
    sec, scen_a, scen_b, app = ab_settings(cfg, sec)
    sec["schedulers"] = common.check_schedulers(sec, JOB)
    bins = dict(sec.get("bins") or {})
    sec["bin_edges"] = common.log_bin_edges(
        bins.get("lo", 100), bins.get("hi", 1e5), bins.get("per_decade", 2)
    )
    target = sec.get("target_score")
    if isinstance(target, bool) or not isinstance(target, (int, float)) or not target > 0:
        raise ConfigError(f"{JOB}.target_score: expected a positive relative score, got {target!r}")
    sec["target_score"] = float(target)
    sec["reference"] = change_reference.check_reference(sec.get("reference"), f"{JOB}.reference")
    common.record_train_seed(cfg, sec)
    return cfg, sec, scen_a, scen_b, app


def packets_to_target(curve: list[dict], target: float) -> float:
    """Online packets on B after which the scheduler stays at ``target``:
    the median packets-before of the first populated bin from which every
    populated bin scores at least ``target`` (0 = already on the first
    download after the change); NaN if the last populated bin is below it."""
    rows = [r for r in curve if r["n"]]
    out = math.nan
    for r in reversed(rows):
        if not r["score"] >= target:
            break
        out = r["median_packets"]
    return out


def first_score(curve: list[dict]) -> float:
    """The score of the first populated bin: the downloads right after the change."""
    return next((r["score"] for r in curve if r["n"]), math.nan)


def _runs(sec, configs, scen_a, scen_b, app, bank, progress) -> list[dict]:
    """Every scheduler's ``runs`` runs of A then B (module docstring, step 3); the records."""
    seed, records = sec["seed"], []
    for name in sec["schedulers"]:
        acfg = configs[name]
        for run in range(sec["runs"]):
            t1 = time.perf_counter()
            sched = common.build_agent(name, acfg, seed + run, bank)
            base_seed = seed + 10_000 * (run + 1)
            common.prepare(sched, scen_b, app, base_seed + 5_000)
            recs = a_then_b(
                sched, scen_a, scen_b, app, sec["downloads_a"], sec["downloads_b"], base_seed
            )
            for r in recs:
                r.update({"scheduler": name, "run": run})
            records.extend(recs)
            if progress:
                b = [r["download_time_s"] for r in recs if r["phase"] == "B"]
                info(
                    f"{JOB}: {name} run {run + 1}/{sec['runs']}: B downloads {np.round(b, 3).tolist()} s "
                    f"[{time.perf_counter() - t1:.1f} s]"
                )
    return records


def run_convergence(
    sec: dict, scen_a: dict, scen_b: dict, app: Mapping, bank=None, progress: bool = True, log=None
) -> dict:
    """The experiment (module docstring) without tracking; returns the results."""
    t0 = time.perf_counter()
    seed = sec["seed"]
    ref = change_reference.reference(
        scen_a, scen_b, app, sec["reference"], seed, f"{JOB}.reference", progress
    )
    ref_times = ref["times"]
    overrides = dict(sec.get("agent_overrides") or {})
    configs = {n: common.agent_config(n, overrides.get(n)) for n in sec["schedulers"]}
    # a scheduler that trains on a condition list (FALCON on the mode MDP) is trained once
    configs, trained = train_generalists(
        configs, {**sec, "deployed": sec["schedulers"], "split": None}, None, progress, JOB
    )
    records = _runs(sec, configs, scen_a, scen_b, app, bank, progress)
    edges = sec["bin_edges"]
    curves = {}
    for name in sec["schedulers"]:
        rows = bin_scores([r for r in records if r["scheduler"] == name], edges, ref_times)
        curves[name] = rows
        if log is not None:
            for row in rows:
                if row["n"]:
                    log(
                        {
                            f"score/{name}": row["score"],
                            f"median_time_s/{name}": row["median_time_s"],
                        },
                        step=int(round(row["centre"])),
                    )
    target = sec["target_score"]
    to_target = {name: packets_to_target(curve, target) for name, curve in curves.items()}
    if log is not None:
        log({f"packets_to_target/{name}": v for name, v in to_target.items()})
    # per run, the median time on B: shows whether a pooled median hides a bimodal spread of runs
    run_medians = {
        name: [
            common.ranked_median(
                [
                    r["download_time_s"]
                    for r in records
                    if r["scheduler"] == name and r["run"] == run and r["phase"] == "B"
                ]
            )
            for run in range(sec["runs"])
        ]
        for name in sec["schedulers"]
    }
    return {
        "job": JOB,
        "settings": sec,
        "scenario_a": scen_a,
        "scenario_b": scen_b,
        "app": dict(app),
        "reference": ref,
        "start_scores": {name: first_score(curve) for name, curve in curves.items()},
        "curves": curves,
        "packets_to_target": to_target,
        "run_medians_b_s": run_medians,
        "records": records,
        "generalists": trained,
        "wall_s": time.perf_counter() - t0,
    }


def table(results: dict) -> str:
    rows = []
    for name, curve in results["curves"].items():
        for r in curve:
            if r["n"]:
                rows.append(
                    [
                        name,
                        f"[{r['lo']:.0f}, {r['hi']:.0f})",
                        r["n"],
                        r["median_packets"],
                        r["median_time_s"],
                        r["score"],
                    ]
                )
    ref = results["reference"]
    head = (
        f"relative score = {ref.get('policy', 'dqn_off')} median on B ({ref['median_time_s']:.3f} s) / "
        "median in the bin; x = online packets on B before the download\n"
    )
    if "a_policy" in ref:
        head += (
            f"A's best policy ({ref['a_policy']}) is {ref['a_policy_gap']:.0%} behind the best "
            "known on B\n"
        )
    runs = [
        [name, " ".join(f"{t:.2f}" for t in ts)]
        for name, ts in results.get("run_medians_b_s", {}).items()
    ]
    target = results["settings"].get("target_score")
    reach = [[name, v] for name, v in results.get("packets_to_target", {}).items()]
    return (
        head
        + common.format_table(
            ["scheduler", "packets bin", "n", "median packets", "median time s", "score"], rows
        )
        + f"\nonline packets on B after which the score stays >= {target} (-: not reached)\n"
        + common.format_table(["scheduler", "packets"], reach)
        + "\nper run: median download time on B [s]\n"
        + common.format_table(["scheduler", "runs"], runs)
    )


def plot(results: dict, path) -> None:
    series = {
        name: ([r["centre"] for r in c if r["n"]], [r["score"] for r in c if r["n"]])
        for name, c in results["curves"].items()
    }
    common.plot_series(
        path,
        series,
        xlabel="online packets on the new condition (before the download)",
        ylabel=f"relative score ({results['reference'].get('policy', 'dqn_off')} on B / scheduler)",
        title="Convergence after a change",
        logx=True,
    )


def run_job(cfg) -> dict:
    """``experiment=convergence``: the tracked job."""
    cfg, sec, scen_a, scen_b, app = settings(cfg)
    return common.run_scheduler_job(
        cfg,
        JOB,
        sec,
        app,
        lambda bank, progress, log: run_convergence(sec, scen_a, scen_b, app, bank, progress, log),
        table,
        plot,
    )


__all__ = ["run_job", "run_convergence", "a_then_b", "bin_scores", "settings", "ab_settings"]
