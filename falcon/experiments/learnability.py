"""Learnability suite: can the learners match the best rule on each condition?

    python -m falcon.train experiment=learnability                   # ~12 min on 2 cores (runtime.workers=2; +2 min to build the quick bank on a first run)
    python -m falcon.train experiment=learnability quick=true        # < 1 min (the quick_variant)
    python -m falcon.train experiment=learnability learnability.learners=[]   # rules + fixed split only

Protocol (every number is a key of ``configs/experiment/learnability.yaml``,
section ``learnability``):

1. **Conditions.** ``conditions``: a list of two-path conditions ``{name,
   scenario, app}`` (scenario and app dicts of ``envs/SCHEMA.md``; no app =
   2 MB bulk; ``bulk_size_bytes`` replaces the size of every bulk file,
   ``max_conditions`` keeps the first N). Every condition, every agent
   config and every fixed-split share is checked (scenario and app
   normalised, traces and pages loaded, agents instantiated) before any job
   starts; a bad one stops the run with one error line (exit status 2) and
   no output.
2. **Schedulers.** Per condition: every rule of ``rules`` (default minRTT,
   BLEST, ECF, RR, DAPS, STMS); the fixed split
   (:class:`baselines.rule_based.fixed_split.FixedSplit`) at every share of
   ``fixed_split_shares`` (0.0, 0.1, ..., 1.0; share = fraction of the
   packets on path 0), of which the share with the lowest median is
   reported as ``best_fixed_split``; and every learner of ``learners``
   (default DQN-Off, DQN-On), trained on that condition by falcon.train's
   own training step (:func:`falcon.train.train_agents`: the agent
   config's ``train:`` section, ``fit(scenario=..., app=...,
   seed=train_seed, **train)``), with ``agent_overrides[<name>]`` merged
   into any scheduler's agent config (e.g. ``{dqn_on: {train: {episodes:
   30}}}``; overrides of agents the run does not use are ignored); and
   every scheduler of ``deployed`` (default FALCON), evaluated as
   configured without training on the condition (FALCON: deployed from the
   run's ``bank=`` preset, built first when missing, adapting online within
   each run) and scored like the learners.
3. **Runs.** Every scheduler runs ``runs`` downloads with the seeds
   ``seed, ..., seed + runs - 1`` (the same for every scheduler and
   condition), each from a fresh scheduler (rules) or from a copy of the
   trained one (learners: as falcon.train evaluates; DQN-On keeps learning
   within each evaluation run, every run starting from the trained state).
   The metric is ``download_time_s`` (for the web page condition: the page
   load time). Seeds of condition ``i``: training ``train_seed + 1000 i``
   (``train_seed``: falcon.train's key, kept apart from the evaluation
   seeds); a learner's own ``seed`` key (network init, exploration) =
   ``seed + i``. Every episode seeds every RNG from these, so results depend
   on config and seed only, not on the runtime or job order.
4. **Scores.** Per condition the *best rule* is the rule with the lowest
   median (the fixed split is a reference, not a rule); every scheduler's
   *ratio* = its median / the best rule's median (1 = as good as the best
   rule). *Suite score* of a scheduler = geometric mean of its ratios over
   the conditions (null if it has no finished run on some condition).
   Per learner: the conditions where its ratio <= ``within`` (1.05). Per
   condition: whether some rule beats minRTT by ``beat_margin`` (10 %:
   median <= 0.9 x minRTT's median) and, where one does, whether each
   learner does too.

Jobs: one per (condition, scheduler) (a learner's job trains, then
evaluates; the fixed split's job runs all its shares), run through
:func:`falcon.runtime.run_jobs` (``runtime.workers=N``, ``runtime=ray``),
longest first; one progress line per job on stderr.

Outputs (staged folder, MLflow artifacts): ``learnability.json``,
``table.txt`` (conditions x schedulers: ratios, the best rule and its
median, a suite-score row), ``learnability.png`` (ratio per condition, log
scale, lines at 1 and ``within``), ``models/<condition>/<learner>/``
(trained models), ``config.json``, ``summary.json``. MLflow metrics:
``suite_score/<scheduler>``, ``<condition>/<scheduler>/median`` and
``/ratio``, ``within/<learner>``, training curves
``train/<condition>/<learner>/<metric>``.

``learnability.json`` (times in s, sizes in bytes; null where undefined)::

    {"job": "learnability", "schema_version": 1, "wall_s": float, "mlflow_run_id": str | null,
     "settings": {"runs", "seed", "seeds": [int], "train_seed", "rules": [str], "learners": [str], "deployed": [str],
                  "fixed_split_shares": [float], "within", "beat_margin", "bulk_size_bytes",
                  "max_conditions", "agent_overrides", "agents": {name: agent config},
                  "runtime": str, "evaluation": str},
     "schedulers": [rules..., "best_fixed_split", learners..., deployed...],
     "conditions": [{"index", "name", "scenario": {...as given}, "app": {...normalised},
                     "train_seed", "agent_seed"}],
     "results": {<condition>: {
         "best_rule": {"name": str, "median_s": float},
         "schedulers": {<scheduler>: {
             "download_time_s": {"n", "median", "p25", "p75", "mean", "values": [per seed]},
             "timed_out": int, "ratio": float, "wall_s": float,
             # best_fixed_split only:
             "share": float, "shares": {"<share>": {"median", "p25", "p75", "values"}},
             # learners only:
             "train": {"seed": int, "metrics": {fit metrics}, "wall_s": float,
                       "experience": {"kind": "online" | "offline", "episodes", "packets"}}}},
         "rule_beats_minrtt": bool | null,
         "learner_beats_minrtt": {<learner>: bool} | null}},
     "suite_score": {<scheduler>: float | null},
     "within_best_rule": {<learner or deployed>: {"count": int, "of": int, "conditions": [str]}},
     "beats_minrtt": {"rule_conditions": [str], "learners": {<learner>: {"count", "of", "conditions"}}}}

``experience`` is what a learner saw of the condition before the
evaluation: DQN-On ``online`` packets (decisions) and episodes of ``fit``;
DQN-Off the ``offline`` logged transitions and episodes it was trained on.
"""

