"""The shipped Hydra configs and how the entry points resolve them into a plan."""

from __future__ import annotations

import pytest

import envs
from envs.errors import ConfigError
from falcon.config import group_options, make_plan
from falcon.jobs import instantiate_agent

CHOICES = {"scenario": "static_4g_5g", "app": "bulk", "agent": "minrtt"}


def _plan(compose, overrides, cli_keys=(), choices=None):
    cfg = compose("evaluate", overrides)
    return make_plan(cfg, choices={**CHOICES, **(choices or {})}, cli_keys=set(cli_keys))


@pytest.mark.parametrize("name", group_options("scenario"))
def test_every_scenario_builds(compose, name):
    if name == "custom":
        pytest.skip("custom is filled from overrides (test_custom_scenario_from_overrides)")
    plan = _plan(
        compose, [f"scenario={name}", "agent_list=[minrtt]"], ["scenario"], {"scenario": name}
    )
    ((label, scenario),) = plan.scenarios
    assert label == name
    conn = envs.Emulation(0).connect(scenario, instantiate_agent("minrtt", plan.agents[0][1]))
    assert len(conn.paths) >= 1


def test_mobile_scenario_uses_traces_ping_rtt_and_table1_loss(compose):
    plan = _plan(compose, ["scenario=mobile_5g_5g"], ["scenario"], {"scenario": "mobile_5g_5g"})
    s = envs.normalise_scenario(plan.scenarios[0][1])
    for p in s["paths"]:
        assert (
            p["trace"]["file"].startswith("raca_5g_2020/download_driving/")
            and p["bandwidth_mbps"] is None
        )
        # RTT from the trace's pings, loss from Table I, a seeded random start per run
        assert (p["trace_delay"], p["trace_loss"], p["trace_start_s"]) == (True, False, "random")
        assert (p["rtt_std_ms"], p["loss"]) == (6.4, 0.001)


def test_static_scenario_gets_table1_presets(compose):
    s = envs.normalise_scenario(_plan(compose, []).scenarios[0][1])
    assert [(p["bandwidth_mbps"], p["rtt_ms"]) for p in s["paths"]] == [
        (140.0, 29.2),
        (1100.0, 27.4),
    ]


@pytest.mark.parametrize("name", group_options("agent"))
def test_every_agent_instantiates(compose, name, tmp_path):
    plan = _plan(compose, [f"agent_list=[{name}]"])
    cfg = plan.agents[0][1]
    if "bank" in cfg and cfg["bank"] is None:  # FALCON: the run's bank, here a tiny one
        import numpy as np

        from baselines.dqn.network import QNetSpec
        from metalearning import ConditionGrid, MetaModelBank

        grid, spec = ConditionGrid(1), QNetSpec(4, 1, (8, 8, 8))
        path = MetaModelBank(
            grid, spec, np.zeros((grid.n_cells, spec.n_parameters), np.float32)
        ).write(tmp_path / "bank.h5")
        with pytest.raises(ConfigError, match="bank: not set"):
            instantiate_agent(name, cfg)
        cfg = {**cfg, "bank": str(path)}
    sched = instantiate_agent(name, cfg)
    assert isinstance(sched, envs.Scheduler)


def test_custom_scenario_from_overrides(compose):
    ov = [
        "scenario=custom",
        "scenario.name=mine",
        "scenario.cc=cubic",
        "scenario.paths.0.bandwidth_mbps=50",
        "scenario.paths.0.rtt_ms=40",
        "scenario.paths.0.rtt_std_ms=5",
        "scenario.paths.0.loss=0.01",
        "scenario.paths.0.buffer_packets=100",
        "scenario.paths.1.trace=mahimahi_cellular_lte/TMobile-LTE-short.down",
        "scenario.paths.1.cc=newreno",
        "agent_list=[minrtt]",
    ]
    plan = _plan(compose, ov, ["scenario", "scenario.cc"], {"scenario": "custom"})
    label, raw = plan.scenarios[0]
    assert label == "mine"
    s = envs.normalise_scenario(raw)
    p0, p1 = s["paths"]
    assert (
        p0["bandwidth_mbps"],
        p0["rtt_ms"],
        p0["rtt_std_ms"],
        p0["loss"],
        p0["buffer_packets"],
    ) == (50.0, 40.0, 5.0, 0.01, 100)
    assert (
        s["cc"] == "cubic"
        and p1["cc"] == "newreno"
        and p1["trace"].endswith("TMobile-LTE-short.down")
    )
    envs.Emulation(0).connect(raw, instantiate_agent("minrtt", plan.agents[0][1]))


