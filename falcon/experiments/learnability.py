"""Learnability suite: where do the rules fail, how much better is possible, and
how much of that do the learners find?

    python -m falcon.train experiment=learnability                   # ~12 min on 2 cores (runtime.workers=2; +2 min to build the quick bank on a first run)
    python -m falcon.train experiment=learnability quick=true        # < 1 min (the quick_variant)
    python -m falcon.train experiment=learnability learnability.learners=[]   # rules + fixed split only

Protocol (every number is a key of ``configs/experiment/learnability.yaml``,
section ``learnability``):

1. **Conditions.** ``conditions``: a list of two-path conditions ``{name,
   scenario, app}`` (scenario and app dicts of ``docs/reference/formats/scenario_schema.md``; no app =
   2 MB bulk; ``bulk_size_bytes`` replaces the size of every bulk file,
   ``max_conditions`` keeps the first N). Every condition, every agent
   config and every fixed-split share is checked (scenario and app
   normalised, traces and pages loaded, agents instantiated) before any job
   starts; a bad one stops the run with one error line (exit status 2) and
   no output.
2. **Schedulers.** Per condition: every rule of ``rules`` (default minRTT,
   BLEST, ECF, RR, DAPS, STMS and the three that copy data in flight onto
   another path: ``minrtt_or``, ``minrtt_xlink``, ``redundant``,
   :mod:`baselines.rule_based.reinjection`); the fixed split
   (:class:`baselines.rule_based.fixed_split.FixedSplit`) at every share of
   ``fixed_split_shares`` (0.0, 0.1, ..., 1.0; share = fraction of the
   packets on path 0; 0 and 1 must be among them), of which the share with
   the lowest median is reported as ``best_fixed_split`` and the better of
   shares 0 and 1 as ``best_single_path``; the hindsight ``oracle`` (unless
   ``oracle: false``): per seed the fastest of every rule, every fixed share
   and every other member of the policy family
   :class:`baselines.rule_based.policy_family.SplitThreshold` over
   ``fixed_split_shares`` x ``oracle.thresholds`` x ``oracle.reinject``
   (:mod:`falcon.experiments.oracle`; with ``oracle.resample: true``, once
   the candidates have run, each seed's oracle choice runs again on the
   seed's trace segments with fresh delay and loss draws: the trace-aware
   oracle, one more job per condition); and every learner of ``learners``
   (default DQN-Off, DQN-On), trained on that condition by falcon.train's
   own training step (:func:`falcon.train.train_agents`: the agent
   config's ``train:`` section, ``fit(scenario=..., app=...,
   seed=train_seed, **train)``), with ``agent_overrides[<name>]`` merged
   into any scheduler's agent config (e.g. ``{dqn_on: {train: {episodes:
   30}}}``; overrides of agents the run does not use are ignored); and
   every scheduler of ``deployed`` (default FALCON), evaluated as
   configured without training on the condition (FALCON: deployed from the
   run's ``bank=`` preset, built first when missing, adapting online within
   each run) and scored like the learners. A deployed scheduler's
   ``model`` may name ``{condition}``, replaced by each condition's name:
   models trained per condition on another list (its ``models/`` folder),
   each deployed on the condition of the same name, e.g.
   ``{dqn_modes: {model: 'runs/train/models/{condition}/dqn_modes'}}``.
3. **Runs.** Every scheduler runs ``runs`` downloads with the seeds
   ``seed, ..., seed + runs - 1`` (the same for every scheduler and
   condition), each from a fresh scheduler (rules) or from a copy of the
   trained one (learners: as falcon.train evaluates; DQN-On keeps learning
   within each evaluation run, every run starting from the trained state).
   With ``sequential: true`` each deployed scheduler instead runs a
   condition's seeds in that order on one instance, and one that learns
   online (its own ``run_episode``: FALCON's change detection, cell evidence
   and fine-tuning) keeps what it learned from one download to the next, as
   a client that downloads again and again over the same paths would; its
   score then includes what it paid to learn.
   The metric is ``download_time_s`` (for the web page condition: the page
   load time). Seeds of condition ``i``: training ``train_seed + 1000 i``
   (``train_seed``: falcon.train's key, kept apart from the evaluation
   seeds); a learner's own ``seed`` key (network init, exploration) =
   ``seed + i``. Every episode seeds every RNG from these, so results depend
   on config and seed only, not on the runtime or job order.
4. **Scores.** Medians are over all runs, a download that did not finish
   ranking after every finished one (:func:`falcon.report.describe`,
   ``unfinished="last"``; None when half did not finish). Per condition the
   *best rule* is the rule with the lowest
   median (the fixed split is a reference, not a rule); every scheduler's
   *ratio* = its median / the best rule's median (1 = as good as the best
   rule). *Suite score* of a scheduler = geometric mean of its ratios over
   the conditions (null if it has no finished run on some condition).
   Per learner: the conditions where its ratio <= ``within`` (1.05). Per
   condition: whether some rule beats minRTT by ``beat_margin`` (10 %:
   median <= 0.9 x minRTT's median) and, where one does, whether each
   learner does too. The *best known* median is the lowest of every rule,
   reference and scored scheduler; *headroom* = best rule's median / best
   known median, and a condition *has headroom* when the best known median
   <= (1 - ``headroom_margin``) x the best rule's (default 10 %). Every
   scheduler and reference also gets its ratio to the best known (and a
   suite score of those), the share of the headroom it captures ((best rule
   - its median) / (best rule - best known), on conditions with headroom) and its median
   ``redundancy_overhead`` (re-injected bytes / file size; 0 for schedulers
   that never copy data).

Jobs: one per (condition, scheduler) (a learner's job trains, then
evaluates; the fixed split's job runs all its shares; the oracle's family
runs as one job per (threshold, reinject) pair), run through
:func:`falcon.runtime.run_jobs` (``runtime.workers=N``, ``runtime=ray``),
longest first; one progress line per job on stderr.

Outputs (staged folder, MLflow artifacts): ``learnability.json``,
``table.txt`` (conditions x schedulers: ratios, the best rule and its
median, the best known and the headroom, a suite-score row; then the ratios
to the best known with the headroom captured and the overhead),
``learnability.png`` (ratio per condition, log scale, lines at 1, ``within``
and 1 - ``headroom_margin``, the best known as a bar), ``models/<condition>/<learner>/``
(trained models), ``config.json``, ``summary.json``. MLflow metrics:
``suite_score/<scheduler>``, ``suite_score_best_known/<scheduler>``,
``headroom_conditions``, ``<condition>/headroom``, ``<condition>/<scheduler>/median`` and
``/ratio``, ``within/<learner>``, training curves
``train/<condition>/<learner>/<metric>``.

``learnability.json`` (times in s, sizes in bytes; null where undefined)::

    {"job": "learnability", "schema_version": 2, "wall_s": float, "mlflow_run_id": str | null,
     "settings": {"runs", "seed", "seeds": [int], "train_seed", "rules": [str], "learners": [str], "deployed": [str],
                  "fixed_split_shares": [float], "within", "beat_margin", "bulk_size_bytes",
                  "max_conditions", "agent_overrides", "agents": {name: agent config},
                  "oracle": {"thresholds": [float | null], "reinject": [bool], "resample": true (only when set)} | null, "headroom_margin",
                  "split": str | null, "sequential": bool, "runtime": str, "evaluation": str},
     "schedulers": [rules..., "best_single_path", "best_fixed_split", "oracle", "crossfit_policy",
                    "trace_aware_oracle" (oracle.resample only), learners..., deployed...],
     "conditions": [{"index", "name", "scenario": {...as given}, "app": {...normalised},
                     "train_seed", "agent_seed"}],
     "results": {<condition>: {
         "best_rule": {"name": str, "median_s": float},
         "best_known": {"name": str, "median_s": float}, "headroom": float, "has_headroom": bool,
         "schedulers": {<scheduler>: {
             "download_time_s": {"n", "median", "p25", "p75", "mean", "values": [per seed]},
             "timed_out": int, "ratio": float, "ratio_best_known": float, "headroom_captured": float | null,
             "redundancy_overhead": float, "wall_s": float,
             # best_fixed_split only:
             "share": float, "shares": {"<share>": {"median", "p25", "p75", "values"}},
             # best_single_path only: the path it uses
             "path": 0 | 1,
             # oracle, crossfit_policy, trace_aware_oracle: per seed the candidate it took ("share=..,threshold=..,reinject=.." or a rule)
             "chosen": [str | null], "chosen_counts": {str: int}, "candidates": int,
             # oracle only: every candidate's time per seed (null: did not finish)
             "candidate_times_s": {<candidate>: [float | null]},
             # learners and deployed ones: the ratio against the best rule with 95 %
             # bootstrap intervals over the seeds (falcon.compare.compare_to_references)
             "vs_best_rule": {"best", "n", "ratio", "ratio_ci", "paired", "paired_ci"} | null,
             # learners only:
             "train": {"seed": int, "metrics": {fit metrics}, "wall_s": float,
                       "experience": {"kind": "online" | "offline", "episodes", "packets"}}}},
         "rule_beats_minrtt": bool | null,
         "learner_beats_minrtt": {<learner>: bool} | null}},
     # deployed schedulers trained once on another condition list (falcon.experiments.generalists)
     "generalists": {<deployed>: {"conditions": str, "in_sample": bool, "tasks": int,
                                   "metrics": {fit metrics}, "wall_s": float}},
     "suite_score": {<scheduler>: float | null},
     "suite_score_best_known": {<scheduler>: float | null},
     "headroom": {"margin", "count", "of", "conditions": [str], "geometric_mean"},
     "headroom_captured": {<scheduler>: {"mean": float | null, "conditions": {<condition>: float | null}}},
     "within_best_rule": {<learner or deployed>: {"count": int, "of": int, "conditions": [str]}},
     # the same against the best known, also for crossfit_policy and trace_aware_oracle (when run):
     # how close a policy chosen per condition, and one that knows each seed's network, get
     "within_best_known": {<learner, deployed or reference>: {"count", "of", "conditions"}},
     "resolvably_behind": {<learner or deployed>: {"count", "of", "conditions"}},   # interval above `within`
     "beats_minrtt": {"rule_conditions": [str], "learners": {<learner>: {"count", "of", "conditions"}}}}

A deployed scheduler whose agent config names a condition list to train on
(``train: {conditions: train}``, e.g. ``dqn_modes_general``) is trained once
on that list before the jobs and deployed from its model on every condition
(:mod:`falcon.experiments.generalists`; never on the list it is scored on,
unless it names the dev list in ``train.in_sample``: ``in_sample`` in its record).

``experience`` is what a learner saw of the condition before the
evaluation: DQN-On ``online`` packets (decisions) and episodes of ``fit``;
DQN-Off the ``offline`` logged transitions and episodes it was trained on.
"""