from __future__ import annotations

import math
import re
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from envs.apps import normalise_app
from envs.errors import ConfigError, FalconInputError
from envs.scenario import normalise_scenario
from falcon import report
from falcon.config import Plan, check_int, check_runtime, group_options
from falcon.experiment import info
from falcon.experiments import common
from falcon.runtime import run_jobs
from falcon.tracking import NullTracker

JOB = "learnability"
SCHEMA_VERSION = 1
FIXED = "fixed_split"              # agent config of the fixed split
BEST_FIXED = "best_fixed_split"    # its best share, as a column of the results
DEFAULT_APP = {"kind": "bulk", "size_bytes": 2_000_000}
METRIC = "download_time_s"
CONDITION_KEYS = ("name", "scenario", "app")
SECTION_KEYS = ("runs", "rules", "learners", "deployed", "agent_overrides", "fixed_split_shares", "within",
                "beat_margin", "bulk_size_bytes", "max_conditions", "conditions")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
#: job kinds, in the order the jobs are started (longest first)
_KIND_ORDER = {"learner": 0, "deployed": 1, FIXED: 2, "rule": 3}


@dataclass(frozen=True)
class Unit:
    """One job: a scheduler on a condition, all evaluation seeds (plain data: picklable)."""

    condition: int
    condition_name: str
    scheduler: str
    kind: str                    # "rule" | "fixed_split" | "learner" | "deployed"
    scenario: dict
    app: dict
    agent: dict                  # agent config (_target_ + arguments; train: for learners)
    seeds: tuple[int, ...]
    shares: tuple[float, ...] = ()
    train_seed: int = 0


# ---------------------------------------------------------------- settings
def _name_list(sec: Mapping, key: str, allow_empty: bool) -> list[str]:
    v = sec.get(key)
    if not isinstance(v, list) or (not v and not allow_empty) or not all(isinstance(x, str) and x for x in v):
        need = "a list" if allow_empty else "a non-empty list"
        raise ConfigError(f"{JOB}.{key}: expected {need} of configs/agent names, got {v!r}")
    dup = sorted({x for x in v if v.count(x) > 1})
    if dup:
        raise ConfigError(f"{JOB}.{key}: {', '.join(dup)} listed twice")
    return list(v)


def _number(sec: Mapping, key: str, lo: float, hi: float = math.inf) -> float:
    v = sec.get(key)
    if isinstance(v, bool) or not isinstance(v, int | float) or not lo <= v <= hi:
        raise ConfigError(f"{JOB}.{key}: expected a number in [{lo}, {hi}], got {v!r}")
    return float(v)


def _optional_int(sec: Mapping, key: str) -> int | None:
    v = sec.get(key)
    if v is None:
        return None
    return common.check_positive_int(sec, key)


