"""The mode MDP (baselines/modes/): modes executed as the fixed split and the
rules execute them, the epoch state, the return-to-go targets, the learner
on a condition where one path should be left alone, and the model file."""

import math

import numpy as np
import pytest

from baselines import make_scheduler
from baselines.dqn.files import ModelFileError
from baselines.modes import DQNModes, ModeScheduler, make_modes
from baselines.modes.experience import (
    Episode,
    fastest_constant_modes,
    mc_transitions,
    transitions,
)
from baselines.modes.features import feature_names, n_inputs
from baselines.modes.learner import hold_or_switch
from envs import run_episode
from envs.errors import ConfigError

SCEN = {"paths": [{"bandwidth_mbps": 20, "rtt_ms": 30}, {"bandwidth_mbps": 10, "rtt_ms": 80}]}
APP = {"kind": "bulk", "size_bytes": 600_000}


def _held(mode_index, modes):
    sched = ModeScheduler(modes, lambda state: mode_index)
    return sched, run_episode(SCEN, APP, sched, seed=3).metrics


def test_single_path_modes_are_the_fixed_split_and_every_epoch_is_recorded():
    modes = make_modes()
    for share in (0.0, 1.0):
        sched, m = _held(modes.index((share, False)), modes)
        ref = run_episode(SCEN, APP, make_scheduler("fixed_split", share=share), seed=3).metrics
        assert m["download_time_s"] == ref["download_time_s"]
        assert m["path0_share"] == share
        times = [t for _, _, t, _ in sched.trace]
        assert len(times) >= 3 and times == sorted(times)
        assert all(state.shape == (n_inputs(2),) for state, _, _, _ in sched.trace)


def test_a_share_holds_within_each_epoch_and_a_rule_mode_is_the_rule():
    modes = make_modes(rules=["ecf"])
    _, m = _held(modes.index((0.25, False)), modes)
    assert m["path0_share"] == pytest.approx(0.25, abs=0.03)
    _, m = _held(modes.index("ecf"), modes)
    ref = run_episode(SCEN, APP, make_scheduler("ecf"), seed=3).metrics
    assert m["download_time_s"] == ref["download_time_s"]


def test_modes_are_checked():
    with pytest.raises(ConfigError, match="listed twice"):
        make_modes([0.5, 0.5])
    with pytest.raises(ConfigError, match="modes.rules: 'nope'"):
        make_modes(rules=["nope"])
    with pytest.raises(ConfigError, match="per-packet feedback"):
        make_modes(rules=["stms"])
    with pytest.raises(ConfigError, match="target"):
        DQNModes(target="sarsa")
    with pytest.raises(ConfigError, match="switch_margins"):
        DQNModes(switch_margins=[-1.0])
    three = {"paths": SCEN["paths"] * 2}
    with pytest.raises(ConfigError, match="exactly 2 paths"):
        run_episode(
            {"paths": three["paths"][:3]}, APP, ModeScheduler(make_modes(), lambda s: 0), seed=0
        )


def test_state_sees_a_path_that_stopped_delivering(tmp_path):
    """An outage on path 1 from 0.3 s (its trace reads 0): its delivery entry
    falls to 0 and its ACK age grows, where its estimates have nothing new."""
    trace = tmp_path / "outage.csv"
    trace.write_text("time_s,rate_Mbps\n0,20\n0.3,0\n4,0\n4.1,20\n6,20\n")
    sched = ModeScheduler(make_modes([0.5], [False]), lambda state: 0)
    scen = {"paths": [{"bandwidth_mbps": 20, "rtt_ms": 30}, {"trace": str(trace), "rtt_ms": 30}]}
    run_episode(scen, {"kind": "bulk", "size_bytes": 3_000_000}, sched, seed=0)
    names = feature_names(2)
    late = [s for s, _, t, _ in sched.trace if t > 0.8]
    assert late, "the download should outlast the outage's start"
    state = late[0]
    assert state[names.index("path1_log_delivery")] == 0.0
    assert state[names.index("path1_ack_age")] > 3.0
    assert (
        state[names.index("path0_log_delivery")] > 0.0 and state[names.index("path0_ack_age")] < 2.0
    )


def _episode(times, end, modes, unacked):
    n = len(times)
    return Episode(
        np.zeros((n, n_inputs(2)), np.float32),
        np.asarray(modes),
        np.asarray(times, float),
        np.asarray(unacked, float),
        end,
        end,
    )


