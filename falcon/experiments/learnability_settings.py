"""The learnability suite's settings (:mod:`falcon.experiments.learnability`):
its constants, and the checks of the ``learnability:`` section, its
conditions, the agent configs and the run's bank, before any job runs."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

from envs.apps import normalise_app
from envs.errors import ConfigError, FalconInputError, check_flag
from envs.scenario import normalise_scenario
from falcon.config import Plan, check_int, check_runtime, group_options
from falcon.experiments import common
from falcon.experiments.condition_lists import check_learners, check_list_files, check_list_name
from falcon.experiments.oracle import check_oracle, label, member_groups

JOB = "learnability"
SCHEMA_VERSION = 2
FIXED = "fixed_split"  # agent config of the fixed split
BEST_FIXED = "best_fixed_split"  # its best share, as a column of the results
DEFAULT_APP = {"kind": "bulk", "size_bytes": 2_000_000}
METRIC = "download_time_s"
OVERHEAD = "redundancy_overhead"  # re-injected bytes / file size (0 for schedulers that never copy)
FAMILY = "split_threshold"  # agent config of the oracle's policy family (falcon.experiments.oracle)
CONDITION_KEYS = ("name", "scenario", "app")
SECTION_KEYS = (
    "runs",
    "rules",
    "learners",
    "deployed",
    "agent_overrides",
    "fixed_split_shares",
    "within",
    "beat_margin",
    "bulk_size_bytes",
    "max_conditions",
    "conditions",
    "oracle",
    "headroom_margin",
    "split",
    "sequential",
)
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


# ---------------------------------------------------------------- settings
def _name_list(sec: Mapping, key: str, allow_empty: bool) -> list[str]:
    v = sec.get(key)
    if (
        not isinstance(v, list)
        or (not v and not allow_empty)
        or not all(isinstance(x, str) and x for x in v)
    ):
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
        hint = (
            " (quote names that read as numbers: name: '50_10')"
            if isinstance(name, int | float)
            else ""
        )
        raise ConfigError(
            f"{where}.name: expected a name of letters, digits, '_', '-', '.', got {name!r}{hint}"
        )
    where = f"{where} ({name})"
    scenario, app = entry.get("scenario"), entry.get("app")
    if not isinstance(scenario, Mapping):
        raise ConfigError(
            f"{where}.scenario: expected a scenario mapping with paths, got {scenario!r}"
        )
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
        raise ConfigError(
            f"{where}: scenario.paths: expected 2 paths (a two-path suite), "
            f"got {len(normalised['paths'])}"
        )
    return {"index": i, "name": name, "scenario": scenario, "app": app}


def check_conditions(raw, bulk_size: int | None) -> list[dict]:
    if not isinstance(raw, list) or not raw:
        raise ConfigError(
            f"{JOB}.conditions: expected a non-empty list of {{name, scenario, app}}, got {raw!r}"
        )
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
        raise ConfigError(
            f"{JOB}.fixed_split_shares: expected a non-empty list of numbers in [0, 1], got {v!r}"
        )
    try:
        return [check_share(s) for s in v]
    except ConfigError as e:
        raise ConfigError(f"{JOB}.fixed_split_shares: {e}") from None


def agent_configs(
    rules: list[str], learners: list[str], overrides: Mapping, deployed: Sequence[str] = ()
) -> dict[str, dict]:
    """Agent configs (``configs/agent/<name>.yaml`` + overrides) of the rules,
    the fixed split, the learners and the deployed schedulers; checks which
    are trainable."""
    from falcon.train import is_trainable

    known = [*rules, FIXED, *learners, *deployed]
    if not isinstance(overrides, Mapping):
        raise ConfigError(
            f"{JOB}.agent_overrides: expected a mapping scheduler -> config keys, got {overrides!r}"
        )
    for name, over in overrides.items():
        # overrides of agents the run does not use are allowed (e.g. the quick
        # variant's learner budgets with learners=[]); unknown names are typos
        if name not in known and name not in group_options("agent"):
            raise ConfigError(
                f"{JOB}.agent_overrides: unknown agent {name!r} "
                f"(known: {', '.join(group_options('agent'))})"
            )
        if not isinstance(over, Mapping):
            raise ConfigError(
                f"{JOB}.agent_overrides.{name}: expected a mapping of agent config keys, got {over!r}"
            )
    twice = sorted(n for n in set(known) if known.count(n) > 1)
    if twice:
        raise ConfigError(
            f"{JOB}: {', '.join(twice)} listed more than once among rules, learners and deployed"
        )
    if FIXED in rules or FIXED in learners or FIXED in deployed:
        raise ConfigError(
            f"{JOB}: {FIXED} is the suite's reference (fixed_split_shares), not a rule or learner"
        )
    cfgs = {name: common.agent_config(name, overrides.get(name)) for name in known}
    cfgs[FAMILY] = common.agent_config(
        FAMILY, None
    )  # the oracle's family (a reference, not a rule)
    for name in rules:
        if is_trainable(cfgs[name]):
            raise ConfigError(
                f"{JOB}.rules: {name!r} has a train: section (list it under {JOB}.learners)"
            )
    for name in learners:
        if not is_trainable(cfgs[name]):
            raise ConfigError(
                f"{JOB}.learners: {name!r} has no train: section (nothing to train; "
                f"list it under {JOB}.rules)"
            )
        if not isinstance(cfgs[name]["train"], Mapping):
            raise ConfigError(
                f"{JOB}.learners: {name!r}: train: must be a mapping of fit() arguments"
            )
    return cfgs


def settings(cfg):
    """Validated ``(cfg, section, conditions, agent configs)``; every
    condition, agent and share is built once (no training yet), and the
    conditions' trace files are of the splits their list allows
    (:mod:`falcon.experiments.condition_lists`)."""
    cfg, sec = common.job_config(cfg, JOB)
    unknown = sorted(set(sec) - set(SECTION_KEYS))
    if unknown:
        raise ConfigError(f"{JOB}: unknown key(s) {unknown}; known: {list(SECTION_KEYS)}")
    sec["runs"] = common.check_positive_int(sec, "runs")
    sec["seed"] = check_int(cfg, "seed", 0)
    sec["train_seed"] = check_int(cfg, "train_seed", 0)
    sec["rules"] = _name_list(sec, "rules", allow_empty=False)
    sec["learners"] = _name_list(sec, "learners", allow_empty=True)
    sec["deployed"] = (
        _name_list(sec, "deployed", allow_empty=True) if sec.get("deployed") is not None else []
    )
    sec["fixed_split_shares"] = check_shares(sec)
    sec["within"] = _number(sec, "within", 1.0)
    sec["beat_margin"] = _number(sec, "beat_margin", 0.0, 1.0)
    sec["headroom_margin"] = _number(sec, "headroom_margin", 0.0, 1.0)
    sec["oracle"] = check_oracle(sec.get("oracle"), f"{JOB}.oracle")
    missing = [s for s in (0.0, 1.0) if s not in sec["fixed_split_shares"]]
    if missing:
        raise ConfigError(
            f"{JOB}.fixed_split_shares: must include 0 and 1 (the best single path, and the "
            f"oracle contains it), missing {missing}"
        )
    sec["bulk_size_bytes"] = _optional_int(sec, "bulk_size_bytes")
    sec["max_conditions"] = _optional_int(sec, "max_conditions")
    sec["agent_overrides"] = sec.get("agent_overrides") or {}
    sec["sequential"] = check_flag(sec.get("sequential"), f"{JOB}.sequential")
    sec["split"] = check_list_name(sec, JOB)
    check_learners(sec["split"], sec["learners"], JOB)
    conditions = check_conditions(sec.get("conditions"), sec["bulk_size_bytes"])
    check_list_files(conditions, sec["split"], JOB)
    agents = agent_configs(sec["rules"], sec["learners"], sec["agent_overrides"], sec["deployed"])
    validate(conditions, agents, sec)  # agents waiting for the run's bank are checked below
    agents = with_run_bank(agents, cfg)
    if sec["max_conditions"] is not None:
        conditions = conditions[: sec["max_conditions"]]
    return cfg, sec, conditions, agents


def with_run_bank(agents: dict[str, dict], cfg) -> dict[str, dict]:
    """Agents whose ``bank`` is null (FALCON's default) get the run's bank
    (``bank=`` preset, default quick), built now when missing
    (:func:`falcon.bank_job.resolve_agent_banks`, as falcon.train does)."""
    from falcon.bank_job import resolve_agent_banks
    from falcon.config import to_plain

    plan = Plan([], [], list(agents.items()), [])
    plan = resolve_agent_banks(
        plan,
        to_plain(cfg.get("bank")),
        check_runtime(cfg.get("runtime")),
        progress=bool(cfg.get("progress", True)),
    )
    return dict(plan.agents)


#: in a deployed scheduler's ``model``, replaced by each condition's name: models
#: trained per condition on another list, deployed on the conditions of the same name
CONDITION_FIELD = "{condition}"


def _names_condition(agent: Mapping) -> bool:
    model = agent.get("model")
    return isinstance(model, str) and CONDITION_FIELD in model


def condition_agent(agent: Mapping, condition: str) -> dict:
    """``agent`` with :data:`CONDITION_FIELD` in its ``model`` replaced by ``condition``."""
    if _names_condition(agent):
        return {**agent, "model": agent["model"].replace(CONDITION_FIELD, condition)}
    return dict(agent)


def _templated(agents: Mapping[str, dict], deployed) -> list[str]:
    """The agents whose ``model`` names :data:`CONDITION_FIELD` (deployed ones only:
    a learner's is an error)."""
    names = [name for name, agent in agents.items() if _names_condition(agent)]
    for name in names:
        if name not in deployed:
            raise ConfigError(
                f"{JOB}.agent_overrides.{name}.model: {CONDITION_FIELD} is for deployed "
                f"schedulers (learnability.deployed), {name} is not one"
            )
    return names


def validate(conditions: list[dict], agents: dict[str, dict], sec: Mapping) -> None:
    """Build every scenario (traces) and app (pages) once and instantiate
    every agent and share, as falcon.train checks its plan (an agent whose
    ``model`` names :data:`CONDITION_FIELD` once per condition)."""
    from falcon.experiment import validate_plan

    templated = _templated(agents, sec["deployed"])
    shares = [(f"{FIXED}@{s:g}", {**agents[FIXED], "share": s}) for s in sec["fixed_split_shares"]]
    # each condition's model is loaded and checked
    shares += [
        (f"{n}@{c['name']}", condition_agent(agents[n], c["name"]))
        for n in templated
        for c in conditions
    ]
    if sec.get(
        "oracle"
    ):  # one member per (threshold, reinject) pair: the others differ by share only
        for group in member_groups(sec["fixed_split_shares"], sec["oracle"]):
            shares.append((f"{FAMILY}@{label(**group[0])}", {**agents[FAMILY], **group[0]}))
    plan = Plan(
        scenarios=[(c["name"], c["scenario"]) for c in conditions],
        apps=[(c["name"], c["app"]) for c in conditions],
        agents=[(n, a) for n, a in agents.items() if n not in (FIXED, FAMILY, *templated)] + shares,
        seeds=[sec["seed"]],
    )
    validate_plan(plan)


__all__ = [
    "JOB",
    "SCHEMA_VERSION",
    "FIXED",
    "BEST_FIXED",
    "OVERHEAD",
    "FAMILY",
    "DEFAULT_APP",
    "METRIC",
    "CONDITION_KEYS",
    "SECTION_KEYS",
    "CONDITION_FIELD",
    "condition_agent",
    "check_condition",
    "check_conditions",
    "check_shares",
    "agent_configs",
    "settings",
    "with_run_bank",
    "validate",
]