def check_condition(i: int, entry, bulk_size: int | None) -> dict:
    """One validated condition ``{index, name, scenario (as given), app (normalised)}``."""
    where = f"{JOB}.conditions[{i}]"
    if not isinstance(entry, Mapping):
        raise ConfigError(f"{where}: expected a mapping {{name, scenario, app}}, got {entry!r}")
    unknown = sorted(set(entry) - set(CONDITION_KEYS))
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {unknown}; known: {list(CONDITION_KEYS)}")
    name = entry.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        hint = " (quote names that read as numbers: name: '50_10')" if isinstance(name, int | float) else ""
        raise ConfigError(f"{where}.name: expected a name of letters, digits, '_', '-', '.', got {name!r}{hint}")
    where = f"{where} ({name})"
    scenario, app = entry.get("scenario"), entry.get("app")
    if not isinstance(scenario, Mapping):
        raise ConfigError(f"{where}.scenario: expected a scenario mapping with paths, got {scenario!r}")
    if app is not None and not isinstance(app, Mapping):
        raise ConfigError(f"{where}.app: expected an app mapping (or none: 2 MB bulk), got {app!r}")
    scenario = {"name": name, **dict(scenario)}
    app = dict(DEFAULT_APP if app is None else app)
    if bulk_size is not None and app.get("kind", "bulk") == "bulk":
        app["size_bytes"] = bulk_size
    try:
        normalised = normalise_scenario(scenario)
        app = normalise_app(app)
    except FalconInputError as e:
        raise ConfigError(f"{where}: {e}") from None
    if len(normalised["paths"]) != 2:
        raise ConfigError(f"{where}: scenario.paths: expected 2 paths (a two-path suite), "
                          f"got {len(normalised['paths'])}")
    return {"index": i, "name": name, "scenario": scenario, "app": app}


def check_conditions(raw, bulk_size: int | None) -> list[dict]:
    if not isinstance(raw, list) or not raw:
        raise ConfigError(f"{JOB}.conditions: expected a non-empty list of {{name, scenario, app}}, got {raw!r}")
    conds = [check_condition(i, c, bulk_size) for i, c in enumerate(raw)]
    names = [c["name"] for c in conds]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ConfigError(f"{JOB}.conditions: name(s) {', '.join(dup)} appear twice")
    return conds


def check_shares(sec: Mapping) -> list[float]:
    from baselines.rule_based.fixed_split import check_share

    v = sec.get("fixed_split_shares")
    if not isinstance(v, list) or not v:
        raise ConfigError(f"{JOB}.fixed_split_shares: expected a non-empty list of numbers in [0, 1], got {v!r}")
    try:
        return [check_share(s) for s in v]
    except ConfigError as e:
        raise ConfigError(f"{JOB}.fixed_split_shares: {e}") from None


def agent_configs(rules: list[str], learners: list[str], overrides: Mapping,
                  deployed: Sequence[str] = ()) -> dict[str, dict]:
    """Agent configs (``configs/agent/<name>.yaml`` + overrides) of the rules,
    the fixed split, the learners and the deployed schedulers; checks which
    are trainable."""
    from falcon.train import is_trainable

    known = [*rules, FIXED, *learners, *deployed]
    if not isinstance(overrides, Mapping):
        raise ConfigError(f"{JOB}.agent_overrides: expected a mapping scheduler -> config keys, got {overrides!r}")
    for name, over in overrides.items():
        # overrides of agents the run does not use are allowed (e.g. the quick
        # variant's learner budgets with learners=[]); unknown names are typos
        if name not in known and name not in group_options("agent"):
            raise ConfigError(f"{JOB}.agent_overrides: unknown agent {name!r} "
                              f"(known: {', '.join(group_options('agent'))})")
        if not isinstance(over, Mapping):
            raise ConfigError(f"{JOB}.agent_overrides.{name}: expected a mapping of agent config keys, got {over!r}")
    twice = sorted(n for n in set(known) if known.count(n) > 1)
    if twice:
        raise ConfigError(f"{JOB}: {', '.join(twice)} listed more than once among rules, learners and deployed")
    if FIXED in rules or FIXED in learners or FIXED in deployed:
        raise ConfigError(f"{JOB}: {FIXED} is the suite's reference (fixed_split_shares), not a rule or learner")
    cfgs = {name: common.agent_config(name, overrides.get(name)) for name in known}
    for name in rules:
        if is_trainable(cfgs[name]):
            raise ConfigError(f"{JOB}.rules: {name!r} has a train: section (list it under {JOB}.learners)")
    for name in learners:
        if not is_trainable(cfgs[name]):
            raise ConfigError(f"{JOB}.learners: {name!r} has no train: section (nothing to train; "
                              f"list it under {JOB}.rules)")
        if not isinstance(cfgs[name]["train"], Mapping):
            raise ConfigError(f"{JOB}.learners: {name!r}: train: must be a mapping of fit() arguments")
    return cfgs


