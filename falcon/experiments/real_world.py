"""The "real world" protocol (paper Sec. VII, Fig. 7): five days on held-out real traces.

    python -m falcon.train experiment=real_world
    python -m falcon.train experiment=real_world quick=true     # seconds (the quick_variant)

The paper ran its schedulers over 5G + WLAN (static) and 4G + 5G (driving)
on five consecutive afternoons; the data behind FALCON's meta-models and
DQN-Off had been collected five days earlier, in the morning; FALCON ran
its offline update at the end of each day, FALCON-N never. Here real
networks are replaced by real traces replayed in the emulator, and the
protocol is kept (keys of ``configs/experiment/real_world.yaml``):

1. **Traces.** Each *setting* (``settings.<name>``) names a base scenario
   preset and, per path, ``train`` trace files (the morning) and ``test``
   files (the afternoons, never seen before day 1); the other keys of a
   path entry (``trace_delay``, ...) are path keys of the scenario. A path's
   ``test`` is one file, cut into ``days`` equal segments in trace time
   (day ``d`` = segment ``d``), or at least ``days`` files (day ``d`` = file
   ``d``, e.g. repeated trials at one place).
2. **Downloads.** Day ``d``'s download ``i`` starts every path's trace at a
   point drawn uniformly within the day's segment (or file) from a
   generator seeded by ``(seed, setting, d, i)``, and uses download seed
   ``seed + 10_000 (d + 1) + i``: every scheduler sees the same trace
   stretches and the same random draws.
3. **Before day 1** (the morning, on the ``train`` traces, trace starts
   drawn the same way over the whole files): DQN-Off is trained offline on
   ``reference.collect_episodes`` logged downloads (as every FALCON
   experiment's reference); the ``morning.agent`` (FALCON) runs
   ``morning.downloads`` downloads and performs one offline update. Every
   FALCON variant (an agent config with a ``bank``) then starts from that
   bank, so FALCON and FALCON-N are identical on day 1.
4. **Days.** Each day is a session of its own: every scheduler starts the
   day as a new object (``persist_across_days: false``), as a client
   started on the next afternoon would, and learns across the day's
   downloads (M-Peekaboo too). What survives the night is what a scheduler
   writes: FALCON's bank, folded at the end of each day by its offline
   update, which is the only one it performs (its own T_upd is set beyond
   the session: :func:`day_end_only`); FALCON-N keeps the morning bank.
   DQN-Off is the same model every day. ``persist_across_days: true``
   keeps one object per scheduler through the five days instead (then
   FALCON's in-memory model, fine-tuned and continually trained, also
   survives; the updated bank only matters when it selects another cell).

Results per (setting, scheduler, day): mean and median download time (the
paper plots the mean), and per setting the gain of FALCON over FALCON-N and
over M-Peekaboo, ``1 - mean(FALCON) / mean(other)`` over all days. Outputs:
``real_world.json`` (settings, trace starts, every download, summaries),
``real_world.txt``, ``real_world.png`` (mean download time per day, one
panel per setting); MLflow metrics ``mean_time_s/<setting>/<scheduler>``
with step = day (0-based) and ``gain/<setting>/<a>_vs_<b>``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence

import numpy as np

from baselines.palette import color
from envs.errors import ConfigError, check_flag
from envs.scenario import normalise_scenario
from falcon import report
from falcon.config import check_int, load_group, to_plain
from falcon.experiment import info
from falcon.experiments import common

JOB = "real_world"
#: keys of a setting's path entry that are not scenario path keys
_TRACE_KEYS = ("train", "test")
#: the gains reported per setting: (scheduler, against)
GAINS = (("falcon", "falcon_n"), ("falcon", "mpeekaboo"), ("falcon_n", "mpeekaboo"))


# ---------------------------------------------------------------- traces and scenarios
def _period_s(file: str) -> float:
    from envs.traces import load_trace

    return float(load_trace(file).capacity.period)


def check_setting(name: str, setting, days: int) -> dict:
    """A setting's plain config, checked: ``{"scenario": preset, "paths": [...]}``
    with every path's ``train`` and ``test`` as lists of trace files."""
    if not isinstance(setting, Mapping):
        raise ConfigError(
            f"{JOB}.settings.{name}: expected a mapping with scenario and paths, got {setting!r}"
        )
    paths = setting.get("paths")
    if not isinstance(paths, list) or not paths:
        raise ConfigError(f"{JOB}.settings.{name}.paths: expected a list of per-path trace entries")
    out = []
    for i, p in enumerate(paths):
        where = f"{JOB}.settings.{name}.paths[{i}]"
        if not isinstance(p, Mapping):
            raise ConfigError(
                f"{where}: expected a mapping with train and test trace files, got {p!r}"
            )
        p = dict(p)
        for key in _TRACE_KEYS:
            files = p.get(key)
            if isinstance(files, str):
                files = [files]
            if (
                not isinstance(files, list)
                or not files
                or not all(isinstance(f, str) for f in files)
            ):
                raise ConfigError(
                    f"{where}.{key}: expected a list of trace files, got {p.get(key)!r}"
                )
            p[key] = files
        if len(p["test"]) != 1 and len(p["test"]) < days:
            raise ConfigError(
                f"{where}.test: {len(p['test'])} files for {days} days; give one file (cut into "
                f"the days) or at least one per day"
            )
        out.append(p)
    return {"scenario": str(setting.get("scenario") or "static_4g_5g"), "paths": out}


