"""Overhead (paper Fig. 10): CPU and memory of FALCON against minRTT over a short transfer with one change.

    python -m falcon.train experiment=overhead
    python -m falcon.train experiment=overhead quick=true     # seconds (the quick_variant)

Protocol (keys of ``configs/experiment/overhead.yaml``): per scheduler and
run ``r`` (seed ``seed + r``, the same for every scheduler), one download of
``app`` (default 20 MB, so that it lasts the whole window) on the scenario
(default Table I 4G + 5G), whose path ``change.path`` takes the
``change.conditions`` at ``change.at_s`` (0.15 s) of emulated time (a path
``schedule``); the emulation stops at ``duration_s`` (0.3 s). Every
``sample_s`` (10 ms) of emulated time a probe event records

* **CPU**: the process CPU time (:func:`time.process_time`) spent since the
  previous sample [ms], i.e. the cost of emulating that slice of the
  transfer with this scheduler. Per emulated 10 ms this is the CPU share
  the scheduler plus the emulator would take running in real time; the
  emulator's own cost is in every scheduler's curve, so FALCON's overhead
  is its difference to minRTT's. CPU comes from a pass without memory
  tracing (tracing slows Python down).
* **memory**: in a second pass with :mod:`tracemalloc` on from before the
  scheduler is built, the Python memory allocated since then and still
  held [MB] (FALCON: its learner, replay memories, detector and estimator
  rings and, with the offline loop on, its private copy of the bank's
  parameters). The bank file itself is read once per process (shared by
  every FALCON of a process, as :func:`falcon.online.bank_cache.cached_bank`
  does) and reported apart (``bank_mb``).

Per scheduler the table gives medians over runs of the mean and peak CPU per
sample, the CPU of the samples after the change, and the memory at the end
and at its peak; FALCON / minRTT ratios. Outputs: ``overhead.json``
(settings, every sample of every run, summary), ``overhead.txt``,
``overhead.png`` (CPU and memory against emulated time, medians over runs,
the change marked); MLflow metrics ``cpu_ms/<scheduler>`` and
``memory_mb/<scheduler>`` with step = sample index, and
``summary/<scheduler>/<quantity>``.

Absolute CPU figures depend on the machine and its load; compare schedulers
within one run of the job (same machine, interleaved by run).
"""

from __future__ import annotations

import gc
import math
import time
import tracemalloc
from collections.abc import Mapping

import numpy as np

from baselines.palette import color
from envs.errors import ConfigError
from envs.runner import setup_episode
from envs.scenario import SCHEDULE_FIELDS, normalise_scenario
from falcon import report
from falcon.config import check_int, to_plain
from falcon.experiment import info
from falcon.experiments import common

JOB = "overhead"
MB = 1024.0 * 1024.0


def settings(cfg):
    cfg, sec = common.job_config(cfg, JOB)
    check_int(cfg, "seed", 0)
    sec["seed"] = int(cfg.seed)
    sec["runs"] = common.check_positive_int(sec, "runs", 5)
    sec["schedulers"] = common.check_schedulers(sec, JOB)
    for key in ("duration_s", "sample_s"):
        v = sec.get(key)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
            raise ConfigError(f"{JOB}.{key}: expected a positive number of seconds, got {v!r}")
        sec[key] = float(v)
    if sec["sample_s"] > sec["duration_s"]:
        raise ConfigError(
            f"{JOB}.sample_s: {sec['sample_s']} s is longer than duration_s ({sec['duration_s']} s)"
        )
    scen = normalise_scenario(to_plain(cfg.scenario))
    change = sec.get("change")
    if change is not None:
        if not isinstance(change, Mapping):
            raise ConfigError(
                f"{JOB}.change: expected {{at_s, path, conditions}} or null, got {change!r}"
            )
        change = dict(change)
        at, path, conds = change.get("at_s"), change.get("path", 0), change.get("conditions")
        if (
            isinstance(at, bool)
            or not isinstance(at, (int, float))
            or not 0 < at < sec["duration_s"]
        ):
            raise ConfigError(f"{JOB}.change.at_s: expected seconds in (0, duration_s), got {at!r}")
        if (
            isinstance(path, bool)
            or not isinstance(path, int)
            or not 0 <= path < len(scen["paths"])
        ):
            raise ConfigError(
                f"{JOB}.change.path: expected a path index below {len(scen['paths'])}, got {path!r}"
            )
        if not isinstance(conds, Mapping) or not conds or set(conds) - set(SCHEDULE_FIELDS):
            raise ConfigError(
                f"{JOB}.change.conditions: expected a non-empty mapping over "
                f"{list(SCHEDULE_FIELDS)}, got {conds!r}"
            )
        sec["change"] = {"at_s": float(at), "path": path, "conditions": dict(conds)}
    return cfg, sec, with_change(scen, sec.get("change")), to_plain(cfg.app)