def settings(cfg):
    """Validated ``(cfg, section, conditions, agent configs)``; every
    condition, agent and share is built once (no training yet)."""
    cfg, sec = common.job_config(cfg, JOB)
    unknown = sorted(set(sec) - set(SECTION_KEYS))
    if unknown:
        raise ConfigError(f"{JOB}: unknown key(s) {unknown}; known: {list(SECTION_KEYS)}")
    sec["runs"] = common.check_positive_int(sec, "runs")
    sec["seed"] = check_int(cfg, "seed", 0)
    sec["train_seed"] = check_int(cfg, "train_seed", 0)
    sec["rules"] = _name_list(sec, "rules", allow_empty=False)
    sec["learners"] = _name_list(sec, "learners", allow_empty=True)
    sec["deployed"] = _name_list(sec, "deployed", allow_empty=True) if sec.get("deployed") is not None else []
    sec["fixed_split_shares"] = check_shares(sec)
    sec["within"] = _number(sec, "within", 1.0)
    sec["beat_margin"] = _number(sec, "beat_margin", 0.0, 1.0)
    sec["bulk_size_bytes"] = _optional_int(sec, "bulk_size_bytes")
    sec["max_conditions"] = _optional_int(sec, "max_conditions")
    sec["agent_overrides"] = sec.get("agent_overrides") or {}
    conditions = check_conditions(sec.get("conditions"), sec["bulk_size_bytes"])
    agents = agent_configs(sec["rules"], sec["learners"], sec["agent_overrides"], sec["deployed"])
    validate(conditions, agents, sec)        # agents waiting for the run's bank are checked below
    agents = with_run_bank(agents, cfg)
    if sec["max_conditions"] is not None:
        conditions = conditions[:sec["max_conditions"]]
    return cfg, sec, conditions, agents


def with_run_bank(agents: dict[str, dict], cfg) -> dict[str, dict]:
    """Agents whose ``bank`` is null (FALCON's default) get the run's bank
    (``bank=`` preset, default quick), built now when missing
    (:func:`falcon.bank_job.resolve_agent_banks`, as falcon.train does)."""
    from falcon.bank_job import resolve_agent_banks
    from falcon.config import to_plain

    plan = Plan([], [], list(agents.items()), [])
    plan = resolve_agent_banks(plan, to_plain(cfg.get("bank")), check_runtime(cfg.get("runtime")),
                               progress=bool(cfg.get("progress", True)))
    return dict(plan.agents)


def validate(conditions: list[dict], agents: dict[str, dict], sec: Mapping) -> None:
    """Build every scenario (traces) and app (pages) once and instantiate
    every agent and share, as falcon.train checks its plan."""
    from falcon.experiment import validate_plan

    shares = [(f"{FIXED}@{s:g}", {**agents[FIXED], "share": s}) for s in sec["fixed_split_shares"]]
    plan = Plan(scenarios=[(c["name"], c["scenario"]) for c in conditions],
                apps=[(c["name"], c["app"]) for c in conditions],
                agents=[(n, a) for n, a in agents.items() if n != FIXED] + shares, seeds=[sec["seed"]])
    validate_plan(plan)


# ---------------------------------------------------------------- jobs
def make_units(conditions: list[dict], agents: dict[str, dict], sec: Mapping) -> list[Unit]:
    """Every (condition, scheduler) job, in result order."""
    seeds = tuple(range(sec["seed"], sec["seed"] + sec["runs"]))
    units = []
    for c in conditions:
        i = c["index"]
        base = dict(condition=i, condition_name=c["name"], scenario=c["scenario"], app=c["app"], seeds=seeds)
        for name in sec["rules"]:
            units.append(Unit(scheduler=name, kind="rule", agent=agents[name], **base))
        units.append(Unit(scheduler=FIXED, kind=FIXED, agent=agents[FIXED],
                          shares=tuple(sec["fixed_split_shares"]), **base))
        for name in sec["learners"]:
            agent = dict(agents[name])
            if "seed" in agent:
                agent["seed"] = sec["seed"] + i
            units.append(Unit(scheduler=name, kind="learner", agent=agent,
                              train_seed=sec["train_seed"] + 1000 * i, **base))
        for name in sec["deployed"]:
            agent = dict(agents[name])
            agent.pop("train", None)         # deployed as configured: never trained on the condition
            if "seed" in agent:
                agent["seed"] = sec["seed"] + i
            units.append(Unit(scheduler=name, kind="deployed", agent=agent, **base))
    return units