def test_agent_on_command_line_runs_alone(compose):
    plan = _plan(compose, ["agent=blest"], ["agent"], {"agent": "blest"})
    assert [n for n, _ in plan.agents] == ["blest"]


def test_selected_agent_overrides_apply_inside_the_list(compose):
    plan = _plan(
        compose,
        ["agent_list=[minrtt,blest]", "agent=blest", "agent.lambda_init=1.1"],
        ["agent", "agent.lambda_init", "agent_list"],
        {"agent": "blest"},
    )
    agents = dict(plan.agents)
    assert agents["blest"]["lambda_init"] == 1.1 and "lambda_init" not in agents["minrtt"]


def test_outside_a_job_an_overridden_selection_in_a_list_is_an_error_not_dropped(compose):
    """hydra.compose records no group choices: make_plan matches the selection
    to a config file; one with overrides cannot be placed in the list."""
    cfg = compose("evaluate", ["agent=blest", "agent.lambda_init=1.1", "agent_list=[minrtt,blest]"])
    with pytest.raises(ConfigError, match="agent= selection has overrides and agent_list"):
        make_plan(cfg)
    cfg = compose("evaluate", ["app=bulk", "app.size_bytes=5000", "app_list=[bulk,web]"])
    with pytest.raises(ConfigError, match="app= selection has overrides and app_list"):
        make_plan(cfg)
    # an unmodified selection is matched (listed or not), an agent of another class ignored
    for overrides in (
        ["agent=blest", "agent_list=[minrtt,blest]"],
        ["agent=ecf", "agent_list=[minrtt,blest]"],
        ["agent=falcon", "agent_list=[falcon_paper]"],
        ["agent=dqn_on", "agent.lr=0.5", "agent_list=[minrtt,blest]"],
    ):
        plan = make_plan(compose("evaluate", overrides))
        assert [n for n, _ in plan.agents] == overrides[-1][len("agent_list=[") : -1].split(",")


def test_a_composed_hydra_node_gives_the_choices_outside_a_job(tmp_path):
    from hydra import compose, initialize_config_dir

    from falcon.config import CONFIG_DIR

    with initialize_config_dir(str(CONFIG_DIR), version_base="1.3"):
        cfg = compose(
            config_name="evaluate",
            overrides=["agent=blest", "agent.lambda_init=1.1", "agent_list=[minrtt,blest]"],
            return_hydra_config=True,
        )
    agents = dict(make_plan(cfg).agents)
    assert agents["blest"]["lambda_init"] == 1.1 and "lambda_init" not in agents["minrtt"]


def test_lists_of_scenarios_and_apps(compose):
    plan = _plan(
        compose, ["scenario_list=[static_4g_5g,static_4g_wlan]", "app_list=[bulk,web]", "runs=3"]
    )
    assert [n for n, _ in plan.scenarios] == ["static_4g_5g", "static_4g_wlan"]
    assert [n for n, _ in plan.apps] == ["bulk", "web"]
    assert plan.n_jobs == 2 * 2 * len(plan.agents) * 3 and len(plan.agents) == 5


def test_web_pages_experiment_loads_the_three_table2_pages(compose):
    plan = _plan(compose, ["experiment=web_pages"])
    apps = dict(plan.apps)
    assert [apps[n]["page"] for n in ("web_google", "web_github", "web_stackoverflow")] == [
        "google",
        "github",
        "stackoverflow",
    ] and all(a["kind"] == "web" for a in apps.values())
    assert [n for n, _ in plan.agents][:2] == ["falcon_s", "falcon"] and len(plan.scenarios) == 4


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["agent_list=[minrtt,nosuch]"], "unknown agent 'nosuch'"),
        (["agent_list=[minrtt,minrtt]"], "minrtt listed twice"),
        (["agent_list=[]"], "agent_list: expected a non-empty list"),
        (["runs=1.5"], "runs: expected an integer"),
        (["seed=-1"], "seed: expected an integer >= 0"),
    ],
)
def test_bad_plan_values(compose, overrides, message):
    with pytest.raises(ConfigError, match=message.replace("[", r"\[")):
        _plan(compose, overrides)


