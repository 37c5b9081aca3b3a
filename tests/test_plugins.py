"""Scheduler plug-ins (#48): entry points of the group falcon.schedulers, import
paths in agent_list, agent configs from the user's own folder, the names results
carry, provenance in plan.yaml and MLflow, and one-line errors.

No test installs anything: a plug-in distribution is a fake ``*.dist-info``
folder (METADATA + entry_points.txt) in tmp_path, put on sys.path (and, for the
command-line tests, on PYTHONPATH) beside the example package's sources
(examples/external_scheduler)."""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from conftest import mlflow_runs

from baselines import SCHEDULERS, make_scheduler, scheduler_class
from baselines.registry import GROUP, resolve_scheduler, scheduler_names
from envs.errors import ConfigError
from falcon.plugins import (
    check_agent_names,
    provenance,
    provenance_params,
    provenance_tag,
    resolve_agents,
    source_digest,
)

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "external_scheduler"
TINY = ["experiment=tiny", "runs=2"]


def entry_points_of(pyproject: Path) -> dict[str, str]:
    return tomllib.loads(pyproject.read_text())["project"]["entry-points"][GROUP]


def write_dist(site: Path, name: str, version: str, entry_points: dict[str, str]) -> Path:
    """A fake installed distribution: ``<name>-<version>.dist-info`` in ``site``."""
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    lines = [f"[{GROUP}]"] + [f"{k} = {v}" for k, v in entry_points.items()]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
    return site


@pytest.fixture
def example(tmp_path, monkeypatch) -> Path:
    """The example package 'installed': its sources and a dist-info declaring
    the entry points of its pyproject.toml, both on sys.path; the site folder."""
    site = write_dist(
        tmp_path / "site", "falcon-extsched", "0.1.0", entry_points_of(EXAMPLE / "pyproject.toml")
    )
    monkeypatch.syspath_prepend(str(EXAMPLE))
    monkeypatch.syspath_prepend(str(site))
    return site


@pytest.fixture
def plugin_module(tmp_path, monkeypatch):
    """Write a module ``name`` with ``source`` to a folder on sys.path."""
    src = tmp_path / "src"
    src.mkdir()
    monkeypatch.syspath_prepend(str(src))

    def make(name: str, source: str) -> Path:
        path = src / f"{name}.py"
        path.write_text(source)
        sys.modules.pop(name, None)
        return path

    return make


SCHED = "from envs.scheduler import Scheduler\n\nclass {cls}(Scheduler):\n    {body}\n    def decide(self, view):\n        return 0\n"


# ---------------------------------------------------------------- discovery
def test_the_example_plugins_are_found_by_their_entry_point_names(example):
    from extsched.smooth import SmoothedRTT
    from extsched.split import RateSplit

    ref = resolve_scheduler("smooth_rtt")
    assert (ref.origin, ref.distribution, ref.version) == ("plugin", "falcon-extsched", "0.1.0")
    assert ref.entry_point == "smooth_rtt = extsched.smooth:SmoothedRTT"
    assert scheduler_class("smooth_rtt") is SmoothedRTT
    sched = make_scheduler("rate_split", exponent=0.0)
    assert isinstance(sched, RateSplit) and sched.exponent == 0.0
    names = scheduler_names()
    assert names["smooth_rtt"] == names["rate_split"] == "plugin" and names["minrtt"] == "builtin"


def test_the_registry_is_built_once_and_again_when_what_it_reads_changes(example, monkeypatch):
    from baselines import registry

    builds = []
    real = registry._registered
    monkeypatch.setattr(
        registry, "_registered", lambda *a: builds.append(1) or real(*a), raising=True
    )
    monkeypatch.setitem(registry._REGISTERED, "entry_points", None)
    assert resolve_scheduler("smooth_rtt").origin == "plugin"
    resolve_scheduler("minrtt")
    builtins, _ = registry.registered()
    builtins.pop("minrtt")  # a caller's copy: the kept answer is not touched
    assert len(builds) == 1 and resolve_scheduler("minrtt").origin == "builtin"
    # a new built-in, and a distribution put on sys.path, are seen at once
    monkeypatch.setitem(SCHEDULERS, "minrtt_twin", SCHEDULERS["minrtt"])
    assert resolve_scheduler("minrtt_twin").name == "minrtt_twin" and len(builds) == 2
    site = write_dist(
        example.parent / "site2", "falcon-other", "1.0", {"other": "extsched.smooth:SmoothedRTT"}
    )
    monkeypatch.syspath_prepend(str(site))
    assert resolve_scheduler("other").distribution == "falcon-other" and len(builds) == 3