def _cost_order(units: Sequence[Unit]) -> list[int]:
    """Indices of ``units``, the expensive ones first (learners, then large files)."""
    def size(u: Unit) -> float:
        return float(u.app.get("size_bytes") or DEFAULT_APP["size_bytes"]) if u.app["kind"] == "bulk" \
            else float(DEFAULT_APP["size_bytes"])
    return sorted(range(len(units)), key=lambda k: (_KIND_ORDER[units[k].kind], -size(units[k]), k))


class _Recorder(NullTracker):
    """A tracker that keeps what a training step logs (sent back to the parent)."""

    def __init__(self) -> None:
        self.calls: list[tuple[dict, int | None]] = []

    def log_metrics(self, metrics, step=None) -> None:
        self.calls.append(({k: float(v) for k, v in metrics.items()}, step))


def _finite(x):
    return float(x) if x is not None and math.isfinite(float(x)) else None


def experience(metrics: Mapping) -> dict:
    """What a learner saw before the evaluation, from its fit metrics."""
    if "online_packets" in metrics:
        return {"kind": "online", "episodes": metrics.get("episodes"), "packets": metrics["online_packets"]}
    if "transitions" in metrics:
        return {"kind": "offline", "episodes": metrics.get("logged_episodes"), "packets": metrics["transitions"]}
    return {"kind": None, "episodes": metrics.get("episodes"), "packets": None}


def train_learner(unit: Unit):
    """``(trained scheduler, training record)`` through falcon.train's training step."""
    from falcon.train import train_agents

    t0 = time.perf_counter()
    rec = _Recorder()
    plan = Plan([(unit.condition_name, unit.scenario)], [(unit.condition_name, unit.app)],
                [(unit.scheduler, unit.agent)], list(unit.seeds))
    with tempfile.TemporaryDirectory(prefix="learnability-") as tmp:
        plan = train_agents(plan, Path(tmp), rec, unit.train_seed, progress=False)
        model_dir = Path(tmp) / "models" / unit.scheduler
        models = {str(p.relative_to(model_dir)): p.read_bytes() for p in sorted(model_dir.rglob("*"))
                  if p.is_file()} if model_dir.is_dir() else {}
    prefix = f"train/{unit.scheduler}/"
    final = {}
    for metrics, step in rec.calls:
        if step is None:
            final = {k[len(prefix):]: v for k, v in metrics.items() if k.startswith(prefix)}
    curve = [({k[len(prefix):]: v for k, v in m.items() if k.startswith(prefix)}, step)
             for m, step in rec.calls if step is not None]
    record = {"seed": unit.train_seed, "metrics": {k: _finite(v) for k, v in final.items()},
              "experience": experience(final), "wall_s": time.perf_counter() - t0}
    return plan.agents[0][1], record, curve, models


def _times(unit: Unit, agent) -> list[dict]:
    """``download_time_s`` and ``timed_out`` of one run per seed (falcon.jobs.run_episode_job)."""
    from falcon.jobs import Job, run_episode_job

    out = []
    for k, s in enumerate(unit.seeds):
        m = run_episode_job(Job(k, unit.condition_name, unit.condition_name, unit.scheduler, s, unit.scenario,
                        unit.app, agent))["metrics"]
        out.append({METRIC: m[METRIC], "timed_out": m.get("timed_out", 0.0)})
    return out


def run_unit(unit: Unit) -> dict:
    """Worker: one (condition, scheduler) job; plain results."""
    t0 = time.perf_counter()
    out: dict = {}
    agent = unit.agent
    if unit.kind == "learner":
        agent, out["train"], out["curve"], out["models"] = train_learner(unit)
    if unit.kind == FIXED:
        out["shares"] = {s: _times(unit, {**unit.agent, "share": s}) for s in unit.shares}
    else:
        out["runs"] = _times(unit, agent)
    out["wall_s"] = time.perf_counter() - t0
    return out


# ---------------------------------------------------------------- scores
def _stats(runs: list[dict]) -> dict:
    return {METRIC: report.describe([r[METRIC] for r in runs]),
            "timed_out": int(sum(r["timed_out"] > 0 for r in runs))}


def _ratio(median, best):
    return median / best if median is not None and best is not None and best > 0 else None


def geometric_mean(values: Sequence[float | None]) -> float | None:
    """exp(mean(log v)); None if any value is missing or not positive (or none is given)."""
    if not values or any(v is None or not v > 0 for v in values):
        return None
    return float(math.exp(sum(math.log(v) for v in values) / len(values)))


