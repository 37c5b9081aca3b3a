"""Run the stream-aware experiment and draw the SRPT-ECF paper's Figs. 9 and 10.

    python scripts/plot_stream_aware.py OUTDIR [--runs N] [--seed S] [--agents a,b] [hydra overrides...]

Composes ``configs/experiment/stream_aware.yaml`` (scenario, page-replay app,
the four schedulers; extra arguments are Hydra overrides, e.g.
``scenario.paths.0.rtt_std_ms=0``), runs every scheduler with
``envs.run_episode`` on seeds S..S+N-1 and writes to OUTDIR:

* ``completion_cdf.png``: CDF of stream completion times (all seeds pooled),
  with the fluid-model SRPT-ECF and SA-ECF curves for reference (dashed;
  ``--no-fluid`` to skip) and the paths' one-way delays as vertical bars;
* ``active_streams.png``: active streams over time (mean over seeds);
* ``summary.json``: per scheduler, the completion-time statistics pooled
  over seeds and per seed (mean, median, p90, p95, p99, max), the episode
  metrics per seed, and the fluid-model reference.

The fluid reference uses the emulated paths' constant rates scaled to
payload bytes (payload / packet size) and half their base RTT as latency.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

DEFAULT_AGENTS = ["srpt_ecf", "sa_ecf", "fcfs_minrtt", "srpt_minrtt"]


def compose_plan(overrides: list[str]):
    from hydra import compose, initialize_config_dir

    from falcon.config import CONFIG_DIR, make_plan

    with initialize_config_dir(str(CONFIG_DIR), version_base="1.3"):
        cfg = compose(config_name="evaluate", overrides=["experiment=stream_aware", *overrides])
        keys = {o.split("=", 1)[0].lstrip("+~") for o in overrides}
        plan = make_plan(
            cfg, choices={"scenario": "srpt_ecf_paper", "app": "page_replay"}, cli_keys=keys
        )
    return plan


def stats(values) -> dict:
    v = np.asarray([x for x in values if not math.isnan(x)], dtype=float)
    if not len(v):
        return {"n": 0}
    return {
        "n": int(len(v)),
        "mean": float(v.mean()),
        "median": float(np.median(v)),
        "p90": float(np.percentile(v, 90)),
        "p95": float(np.percentile(v, 95)),
        "p99": float(np.percentile(v, 99)),
        "max": float(v.max()),
        "unfinished": int(len(values) - len(v)),
    }


def fluid_reference(
    scenario: dict, streams: list[dict]
) -> tuple[dict, list[float]] | tuple[None, None]:
    """Fluid SRPT-ECF and SA-ECF completion times on the scenario's paths (constant rates only)."""
    from baselines.stream_aware import fluid
    from envs.scenario import normalise_scenario

    s = normalise_scenario(scenario)
    paths = []
    for p in s["paths"]:
        if p["bandwidth_mbps"] is None:
            return None, None
        scale = (s["packet_size"] - s["header_bytes"]) / s["packet_size"]
        paths.append(
            (fluid.q(p["bandwidth_mbps"]) * 10**6 / 8 * fluid.q(scale), fluid.q(p["rtt_ms"]) / 2000)
        )
    fs = [(x["size_bytes"], x["release_s"], x["priority"]) for x in streams]
    ref = {
        "srpt_ecf": fluid.srpt_ecf(fs, paths).floats(),
        "sa_ecf": fluid.sa_ecf(fs, paths).floats(),
    }
    return ref, [float(d) for _, d in paths]


def run(
    outdir: Path,
    runs: int,
    seed: int,
    agents: list[str] | None,
    overrides: list[str],
    with_fluid: bool = True,
) -> dict:
    from baselines.stream_aware.plots import plot_active_streams, plot_completion_cdf
    from envs import run_episode
    from envs.apps import make_app
    from falcon.config import load_group, to_plain
    from falcon.jobs import instantiate_agent

    plan = compose_plan(overrides)
    ((sname, scenario),) = plan.scenarios[:1]
    ((aname, app),) = plan.apps[:1]
    agent_cfgs = dict(plan.agents)
    names = agents or [n for n, _ in plan.agents]
    for n in names:
        if n not in agent_cfgs:  # an agent outside the experiment's list
            agent_cfgs[n] = to_plain(load_group("agent", n))
    streams = make_app(app, 0.0).streams  # sorted by release, as object_times
    release = [s["release_s"] for s in streams]
    seeds = list(range(seed, seed + runs))
    times, active, per_seed = {}, {}, {}
    t0 = time.time()
    for name in names:
        times[name], active[name], per_seed[name] = [], [], []
        for sd in seeds:
            res = run_episode(scenario, app, instantiate_agent(name, agent_cfgs[name]), sd)
            ot = [float(x) for x in res.object_times]
            times[name] += ot
            active[name].append((release, [r + x for r, x in zip(release, ot)]))
            per_seed[name].append(
                {"seed": sd, **stats(ot), "metrics": {k: float(v) for k, v in res.metrics.items()}}
            )
    elapsed = time.time() - t0
    ref, lat = fluid_reference(scenario, streams) if with_fluid else (None, None)
    outdir.mkdir(parents=True, exist_ok=True)
    title = f"{aname} on {sname}: {len(streams)} streams, {runs} seed(s)"
    plot_completion_cdf(times, outdir / "completion_cdf.png", fluid=ref, latencies=lat, title=title)
    plot_active_streams(active, outdir / "active_streams.png", title=title)
    summary = {
        "scenario": sname,
        "app": aname,
        "seeds": seeds,
        "streams": len(streams),
        "elapsed_s": elapsed,
        "schedulers": {
            n: {
                "pooled": stats(times[n]),
                "per_seed": per_seed[n],
                "mean_of_seed_means": float(np.mean([p["mean"] for p in per_seed[n]])),
                "mean_of_seed_p95": float(np.mean([p["p95"] for p in per_seed[n]])),
            }
            for n in names
        },
        "fluid_model": ({n: stats(v) for n, v in ref.items()} if ref else None),
        "path_latencies_s": lat,
    }
    (outdir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return summary


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir", type=Path)
    ap.add_argument("--runs", type=int, default=10, help="seeds per scheduler")
    ap.add_argument("--seed", type=int, default=0, help="first seed")
    ap.add_argument(
        "--agents", default=None, help="comma-separated agent configs (default: the experiment's)"
    )
    ap.add_argument("--no-fluid", action="store_true", help="skip the fluid-model reference curves")
    args, overrides = ap.parse_known_args(argv)
    if args.runs < 1:
        ap.error("--runs must be >= 1")
    agents = [a for a in args.agents.split(",") if a] if args.agents else None
    summary = run(args.outdir, args.runs, args.seed, agents, overrides, not args.no_fluid)
    for n, s in summary["schedulers"].items():
        p = s["pooled"]
        print(
            f"{n:12s} mean {p['mean']:.3f} s  median {p['median']:.3f}  p95 {p['p95']:.3f}  max {p['max']:.3f}"
        )
    if summary["fluid_model"]:
        for n, p in summary["fluid_model"].items():
            print(
                f"{n + ' (fluid)':12s} mean {p['mean']:.3f} s  median {p['median']:.3f}  p95 {p['p95']:.3f}  max {p['max']:.3f}"
            )
    print(f"wrote {args.outdir}/completion_cdf.png, active_streams.png, summary.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