def test_a_name_kept_resolved_follows_its_own_entry_and_the_entry_points(monkeypatch):
    from baselines import registry
    from baselines.rule_based.ecf import ECF

    first = resolve_scheduler("minrtt")
    copies = []
    real = registry.registered
    monkeypatch.setattr(registry, "registered", lambda: copies.append(1) or real())
    assert resolve_scheduler("minrtt") is first and not copies  # kept: no copies per episode
    monkeypatch.setitem(SCHEDULERS, "minrtt", ECF)  # the name now means another class
    assert resolve_scheduler("minrtt").target == "baselines.rule_based.ecf:ECF"
    assert scheduler_class("minrtt") is ECF
    assert copies
    monkeypatch.undo()
    assert scheduler_class("minrtt").__name__ == "MinRTT"
    kept = resolve_scheduler("minrtt")
    monkeypatch.syspath_prepend("/nonexistent-site")  # entry points read again: not kept
    again = resolve_scheduler("minrtt")
    assert again is not kept and again == kept


def test_make_scheduler_knows_every_builtin_agent_class(tmp_path, monkeypatch):
    """Every class a configs/agent/*.yaml names is a make_scheduler built-in:
    baselines' table, or (the falcon layer's) an entry point of the project's
    own distribution, which pyproject.toml declares (simulated installed here)."""
    project = entry_points_of(REPO / "pyproject.toml")
    monkeypatch.syspath_prepend(str(write_dist(tmp_path, "falcon-mpsched", "0.1.0", project)))
    from falcon.online.scheduler import FalconScheduler

    ref = resolve_scheduler("falcon")
    assert ref.origin == "builtin" and scheduler_class("falcon") is FalconScheduler
    classes = {scheduler_class(n) for n in [*SCHEDULERS, *project]}
    targets = set()
    for path in sorted((REPO / "configs" / "agent").glob("*.yaml")):
        target = yaml.safe_load(path.read_text()).get("_target_")
        if target:
            targets.add(target)
    assert targets == targets & {f"{c.__module__}.{c.__qualname__}" for c in classes}
    assert all(scheduler_class(n).name == n for n in project)
    # under another distribution name (a renamed wheel) the project's classes stay built-ins
    renamed = write_dist(tmp_path / "renamed", "falcon-nightly", "0.2", project)
    monkeypatch.syspath_prepend(str(renamed))
    assert resolve_scheduler("falcon").origin == "builtin"
    assert [n for n, _ in resolve_agents(["falcon_s", "minrtt"])] == ["falcon_s", "minrtt"]


def test_import_path_is_labelled_with_the_class_name(plugin_module):
    plugin_module("my_sched_a", SCHED.format(cls="Own", body='name = "own_name"'))
    plugin_module("my_sched_b", SCHED.format(cls="Plain", body="pass"))
    assert resolve_scheduler("my_sched_a:Own").name == "own_name"
    assert resolve_scheduler("my_sched_b:Plain").name == "Plain"  # Scheduler.name is not its own
    agents = resolve_agents(["minrtt", "my_sched_a:Own", "my_sched_b:Plain"])
    assert [n for n, _ in agents] == ["minrtt", "own_name", "Plain"]
    assert agents[1][1] == {"_target_": "my_sched_a.Own"}
    # the import path of a built-in is that built-in
    assert resolve_scheduler("baselines.rule_based.minrtt:MinRTT").origin == "builtin"


def test_a_trainable_plugin_gets_a_train_section():
    from falcon.train import is_trainable

    ((name, conf),) = resolve_agents(["tests.learner_stub:StubLearner"])
    assert name == "stub" and conf == {"_target_": "tests.learner_stub.StubLearner", "train": {}}
    assert is_trainable(conf)