def score_condition(out: dict[str, dict], sec: Mapping) -> dict:
    """One condition's results from its jobs' outputs (``{scheduler: run_unit output}``)."""
    rules, learners = sec["rules"], scored(sec)
    scheds: dict[str, dict] = {}
    for name in rules + learners:
        scheds[name] = {**_stats(out[name]["runs"]), "wall_s": out[name]["wall_s"]}
        if "train" in out[name]:
            scheds[name]["train"] = out[name]["train"]
    shares = {s: _stats(runs) for s, runs in out[FIXED]["shares"].items()}
    medians = {s: st[METRIC]["median"] for s, st in shares.items()}
    ranked = [s for s in shares if medians[s] is not None]
    best_share = min(ranked, key=lambda s: medians[s]) if ranked else None
    fixed = shares[best_share] if best_share is not None else _stats([])
    scheds[BEST_FIXED] = {**fixed, "share": best_share, "wall_s": out[FIXED]["wall_s"],
                          "shares": {str(s): {k: st[METRIC][k] for k in ("median", "p25", "p75", "values")}
                                     for s, st in shares.items()}}
    finished = [r for r in rules if scheds[r][METRIC]["median"] is not None]
    best = min(finished, key=lambda r: scheds[r][METRIC]["median"]) if finished else None
    best_median = scheds[best][METRIC]["median"] if best is not None else None
    for st in scheds.values():
        st["ratio"] = _ratio(st[METRIC]["median"], best_median)
    minrtt = scheds["minrtt"][METRIC]["median"] if "minrtt" in scheds else None
    bound = (1.0 - sec["beat_margin"]) * minrtt if minrtt is not None else None
    rule_beats = None if bound is None or best_median is None else bool(best_median <= bound)
    learner_beats = None
    if rule_beats:
        learner_beats = {n: scheds[n][METRIC]["median"] is not None and bool(scheds[n][METRIC]["median"] <= bound)
                         for n in learners}
    order = [*rules, BEST_FIXED, *learners]
    return {"best_rule": {"name": best, "median_s": best_median},
            "schedulers": {n: scheds[n] for n in order},
            "rule_beats_minrtt": rule_beats, "learner_beats_minrtt": learner_beats}


def scored(sec: Mapping) -> list[str]:
    """The schedulers judged against the rules: the learners, then the deployed ones."""
    return [*sec["learners"], *sec.get("deployed", [])]


def suite_summary(results: dict[str, dict], sec: Mapping) -> dict:
    """Suite scores, within-``within`` counts and the beats-minRTT summary."""
    names = [*sec["rules"], BEST_FIXED, *scored(sec)]
    conds = list(results)
    score = {n: geometric_mean([results[c]["schedulers"][n]["ratio"] for c in conds]) for n in names}
    within = {}
    for n in scored(sec):
        ok = [c for c in conds if (r := results[c]["schedulers"][n]["ratio"]) is not None and r <= sec["within"]]
        within[n] = {"count": len(ok), "of": len(conds), "conditions": ok}
    rule_conds = [c for c in conds if results[c]["rule_beats_minrtt"]]
    beats = {}
    for n in scored(sec):
        ok = [c for c in rule_conds if results[c]["learner_beats_minrtt"][n]]
        beats[n] = {"count": len(ok), "of": len(rule_conds), "conditions": ok}
    return {"suite_score": score, "within_best_rule": within,
            "beats_minrtt": {"rule_conditions": rule_conds, "learners": beats}}


# ---------------------------------------------------------------- the experiment
def _progress_line(unit: Unit, res: dict, n_done: int, n_jobs: int, elapsed: float, width: int) -> str:
    if unit.kind == FIXED:
        med = {s: report.describe([r[METRIC] for r in runs])["median"] for s, runs in res["shares"].items()}
        ok = {s: m for s, m in med.items() if m is not None}
        best = min(ok, key=ok.get) if ok else None
        what = (f"best share {best:g}: median {ok[best]:.3f} s" if best is not None else "no finished run") + \
            f" ({len(med)} shares x {len(unit.seeds)} runs)"
    else:
        m = report.describe([r[METRIC] for r in res["runs"]])["median"]
        what = (f"median {m:.3f} s" if m is not None else "no finished run") + f" ({len(unit.seeds)} runs)"
        if "train" in res:
            exp = res["train"]["experience"]
            seen = f" on {exp['episodes']:.0f} episodes" if exp["episodes"] is not None else ""
            if exp["packets"] is not None:
                seen += f" / {exp['packets']:.0f} {exp['kind']} packets"
            what += f", trained{seen} in {res['train']['wall_s']:.1f} s"
    return (f"{JOB}: [{n_done:>{len(str(n_jobs))}}/{n_jobs}] {unit.condition_name:<{width}} {unit.scheduler:<11} "
            f"{what} [{res['wall_s']:.1f} s; elapsed {elapsed:.0f} s]")