def test_return_to_go_targets_and_the_shaped_reward():
    const = _episode([0.0, 0.1, 0.3], 0.5, [2, 2, 2], [1000.0, 600.0, 200.0])
    mixed = _episode([0.0, 0.2, 0.4], 0.6, [1, 3, 3], [1000.0, 400.0, 100.0])
    d = mc_transitions([const, mixed], unit_s=0.1)
    # the changing episode counts from its change on; each episode weighs one half
    assert d.rewards.tolist() == pytest.approx([-math.log1p(x) for x in (5.0, 4.0, 2.0, 4.0, 2.0)])
    assert d.dones.tolist() == [1.0] * 5 and d.actions.tolist() == [2, 2, 2, 3, 3]
    assert d.weights.tolist() == pytest.approx([1 / 6] * 3 + [1 / 4] * 2)
    t = transitions([const], gamma=1.0, unit_s=0.1, rate_ref=1000.0)
    # with gamma 1 the shaping telescopes: the return is -(download time) / u - phi_0
    assert t.rewards.sum() == pytest.approx(-0.5 / 0.1 + 1000.0 / (1000.0 * 0.1))
    assert t.dones.tolist() == [0.0, 0.0, 1.0]


def test_the_constant_candidate_is_the_mode_with_the_lowest_median():
    eps = [
        _episode([0.0], t, [m], [1.0])
        for m, t in ((0, 1.0), (0, 9.0), (0, 1.1), (1, 2.0), (1, 2.1), (1, 1.9))
    ]
    eps.append(
        _episode([0.0, 0.1], 0.2, [2, 3], [1.0, 1.0])
    )  # changed mode: not a constant candidate
    assert fastest_constant_modes([eps], 4, 1) == [
        0
    ]  # median 1.1 s against 2.0 s (mean 3.7 s against 2.0 s)


def test_the_constant_candidates_are_the_fastest_held_modes_in_order():
    eps = [
        _episode([0.0], t, [m], [1.0])
        for m, t in ((0, 3.0), (1, 1.0), (2, 2.0), (3, 2.0), (0, 3.0), (1, 1.2), (2, 2.2))
    ]
    eps.append(_episode([0.0, 0.1], 0.2, [0, 3], [1.0, 1.0]))  # changed mode: not held throughout
    # medians: mode 1 1.1 s, mode 3 2.0 s, mode 2 2.1 s, mode 0 3.0 s
    assert fastest_constant_modes([eps], 4, 3) == [1, 3, 2]
    assert fastest_constant_modes([eps], 4, 9) == [1, 3, 2, 0]
    assert fastest_constant_modes([eps], 4, 0) == []
    with pytest.raises(ConfigError, match="no constant-mode episode"):
        fastest_constant_modes([eps[-1:]], 4, 1)


@pytest.mark.parametrize("bad", [-1, 1.5, True, "3"])
def test_constant_candidates_is_a_whole_number(bad):
    with pytest.raises(ConfigError, match="constant_candidates: expected a whole number >= 0"):
        DQNModes(constant_candidates=bad)


def test_the_selection_statistic_reaches_the_selection(monkeypatch):
    import baselines.modes.learner as learner

    with pytest.raises(ConfigError, match="selection_statistic: unknown 'mode'"):
        DQNModes(selection_statistic="mode")
    seen = []

    def halving(n, evaluate, budget, progress=None, statistic="mean"):
        seen.append(statistic)
        return 0, [{"candidate": 0, "episodes": 1, "mean_cost": 0.0, "cost": 0.0}]

    monkeypatch.setattr(learner, "successive_halving", halving)
    for statistic in ("mean", "median", "iqm", None):
        agent = DQNModes(
            shares=[0.0, 1.0],
            reinject=[False],
            rules=[],
            hidden=[8],
            switch_margins=[None],
            **({} if statistic is None else {"selection_statistic": statistic}),
        )
        agent.fit(
            SCEN,
            {"kind": "bulk", "size_bytes": 100_000},
            seed=5,
            seeds_per_mode=1,
            switching_episodes=1,
            gradient_steps=2,
            models=1,
            validation_episodes=4,
            progress=False,
        )
    assert seen == ["mean", "median", "iqm", "iqm"]  # the default: the interquartile mean


