"""DQN speed benchmark: gradient steps per second, and scheduling decisions per second.

    python -m benchmarks.dqn_learner_speed [--repeats 5] [--models 729] [--quick]

* ``update_1``: DQN steps per second of one model (batch 32, the default
  64x3 network, 2 paths), for each batched-gradient technique (``bmm``,
  ``autograd``, ``vmap``; :mod:`baselines.dqn.learner`).
* ``update_bank``: one step of ``--models`` (729: the meta-model bank) models
  updated together, per technique and torch thread count; reported as steps
  per second of the whole stack and model-steps per second.
* ``decisions``: decisions per second of the scheduler adapter in the
  emulator (2 MB bulk over static 4G + 5G): greedy (the deployed policy
  only), DQN-On learning online (asynchronous trainer included), and the
  emulator with a trivial Python scheduler (first path with room) as the
  floor.
* ``rllib_sampling``: environment steps per CPU-second of RLlib's env runner
  sampling with DQN-On's RLlib config (``agent.backend=rllib``: the
  completion MDP, complete episodes of a 200 kB download, the module's
  epsilon-greedy actions), for each ``--rllib-envs`` number of instances the
  runner steps in one call of the vector environment
  (``rllib.num_envs_per_env_runner``), and the ratio to one instance.

Every figure is the median over ``--repeats`` repeats (every repeat is
reported too): the development machine is shared and noisy.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import numpy as np
import torch

from baselines.dqn.learner import TECHNIQUES, BatchedDQN
from baselines.dqn.network import QNetSpec

SCENARIO = {"name": "static_4g_5g", "paths": [{"link": "4g"}, {"link": "5g"}]}
APP = {"kind": "bulk", "size_bytes": 2_000_000}


def _batch(m: int, bs: int = 32, n_in: int = 8, seed: int = 0):
    rng = np.random.default_rng(seed)
    return (
        rng.uniform(0, 5, (m, bs, n_in)).astype(np.float32),
        rng.integers(0, 2, (m, bs)),
        rng.uniform(0, 5, (m, bs)).astype(np.float32),
        rng.uniform(0, 5, (m, bs, n_in)).astype(np.float32),
        np.zeros((m, bs), np.float32),
    )


def steps_per_second(n_models: int, technique: str, threads, repeats: int, seconds: float) -> dict:
    learner = BatchedDQN(QNetSpec(8, 2), n_models, seed=0, technique=technique, threads=threads)
    batch = _batch(n_models)
    for _ in range(3):
        learner.update(*batch)
    t0 = time.perf_counter()
    learner.update(*batch)
    per = max(time.perf_counter() - t0, 1e-6)
    n = max(2, int(seconds / per))
    rates = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(n):
            learner.update(*batch)
        rates.append(n / (time.perf_counter() - t0))
    med = statistics.median(rates)
    return {
        "models": n_models,
        "technique": technique,
        "threads": learner.threads or torch.get_num_threads(),
        "steps_per_s": med,
        "model_steps_per_s": med * n_models,
        "ms_per_step": 1000 / med,
        "repeats": rates,
    }


def decisions_per_second(kind: str, repeats: int, episodes: int) -> dict:
    import envs
    from baselines.dqn.dqn_on import DQNOn
    from baselines.dqn.policy import DQNScheduler
    from envs.scheduler import FirstWithRoom

    rates, per_ep = [], []
    for r in range(repeats):
        if kind == "dqn_on_learning":
            sched = DQNOn(seed=r)
        elif kind == "greedy":
            sched = DQNScheduler(seed=r, epsilon=0.0)
        else:
            sched = FirstWithRoom()
        decisions = 0
        t0 = time.perf_counter()
        for ep in range(episodes):
            res = envs.run_episode(SCENARIO, APP, sched, 1000 * r + ep)
            decisions += int(res.metrics["packets_sent"])
        dt = time.perf_counter() - t0
        rates.append(decisions / dt)
        per_ep.append(dt / episodes)
    return {
        "scheduler": kind,
        "decisions_per_s": statistics.median(rates),
        "wall_s_per_episode": statistics.median(per_ep),
        "repeats": rates,
    }


#: the download of an RLlib sampling episode (about 160 decisions: many episodes a round)
RLLIB_APP = {"kind": "bulk", "size_bytes": 200_000}


def rllib_sampling(n_envs: int, repeats: int, steps: int) -> dict:
    """Steps per CPU-second of RLlib's env runner (in this process; Ray is not
    started) stepping ``n_envs`` emulations together, each repeat sampling
    rounds of complete episodes until ``steps`` steps (module docstring)."""
    from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner

    from baselines.dqn.dqn_on import DQNOn
    from baselines.dqn.rllib_backend import build_config

    agent = DQNOn(backend="rllib", rllib={"num_envs_per_env_runner": n_envs})
    agent.build(len(SCENARIO["paths"]))
    config = build_config(agent, SCENARIO, RLLIB_APP, 0, agent.rllib_options)
    runner = SingleAgentEnvRunner(config=config)
    rates = []
    try:
        runner.sample()  # warm-up: the module's first passes, lazy imports
        for _ in range(repeats):
            n = 0
            t0 = time.process_time()
            while n < steps:
                n += sum(len(e) for e in runner.sample())
            rates.append(n / (time.process_time() - t0))
    finally:
        runner.stop()
    return {"envs": n_envs, "steps_per_cpu_s": statistics.median(rates), "repeats": rates}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--models", type=int, default=729)
    ap.add_argument("--episodes", type=int, default=5, help="episodes per repeat (decisions)")
    ap.add_argument("--seconds", type=float, default=1.0, help="target duration of one timing")
    ap.add_argument(
        "--rllib-envs",
        default="1,8,32",
        help="instances per RLlib env runner to time, comma-separated ('' skips RLlib)",
    )
    ap.add_argument("--rllib-steps", type=int, default=6000, help="sampled steps per repeat")
    ap.add_argument("--quick", action="store_true", help="one repeat, short timings (smoke test)")
    args = ap.parse_args(argv)
    try:
        rllib_envs = [int(n) for n in args.rllib_envs.split(",") if n.strip()]
    except ValueError:
        ap.error(
            f"--rllib-envs: expected whole numbers separated by commas, got {args.rllib_envs!r}"
        )
    if any(n < 1 for n in rllib_envs):
        ap.error(f"--rllib-envs: every number of instances must be >= 1, got {args.rllib_envs!r}")
    if args.quick:
        args.repeats, args.seconds, args.episodes, args.rllib_steps = 1, 0.2, 1, 300
    report: dict = {
        "machine": {
            "torch": torch.__version__,
            "torch_threads": torch.get_num_threads(),
            "cpu_count": __import__("os").cpu_count(),
        },
        "update_1": [],
        "update_bank": [],
        "decisions": [],
        "rllib_sampling": [],
    }
    for tech in TECHNIQUES:
        r = steps_per_second(1, tech, "auto", args.repeats, args.seconds)
        report["update_1"].append(r)
        print(
            f"1 model, {tech:8s}: {r['steps_per_s']:8.0f} steps/s ({r['ms_per_step']:.3f} ms)",
            file=sys.stderr,
        )
    for tech in TECHNIQUES:
        for threads in sorted({1, torch.get_num_threads()}):
            r = steps_per_second(args.models, tech, threads, args.repeats, args.seconds)
            report["update_bank"].append(r)
            print(
                f"{args.models} models, {tech:8s}, {threads} thread(s): {r['steps_per_s']:6.2f} steps/s "
                f"= {r['model_steps_per_s']:8.0f} model-steps/s ({r['ms_per_step']:.1f} ms)",
                file=sys.stderr,
            )
    for kind in ("first_with_room", "greedy", "dqn_on_learning"):
        r = decisions_per_second(kind, args.repeats, args.episodes)
        report["decisions"].append(r)
        print(
            f"decisions, {kind:16s}: {r['decisions_per_s']:8.0f} /s ({r['wall_s_per_episode'] * 1000:.0f} ms "
            "per 2 MB episode)",
            file=sys.stderr,
        )
    for n in rllib_envs:
        r = rllib_sampling(n, args.repeats, args.rllib_steps)
        one = report["rllib_sampling"][0]["steps_per_cpu_s"] if report["rllib_sampling"] else None
        r["vs_first"] = None if one is None else r["steps_per_cpu_s"] / one
        report["rllib_sampling"].append(r)
        print(
            f"RLlib sampling, {n:3d} instance(s): {r['steps_per_cpu_s']:8.0f} steps/CPU-s"
            + ("" if one is None else f" ({r['vs_first']:.2f}x {rllib_envs[0]})"),
            file=sys.stderr,
        )
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