from __future__ import annotations

import math
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from falcon import report
from falcon.config import Plan, check_runtime
from falcon.experiment import info
from falcon.experiments import common
from falcon.experiments.generalists import train_generalists
from falcon.experiments.learnability_report import (
    flat_metrics,
    geometric_mean,
    oracle_choices,
    plot,
    references,
    score_condition,
    scored,
    suite_summary,
    table,
)
from falcon.experiments.learnability_settings import (
    DEFAULT_APP,
    FAMILY,
    FIXED,
    JOB,
    METRIC,
    OVERHEAD,
    SCHEMA_VERSION,
    check_condition,
    condition_agent,
    settings,
)
from falcon.experiments.oracle import (
    ORACLE,
    RESAMPLE_SEED_OFFSET,
    TRACE_ORACLE,
    label,
    member_groups,
)
from falcon.runtime import run_jobs
from falcon.tracking import RecordingTracker

#: job kinds, in the order the jobs are started (longest first)
_KIND_ORDER = {"learner": 0, ORACLE: 1, "deployed": 2, FIXED: 3, "rule": 4}


@dataclass(frozen=True)
class Unit:
    """One job: a scheduler on a condition, all evaluation seeds (plain data: picklable)."""

    condition: int
    condition_name: str
    scheduler: str
    kind: str  # "rule" | "fixed_split" | "oracle" | "learner" | "deployed" | "trace_aware_oracle"
    scenario: dict
    app: dict
    agent: dict  # agent config (_target_ + arguments; train: for learners)
    seeds: tuple[int, ...]
    shares: tuple[float, ...] = ()
    train_seed: int = 0
    members: tuple[
        dict, ...
    ] = ()  # oracle: the family members of this job (falcon.experiments.oracle)
    # trace-aware oracle: per seed the agent config the oracle chose (None: none finished)
    seed_agents: tuple[dict | None, ...] = ()
    # deployed: every seed in order on one scheduler (learnability.sequential)
    sequential: bool = False


