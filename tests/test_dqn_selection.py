"""Choosing DQN-Off's deployed network among trained candidates
(baselines/dqn/selection.py, DQNOff.train_offline / select / fit)."""

from __future__ import annotations

import numpy as np
import pytest

import envs
from baselines.dqn.dqn_off import VALIDATION_SEED_OFFSET, DQNOff
from baselines.dqn.learner import BatchedDQN
from baselines.dqn.replay import ReplayMemory
from baselines.dqn.selection import (
    STATISTICS,
    download_cost,
    halving_rounds,
    interquartile_mean,
    successive_halving,
)
from baselines.rule_based import MinRTT
from envs.errors import ConfigError

SCENARIO = {
    "name": "fast_slow",
    "paths": [{"bandwidth_mbps": 50, "rtt_ms": 20}, {"bandwidth_mbps": 5, "rtt_ms": 200}],
}
APP = {"kind": "bulk", "size_bytes": 200_000}


def test_halving_rounds():
    assert [halving_rounds(n) for n in (1, 2, 3, 4, 9, 10, 48)] == [0, 1, 1, 2, 2, 3, 4]


def test_successive_halving_finds_the_lowest_mean_cost_and_spends_the_budget_on_the_survivors():
    true = [5.0, 3.0, 4.0, 1.0, 2.0, 6.0, 7.0, 8.0, 9.0]
    calls = []

    def cost(i, k):
        seed = 10 + k  # the k-th validation episode's seed
        calls.append((i, seed))
        return true[i] + 0.1 * (seed % 2)  # a seed effect shared by every candidate

    best, record = successive_halving(9, cost, budget=18, progress=lambda line: None)
    assert best == 3
    # 9 candidates, eta 3: two rounds of 9 episodes: one each, then three each for the best 3
    assert sorted(r["episodes"] for r in record) == [1] * 6 + [4] * 3
    assert {i for i, r in enumerate(record) if r["episodes"] == 4} == {3, 4, 1}
    assert record[3]["mean_cost"] == pytest.approx(1.0 + 0.1 * 2 / 4)
    assert len(calls) == 18
    assert {s for i, s in calls if i == 8} == {10}  # common seeds: the k-th episode has one seed
    assert {s for i, s in calls if i == 3} == {10, 11, 12, 13}


def test_download_cost_extrapolates_an_unfinished_episode():
    done = envs.run_episode(
        {"paths": [{"bandwidth_mbps": 20, "rtt_ms": 20}]},
        {"kind": "bulk", "size_bytes": 400_000},
        MinRTT(),
        0,
    ).metrics
    assert download_cost(done) == pytest.approx(np.log(done["download_time_s"]))
    # cut at half its download time: NaN download time, cost from the goodput so far
    half = envs.run_episode(
        {
            "paths": [{"bandwidth_mbps": 20, "rtt_ms": 20}],
            "max_duration_s": done["download_time_s"] / 2,
        },
        {"kind": "bulk", "size_bytes": 400_000},
        MinRTT(),
        0,
    ).metrics
    assert np.isnan(half["download_time_s"])
    cost = download_cost(half)
    assert np.isfinite(cost) and cost > np.log(half["elapsed_s"])
    assert abs(cost - np.log(done["download_time_s"])) < 0.7  # the same order as the finished time
    slower = {**half, "goodput_mbps": half["goodput_mbps"] / 2}
    assert download_cost(slower) == pytest.approx(cost + np.log(2))


def test_successive_halving_breaks_ties_towards_the_later_candidate():
    best, _ = successive_halving(4, lambda i, s: 1.0, budget=8)
    assert best == 3
    assert successive_halving(1, lambda i, s: 1.0, budget=0)[0] == 0


def test_the_median_statistic_ranks_by_the_typical_episode_not_the_tail():
    # candidate 0: usually fast, one slow episode in four; candidate 1: always a bit slower
    def cost(i, k):
        return (0.0 if k % 4 else 3.0) if i == 0 else 0.5

    by_mean, record = successive_halving(2, cost, budget=8)
    by_median, record_median = successive_halving(2, cost, budget=8, statistic="median")
    assert (by_mean, by_median) == (1, 0)
    assert record[0]["mean_cost"] == record[0]["cost"] == pytest.approx(0.75)
    assert record_median[0]["mean_cost"] == pytest.approx(0.75)
    assert record_median[0]["cost"] == 0.0
    with pytest.raises(ConfigError, match="unknown statistic 'mode'"):
        successive_halving(2, cost, budget=8, statistic="mode")


def test_the_interquartile_mean_drops_a_quarter_at_each_end():
    assert interquartile_mean([9.0, 1.0, 2.0, 3.0, -9.0, 4.0, 5.0, 6.0]) == pytest.approx(3.5)
    assert interquartile_mean([1.0, 2.0, 6.0]) == pytest.approx(3.0)  # below 4 values: the mean
    with pytest.raises(ConfigError, match="no values"):
        interquartile_mean([])


