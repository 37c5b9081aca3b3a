"""Preset names in the Python API: ``run_episode("static_4g_5g", "bulk", ...)``.

A scenario or app given as a string is the name of a preset, a file of
``configs/scenario/`` or ``configs/app/`` (of the checkout, or the copy an
installed wheel ships: :func:`config_dir`), composed with Hydra as the command
line composes ``scenario=NAME`` / ``app=NAME`` (with the file's defaults
list: ``configs/base/scenario.yaml`` and the path schema for a scenario, the
parent app for ``web_github``, ...), so a name gives exactly the dict that
``python -m falcon.evaluate scenario=NAME`` runs. An unknown name is a
one-line :class:`~envs.errors.ConfigError` naming the argument and the
known presets. Composed presets are cached (a copy is returned each time).
"""

from __future__ import annotations

import functools
from dataclasses import field, make_dataclass
from pathlib import Path
from typing import Any

from envs.errors import ConfigError
from envs.plain import copy_plain

#: the config groups whose presets the Python API takes by name
GROUPS = ("scenario", "app")


def _packaged() -> Path | None:
    """``falcon/_configs/`` of an installed wheel (``setup.py``'s package
    data), or None. The package is located, not imported: the configs are data."""
    import importlib.util

    spec = importlib.util.find_spec("falcon")
    found = Path(spec.origin).parent / "_configs" if spec and spec.origin else None
    return found if found is not None and found.is_dir() else None


def _checkout() -> Path | None:
    """``configs/`` of the source tree (an editable install), or None."""
    found = Path(__file__).resolve().parent.parent / "configs"
    return found if found.is_dir() else None


def config_dir() -> Path:
    """The Hydra config tree, found as ``falcon.paths.config_dir`` finds it:
    the wheel's package data, else the checkout's ``configs/``."""
    found = _packaged() or _checkout()
    if found is None:
        raise ConfigError(
            "presets: no config tree found (neither falcon/_configs of an installed wheel nor "
            "configs/ of a checkout); give the scenario and app as mappings or reinstall"
        )
    return found


def preset_names(group: str) -> list[str]:
    """The presets of ``group`` (``<config tree>/<group>/*.yaml``), sorted."""
    return sorted(p.stem for p in (config_dir() / group).glob("*.yaml"))


def resolve(value: Any, group: str, where: str | None = None) -> Any:
    """``value`` itself, or, for a string, the preset of that name in
    ``group`` as a plain dict; ``where`` (default ``group``) names the
    argument in the error for an unknown name."""
    if not isinstance(value, str):
        return value
    where = where or group
    known = preset_names(group)
    if value not in known:
        raise ConfigError(
            f"{where}: unknown {group} preset {value!r} (known: {', '.join(known)}); "
            f"give one of those names or a mapping of {group} keys"
        )
    return copy_plain(_compose(group, value))


@functools.lru_cache(maxsize=64)
def _compose(group: str, name: str) -> dict:
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf

    _register_schema()
    overrides = [f"+{group}@_preset={name}"]
    if GlobalHydra.instance().is_initialized():  # inside a Hydra job: its config tree
        cfg = compose(overrides=overrides)
    else:
        with initialize_config_dir(str(config_dir()), version_base="1.3"):
            cfg = compose(overrides=overrides)
    return OmegaConf.to_container(cfg["_preset"], resolve=True)


def _register_schema() -> None:
    """The scenario schema that ``configs/base/scenario.yaml`` includes
    (``/schema/scenario``: every path key of ``PATH_DEFAULTS``, null = not
    set), unless the config tree's own registration (``falcon.schema``) is
    there already; the two are built from the same key lists."""
    from hydra.core.config_store import ConfigStore
    from omegaconf import MISSING

    from envs.scenario import PATH_DEFAULTS, SCENARIO_DEFAULTS

    store = ConfigStore.instance()
    if "scenario.yaml" in store.repo.get("schema", {}):
        return
    path = make_dataclass("PathSchema", [(k, Any, field(default=None)) for k in PATH_DEFAULTS])
    scenario = make_dataclass(
        "ScenarioSchema",
        [(k, Any, field(default=MISSING)) for k in SCENARIO_DEFAULTS if k != "paths"]
        + [("paths", list[path], field(default_factory=list))],
    )
    store.store(group="schema", name="scenario", node=scenario)


__all__ = ["resolve", "preset_names", "config_dir", "GROUPS"]