# ---------------------------------------------------------------- jobs
def _seeds(sec: Mapping) -> tuple[int, ...]:
    """The evaluation seeds: ``seed .. seed + runs - 1``."""
    return tuple(range(sec["seed"], sec["seed"] + sec["runs"]))


def make_units(conditions: list[dict], agents: dict[str, dict], sec: Mapping) -> list[Unit]:
    """Every (condition, scheduler) job, in result order."""
    seeds = _seeds(sec)
    units = []
    for c in conditions:
        i = c["index"]
        base = dict(
            condition=i, condition_name=c["name"], scenario=c["scenario"], app=c["app"], seeds=seeds
        )
        for name in sec["rules"]:
            units.append(Unit(scheduler=name, kind="rule", agent=agents[name], **base))
        units.append(
            Unit(
                scheduler=FIXED,
                kind=FIXED,
                agent=agents[FIXED],
                shares=tuple(sec["fixed_split_shares"]),
                **base,
            )
        )
        if sec.get("oracle"):
            for j, group in enumerate(member_groups(sec["fixed_split_shares"], sec["oracle"])):
                units.append(
                    Unit(
                        scheduler=f"{ORACLE}#{j}",
                        kind=ORACLE,
                        agent=agents[FAMILY],
                        members=group,
                        **base,
                    )
                )
        for name in sec["learners"]:
            agent = dict(agents[name])
            if "seed" in agent:
                agent["seed"] = sec["seed"] + i
            units.append(
                Unit(
                    scheduler=name,
                    kind="learner",
                    agent=agent,
                    train_seed=sec["train_seed"] + 1000 * i,
                    **base,
                )
            )
        for name in sec["deployed"]:
            agent = condition_agent(agents[name], c["name"])
            agent.pop("train", None)  # deployed as configured: never trained on the condition
            if "seed" in agent:
                agent["seed"] = sec["seed"] + i
            units.append(
                Unit(
                    scheduler=name,
                    kind="deployed",
                    agent=agent,
                    sequential=sec["sequential"],
                    **base,
                )
            )
    return units


