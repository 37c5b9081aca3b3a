"""``python -m falcon.bench run``: the benchmark on the schedulers of ``agent_list``.

Per split of ``bench.splits`` the learnability suite
(:func:`falcon.experiments.learnability.run_learnability`) runs every rule,
the fixed split, the oracle's family and every benchmarked scheduler on
every condition and seed (the schedulers as "deployed": evaluated as
configured, never trained on the condition; a ``train:`` section is
ignored), through :func:`falcon.runtime.run_jobs` (``runtime.workers=N``,
``runtime=ray``). The schedulers are named as ``falcon.evaluate`` takes them
(:func:`falcon.config.make_plan`: configs/agent names, ``agent=NAME`` with
its dotted overrides). The results file is described in
:mod:`falcon.bench.results`; it is written to ``<output>/bench.json``
(``output=``, default ``results/bench/<time>-<run id>``) with the table on
stdout and, with tracking on, logged to MLflow with the suite scores as
metrics (``<split>/score_best_rule/<scheduler>``, ...).
"""

from __future__ import annotations

import math
import shlex
import sys
import time
from collections.abc import Mapping

from envs.errors import ConfigError
from falcon.bench import definition as bdef
from falcon.bench import results as bres
from falcon.experiments import common
from falcon.experiments.learnability import run_learnability
from falcon.experiments.learnability_report import geometric_mean
from falcon.experiments.learnability_settings import agent_configs, validate, with_run_bank
from falcon.experiments.oracle import BEST_SINGLE, CROSSFIT, ORACLE, TRACE_ORACLE, captured

#: the reference columns of the learnability suite a benchmark keeps (the
#: trace-aware oracle where the benchmark's ``oracle.resample`` computed it)
REFERENCES = (BEST_SINGLE, "best_fixed_split", ORACLE, CROSSFIT, TRACE_ORACLE)
METRIC = bdef.METRIC
#: a split's suite scores per scheduler (falcon.bench.results)
SCORES = ("score_best_rule", "score_best_known", "headroom_captured")


def suite_section(sec: Mapping, seed: int, split: str, names: list[str]) -> dict:
    """The learnability section that runs split ``split`` of the benchmark with the
    schedulers ``names`` as deployed ones (no learner: nothing is trained)."""
    return {
        "runs": sec["runs"],
        "seed": seed,
        "train_seed": 0,
        "rules": list(sec["rules"]),
        "learners": [],
        "deployed": list(names),
        "fixed_split_shares": list(sec["fixed_split_shares"]),
        "oracle": sec["oracle"],
        "headroom_margin": sec["headroom_margin"],
        "within": 1.05,
        "beat_margin": 0.10,
        "bulk_size_bytes": sec["bulk_size_bytes"],
        "max_conditions": None,
        "agent_overrides": {},
        "split": split,
        "sequential": False,  # the benchmark's protocol: every run from a fresh scheduler
    }


def submitted_agents(cfg, rules: list[str]) -> tuple[list[tuple[str, dict]], dict]:
    """``(name, agent config)`` of the schedulers to benchmark, resolved as
    falcon.evaluate resolves ``agent_list`` (:func:`falcon.config.make_plan`:
    configs, plug-ins, import paths; the ``train:`` section dropped), and the
    provenance of those from outside the project (the plan's ``plugins``)."""
    from falcon.config import hydra_context, make_plan

    choices, cli_keys = hydra_context()
    if cfg.get("agent_list") is None and "agent" not in cli_keys:
        raise ConfigError(
            "agent_list: name the schedulers to benchmark, e.g. 'agent_list=[falcon,my_scheduler]'"
        )
    plan = make_plan(cfg, choices, cli_keys)
    clash = [n for n, _ in plan.agents if n in rules or n in (*REFERENCES, "fixed_split")]
    if clash:
        raise ConfigError(
            f"agent_list: {', '.join(clash)} is a rule or reference of the benchmark (already "
            f"on every board); give a variant of it another agent name"
        )
    out = []
    for name, agent in plan.agents:
        agent = dict(agent)
        agent.pop("train", None)
        out.append((name, agent))
    return out, dict(getattr(plan, "plugins", None) or {})


