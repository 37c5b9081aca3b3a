"""The pipeline both entry points run: plan -> validate -> episodes -> report.

:func:`run_pipeline` resolves the plan from the composed config, checks it
before anything is started (every agent instantiated, every scenario and app
built once), prints how each trace file was read (falcon.trace_provenance:
one line per file; each file's SHA-256 goes into plan.yaml and the MLflow
params, as does the provenance of schedulers from outside the project:
falcon.plugins), opens an MLflow run, runs every (scenario, app, agent,
seed) episode on the configured runtime, and writes the output folder (summary
JSON, table, plots, configs; a ``prepare`` hook, used by falcon.train, adds
models) in one atomic step before logging it to MLflow.
"""

from __future__ import annotations

import shlex
import sys
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import yaml

from envs.errors import ConfigError, FalconInputError
from falcon import report
from falcon.cli import staged_output_named
from falcon.config import Plan, check_runtime, make_plan, to_plain
from falcon.jobs import Job, instantiate_agent, run_episode_job
from falcon.paths import results_dir
from falcon.plugins import provenance_params, provenance_tag
from falcon.runtime import run_jobs
from falcon.trace_provenance import plan_traces, summary_lines, trace_params, traces_read
from falcon.tracking import flatten, tracked_run


def info(msg: str) -> None:
    """Progress and status lines go to stderr; stdout carries the table only."""
    print(msg, file=sys.stderr, flush=True)


def _prefixed(where: str, fn: Callable, *args):
    try:
        return fn(*args)
    except FalconInputError as e:
        raise ConfigError(f"{where}: {e}") from None


def validate_plan(plan: Plan) -> None:
    """Fail before any run starts: instantiate each agent, build each scenario and app once."""
    import envs
    from envs.apps import make_app

    # agents waiting for the run's bank (bank: null) are checked once it is there
    # (falcon.bank_job.resolve_agent_banks): building it must not come before the
    # cheap checks
    schedulers = [
        instantiate_agent(n, a) if isinstance(a, dict) else a
        for n, a in plan.agents
        if not (isinstance(a, dict) and "bank" in a and a["bank"] is None)
    ]
    for name, app in plan.apps:
        _prefixed(f"app {name!r}", make_app, app, 0.0)  # loads page models and stream traces
    if schedulers:
        probe = schedulers[0]
    else:
        from baselines import make_scheduler

        probe = make_scheduler("minrtt")
    for name, scenario in plan.scenarios:
        # builds paths and loads their traces
        _prefixed(f"scenario {name!r}", envs.Emulation(plan.seeds[0]).connect, scenario, probe)


def make_jobs(plan: Plan) -> list[Job]:
    """Every (scenario, app, agent, seed), in that nesting order."""
    jobs = []
    for sname, scenario in plan.scenarios:
        for aname, app in plan.apps:
            for agname, agent in plan.agents:
                for seed in plan.seeds:
                    jobs.append(Job(len(jobs), sname, aname, agname, seed, scenario, app, agent))
    return jobs


def execute(plan: Plan, runtime: dict, progress: bool = True) -> list[dict]:
    """Run every episode of the plan; one record per episode, in job order."""
    jobs = make_jobs(plan)
    results = run_jobs(jobs, run_episode_job, runtime, progress=progress)
    return [
        {"scenario": j.scenario_name, "app": j.app_name, "agent": j.agent_name, "seed": j.seed, **r}
        for j, r in zip(jobs, results, strict=True)
    ]


def _params(cfg_plain: dict, plan: Plan) -> dict[str, str]:
    """MLflow params: the top-level settings plus the exact scenario/app/agent configs run."""
    top = {k: v for k, v in cfg_plain.items() if k not in ("scenario", "app", "agent", "hydra")}
    params = flatten(top)
    for group, items in (("scenario", plan.scenarios), ("app", plan.apps), ("agent", plan.agents)):
        for name, conf in items:
            if not isinstance(conf, dict):
                conf = {"_object_": type(conf).__qualname__}
            prefix = f"{group}." if len(items) == 1 else f"{group}.{name}."
            params.update(flatten(conf, prefix))
    params.update(
        {
            f"{group}_names": ",".join(n for n, _ in items)
            for group, items in (
                ("scenario", plan.scenarios),
                ("app", plan.apps),
                ("agent", plan.agents),
            )
        }
    )
    return params