def with_change(scenario: Mapping, change: Mapping | None) -> dict:
    """The scenario with the change as a one-segment schedule of its path (checked by normalisation)."""
    s = {**scenario, "paths": [dict(p) for p in scenario["paths"]]}
    if change is not None:
        p = s["paths"][change["path"]]
        p["schedule"] = [{"at_s": change["at_s"], **change["conditions"]}]
    return normalise_scenario(s)


def sampled_run(
    make,
    scenario: dict,
    app: Mapping,
    seed: int,
    duration_s: float,
    sample_s: float,
    trace_memory: bool,
) -> dict:
    """One emulation of ``duration_s`` with a probe every ``sample_s``:
    ``{"t_s", "cpu_ms"}`` or, with ``trace_memory``, ``{"t_s", "memory_mb"}``."""
    gc.collect()
    if trace_memory:
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
    sched = make()
    emu, conn, application, _ = setup_episode(scenario, app, sched, seed)
    t_s, values = [], []
    last = [time.process_time()]

    def probe(k: int) -> None:
        if trace_memory:
            values.append((tracemalloc.get_traced_memory()[0] - base) / MB)
        else:
            now = time.process_time()
            values.append(1000.0 * (now - last[0]))
            last[0] = now
        t_s.append(emu.sim.now)
        if (k + 2) * sample_s <= duration_s + 1e-12:
            emu.sim.schedule((k + 2) * sample_s, probe, k + 1)

    emu.sim.schedule(sample_s, probe, 0)
    emu.sim.run(until=duration_s + 1e-9)
    if trace_memory:
        tracemalloc.stop()
    return {"t_s": t_s, ("memory_mb" if trace_memory else "cpu_ms"): values}


def run_overhead(
    sec: dict, scenario: dict, app: Mapping, bank=None, progress: bool = True, log=None
) -> dict:
    t0 = time.perf_counter()
    overrides = dict(sec.get("agent_overrides") or {})
    configs = {n: common.agent_config(n, overrides.get(n)) for n in sec["schedulers"]}
    if bank is not None:
        from falcon.online.bank_cache import cached_bank

        bank = cached_bank(bank)  # read once, before any measurement
    records: dict[str, list[dict]] = {n: [] for n in sec["schedulers"]}
    for r in range(sec["runs"]):
        seed = sec["seed"] + r
        for name in sec["schedulers"]:

            def make(name=name, seed=seed):
                return common.build_agent(name, configs[name], seed, bank)

            cpu = sampled_run(make, scenario, app, seed, sec["duration_s"], sec["sample_s"], False)
            mem = sampled_run(make, scenario, app, seed, sec["duration_s"], sec["sample_s"], True)
            records[name].append(
                {
                    "run": r,
                    "seed": seed,
                    "t_s": cpu["t_s"],
                    "cpu_ms": cpu["cpu_ms"],
                    "memory_mb": mem["memory_mb"],
                }
            )
            if progress:
                info(
                    f"{JOB}: run {r + 1}/{sec['runs']} {name}: CPU {sum(cpu['cpu_ms']):.1f} ms over "
                    f"{sec['duration_s']:g} s emulated, memory at the end {mem['memory_mb'][-1]:.2f} MB"
                )
    change_at = (sec.get("change") or {}).get("at_s", math.inf)
    summary = {name: summarise(recs, change_at) for name, recs in records.items()}
    curves = {
        name: {
            "t_s": recs[0]["t_s"],
            "cpu_ms": np.median([x["cpu_ms"] for x in recs], axis=0).tolist(),
            "memory_mb": np.median([x["memory_mb"] for x in recs], axis=0).tolist(),
        }
        for name, recs in records.items()
    }
    if log is not None:
        for name, c in curves.items():
            for k, (cpu, mem) in enumerate(zip(c["cpu_ms"], c["memory_mb"])):
                log({f"cpu_ms/{name}": cpu, f"memory_mb/{name}": mem}, step=k)
            log({f"summary/{name}/{q}": v for q, v in summary[name].items()})
    out = {
        "job": JOB,
        "settings": sec,
        "scenario": scenario,
        "app": dict(app),
        "summary": summary,
        "curves": curves,
        "records": records,
        "wall_s": time.perf_counter() - t0,
    }
    if bank is not None and getattr(bank, "params", None) is not None:
        out["bank_mb"] = float(bank.params.nbytes / MB)
    return out