def test_the_interquartile_mean_ranks_between_the_mean_and_the_median():
    # candidate 0: fast on half its 8 episodes, slower on a quarter, very slow on a quarter;
    # candidate 1: always 0.4. The median reads the fast half (0.1), the mean weighs the
    # very slow quarter (2.5), the interquartile mean also sees the slower quarter (0.55).
    def cost(i, k):
        return (0.0, 0.0, 0.0, 0.0, 0.2, 2.0, 9.0, 9.0)[k] if i == 0 else 0.4

    ranks = {s: successive_halving(2, cost, budget=16, statistic=s)[0] for s in STATISTICS}
    assert ranks == {"mean": 1, "median": 0, "iqm": 1}
    _, record = successive_halving(2, cost, budget=16, statistic="iqm")
    assert record[0]["episodes"] == 8
    assert record[0]["cost"] == pytest.approx(0.55)


def test_successive_halving_rejects_impossible_settings():
    with pytest.raises(ConfigError, match="no candidate"):
        successive_halving(0, lambda i, s: 0.0, budget=1)
    with pytest.raises(
        ConfigError, match="validation_episodes: 2 cannot run each of the 3 candidates"
    ):
        successive_halving(3, lambda i, s: 0.0, budget=2)


@pytest.fixture(scope="module")
def logged():
    agent = DQNOff(seed=3, log_every=10**9)
    return agent.collect(SCENARIO, APP, seed=100, episodes=6, behaviour="rules", progress=False)


def test_one_network_one_checkpoint_is_the_plain_dqn_of_the_paper(logged):
    agent = DQNOff(seed=3, log_every=10**9)
    agent.train_offline(logged, 50, progress=False)
    # the same steps written out: one network, ReplayMemory's sampling
    ref = BatchedDQN(agent.spec, 1, agent.learner_config, seed=3)
    mem = ReplayMemory(len(logged), agent.spec.n_inputs, 1, seed=4)
    mem.extend(*logged.arrays())
    for _ in range(50):
        ref.update(*mem.sample(agent.learner_config.batch_size))
    assert len(agent.candidates) == 1
    for a, b in zip(agent.learner.get_weights(0), ref.get_weights(0)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_dqn_off_deploys_the_candidate_with_the_best_validation_episodes(logged):
    agent = DQNOff(seed=3, log_every=10**9)
    out = agent.train_offline(logged, 60, progress=False, models=3, checkpoints=2)
    assert out["candidates"] == 6 and [c[:2] for c in agent.candidates] == [
        (30, 0),
        (30, 1),
        (30, 2),
        (60, 0),
        (60, 1),
        (60, 2),
    ]
    got = agent.select(SCENARIO, APP, seed=7, episodes=12, progress=False)
    # every candidate, run by hand on the validation seeds it was given
    means = {}
    for rec in agent.selection_record:
        i = rec["candidate"]
        seeds = [7 + VALIDATION_SEED_OFFSET + k for k in range(rec["episodes"])]
        times = [
            envs.run_episode(SCENARIO, APP, agent._greedy(i), s).metrics["download_time_s"]
            for s in seeds
        ]
        assert rec["mean_cost"] == pytest.approx(np.mean(np.log(times)))  # geometric mean
        if rec["episodes"] == max(r["episodes"] for r in agent.selection_record):
            means[i] = np.mean(np.log(times))
    best = min(means, key=lambda i: (means[i], -i))
    assert got["selected_gradient_steps"] == agent.candidates[best][0]
    assert got["selected_model"] == agent.candidates[best][1]
    deployed = agent.learner.flat_weights(0)
    np.testing.assert_array_equal(deployed, agent.candidates[best][2])
    x = np.ones((1, agent.spec.n_inputs), np.float32)
    np.testing.assert_allclose(agent.q_values(x), agent._greedy(best).qnet(x), rtol=1e-6)


def test_fit_validates_its_selection_settings():
    with pytest.raises(ConfigError, match="selection: unknown 'best'"):
        DQNOff().fit(SCENARIO, APP, selection="best")
    with pytest.raises(ConfigError, match="validation_episodes: 47 cannot run each of the 48"):
        DQNOff().fit(SCENARIO, APP, validation_episodes=47)  # before any episode is logged
    with pytest.raises(ConfigError, match="checkpoints"):
        DQNOff().train_offline(_tiny_log(), 2, models=1, checkpoints=3)


def _tiny_log():
    agent = DQNOff(seed=0, log_every=10**9)
    return agent.collect(
        SCENARIO,
        {"kind": "bulk", "size_bytes": 20_000},
        seed=0,
        episodes=1,
        behaviour="rules",
        progress=False,
    )


def test_a_large_log_gets_at_least_min_passes_over_it(logged):
    agent = DQNOff(seed=3, log_every=10**9)
    out = agent.train_offline(logged, 10, progress=False, min_passes=2.0)
    assert out["gradient_steps"] == -(-2 * len(logged) // agent.learner_config.batch_size) > 10
    assert agent.train_offline(logged, 10, progress=False)["gradient_steps"] == 10


def test_the_agent_config_and_fit_declare_the_same_training_defaults():
    """configs/agent/dqn_off.yaml's train: section and DQNOff.fit's keyword
    defaults are two spellings of one set of defaults (Hydra's struct mode
    needs the keys in the YAML): they must never drift apart."""
    import inspect
    from pathlib import Path

    import yaml

    train = yaml.safe_load((Path(__file__).parents[1] / "configs/agent/dqn_off.yaml").read_text())[
        "train"
    ]
    params = inspect.signature(DQNOff.fit).parameters
    shared = [k for k in train if k in params]
    assert {"models", "checkpoints", "selection", "validation_episodes", "min_passes"} <= set(
        shared
    )
    assert {k: train[k] for k in shared} == {k: params[k].default for k in shared}
