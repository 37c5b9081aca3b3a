"""HOP (Chiariotti et al., "The HOP Protocol: Reliable Latency-Bounded End-to-End
Multipath Communication", IEEE/ACM ToN 2021, Sec. VI): deadline blocks over two paths.

    python -m falcon.train experiment=hop
    python -m falcon.train experiment=hop quick=true     # seconds (the quick_variant)

Protocol (keys of ``configs/experiment/hop.yaml``, section ``hop:``):

1. **Cases.** Synthetic two-path cases (:data:`CASES`): capacity redrawn
   every ``step_s`` (25 ms) from a truncated Gaussian with std ``std_mbps``
   (8 Mb/s); balanced 40/40, unbalanced 32/48, highly unbalanced 64/16 Mb/s
   (RTT 25/25 ms) and RTT-unbalanced 40/40 Mb/s at 20/30 ms. ``traces``:
   two public LTE traces, a SUBSTITUTE for the paper's private WiGig /
   802.11n / LTE traces (its own ``block_kb``: the traces carry less).
2. **Runs.** Per case, block size (``block_kb``), scheduler and seed
   (``seed`` .. ``seed + runs - 1``): one ``duration_s`` run. HOP variants
   (``hop_variants``: name -> :class:`baselines.hop.hop.HOP` kwargs) run on
   :func:`envs.deadline.run_block_episode`; a LEAP variant (``mode: leap``)
   picks its own block size, so it runs once per case and seed. The other
   names are ``<cc>+<scheduler>`` baselines (``cubic+minrtt`` = LowRTT,
   ``bbr+daps``, ``bbr+sttf``, ``bbr+dems``) carrying the blocks on the
   reliable emulated MPQUIC connection (:func:`envs.runner.run_episode`,
   app ``blocks``, no handshake), failures from
   :func:`envs.apps.blocks.block_metrics_from_times`.
3. **Summary.** Per (case, scheduler, size): mean failure probability with
   a 95 % t-interval over runs, mean goodput, redundancy. Per case: the
   no-queueing bound, empirical (:func:`baselines.hop.oracle.no_queueing_bound`
   of each HOP run's ``window_capacity``, mean over those runs) and Gaussian
   (:func:`baselines.hop.oracle.gaussian_bound`, synthetic cases); per
   scheduler the largest size whose mean failure <= 1 - p_thr and its
   offered rate (size x 8 / period) as a fraction of the empirical bound;
   in the highly unbalanced case the failure ratios DEMS / HOP, DAPS / HOP,
   STTF / HOP per size. LEAP: its per-block sizes (k x payload) pooled.
4. **Estimator quality** (``hop``, ``hop_paper``): per path, the fraction
   of blocks after the first ``skip_blocks`` whose realised window capacity
   is below the forecast's 2 % quantile (mean - z std), and the mean
   forecast vs the mean realised capacity; one run's series is plotted.

Runs go through :func:`falcon.runtime.run_jobs` (``runtime.workers=N``).
Outputs: ``hop.json``, ``hop.txt`` (with the paper's claims beside ours),
``hop.png`` (failure vs block size per case, log y), ``hop_leap.png``,
``hop_estimator.png``; MLflow metrics ``<case>/<scheduler>/<kb>/<metric>``.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from envs.cc import CC_REGISTRY
from envs.deadline import normalise_block
from envs.errors import ConfigError
from falcon.config import check_int, check_runtime
from falcon.experiment import info
from falcon.experiments import common, hop_report
from falcon.experiments.common import mean_ci

JOB = "hop"
#: synthetic cases: per path (mean Mb/s, RTT ms)
CASES = {
    "balanced": [(40.0, 25.0), (40.0, 25.0)],
    "unbalanced": [(32.0, 25.0), (48.0, 25.0)],
    "highly_unbalanced": [(64.0, 25.0), (16.0, 25.0)],
    "rtt_unbalanced": [(40.0, 20.0), (40.0, 30.0)],
}
KNOWN_CASES = (*CASES, "traces")
CC_CHOICES = tuple(CC_REGISTRY)
ESTIMATOR_VARIANTS = ("hop", "hop_paper")
METRICS = (
    "failure_probability",
    "goodput_mbps",
    "redundancy",
    "mean_block_bytes",
    "infeasible_fraction",
)


def hop_constructor_keys() -> set[str]:
    """The keyword arguments of :class:`baselines.hop.hop.HOP` (what a variant may set)."""
    import inspect

    from baselines.hop.hop import HOP

    return set(inspect.signature(HOP).parameters)


def _num(
    sec: Mapping, key: str, where: str, lo: float = 0.0, hi: float = math.inf, default=None
) -> float:
    v = sec.get(key, default)
    if (
        isinstance(v, bool)
        or not isinstance(v, (int, float))
        or not math.isfinite(v)
        or not lo < v < hi
    ):
        raise ConfigError(f"{where}.{key}: expected a number in ({lo:g}, {hi:g}), got {v!r}")
    return float(v)


def _kb_list(v, where: str) -> list[float]:
    if (
        not isinstance(v, list)
        or not v
        or any(
            isinstance(x, bool) or not isinstance(x, (int, float)) or not 0 < x < 10_000 for x in v
        )
    ):
        raise ConfigError(
            f"{where}: expected a non-empty list of block sizes in kB (0, 10000), got {v!r}"
        )
    return sorted({float(x) for x in v})


def _scheduler_kind(name: str, variants: Mapping) -> str:
    if name in variants:
        return "leap" if variants[name].get("mode") == "leap" else "hop"
    cc, plus, base = name.partition("+")
    if not plus or cc not in CC_CHOICES:
        raise ConfigError(
            f"{JOB}.schedulers: unknown scheduler {name!r}: neither a hop_variants name "
            f"({sorted(variants)}) nor <cc>+<scheduler> with cc in {list(CC_CHOICES)}"
        )
    from baselines import scheduler_class

    try:
        scheduler_class(base)
    except ConfigError as e:
        raise ConfigError(f"{JOB}.schedulers: {name!r}: {e}") from None
    return "baseline"


def settings(cfg):
    """``(cfg, sec)``: the validated section (one-line ConfigErrors)."""
    cfg, sec = common.job_config(cfg, JOB)
    check_int(cfg, "seed", 0)
    sec["seed"] = int(cfg.seed)
    sec["runs"] = common.check_positive_int(sec, "runs", 10)
    sec["duration_s"] = _num(sec, "duration_s", JOB, default=30)
    sec["std_mbps"] = _num(sec, "std_mbps", JOB, lo=-1e-12, default=8)
    sec["step_s"] = _num(sec, "step_s", JOB, default=0.025)
    sec["buffer_packets"] = common.check_positive_int(sec, "buffer_packets", 1000)
    sec["block_kb"] = _kb_list(sec.get("block_kb"), f"{JOB}.block_kb")
    try:  # the contract's defaults and checks live in envs.deadline (BLOCK_DEFAULTS)
        blk = normalise_block(sec.get("block"))
    except ConfigError as e:
        raise ConfigError(f"{JOB}.{e}") from None
    if sec["duration_s"] < blk["period_s"]:
        raise ConfigError(f"{JOB}.duration_s: must hold at least one period ({blk['period_s']} s)")
    blk["duration_s"] = sec["duration_s"]  # the run length is the experiment's
    sec["block"] = blk
    cases = sec.get("cases")
    if not isinstance(cases, list) or not cases or len(set(map(str, cases))) != len(cases):
        raise ConfigError(
            f"{JOB}.cases: expected a non-empty list of distinct case names, got {cases!r}"
        )
    for c in cases:
        if c not in KNOWN_CASES:
            raise ConfigError(f"{JOB}.cases: unknown case {c!r}; known: {list(KNOWN_CASES)}")
    if "traces" in cases:
        tr = sec.get("traces")
        if (
            not isinstance(tr, Mapping)
            or not isinstance(tr.get("paths"), list)
            or len(tr["paths"]) < 1
        ):
            raise ConfigError(
                f"{JOB}.traces: expected {{paths: [{{trace: ..., rtt_ms: ...}}, ...]}}, got {tr!r}"
            )
        if tr.get("block_kb") is not None:
            _kb_list(tr["block_kb"], f"{JOB}.traces.block_kb")
    variants = sec.get("hop_variants") or {}
    if not isinstance(variants, Mapping):
        raise ConfigError(
            f"{JOB}.hop_variants: expected {{name: {{HOP kwargs}}}}, got {variants!r}"
        )
    for n, kw in variants.items():
        if kw is not None and not isinstance(kw, Mapping):
            raise ConfigError(
                f"{JOB}.hop_variants.{n}: expected a mapping of HOP kwargs, got {kw!r}"
            )
        hop_keys = hop_constructor_keys()
        bad = set(kw or {}) - hop_keys
        if bad:
            raise ConfigError(
                f"{JOB}.hop_variants.{n}: unknown HOP key(s) {sorted(bad)}; known: {sorted(hop_keys)}"
            )
    sec["hop_variants"] = {n: dict(kw or {}) for n, kw in variants.items()}
    from baselines.hop.hop import HOP

    for n, kw in sec["hop_variants"].items():
        try:
            HOP(**kw)
        except (ConfigError, TypeError, ValueError) as e:
            raise ConfigError(f"{JOB}.hop_variants.{n}: {e}") from None
    sec["schedulers"] = common.check_schedulers(sec, JOB)
    sec["kinds"] = {n: _scheduler_kind(n, sec["hop_variants"]) for n in sec["schedulers"]}
    est = dict(sec.get("estimator") or {})
    est["skip_blocks"] = common.check_positive_int(est, "skip_blocks", 40, lo=0)
    est["z"] = _num(est, "z", f"{JOB}.estimator", default=2.054)
    est.setdefault("plot_case", cases[0])
    est["plot_block_kb"] = _num(
        est, "plot_block_kb", f"{JOB}.estimator", default=sec["block_kb"][0]
    )
    sec["estimator"] = est
    sec["runtime"] = check_runtime(cfg.get("runtime"))
    return cfg, sec


# ---------------------------------------------------------------- scenarios
def scenario_for(sec: Mapping, case: str) -> dict:
    """The two-path scenario of a case (``packet_size`` 1500, no handshake)."""
    if case == "traces":
        paths = [
            {"buffer_packets": sec["buffer_packets"], **dict(p)} for p in sec["traces"]["paths"]
        ]
    else:
        paths = [
            {
                "synthetic": {
                    "kind": "gaussian_rate",
                    "mean_mbps": m,
                    "std_mbps": sec["std_mbps"],
                    "step_s": sec["step_s"],
                    "duration_s": sec["duration_s"] + 2.0,
                    "dist": "truncnorm",
                },
                "rtt_ms": r,
                "buffer_packets": sec["buffer_packets"],
            }
            for m, r in CASES[case]
        ]
    return {
        "name": f"hop_{case}",
        "packet_size": sec["block"]["packet_bytes"],
        "setup": {"handshake": "none"},
        "paths": paths,
    }


def case_sizes(sec: Mapping, case: str) -> list[float]:
    if case == "traces" and sec["traces"].get("block_kb") is not None:
        return _kb_list(sec["traces"]["block_kb"], f"{JOB}.traces.block_kb")
    return list(sec["block_kb"])


@dataclass(frozen=True)
class Unit:
    """One run (plain data: picklable)."""

    case: str
    scheduler: str
    kind: str
    block_kb: float | None  # None: LEAP (picks its own sizes)
    seed: int
    scenario: dict
    block: dict
    hop_kwargs: dict
    keep_series: bool
    skip_blocks: int
    z: float


def _estimator_stats(forecasts, cap: np.ndarray, skip: int, z: float) -> dict:
    f = np.asarray(forecasts, float)  # blocks x paths x (mean, std)
    n = min(len(f), len(cap))
    f, cap = f[skip:n], np.asarray(cap, float)[skip:n]
    if not len(f):
        return {
            "below_q2": [math.nan] * cap.shape[1],
            "mean_forecast": [math.nan] * cap.shape[1],
            "mean_realised": [math.nan] * cap.shape[1],
            "blocks": 0,
        }
    q = f[:, :, 0] - z * f[:, :, 1]
    return {
        "below_q2": (cap < q).mean(axis=0).tolist(),
        "mean_forecast": f[:, :, 0].mean(axis=0).tolist(),
        "mean_realised": cap.mean(axis=0).tolist(),
        "blocks": int(len(f)),
    }


def run_unit(u: Unit) -> dict:
    """One run; its record."""
    from falcon.jobs import seed_globals

    seed_globals(u.seed)
    rec = {"case": u.case, "scheduler": u.scheduler, "block_kb": u.block_kb, "seed": u.seed}
    t0 = time.perf_counter()
    if u.kind == "baseline":
        import envs
        from baselines import make_scheduler
        from envs.apps.blocks import block_metrics_from_times

        cc, _, base = u.scheduler.partition("+")
        b = int(round(u.block_kb * 1000))
        app = {
            "kind": "blocks",
            "block_bytes": b,
            "period_s": u.block["period_s"],
            "deadline_s": u.block["deadline_s"],
            "duration_s": u.block["duration_s"],
        }
        r = envs.run_episode({**u.scenario, "cc": cc}, app, make_scheduler(base), u.seed)
        m = block_metrics_from_times(
            r.object_times, b, u.block["duration_s"], u.block["deadline_s"]
        )
        rec.update(
            failure_probability=float(m["failure_probability"]),
            goodput_mbps=float(m["goodput_mbps"]),
            redundancy=0.0,
            mean_block_bytes=float(b),
            infeasible_fraction=math.nan,
        )
    else:
        from baselines.hop.hop import HOP
        from baselines.hop.oracle import no_queueing_bound
        from envs.deadline import run_block_episode

        h = HOP(**u.hop_kwargs)
        blk = dict(u.block)
        if u.block_kb is not None:
            blk["block_bytes"] = int(round(u.block_kb * 1000))
        r = run_block_episode(u.scenario, blk, h, u.seed)
        rec.update({k: float(r.metrics.get(k, math.nan)) for k in METRICS})
        rec["bound"] = no_queueing_bound(r.window_capacity, u.block["p_thr"], u.block["period_s"])
        payload = u.block["packet_bytes"] - u.block["header_bytes"]
        if u.kind == "leap":
            rec["block_sizes_kb"] = (np.asarray(r.k, float) * payload / 1e3).round(3).tolist()
        if u.scheduler in ESTIMATOR_VARIANTS and h.forecasts:
            rec["estimator"] = _estimator_stats(h.forecasts, r.window_capacity, u.skip_blocks, u.z)
            if u.keep_series:
                f = np.asarray(h.forecasts, float)
                n = min(len(f), len(r.window_capacity))
                rec["series"] = {
                    "t_s": np.asarray(r.release_s[:n], float).round(4).tolist(),
                    "forecast_mean_kb": (f[:n, :, 0] / 1e3).round(3).tolist(),
                    "forecast_q2_kb": ((f[:n, :, 0] - u.z * f[:n, :, 1]) / 1e3).round(3).tolist(),
                    "realised_kb": (np.asarray(r.window_capacity[:n], float) / 1e3)
                    .round(3)
                    .tolist(),
                }
    rec["wall_s"] = time.perf_counter() - t0
    return rec


def build_units(sec: Mapping) -> list[Unit]:
    est = sec["estimator"]
    units = []
    seeds = [sec["seed"] + k for k in range(sec["runs"])]
    blk = {**sec["block"], "duration_s": sec["duration_s"]}
    for case in sec["cases"]:
        scen = scenario_for(sec, case)
        for name in sec["schedulers"]:
            kind = sec["kinds"][name]
            sizes = [None] if kind == "leap" else case_sizes(sec, case)
            for kb in sizes:
                for s in seeds:
                    keep = (
                        name in ESTIMATOR_VARIANTS
                        and case == est["plot_case"]
                        and s == seeds[0]
                        and kb is not None
                        and abs(kb - est["plot_block_kb"]) < 1e-9
                    )
                    units.append(
                        Unit(
                            case,
                            name,
                            kind,
                            kb,
                            s,
                            scen,
                            blk,
                            sec["hop_variants"].get(name, {}),
                            keep,
                            est["skip_blocks"],
                            est["z"],
                        )
                    )
    return units


# ---------------------------------------------------------------- summary
def summarise(records: list[dict], sec: Mapping) -> dict:
    from baselines.hop.oracle import gaussian_bound

    blk = sec["block"]
    target = 1.0 - blk["p_thr"]
    out = {}
    for case in sec["cases"]:
        rc = [r for r in records if r["case"] == case]
        per: dict[str, dict] = {}
        for name in sec["schedulers"]:
            rs = [r for r in rc if r["scheduler"] == name]
            sizes = sorted({r["block_kb"] for r in rs}, key=lambda x: -1 if x is None else x)
            cells = {}
            for kb in sizes:
                rk = [r for r in rs if r["block_kb"] == kb]
                fp, ci = mean_ci([r["failure_probability"] for r in rk])
                cell = {"failure_probability": fp, "failure_ci95": ci, "runs": len(rk)}
                for k in METRICS[1:]:
                    cell[k] = mean_ci([r[k] for r in rk])[0]
                cells["leap" if kb is None else f"{kb:g}"] = cell
            ok = [
                kb
                for kb in sizes
                if kb is not None and cells[f"{kb:g}"]["failure_probability"] <= target
            ]
            per[name] = {"sizes": cells, "max_block_kb": max(ok) if ok else math.nan}
            if sec["kinds"][name] == "leap":
                ks = [x for r in rs for x in r.get("block_sizes_kb", [])]
                per[name]["block_sizes_kb"] = ks
                per[name]["mean_block_kb"] = float(np.mean(ks)) if ks else math.nan
            ests = [r["estimator"] for r in rs if "estimator" in r]
            if ests:
                per[name]["estimator"] = {
                    k: np.nanmean([e[k] for e in ests], axis=0).tolist()
                    for k in ("below_q2", "mean_forecast", "mean_realised")
                }
        bounds = [r["bound"] for r in rc if "bound" in r]
        emp = {
            "block_bytes": float(np.mean([b["block_bytes"] for b in bounds]))
            if bounds
            else math.nan,
            "goodput_mbps": float(np.mean([b["goodput_mbps"] for b in bounds]))
            if bounds
            else math.nan,
        }
        gauss = {"block_bytes": math.nan, "goodput_mbps": math.nan}
        if case in CASES:
            gauss = gaussian_bound(
                [m for m, _ in CASES[case]],
                [sec["std_mbps"]] * len(CASES[case]),
                [r / 2e3 for _, r in CASES[case]],
                blk["deadline_s"],
                blk["p_thr"],
                blk["period_s"],
            )
        for p in per.values():
            kb = p["max_block_kb"]
            rate = kb * 1e3 * 8 / blk["period_s"] / 1e6 if math.isfinite(kb) else math.nan
            p["max_block_rate_mbps"] = rate
            p["max_block_goodput_mbps"] = (
                p["sizes"][f"{kb:g}"]["goodput_mbps"] if math.isfinite(kb) else math.nan
            )
            p["fraction_of_bound"] = (
                rate / emp["goodput_mbps"] if emp["goodput_mbps"] > 0 else math.nan
            )
        ratios = {}
        if "hop" in per:
            for other in ("bbr+dems", "bbr+daps", "bbr+sttf"):
                if other in per:
                    ratios[f"{other}/hop"] = {
                        s: (
                            c["failure_probability"] / per["hop"]["sizes"][s]["failure_probability"]
                            if per["hop"]["sizes"].get(s, {}).get("failure_probability", 0) > 0
                            else math.nan
                        )
                        for s, c in per[other]["sizes"].items()
                        if s in per["hop"]["sizes"]
                    }
        out[case] = {
            "schedulers": per,
            "bound_empirical": emp,
            "bound_gaussian": dict(gauss),
            "failure_ratios": ratios,
        }
    return out


def run_hop(sec: dict, progress: bool = True, log=None) -> dict:
    """The experiment (module docstring); the results dict."""
    from falcon.runtime import run_jobs

    t0 = time.perf_counter()
    log = log or (lambda metrics, step=None: None)
    units = build_units(sec)
    rt = sec["runtime"]
    if progress:
        info(
            f"{JOB}: {len(sec['cases'])} case(s), {len(sec['schedulers'])} scheduler(s), {sec['runs']} run(s) "
            f"of {sec['duration_s']:g} s: {len(units)} runs on runtime={rt['name']}"
            + (f" ({rt['workers']} workers)" if rt["name"] == "local" else "")
        )
    records = run_jobs(units, run_unit, rt, progress=progress, desc=JOB)
    summary = summarise(records, sec)
    for case, cs in summary.items():
        for name, p in cs["schedulers"].items():
            for s, c in p["sizes"].items():
                log(
                    {
                        f"{case}/{name}/{s}/{k}": v
                        for k, v in c.items()
                        if isinstance(v, float) and math.isfinite(v)
                    }
                )
            if math.isfinite(p["max_block_kb"]):
                log({f"{case}/{name}/max_block_kb": p["max_block_kb"]})
        if math.isfinite(cs["bound_empirical"]["goodput_mbps"]):
            log({f"{case}/bound_goodput_mbps": cs["bound_empirical"]["goodput_mbps"]})
    series = next(
        (r["series"] for r in records if "series" in r and r["scheduler"] == "hop"),
        next((r["series"] for r in records if "series" in r), None),
    )
    light = [{k: v for k, v in r.items() if k not in ("series", "block_sizes_kb")} for r in records]
    return {
        "job": JOB,
        "settings": common.settings_record(sec),
        "seeds": [sec["seed"] + k for k in range(sec["runs"])],
        "summary": summary,
        "records": light,
        "estimator_series": series,
        "paper": hop_report.PAPER,
        "claims": hop_report.claims(summary, sec),
        "wall_s": time.perf_counter() - t0,
    }


def run_job(cfg) -> dict:
    """``experiment=hop``: the tracked job."""
    cfg, sec = settings(cfg)
    progress = bool(cfg.get("progress", True))

    def body(tracker, folder):
        res = run_hop(sec, progress, tracker.log_metrics)
        return common.publish(tracker, folder, JOB, res, hop_report.table, hop_report.plot)

    params = {JOB: {k: copy.deepcopy(v) for k, v in sec.items() if k != "kinds"}}
    return common.run_tracked(cfg, JOB, params, body)


__all__ = [
    "run_job",
    "run_hop",
    "settings",
    "scenario_for",
    "build_units",
    "run_unit",
    "summarise",
    "mean_ci",
    "CASES",
]