# ---------------------------------------------------------------- provenance
def test_provenance_names_distribution_version_and_source_hash(example, plugin_module):
    path = plugin_module("loose_sched", SCHED.format(cls="Loose", body="pass"))
    agents = resolve_agents(["minrtt", "smooth_rtt", "loose_sched:Loose"])
    rec = provenance(agents)
    assert set(rec) == {"smooth_rtt", "Loose"}  # the built-in needs none
    smooth = rec["smooth_rtt"]
    assert smooth["distribution"] == "falcon-extsched" and smooth["version"] == "0.1.0"
    assert smooth["target"] == "extsched.smooth:SmoothedRTT"
    assert smooth["source_sha256"] == source_digest("extsched")[0] and smooth["source_files"] == 4
    loose = rec["Loose"]
    assert loose["distribution"] is None and loose["entry_point"] is None
    assert loose["source_files"] == 1 and len(loose["source_sha256"]) == 64
    path.write_text(path.read_text() + "# edited\n")
    assert source_digest("loose_sched")[0] != loose["source_sha256"]
    params = provenance_params(rec)
    assert params["plugin.smooth_rtt.version"] == "0.1.0"
    assert params["plugin.smooth_rtt.source_sha256"] == smooth["source_sha256"]
    assert provenance_tag(rec) == "smooth_rtt=falcon-extsched==0.1.0,Loose=loose_sched:Loose==?"


# ---------------------------------------------------------------- errors
def test_unknown_plugin_is_one_line_listing_the_known_names(example):
    with pytest.raises(ConfigError) as e:
        resolve_agents(["minrtt", "smooth_rt"])
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("unknown agent 'smooth_rt' (known: ")
    assert "smooth_rtt" in msg and "dqn_off_paper" in msg and "module:Class" in msg
    with pytest.raises(ConfigError, match=r"^unknown scheduler 'smooth_rt'; known: .*smooth_rtt"):
        make_scheduler("smooth_rt")


def test_plugin_named_like_a_builtin_is_an_error_not_an_override(tmp_path, monkeypatch):
    eps = {"minrtt": "extsched.smooth:SmoothedRTT", "dqn_off_paper": "extsched.split:RateSplit"}
    monkeypatch.syspath_prepend(str(write_dist(tmp_path, "evil-sched", "2.0", eps)))
    for call in (lambda: make_scheduler("minrtt"), lambda: resolve_agents(["minrtt"])):
        with pytest.raises(ConfigError) as e:
            call()
        assert str(e.value) == (
            "scheduler name 'minrtt' is ambiguous: the built-in and plug-in 'minrtt' "
            "(evil-sched 2.0, extsched.smooth:SmoothedRTT) both use it "
            "(rename the plug-in's entry point, or uninstall one)"
        )
    # a name of the project's agent configs (not a baselines class name)
    with pytest.raises(ConfigError, match=r"^agent name 'dqn_off_paper' is ambiguous: configs/"):
        resolve_agents(["rr", "dqn_off_paper"])


def test_two_distributions_registering_one_name_is_an_error(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(write_dist(tmp_path / "a", "sched-a", "1.0", {"dup": "a:A"})))
    monkeypatch.syspath_prepend(str(write_dist(tmp_path / "b", "sched-b", "1.0", {"dup": "b:B"})))
    with pytest.raises(ConfigError, match=r"^scheduler name 'dup' is ambiguous: plug-in 'dup' "):
        resolve_scheduler("dup")


def test_config_and_plugin_of_one_name_must_be_the_same_class(example):
    from omegaconf import OmegaConf

    other = {"_target_": "extsched.split.RateSplit"}
    for conf in (other, OmegaConf.create(other)):  # plain, or as composed (resolve_agents)
        with pytest.raises(ConfigError, match=r"^agent name 'smooth_rtt' is ambiguous: its config"):
            check_agent_names([("smooth_rtt", conf)])
    check_agent_names([("smooth_rtt", {"_target_": "extsched.smooth.SmoothedRTT", "x": 1})])