def candidate_agents(sec: Mapping, agents: dict[str, dict]) -> dict[str, dict]:
    """``{label: agent config}`` of every oracle candidate, as :func:`make_units`'
    jobs run them: the fixed split's shares, the family's other members, the rules."""
    out = {label(s, None, False): {**agents[FIXED], "share": s} for s in sec["fixed_split_shares"]}
    for group in member_groups(sec["fixed_split_shares"], sec["oracle"]):
        out.update({label(**m): {**agents[FAMILY], **m} for m in group})
    out.update({r: agents[r] for r in sec["rules"]})
    return out


def trace_oracle_units(
    conditions: list[dict], gathered: Mapping[str, dict], sec: Mapping, agents: dict[str, dict]
) -> list[Unit]:
    """One job per condition: each seed's oracle choice (from the condition's
    gathered results) run again on fresh noise (the trace-aware oracle)."""
    cands = candidate_agents(sec, agents)
    seeds = _seeds(sec)
    return [
        Unit(
            condition=c["index"],
            condition_name=c["name"],
            scheduler=TRACE_ORACLE,
            kind=TRACE_ORACLE,
            scenario=c["scenario"],
            app=c["app"],
            agent={},
            seeds=seeds,
            seed_agents=tuple(
                None if x is None else cands[x] for x in oracle_choices(gathered[c["name"]], sec)
            ),
        )
        for c in conditions
    ]


def _cost_order(units: Sequence[Unit]) -> list[int]:
    """Indices of ``units``, the expensive ones first (learners, then large files)."""

    def size(u: Unit) -> float:
        return (
            float(u.app.get("size_bytes") or DEFAULT_APP["size_bytes"])
            if u.app["kind"] == "bulk"
            else float(DEFAULT_APP["size_bytes"])
        )

    return sorted(range(len(units)), key=lambda k: (_KIND_ORDER[units[k].kind], -size(units[k]), k))


def _finite(x):
    return float(x) if x is not None and math.isfinite(float(x)) else None


