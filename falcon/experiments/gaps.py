"""GAPS (Liao et al., "Precise and Adaptable: Leveraging Deep Reinforcement Learning
for GAP-based Multipath Scheduler", IFIP Networking 2020): the out-of-order queue experiment.

    python -m falcon.train experiment=gaps
    python -m falcon.train experiment=gaps quick=true     # seconds (the quick_variant)

Protocol (keys of ``configs/experiment/gaps.yaml``, section ``gaps:``):

1. **Settings.** The paper's default setting (``default:``): two paths, RTT
   of the fast path ~ U[20, 50] ms and of the slow path ~ U[50, 100] ms,
   drawn per run from the run's seed only (every setting sees the same RTTs
   for a seed), both 50 Mbit/s, Bernoulli loss 0.01 %, router buffer 100
   packets, coupled BALIA, host (flow-control) buffers 6 MiB (initial =
   maximum window: no growth). Each sweep (``sweeps:``) changes one key of
   it (loss, bandwidth, in-network buffer, host buffer, number of subflows,
   congestion control); with n > 2 subflows the extra paths get RTTs evenly
   spread between the fast and the slow one. The poor network (``poor:``,
   1 % loss, 50 KB buffer) and the FCT settings (``fct:``, the default
   setting with 32 MB and 512 MB flows; ``long_scale`` scales the long one
   down) complete the list. Every setting but the FCT ones carries
   ``size_bytes`` (32 MB) bulk flows.
2. **Runs.** Per setting, seed (``seed`` .. ``seed + seeds - 1``) and
   scheduler: one flow, the scheduler wrapped in a
   :class:`~baselines.gaps.true_gap.GapRecorder`. Identical (scenario, flow
   size, seed, scheduler) runs are done once (e.g. the sweep value equal to
   the default). A Trainable agent (a ``train:`` section, e.g. ``gaps``,
   the DDPG agent) is fitted once on the default setting of the first seed
   before any evaluation (``fit(scenario=..., app=..., seed=..., log=...,
   progress=..., **train)``), then evaluated everywhere.
3. **TRUE GAP** per two-path setting and seed
   (:func:`baselines.gaps.true_gap.true_gap`, ``true_gap:``): the static
   GAP with the lowest mean OQS over a FixedGap sweep; **GAP deviation** of
   a run = |mean realised GAP - TRUE GAP| / TRUE GAP x 100 % (absolute
   packets when the TRUE GAP is 0, marked so). Not computed for n > 2
   subflows or the FCT settings.
4. **Metrics** per run: OQS mean and p99 [KB = 1000 bytes] (the receiver's
   reorder queue sampled at every data packet arrival, ``envs.metrics``),
   goodput [Mbit/s], FCT [s] (``download_time_s``) and the **application
   delay**: envs does not time individual bytes from arrival to in-order
   delivery, so we use the mean head-of-line (reorder) delay per byte,
   exact by Little's law: the time integral of the OQS over the flow
   divided by the bytes delivered (the queue is empty at both ends). It is
   the delay the reorder queue adds to an average byte, on top of the
   one-way network delay. For flows long enough that envs thinned its OQS
   samples (over 2^18 arrivals) the integral is over the kept samples.
   Beside the OQS of the whole flow, its "steady" mean and p99: the
   samples from ``warmup_s`` (1 s) after the first arrival on, i.e. without
   the slow-start exit, whose loss burst (hundreds of packets into the
   100-packet router buffers) dominates the whole-flow p99 whatever the
   scheduler (measured: minRTT, default setting, seed 0: p99 921 KB over
   the flow, 146 KB after 1 s; every sample above 500 KB at 0.36-0.46 s).
   Per setting and scheduler the table shows medians over seeds; the JSON
   keeps every per-seed value.

Outputs: ``gaps.json``, ``gaps.txt`` (with the paper's claims beside ours,
:mod:`falcon.experiments.gaps_report`), ``gaps.png`` (OQS CDF, default
setting), ``gaps_sweeps.png``, ``gaps_bars.png``, ``models/<agent>/`` (a
trained agent's model); MLflow metrics ``<setting>/<scheduler>/<metric>``
and ``train/<agent>/...``.
"""

