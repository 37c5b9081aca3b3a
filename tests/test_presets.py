"""Preset names in the Python API (envs.presets): a scenario or app given as
a string is composed as ``scenario=NAME`` / ``app=NAME`` would be on the
command line; bad arguments are one-line errors that name the argument."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import envs
from envs.apps import normalise_app
from envs.errors import ConfigError
from envs.gym_env import MultipathSchedulingEnv
from envs.presets import preset_names, resolve

APP = {"kind": "bulk", "size_bytes": 100_000}

#: every preset composed by envs alone (falcon, which registers the config
#: tree's schema, not imported), as JSON
_ALONE = """
import json, sys
from envs.presets import preset_names, resolve
assert "falcon" not in sys.modules
print(json.dumps({g: {n: resolve(n, g) for n in preset_names(g)} for g in ("scenario", "app")}))
"""


def test_every_preset_is_what_hydra_composes():
    from falcon.config import load_group, to_plain

    out = subprocess.run(
        [sys.executable, "-c", _ALONE], capture_output=True, text=True, check=True
    ).stdout
    alone = json.loads(out)
    for group in ("scenario", "app"):
        assert set(alone[group]) == set(preset_names(group)) and alone[group]
        for name in preset_names(group):
            composed = to_plain(load_group(group, name))
            assert alone[group][name] == composed, (group, name)
            assert resolve(name, group) == composed, (group, name)


def test_run_episode_takes_preset_names():
    from baselines import make_scheduler
    from falcon.config import load_group, to_plain

    by_name = envs.run_episode("static_4g_wlan", APP, make_scheduler("minrtt"), 2)
    by_dict = envs.run_episode(
        to_plain(load_group("scenario", "static_4g_wlan")), APP, make_scheduler("minrtt"), 2
    )
    assert by_name.metrics == by_dict.metrics
    web = normalise_app("web_github")
    assert web == normalise_app(to_plain(load_group("app", "web_github")))
    assert (web["kind"], web["page"]) == ("web", "github")
    env = MultipathSchedulingEnv("static_4g_wlan", "bulk")
    assert env.n_paths == 2 and env.reset(seed=0)[1]["emulator_seed"] == 0


def test_a_returned_preset_is_a_copy():
    a = resolve("static_4g_5g", "scenario")
    a["paths"][0]["loss"] = 0.5
    assert resolve("static_4g_5g", "scenario")["paths"][0]["loss"] is None


@pytest.mark.parametrize(
    "scenario, app, scheduler, message",
    [
        ("nope", APP, None, "scenario: unknown scenario preset 'nope' (known: custom,"),
        ("static_4g_5g", "nope", None, "app: unknown app preset 'nope' (known: blocks,"),
        (3, APP, None, "scenario: expected a mapping, got int"),
        ({"paths": ["4g"]}, APP, None, "paths[0]: expected a mapping, got str"),
        ("static_4g_5g", APP, "minrtt", "scheduler: expected a Scheduler instance, got the name"),
    ],
)
def test_bad_arguments_are_named(scenario, app, scheduler, message):
    from baselines import make_scheduler

    with pytest.raises(ConfigError) as e:
        envs.run_episode(scenario, app, scheduler or make_scheduler("minrtt"), 0)
    assert str(e.value).startswith(message), str(e.value)
    assert "\n" not in str(e.value)


def test_the_config_tree_of_a_wheel_or_else_of_the_checkout(monkeypatch, tmp_path):
    import envs.presets as presets

    checkout = presets._checkout()
    assert checkout is not None and presets.config_dir() == checkout  # this editable install
    wheel = tmp_path / "_configs"
    (wheel / "scenario").mkdir(parents=True)
    (wheel / "scenario" / "only_here.yaml").write_text("name: only_here\n")
    monkeypatch.setattr(presets, "_packaged", lambda: wheel)
    assert preset_names("scenario") == ["only_here"]  # the wheel's copy comes first
    monkeypatch.setattr(presets, "_packaged", lambda: None)
    monkeypatch.setattr(presets, "_checkout", lambda: None)
    with pytest.raises(ConfigError, match="no config tree found"):
        resolve("static_4g_5g", "scenario")
