"""Structured-config schemas registered with Hydra's ConfigStore.

A scenario's ``paths`` is a list; Hydra's struct mode lets the command line
override only keys that exist (``scenario.paths.0.loss=0.02``), so every
path of every scenario file used to spell out all twenty keys. Instead,
:class:`ScenarioSchema` types ``paths`` as a list of :class:`PathSchema`:
each path in a file, or given on the command line, gets every key of
``envs.scenario.PATH_DEFAULTS`` (the one list of path keys), unset (null)
unless given; :func:`envs.scenario.normalise_path` then applies the link
preset and the defaults. ``configs/base/scenario.yaml`` includes the
schema (``/schema/scenario``), so scenario files list only what they set.
Importing this module registers the schemas (``falcon.config`` does).
"""

from __future__ import annotations

from dataclasses import field, make_dataclass
from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING

from envs.scenario import PATH_DEFAULTS, SCENARIO_DEFAULTS

#: one path: every key of envs.scenario.PATH_DEFAULTS, null = not set
PathSchema = make_dataclass("PathSchema", [(k, Any, field(default=None)) for k in PATH_DEFAULTS])

#: a scenario: the keys of envs.scenario.SCENARIO_DEFAULTS (values from
#: configs/base/scenario.yaml), ``paths`` typed as a list of PathSchema
ScenarioSchema = make_dataclass(
    "ScenarioSchema",
    [(k, Any, field(default=MISSING)) for k in SCENARIO_DEFAULTS if k != "paths"]
    + [("paths", list[PathSchema], field(default_factory=list))],
)


def register() -> None:
    """Store the schemas (idempotent): ``/schema/scenario`` for the config tree."""
    ConfigStore.instance().store(group="schema", name="scenario", node=ScenarioSchema)


register()

__all__ = ["PathSchema", "ScenarioSchema", "register"]