@pytest.mark.parametrize(
    "source, target, message",
    [
        (
            "raise RuntimeError('no GPU\\nfound')\n",
            "broken_a:X",
            "plug-in 'bad' (bad-sched 1.0, broken_a:X): cannot import module 'broken_a': "
            "RuntimeError: no GPU found",
        ),
        (
            "X = 1\n",
            "broken_b:Y",
            "plug-in 'bad' (bad-sched 1.0, broken_b:Y): module 'broken_b' has no attribute 'Y'",
        ),
        (
            "X = 1\n",
            "broken_c:X",
            "plug-in 'bad' (bad-sched 1.0, broken_c:X): broken_c:X is not a scheduler class "
            "(a subclass of envs.scheduler.Scheduler)",
        ),
    ],
)
def test_plugin_import_failures_are_one_line(
    tmp_path, monkeypatch, plugin_module, source, target, message
):
    plugin_module(target.split(":")[0], source)
    monkeypatch.syspath_prepend(
        str(write_dist(tmp_path / "d", "bad-sched", "1.0", {"bad": target}))
    )
    with pytest.raises(ConfigError) as e:
        make_scheduler("bad")
    assert str(e.value) == message


def test_import_path_errors_are_one_line(plugin_module):
    with pytest.raises(ConfigError) as e:
        resolve_agents(["no_such_module_x:Sched"])
    assert str(e.value) == (
        "import path 'no_such_module_x:Sched': cannot import module 'no_such_module_x': "
        "ModuleNotFoundError: No module named 'no_such_module_x'"
    )
    plugin_module("clashing", SCHED.format(cls="Fake", body='name = "ecf"'))
    with pytest.raises(
        ConfigError, match=r"^import path 'clashing:Fake': its name 'ecf' is already"
    ):
        resolve_scheduler("clashing:Fake")


# ---------------------------------------------------------------- the entry points
def _env_path(monkeypatch, *paths) -> None:
    monkeypatch.setenv("PYTHONPATH", ":".join(str(p) for p in paths))


def test_evaluate_runs_plugins_import_paths_and_outside_configs(
    run_cli, tmp_path, example, mlflow_uri, monkeypatch
):
    """One run holds two entry-point plug-ins, an import path, the example's
    packaged config (pkg://) and a config of the user's own folder (file://):
    each result under its own name, each outside scheduler's provenance in
    plan.yaml and the MLflow run."""
    _env_path(monkeypatch, example, EXAMPLE)
    own = tmp_path / "conf" / "agent"
    own.mkdir(parents=True)
    (own / "split_rr.yaml").write_text("_target_: extsched.split.RateSplit\nexponent: 0.0\n")
    out = tmp_path / "out"
    res = run_cli(
        "evaluate",
        *TINY,
        f"hydra.searchpath=[pkg://extsched.conf,file://{tmp_path / 'conf'}]",
        "agent_list=[minrtt,smooth_rtt,rate_split,smooth_rtt_strict,split_rr,learner_stub:StubLearner]",
        f"output={out}",
        f"tracking.uri={mlflow_uri}",
    )
    assert res.returncode == 0, res.stderr
    names = ["minrtt", "smooth_rtt", "rate_split", "smooth_rtt_strict", "split_rr", "stub"]
    assert json.loads((out / "summary.json").read_text())["schedulers"] == names
    rows = [line.split()[0] for line in res.stdout.splitlines() if line.strip()]
    assert set(names) <= set(rows)  # the table's rows
    plan = yaml.safe_load((out / "plan.yaml").read_text())
    assert plan["agents"]["smooth_rtt_strict"] == {
        "_target_": "extsched.smooth.SmoothedRTT",
        "hysteresis": 0.05,
    }
    assert plan["agents"]["split_rr"]["exponent"] == 0.0
    rec = plan["plugins"]
    assert list(rec) == names[1:]
    digest = source_digest("extsched")[0]
    for name in names[1:5]:
        assert (rec[name]["distribution"], rec[name]["version"]) == ("falcon-extsched", "0.1.0")
        assert rec[name]["source_sha256"] == digest
    assert rec["split_rr"]["entry_point"] == "rate_split = extsched.split:RateSplit"
    assert (
        rec["stub"]["distribution"] is None and rec["stub"]["target"] == "learner_stub:StubLearner"
    )
    _, (run,) = mlflow_runs(mlflow_uri)
    assert run.data.params["plugin.smooth_rtt.distribution"] == "falcon-extsched"
    assert run.data.params["plugin.rate_split.source_sha256"] == digest
    assert run.data.tags["falcon.plugins"].startswith("smooth_rtt=falcon-extsched==0.1.0,")