def test_every_constant_candidate_enters_the_selection(monkeypatch):
    """With two candidates ranked wrongly by the behaviour (the slow single
    path first), the validation episodes keep the fast one; with one, the
    slow one is all the selection may hold."""
    import baselines.modes.learner as learner

    scen = {
        "paths": [
            {"bandwidth_mbps": 30, "rtt_ms": 20},
            {"bandwidth_mbps": 1, "rtt_ms": 150, "loss": 0.05},
        ]
    }
    app = {"kind": "bulk", "size_bytes": 300_000}
    # modes: share 0 (everything on path 1, slow), share 1 (everything on path 0, fast)
    monkeypatch.setattr(learner, "fastest_constant_modes", lambda logs, n, k: [0, 1][:k])
    kept = {}
    for k in (1, 2):
        agent = DQNModes(
            shares=[0.0, 1.0],
            reinject=[False],
            rules=[],
            hidden=[8],
            switch_margins=[None],
            constant_candidates=k,
        )
        agent.fit(
            scen,
            app,
            seed=5,
            seeds_per_mode=1,
            switching_episodes=1,
            gradient_steps=5,
            models=1,
            validation_episodes=4,
            progress=False,
        )
        kept[k] = agent.constant_mode
    assert kept[2] == 1 and kept[1] in (0, None)


def test_a_policy_with_agreement_switches_only_when_every_member_agrees():
    from baselines.modes.learner import Ensemble, ModePolicy, members_agree

    # on state 0 both members prefer mode 0; on state 1 the mean prefers mode 1
    # by 0.75 while the second member still prefers mode 0
    tables = [{0: [1.0, 0.0], 1: [0.0, 2.0]}, {0: [1.0, 0.0], 1: [0.5, 0.0]}]
    q = Ensemble([lambda s, t=t: np.asarray(t[int(s[0])], np.float32) for t in tables])
    states = [np.array([x], np.float32) for x in (0, 1, 1)]
    plain, agreeing = ModePolicy(q, 0.1), ModePolicy(q, 0.1, agree=True)
    assert [plain(s) for s in states] == [0, 1, 1]
    assert [agreeing(s) for s in states] == [0, 0, 0]
    assert members_agree(q, states[0], 0, 1) and not members_agree(q, states[1], 1, 0)
    assert members_agree(lambda s: np.zeros(2), states[1], 1, 0)  # no members: the mean decides
    with pytest.raises(ConfigError, match="switch_agreement: expected true or false"):
        DQNModes(switch_agreement=1)


def test_hold_or_switch():
    q = np.array([1.0, 1.5, 0.2])
    assert hold_or_switch(q, None, 1.0) == 1
    assert hold_or_switch(q, 0, 1.0) == 0 and hold_or_switch(q, 0, 0.4) == 1


def test_learner_leaves_a_useless_path_alone_and_its_model_file_round_trips(tmp_path):
    """Path 1 (1 Mbit/s, 150 ms, 5 % loss) only slows a 2 MB download: the
    learned modes come within 10 % of sending everything on path 0, where
    minRTT, ECF and BLEST (which use path 1 when path 0's window is full) are
    15-70 % slower."""
    scen = {
        "paths": [
            {"bandwidth_mbps": 30, "rtt_ms": 20},
            {"bandwidth_mbps": 1, "rtt_ms": 150, "loss": 0.05},
        ]
    }
    app = {"kind": "bulk", "size_bytes": 2_000_000}
    agent = DQNModes(
        shares=[0.0, 0.5, 1.0],
        reinject=[False],
        rules=["minrtt"],
        hidden=[32],
        switch_margins=[0.0, None],
        constant_candidates=1,
    )
    out = agent.fit(
        scen,
        app,
        seed=100,
        seeds_per_mode=3,
        switching_episodes=12,
        gradient_steps=600,
        models=2,
        validation_episodes=8,
        progress=False,
    )
    assert out["transitions"] > 0 and math.isfinite(out["final_loss"])

    def median(s):
        return float(
            np.median(
                [run_episode(scen, app, s, seed=k).metrics["download_time_s"] for k in range(5)]
            )
        )

    single = median(make_scheduler("fixed_split", share=1.0))
    learned = median(agent)
    assert (
        learned
        <= 1.10 * single
        < min(median(make_scheduler(n)) for n in ("minrtt", "ecf", "blest"))
    )
    agent.save(tmp_path)
    again = DQNModes(model=str(tmp_path))
    assert (
        again.modes == agent.modes
        and again.switch_margin == agent.switch_margin
        and median(again) == learned
    )
    assert again.constant_mode == agent.constant_mode
    # the ablation: the Q-policy deployed even where the selection kept a constant mode
    q_only = DQNModes(model=str(tmp_path), constant_candidates=0)
    assert q_only.constant_mode is None and q_only.switch_margin == agent.switch_margin
    (tmp_path / "bad.h5").write_bytes(b"not hdf5")
    with pytest.raises(ModelFileError, match="bad.h5: unreadable"):
        DQNModes(model=str(tmp_path / "bad.h5"))


