"""FALCON's online cost: per-packet CPU against minRTT, one adaptation, memory over a long run.

    python benchmarks/falcon_online.py [--bank PATH] [--seeds 3] [--size-mb 20]

--bank defaults to the quick preset's bank in the user cache (built when missing;
docs/guide/install.md).

Prints JSON lines:

* per Table I pair: CPU time per packet sent [us] of the whole emulation with
  FALCON (FALCON-N: no offline loop) and with minRTT, medians over seeds;
* one adaptation: the detector's CPU per ACK [us] (RTT and loss update), the
  wall time of estimation + selection and of the K fine-tuning steps [ms],
  and in emulated time the estimation window and the fine-tuning cost [s]
  plus the decisions from trigger to deployment (medians over the
  adaptations of 5 downloads on 4G + 5G);
* memory: traced Python allocations after 10, 20, 40, ... downloads with
  periodic condition changes (flat = no growth with the run's length).

Run it on an idle machine: on a loaded one the CPU times inflate.
"""

from __future__ import annotations

import argparse
import gc
import json
import time
import tracemalloc

import numpy as np

import envs
from baselines.changepoint.detectors import PathChangeDetector
from baselines.rule_based.minrtt import MinRTT
from falcon.online.scheduler import FalconScheduler
from metalearning.bank import MetaModelBank

PAIRS = {
    "4g_5g": [{"link": "4g"}, {"link": "5g"}],
    "4g_wlan": [{"link": "4g"}, {"link": "wlan"}],
    "5g_wlan": [{"link": "5g"}, {"link": "wlan"}],
}


def per_packet(bank, seeds: int, size: int) -> None:
    app = {"kind": "bulk", "size_bytes": size}
    for name, paths in PAIRS.items():
        row = {}
        for label, make in (
            ("minrtt", MinRTT),
            ("falcon", lambda: FalconScheduler(bank, offline=None)),
        ):
            us = []
            for seed in range(seeds):
                sched = make()
                c0 = time.process_time()
                r = envs.run_episode({"paths": paths}, app, sched, seed)
                us.append(1e6 * (time.process_time() - c0) / max(1.0, r.metrics["packets_sent"]))
            row[label] = round(float(np.median(us)), 1)
        print(
            json.dumps(
                {
                    "pair": name,
                    "cpu_us_per_packet": row,
                    "ratio_falcon_minrtt": round(row["falcon"] / row["minrtt"], 2),
                }
            ),
            flush=True,
        )


def adaptation(bank) -> None:
    det = PathChangeDetector()
    xs = np.random.default_rng(0).gamma(25, 0.03 / 25, 40_000)
    c0 = time.process_time()
    for x in xs:
        det.update_rtt(0, float(x), 0.0)
        det.update_loss(0, False, 0.0)
    det_us = 1e6 * (time.process_time() - c0) / len(xs)
    sched = FalconScheduler(bank, offline=None, same_cell="reload")
    for seed in range(5):
        sched.run_episode(
            {"paths": PAIRS["4g_5g"]}, {"kind": "bulk", "size_bytes": 2_000_000}, seed
        )
    ev = [e for e in sched.events if e.action == "adapt" and e.deploy_time is not None]

    def med(values):
        values = [v for v in values if v is not None]
        return float(np.median(values)) if values else float("nan")

    print(
        json.dumps(
            {
                "detector_us_per_ack": round(det_us, 1),
                "estimate_select_wall_ms": med([1e3 * e.wall_s.get("select", np.nan) for e in ev]),
                "finetune_wall_ms": med([1e3 * e.wall_s.get("finetune", np.nan) for e in ev]),
                "window_emulated_s": med([e.select_time - e.time for e in ev]),
                "finetune_emulated_s": med([e.finetune_cost_s for e in ev]),
                "decisions_trigger_to_deploy": med([e.decisions_to_deploy for e in ev]),
                "adaptations": len(ev),
            }
        ),
        flush=True,
    )


def memory(bank, episodes: int) -> None:
    paths = [
        {
            "link": "4g",
            "schedule": {
                "segments": [{"at_s": 0.1, "rtt_ms": 150}, {"at_s": 0.2, "rtt_ms": 29.2}],
                "period_s": 0.3,
            },
        },
        {"link": "5g"},
    ]
    app = {"kind": "bulk", "size_bytes": 2_000_000}
    sched = FalconScheduler(bank, offline={"interval_episodes": 5})
    tracemalloc.start()
    sizes = {}
    for seed in range(episodes):
        sched.run_episode({"paths": paths}, app, seed)
        if (seed + 1) % 10 == 0:
            gc.collect()  # count live objects, not cyclic garbage awaiting collection
            sizes[seed + 1] = round(tracemalloc.get_traced_memory()[0] / 1e6, 2)
    tracemalloc.stop()
    print(
        json.dumps(
            {
                "traced_mb_after_downloads": sizes,
                "changes": sched.changes,
                "adaptations": sched.adaptations,
            }
        ),
        flush=True,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bank", default=None, help="a bank file (default: the quick preset's)")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--size-mb", type=float, default=20.0)
    ap.add_argument("--memory-downloads", type=int, default=60)
    ap.add_argument("--only-memory", action="store_true")
    args = ap.parse_args()
    if args.bank is None:
        from falcon.bank_job import ensure_bank

        bank = ensure_bank("quick")[0]
    else:
        bank = MetaModelBank.read(args.bank)
    if not args.only_memory:
        per_packet(bank, args.seeds, int(args.size_mb * 1e6))
        adaptation(bank)
    memory(bank, args.memory_downloads)


if __name__ == "__main__":
    main()