def base_scenario(setting: Mapping) -> dict:
    """The setting's scenario preset as a plain (not normalised) dict."""
    scen = to_plain(load_group("scenario", setting["scenario"]))
    if len(scen["paths"]) != len(setting["paths"]):
        raise ConfigError(
            f"{JOB}: scenario {setting['scenario']!r} has {len(scen['paths'])} paths, the setting "
            f"gives traces for {len(setting['paths'])}"
        )
    return scen


def trace_windows(files: Sequence[str], days: int | None) -> list[tuple[str, float, float]]:
    """``(file, lo_s, hi_s)`` windows of trace time: with ``days`` None, one
    per file over the whole file (the morning); else one per day: segment
    ``d`` of a single file, or file ``d`` whole."""
    if days is None:
        return [(f, 0.0, _period_s(f)) for f in files]
    if len(files) == 1:
        period = _period_s(files[0])
        return [(files[0], d * period / days, (d + 1) * period / days) for d in range(days)]
    return [(f, 0.0, _period_s(f)) for f in files[:days]]


def scenario_at(
    base: Mapping, setting: Mapping, windows: Sequence[tuple[str, float, float]], rng
) -> tuple[dict, list]:
    """The normalised scenario whose path ``p`` replays ``windows[p]``'s
    file from a start drawn uniformly in its window; also the
    ``(file, start_s)`` per path."""
    paths, starts = [], []
    for raw, entry, (file, lo, hi) in zip(base["paths"], setting["paths"], windows):
        start = float(rng.uniform(lo, hi))
        keys = {k: v for k, v in entry.items() if k not in _TRACE_KEYS}
        paths.append(
            {
                **dict(raw),
                **keys,
                "bandwidth_mbps": None,
                "synthetic": None,
                "schedule": None,
                "trace": {"file": file},
                "trace_start_s": start,
            }
        )
        starts.append({"file": file, "start_s": start})
    return normalise_scenario({**dict(base), "paths": paths}), starts


def morning_scenarios(base, setting, n: int, seed: int, tag: int) -> list[dict]:
    """``n`` scenarios on the setting's ``train`` traces (download ``j``:
    file ``j`` modulo the path's files, a random start)."""
    wins = [trace_windows(p["train"], None) for p in setting["paths"]]
    out = []
    for j in range(n):
        rng = np.random.default_rng([seed, tag, 0, j])
        out.append(scenario_at(base, setting, [w[j % len(w)] for w in wins], rng)[0])
    return out