def prepare(cfg):
    """``(cfg, section, conditions by split, definition, agents, names)``: every check
    (section, conditions and their trace splits, agents instantiated, the run's bank
    built when FALCON needs one) before any job runs."""
    from falcon.config import check_int, to_plain

    raw = to_plain(cfg.get("bench"))
    if not isinstance(raw, Mapping):
        raise ConfigError("bench: the benchmark's settings (bench: ...) are missing")
    sec = bdef.check_section(raw)
    seed = check_int(cfg, "seed", 0)
    conditions = bdef.load_conditions(sec)
    defn = bdef.definition(sec, seed, conditions)
    submitted, plugins = submitted_agents(cfg, sec["rules"])
    agents = agent_configs(sec["rules"], [], {})
    agents.update(submitted)
    names = [n for n, _ in submitted]
    for split in sec["splits"]:
        validate(conditions[split], agents, suite_section(sec, seed, split, names))
    agents = with_run_bank(agents, cfg)
    return sec, seed, conditions, defn, agents, names, plugins


def _entry(st: Mapping, best_known: float | None) -> dict:
    d = st[METRIC]
    med = d["median"]
    out = {
        "median_s": med,
        "p25_s": d.get("p25"),
        "p75_s": d.get("p75"),
        "n": d.get("n"),
        "runs": d.get("values"),
        "timed_out": st.get("timed_out", 0),
        "ratio_best_rule": st.get("ratio"),
        "ratio_best_known": med / best_known if med is not None and best_known else None,
        "headroom_captured": None,
    }
    for key in ("share", "path", "vs_best_rule"):
        if key in st:
            out[key] = st[key]
    return out


def score_condition(res: Mapping, rules: list[str], names: list[str], margin: float) -> dict:
    """One condition of a split from the learnability suite's result for it, with the
    best known taken over the rules and references only."""
    st = res["schedulers"]
    refs = [*rules, *(r for r in REFERENCES if r in st)]
    known = {n: st[n][METRIC]["median"] for n in refs if st[n][METRIC]["median"] is not None}
    best_known = min(known, key=known.get) if known else None
    bk = known.get(best_known)
    br = res["best_rule"]["median_s"]
    headroom = br / bk if br is not None and bk else None
    has = None if headroom is None else bool(bk <= (1.0 - margin) * br)
    out = {
        "best_rule": dict(res["best_rule"]),
        "best_known": {"name": best_known, "median_s": bk},
        "headroom": headroom,
        "has_headroom": has,
        "references": {n: _entry(st[n], bk) for n in refs},
        "schedulers": {n: _entry(st[n], bk) for n in names},
    }
    for group in ("references", "schedulers"):
        for e in out[group].values():
            e["headroom_captured"] = captured(br, bk, e["median_s"]) if has else None
    return out


def suite(conditions: Mapping[str, Mapping], names: list[str]) -> dict:
    """Per scheduler (and rule and reference) its suite scores over a split's conditions."""
    out = {}
    room = [c for c, r in conditions.items() if r["has_headroom"]]
    for n in names:
        rows = [
            r["schedulers"][n] if n in r["schedulers"] else r["references"][n]
            for r in conditions.values()
        ]
        caught = [
            (r["schedulers"].get(n) or r["references"][n])["headroom_captured"]
            for c, r in conditions.items()
            if c in room
        ]
        out[n] = {
            "score_best_rule": geometric_mean([e["ratio_best_rule"] for e in rows]),
            "score_best_known": geometric_mean([e["ratio_best_known"] for e in rows]),
            "headroom_captured": (
                sum(caught) / len(caught) if caught and None not in caught else None
            ),
            "conditions": sum(e["median_s"] is not None for e in rows),
        }
    return out