def experience(metrics: Mapping) -> dict:
    """What a learner saw before the evaluation, from its fit metrics."""
    if "online_packets" in metrics:
        return {
            "kind": "online",
            "episodes": metrics.get("episodes"),
            "packets": metrics["online_packets"],
        }
    if "transitions" in metrics:
        return {
            "kind": "offline",
            "episodes": metrics.get("logged_episodes"),
            "packets": metrics["transitions"],
        }
    return {"kind": None, "episodes": metrics.get("episodes"), "packets": None}


def train_learner(unit: Unit):
    """``(trained scheduler, training record)`` through falcon.train's training step."""
    from falcon.train import train_agents

    t0 = time.perf_counter()
    rec = RecordingTracker()
    plan = Plan(
        [(unit.condition_name, unit.scenario)],
        [(unit.condition_name, unit.app)],
        [(unit.scheduler, unit.agent)],
        list(unit.seeds),
    )
    with tempfile.TemporaryDirectory(prefix="learnability-") as tmp:
        plan = train_agents(plan, Path(tmp), rec, unit.train_seed, progress=False)
        model_dir = Path(tmp) / "models" / unit.scheduler
        models = (
            {
                str(p.relative_to(model_dir)): p.read_bytes()
                for p in sorted(model_dir.rglob("*"))
                if p.is_file()
            }
            if model_dir.is_dir()
            else {}
        )
    prefix = f"train/{unit.scheduler}/"
    final = rec.final(prefix)
    curve = [
        ({k[len(prefix) :]: v for k, v in m.items() if k.startswith(prefix)}, step)
        for m, step in rec.calls
        if step is not None
    ]
    record = {
        "seed": unit.train_seed,
        "metrics": {k: _finite(v) for k, v in final.items()},
        "experience": experience(final),
        "wall_s": time.perf_counter() - t0,
    }
    return plan.agents[0][1], record, curve, models


def _one_run(unit: Unit, k: int, agent, resampled: bool = False) -> dict:
    """``download_time_s``, ``timed_out`` and ``redundancy_overhead`` (0 for a scheduler
    that never copies data) of the run of ``unit``'s ``k``-th seed
    (falcon.jobs.run_episode_job); ``resampled``: on the trace segments that seed
    draws, with fresh delay and loss draws (the trace-aware oracle, :mod:`falcon.experiments.oracle`)."""
    from envs.emulation import pin_trace_draws
    from falcon.jobs import Job, run_episode_job

    s = unit.seeds[k]
    m = run_episode_job(
        Job(
            k,
            unit.condition_name,
            unit.condition_name,
            unit.scheduler,
            s + RESAMPLE_SEED_OFFSET if resampled else s,
            pin_trace_draws(unit.scenario, s) if resampled else unit.scenario,
            unit.app,
            agent,
        )
    )["metrics"]
    return _run_record(m)


def _run_record(m: Mapping) -> dict:
    """What the suite keeps of a run's metrics ``m``."""
    return {
        METRIC: m[METRIC],
        "timed_out": m.get("timed_out", 0.0),
        OVERHEAD: m.get(OVERHEAD, 0.0),
    }


def _times(unit: Unit, agent) -> list[dict]:
    """:func:`_one_run` of every seed of ``unit``."""
    return [_one_run(unit, k, agent) for k in range(len(unit.seeds))]


def _sequential_times(unit: Unit) -> list[dict]:
    """Every seed of ``unit`` in order on one scheduler (``learnability.sequential``):
    a scheduler that learns online keeps what it learned from one download to
    the next (its own ``run_episode``, :func:`falcon.experiments.common.download`)."""
    from falcon.jobs import instantiate_agent

    scheduler = instantiate_agent(unit.scheduler, unit.agent)
    return [_run_record(common.download(scheduler, unit.scenario, unit.app, s)) for s in unit.seeds]


def _trace_runs(unit: Unit) -> list[dict]:
    """Each seed's resampled run of the agent the oracle chose there (NaN: it chose none)."""
    missing = {METRIC: math.nan, "timed_out": 1.0, OVERHEAD: 0.0}
    return [
        _one_run(unit, k, agent, resampled=True) if agent is not None else missing
        for k, agent in enumerate(unit.seed_agents)
    ]


