"""The RLlib backend of DQN-On (agent.backend=rllib): option checking, the
RLlib config and the weight extraction without starting Ray (fast), and a
tiny real training run (slow: starting Ray and building the algorithm takes
~20 s on the 2-core development machine). The per-decision reward's
attribution is checked on an episode built by hand (no Ray started)."""

from __future__ import annotations

import numpy as np
import pytest

import envs
from baselines.dqn.dqn_on import DQNOn
from envs.errors import ConfigError

SCENARIO = {"name": "static_4g_5g", "paths": [{"link": "4g"}, {"link": "5g"}]}
APP = {"kind": "bulk", "size_bytes": 200_000}


def test_backend_selection_and_options():
    assert DQNOn(reward="packet_rate").backend == "torch"
    agent = DQNOn(
        reward="packet_rate", backend="rllib", rllib={"iterations": 2, "num_env_runners": 1}
    )
    assert agent.backend == "rllib" and agent.rllib_options["iterations"] == 2
    assert agent.rllib_options["env_reward"] is None  # defaults filled in: the agent's MDP
    with pytest.raises(ConfigError, match="backend"):
        DQNOn(reward="packet_rate", backend="tensorflow")
    with pytest.raises(ConfigError, match="unknown option"):
        DQNOn(reward="packet_rate", backend="rllib", rllib={"iters": 2})
    with pytest.raises(ConfigError, match="env_reward"):
        DQNOn(reward="packet_rate", backend="rllib", rllib={"env_reward": "throughput"})
    assert agent.rllib_options["num_envs_per_env_runner"] == 1  # null (the default): one
    for bad in (0, True, "2", 1.5):
        with pytest.raises(ConfigError, match="num_envs_per_env_runner: must be a positive"):
            DQNOn(reward="packet_rate", backend="rllib", rllib={"num_envs_per_env_runner": bad})


def test_rllib_config_and_weight_extraction_without_ray():
    import ray

    from baselines.dqn.rllib_backend import (
        attribute_decision_rewards,
        build_config,
        extract_weights,
        module_q_values,
    )
    from envs.gym_env import MultipathSchedulingEnv

    agent = DQNOn(
        reward="packet_rate",
        backend="rllib",
        hidden=[32, 32, 32],
        epsilon=0.3,
        rllib={"iterations": 1},
    )
    agent.build(2)
    cfg = build_config(agent, SCENARIO, APP, seed=0, options=agent.rllib_options)
    assert not ray.is_initialized()
    assert cfg.lr == 1e-3 and cfg.gamma == 0.9 and cfg.tau == 0.01 and not cfg.dueling
    assert cfg.train_batch_size_per_learner == 32 and cfg.replay_buffer_config["capacity"] == 50_000
    assert cfg.env_config["reward"] == "packet_rate"
    # per-decision credits: complete episodes, rewards attributed at the episode's end
    assert cfg.batch_mode == "complete_episodes"
    assert cfg.callbacks_on_episode_end is attribute_decision_rewards
    assert cfg.training_intensity == 32 / 4  # the torch backend's replay ratio
    # the env runner steps the vector environment (one instance unless told)
    assert cfg.gym_env_vectorize_mode == "vector_entry_point"
    assert cfg.num_envs_per_env_runner == 1
    step_rewards = build_config(
        agent, SCENARIO, APP, 0, {**agent.rllib_options, "env_reward": "goodput_rate"}
    )
    assert step_rewards.batch_mode == "truncate_episodes"
    env = MultipathSchedulingEnv(SCENARIO, APP, reward="packet_rate")
    module = cfg.get_rl_module_spec(env=env).build()
    states = np.random.default_rng(0).uniform(0, 5, (16, 8)).astype(np.float32)
    weights = extract_weights(module, agent.spec, states)  # checked against the module's Q-values
    agent.learner.set_weights(weights)
    agent.deploy()
    np.testing.assert_allclose(agent.q_values(states), module_q_values(module, states), atol=1e-5)


@pytest.mark.parametrize("reward", ["completion", "packet_rate"])
def test_env_runner_steps_instances_together_with_their_decision_credits(reward):
    """``num_envs_per_env_runner``: RLlib's env runner (in this process, Ray not
    started) steps that many emulations in one call of the vector environment,
    one batched module pass for all, and every complete episode it returns
    carries its own decisions' credits (the episode-end callback through the
    vector environment's per-instance infos)."""
    from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner

    from baselines.dqn.rllib_backend import build_config
    from envs.vector_env import MultipathVectorEnv

    agent = DQNOn(reward=reward, backend="rllib", rllib={"num_envs_per_env_runner": 3})
    agent.build(2)
    small = {"kind": "bulk", "size_bytes": 30_000}  # ~25 decisions an episode
    runner = SingleAgentEnvRunner(
        config=build_config(agent, SCENARIO, small, 0, agent.rllib_options)
    )
    try:
        venv = runner.env.unwrapped
        assert isinstance(venv, MultipathVectorEnv) and venv.num_envs == 3
        episodes = runner.sample(num_episodes=7)  # each instance ends and resets twice or more
        assert len(episodes) == 7 and all(e.is_done for e in episodes)
        for e in episodes:
            credits = e.get_infos(-1)["decision_rewards"]
            assert len(credits) == len(e) > 0
            np.testing.assert_allclose(e.get_rewards(), credits, rtol=1e-6)
    finally:
        runner.stop()


def test_episode_end_callback_attributes_the_decision_credits():
    """The RLlib episode's step rewards (credits known during each step) are
    replaced by each decision's own credit from the final info."""
    from ray.rllib.env.single_agent_episode import SingleAgentEpisode

    from baselines.dqn.rllib_backend import attribute_decision_rewards
    from envs.gym_env import MultipathSchedulingEnv

    env = MultipathSchedulingEnv(SCENARIO, APP, reward="packet_rate")
    obs, info = env.reset(seed=0)
    episode = SingleAgentEpisode()
    episode.add_env_reset(observation=obs, infos=info)
    rng = np.random.default_rng(0)
    while not episode.is_done:
        a = int(rng.integers(2))
        obs, r, term, trunc, info = env.step(a)
        episode.add_env_step(
            observation=obs, action=a, reward=r, infos=info, terminated=term, truncated=trunc
        )
    credits = info["decision_rewards"]
    assert not np.allclose(episode.get_rewards(), credits)
    attribute_decision_rewards(episode=episode)
    np.testing.assert_allclose(episode.get_rewards(), credits, rtol=1e-6)


@pytest.mark.slow
def test_rllib_backend_trains_and_schedules():
    agent = DQNOn(
        reward="packet_rate",
        backend="rllib",
        rllib={"iterations": 2, "rollout_fragment_length": 100, "num_cpus": 1},
    )
    points = []
    out = agent.fit(SCENARIO, APP, seed=0, log=lambda m, step: points.append(m), progress=False)
    assert out["iterations"] == 2 and len(points) == 2 and out["env_steps"] >= 200
    res = envs.run_episode(SCENARIO, APP, agent, 0)  # the learned weights schedule in the emulator
    assert res.metrics["timed_out"] == 0
