"""Longer-budget evidence for the DQN baselines (the numbers behind the tests).

    python -m falcon.experiments.dqn_evidence [--quick] [--out evidence.json]

On the static fast/slow scenario of ``configs/experiment/dqn.yaml`` (2 MB
bulk; the paper's protocol on fixed evaluation seeds, median download time):

* round robin and minRTT;
* DQN-On(Z), several agent seeds: evaluated from scratch and after 5, 10,
  20, ... online episodes (each evaluation episode starts from a copy of the
  agent and keeps learning online); the relative score (median of DQN-Off /
  median of DQN-On, as in the paper's Fig. 3) against online packets;
* DQN-On(N) and DQN-On(W) (buffered nearby conditions), the same way;
* DQN-Off trained offline from logged experience (online behaviour, eps 0.3)
  and DQN-Off* = the same model on conditions with 5 % less RTT variation and
  loss; the share of packets each sends on the slow path;
* the reward ablation: DQN-On learning from the environment's per-step
  ``goodput_rate`` reward instead of the per-decision ``packet_rate``.

Prints one line per result and writes everything as JSON (``--out``).

    python -m falcon.experiments.dqn_evidence --off-star [--size 2000000] [--model-seeds 3]

runs only the DQN-Off* study over several static two-path scenarios
(:data:`OFF_STAR_SCENARIOS`: the one above, Table I 4G + WLAN, pairs of
equal capacity whose second path has more RTT variation and loss): per
scenario and DQN-Off model seed, the median download time of DQN-Off and
DQN-Off* over the evaluation seeds, their slow-path shares, and the median
over seeds of the paired ratio DQN-Off* / DQN-Off (same emulator seed);
minRTT's paired ratio on the same two conditions is the control (what the
deviation does to a fixed rule).
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
import time

import envs
from baselines.dqn.conditions import deviate_scenario
from baselines.dqn.dqn_off import DQNOff
from baselines.dqn.dqn_on import DQNOn
from baselines.dqn.files import atomic_path
from baselines.rule_based import MinRTT, RoundRobin

SCENARIO = {
    "name": "static_fast_slow",
    "paths": [
        {"name": "fast", "bandwidth_mbps": 100, "rtt_ms": 20, "rtt_std_ms": 2, "loss": 0.001},
        {"name": "slow", "bandwidth_mbps": 5, "rtt_ms": 100, "rtt_std_ms": 20, "loss": 0.01},
    ],
}
APP = {"kind": "bulk", "size_bytes": 2_000_000}
#: static two-path scenarios of the DQN-Off* study (second path: more RTT variation and loss)
OFF_STAR_SCENARIOS = {
    "static_fast_slow": SCENARIO["paths"],
    "4g_wlan": [{"link": "4g"}, {"link": "wlan"}],
    "eq50_jitter_loss": [
        {"bandwidth_mbps": 50, "rtt_ms": 20, "rtt_std_ms": 2, "loss": 0.001},
        {"bandwidth_mbps": 50, "rtt_ms": 80, "rtt_std_ms": 40, "loss": 0.02},
    ],
    "eq20_jitter": [
        {"bandwidth_mbps": 20, "rtt_ms": 30, "rtt_std_ms": 3, "loss": 0.001},
        {"bandwidth_mbps": 20, "rtt_ms": 60, "rtt_std_ms": 30, "loss": 0.01},
    ],
    "eq20_split": [
        {"bandwidth_mbps": 20, "rtt_ms": 30, "rtt_std_ms": 3, "loss": 0.001},
        {"bandwidth_mbps": 20, "rtt_ms": 80, "rtt_std_ms": 40, "loss": 0.002},
    ],
    "wlan_wlanbad": [
        {"link": "wlan"},
        {"bandwidth_mbps": 30, "rtt_ms": 50, "rtt_std_ms": 25, "loss": 0.03},
    ],
    "eq20_highloss": [
        {"bandwidth_mbps": 20, "rtt_ms": 30, "rtt_std_ms": 3, "loss": 0.001},
        {"bandwidth_mbps": 20, "rtt_ms": 60, "rtt_std_ms": 50, "loss": 0.10},
    ],
}


def evaluate(scenario, make, seeds) -> dict:
    runs = [envs.run_episode(scenario, APP, make(), s).metrics for s in seeds]
    t = [m["download_time_s"] for m in runs]
    return {
        "median_s": statistics.median(t),
        "p25_s": statistics.quantiles(t, n=4)[0] if len(t) > 1 else t[0],
        "p75_s": statistics.quantiles(t, n=4)[2] if len(t) > 1 else t[0],
        "slow_path_share": statistics.median(m["path1_share"] for m in runs),
        "n": len(t),
    }


def paired(scenario, deviated, app, make, seeds) -> dict:
    """One scheduler on ``scenario`` and ``deviated`` with the same emulator
    seeds: medians, slow-path shares and the paired ratio deviated / base."""
    import numpy as np

    base = [envs.run_episode(scenario, app, make(), s).metrics for s in seeds]
    dev = [envs.run_episode(deviated, app, make(), s).metrics for s in seeds]
    ratio = np.array([d["download_time_s"] / b["download_time_s"] for b, d in zip(base, dev)])
    return {
        "median_s": statistics.median(m["download_time_s"] for m in base),
        "deviated_median_s": statistics.median(m["download_time_s"] for m in dev),
        "slow_path_share": statistics.median(m["path1_share"] for m in base),
        "deviated_slow_path_share": statistics.median(m["path1_share"] for m in dev),
        "paired_ratio_median": float(np.median(ratio)),
        "deviated_slower_fraction": float(np.mean(ratio > 1.0)),
        "n": len(seeds),
    }


def off_star_study(size_bytes: int, model_seeds: int, seeds) -> list[dict]:
    """DQN-Off vs DQN-Off* (the same model on 5 % less RTT variation and
    loss) on every scenario of :data:`OFF_STAR_SCENARIOS`; minRTT as control."""
    app = {"kind": "bulk", "size_bytes": int(size_bytes)}
    out = []
    for name, paths in OFF_STAR_SCENARIOS.items():
        scenario = {"name": name, "paths": paths}
        deviated = deviate_scenario(scenario, rtt_variation=-0.05, loss=-0.05)
        row = {
            "scenario": name,
            "size_bytes": int(size_bytes),
            "rr": evaluate_app(scenario, app, RoundRobin, seeds)["median_s"],
            "minrtt": paired(scenario, deviated, app, MinRTT, seeds),
            "dqn_off": [],
        }
        for m in range(model_seeds):
            off = DQNOff(seed=m)
            off.fit(
                scenario,
                app,
                seed=2000 + 100 * m,
                collect_episodes=20,
                behaviour="online",
                behaviour_epsilon=0.3,
                gradient_steps=5000,
                progress=False,
            )
            row["dqn_off"].append(
                {
                    "model_seed": m,
                    **paired(scenario, deviated, app, lambda o=off: copy.deepcopy(o), seeds),
                }
            )
        say(
            f"{name}: RR {row['rr']:.3f} s, minRTT {row['minrtt']['median_s']:.3f} s (paired ratio "
            f"{row['minrtt']['paired_ratio_median']:.3f}); "
            + "; ".join(
                f"DQN-Off[{d['model_seed']}] {d['median_s']:.3f} s -> DQN-Off* {d['deviated_median_s']:.3f} s "
                f"(paired {d['paired_ratio_median']:.3f}, slower on {d['deviated_slower_fraction']:.0%}, "
                f"slow share {d['slow_path_share']:.2f})"
                for d in row["dqn_off"]
            )
        )
        out.append(row)
    return out


def evaluate_app(scenario, app, make, seeds) -> dict:
    t = [envs.run_episode(scenario, app, make(), s).metrics["download_time_s"] for s in seeds]
    return {"median_s": statistics.median(t), "n": len(t)}


def say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def online_curve(make_agent, checkpoints, seeds, train_seed=1000) -> list[dict]:
    agent = make_agent()
    agent.build(2)
    if agent.buffer is not None:
        agent.fit(SCENARIO, APP, seed=train_seed - 500, episodes=0, progress=False)
    out, done = [], 0
    for k in checkpoints:
        if k > done:
            agent.fit(SCENARIO, APP, seed=train_seed + done, episodes=k - done, progress=False)
            done = k
        ev = evaluate(SCENARIO, lambda: copy.deepcopy(agent), seeds)
        out.append({"episodes": k, "online_packets": agent.decisions, **ev})
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--eval-seeds", type=int, default=12)
    ap.add_argument("--agent-seeds", type=int, default=5)
    ap.add_argument("--out", default=None)
    ap.add_argument(
        "--off-star", action="store_true", help="only the multi-scenario DQN-Off* study"
    )
    ap.add_argument(
        "--size", type=int, default=APP["size_bytes"], help="--off-star: download size [bytes]"
    )
    ap.add_argument(
        "--model-seeds", type=int, default=3, help="--off-star: DQN-Off models per scenario"
    )
    args = ap.parse_args(argv)
    if args.off_star:
        t0 = time.perf_counter()
        rep = {
            "off_star": off_star_study(
                args.size, args.model_seeds, [50_000 + i for i in range(max(args.eval_seeds, 20))]
            )
        }
        rep["wall_s"] = time.perf_counter() - t0
        _report(rep, args.out)
        return
    n_eval, n_agents = args.eval_seeds, args.agent_seeds
    checkpoints = [0, 5, 10, 20, 30]
    if args.quick:
        n_eval, n_agents, checkpoints = 6, 2, [0, 5]
    seeds = [50_000 + i for i in range(n_eval)]
    t0 = time.perf_counter()
    rep: dict = {"scenario": SCENARIO, "app": APP, "eval_seeds": seeds}
    rep["rr"] = evaluate(SCENARIO, RoundRobin, seeds)
    rep["minrtt"] = evaluate(SCENARIO, MinRTT, seeds)
    say(f"RR {rep['rr']['median_s']:.3f} s, minRTT {rep['minrtt']['median_s']:.3f} s")

    off = DQNOff(seed=0)
    off.fit(
        SCENARIO,
        APP,
        seed=2000,
        collect_episodes=6 if args.quick else 20,
        behaviour="online",
        behaviour_epsilon=0.3,
        gradient_steps=2000 if args.quick else 5000,
        progress=False,
    )
    rep["dqn_off"] = evaluate(SCENARIO, lambda: copy.deepcopy(off), seeds)
    deviated = deviate_scenario(SCENARIO, rtt_variation=-0.05, loss=-0.05)
    rep["dqn_off_star"] = evaluate(deviated, lambda: copy.deepcopy(off), seeds)
    rep["minrtt_deviated"] = evaluate(deviated, MinRTT, seeds)
    say(
        f"DQN-Off {rep['dqn_off']['median_s']:.3f} s (slow-path share {rep['dqn_off']['slow_path_share']:.3f}); "
        f"DQN-Off* {rep['dqn_off_star']['median_s']:.3f} s (share {rep['dqn_off_star']['slow_path_share']:.3f}); "
        f"minRTT on the deviated conditions {rep['minrtt_deviated']['median_s']:.3f} s"
    )

    ref = rep["dqn_off"]["median_s"]
    for name, kw in (
        ("dqn_on_z", {}),
        ("dqn_on_n", {"buffer": {"deviations": [-0.03, 0.03], "packets_per_condition": 100}}),
        (
            "dqn_on_w",
            {"buffer": {"deviations": [-0.06, -0.03, 0.03, 0.06], "packets_per_condition": 100}},
        ),
    ):
        n = n_agents if name == "dqn_on_z" else max(1, n_agents // 2 + 1)
        rep[name] = []
        for seed in range(n):
            curve = online_curve(lambda s=seed, k=kw: DQNOn(seed=s, **k), checkpoints, seeds)
            for c in curve:
                c["relative_score"] = ref / c["median_s"]
            rep[name].append({"agent_seed": seed, "curve": curve})
            say(
                f"{name} seed {seed}: "
                + ", ".join(
                    f"{c['episodes']} ep ({c['online_packets']} pkts) {c['median_s']:.3f} s"
                    for c in curve
                )
                + f"  [{time.perf_counter() - t0:.0f} s]"
            )

    abl = online_curve(
        lambda: DQNOn(seed=0, reward="goodput_rate"),
        [0, checkpoints[-1] // 2 or 5],
        seeds[: max(3, n_eval // 2)],
    )
    rep["reward_ablation_goodput_rate"] = abl
    say(
        "DQN-On learning from goodput_rate: "
        + ", ".join(
            f"{c['episodes']} ep {c['median_s']:.3f} s (slow share {c['slow_path_share']:.2f})"
            for c in abl
        )
    )
    rep["wall_s"] = time.perf_counter() - t0
    _report(rep, args.out)


def _report(rep: dict, out: str | None) -> None:
    """Print the JSON report; also write it to ``out`` (atomically) when given."""
    text = json.dumps(rep, indent=2)
    if out:
        with atomic_path(out) as tmp:
            tmp.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