def run_unit(unit: Unit) -> dict:
    """Worker: one (condition, scheduler) job; plain results."""
    t0 = time.perf_counter()
    out: dict = {}
    agent = unit.agent
    if unit.kind == "learner":
        agent, out["train"], out["curve"], out["models"] = train_learner(unit)
    if unit.kind == FIXED:
        out["shares"] = {s: _times(unit, {**unit.agent, "share": s}) for s in unit.shares}
    elif unit.kind == ORACLE:
        out["members"] = {label(**m): _times(unit, {**unit.agent, **m}) for m in unit.members}
    elif unit.kind == TRACE_ORACLE:
        out["runs"] = _trace_runs(unit)
    elif unit.sequential:
        out["runs"] = _sequential_times(unit)
    else:
        out["runs"] = _times(unit, agent)
    out["wall_s"] = time.perf_counter() - t0
    return out


# ---------------------------------------------------------------- the experiment
def _progress_line(
    unit: Unit, res: dict, n_done: int, n_jobs: int, elapsed: float, width: int
) -> str:
    if unit.kind in (FIXED, ORACLE):
        runs_of = res["shares"] if unit.kind == FIXED else res["members"]
        med = {
            s: report.describe([r[METRIC] for r in runs], unfinished="last")["median"]
            for s, runs in runs_of.items()
        }
        ok = {s: m for s, m in med.items() if m is not None}
        best = min(ok, key=ok.get) if ok else None
        name = (f"share {best:g}" if unit.kind == FIXED else best) if best is not None else None
        what = (
            (f"best {name}: median {ok[best]:.3f} s" if best is not None else "no finished run")
            + f" ({len(med)} {'shares' if unit.kind == FIXED else 'policies'} x {len(unit.seeds)} runs)"
        )
    else:
        m = report.describe([r[METRIC] for r in res["runs"]], unfinished="last")["median"]
        what = (
            f"median {m:.3f} s" if m is not None else "no finished run"
        ) + f" ({len(unit.seeds)} runs)"
        if "train" in res:
            exp = res["train"]["experience"]
            seen = f" on {exp['episodes']:.0f} episodes" if exp["episodes"] is not None else ""
            if exp["packets"] is not None:
                seen += f" / {exp['packets']:.0f} {exp['kind']} packets"
            what += f", trained{seen} in {res['train']['wall_s']:.1f} s"
    return (
        f"{JOB}: [{n_done:>{len(str(n_jobs))}}/{n_jobs}] {unit.condition_name:<{width}} {unit.scheduler:<11} "
        f"{what} [{res['wall_s']:.1f} s; elapsed {elapsed:.0f} s]"
    )


def _gather(c: dict, units, by_key, sec: Mapping, log, models_dir) -> dict:
    """The job results of condition ``c`` by scheduler (the oracle's groups as
    one); the learners' training curves to ``log`` and models to ``models_dir``."""
    out = {
        u.scheduler: by_key[(u.condition, u.scheduler)]
        for u in units
        if u.condition == c["index"] and u.kind != ORACLE
    }
    chunks = [
        by_key[(u.condition, u.scheduler)]
        for u in units
        if u.condition == c["index"] and u.kind == ORACLE
    ]
    if chunks:  # the oracle's jobs, one family member group each, as one result
        out[ORACLE] = {
            "members": {k: v for ch in chunks for k, v in ch["members"].items()},
            "wall_s": sum(ch["wall_s"] for ch in chunks),
        }
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
    return out


def run_learnability(
    sec: dict,
    conditions: list[dict],
    agents: dict[str, dict],
    runtime: Mapping | None = None,
    progress: bool = True,
    log=None,
    models_dir: Path | None = None,
) -> dict:
    """The suite (module docstring) without tracking; returns the results.
    ``log(metrics, step)`` receives the training curves; ``models_dir``
    receives the trained models (``<condition>/<learner>/``)."""
    t0 = time.perf_counter()
    folder = Path(models_dir) / "generalists" if models_dir else None  # else the cache's
    agents, generalists = train_generalists(agents, sec, folder, progress)
    return _run(sec, conditions, agents, generalists, runtime, progress, log, models_dir, t0)


