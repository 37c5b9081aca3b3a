"""From a composed Hydra config to the plain dicts the emulator runs.

The entry points compose ``configs/`` with Hydra; this module turns the
result into a :class:`Plan`: the named scenarios, apps and agents of a run,
the seeds, as plain (resolved) dicts, and checks the values the entry points
own (runs, seed, lists, runtime). Emulator values are checked by
``envs.normalise_scenario`` / ``envs.apps.normalise_app`` when the plan is
validated (:func:`falcon.experiment.validate_plan`).

Lists (``agent_list``, ``scenario_list``, ``app_list``) name configs of their
group (``configs/agent/<name>.yaml`` ..., and the folders on ``hydra.searchpath``);
``agent_list`` also takes scheduler plug-ins and ``module:Class`` import paths
(:func:`falcon.plugins.resolve_agents`). The config selected by ``agent=``
(``scenario=``, ``app=``) carries the command line's dotted overrides and is
used wherever its name appears in the list; the other names are composed from
their files as they are. If the command line selects ``agent=NAME`` and does
not give ``agent_list``, that one agent runs (same for scenario and app).
Outside a Hydra job (``hydra.compose`` in a notebook or a test) the
selection's name is not recorded unless the config was composed with
``return_hydra_config=True``; then a selection that equals a config file is
matched to it, and one with overrides beside a list is a one-line error
rather than dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf

from envs.errors import ConfigError, is_whole_number
from falcon import schema as _schema  # noqa: F401  (registers the config schemas with Hydra)
from falcon.paths import config_dir

#: the Hydra config folder: an installed wheel's package data, else the
#: checkout's ``configs/`` (:func:`falcon.paths.config_dir`)
CONFIG_DIR = config_dir()

#: keys of an agent config that are not constructor arguments
AGENT_META_KEYS = ("train",)

GROUPS = ("scenario", "app", "agent")


@dataclass
class Plan:
    """What one run executes: every agent on every scenario x app x seed."""

    scenarios: list[tuple[str, dict]]
    apps: list[tuple[str, dict]]
    agents: list[
        tuple[str, Any]
    ]  # (name, agent config dict with _target_) or (name, prepared scheduler)
    seeds: list[int]
    choices: dict[str, str] = field(default_factory=dict)
    #: provenance of the agents from outside the project (falcon.plugins.provenance)
    plugins: dict[str, dict] = field(default_factory=dict)

    @property
    def n_jobs(self) -> int:
        return len(self.scenarios) * len(self.apps) * len(self.agents) * len(self.seeds)

    def describe(self) -> str:
        def names(items):
            return ",".join(n for n, _ in items)

        return (
            f"{self.n_jobs} episodes: schedulers [{names(self.agents)}] x scenarios "
            f"[{names(self.scenarios)}] x apps [{names(self.apps)}] x {len(self.seeds)} seeds"
        )


def to_plain(node) -> Any:
    """A resolved plain container from an OmegaConf node (plain values pass through).
    A whole config composed with ``return_hydra_config=True`` leaves out its
    ``hydra`` node: Hydra's own settings, some of which only a running job sets."""
    if isinstance(node, DictConfig) and node._get_parent() is None and "hydra" in node:
        node = OmegaConf.masked_copy(node, [k for k in node if k != "hydra"])
    if isinstance(node, DictConfig | ListConfig):
        return OmegaConf.to_container(node, resolve=True, throw_on_missing=True)
    return node


def searchpath_overrides() -> list[str]:
    """``hydra.searchpath=[...]`` of the running Hydra job, as an override for
    the composes it makes itself (Hydra applies a searchpath to the primary
    config only): so every name of an agent list may come from the user's own
    config folder, not only the one ``agent=`` selects. [] outside a job."""
    from hydra.core.hydra_config import HydraConfig

    if not HydraConfig.initialized():
        return []
    paths = list(HydraConfig.get().searchpath or [])
    if not paths:
        return []
    quoted = ",".join("'" + str(p).replace("\\", "\\\\").replace("'", "\\'") + "'" for p in paths)
    return [f"hydra.searchpath=[{quoted}]"]