from __future__ import annotations

import copy
import importlib
import json
import math
import re
import time
from collections.abc import Mapping

import numpy as np

from baselines.gaps.true_gap import GapRecorder, gap_deviation, true_gap
from envs.errors import ConfigError, is_whole_number
from falcon.config import check_int
from falcon.experiment import info
from falcon.experiments import common, gaps_report

JOB = "gaps"
MIB = 1 << 20
#: keys of ``default:`` (and of a sweep or ``poor:``)
SETTING_KEYS = (
    "rtt_fast_ms",
    "rtt_slow_ms",
    "bandwidth_mbps",
    "loss",
    "buffer_packets",
    "buffer_bytes",
    "cc",
    "host_buffer_mb",
    "subflows",
)
CC_CHOICES = ("lia", "olia", "balia", "cubic", "newreno")
#: metrics of a run kept per seed and summarised by their median
RUN_METRICS = (
    "oqs_mean_kb",
    "oqs_p99_kb",
    "oqs_max_kb",
    "oqs_mean_kb_steady",
    "oqs_p99_kb_steady",
    "app_delay_ms",
    "goodput_mbps",
    "fct_s",
    "mean_gap_packets",
    "gap_deviation",
)


# ---------------------------------------------------------------- settings
def _check_setting(s: Mapping, where: str) -> dict:
    unknown = set(s) - set(SETTING_KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {sorted(unknown)}; known: {list(SETTING_KEYS)}")
    s = dict(s)
    for k in ("rtt_fast_ms", "rtt_slow_ms"):
        v = s.get(k)
        if (
            not isinstance(v, (list, tuple))
            or len(v) != 2
            or not all(isinstance(x, (int, float)) for x in v)
            or not 0 < v[0] <= v[1]
        ):
            raise ConfigError(f"{where}.{k}: expected [lo, hi] in ms with 0 < lo <= hi, got {v!r}")
        s[k] = [float(v[0]), float(v[1])]
    for k, lo, hi in (
        ("bandwidth_mbps", 0.0, math.inf),
        ("loss", 0.0, 1.0),
        ("host_buffer_mb", 0.0, math.inf),
    ):
        v = s.get(k)
        if (
            isinstance(v, bool)
            or not isinstance(v, (int, float))
            or not lo <= v < hi
            or (k != "loss" and v == 0)
        ):
            raise ConfigError(
                f"{where}.{k}: expected a number in {'[0, 1)' if k == 'loss' else '(0, inf)'}, got {v!r}"
            )
    for k in ("buffer_packets", "buffer_bytes"):
        v = s.get(k)
        if v is not None and not is_whole_number(v, 1):
            raise ConfigError(f"{where}.{k}: expected a positive integer or null, got {v!r}")
    if s.get("cc") not in CC_CHOICES:
        raise ConfigError(f"{where}.cc: expected one of {list(CC_CHOICES)}, got {s.get('cc')!r}")
    n = s.get("subflows")
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 8:
        raise ConfigError(f"{where}.subflows: expected an integer in [1, 8], got {n!r}")
    return s


def _name(group: str, value) -> str:
    v = f"{value:g}" if isinstance(value, float) else str(value)
    return re.sub(r"[^A-Za-z0-9_.-]", "_", f"{group}_{v}")


def build_settings(sec: Mapping) -> list[dict]:
    """Every setting: ``{name, group, x, params, size_bytes, true_gap}``."""
    base = _check_setting(sec.get("default") or {}, f"{JOB}.default")
    size = common.check_positive_int(sec, "size_bytes", None)
    out = [{"name": "default", "group": "default", "x": None, "params": base, "size_bytes": size}]
    sweeps = sec.get("sweeps") or {}
    if not isinstance(sweeps, Mapping):
        raise ConfigError(f"{JOB}.sweeps: expected {{key: [values]}}, got {sweeps!r}")
    for key, values in sweeps.items():
        if key not in SETTING_KEYS or key in ("rtt_fast_ms", "rtt_slow_ms"):
            raise ConfigError(
                f"{JOB}.sweeps: cannot sweep {key!r}; sweepable: "
                f"{[k for k in SETTING_KEYS if not k.startswith('rtt')]}"
            )
        if not isinstance(values, list):
            raise ConfigError(f"{JOB}.sweeps.{key}: expected a list of values, got {values!r}")
        for v in values:
            p = _check_setting({**base, key: v}, f"{JOB}.sweeps.{key}")
            out.append(
                {"name": _name(key, v), "group": key, "x": v, "params": p, "size_bytes": size}
            )
    poor = sec.get("poor")
    if poor is not None:
        if not isinstance(poor, Mapping):
            raise ConfigError(
                f"{JOB}.poor: expected a mapping of setting keys or null, got {poor!r}"
            )
        out.append(
            {
                "name": "poor",
                "group": "poor",
                "x": None,
                "params": _check_setting({**base, **poor}, f"{JOB}.poor"),
                "size_bytes": size,
            }
        )
    fct = sec.get("fct")
    if fct is not None:
        if not isinstance(fct, Mapping):
            raise ConfigError(
                f"{JOB}.fct: expected {{short_bytes, long_bytes, long_scale}} or null, got {fct!r}"
            )
        scale = fct.get("long_scale", 1.0)
        if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not 0 < scale <= 1:
            raise ConfigError(f"{JOB}.fct.long_scale: expected a number in (0, 1], got {scale!r}")
        short = common.check_positive_int(fct, "short_bytes", None)
        long_ = max(1, int(common.check_positive_int(fct, "long_bytes", None) * scale))
        out.append(
            {"name": "fct_short", "group": "fct", "x": short, "params": base, "size_bytes": short}
        )
        out.append(
            {
                "name": "fct_long",
                "group": "fct",
                "x": long_,
                "params": base,
                "size_bytes": long_,
                "nominal_bytes": int(fct["long_bytes"]),
                "scale": float(scale),
            }
        )
    tg_on = bool((sec.get("true_gap") or {}).get("enabled", True))
    for s in out:
        s["true_gap"] = tg_on and s["group"] != "fct" and s["params"]["subflows"] == 2
    return out


def path_rtts_ms(params: Mapping, seed: int) -> list[float]:
    """The RTTs [ms] of a run: fast ~ U(rtt_fast_ms), slow ~ U(rtt_slow_ms)
    from a generator seeded by ``seed`` only; extra subflows evenly between."""
    rng = np.random.default_rng([int(seed), 0x6A75])
    fast = float(rng.uniform(*params["rtt_fast_ms"]))
    slow = float(rng.uniform(*params["rtt_slow_ms"]))
    n = params["subflows"]
    if n == 1:
        return [fast]
    return [fast + (slow - fast) * k / (n - 1) for k in range(n)]


def scenario_for(params: Mapping, seed: int, max_duration_s: float) -> dict:
    """The emulator scenario of a setting for a run seed."""
    host = int(params["host_buffer_mb"] * MIB)
    paths = [
        {
            "name": f"p{k}",
            "bandwidth_mbps": float(params["bandwidth_mbps"]),
            "rtt_ms": round(rtt, 3),
            "loss": float(params["loss"]),
            "buffer_packets": params["buffer_packets"],
            "buffer_bytes": params["buffer_bytes"],
        }
        for k, rtt in enumerate(path_rtts_ms(params, seed))
    ]
    return {
        "name": "gaps",
        "cc": params["cc"],
        "max_duration_s": float(max_duration_s),
        "flow_control": {"initial_window_bytes": host, "max_window_bytes": host},
        "paths": paths,
    }


def check_scheduler_names(sec: Mapping) -> dict[str, dict]:
    """The agent config of every listed scheduler (with ``agent_overrides``);
    a one-line ConfigError for an unknown name or an unimportable class."""
    names = common.check_schedulers(sec, JOB)
    overrides = dict(sec.get("agent_overrides") or {})
    configs = {}
    for n in names:
        try:
            cfg = common.agent_config(n, overrides.get(n))
        except ConfigError as e:
            raise ConfigError(f"{JOB}.schedulers: unknown scheduler {n!r} ({e})") from None
        target = str(cfg.get("_target_", ""))
        module, _, attr = target.rpartition(".")
        try:
            ok = hasattr(importlib.import_module(module), attr)
        except ImportError as e:
            raise ConfigError(
                f"{JOB}.schedulers: scheduler {n!r} is not available: cannot import {target} ({e})"
            ) from None
        if not ok:
            raise ConfigError(
                f"{JOB}.schedulers: scheduler {n!r} is not available: {module} has no {attr}"
            )
        configs[n] = cfg
    return configs


def settings(cfg):
    cfg, sec = common.job_config(cfg, JOB)
    check_int(cfg, "seed", 0)
    sec["seed"] = int(cfg.seed)
    sec["seeds"] = common.check_positive_int(sec, "seeds", 3)
    sec["schedulers"] = common.check_schedulers(sec, JOB)
    md = sec.get("max_duration_s", 600)
    if isinstance(md, bool) or not isinstance(md, (int, float)) or md <= 0:
        raise ConfigError(
            f"{JOB}.max_duration_s: expected a positive number of seconds, got {md!r}"
        )
    sec["cdf_points"] = common.check_positive_int(sec, "cdf_points", 201, lo=2)
    wu = sec.get("warmup_s", 1.0)
    if isinstance(wu, bool) or not isinstance(wu, (int, float)) or wu < 0:
        raise ConfigError(f"{JOB}.warmup_s: expected seconds >= 0, got {wu!r}")
    sec["warmup_s"] = float(wu)
    tg = dict(sec.get("true_gap") or {})
    tg.setdefault("extra_seeds", 0)
    common.check_positive_int(tg, "extra_seeds", 0, lo=0)
    sec["true_gap"] = tg
    sec["settings"] = build_settings(sec)
    configs = check_scheduler_names(sec)
    kind = (cfg.get("app") or {}).get("kind", "bulk")
    if kind != "bulk":
        raise ConfigError(
            f"{JOB}: app.kind must be bulk (flow sizes come from {JOB}.size_bytes and {JOB}.fct), "
            f"got {kind!r}"
        )
    return cfg, sec, configs, {"kind": "bulk"}


# ---------------------------------------------------------------- runs
def app_delay_ms(oqs_t, oqs_v, delivered_bytes: float) -> float:
    """Mean reorder delay per byte [ms]: integral of the OQS step function
    over time / bytes delivered (Little's law, module docstring)."""
    t = np.asarray(oqs_t, float)
    v = np.asarray(oqs_v, float)
    if len(t) < 2 or delivered_bytes <= 0:
        return 0.0
    return float(np.sum(v[:-1] * np.diff(t)) / delivered_bytes * 1000.0)


def one_run(
    scheduler, scenario: dict, app: dict, seed: int, warmup_s: float = 1.0
) -> tuple[dict, np.ndarray]:
    """Run one flow; ``(record, OQS samples [bytes])``. ``*_steady``: the OQS
    samples from ``warmup_s`` after the first data arrival on (NaN if none)."""
    import envs
    from falcon.jobs import seed_globals

    rec = GapRecorder(scheduler)
    seed_globals(seed)
    r = envs.run_episode(scenario, app, rec, seed)
    m = r.metrics
    v = np.asarray(r.timeseries["oqs_bytes"], float)
    t = np.asarray(r.timeseries["oqs_t"], float)
    steady = v[t >= t[0] + warmup_s] if len(t) else v
    done = not m["timed_out"]
    out = {
        "oqs_mean_kb": m["oqs_mean_bytes"] / 1e3,
        "oqs_p99_kb": m["oqs_p99_bytes"] / 1e3,
        "oqs_max_kb": m["oqs_max_bytes"] / 1e3,
        "oqs_mean_kb_steady": float(steady.mean()) / 1e3 if len(steady) else math.nan,
        "oqs_p99_kb_steady": float(np.percentile(steady, 99)) / 1e3 if len(steady) else math.nan,
        "app_delay_ms": app_delay_ms(
            r.timeseries["oqs_t"], v, m["app_bytes"] if done else math.nan
        ),
        "goodput_mbps": m["goodput_mbps"],
        "fct_s": m["download_time_s"],
        "timed_out": m["timed_out"],
        "mean_gap_packets": rec.mean_gap,
        "gap_decisions": len(rec.gaps),
        "path_share": [m.get(f"path{i}_share", math.nan) for i in range(len(scenario["paths"]))],
    }
    return out, v


def _key(*parts) -> str:
    return json.dumps(parts, sort_keys=True, default=str)


def fit_trainables(
    configs: Mapping[str, dict], sec: Mapping, app: dict, log, progress: bool, model_dir=None
) -> dict:
    """Build and fit every agent with a ``train:`` section once, on the
    default setting of the first seed; ``{name: fitted scheduler}``. With
    ``model_dir``, a scheduler with ``save(directory)`` saves its model in
    ``model_dir/<name>/`` (as falcon.train does)."""
    from falcon.jobs import instantiate_agent, seed_globals

    out = {}
    base = sec["settings"][0]
    for name, cfg in configs.items():
        train = cfg.get("train")
        if train is None:
            continue
        if not isinstance(train, Mapping):
            raise ConfigError(f"{JOB}: agent {name!r}: train: must be a mapping of fit() arguments")
        sched = instantiate_agent(name, cfg)
        if not callable(getattr(sched, "fit", None)):
            raise ConfigError(
                f"{JOB}: agent {name!r} has a train: section but no fit() (not a Trainable)"
            )
        scen = scenario_for(base["params"], sec["seed"], sec["max_duration_s"])
        t0 = time.perf_counter()
        seed_globals(sec["seed"])
        sched.fit(
            scenario=scen,
            app={**app, "size_bytes": base["size_bytes"]},
            seed=sec["seed"],
            log=lambda metrics, step=None, _n=name: log(
                {f"train/{_n}/{k}": v for k, v in metrics.items()}, step
            ),
            progress=progress,
            **dict(train),
        )
        if progress:
            info(f"{JOB}: trained {name} [{time.perf_counter() - t0:.1f} s]")
        if model_dir is not None and callable(getattr(sched, "save", None)):
            (model_dir / name).mkdir(parents=True)
            sched.save(model_dir / name)
        out[name] = sched
    return out


def run_gaps(
    sec: dict,
    configs: Mapping[str, dict],
    app: dict,
    progress: bool = True,
    log=None,
    model_dir=None,
) -> dict:
    """The experiment (module docstring); the results dict."""
    t0 = time.perf_counter()
    log = log or (lambda metrics, step=None: None)
    trained = fit_trainables(configs, sec, app, log, progress, model_dir)
    seeds = [sec["seed"] + k for k in range(sec["seeds"])]
    tg_cfg = sec["true_gap"]
    cache: dict[str, tuple] = {}
    records: list[dict] = []
    true_gaps: dict[str, dict] = {}
    cdf_samples: dict[str, list] = {n: [] for n in sec["schedulers"]}
    for st in sec["settings"]:
        t1 = time.perf_counter()
        app_s = {**app, "size_bytes": st["size_bytes"]}
        for seed in seeds:
            scen = scenario_for(st["params"], seed, sec["max_duration_s"])
            tg = None
            if st["true_gap"]:
                k = _key("true_gap", scen, app_s, seed)
                if k not in cache:
                    res = true_gap(
                        scen,
                        app_s,
                        seeds=[seed + 1_000 * j for j in range(tg_cfg["extra_seeds"] + 1)],
                        max_gap_packets=tg_cfg.get("max_gap_packets", 256),
                        step=tg_cfg.get("step", 16),
                        refine_step=tg_cfg.get("refine_step"),
                    )
                    cache[k] = (res.to_dict(),)
                tg = cache[k][0]
                true_gaps.setdefault(st["name"], {})[str(seed)] = tg
            for name in sec["schedulers"]:
                k = _key("run", scen, app_s, seed, name)
                if k not in cache:
                    sched = (
                        trained[name]
                        if name in trained
                        else common.build_agent(name, configs[name], seed)
                    )
                    rec, samples = one_run(sched, scen, app_s, seed, sec["warmup_s"])
                    cache[k] = (rec, samples if st["name"] == "default" else None)
                rec, samples = cache[k]
                rec = dict(rec)
                dev, unit = gap_deviation(
                    rec["mean_gap_packets"], tg["gap_packets"] if tg else math.nan
                )
                rec.update(
                    {
                        "setting": st["name"],
                        "scheduler": name,
                        "seed": seed,
                        "rtts_ms": [p["rtt_ms"] for p in scen["paths"]],
                        "true_gap_packets": tg["gap_packets"] if tg else None,
                        "gap_deviation": dev,
                        "gap_deviation_unit": unit if tg else None,
                    }
                )
                records.append(rec)
                if st["name"] == "default":
                    cdf_samples[name].append(samples)
        if progress:
            info(
                f"{JOB}: {st['name']}: {len(seeds)} seed(s) x {len(sec['schedulers'])} scheduler(s) "
                f"[{time.perf_counter() - t1:.1f} s]"
            )
    summary = summarise(records, sec)
    for sname, per in summary.items():
        for name, m in per.items():
            log(
                {
                    f"{sname}/{name}/{k}": v
                    for k, v in m.items()
                    if isinstance(v, float) and math.isfinite(v)
                }
            )
    q = np.linspace(0.0, 1.0, sec["cdf_points"])
    cdf = {
        n: (np.quantile(np.concatenate(v), q) / 1e3).tolist() for n, v in cdf_samples.items() if v
    }
    return {
        "job": JOB,
        "settings": {k: v for k, v in sec.items() if k != "settings"},
        "setting_list": sec["settings"],
        "app": app,
        "seeds": seeds,
        "true_gap": true_gaps,
        "summary": summary,
        "records": records,
        "oqs_cdf": {"quantiles": q.tolist(), "oqs_kb": cdf},
        "paper": gaps_report.PAPER,
        "claims": gaps_report.claims(summary),
        "wall_s": time.perf_counter() - t0,
    }


def summarise(records: list[dict], sec: Mapping) -> dict:
    """``{setting: {scheduler: {metric: median over seeds, ...}}}``."""
    out: dict[str, dict] = {}
    for st in sec["settings"]:
        per = {}
        for name in sec["schedulers"]:
            rs = [r for r in records if r["setting"] == st["name"] and r["scheduler"] == name]
            m = {}
            for k in RUN_METRICS:
                vals = [float(r[k]) for r in rs if r[k] is not None and math.isfinite(float(r[k]))]
                m[k] = float(np.median(vals)) if vals else math.nan
            tgs = [r["true_gap_packets"] for r in rs if r["true_gap_packets"] is not None]
            m["true_gap_packets"] = float(np.median(tgs)) if tgs else math.nan
            # the deviation's median over the seeds whose TRUE GAP is > 0 (in %); over all seeds
            # (absolute packets) only when every TRUE GAP is 0: never a median of mixed units
            unit = (
                "%"
                if any(r["gap_deviation_unit"] == "%" for r in rs)
                else ("packets" if any(r["gap_deviation_unit"] for r in rs) else None)
            )
            devs = [
                r["gap_deviation"]
                for r in rs
                if r["gap_deviation_unit"] == unit and math.isfinite(r["gap_deviation"])
            ]
            m["gap_deviation"] = float(np.median(devs)) if devs else math.nan
            m["gap_deviation_unit"] = unit
            m["gap_deviation_seeds"] = len(devs)
            m["timed_out"] = float(sum(r["timed_out"] for r in rs))
            m["runs"] = len(rs)
            per[name] = m
        out[st["name"]] = per
    return out


def run_job(cfg) -> dict:
    """``experiment=gaps``: the tracked job."""
    cfg, sec, configs, app = settings(cfg)
    progress = bool(cfg.get("progress", True))

    def body(tracker, folder):
        res = run_gaps(sec, configs, app, progress, tracker.log_metrics, folder / "models")
        return common.publish(tracker, folder, JOB, res, gaps_report.table, gaps_report.plot)

    params = {JOB: {k: copy.deepcopy(v) for k, v in sec.items() if k != "settings"}, "app": app}
    return common.run_tracked(cfg, JOB, params, body)


__all__ = [
    "run_job",
    "run_gaps",
    "settings",
    "build_settings",
    "scenario_for",
    "path_rtts_ms",
    "app_delay_ms",
    "one_run",
    "summarise",
    "check_scheduler_names",
]