def test_shared_defaults_agree_with_the_dataclasses_that_use_them():
    """A default the YAML must also state (a command-line override needs the
    key) equals the one of the dataclass or constructor that consumes it:
    the DQN update (configs/base/dqn.yaml, the banks' dqn:), Reptile (the
    banks' reptile:, FALCON's offline loop and K) and the evidence's K."""
    import dataclasses
    import inspect
    from pathlib import Path

    import yaml

    from baselines.dqn.learner import BatchedDQN, DQNConfig
    from falcon.experiments.meta_evidence import EvidenceConfig
    from falcon.online.offline_update import OfflineUpdater
    from falcon.online.scheduler import FalconScheduler
    from metalearning.reptile import ReptileConfig

    root = Path(__file__).resolve().parents[1] / "configs"

    def load(name):
        return yaml.safe_load((root / name).read_text())

    def defaults(cls):
        return {
            f.name: f.default if f.default is not dataclasses.MISSING else f.default_factory()
            for f in dataclasses.fields(cls)
            if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        }

    def params(fn):
        return {k: p.default for k, p in inspect.signature(fn).parameters.items()}

    dqn, reptile = defaults(DQNConfig), defaults(ReptileConfig)
    base_dqn = load("base/dqn.yaml")
    assert base_dqn.pop("technique") == params(BatchedDQN.__init__)["technique"]
    assert base_dqn == {k: dqn[k] for k in base_dqn}
    bank = load("base/bank.yaml")
    assert bank["dqn"] == {k: dqn[k] for k in bank["dqn"]}
    assert bank["reptile"] == {k: reptile[k] for k in bank["reptile"]}
    falcon = load("agent/falcon.yaml")
    off = params(OfflineUpdater.__init__)
    assert falcon["offline"]["meta_lr"] == off["meta_lr"] == reptile["meta_lr"]
    assert falcon["offline"]["inner_steps"] == off["inner_steps"] == reptile["inner_steps"]
    assert falcon["finetune_steps"] == params(FalconScheduler.__init__)["finetune_steps"] == 0
    assert (
        load("agent/falcon_paper.yaml")["finetune_steps"] == reptile["inner_steps"]
    )  # the paper's K
    assert (
        load("experiment/meta_evidence.yaml")["evidence"]["finetune_steps"]
        == defaults(EvidenceConfig)["finetune_steps"]
        == reptile["inner_steps"]
    )
    from envs.scenario import SCENARIO_DEFAULTS  # the emulator's defaults = the config tree's

    base_scenario = {
        k: v for k, v in load("base/scenario.yaml").items() if k not in ("defaults", "name")
    }
    assert base_scenario == {k: SCENARIO_DEFAULTS[k] for k in base_scenario}


def test_the_config_reference_lists_every_option_and_key():
    """The generated configuration reference (docs/reference/config.md,
    scripts/docs_config.py) names every option of every group in its table
    and every top-level key of every option file."""
    import re

    import yaml

    from scripts.docs_config import CONFIGS, GROUPS, parse, render

    text = render()
    rows = dict(re.findall(r"^\| `(\w+)/` \| (.+?) \|", text, re.M))
    for group in (
        "scenario",
        "app",
        "agent",
        "experiment",
        "conditions",
        "bank",
        "tracking",
        "runtime",
    ):
        assert group in rows and group in GROUPS, group
        assert set(re.findall(r"`(\w+)`", rows[group])) == set(group_options(group)), group
        for option in group_options(group):
            path = CONFIGS / group / f"{option}.yaml"
            data = yaml.safe_load(path.read_text()) or {}
            keys = {k for k, _, _ in parse(path)[1]}
            for key in set(data) - {"defaults", "hydra"}:
                assert any(k == key or k.startswith(key + ".") for k in keys), (path, key)
                assert f"| `{key}" in text, (path, key)


def test_every_path_key_exists_without_being_spelled_out(compose):
    """Scenario files list only the keys a path sets; the schema gives every
    path every key of envs.scenario.PATH_DEFAULTS (null = not set), so any
    can be overridden from the command line, on a listed path or on a path
    list given whole."""
    from pathlib import Path

    from envs.scenario import PATH_DEFAULTS
    from falcon.config import to_plain

    text = (
        Path(__file__).resolve().parents[1] / "configs/scenario/static_4g_wlan.yaml"
    ).read_text()
    assert "loss:" not in text and "buffer_bdp" not in text
    cfg = compose(
        "evaluate",
        [
            "scenario=static_4g_wlan",
            "scenario.paths.1.loss=0.02",
            "scenario.paths.0.buffer_bdp=2.0",
        ],
    )
    paths = to_plain(cfg.scenario)["paths"]
    assert all(list(p) == list(PATH_DEFAULTS) for p in paths)
    assert paths[1]["loss"] == 0.02 and paths[0]["buffer_bdp"] == 2.0 and paths[0]["rtt_ms"] is None
    s = envs.normalise_scenario(to_plain(cfg.scenario))
    assert s["paths"][1]["loss"] == 0.02 and s["paths"][0]["rtt_ms"] == 29.2  # the 4g preset's
    whole = compose(
        "evaluate", ["scenario.paths=[{link: 5g}, {link: wlan}]", "scenario.paths.1.cc=cubic"]
    )
    assert [p["cc"] for p in to_plain(whole.scenario)["paths"]] == [None, "cubic"]
    with pytest.raises(Exception, match="nosuch"):
        compose("evaluate", ["scenario.paths.0.nosuch=1"])


