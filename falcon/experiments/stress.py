"""Stress test (paper Fig. 5): relative score per condition-change interval.

    python -m falcon.train experiment=stress
    python -m falcon.train experiment=stress quick=true     # seconds (the quick_variant)

Protocol (keys of ``configs/experiment/stress.yaml``):

1. **Conditions.** ``changes: alternate`` (the default): every path's
   conditions alternate between A (the scenario's own bandwidth, RTT, RTT
   spread and loss) and B (``condition_b``: per path the fields B sets, null
   = as A), ``n_conditions`` (24) of them, A first
   (:func:`alternating_schedules`): a change where the policy best on A is
   poor (checked, step 3), so adapting to it can be seen. ``changes:
   random`` (``experiment=stress_paper``, the paper's): every path gets
   ``n_conditions`` random conditions, each field uniform within ``ranges``
   (default :data:`envs.scenario.TABLE1_RANGES`, the min/max of the Table I
   links), drawn by :func:`envs.scenario.random_condition_schedule` from a
   generator seeded by ``(s, path)`` only. Either way every interval sees the
   same conditions, in the same order, so intervals differ only in how fast
   they change.
2. **Session.** Per (scheduler, interval ``I``, seed): one scheduler object
   (learning persists) and a session clock. Condition ``j`` holds on
   ``[j I, (j + 1) I)`` of the clock (the last one forever). For each
   ``j``, ``downloads_per_condition`` (D) downloads of the app (2 MB) are
   due at ``j I + d I / D``; each starts at ``max(due time, end of the
   previous download)`` and is skipped when that is past the end of its
   condition (so short intervals give back-to-back downloads across many
   changes, at most 24 D downloads). A download is a new connection whose
   scenario carries the session's schedule shifted to its start (its
   first segment = the condition in force at the start), so a download
   longer than what is left of the condition sees the change(s)
   mid-transfer. The clock advances by the download's ``elapsed_s``.
   Schedulers learn only while downloading (the idle time between
   downloads of long intervals carries no traffic), so the experiment
   measures the effect of changes during transfers, not of the 8 s of
   continuous traffic of the paper's longest interval (that would be
   ~500 downloads per session at 2 MB, beyond the budget here).
3. **Reference.** ``reference.kind: best_known`` (with ``changes:
   alternate``): first the check of
   :func:`falcon.experiments.change_reference.best_known` on the static A
   and B (A's best policy must trail the best known on B by ``min_gap``, or
   the job stops with one error line); then every candidate policy (the
   rules and fixed splits of ``reference.best_known``, named
   ``known:<label>``) runs the same sessions, and per interval the one with
   the lowest median is the reference (row ``best_known``, its ``policy``
   named). ``kind: dqn_off`` (the paper's): DQN-Off, trained offline on
   ``reference.dqn_off.collect_episodes`` logged downloads, each on its own
   random static condition drawn from the same ``ranges`` (independent
   draws), then run through the same sessions. Score of an interval = the
   reference's median download time over the interval's downloads (all
   seeds) / the scheduler's median (so the reference scores 1): the paper's
   relative score. Beside it the *paired score*: every scheduler runs the
   very same downloads (seed, condition, download), so the geometric mean
   of the per-download ratios reference time / scheduler time
   (:func:`falcon.experiments.common.paired_score`) compares like with like,
   where a ratio of medians pools conditions of different speeds and moves
   with whichever download sits at the median. A scheduler that trains on a
   condition list (``falcon_modes``) is trained once first
   (:func:`falcon.experiments.generalists.train_generalists`).

The default runs ``seeds: 1`` (24 conditions per interval, as the paper)
and D = 1 to stay within ~10 min on a loaded 2-core machine. M-Peekaboo
learns across downloads (``fresh_per_connection: false``, as in the
convergence job). Outputs: ``stress.json`` (settings, conditions, every
download, scores), ``stress.txt``, ``stress.png`` (score per interval);
MLflow metrics ``score/<scheduler>``, ``paired_score/<scheduler>`` and
``median_time_s/<scheduler>`` with step = interval index (0 = the first of
``intervals_s``) and ``score/<scheduler>/interval_<I>`` per interval.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping

import numpy as np

from baselines.palette import color
from envs.errors import ConfigError
from envs.scenario import SCHEDULE_FIELDS, normalise_scenario, random_condition_schedule
from falcon import report
from falcon.compare import few_runs_warning
from falcon.config import check_int, to_plain
from falcon.experiment import info
from falcon.experiments import change_reference, common
from falcon.experiments.generalists import train_generalists

JOB = "stress"


def path_schedules(
    n_paths: int, interval_s: float, n_conditions: int, seed: int, ranges=None
) -> list[list[dict]]:
    """Per path, the session schedule (``at_s = j * interval_s``); the
    values depend on ``(seed, path)`` only, not on the interval."""
    return [
        random_condition_schedule(
            np.random.default_rng([seed, p]), interval_s, n_conditions, ranges
        )
        for p in range(n_paths)
    ]


CHANGES = ("alternate", "random")


def alternating_schedules(
    scenario: Mapping, condition_b: list, interval_s: float, n_conditions: int
) -> list[list[dict]]:
    """Per path, the session schedule of ``changes: alternate``: condition ``j``
    is A (the scenario's own values of every schedule field) for even ``j``
    and B (A with ``condition_b``'s fields of that path; None: A) for odd ``j``."""
    out = []
    for p, b in zip(scenario["paths"], condition_b, strict=True):
        a = {f: p[f] for f in SCHEDULE_FIELDS}
        both = (a, {**a, **(b or {})})
        out.append([{"at_s": j * interval_s, **both[j % 2]} for j in range(n_conditions)])
    return out


def scenario_b(scenario: Mapping, condition_b: list) -> dict:
    """The static scenario of condition B (the reference's gap check)."""
    paths = [{**p, **(b or {})} for p, b in zip(scenario["paths"], condition_b, strict=True)]
    return normalise_scenario({**scenario, "paths": paths})


def shifted(scenario: Mapping, schedules: list[list[dict]], start_s: float) -> dict:
    """``scenario`` whose paths follow ``schedules`` from session time
    ``start_s`` on (the segment in force at ``start_s`` starts at 0)."""
    s = dict(scenario)
    paths = []
    for p, segs in zip(scenario["paths"], schedules):
        k0 = max(i for i, seg in enumerate(segs) if seg["at_s"] <= start_s + 1e-12)
        out = []
        for i, seg in enumerate(segs[k0:]):
            x = {k: v for k, v in seg.items() if k != "at_s"}
            x["at_s"] = 0.0 if i == 0 else seg["at_s"] - start_s
            out.append(x)
        paths.append({**p, "schedule": out})
    s["paths"] = paths
    return s


def session(
    scheduler,
    scenario: dict,
    schedules,
    interval_s: float,
    n_conditions: int,
    per_condition: int,
    app,
    seed: int,
) -> list[dict]:
    """One session (module docstring, step 2); a record per download."""
    clock = 0.0
    out = []
    k = 0
    for j in range(n_conditions):
        for d in range(per_condition):
            due = (j + d / per_condition) * interval_s
            start = max(due, clock)
            if start >= (j + 1) * interval_s:
                break
            m = common.download(scheduler, shifted(scenario, schedules, start), app, seed + k)
            elapsed = m.get("elapsed_s", m["download_time_s"])
            end = start + elapsed
            changes = sum(1 for i in range(n_conditions) if start < i * interval_s < end)
            out.append(
                {
                    "condition": j,
                    "download": k,
                    "seed": seed + k,
                    "start_s": start,
                    "download_time_s": m["download_time_s"],
                    "elapsed_s": elapsed,
                    "packets": m.get("packets_sent", math.nan),
                    "changes_during": changes,
                    "timed_out": m.get("timed_out", 0.0),
                }
            )
            clock = end
            k += 1
    return out


def reference_scenarios(base: dict, n: int, seed: int, ranges=None) -> list[dict]:
    """``n`` static scenarios, every path on its own random condition of ``ranges``."""
    rng = np.random.default_rng([seed, 777])
    out = []
    for _ in range(n):
        paths = []
        for p in base["paths"]:
            seg = random_condition_schedule(rng, 1.0, 1, ranges)[0]
            paths.append({**p, **{k: v for k, v in seg.items() if k != "at_s"}, "schedule": None})
        out.append(normalise_scenario({**base, "paths": paths}))
    return out


def settings(cfg):
    cfg, sec = common.job_config(cfg, JOB)
    check_int(cfg, "seed", 0)
    sec["seed"] = int(cfg.seed)
    sec["seeds"] = common.check_positive_int(sec, "seeds", 1)
    sec["n_conditions"] = common.check_positive_int(sec, "n_conditions", 24)
    sec["downloads_per_condition"] = common.check_positive_int(sec, "downloads_per_condition", 1)
    ivs = sec.get("intervals_s")
    try:
        sec["intervals_s"] = [float(x) for x in ivs]
    except (TypeError, ValueError):
        raise ConfigError(f"{JOB}.intervals_s: expected a list of seconds, got {ivs!r}") from None
    if not sec["intervals_s"] or min(sec["intervals_s"]) <= 0:
        raise ConfigError(f"{JOB}.intervals_s: expected positive seconds, got {ivs!r}")
    sec["schedulers"] = common.check_schedulers(sec, JOB)
    ranges = sec.get("ranges")
    if ranges is not None:
        if not isinstance(ranges, Mapping) or set(ranges) - set(SCHEDULE_FIELDS):
            raise ConfigError(
                f"{JOB}.ranges: expected {{field: [lo, hi]}} over {list(SCHEDULE_FIELDS)}, "
                f"got {ranges!r}"
            )
        sec["ranges"] = {k: tuple(float(x) for x in v) for k, v in ranges.items()}
    scen = normalise_scenario(to_plain(cfg.scenario))
    for p in scen["paths"]:
        if p.get("trace") or p.get("synthetic"):
            raise ConfigError(
                f"{JOB}: the scenario's paths need constant bandwidths (no trace/synthetic)"
            )
    sec["changes"] = sec.get("changes", "random")
    if sec["changes"] not in CHANGES:
        raise ConfigError(f"{JOB}.changes: expected one of {list(CHANGES)}, got {sec['changes']!r}")
    if sec["changes"] == "alternate":
        sec["condition_b"] = _condition_b(sec.get("condition_b"), len(scen["paths"]))
        scenario_b(scen, sec["condition_b"])  # values in range: one error line now
    else:
        sec.pop("condition_b", None)  # not read: the results record only what the run used
    sec["reference"] = change_reference.check_reference(sec.get("reference"), f"{JOB}.reference")
    if sec["reference"]["kind"] == "dqn_off":
        sec["reference"].pop("runs")  # DQN-Off runs the sessions here, not runs downloads of B
    common.record_train_seed(cfg, sec)
    if sec["reference"]["kind"] == "best_known" and sec["changes"] != "alternate":
        raise ConfigError(
            f"{JOB}.reference.kind: best_known needs changes: alternate (a condition B to know "
            "the best policy of); random changes take kind: dqn_off"
        )
    return cfg, sec, scen, to_plain(cfg.app)


def _condition_b(value, n_paths: int) -> list:
    """``condition_b``: one entry per path, a mapping of schedule fields or null."""
    where = f"{JOB}.condition_b"
    if not isinstance(value, list) or len(value) != n_paths:
        raise ConfigError(f"{where}: expected one entry per path ({n_paths}), got {value!r}")
    out = []
    for i, b in enumerate(value):
        if b is not None and (not isinstance(b, Mapping) or set(b) - set(SCHEDULE_FIELDS)):
            raise ConfigError(
                f"{where}[{i}]: expected null or {{field: value}} over {list(SCHEDULE_FIELDS)}, "
                f"got {b!r}"
            )
        out.append(None if b is None else {k: float(v) for k, v in b.items()})
    return out


def _by_download(recs: list[dict]) -> dict:
    """``{(seed index, condition, download): download time [s]}`` of ``recs``."""
    return {(r["seed_index"], r["condition"], r["download"]): r["download_time_s"] for r in recs}


def _interval_row(
    records: list[dict], name: str, iv: float, vs_best_other, reference: str = common.REFERENCE
) -> dict:
    """Scheduler ``name``'s scores at condition interval ``iv`` [s], against the
    records of ``reference`` (DQN-Off, or the best known policy of the interval)."""
    theirs = [r for r in records if r["scheduler"] == reference and r["interval_s"] == iv]
    mine = [r for r in records if r["scheduler"] == name and r["interval_s"] == iv]
    t = [r["download_time_s"] for r in mine]
    paired, n_pairs = common.paired_score(_by_download(theirs), _by_download(mine))
    return {
        "interval_s": iv,
        "n": len(mine),
        "median_time_s": common.ranked_median(t),
        "score": common.relative_score([r["download_time_s"] for r in theirs], t),
        "paired_score": paired,
        "pairs": n_pairs,
        "downloads_with_change": sum(1 for r in mine if r["changes_during"] > 0),
        "vs_best_other": vs_best_other,
        "policy": name,
    }


def _reference(sec: dict, scenario: dict, app: Mapping, progress: bool):
    """``(players, info)``: the reference's schedulers by name (a fresh one per
    session: ``make(seed)``) and its record. ``dqn_off``: DQN-Off trained on
    logs of random static conditions of ``ranges`` (the paper's), one model
    reused by every session. ``best_known``: every candidate policy of
    :func:`falcon.experiments.change_reference.candidates` (named
    ``known:<label>``), after the check that A's best policy trails the best
    known on the static B by at least ``min_gap``."""
    seed, ref_cfg = sec["seed"], sec["reference"]
    if ref_cfg["kind"] == "dqn_off":
        ref_scen = reference_scenarios(
            scenario,
            common.check_positive_int(ref_cfg, "collect_episodes", 8),
            seed + 900_000,
            sec.get("ranges"),
        )
        ref, train = common.train_reference(ref_scen, app, seed + 900_000, ref_cfg, progress)
        conds = [[{k: p[k] for k in SCHEDULE_FIELDS} for p in s["paths"]] for s in ref_scen]
        return {common.REFERENCE: lambda _s: ref}, {
            "kind": "dqn_off",
            "train": train,
            "train_conditions": conds,
        }
    gate = change_reference.best_known(
        scenario,
        scenario_b(scenario, sec["condition_b"]),
        app,
        ref_cfg,
        seed,
        f"{JOB}.reference",
        progress,
    )
    players = {
        f"known:{label}": (lambda _s, n=name, c=cfg: common.build_agent(n, c, _s))
        for label, (name, cfg) in change_reference.candidates(ref_cfg).items()
    }
    return players, {"kind": "best_known", **{k: v for k, v in gate.items() if k != "times"}}


def _schedules(sec: dict, scenario: dict, interval_s: float, seed: int) -> list[list[dict]]:
    if sec["changes"] == "alternate":
        return alternating_schedules(scenario, sec["condition_b"], interval_s, sec["n_conditions"])
    return path_schedules(
        len(scenario["paths"]), interval_s, sec["n_conditions"], seed, sec.get("ranges")
    )


def _sessions(sec, scenario, app, players, names, progress) -> tuple[list[dict], dict]:
    """Every player's session per seed and interval (module docstring, step 2):
    ``(records, the conditions of each seed)``."""
    seed = sec["seed"]
    records: list[dict] = []
    conditions = {}
    for s in range(sec["seeds"]):
        conditions[s] = _schedules(sec, scenario, 1.0, seed + s)
        for ii, iv in enumerate(sec["intervals_s"]):
            scheds = _schedules(sec, scenario, iv, seed + s)
            dl_seed = seed + 100_000 * (s + 1) + 1_000 * ii
            for name, make in players.items():
                t1 = time.perf_counter()
                sched = make(seed + s)
                if name in names:
                    common.prepare(sched, scenario, app, dl_seed + 500)
                recs = session(
                    sched,
                    scenario,
                    scheds,
                    iv,
                    sec["n_conditions"],
                    sec["downloads_per_condition"],
                    app,
                    dl_seed,
                )
                for r in recs:
                    r.update({"scheduler": name, "interval_s": iv, "seed_index": s})
                records.extend(recs)
                if progress:
                    t = [r["download_time_s"] for r in recs]
                    info(
                        f"{JOB}: seed {s} interval {iv:g} s {name}: {len(recs)} downloads, median "
                        f"{np.nanmedian(t) if np.isfinite(t).any() else math.nan:.3f} s "
                        f"[{time.perf_counter() - t1:.1f} s]"
                    )
    return records, conditions


def run_stress(
    sec: dict, scenario: dict, app: Mapping, bank=None, progress: bool = True, log=None
) -> dict:
    t0 = time.perf_counter()
    players, ref_info = _reference(sec, scenario, app, progress)
    names = [n for n in sec["schedulers"] if n != common.REFERENCE]
    overrides = dict(sec.get("agent_overrides") or {})
    configs = {n: common.agent_config(n, overrides.get(n)) for n in names}
    # a scheduler that trains on a condition list (FALCON on the mode MDP) is trained once
    configs, trained = train_generalists(
        configs, {**sec, "deployed": names, "split": None}, None, progress, JOB
    )
    for n in names:
        players[n] = lambda _s, n=n: common.build_agent(n, configs[n], _s, bank)
    records, conditions = _sessions(sec, scenario, app, players, names, progress)
    refs = {iv: _reference_of(records, players, names, iv) for iv in sec["intervals_s"]}
    ref_info["per_interval"] = {f"{iv:g}": r for iv, r in refs.items()}
    ref_key = reference_label(ref_info)
    ranked = [ref_key, *names]
    scores: dict[str, list[dict]] = {}
    for name in ranked:
        rows = []
        for ii, iv in enumerate(sec["intervals_s"]):
            who = {**{n: n for n in names}, ref_key: refs[iv]}
            versus = _versus_best(records, [who[n] for n in ranked], iv, _by_download)
            row = _interval_row(records, who[name], iv, versus.get(who[name]), refs[iv])
            rows.append(row)
            if log is not None:
                log(
                    {
                        f"score/{name}": row["score"],
                        f"paired_score/{name}": row["paired_score"],
                        f"median_time_s/{name}": row["median_time_s"],
                        f"score/{name}/interval_{iv:g}": row["score"],
                    },
                    step=ii,
                )
        scores[name] = rows
    return {
        "job": JOB,
        "settings": sec,
        "scenario": scenario,
        "app": dict(app),
        "conditions": {str(k): v for k, v in conditions.items()},
        "reference": ref_info,
        "generalists": trained,
        "scores": scores,
        "records": records,
        "wall_s": time.perf_counter() - t0,
    }


def reference_label(ref_info: Mapping) -> str:
    """The reference's row in the scores: ``dqn_off`` or ``best_known``."""
    return common.REFERENCE if ref_info["kind"] == "dqn_off" else "best_known"


def _reference_of(records: list[dict], players: Mapping, names: list[str], iv: float) -> str:
    """The reference's name at interval ``iv``: DQN-Off, or the candidate
    policy with the lowest median over that interval's downloads (the best known)."""
    cands = [p for p in players if p not in names]
    if cands == [common.REFERENCE]:
        return common.REFERENCE

    def median(p):
        t = [r["download_time_s"] for r in records if r["scheduler"] == p and r["interval_s"] == iv]
        m = common.ranked_median(t)
        return math.inf if math.isnan(m) else m

    return min(cands, key=median)


def _versus_best(records: list[dict], names: list[str], iv: float, by_download) -> dict:
    """:func:`falcon.compare.compare_to_best` of the download times at
    interval ``iv``, paired by download (seed, condition, download)."""
    from falcon.compare import compare_to_best

    per = {
        n: by_download([r for r in records if r["scheduler"] == n and r["interval_s"] == iv])
        for n in names
    }
    keys = sorted(set.intersection(*(set(d) for d in per.values()))) if per else []
    return compare_to_best({n: [per[n][k] for k in keys] for n in names})


def table(results: dict) -> str:
    ivs = results["settings"]["intervals_s"]
    rows = [[name, *[r["score"] for r in rows]] for name, rows in results["scores"].items()]
    paired = [
        [name, *[r["paired_score"] for r in rows]] for name, rows in results["scores"].items()
    ]
    times = [
        [name, *[r["median_time_s"] for r in rows]] for name, rows in results["scores"].items()
    ]
    counts = [
        [name, *[f"{r['n']} ({r['downloads_with_change']})" for r in rows]]
        for name, rows in results["scores"].items()
    ]
    versus = [
        [name, *[_fmt_versus(r.get("vs_best_other")) for r in rows]]
        for name, rows in results["scores"].items()
    ]
    head = [f"{iv:g} s" for iv in ivs]
    pairs = [
        r["vs_best_other"]["n"]
        for rs in results["scores"].values()
        for r in rs
        if r.get("vs_best_other")
    ]
    warning = few_runs_warning(min(pairs)) if pairs else None
    ref = "DQN-Off" if results["reference"]["kind"] == "dqn_off" else "the best known policy"
    policies = [r.get("policy", "") for r in results["scores"].get("best_known", [])]
    known = (
        "best known policy per interval (the candidate with the lowest median): "
        + ", ".join(f"{iv:g} s {p.removeprefix('known:')}" for iv, p in zip(ivs, policies))
        + "\n"
        if policies
        else ""
    )
    return (
        known
        + f"relative score per change interval ({ref}'s median / scheduler median)\n"
        + common.format_table(["scheduler", *head], rows)
        + "\npaired score per change interval (geometric mean over the same downloads of "
        f"{ref}'s time / scheduler time)\n"
        + common.format_table(["scheduler", *head], paired)
        + "\nmedian download time [s]\n"
        + common.format_table(["scheduler", *head], times)
        + "\ndownloads (of which spanning a change)\n"
        + common.format_table(["scheduler", *head], counts)
        + "\nmedian time / the best other scheduler's, 95 % bootstrap interval over the paired downloads "
        "(an interval holding 1: the runs cannot tell them apart)\n"
        + common.format_table(["scheduler", *head], versus)
        + (f"\n{warning}\n" if warning else "")
    )


def _fmt_versus(c) -> str:
    if not c:
        return "-"
    lo, hi = c["ratio_ci"]
    return f"{c['ratio']:.3f} [{lo:.3f}, {hi:.3f}]"


def plot(results: dict, path) -> None:
    ivs = results["settings"]["intervals_s"]
    xs = list(range(len(ivs)))
    series = {name: (xs, [r["score"] for r in rows]) for name, rows in results["scores"].items()}
    from baselines.mpl import use_agg

    use_agg()
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    width = 0.8 / max(1, len(series))
    for k, (name, (_, ys)) in enumerate(series.items()):
        ax.bar(
            [x + k * width for x in xs],
            [y if math.isfinite(y) else 0.0 for y in ys],
            width,
            label=name,
            color=color(name),
        )
    ax.axhline(1.0, color="grey", linestyle="--", linewidth=1)
    ax.set_xticks([x + width * (len(series) - 1) / 2 for x in xs])
    ax.set_xticklabels([f"{iv:g}" for iv in ivs])
    ax.set_xlabel("condition change interval [s]")
    ref = "DQN-Off" if results["reference"]["kind"] == "dqn_off" else "best known"
    ax.set_ylabel(f"relative score ({ref} / scheduler)")
    ax.set_title("Stress test: relative score per change interval")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, axis="y")
    report.save_figure(fig, path)


def run_job(cfg) -> dict:
    """``experiment=stress``: the tracked job."""
    cfg, sec, scen, app = settings(cfg)
    return common.run_scheduler_job(
        cfg,
        JOB,
        sec,
        app,
        lambda bank, progress, log: run_stress(sec, scen, app, bank, progress, log),
        table,
        plot,
    )


__all__ = [
    "run_job",
    "run_stress",
    "session",
    "shifted",
    "path_schedules",
    "reference_scenarios",
    "settings",
]