def group_options(group: str) -> list[str]:
    """Names of the configs in a config group (``configs/<group>/*.yaml`` and
    ``<group>/*.yaml`` of the folders on the job's ``hydra.searchpath``)."""
    from hydra.core.global_hydra import GlobalHydra

    gh = GlobalHydra.instance()
    if gh.is_initialized():
        return sorted(gh.config_loader().get_group_options(group, overrides=searchpath_overrides()))
    return sorted(p.stem for p in (CONFIG_DIR / group).glob("*.yaml"))


def load_group(group: str, name: str) -> DictConfig:
    """Compose ``configs/<group>/<name>.yaml`` (with its own defaults list) on its own."""
    return load_groups(group, [name])[0]


def load_groups(group: str, names: list[str]) -> list[DictConfig]:
    """:func:`load_group` of several names in one Hydra compose (each under its
    own package key), which costs about what one compose costs."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    names = [str(n) for n in names]
    known = group_options(group)
    for name in names:
        if name not in known:
            raise ConfigError(f"unknown {group} {name!r} (known: {', '.join(known)})")
    if not names:
        return []
    overrides = [f"+{group}@_falcon_{k}={name}" for k, name in enumerate(names)]
    overrides += searchpath_overrides()
    if GlobalHydra.instance().is_initialized():
        cfg = compose(overrides=overrides)
    else:
        with initialize_config_dir(str(CONFIG_DIR), version_base="1.3"):
            cfg = compose(overrides=overrides)
    return [cfg[f"_falcon_{k}"] for k in range(len(names))]


def hydra_context(cfg: DictConfig | None = None) -> tuple[dict[str, str], set[str]]:
    """(group choices, keys overridden on the command line) of the running Hydra
    job; outside one, of ``cfg``'s own ``hydra`` node when it has one
    (``hydra.compose(..., return_hydra_config=True)``), else nothing."""
    from hydra.core.hydra_config import HydraConfig

    if HydraConfig.initialized():
        hc = HydraConfig.get()
    elif cfg is not None and cfg.get("hydra") is not None:
        hc = cfg.hydra
    else:
        return {}, set()
    choices = {
        k: v for k, v in hc.runtime.choices.items() if v is not None and not k.startswith("hydra")
    }
    keys = set()
    for ov in hc.overrides.task:
        key = ov.split("=", 1)[0].lstrip("+~")
        keys.add(key.split("@", 1)[0])
    return dict(choices), keys


def check_int(cfg, key: str, lo: int, where: str = "") -> int:
    value = cfg.get(key)
    if not is_whole_number(value, lo):
        raise ConfigError(f"{where}{key}: expected an integer >= {lo}, got {value!r}")
    return value


def _names(cfg, key: str) -> list[str] | None:
    value = cfg.get(key)
    if value is None:
        return None
    if isinstance(value, str):
        value = [value]
    value = to_plain(value)
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(
            f"{key}: expected a non-empty list of names, e.g. {key}=[a,b], got {value!r}"
        )
    dup = sorted({v for v in value if value.count(v) > 1})
    if dup:
        raise ConfigError(f"{key}: {', '.join(dup)} listed twice")
    return value


def _entries(cfg, group: str, choices: dict, cli_keys: set) -> list[tuple[str, Any]]:
    list_key = f"{group}_list"
    names = _names(cfg, list_key)
    chosen = choices.get(group, group)
    single = group in cli_keys and list_key not in cli_keys
    if names is None or single:
        if cfg.get(group) is None:
            raise ConfigError(f"{group}: none selected (give {group}=NAME or {list_key}=[...])")
        return [(chosen, cfg[group])]
    own = cfg.get(group) is not None
    if own and group not in choices:  # outside a Hydra job: from the files, checked
        listed = _load_listed(group, names)
        _check_selection_placed(cfg, group, listed)
        return listed
    return _load_listed(group, names, (chosen, cfg[group]) if own else None)


def _load_listed(group: str, names: list[str], selected=None) -> list[tuple[str, Any]]:
    """(name, config) of a list's names; ``selected`` (name, config) where its name appears."""
    if group == "agent":  # names of configs, plug-ins or import paths
        from falcon.plugins import resolve_agents

        return resolve_agents(names, selected)
    others = iter(load_groups(group, [n for n in names if not (selected and n == selected[0])]))
    return [(n, selected[1] if selected and n == selected[0] else next(others)) for n in names]