def output_dir(cfg, job: str, run_id: str | None, started: datetime | None = None) -> Path:
    """``output=`` if given; else ``results/<job>/<time>-<run id>`` under ``$FALCON_HOME`` or the
    working directory (:func:`falcon.paths.results_dir`; ``started``: the time, default now);
    per-job subfolders in a multirun."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    multirun = HydraConfig.initialized() and HydraConfig.get().mode == RunMode.MULTIRUN
    if cfg.get("output"):
        out = Path(str(cfg.output)).expanduser()
        return out / str(HydraConfig.get().job.num) if multirun else out
    if multirun:
        return Path(HydraConfig.get().runtime.output_dir)
    stamp = (started or datetime.now()).strftime("%Y%m%d-%H%M%S")
    base = results_dir() / job / (f"{stamp}-{run_id[:8]}" if run_id else stamp)
    out, n = base, 1
    while out.exists():
        out, n = base.with_name(f"{base.name}-{n}"), n + 1
    return out


def run_pipeline(cfg, job: str, prepare: Callable | None = None) -> dict:
    """Plan, validate, run, report and track one job; returns the summary dict (plus ``output``: its folder).

    ``prepare(plan, staging_dir, tracker) -> plan`` runs inside the tracked
    run before the episodes (falcon.train trains there and saves models into
    ``staging_dir``).
    """
    plan = make_plan(cfg)
    runtime = check_runtime(cfg.get("runtime"))
    table_metrics = list(
        to_plain(cfg.get("report", {}).get("table_metrics")) or ["download_time_s"]
    )
    plot_metrics = list(to_plain(cfg.get("report", {}).get("plot_metrics")) or [])
    validate_plan(plan)
    traces = traces_read(plan.scenarios)
    for line in summary_lines(traces):  # how every trace file was read, before anything runs
        info(line)
    cfg_plain = to_plain(cfg)

    names = ",".join(n for n, _ in plan.agents)
    scen = ",".join(n for n, _ in plan.scenarios)
    tracking = to_plain(cfg.get("tracking")) or {"enabled": False}
    run_name = tracking.get("run_name") or f"{job}:{names}@{scen}"[:240]
    tags = {
        "falcon.job": job,
        "falcon.agents": names,
        "falcon.scenarios": scen,
        "falcon.apps": ",".join(n for n, _ in plan.apps),
        "falcon.runtime": runtime["name"],
        "falcon.command": shlex.join([f"python -m falcon.{job}", *sys.argv[1:]]),
    }
    if plan.plugins:  # schedulers from outside the project: name=distribution==version
        tags["falcon.plugins"] = provenance_tag(plan.plugins)
    t_job = time.perf_counter()
    started = datetime.now()
    with tracked_run(tracking, run_name=run_name, tags=tags) as tracker:
        tracker.log_params(
            _params(cfg_plain, plan)
            | trace_params(traces, len(plan.scenarios))
            | provenance_params(plan.plugins)
        )
        # named when done: the run id may still be on its way (falcon.tracking_worker)
        name = (
            output_dir(cfg, job, None)
            if cfg.get("output")
            else (lambda: output_dir(cfg, job, tracker.run_id, started))
        )
        with staged_output_named(name, output_dir(cfg, job, None, started).parent) as staged:
            tmp = staged.tmp
            if prepare is not None:
                plan = prepare(plan, tmp, tracker)
            info(f"{job}: {plan.describe()} on runtime={runtime['name']}")
            t0 = time.perf_counter()
            records = execute(plan, runtime, progress=bool(cfg.get("progress", True)))
            wall = time.perf_counter() - t0
            summary = report.summarize(
                records,
                seeds=plan.seeds,
                job=job,
                compare=table_metrics[0],
                extra={"mlflow_run_id": tracker.run_id, "episodes_wall_s": wall},
            )
            table = report.summary_table(summary, table_metrics)
            (tmp / "table.txt").write_text(table + "\n")
            for metric in plot_metrics:
                report.plot_metric(summary, metric, tmp)
            report.plot_objects(records, tmp)
            (tmp / "config.yaml").write_text(yaml.safe_dump(cfg_plain, sort_keys=False))
            used = {
                "scenarios": dict(plan.scenarios),
                "apps": dict(plan.apps),
                "agents": {
                    n: (a if isinstance(a, dict) else type(a).__qualname__) for n, a in plan.agents
                },
                "seeds": plan.seeds,
                "traces": plan_traces(traces),
                "plugins": plan.plugins,  # falcon.plugins.provenance
            }
            (tmp / "plan.yaml").write_text(yaml.safe_dump(used, sort_keys=False))
            report.write_json(summary, tmp / "summary.json")  # last: marks a complete output
        out = staged.final
        # the whole job (bank, training, episodes, report) and the episodes alone [s]
        tracker.log_metrics(
            report.flat_metrics(summary)
            | {
                "wall_time_s": time.perf_counter() - t_job,
                "episodes_wall_s": wall,
                "episodes": len(records),
            }
        )
        tracker.log_artifacts(out)
    print(table, flush=True)
    info(f"\n{len(records)} episodes in {wall:.1f} s; summary: {out / 'summary.json'}")
    if tracker.run_id:
        info(f"mlflow run {tracker.run_id} in {tracker.uri}")
    return {**summary, "output": str(out)}


__all__ = ["run_pipeline", "validate_plan", "make_jobs", "execute", "output_dir", "info"]