def day_plan(
    base, setting, days: int, per_day: int, seed: int, tag: int
) -> list[list[tuple[dict, list, int]]]:
    """Per day, ``per_day`` ``(scenario, trace starts, download seed)`` on the ``test`` traces."""
    wins = [trace_windows(p["test"], days) for p in setting["paths"]]
    plan = []
    for d in range(days):
        day = []
        for i in range(per_day):
            rng = np.random.default_rng([seed, tag, d + 1, i])
            scen, starts = scenario_at(base, setting, [w[d] for w in wins], rng)
            day.append((scen, starts, seed + 10_000 * (d + 1) + i))
        plan.append(day)
    return plan


# ---------------------------------------------------------------- schedulers
def day_end_only(cfg: dict, n_downloads: int) -> dict:
    """An agent config whose offline loop (if any) never falls due by itself
    within ``n_downloads`` episodes: the job triggers it at the end of each day."""
    if not common.offline_enabled(cfg):
        return cfg
    return {
        **cfg,
        "offline": {**cfg["offline"], "interval_s": None, "interval_episodes": n_downloads + 1},
    }


def morning_bank(
    bank,
    agent: str,
    overrides: Mapping | None,
    scenarios: Sequence[dict],
    app,
    seed: int,
    progress: bool = True,
):
    """The bank after ``agent`` (a FALCON config with an offline loop) ran
    ``scenarios`` and performed one offline update; with no scenarios,
    ``bank`` as is. Returns ``(bank, record of the update or None)``."""
    if not scenarios:
        return bank, None
    cfg = common.agent_config(agent, overrides)
    if "bank" not in cfg or not common.offline_enabled(cfg):
        raise ConfigError(
            f"{JOB}.morning.agent: {agent!r} is not a FALCON config with an offline loop"
        )
    sched = common.build_agent(agent, day_end_only(cfg, len(scenarios)), seed, bank)
    t0 = time.perf_counter()
    for j, s in enumerate(scenarios):
        common.download(sched, s, app, seed + j)
    rec = sched.offline.update("morning")
    if progress:
        info(
            f"{JOB}: morning: {agent} ran {len(scenarios)} downloads; offline update of {len(rec['cells'])} "
            f"cells ({rec['transitions']} transitions) [{time.perf_counter() - t0:.1f} s]"
        )
    return sched.bank, rec


# ---------------------------------------------------------------- the job
def settings(cfg):
    cfg, sec = common.job_config(cfg, JOB)
    check_int(cfg, "seed", 0)
    sec["seed"] = int(cfg.seed)
    sec["days"] = common.check_positive_int(sec, "days", 5)
    sec["downloads_per_day"] = common.check_positive_int(sec, "downloads_per_day", 10)
    persist = sec.get("persist_across_days", False)
    sec["persist_across_days"] = check_flag(persist, f"{JOB}.persist_across_days")
    sec["schedulers"] = common.check_schedulers(sec, JOB)
    morning = dict(sec.get("morning") or {})
    morning["agent"] = str(morning.get("agent") or "falcon")
    morning["downloads"] = common.check_positive_int(morning, "downloads", 20, lo=0)
    sec["morning"] = morning
    raw = sec.get("settings")
    if not isinstance(raw, Mapping) or not raw:
        raise ConfigError(f"{JOB}.settings: expected a mapping of named settings, got {raw!r}")
    sec["settings"] = {str(k): check_setting(str(k), v, sec["days"]) for k, v in raw.items()}
    return cfg, sec, to_plain(cfg.app)


def _summary(times: Sequence[float]) -> dict:
    t = np.asarray(times, float)
    fin = t[np.isfinite(t)]
    return {
        "n": int(len(t)),
        "unfinished": int(len(t) - len(fin)),
        "mean_time_s": float(fin.mean()) if len(fin) else math.nan,
        "median_time_s": common.ranked_median(t),
    }