def test_train_trains_a_plugin_learner(run_cli, tmp_path, monkeypatch):
    site = write_dist(
        tmp_path / "site", "stub-learner", "0.3", {"stubby": "learner_stub:StubLearner"}
    )
    _env_path(monkeypatch, site)
    out = tmp_path / "out"
    res = run_cli("train", *TINY, "agent_list=[minrtt,stubby]", f"output={out}", "tracking=none")
    assert res.returncode == 0, res.stderr
    assert "training agent 'stubby'" in res.stderr
    assert json.loads((out / "models" / "stubby" / "model.json").read_text())["episodes"] == 1
    assert json.loads((out / "summary.json").read_text())["schedulers"] == ["minrtt", "stubby"]
    plan = yaml.safe_load((out / "plan.yaml").read_text())
    assert plan["plugins"]["stubby"]["distribution"] == "stub-learner"


def test_evaluate_error_for_an_unknown_plugin_is_one_line(run_cli, tmp_path):
    res = run_cli("evaluate", *TINY, "agent_list=[minrtt,not_installed]", "tracking=none")
    assert res.returncode == 2
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith("error: unknown agent 'not_installed' (known: ")


# ---------------------------------------------------------------- the example's schedulers
def test_smooth_rtt_switches_only_beyond_its_margin(example):
    from extsched.smooth import SmoothedRTT
    from test_schedulers_unit import path, view

    from baselines.rule_based import MinRTT

    s = SmoothedRTT(hysteresis=0.2)
    v = view([path(0.050), path(0.060)])
    s.reset(v)
    assert s.decide(v) == 0
    v.paths[1].srtt = 0.045  # 10 % faster: within the margin
    assert s.decide(v) == 0 and MinRTT().decide(v) == 1
    v.paths[1].srtt = 0.040  # 25 % faster: beyond it
    assert s.decide(v) == 1
    v.paths[0].srtt = 0.035  # path 0 faster again, by 14 %: stays on path 1
    assert s.decide(v) == 1 and MinRTT().decide(v) == 0
    v.paths[1].bytes_in_flight = v.paths[1].cwnd  # the preferred path is full: overflow
    assert s.decide(v) == 0 and s.preferred == 1
    v.paths[0].bytes_in_flight = v.paths[0].cwnd
    assert s.decide(v) is None
    assert s.decide(view([path(0.05), path(probed=False)])) == 1  # an unprobed path first
    for bad in (-0.1, "0.2", True):
        with pytest.raises(ValueError, match="^hysteresis: expected a fraction >= 0"):
            SmoothedRTT(hysteresis=bad)


def test_rate_split_shares_follow_the_rate_estimates(example):
    from extsched.split import RateSplit
    from test_schedulers_unit import MSS, path, view

    r = RateSplit()
    v = view([path(0.05, cwnd=30 * MSS), path(0.05, cwnd=10 * MSS)])  # 600 and 200 kB/s
    r.reset(v)
    picks = [r.decide(v) for _ in range(40)]
    assert picks.count(0) == 30 and picks.count(1) == 10
    assert "0000" not in "".join(map(str, picks))  # spread out, not in bursts
    flat = RateSplit(exponent=0.0)
    flat.reset(v)
    assert [flat.decide(v) for _ in range(4)] == [0, 1, 0, 1]
    v.paths[0].bytes_in_flight = v.paths[0].cwnd  # only paths with room take packets
    assert {r.decide(v) for _ in range(5)} == {1}
    v.paths[1].bytes_in_flight = v.paths[1].cwnd
    assert r.decide(v) is None
    with pytest.raises(ValueError, match="^exponent: expected a number >= 0"):
        RateSplit(exponent=-1)


def test_agent_equals_a_plugin_name_says_where_plugins_go(run_cli, example, monkeypatch):
    _env_path(monkeypatch, example, EXAMPLE)
    res = run_cli("evaluate", *TINY, "agent=smooth_rtt", "tracking=none")
    assert res.returncode == 2
    assert res.stderr.strip().splitlines()[-1] == (
        "error: agent 'smooth_rtt' is a scheduler plug-in, not a config: name it in "
        "agent_list (agent_list=[smooth_rtt]); agent= selects configs"
    )
