"""Hybrid MPTCP for distributed edge learning (Pokhrel, Choi, Walid, "Fair and Efficient
Distributed Edge Learning with Hybrid Multipath TCP", IEEE/ACM ToN 2023).

    python -m falcon.train experiment=hybrid
    python -m falcon.train experiment=hybrid quick=true     # seconds (the quick_variant)

Protocol (keys of ``configs/experiment/hybrid.yaml``, section ``hybrid:``):

1. **Training.** Each learner (``hybrid``, ``hybrid_paper``, ``drl_mptcp``: the agent configs
   ``configs/agent/<name>.yaml``, their ``train:`` sections with
   ``hybrid.train`` merged in) is trained ``sessions`` times, session ``i``
   with seed ``seed + i`` (:meth:`baselines.hybrid.agent.HybridMPTCP.fit`);
   the learning score of a session is the mean of its episodes' scores (mean
   reward per slot: the paper's "learning score"), the training curve is
   kept, the model saved.
2. **Evaluation** on the DEL workload (:func:`envs.edge_learning.run_del_episode`),
   seed ``seed + i`` with session ``i``'s models, every scheduler on every
   setting:

   * ``exp1`` (Figs. 2, 7): two paths at 50 ms and 3 % loss, one at 8 Mb/s,
     the other 8 -> 2 -> 16 Mb/s (its ``schedule``), the paper's 600 MB
     model uploads; per phase of the schedule the utilisation (the workers'
     application throughput over the phase's summed path capacity), the
     throughput fluctuation, the series over time;
   * ``exp23`` (Figs. 8-12): six workers, both paths at each of
     ``bandwidth_mbps``, CUBIC cross traffic on path 0, per mode (``bsp``:
     Exp. 2; ``ssp``: Exps. 3-5): iteration time (mean, p95), unfairness
     (std of iteration counts), Jain's index (ours), fluctuation, the
     straggler's throughput over time (Exp. 4, from the ssp runs);
   * ``exp6`` (Fig. 13): 50 Mb/s, 0..3 bandwidth stragglers, bsp: iteration time.

   Schedulers: the learners (one agent per connection, loaded from the
   session's model, greedy; ``hybrid`` is ours, a gain on LIA's window held
   over the slot, ``hybrid_paper`` the paper's one-shot window scaling);
   ``lia`` = MPTCP-LIA with minRTT, the MPTCP
   default scheduler; ``cubic`` = single-path TCP CUBIC on path 0 (the
   scenario's first path only: the one the cross traffic shares).
3. **Claims** (:mod:`falcon.experiments.hybrid_report`): iteration time
   against LIA's and DRL-MPTCP's, fairness, smoothness against DRL-MPTCP,
   learning score and CPU per slot against DRL-MPTCP, each with our numbers.

Runs go through :func:`falcon.runtime.run_jobs` (``runtime.workers=N``).
Outputs: ``hybrid.json``, ``hybrid.txt`` (with the paper's claims beside
ours), ``hybrid.png`` (iteration time and unfairness vs bandwidth, iteration
time vs stragglers), ``hybrid_throughput.png`` (Exp. 1 and the straggler's
throughput over time), ``hybrid_training.png`` (learning curves), the models
under ``models/<learner>/session<i>/``; MLflow metrics
``<exp>/<setting>/<scheduler>/<metric>``.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from envs.errors import ConfigError, is_whole_number
from falcon.config import check_int, check_runtime
from falcon.experiment import info
from falcon.experiments import common, hybrid_report

JOB = "hybrid"
#: learners: agent config names whose scheduler is a baselines.hybrid.agent.HybridMPTCP
LEARNERS = ("hybrid", "hybrid_paper", "drl_mptcp")
#: rule-based baselines: name -> (cc, scheduler, single path)
BASELINES = {"lia": ("lia", "minrtt", False), "cubic": ("cubic", "minrtt", True)}
EXPERIMENTS = ("exp1", "exp23", "exp6")
METRICS = (
    "iteration_time_mean_s",
    "iteration_time_p95_s",
    "unfairness_std",
    "jain_throughput",
    "throughput_mean_mbps",
    "throughput_fluctuation_mbps",
    "straggler_throughput_mean_mbps",
    "iterations_mean",
    "cross_throughput_mbps",
)
#: the scenario keys every DEL connection shares (the paths come from the experiment)
BASE_SCENARIO = {"setup": {"handshake": "none"}}


# ---------------------------------------------------------------- settings
def _section(sec: Mapping, key: str) -> dict:
    v = sec.get(key)
    if not isinstance(v, Mapping):
        raise ConfigError(f"{JOB}.{key}: expected a mapping, got {v!r}")
    return dict(v)


def _bandwidths(v, where: str) -> list[float]:
    vals = v if isinstance(v, list) else [v]
    if not vals or any(
        isinstance(x, bool) or not isinstance(x, int | float) or not 0 < x < 1e5 for x in vals
    ):
        raise ConfigError(
            f"{where}: expected a bandwidth or a non-empty list of bandwidths in Mbit/s, got {v!r}"
        )
    return [float(x) for x in vals]


def settings(cfg):
    """``(cfg, sec)``: the validated section (one-line ConfigErrors)."""
    from envs.edge_learning import normalise_workload
    from envs.scenario import normalise_scenario

    cfg, sec = common.job_config(cfg, JOB)
    check_int(cfg, "seed", 0)
    sec["seed"] = int(cfg.seed)
    sec["sessions"] = common.check_positive_int(sec, "sessions", 3)
    sec["schedulers"] = common.check_schedulers(sec, JOB)
    for name in sec["schedulers"]:
        if name not in LEARNERS and name not in BASELINES:
            raise ConfigError(
                f"{JOB}.schedulers: unknown scheduler {name!r}; known: {[*LEARNERS, *BASELINES]}"
            )
    train = sec.get("train") or {}
    if not isinstance(train, Mapping):
        raise ConfigError(f"{JOB}.train: expected a mapping of train: overrides, got {train!r}")
    sec["train"] = dict(train)
    exps = sec.get("experiments")
    if (
        not isinstance(exps, list)
        or not exps
        or any(e not in EXPERIMENTS for e in exps)
        or len(set(exps)) != len(exps)
    ):
        raise ConfigError(
            f"{JOB}.experiments: expected a non-empty list of distinct names from "
            f"{list(EXPERIMENTS)}, got {exps!r}"
        )
    for name in exps:
        e = _section(sec, name)
        try:
            if name == "exp1":
                if not isinstance(e.get("paths"), list) or len(e["paths"]) < 1:
                    raise ConfigError("paths: expected a non-empty list of path configs")
                normalise_scenario({**BASE_SCENARIO, "paths": e["paths"]})
            else:
                e["bandwidth_mbps"] = _bandwidths(e.get("bandwidth_mbps"), "bandwidth_mbps")
                for key in ("rtt_ms", "buffer_packets"):
                    if (
                        isinstance(e.get(key), bool)
                        or not isinstance(e.get(key), int | float)
                        or not e[key] > 0
                    ):
                        raise ConfigError(f"{key}: expected a positive number, got {e.get(key)!r}")
                if (
                    isinstance(e.get("loss"), bool)
                    or not isinstance(e.get("loss", 0.0), int | float)
                    or not 0.0 <= e.get("loss", 0.0) < 1.0
                ):
                    raise ConfigError(
                        f"loss: expected a probability in [0, 1), got {e.get('loss')!r}"
                    )
            if name == "exp23":
                modes = e.get("modes")
                if (
                    not isinstance(modes, list)
                    or not modes
                    or any(m not in ("bsp", "ssp") for m in modes)
                ):
                    raise ConfigError(
                        f"modes: expected a non-empty list of bsp / ssp, got {modes!r}"
                    )
            if name == "exp6":
                st = e.get("stragglers")
                if not isinstance(st, list) or not st or any(not is_whole_number(x, 0) for x in st):
                    raise ConfigError(
                        f"stragglers: expected a non-empty list of counts >= 0, got {st!r}"
                    )
                w = dict(e.get("workload") or {})
                if max(st) > w.get("workers", 6):
                    raise ConfigError(
                        f"stragglers: {max(st)} stragglers but {w.get('workers', 6)} workers"
                    )
            for w in _workloads(name, e):
                normalise_workload(w)
        except ConfigError as err:
            raise ConfigError(f"{JOB}.{name}.{err}") from None
        sec[name] = e
    sec["experiments"] = list(exps)
    sec["runtime"] = check_runtime(cfg.get("runtime"))
    return cfg, sec


# ---------------------------------------------------------------- settings -> runs
def _workloads(name: str, e: Mapping) -> list[dict]:
    """Every workload mapping a setting of experiment ``name`` runs (for validation)."""
    w = dict(e.get("workload") or {})
    if name == "exp23":
        return [{**w, "mode": m} for m in e["modes"]]
    if name == "exp6":
        return [
            {**w, "stragglers": {**dict(w.get("stragglers") or {}), "count": c}}
            for c in e["stragglers"]
        ]
    return [w]


def _two_paths(e: Mapping, bw: float) -> list[dict]:
    return [
        {
            "bandwidth_mbps": bw,
            "rtt_ms": e["rtt_ms"],
            "loss": e.get("loss", 0.0),
            "buffer_packets": int(e["buffer_packets"]),
        }
        for _ in range(2)
    ]


def settings_of(sec: Mapping) -> list[tuple[str, str, dict, dict]]:
    """``(experiment, setting label, paths, workload)`` of every evaluated setting."""
    out = []
    for name in sec["experiments"]:
        e = sec[name]
        if name == "exp1":
            out.append((name, "time_varying", copy.deepcopy(e["paths"]), dict(e["workload"])))
        elif name == "exp23":
            for mode, w in zip(e["modes"], _workloads(name, e)):
                for bw in e["bandwidth_mbps"]:
                    out.append((name, f"{mode}_{bw:g}mbps", _two_paths(e, bw), w))
        else:
            for c, w in zip(e["stragglers"], _workloads(name, e)):
                out.append((name, f"stragglers_{c}", _two_paths(e, e["bandwidth_mbps"][0]), w))
    return out


@dataclass(frozen=True)
class TrainUnit:
    """One training session (plain data: picklable)."""

    learner: str
    session: int
    seed: int
    agent_cfg: dict
    folder: str


@dataclass(frozen=True)
class Unit:
    """One evaluation run (plain data: picklable)."""

    experiment: str
    setting: str
    scheduler: str
    session: int
    seed: int
    paths: list
    workload: dict
    model: str | None = None
    keep_series: bool = False
    extra: dict = field(default_factory=dict)


def train_unit(u: TrainUnit) -> dict:
    """Train one session; its record (scores per episode, CPU, model path)."""
    from falcon.jobs import seed_globals

    seed_globals(u.seed)
    agent = common.build_agent(
        u.learner, {k: v for k, v in u.agent_cfg.items() if k != "train"}, u.seed
    )
    curve: list[dict] = []
    final = agent.fit(
        scenario={**BASE_SCENARIO, "paths": [{"bandwidth_mbps": 10}, {"bandwidth_mbps": 10}]},
        app=None,
        seed=u.seed,
        log=lambda m, step=None: curve.append(dict(m)),
        progress=False,
        **u.agent_cfg["train"],
    )
    folder = Path(u.folder)
    folder.mkdir(parents=True, exist_ok=True)
    agent.save(folder)
    scores = [c["score"] for c in curve if math.isfinite(c.get("score", math.nan))]
    return {
        "learner": u.learner,
        "session": u.session,
        "seed": u.seed,
        "model": str(folder),
        "learning_score": float(np.mean(scores)) if scores else math.nan,
        "curve": [{k: float(v) for k, v in c.items()} for c in curve],
        "cpu_seconds_per_slot": float(final.get("cpu_seconds_per_slot", math.nan)),
        "train_wall_s": float(final.get("train_wall_s", math.nan)),
        "episodes": int(final.get("episodes", len(curve))),
    }


def _scheduler_factory(u: Unit, agents: list):
    from baselines import make_scheduler

    if u.scheduler in BASELINES:
        return lambda worker, direction: make_scheduler(BASELINES[u.scheduler][1])
    from falcon.experiments.common import agent_config

    cfg = {k: v for k, v in agent_config(u.scheduler).items() if k != "train"}
    cfg["model"] = u.model

    def make(worker, direction):
        a = common.build_agent(u.scheduler, cfg, u.seed)
        agents.append(a)
        return a

    return make


def _phases(paths: list[dict], duration: float) -> list[tuple[float, float, float]]:
    """``(start, end, summed capacity [Mbit/s])`` of the scenario's bandwidth
    phases over ``duration`` [s] (a looped schedule's first period only)."""
    from envs.path_schedule import resolve_schedule
    from envs.scenario import normalise_path

    steps = []  # per path: [(start [s], Mbit/s)], in time order
    for i, p in enumerate(paths):
        q = normalise_path(p, i)
        segs = resolve_schedule(q, q["schedule"], False, False) if q["schedule"] else []
        steps.append([(0.0, q["bandwidth_mbps"]), *((t, c["bandwidth_mbps"]) for t, c in segs)])
    cuts = sorted({0.0, float(duration), *(t for st in steps for t, _ in st if t < duration)})
    return [
        (a, b, sum(next(bw for t, bw in reversed(st) if t <= a) for st in steps))
        for a, b in zip(cuts[:-1], cuts[1:])
    ]


def run_unit(u: Unit) -> dict:
    """One DEL run; its record."""
    from envs.edge_learning import run_del_episode
    from falcon.jobs import seed_globals

    seed_globals(u.seed)
    t0 = time.perf_counter()
    paths = copy.deepcopy(u.paths)
    cc = "lia"
    if u.scheduler in BASELINES:
        cc, _, single = BASELINES[u.scheduler]
        if single:
            paths = paths[:1]
    agents: list = []
    res = run_del_episode(
        {**BASE_SCENARIO, "cc": cc, "paths": paths},
        u.workload,
        _scheduler_factory(u, agents),
        u.seed,
    )
    rec = {
        "experiment": u.experiment,
        "setting": u.setting,
        "scheduler": u.scheduler,
        "session": u.session,
        "seed": u.seed,
        **{k: float(res.metrics.get(k, math.nan)) for k in METRICS},
    }
    total = res.throughput_mbps.sum(axis=0)
    if u.experiment == "exp1":
        rec["phases"] = []
        for a, b, cap in _phases(u.paths, res.metrics["duration_s"]):
            m = (res.throughput_t > a + 1e-9) & (res.throughput_t <= b + 1e-9)
            got = float(total[m].mean()) if m.any() else math.nan
            rec["phases"].append(
                {
                    "start_s": a,
                    "end_s": b,
                    "capacity_mbps": cap,
                    "throughput_mbps": got,
                    "utilisation": got / cap if cap > 0 else math.nan,
                }
            )
    if agents:
        rec["cpu_seconds_per_slot"] = float(np.mean([a.cpu_seconds_per_slot for a in agents]))
    if u.keep_series:
        rec["series"] = {
            "t_s": res.throughput_t.round(3).tolist(),
            "total_mbps": total.round(3).tolist(),
            "straggler_mbps": res.throughput_mbps[res.straggler].round(3).tolist(),
            "straggler": int(res.straggler),
        }
    rec["wall_s"] = time.perf_counter() - t0
    return rec


def build_train_units(sec: Mapping, models_dir: Path) -> list[TrainUnit]:
    units = []
    for name in sec["schedulers"]:
        if name not in LEARNERS:
            continue
        cfg = common.agent_config(name, {"train": sec["train"]})
        for i in range(sec["sessions"]):
            units.append(
                TrainUnit(name, i, sec["seed"] + i, cfg, str(models_dir / name / f"session{i}"))
            )
    return units


def build_units(sec: Mapping, models: Mapping[tuple[str, int], str]) -> list[Unit]:
    units = []
    for exp, label, paths, w in settings_of(sec):
        for name in sec["schedulers"]:
            for i in range(sec["sessions"]):
                keep = i == 0 and (exp == "exp1" or (exp == "exp23" and label.startswith("ssp")))
                units.append(
                    Unit(
                        exp, label, name, i, sec["seed"] + i, paths, w, models.get((name, i)), keep
                    )
                )
    return units


# ---------------------------------------------------------------- summary
def summarise(records: list[dict], trained: list[dict], sec: Mapping) -> dict:
    out: dict = {"settings": {}, "training": {}}
    for exp, label, _paths, _w in settings_of(sec):
        per = {}
        for name in sec["schedulers"]:
            rs = [
                r
                for r in records
                if r["experiment"] == exp and r["setting"] == label and r["scheduler"] == name
            ]
            cell = {}
            for k in METRICS:
                m, ci = common.mean_ci([r[k] for r in rs])
                cell[k] = m
                cell[f"{k}_ci95"] = ci
            if rs and "phases" in rs[0]:
                cell["phases"] = [
                    {
                        **ph,
                        "utilisation": float(
                            np.nanmean([r["phases"][j]["utilisation"] for r in rs])
                        ),
                        "throughput_mbps": float(
                            np.nanmean([r["phases"][j]["throughput_mbps"] for r in rs])
                        ),
                    }
                    for j, ph in enumerate(rs[0]["phases"])
                ]
            cpu = [r["cpu_seconds_per_slot"] for r in rs if "cpu_seconds_per_slot" in r]
            if cpu:
                cell["cpu_seconds_per_slot"] = float(np.mean(cpu))
            series = next((r["series"] for r in rs if "series" in r), None)
            if series is not None:
                cell["series"] = series
            cell["runs"] = len(rs)
            per[name] = cell
        out["settings"].setdefault(exp, {})[label] = per
    for name in LEARNERS:
        ts = [t for t in trained if t["learner"] == name]
        if ts:
            score, ci = common.mean_ci([t["learning_score"] for t in ts])
            out["training"][name] = {
                "learning_score": score,
                "learning_score_ci95": ci,
                "sessions": len(ts),
                "cpu_seconds_per_slot": float(np.mean([t["cpu_seconds_per_slot"] for t in ts])),
                "train_wall_s": float(np.mean([t["train_wall_s"] for t in ts])),
                "curves": [[c.get("score", math.nan) for c in t["curve"]] for t in ts],
            }
    return out


def _log_summary(summary: Mapping, log) -> None:
    for exp, settings_ in summary["settings"].items():
        for label, per in settings_.items():
            for name, cell in per.items():
                log(
                    {
                        f"{exp}/{label}/{name}/{k}": v
                        for k, v in cell.items()
                        if isinstance(v, float) and math.isfinite(v)
                    }
                )
    for name, t in summary["training"].items():
        log(
            {
                f"training/{name}/learning_score": t["learning_score"],
                f"training/{name}/cpu_seconds_per_slot": t["cpu_seconds_per_slot"],
            }
        )


def run_hybrid(sec: dict, models_dir: Path, progress: bool = True, log=None) -> dict:
    """The experiment (module docstring); the results dict."""
    from falcon.runtime import run_jobs

    t0 = time.perf_counter()
    log = log or (lambda metrics, step=None: None)
    rt = sec["runtime"]
    tunits = build_train_units(sec, models_dir)
    if progress and tunits:
        info(
            f"{JOB}: training {len(tunits)} session(s) of {sorted({u.learner for u in tunits})}, "
            f"{tunits[0].agent_cfg['train'].get('samples')} samples each"
        )
    trained = (
        run_jobs(tunits, train_unit, rt, progress=progress, desc=f"{JOB} training")
        if tunits
        else []
    )
    models = {(t["learner"], t["session"]): t["model"] for t in trained}
    units = build_units(sec, models)
    if progress:
        info(
            f"{JOB}: {len(units)} DEL runs over {len(settings_of(sec))} setting(s), "
            f"{len(sec['schedulers'])} scheduler(s), {sec['sessions']} seed(s) on runtime={rt['name']}"
        )
    records = run_jobs(units, run_unit, rt, progress=progress, desc=JOB)
    summary = summarise(records, trained, sec)
    _log_summary(summary, log)
    light = [{k: v for k, v in r.items() if k != "series"} for r in records]
    trained_light = [{k: v for k, v in t.items() if k != "curve"} for t in trained]
    return {
        "job": JOB,
        "settings": common.settings_record(sec),
        "seeds": [sec["seed"] + i for i in range(sec["sessions"])],
        "summary": summary,
        "records": light,
        "training": trained_light,
        "paper": hybrid_report.PAPER,
        "claims": hybrid_report.claims(summary, sec),
        "wall_s": time.perf_counter() - t0,
    }


def run_job(cfg) -> dict:
    """``experiment=hybrid``: the tracked job."""
    cfg, sec = settings(cfg)
    progress = bool(cfg.get("progress", True))

    def body(tracker, folder):
        res = run_hybrid(sec, folder / "models", progress, tracker.log_metrics)
        return common.publish(tracker, folder, JOB, res, hybrid_report.table, hybrid_report.plot)

    params = {JOB: {k: copy.deepcopy(v) for k, v in sec.items()}}
    return common.run_tracked(cfg, JOB, params, body)


__all__ = [
    "run_job",
    "run_hybrid",
    "settings",
    "settings_of",
    "build_units",
    "build_train_units",
    "run_unit",
    "train_unit",
    "summarise",
    "LEARNERS",
    "BASELINES",
]