def test_the_agent_config_builds_a_trainable_scheduler_with_rule_modes():
    import inspect
    from pathlib import Path

    import yaml
    from hydra.utils import instantiate

    from envs.scheduler import Trainable

    cfg = yaml.safe_load(
        (Path(__file__).resolve().parents[1] / "configs/agent/dqn_modes.yaml").read_text()
    )
    train = cfg.pop("train")
    agent = instantiate(cfg)
    fit_defaults = {k: p.default for k, p in inspect.signature(DQNModes.fit).parameters.items()}
    assert isinstance(agent, Trainable) and train == {
        k: fit_defaults[k] for k in train
    }  # one value each
    assert len(agent.modes) == len(cfg["shares"]) * len(cfg["reinject"]) + len(cfg["rules"])
    with pytest.raises(ConfigError, match="no trained model"):
        agent.policy()


def test_tasks_pool_with_equal_weight_and_the_constant_is_best_over_tasks():
    from baselines.modes.experience import pool

    fast = [_episode([0.0], t, [m], [1.0]) for m, t in ((0, 0.1), (1, 0.2))]  # mode 0 2x faster
    slow = [_episode([0.0], t, [m], [1.0]) for m, t in ((0, 30.0), (1, 20.0))]  # mode 1 1.5x
    # by pooled medians the slow task would decide; by mean log time over tasks mode 0 wins
    assert fastest_constant_modes([fast, slow], 2, 1) == [0]
    a = mc_transitions(fast, unit_s=0.01)
    b = mc_transitions(slow + slow, unit_s=1.0)
    p = pool([a, b])
    assert len(p.actions) == len(a.actions) + len(b.actions)
    assert p.weights[: len(a.actions)].sum() == pytest.approx(0.5)
    assert p.weights[len(a.actions) :].sum() == pytest.approx(0.5)
    assert pool([a]) is a


def test_a_generalist_learns_from_several_conditions():
    """One policy for two conditions where path 1 only slows the download and
    one where both paths help: within 15 % of the better of the single path
    and the even split on each (a rule-free check of multi-task training)."""
    useless = {
        "paths": [
            {"bandwidth_mbps": 30, "rtt_ms": 20},
            {"bandwidth_mbps": 1, "rtt_ms": 150, "loss": 0.05},
        ]
    }
    even = {"paths": [{"bandwidth_mbps": 15, "rtt_ms": 20}, {"bandwidth_mbps": 15, "rtt_ms": 20}]}
    app = {"kind": "bulk", "size_bytes": 3_000_000}
    agent = DQNModes(
        shares=[0.5, 1.0],
        reinject=[False],
        rules=[],
        hidden=[32],
        switch_margins=[0.0],
        constant_candidates=0,
    )
    out = agent.fit(
        None,
        None,
        seed=7,
        seeds_per_mode=4,
        switching_episodes=8,
        gradient_steps=600,
        models=2,
        validation_episodes=2,
        tasks=[(useless, app), (even, app)],
        progress=False,
    )
    assert out["tasks"] == 2.0 and out["behaviour_episodes"] == 2 * (2 * 4 + 8)

    def median(scen, s):
        return float(
            np.median(
                [run_episode(scen, app, s, seed=k).metrics["download_time_s"] for k in range(4)]
            )
        )

    for scen in (useless, even):
        best = min(median(scen, make_scheduler("fixed_split", share=x)) for x in (0.5, 1.0))
        assert median(scen, agent) <= 1.15 * best
    with pytest.raises(ConfigError, match="tasks: expected at least one"):
        agent.fit(None, None, tasks=[], progress=False)


def test_the_first_mode_holds_the_first_epoch_then_the_q_values_choose():
    from baselines.modes.learner import ModePolicy

    q = lambda state: np.array([0.0, 1.0, 0.5])  # noqa: E731
    policy = ModePolicy(q, margin=0.0, first=2)
    assert [policy(None) for _ in range(3)] == [2, 1, 1]
    assert ModePolicy(q, constant=0, first=2)(None) == 0  # a kept constant mode wins
    agent = DQNModes(
        shares=[0.0, 1.0], reinject=[False], rules=["redundant"], first_mode="redundant"
    )
    assert agent._first() == agent.modes.index("redundant")
    with pytest.raises(ConfigError, match="first_mode 'ecf' is not one of its modes"):
        DQNModes(shares=[0.0], reinject=[False], rules=["minrtt"], first_mode="ecf")
