"""Generalists (falcon/experiments/generalists.py): a deployed scheduler
trained once on a whole condition list, then deployed from its model on
every condition of the suite; never on the list the suite scores."""

from __future__ import annotations

import pytest

from envs.errors import ConfigError
from falcon.experiments import condition_lists
from falcon.experiments import learnability as lb

TASKS = [
    (
        {"paths": [{"bandwidth_mbps": 30, "rtt_ms": 20}, {"bandwidth_mbps": 1, "rtt_ms": 150}]},
        {"kind": "bulk", "size_bytes": 300_000},
    ),
    (
        {"paths": [{"bandwidth_mbps": 10, "rtt_ms": 20}, {"bandwidth_mbps": 10, "rtt_ms": 20}]},
        {"kind": "bulk", "size_bytes": 300_000},
    ),
]
TINY = (
    "{dqn_modes_general: {shares: [0.0, 1.0], reinject: [false], rules: [minrtt, redundant], "
    "hidden: [16], switch_margins: [0.0], train: {recombined: 0, seeds_per_mode: 1, switching_episodes: 2, "
    "gradient_steps: 20, models: 1, validation_episodes: 2}}}"
)


@pytest.fixture
def fits(monkeypatch, tmp_path):
    """The generalist trainings of a test (``DQNModes.fit`` calls), with the
    test's own cache and the training lists replaced by ``TASKS``."""
    from baselines.modes.learner import DQNModes

    monkeypatch.setenv("FALCON_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(condition_lists, "training_tasks", lambda name, where: TASKS)
    calls = []
    real = DQNModes.fit

    def fit(self, *a, **kw):
        calls.append(len(kw.get("tasks") or []))
        return real(self, *a, **kw)

    monkeypatch.setattr(DQNModes, "fit", fit)
    return calls


def _cfg(compose, *extra):
    return compose(
        "train",
        [
            "experiment=learnability",
            "runs=2",
            "learnability.max_conditions=1",
            "learnability.bulk_size_bytes=200000",
            "progress=false",
            "learnability.rules=[minrtt]",
            "learnability.learners=[]",
            "learnability.deployed=[dqn_modes_general]",
            "learnability.fixed_split_shares=[0.0,1.0]",
            "learnability.oracle=false",
            f"learnability.agent_overrides={TINY}",
            *extra,
        ],
    )


def test_a_generalist_is_trained_once_on_its_list_and_deployed_on_every_condition(
    compose, fits, tmp_path
):
    _, sec, conds, agents = lb.settings(_cfg(compose))
    res = lb.run_learnability(
        sec, conds, agents, {"name": "local", "workers": 1}, progress=False, models_dir=tmp_path
    )
    assert fits == [2]  # once, on the tasks of the list its config names
    rec = res["generalists"]["dqn_modes_general"]
    assert rec["conditions"] == "train" and rec["tasks"] == 2 and rec["metrics"]["tasks"] == 2.0
    assert rec["reused"] is False
    assert (tmp_path / "generalists" / "dqn_modes_general" / "model.h5").is_file()
    st = res["results"]["t1_4g_5g"]["schedulers"]["dqn_modes_general"]
    assert len(st["download_time_s"]["values"]) == 2 and "train" not in st
    # a trained model given as model=PATH is deployed as is: no second training, same times
    model = str(tmp_path / "generalists" / "dqn_modes_general" / "model.h5")
    again = {**agents, "dqn_modes_general": {**agents["dqn_modes_general"], "model": model}}
    res2 = lb.run_learnability(sec, conds, again, {"name": "local", "workers": 1}, progress=False)
    assert fits == [2] and res2["generalists"] == {}
    st2 = res2["results"]["t1_4g_5g"]["schedulers"]["dqn_modes_general"]
    assert st2["download_time_s"]["values"] == st["download_time_s"]["values"]


def test_a_generalist_trained_before_is_taken_from_the_cache_until_its_config_changes(
    compose, fits
):
    _, sec, conds, agents = lb.settings(_cfg(compose))
    local = {"name": "local", "workers": 1}
    first = lb.run_learnability(sec, conds, agents, local, progress=False)
    second = lb.run_learnability(sec, conds, agents, local, progress=False)
    assert fits == [2]  # the second run reuses the first's model
    rec = second["generalists"]["dqn_modes_general"]
    assert (
        rec["reused"] is True and rec["cache"] == first["generalists"]["dqn_modes_general"]["cache"]
    )
    assert rec["metrics"] == first["generalists"]["dqn_modes_general"]["metrics"]
    times = [
        r["results"]["t1_4g_5g"]["schedulers"]["dqn_modes_general"]["download_time_s"]["values"]
        for r in (first, second)
    ]
    assert times[0] == times[1]
    other = dict(agents["dqn_modes_general"])
    other["train"] = {**other["train"], "gradient_steps": 21}
    lb.run_learnability(sec, conds, {**agents, "dqn_modes_general": other}, local, progress=False)
    assert fits == [2, 2]  # another config trains again
    # and so does the same config with other training seeds
    lb.run_learnability({**sec, "train_seed": 7}, conds, agents, local, progress=False)
    assert fits == [2, 2, 2]


def test_a_generalist_never_trains_on_the_list_it_is_scored_on(compose, monkeypatch):
    monkeypatch.setattr(condition_lists, "training_tasks", lambda name, where: TASKS)
    _, sec, conds, agents = lb.settings(_cfg(compose))
    sec = {**sec, "split": "train"}
    with pytest.raises(ConfigError, match="trains on the train list, which this run scores"):
        lb.run_learnability(sec, conds, agents, {"name": "local", "workers": 1}, progress=False)


def test_a_generalist_trained_in_sample_on_the_dev_list_is_scored_there(compose, fits, monkeypatch):
    """``train.in_sample: dev`` adds the development conditions to its tasks;
    on the dev list it is then scored in sample (recorded), on the list it
    trains on it is still refused."""
    monkeypatch.setattr(condition_lists, "in_sample_tasks", lambda name, where: TASKS[:1])
    extra = "learnability.agent_overrides.dqn_modes_general.train.in_sample=dev"
    _, sec, conds, agents = lb.settings(_cfg(compose, f"++{extra}"))
    assert sec["split"] == "dev"
    res = lb.run_learnability(sec, conds, agents, {"name": "local", "workers": 1}, progress=False)
    assert fits == [3]  # the list's 2 tasks and the dev list's 1
    assert res["generalists"]["dqn_modes_general"]["in_sample"] is True
    from falcon.experiments.generalists import _in_sample

    assert _in_sample({"in_sample": None}, None) is False  # convergence, stress: no list
    assert (
        _in_sample({}, "dev") is False and _in_sample({"in_sample": "dev"}, "validation") is False
    )
    with pytest.raises(ConfigError, match="trains on the train list, which this run scores"):
        lb.run_learnability(
            {**sec, "split": "train"}, conds, agents, {"name": "local"}, progress=False
        )


def test_in_sample_tasks_are_the_dev_lists_conditions_and_train_files_only(monkeypatch):
    import falcon.config

    dev = condition_lists.in_sample_tasks("dev", "agent 'x': train.in_sample")
    assert len(dev) == 15 and all(len(s["paths"]) == 2 for s, _ in dev)
    with pytest.raises(ConfigError, match="also trains in sample on dev, got 'train'"):
        condition_lists.in_sample_tasks("train", "agent 'x': train.in_sample")
    # a dev list may hold validation files; a generalist may not train on one
    real = falcon.config.load_group
    validation_file = "raca_5g_2020/download_driving/B_2019.12.14_10.16.30.csv"

    def load_group(group, name):
        cfg = real(group, name)
        if name == "dev":
            cfg.learnability.conditions[0].scenario.paths[0] = {"trace": validation_file}
        return cfg

    monkeypatch.setattr(falcon.config, "load_group", load_group)
    with pytest.raises(ConfigError, match="is a validation file .*trains on train files only"):
        condition_lists.in_sample_tasks("dev", "agent 'x': train.in_sample")


def test_generalist_tasks_are_the_list_its_recombined_pairs_then_the_in_sample_list():
    train = {"conditions": "train", "recombined": 4, "in_sample": "dev"}
    tasks, phrase = condition_lists.generalist_tasks(train, 3, "agent 'x': train")
    listed = condition_lists.training_tasks("train", "x")
    dev = condition_lists.in_sample_tasks("dev", "x")
    assert tasks == listed + condition_lists.recombined_tasks(listed, 4, 3) + dev
    assert phrase.endswith(
        "4 pairs recombined from their paths and, in sample, the 15 conditions of the dev list"
    )
    no_dev, _ = condition_lists.generalist_tasks({**train, "in_sample": None}, 3, "x")
    assert no_dev == tasks[: len(tasks) - 15]


@pytest.mark.parametrize("name", ["test", "dev", "nonsense"])
def test_only_the_train_and_validation_lists_are_training_lists(name):
    with pytest.raises(ConfigError, match="train or validation condition list"):
        condition_lists.training_tasks(name, "agent 'x': train.conditions")


def test_the_train_list_is_read_as_tasks():
    tasks = condition_lists.training_tasks("train", "x")
    assert len(tasks) >= 10 and all(len(s["paths"]) == 2 for s, _ in tasks)
    assert all(a["kind"] in ("bulk", "web") for _, a in tasks)


def test_recombined_tasks_pair_the_lists_own_paths_and_are_seeded():
    tasks = condition_lists.training_tasks("train", "x")
    firsts = [s["paths"][0] for s, _ in tasks]
    seconds = [s["paths"][1] for s, _ in tasks]
    extra = condition_lists.recombined_tasks(tasks, 20, seed=3)
    assert len(extra) == 20
    assert extra == condition_lists.recombined_tasks(tasks, 20, seed=3)
    assert extra != condition_lists.recombined_tasks(tasks, 20, seed=4)
    pairs = [(s["paths"][0], s["paths"][1]) for s, _ in extra]
    assert len({repr(p) for p in pairs}) == 20  # no pair twice
    for (p0, p1), (_, app) in zip(pairs, extra, strict=True):
        assert p0 in firsts and p1 in seconds and app["size_bytes"] == 2_000_000
        assert (p0, p1) not in [(s["paths"][0], s["paths"][1]) for s, _ in tasks]
        files = [condition_lists.trace_files({"paths": [p]}) for p in (p0, p1)]
        assert not {f for _, f in files[0]} & {f for _, f in files[1]}
    assert condition_lists.recombined_tasks(tasks, 0, seed=3) == []


def test_more_recombined_tasks_than_pairs_is_one_error():
    with pytest.raises(ConfigError, match="5 tasks asked, the list's paths make 2 new pairs"):
        condition_lists.recombined_tasks(TASKS, 5, seed=0)
    with pytest.raises(ConfigError, match="whole number >= 0"):
        condition_lists.recombined_tasks(TASKS, -1, seed=0)


def test_the_convergence_experiment_trains_a_generalist_once_and_deploys_it(compose, fits):
    from falcon.experiments import convergence

    tiny = TINY.replace("{dqn_modes_general: {", "").rsplit("}}", 1)[0]
    cfg = compose(
        "train",
        [
            "experiment=convergence",
            "quick=true",
            "quick_variant.convergence.schedulers=[dqn_modes_general]",
            "runs=2",
            f"++convergence.agent_overrides.dqn_modes_general={{{tiny}}}",
        ],
    )
    _, sec, a, b, app = convergence.settings(cfg)
    res = convergence.run_convergence(sec, a, b, app, None, progress=False)
    assert fits == [2]  # once for both runs
    assert res["generalists"]["dqn_modes_general"]["tasks"] == 2
    assert {r["scheduler"] for r in res["records"]} == {"dqn_modes_general"}
    assert len(res["records"]) == 2 * (sec["downloads_a"] + sec["downloads_b"])
