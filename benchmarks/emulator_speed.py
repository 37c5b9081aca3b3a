"""Emulator speed benchmark: emulated packets per CPU-second.

    python benchmarks/emulator_speed.py [--repeats 7] [--episodes 20] [--size 2000000]

Scenario: a 2 MB bulk transfer over the static 4G+5G pair (Table I links,
jitter and loss on, OLIA). Two schedulers: minRTT (from the registry) and a
trivial Python callback (:class:`envs.scheduler.FirstWithRoom`), which measures the cost of
the emulator itself plus one Python call per decision. Each repeat runs
``--episodes`` seeded episodes, setup included, and times them with
``time.process_time``; the JSON report gives the median over repeats (the
figure to quote: this machine is shared and noisy) and every repeat.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

from baselines import make_scheduler
from envs.runner import run_episode
from envs.scheduler import FirstWithRoom

SCENARIO = {"name": "static_4g_5g", "paths": [{"link": "4g"}, {"link": "5g"}]}


def _scheduler_factory(name: str):
    if name == FirstWithRoom.name:
        return FirstWithRoom
    return lambda: make_scheduler(name)


def measure(factory, repeats: int, episodes: int, size: int) -> dict:
    rates = []
    for _ in range(repeats):
        packets = 0
        t0 = time.process_time()
        for seed in range(episodes):
            r = run_episode(SCENARIO, {"kind": "bulk", "size_bytes": size}, factory(), seed)
            packets += r.metrics["packets_sent"]
        rates.append(packets / (time.process_time() - t0))
    return {"median_packets_per_cpu_s": round(statistics.median(rates)),
            "repeats": [round(x) for x in rates],
            "packets_per_episode": packets / episodes}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--episodes", type=int, default=20)
    ap.add_argument("--size", type=int, default=2_000_000, help="bulk size [bytes]")
    ap.add_argument("--schedulers", default="minrtt,first_with_room")
    args = ap.parse_args(argv)
    report = {"scenario": SCENARIO["name"], "size_bytes": args.size, "episodes": args.episodes,
              "python": sys.version.split()[0], "results": {}}
    for name in args.schedulers.split(","):
        report["results"][name] = measure(_scheduler_factory(name), args.repeats, args.episodes, args.size)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