def _run(sec, conditions, agents, generalists, runtime, progress, log, models_dir, t0) -> dict:
    """:func:`run_learnability` once the generalists are trained."""
    units = make_units(conditions, agents, sec)
    order = _cost_order(units)
    jobs = [units[k] for k in order]
    width = max(len(c["name"]) for c in conditions)

    def reporter(batch: list[Unit]):
        done = [0]

        def report_job(k: int, res: dict) -> None:
            done[0] += 1
            if progress:
                line = _progress_line(
                    batch[k], res, done[0], len(batch), time.perf_counter() - t0, width
                )
                info(line)

        return report_job

    rt = check_runtime(runtime)
    if progress:
        info(
            f"{JOB}: {len(conditions)} conditions x {len(sec['rules'])} rules + fixed split "
            f"({len(sec['fixed_split_shares'])} shares) + {len(sec['learners'])} learners + "
            f"{len(sec['deployed'])} deployed, "
            f"{sec['runs']} runs each: {len(jobs)} jobs on runtime={rt['name']}"
            + (
                f" ({rt['workers']} worker{'s' if rt['workers'] > 1 else ''})"
                if rt["name"] == "local"
                else ""
            )
        )
    outs = run_jobs(jobs, run_unit, rt, progress=False, desc=JOB, on_result=reporter(jobs))
    by_key = {(u.condition, u.scheduler): r for u, r in zip(jobs, outs, strict=True)}
    gathered = {c["name"]: _gather(c, units, by_key, sec, log, models_dir) for c in conditions}
    if (sec.get("oracle") or {}).get("resample"):  # needs every candidate's runs first
        trace = trace_oracle_units(conditions, gathered, sec, agents)
        outs = run_jobs(trace, run_unit, rt, progress=False, desc=JOB, on_result=reporter(trace))
        for u, r in zip(trace, outs, strict=True):
            gathered[u.condition_name][TRACE_ORACLE] = r
    results = {name: score_condition(out, sec) for name, out in gathered.items()}
    settings_out = {
        k: sec[k]
        for k in (
            "runs",
            "seed",
            "train_seed",
            "rules",
            "learners",
            "deployed",
            "fixed_split_shares",
            "within",
            "beat_margin",
            "bulk_size_bytes",
            "max_conditions",
            "agent_overrides",
            "oracle",
            "headroom_margin",
            "sequential",
        )
    }
    settings_out["split"] = sec.get("split")
    settings_out.update(
        seeds=list(units[0].seeds),
        agents=agents,
        runtime=rt["name"],
        evaluation=(
            "every run from a fresh scheduler (rules; deployed schedulers as "
            "configured, e.g. FALCON from its bank, adapting within the run"
            + (
                "; with sequential: true one deployed scheduler runs a condition's "
                "seeds in order, keeping what it learns across them"
                if sec["sequential"]
                else ""
            )
            + ") or a copy of the trained one (learners; online learners keep "
            "learning within the run)"
        ),
    )
    cond_out = [
        {
            "index": c["index"],
            "name": c["name"],
            "scenario": c["scenario"],
            "app": c["app"],
            "train_seed": sec["train_seed"] + 1000 * c["index"],
            "agent_seed": sec["seed"] + c["index"],
        }
        for c in conditions
    ]
    return {
        "job": JOB,
        "schema_version": SCHEMA_VERSION,
        "settings": settings_out,
        "schedulers": [*sec["rules"], *references(sec), *scored(sec)],
        "conditions": cond_out,
        "results": results,
        "generalists": generalists,
        **suite_summary(results, sec),
        "wall_s": time.perf_counter() - t0,
    }


def run_job(cfg) -> dict:
    """``experiment=learnability``: the tracked job."""
    cfg, sec, conditions, agents = settings(cfg)
    progress = bool(cfg.get("progress", True))
    runtime = check_runtime(cfg.get("runtime"))

    def body(tracker, folder):
        res = run_learnability(
            sec, conditions, agents, runtime, progress, tracker.log_metrics, folder / "models"
        )
        tracker.log_metrics(flat_metrics(res))
        return common.publish(tracker, folder, JOB, res, table, plot, table_file="table.txt")

    params = {
        JOB: {
            **sec,
            "conditions": [{k: c[k] for k in ("name", "scenario", "app")} for c in conditions],
        },
        "runtime": runtime,
        "quick": bool(cfg.get("quick", False)),
    }
    return common.run_tracked(cfg, JOB, params, body)


__all__ = [
    "run_job",
    "run_learnability",
    "settings",
    "check_condition",
    "score_condition",
    "suite_summary",
    "geometric_mean",
    "run_unit",
    "make_units",
    "table",
    "plot",
    "Unit",
]