def _download_day(sched, day: list, app: Mapping, name: str, sname: str, d: int) -> list[dict]:
    """One record per download of ``day`` (``(scenario, trace starts, seed)`` each), run by
    ``sched`` in order; ``d``: the day's index from 0."""
    records = []
    for i, (scen, starts, dl_seed) in enumerate(day):
        m = common.download(sched, scen, app, dl_seed)
        records.append(
            {
                "setting": name,
                "scheduler": sname,
                "day": d + 1,
                "download": i,
                "seed": dl_seed,
                "trace_starts": starts,
                "download_time_s": m["download_time_s"],
                "packets": m.get("packets_sent", math.nan),
                "timed_out": m.get("timed_out", 0.0),
            }
        )
    return records


def _gains(summary: Mapping) -> dict[str, float]:
    """Per pair of :data:`GAINS` run, ``1 - mean_a / mean_b`` of the mean download times."""
    gains = {}
    for a, b in GAINS:
        if a in summary and b in summary:
            ma, mb = summary[a]["all"]["mean_time_s"], summary[b]["all"]["mean_time_s"]
            gains[f"{a}_vs_{b}"] = 1.0 - ma / mb if mb > 0 else math.nan
    return gains


def run_setting(
    name: str,
    setting: dict,
    sec: dict,
    app: Mapping,
    tag: int,
    bank=None,
    progress: bool = True,
    log=None,
) -> dict:
    """Morning, then the days, for one setting (module docstring)."""
    seed, days, per_day = sec["seed"], sec["days"], sec["downloads_per_day"]
    base = base_scenario(setting)
    ref_cfg = dict(sec.get("reference") or {})
    ref_scen = morning_scenarios(
        base,
        setting,
        common.check_positive_int(ref_cfg, "collect_episodes", 8),
        seed + 900_000,
        tag,
    )
    ref, ref_info = common.train_reference(ref_scen, app, seed + 900_000, ref_cfg, progress)
    names = [n for n in sec["schedulers"] if n != common.REFERENCE]
    overrides = dict(sec.get("agent_overrides") or {})
    configs = {
        n: day_end_only(common.agent_config(n, overrides.get(n)), days * per_day) for n in names
    }
    m_rec = None
    if bank is not None and any("bank" in c for c in configs.values()):
        mo = sec["morning"]
        bank, m_rec = morning_bank(
            bank,
            mo["agent"],
            overrides.get(mo["agent"]),
            morning_scenarios(base, setting, mo["downloads"], seed + 800_000, tag),
            app,
            seed + 800_000,
            progress,
        )
    plan = day_plan(base, setting, days, per_day, seed, tag)
    records, summary, updates = [], {}, {}
    for sname in [*names, common.REFERENCE]:
        t1 = time.perf_counter()
        sched, own_bank = None, bank
        per_day_rows = []
        for d, day in enumerate(plan):
            if sname == common.REFERENCE:
                sched = ref
            elif sched is None or not sec["persist_across_days"]:
                sched = common.build_agent(sname, configs[sname], seed, own_bank)
                common.prepare(sched, day[0][0], app, seed + 500)
            day_records = _download_day(sched, day, app, name, sname, d)
            records.extend(day_records)
            times = [r["download_time_s"] for r in day_records]
            off = getattr(sched, "offline", None)
            if off is not None:
                rec = off.update(f"end of day {d + 1}")
                own_bank = sched.bank  # what the next day's FALCON starts from
                updates.setdefault(sname, []).append(
                    {"day": d + 1, "cells": len(rec["cells"]), "transitions": rec["transitions"]}
                )
            row = {"day": d + 1, **_summary(times)}
            per_day_rows.append(row)
            if log is not None:
                log(
                    {
                        f"mean_time_s/{name}/{sname}": row["mean_time_s"],
                        f"median_time_s/{name}/{sname}": row["median_time_s"],
                    },
                    step=d,
                )
        all_t = [
            r["download_time_s"]
            for r in records
            if r["setting"] == name and r["scheduler"] == sname
        ]
        summary[sname] = {"days": per_day_rows, "all": _summary(all_t)}
        if progress:
            info(
                f"{JOB}: {name} {sname}: mean per day "
                + " ".join(f"{r['mean_time_s']:.3f}" for r in per_day_rows)
                + f" s [{time.perf_counter() - t1:.1f} s]"
            )
    gains = _gains(summary)
    if log is not None and gains:
        log({f"gain/{name}/{k}": v for k, v in gains.items()})
    return {
        "scenario": setting["scenario"],
        "paths": setting["paths"],
        "summary": summary,
        "gains": gains,
        "offline_updates": updates,
        "morning_update": m_rec,
        "reference": {"train": ref_info},
        "records": records,
    }