def test_the_schema_doc_shows_the_emulator_defaults():
    """The scenario schema's scenario block (docs/reference/formats/
    scenario_schema.md) shows SCENARIO_DEFAULTS and, for a
    path, PATH_DEFAULTS: the documented defaults are the ones in force."""
    import re
    from pathlib import Path

    import yaml

    from envs.scenario import PATH_DEFAULTS, SCENARIO_DEFAULTS

    text = (
        Path(__file__).resolve().parents[1] / "docs/reference/formats/scenario_schema.md"
    ).read_text()
    block = yaml.safe_load(re.search(r"## scenario\n\n```yaml\n(.*?)```", text, re.S).group(1))
    assert block["paths"][0] == PATH_DEFAULTS
    assert {k: v for k, v in block.items() if k not in ("name", "paths")} == {
        k: v for k, v in SCENARIO_DEFAULTS.items() if k not in ("name", "paths")
    }


@pytest.mark.parametrize("name", ["dqn_on", "dqn_off", "gaps", "dqn_modes", "falcon_modes"])
def test_learning_agent_configs_state_their_constructors_defaults(name):
    """Every constructor argument an agent config spells out (for the command
    line) has the constructor's default: one value, checked (FALCON's own
    check is in test_falcon_online.py)."""
    import inspect

    from baselines.dqn.dqn_off import DQNOff
    from baselines.dqn.dqn_on import DQNOn
    from baselines.dqn.policy import DQNScheduler
    from baselines.gaps.agent import GAPS
    from baselines.modes.learner import DQNModes
    from falcon.experiments.common import agent_config
    from falcon.online.modes import FalconModes

    classes = {
        "dqn_on": (DQNScheduler, DQNOn),
        "dqn_off": (DQNScheduler, DQNOff),
        "gaps": (GAPS,),
        "dqn_modes": (DQNModes,),
        "falcon_modes": (FalconModes,),
    }[name]
    defaults = {
        k: p.default for c in classes for k, p in inspect.signature(c.__init__).parameters.items()
    }
    cfg = agent_config(name)
    assert set(cfg) - {"_target_", "train"} <= set(defaults)
    for k, v in cfg.items():
        if k in defaults and not isinstance(v, dict):
            assert (tuple(v) if isinstance(v, list) else v) == defaults[k], k


def test_normalising_a_scenario_never_shares_its_data_with_the_input():
    """normalise_scenario copies with envs.scenario.copy_plain (a fast deep
    copy of plain data): an episode that changes its scenario must not change
    the caller's, nor the link presets'."""
    import numpy as np

    from envs.plain import copy_plain
    from envs.scenario import LINKS, normalise_scenario

    given = {
        "name": "x",
        "paths": [
            {
                "link": "4g",
                "schedule": [{"at_s": 0.0, "rtt_ms": 30.0}, {"at_s": 1.0, "rtt_ms": 60.0}],
            },
            {"link": "5g"},
        ],
    }
    preset = dict(LINKS["4g"])
    s = normalise_scenario(given)
    s["paths"][0]["schedule"]["segments"][1]["rtt_ms"] = 999.0
    s["paths"][0]["bandwidth_mbps"] = 1.0
    assert given["paths"][0]["schedule"][1]["rtt_ms"] == 60.0
    assert LINKS["4g"] == preset
    assert normalise_scenario(given) == normalise_scenario(given)

    arr = np.arange(3.0)
    data = {"a": [1, (2.5, "s", None, True)], "b": {"c": arr}}
    out = copy_plain(data)
    assert out["a"] == [1, (2.5, "s", None, True)]
    assert out["a"] is not data["a"] and out["b"] is not data["b"]
    assert out["b"]["c"] is not arr and np.array_equal(out["b"]["c"], arr)  # other types: deepcopy
