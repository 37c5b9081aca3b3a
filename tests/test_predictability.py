"""How much of the per-download best mode the transport's view predicts
(baselines/modes/information.py, falcon/experiments/predictability.py), and
the behaviour log's paired seeds and branches (baselines/modes/experience.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from baselines.modes import DQNModes, make_modes
from baselines.modes import experience as exp
from baselines.modes.experience import Branch, collect, log_episode
from baselines.modes.information import branch_outcomes, predicted_choices, summarise
from envs import run_episode
from envs.errors import ConfigError
from falcon.experiments import predictability

SCENARIO = {
    "paths": [
        {"bandwidth_mbps": 20, "rtt_ms": 20, "rtt_std_ms": 4},
        {"bandwidth_mbps": 5, "rtt_ms": 80, "rtt_std_ms": 10},
    ]
}
APP = {"kind": "bulk", "size_bytes": 300_000}
MODES = make_modes((0.0, 0.5, 1.0), (False,), ("minrtt",))


def _informative(n: int = 40, seed: int = 0):
    """States whose first entry says which of two modes is faster (x > 0: mode 0)."""
    rng = np.random.default_rng(seed)
    x = rng.choice([-1.0, 1.0], n) + 0.1 * rng.standard_normal(n)
    states = np.c_[x, rng.standard_normal(n)]
    fast, slow = 1.0 + 0.05 * rng.random(n), 2.0 + 0.05 * rng.random(n)
    times = np.where(x[:, None] > 0, np.c_[fast, slow], np.c_[slow, fast])
    return states, times


def test_a_state_that_tells_the_best_mode_is_read_by_both_predictors():
    states, times = _informative()
    best = times.argmin(axis=1)
    for method in ("ridge", "knn"):
        assert (predicted_choices(states, times, method) == best).all()
    s = summarise(times, states)
    assert s["per_download_best"]["median_s"] < s["best_held"]["median_s"]
    for method in ("ridge", "knn"):
        assert s["predicted"][method]["median_s"] == pytest.approx(
            s["per_download_best"]["median_s"]
        )
        assert s["predicted"][method]["captured"] == pytest.approx(1.0)


def test_a_state_that_tells_nothing_leaves_the_best_held_mode():
    rng = np.random.default_rng(1)
    n = 40
    states = rng.standard_normal((n, 3))
    times = np.c_[1.0 + 0.3 * rng.random(n), 1.2 + 0.3 * rng.random(n), 3.0 + rng.random(n)]
    s = summarise(times, states)
    assert s["best_held"]["mode"] == 0
    assert s["per_download_best"]["median_s"] <= s["best_held"]["median_s"]
    # never the slow mode; the held best most of the time
    for method in ("ridge", "knn"):
        chosen = np.array(s["predicted"][method]["modes"])
        assert (chosen != 2).all() and (chosen == 0).mean() > 0.6


def test_the_predictors_are_checked():
    states, times = _informative(5)
    with pytest.raises(ConfigError, match="unknown predictor"):
        predicted_choices(states, times, "forest")
    with pytest.raises(ConfigError, match="at least 3 seeds"):
        predicted_choices(states[:2], times[:2], "ridge")


def test_every_branch_of_a_seed_leaves_the_prefix_in_the_same_state():
    """The study's premise: the branches of one seed share the prefix,
    decision for decision, and a branch into the prefix's own mode is the
    prefix held throughout."""
    prefix, epochs = MODES.index("minrtt"), 2
    runs = [
        log_episode(SCENARIO, APP, MODES, Branch(prefix, epochs, m), 7) for m in range(len(MODES))
    ]
    for e in runs[1:]:
        np.testing.assert_array_equal(e.states[: epochs + 1], runs[0].states[: epochs + 1])
        assert list(e.modes[:epochs]) == [prefix] * epochs
    held = log_episode(SCENARIO, APP, MODES, Branch(prefix, 10**9, prefix), 7)
    assert runs[prefix].download_time_s == held.download_time_s
    out = branch_outcomes(SCENARIO, APP, MODES, prefix, epochs, [7, 8, 9])
    assert out["times"].shape == (3, len(MODES)) and out["states"].shape[0] == 3
    assert out["times"][0].tolist() == [e.download_time_s for e in runs]
    with pytest.raises(ConfigError, match="prefix mode"):
        branch_outcomes(SCENARIO, APP, MODES, len(MODES), epochs, [7])
    with pytest.raises(ConfigError, match="epochs"):
        branch_outcomes(SCENARIO, APP, MODES, prefix, 0, [7])


def _seeds_logged(monkeypatch, **kw) -> list[tuple[str, int, object]]:
    calls = []

    def fake(scenario, app, modes, chooser, seed):
        calls.append((type(chooser).__name__, seed, chooser))
        return exp.Episode(
            np.zeros((1, 2)), np.zeros(1, np.int64), np.zeros(1), np.zeros(1), 1.0, 1.0
        )

    monkeypatch.setattr(exp, "log_episode", fake)
    collect(SCENARIO, APP, MODES, 100, 3, 6, 0.3, once=True, **kw)
    return calls


def test_common_seeds_hold_every_mode_on_the_same_downloads(monkeypatch):
    own = _seeds_logged(monkeypatch)
    held = [s for kind, s, _ in own if kind == "_Behaviour"][: 3 * len(MODES)]
    assert held == list(range(100, 100 + 3 * len(MODES)))  # each mode on its own seeds
    paired = _seeds_logged(monkeypatch, common_seeds=True)
    seeds = [s for _, s, _ in paired]
    assert seeds[: 3 * len(MODES)] == [100, 101, 102] * len(MODES)
    assert seeds[3 * len(MODES) :] == list(range(103, 109))  # then the switching episodes


def test_branches_share_a_seed_and_a_prefix_and_hold_distinct_modes(monkeypatch):
    calls = _seeds_logged(monkeypatch, common_seeds=True, branches=3)
    branches = [(s, c) for kind, s, c in calls if kind == "Branch"]
    assert len(branches) == 6  # two groups of three
    for g in range(2):
        group = branches[3 * g : 3 * g + 3]
        assert {s for s, _ in group} == {103 + g}
        assert len({(c.prefix, c.epochs) for _, c in group}) == 1
        assert len({c.target for _, c in group}) == 3
        assert group[0][1].epochs >= 1


@pytest.mark.parametrize(
    "kw, match",
    [({"common_seeds": "yes"}, "common_seeds"), ({"branches": 0}, "branches")],
)
def test_the_behaviour_settings_are_checked(kw, match):
    with pytest.raises(ConfigError, match=match):
        DQNModes(shares=[0.0, 1.0], reinject=[False], rules=[]).fit(
            SCENARIO, APP, seeds_per_mode=1, switching_episodes=0, progress=False, **kw
        )


def _sec(**kw) -> dict:
    sec = {
        "list": "validation",
        "names": ["lte_wifi"],
        "agent": "dqn_modes",
        "prefix": "ecf",
        "epochs": 1,
        "seeds": 3,
        "ridge": 3.0,
        "neighbours": 2,
    }
    sec.update(kw)
    return sec


def test_the_study_on_a_validation_condition(tmp_path):
    res = predictability.run_study(_sec(), seed=0, progress=False)
    r = res["conditions"]["lte_wifi"]
    assert res["prefix_mode"] == "ecf" and len(r["mode_medians_s"]) == len(res["modes"])
    assert r["seeds"] == 3
    assert r["per_download_best"]["median_s"] <= r["best_held"]["median_s"]
    for method in ("ridge", "knn"):
        assert r["predicted"][method]["median_s"] >= r["per_download_best"]["median_s"]
    json.dumps(res)  # plain data
    assert "lte_wifi" in predictability.table(res)
    assert predictability.plot(res, tmp_path / "p.png").stat().st_size > 0


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"list": "test"}, "reporting only"),
        ({"names": ["nowhere"]}, "not in the validation list"),
        ({"prefix": "rr"}, "prefix: 'rr' is not one of the modes"),
        ({"agent": "minrtt"}, "not an agent of the mode MDP"),
        ({"seeds": 2}, "at least 3"),
        ({"epochs": 0}, "epochs"),
    ],
)
def test_the_study_settings_are_checked(kw, match):
    with pytest.raises(ConfigError, match=match):
        predictability.run_study(_sec(**kw), seed=0, progress=False)


# -- the probe candidate (baselines/modes/probe.py) -------------------------------------------

from baselines.dqn.files import ModelFileError  # noqa: E402
from baselines.modes.files import read_model  # noqa: E402
from baselines.modes.probe import ProbeChooser, ProbeModel, check_probe  # noqa: E402

PROBE = {"prefix": "minrtt", "epochs": 2, "seeds": 3, "neighbours": 10}


@pytest.mark.parametrize(
    "value, match",
    [
        ({**PROBE, "colour": 1}, "unknown keys"),
        ({**PROBE, "epochs": 0}, "epochs"),
        ({**PROBE, "seeds": 2}, "seeds"),
        ({**PROBE, "neighbours": 0}, "neighbours"),
        ({**PROBE, "prefix": "rr"}, "prefix"),
        ({"prefix": "minrtt", "epochs": 2}, r"missing keys \['seeds', 'neighbours'\]"),
        ([1, 2], "mapping"),
    ],
)
def test_the_probe_settings_are_checked(value, match):
    with pytest.raises(ConfigError, match=match):
        check_probe(value, MODES, "dqn_modes")
    with pytest.raises(ConfigError, match=match):
        DQNModes(shares=[0.0, 0.5, 1.0], reinject=[False], rules=["minrtt"], probe=value)


def test_the_probe_holds_its_prefix_then_the_mode_of_the_nearest_states():
    assert check_probe(None, MODES, "x") is None
    settings = check_probe({**PROBE, "prefix": [0.5, False]}, MODES, "x")
    assert settings["prefix"] == MODES.index((0.5, False)) and settings["neighbours"] == 10
    states = np.array([[0.0, 0.0], [0.1, 0.0], [5.0, 5.0], [5.1, 5.0]])
    logs = np.log(
        np.array(
            [[1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0], [4.0, 3.0, 2.0, 1.0], [4.0, 3.0, 2.0, 1.0]]
        )
    )
    model = ProbeModel(prefix=1, epochs=2, neighbours=2, states=states, log_times=logs)
    chooser = model.chooser()
    assert isinstance(chooser, ProbeChooser)
    picks = [
        chooser(np.array([4.9, 5.2])),
        chooser(np.array([4.9, 5.2])),
        chooser(np.array([4.9, 5.2])),
    ]
    assert picks[:2] == [1, 1] and picks[2] == 3
    assert chooser(np.array([0.0, 0.0])) == 3  # committed: held to the end
    assert model.chooser()(np.zeros(2)) == 1 and model.choose(np.zeros(2)) == 0


def _fit_with_probe(monkeypatch, pick_probe: bool):
    import baselines.modes.learner as learner
    from baselines.dqn import selection

    real = selection.successive_halving

    def halving(n, evaluate, budget, progress=None, statistic="iqm"):
        best, record = real(n, evaluate, budget, progress=progress, statistic=statistic)
        return (n - 1 if pick_probe else 0), record

    monkeypatch.setattr(learner, "successive_halving", halving)
    agent = DQNModes(
        shares=[0.0, 1.0],
        reinject=[False],
        rules=["minrtt"],
        hidden=[8],
        switch_margins=[None],
        constant_candidates=1,
        probe={"prefix": "minrtt", "epochs": 1, "seeds": 4, "neighbours": 2},
    )
    out = agent.fit(
        SCENARIO,
        APP,
        seed=3,
        seeds_per_mode=1,
        switching_episodes=1,
        gradient_steps=5,
        models=1,
        validation_episodes=6,
        progress=False,
    )
    return agent, out


def test_the_probe_enters_the_selection_and_its_model_file_round_trips(monkeypatch, tmp_path):
    agent, out = _fit_with_probe(monkeypatch, pick_probe=True)
    assert out["probe_selected"] == 1.0 and agent.probe_model is not None
    assert agent.probe_model.states.shape[0] == 4
    assert isinstance(agent.policy(), ProbeChooser)
    times = [run_episode(SCENARIO, APP, agent, seed=k).metrics["download_time_s"] for k in range(3)]
    agent.save(tmp_path)
    again = DQNModes(model=str(tmp_path))
    np.testing.assert_array_equal(again.probe_model.log_times, agent.probe_model.log_times)
    assert [
        run_episode(SCENARIO, APP, again, seed=k).metrics["download_time_s"] for k in range(3)
    ] == times
    assert DQNModes(model=str(tmp_path), constant_candidates=0).probe_model is None
    not_kept, out = _fit_with_probe(monkeypatch, pick_probe=False)
    assert out["probe_selected"] == 0.0 and not_kept.probe_model is None
    not_kept.save(tmp_path / "q")
    assert read_model(tmp_path / "q")[5] is None


def test_a_version_1_model_file_is_read_and_a_damaged_probe_is_refused(monkeypatch, tmp_path):
    import h5py

    agent, _ = _fit_with_probe(monkeypatch, pick_probe=True)
    path = agent.save(tmp_path)
    with h5py.File(path, "r+") as f:
        del f["probe/log_times"]
        f.create_dataset("probe/log_times", data=np.zeros((4, 2)))
    with pytest.raises(ModelFileError, match="probe data of shapes"):
        read_model(path)
    with h5py.File(path, "r+") as f:
        del f["probe"]
        del f.attrs["probe"]
        f.attrs["format_version"] = 1
    assert read_model(path)[5] is None
    with h5py.File(path, "r+") as f:
        f.attrs["format_version"] = 3
    with pytest.raises(ModelFileError, match="version 3, this reader knows 1, 2"):
        read_model(path)


def test_a_probe_trains_on_one_condition():
    agent = DQNModes(
        shares=[0.0, 1.0],
        reinject=[False],
        rules=["minrtt"],
        probe=PROBE,
    )
    with pytest.raises(ConfigError, match="probe trains on one condition"):
        agent.fit(
            SCENARIO,
            APP,
            tasks=[(SCENARIO, APP), (SCENARIO, APP)],
            seeds_per_mode=1,
            switching_episodes=0,
            gradient_steps=2,
            models=1,
            validation_episodes=2,
            progress=False,
        )


def test_no_share_is_captured_of_a_gap_of_almost_nothing():
    states, times = _informative()
    times = np.c_[times[:, :1], times[:, :1] * (1 + 1e-4)]  # two modes within 0.01 %
    s = summarise(times, states)
    assert all(s["predicted"][m]["captured"] is None for m in ("ridge", "knn"))


def test_dqn_modes_deploys_its_probe_by_default_and_probe_null_is_the_ablation():
    from falcon.config import load_group, to_plain
    from falcon.jobs import instantiate_agent

    cfg = to_plain(load_group("agent", "dqn_modes"))
    agent = instantiate_agent("dqn_modes", cfg)
    assert agent.probe_settings == {
        "prefix": agent.modes.index("ecf"),
        "epochs": 2,
        "seeds": 60,
        "neighbours": 10,
    }
    assert instantiate_agent("dqn_modes", {**cfg, "probe": None}).probe_settings is None
