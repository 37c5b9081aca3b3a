"""DQN-Off on the mode MDP beyond its behaviour log: approximate policy
iteration (``policy_rounds``: on-policy downloads with one random mode each,
their return-to-go from the deviation on, the refit on behaviour and
on-policy data together) and the online candidate (``online_episodes``: a
network learned online enters the selection)."""

import numpy as np
import pytest

import baselines.modes.learner as learner
from baselines.modes import DQNModes, make_modes
from baselines.modes.experience import collect_on_policy, mc_transitions
from envs.errors import ConfigError

SCEN = {"paths": [{"bandwidth_mbps": 20, "rtt_ms": 30}, {"bandwidth_mbps": 10, "rtt_ms": 80}]}
APP = {"kind": "bulk", "size_bytes": 600_000}


class _Hold:
    """A policy chooser that holds one mode (it has ``current``, as ModePolicy)."""

    def __init__(self, mode: int) -> None:
        self.mode, self.current = mode, None

    def __call__(self, state) -> int:
        return self.mode


def test_an_on_policy_episode_follows_the_policy_but_for_one_random_mode():
    modes = make_modes()
    episodes, starts = collect_on_policy(SCEN, APP, modes, lambda: _Hold(0), 7, 12, 0.3)
    assert len(episodes) == len(starts) == 12
    deviated = 0
    for e, start in zip(episodes, starts, strict=True):
        # before the deviation: the policy's mode; after it: the policy's again
        assert (e.modes[:start] == 0).all() and (e.modes[start + 1 :] == 0).all()
        deviated += int(e.modes[start] != 0)
    assert deviated >= 3  # 12 downloads of several epochs at p = 0.3: most deviate to another mode
    again, starts_again = collect_on_policy(SCEN, APP, modes, lambda: _Hold(0), 7, 12, 0.3)
    assert starts_again == starts
    assert [e.download_time_s for e in again] == [e.download_time_s for e in episodes]
    with pytest.raises(ConfigError, match="deviate_prob must be in"):
        collect_on_policy(SCEN, APP, modes, lambda: _Hold(0), 7, 1, 0.0)


def test_the_return_to_go_starts_at_the_given_epochs():
    modes = make_modes()
    episodes, starts = collect_on_policy(SCEN, APP, modes, lambda: _Hold(0), 3, 6, 0.3)
    data = mc_transitions(episodes, 0.05, starts)
    assert len(data.actions) == sum(len(e.modes) - s for e, s in zip(episodes, starts, strict=True))
    first = episodes[0]
    np.testing.assert_allclose(
        data.rewards[: len(first.modes) - starts[0]],
        -np.log1p((first.end_s - first.times[starts[0] :]) / 0.05),
        rtol=1e-6,
    )


def _agent(**kw):
    return DQNModes(
        shares=[0.0, 1.0], reinject=[False], rules=[], hidden=[8], switch_margins=[0.0], **kw
    )


FIT = dict(
    seed=5,
    seeds_per_mode=2,
    switching_episodes=2,
    gradient_steps=20,
    models=1,
    validation_episodes=1,
    progress=False,
)


def test_policy_rounds_log_the_greedy_policy_and_fit_again(monkeypatch):
    seeds = []
    real = learner.collect_on_policy

    def spy(scen, app, modes, make_policy, seed, episodes, deviate_prob):
        seeds.append(seed)
        return real(scen, app, modes, make_policy, seed, episodes, deviate_prob)

    monkeypatch.setattr(learner, "collect_on_policy", spy)
    plain = _agent().fit(SCEN, APP, **FIT)
    agent = _agent()
    out = agent.fit(SCEN, APP, policy_rounds=2, policy_episodes=3, **FIT)
    assert seeds == [
        5 + learner.POLICY_SEED_OFFSET,
        5 + learner.POLICY_SEED_OFFSET + learner.POLICY_ROUND_STRIDE,
    ]
    assert out["policy_rounds"] == 2 and plain["policy_rounds"] == 0
    # the refit is on the behaviour log and the on-policy downloads together
    assert out["transitions"] > plain["transitions"]


def test_policy_rounds_need_the_return_to_go_target():
    with pytest.raises(ConfigError, match="policy_rounds needs target: mc"):
        _agent(target="td").fit(SCEN, APP, policy_rounds=1, **FIT)


def test_the_online_candidate_enters_the_selection_and_deploys(monkeypatch, tmp_path):
    seen = {}

    def pick_last(n, evaluate, budget, progress=None, statistic="mean"):
        seen["n"] = n
        cost = evaluate(n - 1, 0)  # the online network, last margin, runs a validation episode
        return n - 1, [
            {"candidate": i, "episodes": 1, "mean_cost": cost, "cost": cost} for i in range(n)
        ]

    monkeypatch.setattr(learner, "successive_halving", pick_last)
    agent = DQNModes(
        shares=[0.0, 1.0],
        reinject=[False],
        rules=[],
        hidden=[8],
        switch_margins=[0.0, 0.3],
        constant_candidates=1,
    )
    offline_spec = None

    def keep_spec(*a, **kw):
        nonlocal offline_spec
        offline_spec = agent.spec
        return real_online(*a, **kw)

    real_online = agent._online_candidate
    monkeypatch.setattr(agent, "_online_candidate", keep_spec)
    out = agent.fit(
        SCEN,
        APP,
        online_episodes=3,
        online_learning_starts=4,
        **{**FIT, "validation_episodes": 7},
    )
    assert seen["n"] == 2 + 1 + 2  # margins, the constant, the online network with each margin
    assert out["online_selected"] == 1.0 and agent.constant_mode is None
    assert agent.switch_margin == 0.3
    assert agent.spec is not offline_spec and not agent.spec.normalises  # the online network's
    agent.save(tmp_path)
    again = DQNModes(model=str(tmp_path))
    state = np.linspace(0.1, 2.0, learner.n_inputs(2)).astype(np.float32)
    np.testing.assert_array_equal(again.q(state), agent.q(state))


def test_the_online_candidate_is_checked_before_logging(monkeypatch):
    def no_logging(*a, **kw):
        raise AssertionError("behaviour logged before the settings were checked")

    monkeypatch.setattr(learner, "collect_tasks", no_logging)
    with pytest.raises(ConfigError, match="online_episodes trains on one condition"):
        _agent().fit(SCEN, APP, online_episodes=2, tasks=[(SCEN, APP), (SCEN, APP)], **FIT)
    with pytest.raises(ConfigError, match="epsilon must be in"):
        _agent().fit(SCEN, APP, online_episodes=2, online_epsilon=2.0, **FIT)
