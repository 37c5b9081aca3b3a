"""The agents of a run from their names, and the provenance of schedulers from outside the project.

:func:`resolve_agents` is the one function that turns the names of an
``agent_list`` into the agent configs a run executes; ``falcon.evaluate``
and ``falcon.train`` (through :func:`falcon.config.make_plan`) use it, and
so should any other entry point that takes scheduler names. A name is

1. a config of the ``agent`` group: ``configs/agent/<name>.yaml``, or
   ``<folder>/agent/<name>.yaml`` of a folder on ``hydra.searchpath``
   (``hydra.searchpath=[file:///path/to/conf]`` or ``[pkg://mypkg.conf]``):
   how a plug-in gets its own parameters;
2. a scheduler plug-in: an entry point of the group ``falcon.schedulers``
   of an installed distribution; its config is ``{_target_: the class}``
   (plus an empty ``train:`` section when the class is an
   :class:`envs.scheduler.Trainable`, so ``falcon.train`` trains it with
   ``fit``'s defaults);
3. an import path ``module:Class``, labelled with the class's own ``name``
   attribute or its ``__name__``.

(2) and (3) are :func:`baselines.registry.resolve_scheduler`'s. A name that
is both a built-in config and a plug-in, or a config and a plug-in of a
different class, is a one-line :class:`~envs.errors.ConfigError`.

:func:`provenance` records, per agent whose ``_target_`` lies outside the
project's packages, the class, the declaring distribution's name and
version, the entry point, and a SHA-256 over the source files of the
class's top-level package; ``falcon.experiment`` writes it to ``plan.yaml``
(``plugins:``) and to the MLflow run (params ``plugin.<name>.*``, tag
``falcon.plugins``). docs/guide/plugins.md is the user's guide.
"""

from __future__ import annotations

import hashlib
import importlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from baselines.registry import (
    PROJECT_PACKAGES,
    SchedulerRef,
    registered,
    resolve_scheduler,
    scheduler_names,
)
from envs.errors import ConfigError
from envs.scheduler import Trainable


def _project_config(name: str) -> bool:
    from falcon.config import CONFIG_DIR

    return (CONFIG_DIR / "agent" / f"{name}.yaml").is_file()


def _same_target(dotted: str, ref: SchedulerRef) -> bool:
    return str(dotted).replace(":", ".") == ref.dotted


def plugin_config(ref: SchedulerRef) -> dict:
    """The agent config of a plug-in or import path: its class as ``_target_``,
    and ``train: {}`` for a :class:`envs.scheduler.Trainable` (falcon.train then
    calls ``fit`` with its defaults; a YAML config gives it arguments)."""
    cls = ref.load()
    conf: dict = {"_target_": ref.dotted}
    if issubclass(cls, Trainable):
        conf["train"] = {}
    return conf


def check_agent_names(agents: Iterable[tuple[str, Any]]) -> None:
    """Fail on a name that means two schedulers: a plug-in named like one of the
    project's agent configs, or an agent config (from ``hydra.searchpath``)
    whose ``_target_`` is not the class the plug-in of the same name registers."""
    _, plugins = registered()
    for name, conf in agents:
        refs = plugins.get(name, [])
        if not refs:
            continue
        if len(refs) > 1 or _project_config(name):
            resolve_scheduler(name)  # raises the ambiguity error
            raise ConfigError(
                f"agent name {name!r} is ambiguous: configs/agent/{name}.yaml and "
                f"{refs[0].describe()} both use it (rename the plug-in's entry point)"
            )
        target = conf.get("_target_") if isinstance(conf, Mapping) else None
        if target is not None and not _same_target(target, refs[0]):
            raise ConfigError(
                f"agent name {name!r} is ambiguous: its config's _target_ is {target} but "
                f"{refs[0].describe()} uses the name (rename the config or the entry point)"
            )


def _resolve_outside(name: str, configs: set[str]) -> SchedulerRef:
    """A name that is no agent config: a plug-in or an import path."""
    if ":" not in name:
        names = scheduler_names()
        if name not in names:
            known = ", ".join(sorted(configs | {n for n, o in names.items() if o == "plugin"}))
            raise ConfigError(
                f"unknown agent {name!r} (known: {known}; or an import path module:Class)"
            )
    return resolve_scheduler(name)