def _check_selection_placed(cfg, group: str, listed: list[tuple[str, Any]]) -> None:
    """Outside a Hydra job (``hydra.compose`` without its ``hydra`` node), which
    config ``group=`` selected is not recorded, so the list is loaded from its
    files (``listed``: (name, config)). That loses nothing where the selection
    equals a listed config, or is none of them (an unmodified other config, an
    agent of another class: the list runs without it, as in a job). A
    selection that equals no config file carries overrides the list could not
    place: a one-line error, never a silent drop."""
    mine = to_plain(cfg[group])
    plain = [to_plain(c) for _, c in listed]
    if mine in plain:
        return
    if group == "agent" and all(
        not isinstance(c, dict) or c.get("_target_") != mine.get("_target_") for c in plain
    ):
        return
    names = {n for n, _ in listed}
    others = [o for o in group_options(group) if o not in names]
    if any(to_plain(node) == mine for node in load_groups(group, others)):
        return
    raise ConfigError(
        f"{group}: the {group}= selection has overrides and {group}_list is given, but "
        f"outside a Hydra job which listed name they belong to is not recorded: compose "
        f"with return_hydra_config=True, or leave {group}_list out to run the selection alone"
    )


def check_runtime(rt) -> dict:
    rt = to_plain(rt) or {}
    name = rt.get("name", "local")
    if name not in ("local", "ray"):
        raise ConfigError(f"runtime.name: unknown runtime {name!r} (known: local, ray)")
    if name == "local":
        rt["workers"] = (
            check_int(rt, "workers", 1, "runtime.") if rt.get("workers") is not None else 1
        )
    else:
        if rt.get("num_cpus") is not None:
            rt["num_cpus"] = check_int(rt, "num_cpus", 1, "runtime.")
        addr = rt.get("address")
        if addr is not None and not isinstance(addr, str):
            raise ConfigError(f"runtime.address: expected an address string, got {addr!r}")
    return rt


def make_plan(cfg: DictConfig, choices: dict | None = None, cli_keys: set | None = None) -> Plan:
    """Resolve the run's scenarios, apps, agents and seeds from a composed config.

    ``choices`` (group -> selected option) and ``cli_keys`` (keys given on the
    command line) come from the running Hydra job when not given.
    """
    if choices is None or cli_keys is None:
        hc_choices, hc_keys = hydra_context(cfg)
        choices = hc_choices if choices is None else choices
        cli_keys = hc_keys if cli_keys is None else cli_keys
    runs = check_int(cfg, "runs", 1)
    seed = check_int(cfg, "seed", 0)
    scenarios = []
    for name, node in _entries(cfg, "scenario", choices, cli_keys):
        s = to_plain(node)
        if not isinstance(s, dict):
            raise ConfigError(f"scenario {name!r}: expected a mapping")
        label = str(s.get("name") or name)
        scenarios.append((label, s))
    apps = [(name, to_plain(node)) for name, node in _entries(cfg, "app", choices, cli_keys)]
    agents = []
    for name, node in _entries(cfg, "agent", choices, cli_keys):
        a = to_plain(node)
        if not isinstance(a, dict) or "_target_" not in a:
            raise ConfigError(f"agent {name!r}: the config needs a _target_ (the scheduler class)")
        agents.append((name, a))
    from falcon.plugins import check_agent_names, provenance

    check_agent_names(agents)
    for what, items in (("scenario", scenarios), ("app", apps), ("agent", agents)):
        labels = [n for n, _ in items]
        dup = sorted({n for n in labels if labels.count(n) > 1})
        if dup:
            raise ConfigError(f"{what} name(s) {', '.join(dup)} appear twice in one run")
    plan = Plan(scenarios, apps, agents, list(range(seed, seed + runs)), dict(choices))
    plan.plugins = provenance(agents)
    return plan


__all__ = [
    "CONFIG_DIR",
    "Plan",
    "make_plan",
    "load_group",
    "group_options",
    "to_plain",
    "check_runtime",
    "check_int",
    "hydra_context",
    "AGENT_META_KEYS",
]