def run_learnability(sec: dict, conditions: list[dict], agents: dict[str, dict], runtime: Mapping | None = None,
                     progress: bool = True, log=None, models_dir: Path | None = None) -> dict:
    """The suite (module docstring) without tracking; returns the results.
    ``log(metrics, step)`` receives the training curves; ``models_dir``
    receives the trained models (``<condition>/<learner>/``)."""
    t0 = time.perf_counter()
    units = make_units(conditions, agents, sec)
    order = _cost_order(units)
    jobs = [units[k] for k in order]
    width = max(len(c["name"]) for c in conditions)
    done = [0]

    def report_job(k: int, res: dict) -> None:
        done[0] += 1
        if progress:
            info(_progress_line(jobs[k], res, done[0], len(jobs), time.perf_counter() - t0, width))

    rt = check_runtime(runtime)
    if progress:
        info(f"{JOB}: {len(conditions)} conditions x {len(sec['rules'])} rules + fixed split "
             f"({len(sec['fixed_split_shares'])} shares) + {len(sec['learners'])} learners + "
             f"{len(sec['deployed'])} deployed, "
             f"{sec['runs']} runs each: {len(jobs)} jobs on runtime={rt['name']}"
             + (f" ({rt['workers']} worker{'s' if rt['workers'] > 1 else ''})" if rt["name"] == "local" else ""))
    outs = run_jobs(jobs, run_unit, rt, progress=False, desc=JOB, on_result=report_job)
    by_key = {(u.condition, u.scheduler): r for u, r in zip(jobs, outs, strict=True)}
    results = {}
    for c in conditions:
        out = {u.scheduler: by_key[(u.condition, u.scheduler)] for u in units if u.condition == c["index"]}
        for name in sec["learners"]:
            o = out[name]
            if log is not None:
                for metrics, step in o["curve"]:
                    log({f"train/{c['name']}/{name}/{k}": v for k, v in metrics.items()}, step=step)
            if models_dir is not None and o["models"]:
                for rel, data in o["models"].items():
                    path = models_dir / c["name"] / name / rel
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_bytes(data)
        results[c["name"]] = score_condition(out, sec)
    settings_out = {k: sec[k] for k in ("runs", "seed", "train_seed", "rules", "learners", "deployed",
                                        "fixed_split_shares",
                                        "within", "beat_margin", "bulk_size_bytes", "max_conditions",
                                        "agent_overrides")}
    settings_out.update(seeds=list(units[0].seeds), agents=agents, runtime=rt["name"],
                        evaluation="every run from a fresh scheduler (rules; deployed schedulers as "
                                   "configured, e.g. FALCON from its bank, adapting within the run) or a copy "
                                   "of the trained one (learners; online learners keep learning within the run)")
    cond_out = [{"index": c["index"], "name": c["name"], "scenario": c["scenario"], "app": c["app"],
                 "train_seed": sec["train_seed"] + 1000 * c["index"], "agent_seed": sec["seed"] + c["index"]}
                for c in conditions]
    return {"job": JOB, "schema_version": SCHEMA_VERSION, "settings": settings_out,
            "schedulers": [*sec["rules"], BEST_FIXED, *scored(sec)], "conditions": cond_out,
            "results": results, **suite_summary(results, sec), "wall_s": time.perf_counter() - t0}


def flat_metrics(results: dict) -> dict[str, float]:
    """MLflow metrics: suite scores, per-condition medians and ratios, within counts."""
    out = {f"suite_score/{n}": v for n, v in results["suite_score"].items() if v is not None}
    for c, res in results["results"].items():
        for n, st in res["schedulers"].items():
            if st[METRIC]["median"] is not None:
                out[f"{c}/{n}/median"] = st[METRIC]["median"]
            if st["ratio"] is not None:
                out[f"{c}/{n}/ratio"] = st["ratio"]
    out.update({f"within/{n}": float(w["count"]) for n, w in results["within_best_rule"].items()})
    return out


# ---------------------------------------------------------------- outputs
def _val(x) -> float:
    return math.nan if x is None else float(x)