def resolve_agents(
    names: list[str], selected: tuple[str, Any] | None = None
) -> list[tuple[str, Any]]:
    """(name, agent config) for each name of an agent list (module docstring:
    a config, a plug-in or ``module:Class``), in the list's order. ``selected``:
    the (name, config) that ``agent=NAME`` composed with the command line's
    overrides, used where that name appears. Configs are returned as composed
    (OmegaConf nodes), plug-ins as plain dicts. One-line ConfigError for an
    unknown or ambiguous name."""
    from falcon.config import group_options, load_groups

    configs = set(group_options("agent"))
    wanted = [n for n in names if n in configs and not (selected and n == selected[0])]
    loaded = dict(zip(wanted, load_groups("agent", wanted)))
    out = []
    for name in names:
        if selected is not None and name == selected[0]:
            out.append(selected)
        elif name in loaded:
            out.append((name, loaded[name]))
        else:
            ref = _resolve_outside(name, configs)
            out.append((ref.name, plugin_config(ref)))
    check_agent_names(out)
    return out


def source_digest(module_name: str) -> tuple[str, int]:
    """(SHA-256 hex, number of files) over the ``.py`` files of the top-level
    package of ``module_name`` (its relative paths and contents, sorted), or
    of the module's own file when it is a top-level module."""
    top = importlib.import_module(module_name.split(".")[0])
    roots = list(getattr(top, "__path__", []) or [])
    if roots:
        files = sorted({(p.relative_to(r), p) for r in map(Path, roots) for p in r.rglob("*.py")})
    elif getattr(top, "__file__", None):
        files = [(Path(top.__file__).name, Path(top.__file__))]
    else:
        return "", 0
    h = hashlib.sha256()
    for rel, path in files:
        h.update(str(rel).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest(), len(files)


def _distribution_of(module_name: str) -> tuple[str | None, str | None]:
    from importlib import metadata

    dists = metadata.packages_distributions().get(module_name.split(".")[0]) or []
    if not dists:
        return None, None
    return dists[0], metadata.version(dists[0])


def provenance(agents: Iterable[tuple[str, Any]]) -> dict[str, dict]:
    """name -> {target, entry_point, distribution, version, source_sha256,
    source_files} for every agent config whose ``_target_`` class lies outside
    :data:`PROJECT_PACKAGES` (plug-ins, import paths, outside YAML configs,
    an overridden ``_target_``). ``distribution``/``version``: the installed
    distribution that declares the entry point, else the one that provides
    the class's top-level package (null for a module that is only on
    ``sys.path``)."""
    from hydra.utils import get_class

    _, plugins = registered()
    by_target = {r.dotted: r for refs in plugins.values() for r in refs}
    out = {}
    for name, conf in agents:
        target = conf.get("_target_") if isinstance(conf, Mapping) else None
        if target is None or str(target).split(".")[0] in PROJECT_PACKAGES:
            continue
        try:
            cls = get_class(str(target))
        except Exception as e:  # user code: any exception
            msg = " ".join(str(e.__cause__ or e).split())
            raise ConfigError(f"agent {name!r}: cannot import {target}: {msg}") from None
        dotted = f"{cls.__module__}.{cls.__qualname__}"
        ref = by_target.get(dotted)
        dist, version = (ref.distribution, ref.version) if ref else _distribution_of(cls.__module__)
        digest, n_files = source_digest(cls.__module__)
        out[name] = {
            "target": f"{cls.__module__}:{cls.__qualname__}",
            "entry_point": ref.entry_point if ref else None,
            "distribution": dist,
            "version": version,
            "source_sha256": digest,
            "source_files": n_files,
        }
    return out


def provenance_params(records: dict[str, dict]) -> dict[str, str]:
    """MLflow params of :func:`provenance`: ``plugin.<name>.<field>``."""
    return {f"plugin.{name}.{k}": str(v) for name, rec in records.items() for k, v in rec.items()}


def provenance_tag(records: dict[str, dict]) -> str:
    """The ``falcon.plugins`` tag: ``name=distribution==version`` per plug-in, comma-separated."""
    return ",".join(
        f"{name}={rec['distribution'] or rec['target']}=={rec['version'] or '?'}"
        for name, rec in records.items()
    )


__all__ = [
    "PROJECT_PACKAGES",
    "resolve_agents",
    "check_agent_names",
    "plugin_config",
    "provenance",
    "provenance_params",
    "provenance_tag",
    "source_digest",
]
