"""BOCPD change detection benchmark: delay, false alarms, cost per sample.

    python benchmarks/bocpd_detection.py [--seeds 10] [--quick] [--out FILE]

Everything runs through :class:`baselines.changepoint.PathChangeDetector`
with its defaults (one path), on synthetic signals drawn like the emulator
draws them:

- RTT: per-sample ``mean * Gamma(shape 1/cv^2, scale cv^2)`` (mean ``mean``,
  std/mean ``cv``; ``envs.link.DelayModel``). For each std ratio ``cv`` and
  mean-change factor ``f`` (up and down), ``--seeds`` signals of
  ``PRE`` samples at a base mean (cycled over 5-600 ms) then ``POST`` samples
  at ``f`` times that mean. Delay = samples of the new segment seen when the
  change is reported (first post-change sample = 1); a change not reported
  within ``POST`` samples is a miss. False alarms: separate stable signals
  of ``STABLE`` samples per (cv, mean); every report is a false alarm.
- Loss: Bernoulli per packet; loss rate ``p1`` for ``PRE_PKTS`` packets,
  then ``p2``; delay in packets. False alarms on stable rates.
- Cost: wall time per ``BOCPD.update`` for both observation models and
  several truncations, and per sample of ``PathChangeDetector.update_rtt`` /
  per packet of ``update_loss`` (amortised over the groups), median of
  repeats (``time.perf_counter``; median and min over repeats: the machine
  is shared and noisy, the min is the closest to the intrinsic cost).

Output: one JSON document (stdout, and ``--out`` if given).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time

import numpy as np

from baselines.changepoint import BOCPD, BetaBinomial, PathChangeDetector, StudentT

MEANS_MS = (5.0, 20.0, 50.0, 200.0, 600.0)
CVS = (0.1, 0.3, 0.5, 1.0, 1.5)
FACTORS = (1.5, 2.0, 3.0, 5.0, 1 / 1.5, 0.5, 1 / 3, 0.2)
PRE, POST, STABLE = 3000, 2000, 20000
LOSS_PAIRS = (
    (0.001, 0.05),
    (0.05, 0.001),
    (0.001, 0.01),
    (0.01, 0.001),
    (0.01, 0.05),
    (0.05, 0.01),
    (0.0, 0.01),
    (0.007, 0.001),
    (0.05, 0.2),
    (0.2, 0.05),
    (0.02, 0.01),
)
LOSS_STABLE = (0.0, 0.001, 0.007, 0.01, 0.05, 0.2)
PRE_PKTS, POST_PKTS, STABLE_PKTS = 30000, 20000, 200000


def gamma_rtt(rng: np.random.Generator, mean_s: float, cv: float, n: int) -> np.ndarray:
    k = 1.0 / (cv * cv)
    return mean_s * rng.gamma(k, 1.0 / k, n)


def _stats(delays: list[float]) -> dict:
    """median / p90 / max over all runs, misses counted as +inf (null when inf)."""
    arr = np.array([math.inf if d is None else d for d in delays], dtype=float)

    def q(p):
        v = float(np.percentile(arr, p, method="higher"))
        return None if math.isinf(v) else v

    return {
        "runs": len(arr),
        "missed": int(np.isinf(arr).sum()),
        "median": q(50),
        "p90": q(90),
        "max": q(100),
    }


def run_rtt_signal(rtt: np.ndarray, change_at: int | None) -> tuple[int | None, int]:
    """(delay of the first report at/after the change or None, false alarms)."""
    det = PathChangeDetector()
    delay, false = None, 0
    for i, x in enumerate(rtt.tolist()):
        if det.update(0, x, i * 1e-3):
            if change_at is not None and i >= change_at and delay is None:
                delay = i - change_at + 1
            elif change_at is None or i < change_at:
                false += 1
    return delay, false


def run_loss_signal(lost: np.ndarray, change_at: int | None) -> tuple[int | None, int]:
    det = PathChangeDetector()
    delay, false = None, 0
    for i, x in enumerate(lost.tolist()):
        if det.update_loss(0, x, i * 1e-4):
            if change_at is not None and i >= change_at and delay is None:
                delay = i - change_at + 1
            elif change_at is None or i < change_at:
                false += 1
    return delay, false


def bench_rtt(seeds: int, quick: bool) -> dict:
    cvs = CVS[::2] if quick else CVS
    factors = (2.0, 3.0, 0.5, 1 / 3) if quick else FACTORS
    delays, pre_false, pre_samples = [], 0, 0
    for ci, cv in enumerate(cvs):
        for fi, f in enumerate(factors):
            ds = []
            for s in range(seeds):
                rng = np.random.default_rng([1, ci, fi, s])
                m = MEANS_MS[(s + fi) % len(MEANS_MS)] / 1000.0
                x = np.concatenate([gamma_rtt(rng, m, cv, PRE), gamma_rtt(rng, m * f, cv, POST)])
                d, fa = run_rtt_signal(x, PRE)
                ds.append(d)
                pre_false += fa
                pre_samples += PRE
            delays.append({"cv": cv, "factor": round(f, 4), **_stats(ds)})
    stable = []
    n_stable = STABLE // 4 if quick else STABLE
    for ci, cv in enumerate(cvs):
        for mi, m in enumerate(MEANS_MS):
            rng = np.random.default_rng([2, ci, mi])
            _, fa = run_rtt_signal(gamma_rtt(rng, m / 1000.0, cv, n_stable), None)
            stable.append(
                {
                    "cv": cv,
                    "mean_ms": m,
                    "samples": n_stable,
                    "alarms": fa,
                    "per_10k": 1e4 * fa / n_stable,
                }
            )
    tot_a = sum(r["alarms"] for r in stable) + pre_false
    tot_n = sum(r["samples"] for r in stable) + pre_samples
    return {
        "delay_samples": delays,
        "false_alarms_stable": stable,
        "false_alarms_per_10k_overall": 1e4 * tot_a / tot_n,
        "samples_without_change": tot_n,
    }


def bench_loss(seeds: int, quick: bool) -> dict:
    pairs = LOSS_PAIRS[:4] if quick else LOSS_PAIRS
    delays, pre_false, pre_pkts = [], 0, 0
    for pi, (p1, p2) in enumerate(pairs):
        ds = []
        for s in range(seeds):
            rng = np.random.default_rng([3, pi, s])
            lost = np.concatenate([rng.random(PRE_PKTS) < p1, rng.random(POST_PKTS) < p2])
            d, fa = run_loss_signal(lost, PRE_PKTS)
            ds.append(d)
            pre_false += fa
            pre_pkts += PRE_PKTS
        delays.append({"from": p1, "to": p2, **_stats(ds)})
    stable = []
    n_stable = STABLE_PKTS // 4 if quick else STABLE_PKTS
    for pi, p in enumerate(LOSS_STABLE):
        rng = np.random.default_rng([4, pi])
        _, fa = run_loss_signal(rng.random(n_stable) < p, None)
        stable.append(
            {"loss": p, "packets": n_stable, "alarms": fa, "per_100k_packets": 1e5 * fa / n_stable}
        )
    tot_a = sum(r["alarms"] for r in stable) + pre_false
    tot_n = sum(r["packets"] for r in stable) + pre_pkts
    return {
        "delay_packets": delays,
        "false_alarms_stable": stable,
        "false_alarms_per_100k_packets_overall": 1e5 * tot_a / tot_n,
        "packets_without_change": tot_n,
    }


def _time_per_call(fn, items, repeats: int) -> dict:
    """µs per call over ``items``: median and min over ``repeats`` passes."""
    per = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for v in items:
            fn(v)
        per.append(1e6 * (time.perf_counter() - t0) / len(items))
    return {"median": statistics.median(per), "min": min(per)}


def bench_cost(quick: bool) -> dict:
    rng = np.random.default_rng(5)
    n = 2000 if quick else 10000
    reps = 3 if quick else 5
    y = np.cbrt(1000 * gamma_rtt(rng, 0.05, 0.5, n)).tolist()
    k = rng.binomial(100, 0.01, n).tolist()
    out: dict = {"bocpd_update_us": {}}
    for M in (100, 300, 1000):
        # warm up to a full vector first: the cost is then the steady state
        b = BOCPD(1000.0, StudentT(1.0, 0.5, 0.01, 3.7), max_run_length=M)
        for v in y[: M + 1]:
            b.update(v)
        out["bocpd_update_us"][f"studentt_M{M}"] = _time_per_call(b.update, y, reps)
        b = BOCPD(1000.0, BetaBinomial(100, 0.5, 20.0), max_run_length=M)
        for v in k[: M + 1]:
            b.update(v)
        out["bocpd_update_us"][f"betabinomial_M{M}"] = _time_per_call(b.update, k, reps)
    det = PathChangeDetector()
    rtt = gamma_rtt(rng, 0.05, 0.5, 4 * n).tolist()
    for x in rtt[:2000]:
        det.update_rtt(0, x, 0.0)
    out["path_detector_rtt_us_per_sample"] = _time_per_call(
        lambda x: det.update_rtt(0, x, 0.0), rtt, reps
    )
    lost = (rng.random(20 * n) < 0.01).tolist()
    for x in lost[:50000]:
        det.update_loss(0, x, 0.0)
    out["path_detector_loss_us_per_packet"] = _time_per_call(
        lambda x: det.update_loss(0, x, 0.0), lost, reps
    )
    out["path_detector_state_bytes_per_path"] = det.nbytes()
    return out


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=10, help="signals per grid point")
    ap.add_argument("--quick", action="store_true", help="a smaller grid (smoke test)")
    ap.add_argument("--out", default=None, help="also write the JSON here")
    args = ap.parse_args(argv)
    d = PathChangeDetector()
    t0 = time.perf_counter()
    report = {
        "detector": {
            k: getattr(d, k)
            for k in (
                "rtt_group",
                "rtt_hazard",
                "rtt_prior",
                "loss_group",
                "loss_hazard",
                "loss_prior",
                "max_run_length",
                "tail_threshold",
                "threshold",
                "rtt_min_lag",
                "loss_min_lag",
                "min_run",
                "refractory_s",
            )
        },
        "signals": {
            "rtt": f"{PRE} samples then {POST} after the change; stable: {STABLE}",
            "loss": f"{PRE_PKTS} packets then {POST_PKTS}; stable: {STABLE_PKTS}",
            "seeds": args.seeds,
            "quick": args.quick,
        },
        "rtt": bench_rtt(args.seeds, args.quick),
        "loss": bench_loss(args.seeds, args.quick),
        "cost": bench_cost(args.quick),
    }
    report["wall_s"] = time.perf_counter() - t0
    text = json.dumps(report, indent=1)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(text + "\n")
    print(text)
    return report


if __name__ == "__main__":
    main(sys.argv[1:])