def table(results: dict) -> str:
    names = results["schedulers"]
    head = ["condition", "best rule", "best s", *names, "split share"]
    rows = []
    for c, res in results["results"].items():
        st = res["schedulers"]
        share = st[BEST_FIXED]["share"]
        rows.append([c, res["best_rule"]["name"] or "-", _val(res["best_rule"]["median_s"]),
                     *(_val(st[n]["ratio"]) for n in names), "-" if share is None else f"{share:g}"])
    rows.append(["suite score", "", "", *(_val(results["suite_score"][n]) for n in names), ""])
    s = results["settings"]
    text = (f"ratio = median download time / the best rule's median on the condition ({len(s['seeds'])} runs, "
            f"seeds {s['seeds'][0]}..{s['seeds'][-1]}); best s = that median [s]; suite score = geometric mean "
            "of the ratios over the conditions; rules: " + ", ".join(s["rules"]) + f"; {BEST_FIXED}: the best of "
            f"{len(s['fixed_split_shares'])} fixed shares on path 0 (a reference, not a rule)\n")
    text += common.format_table(head, rows)
    margin = f"{s['beat_margin'] * 100:g} %"
    lines = [f"{n}: within {(s['within'] - 1) * 100:g} % of the best rule on {w['count']}/{w['of']} conditions"
             + (f" ({', '.join(w['conditions'])})" if w["conditions"] else "")
             for n, w in results["within_best_rule"].items()]
    rc = results["beats_minrtt"]["rule_conditions"]
    lines.append(f"a rule beats minRTT by >= {margin} on {len(rc)} conditions" + (f": {', '.join(rc)}" if rc else ""))
    for n, b in results["beats_minrtt"]["learners"].items():
        lines.append(f"  {n} beats minRTT by >= {margin} on {b['count']}/{b['of']} of them"
                     + (f" ({', '.join(b['conditions'])})" if b["conditions"] else ""))
    return text + "\n" + "\n".join(lines) + "\n"


MARKERS = ("o", "s", "^", "v", "D", "P", "X", "*", "<", ">", "h", "p", "d", "8")


def plot(results: dict, path) -> Path:
    """Ratio to the best rule per condition (log scale), one marker style per scheduler."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    conds = list(results["results"])
    names = results["schedulers"]
    fig, ax = plt.subplots(figsize=(max(6.4, 0.75 * len(conds) + 3.0), 4.8))
    x = np.arange(len(conds), dtype=float)
    spread = 0.6 / max(1, len(names) - 1)
    for j, n in enumerate(names):
        ys = [_val(results["results"][c]["schedulers"][n]["ratio"]) for c in conds]
        pts = [(xi + (j - (len(names) - 1) / 2) * spread, y) for xi, y in zip(x, ys) if math.isfinite(y)]
        if pts:
            score = results["suite_score"][n]
            label = f"{n} (score {score:.3f})" if score is not None else n
            ax.plot([p[0] for p in pts], [p[1] for p in pts], linestyle="none", marker=MARKERS[j % len(MARKERS)],
                    markersize=6, label=label, fillstyle="none" if n in results["settings"]["rules"] else "full")
    ax.axhline(1.0, color="grey", linestyle="-", linewidth=1)
    ax.axhline(results["settings"]["within"], color="grey", linestyle="--", linewidth=1)
    ax.set_yscale("log")
    lo, hi = ax.get_ylim()
    grid = (0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0) if hi / lo < 4 else (0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0)
    ticks = [t for t in grid if lo <= t <= hi]
    ax.set_yticks(ticks)
    ax.yaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
    ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xticks(x)
    ax.set_xticklabels(conds, rotation=45, ha="right", fontsize=8)
    ax.set_ylabel("median download time / best rule's median")
    ax.set_title("Learnability: ratio to the best rule per condition")
    ax.grid(alpha=0.3, axis="y", which="both")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return Path(path)


def run_job(cfg) -> dict:
    """``experiment=learnability``: the tracked job."""
    cfg, sec, conditions, agents = settings(cfg)
    progress = bool(cfg.get("progress", True))
    runtime = check_runtime(cfg.get("runtime"))

    def body(tracker, folder):
        res = run_learnability(sec, conditions, agents, runtime, progress, tracker.log_metrics, folder / "models")
        tracker.log_metrics(flat_metrics(res))
        return common.publish(tracker, folder, JOB, res, table, plot, table_file="table.txt")

    params = {JOB: {**sec, "conditions": [{k: c[k] for k in ("name", "scenario", "app")} for c in conditions]},
              "runtime": runtime, "quick": bool(cfg.get("quick", False))}
    return common.run_tracked(cfg, JOB, params, body)


__all__ = ["run_job", "run_learnability", "settings", "check_condition", "score_condition", "suite_summary",
           "geometric_mean", "run_unit", "make_units", "table", "plot", "Unit"]