def score_split(lres: Mapping, rules: list[str], names: list[str], margin: float) -> dict:
    conds = {c: score_condition(r, rules, names, margin) for c, r in lres["results"].items()}
    first = next(iter(conds.values()))
    everyone = [*names, *first["references"]]
    return {"conditions": conds, "suite": suite(conds, everyone)}


def _mlflow(tracker, cfg) -> dict | None:
    """Where the run is in MLflow (None without tracking)."""
    from falcon.config import to_plain

    if not tracker.run_id:
        return None
    uri = str(tracker.uri)
    experiment = (to_plain(cfg.get("tracking")) or {}).get("experiment") or "falcon"
    exp_id = None
    try:
        from falcon.tracking_store import open_client

        exp_id = open_client(uri).get_run(tracker.run_id).info.experiment_id
    except Exception:  # the link is a convenience: the run id is kept either way
        exp_id = None
    url = None
    if uri.startswith(("http://", "https://")) and exp_id is not None:
        url = f"{uri.rstrip('/')}/#/experiments/{exp_id}/runs/{tracker.run_id}"
    return {
        "run_id": tracker.run_id,
        "tracking_uri": uri,
        "experiment": experiment,
        "experiment_id": exp_id,
        "run_url": url,
        "artifact_uri": f"runs:/{tracker.run_id}/{bres.FILE}",
    }


def table(results: Mapping) -> str:
    """The suite scores per split (benchmarked schedulers first, then the references)."""
    parts = [f"benchmark {results['benchmark']['id']}\n"]
    for split, s in results["splits"].items():
        rows = [
            [n, *(math.nan if v[k] is None else v[k] for k in SCORES)]  # None -> "-"
            for n, v in s["suite"].items()
        ]
        head = [f"{split} ({len(s['conditions'])} conditions)", "vs best rule", "vs best known"]
        parts.append(common.format_table([*head, "headroom captured"], rows))
    return "\n".join(parts)


def run_job(cfg) -> dict:
    """The tracked benchmark run; returns the results (module docstring)."""
    from falcon.config import check_runtime

    sec, seed, conditions, defn, agents, names, plugins = prepare(cfg)
    runtime = check_runtime(cfg.get("runtime"))
    progress = bool(cfg.get("progress", True))
    bid = bdef.benchmark_id(defn)

    def body(tracker, folder):
        t0 = time.perf_counter()
        tracker.set_tags(
            {
                "falcon.command": shlex.join(["python -m falcon.bench run", *sys.argv[1:]]),
                "falcon.benchmark": bid,
            }
        )
        splits = {}
        for split in sec["splits"]:
            lsec = suite_section(sec, seed, split, names)
            lres = run_learnability(lsec, conditions[split], agents, runtime, progress)
            splits[split] = score_split(lres, sec["rules"], names, sec["headroom_margin"])
            tracker.log_metrics(
                {
                    f"{split}/{key}/{n}": v[key]
                    for n, v in splits[split]["suite"].items()
                    for key in SCORES
                    if v[key] is not None
                }
            )
        results = {
            "kind": bres.KIND,
            "schema_version": bres.SCHEMA_VERSION,
            "benchmark": {"id": bid, "definition": defn},
            "schedulers": names,
            "agents": {n: agents[n] for n in names},
            "plugins": plugins,
            "splits_run": list(sec["splits"]),
            "runtime": runtime["name"],
            "wall_s": time.perf_counter() - t0,
            "mlflow": _mlflow(tracker, cfg),
            "splits": splits,
        }
        bres.write(folder / bres.FILE, results)
        (folder / "table.txt").write_text(table(results))
        print(table(results), end="")
        return results

    params = {bdef.JOB: {k: v for k, v in sec.items() if k != "defined_splits"}, "benchmark": bid}
    params["agents"] = {n: agents[n] for n in names}
    params["runtime"] = runtime
    return common.run_tracked(cfg, bdef.JOB, params, body)


__all__ = [
    "REFERENCES",
    "suite_section",
    "submitted_agents",
    "prepare",
    "score_condition",
    "score_split",
    "suite",
    "table",
    "run_job",
]