def run_real_world(sec: dict, app: Mapping, bank=None, progress: bool = True, log=None) -> dict:
    t0 = time.perf_counter()
    out = {
        name: run_setting(name, setting, sec, app, tag, bank, progress, log)
        for tag, (name, setting) in enumerate(sec["settings"].items())
    }
    return {
        "job": JOB,
        "settings": sec,
        "app": dict(app),
        "results": out,
        "wall_s": time.perf_counter() - t0,
    }


def table(results: dict) -> str:
    days = results["settings"]["days"]
    text = ""
    for name, res in results["results"].items():
        rows = [
            [
                s,
                *[r["mean_time_s"] for r in v["days"]],
                v["all"]["mean_time_s"],
                v["all"]["median_time_s"],
            ]
            for s, v in res["summary"].items()
        ]
        text += (
            f"{name}: mean download time per day [s] (held-out traces; FALCON updates offline after each day)\n"
            + common.format_table(
                ["scheduler", *[f"day {d + 1}" for d in range(days)], "mean", "median"], rows
            )
        )
        if res["gains"]:
            text += (
                "gain (1 - mean / mean of the other): "
                + ", ".join(
                    f"{k.replace('_vs_', ' vs ')} {100 * v:+.1f} %" for k, v in res["gains"].items()
                )
                + "\n"
            )
        text += "\n"
    return text


def plot(results: dict, path) -> None:
    from baselines.mpl import use_agg

    use_agg()
    import matplotlib.pyplot as plt

    res = results["results"]
    fig, axes = plt.subplots(1, len(res), figsize=(5.2 * len(res), 4.0), squeeze=False)
    for ax, (name, r) in zip(axes[0], res.items()):
        for sname, v in r["summary"].items():
            pts = [
                (row["day"], row["mean_time_s"])
                for row in v["days"]
                if math.isfinite(row["mean_time_s"])
            ]
            if pts:
                ax.plot(
                    [p[0] for p in pts],
                    [p[1] for p in pts],
                    marker="o",
                    label=sname,
                    color=color(sname),
                )
        ax.set_xlabel("day")
        ax.set_ylabel("mean download time [s]")
        ax.set_title(name)
        ax.set_xticks(range(1, results["settings"]["days"] + 1))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("Real-world protocol on held-out traces (Fig. 7)")
    report.save_figure(fig, path)


def run_job(cfg) -> dict:
    """``experiment=real_world``: the tracked job."""
    cfg, sec, app = settings(cfg)
    return common.run_scheduler_job(
        cfg,
        JOB,
        sec,
        app,
        lambda bank, progress, log: run_real_world(sec, app, bank, progress, log),
        table,
        plot,
    )


__all__ = [
    "run_job",
    "run_real_world",
    "run_setting",
    "settings",
    "check_setting",
    "trace_windows",
    "scenario_at",
    "morning_scenarios",
    "day_plan",
    "day_end_only",
    "morning_bank",
]