def summarise(recs: list[dict], change_at: float) -> dict[str, float]:
    """Medians over runs of per-run figures (CPU per sample [ms], memory [MB])."""

    def med(f) -> float:
        return float(np.median([f(x) for x in recs]))

    def after(x) -> list[float]:
        v = [c for t, c in zip(x["t_s"], x["cpu_ms"]) if t > change_at]
        return v or [math.nan]

    return {
        "cpu_ms_mean": med(lambda x: float(np.mean(x["cpu_ms"]))),
        "cpu_ms_peak": med(lambda x: float(np.max(x["cpu_ms"]))),
        "cpu_ms_after_change": med(lambda x: float(np.mean(after(x)))),
        "cpu_ms_total": med(lambda x: float(np.sum(x["cpu_ms"]))),
        "memory_mb_end": med(lambda x: float(x["memory_mb"][-1])),
        "memory_mb_peak": med(lambda x: float(np.max(x["memory_mb"]))),
    }


def table(results: dict) -> str:
    sec = results["settings"]
    quantities = [
        "cpu_ms_mean",
        "cpu_ms_peak",
        "cpu_ms_after_change",
        "cpu_ms_total",
        "memory_mb_end",
        "memory_mb_peak",
    ]
    rows = [[name, *[s[q] for q in quantities]] for name, s in results["summary"].items()]
    text = (
        f"CPU [ms] per {sec['sample_s'] * 1000:g} ms of emulated time (process CPU of emulator + scheduler) "
        f"and memory held since the scheduler was built [MB]; medians over {sec['runs']} runs; "
        f"{sec['duration_s']:g} s emulated"
        + (
            f", change at {sec['change']['at_s']:g} s on path {sec['change']['path']}"
            if sec.get("change")
            else ""
        )
        + "\n"
        + common.format_table(["scheduler", *quantities], rows)
    )
    names = list(results["summary"])
    if "falcon" in names and "minrtt" in names:
        f, m = results["summary"]["falcon"], results["summary"]["minrtt"]
        text += (
            f"\nfalcon / minrtt: CPU {f['cpu_ms_mean'] / m['cpu_ms_mean']:.2f}x (mean), "
            f"{f['cpu_ms_peak'] / m['cpu_ms_peak']:.2f}x (peak); memory +{f['memory_mb_end'] - m['memory_mb_end']:.2f} MB"
        )
    if "bank_mb" in results:
        text += f"\nbank parameters read once per process: {results['bank_mb']:.1f} MB"
    return text + "\n"


def plot(results: dict, path) -> None:
    from baselines.mpl import use_agg

    use_agg()
    import matplotlib.pyplot as plt

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(9.6, 3.8))
    for name, c in results["curves"].items():
        t = [1000.0 * x for x in c["t_s"]]
        a1.plot(t, c["cpu_ms"], marker=".", label=name, color=color(name))
        a2.plot(t, c["memory_mb"], marker=".", label=name, color=color(name))
    change = results["settings"].get("change")
    for ax in (a1, a2):
        if change:
            ax.axvline(
                1000.0 * change["at_s"], color="grey", linestyle="--", linewidth=1, label="change"
            )
        ax.set_xlabel("emulated time [ms]")
        ax.grid(alpha=0.3)
    a1.set_ylabel(f"CPU per {results['settings']['sample_s'] * 1000:g} ms [ms]")
    a2.set_ylabel("memory held [MB]")
    a1.set_title("CPU (emulator + scheduler)")
    a2.set_title("memory since the scheduler was built")
    a1.legend(fontsize=8)
    report.save_figure(fig, path)


def run_job(cfg) -> dict:
    """``experiment=overhead``: the tracked job."""
    cfg, sec, scen, app = settings(cfg)
    return common.run_scheduler_job(
        cfg,
        JOB,
        sec,
        app,
        lambda bank, progress, log: run_overhead(sec, scen, app, bank, progress, log),
        table,
        plot,
    )
