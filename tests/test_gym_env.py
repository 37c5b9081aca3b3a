"""Tests of the Gymnasium environment (envs.gym_env): API conformance, episode
semantics, seeding, action semantics, rewards, vectorised use, registration.
Apps are small (200 kB, ~155 packets) to keep the suite fast."""

import math

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from envs.errors import ConfigError
from envs.gym_env import (
    ENV_ID,
    FEATURES,
    RATE_SCALE_PKTS,
    RTT_SCALE_S,
    MultipathSchedulingEnv,
    feature_names,
    register_rllib,
)
from envs.runner import run_episode
from envs.scheduler import Scheduler

APP = {"kind": "bulk", "size_bytes": 200_000}
SCENARIO = {"name": "static_4g_5g", "paths": [{"link": "4g"}, {"link": "5g"}]}


def rollout(env, seed, policy):
    """Run one episode; returns (observations, rewards, actions, last info, terminated)."""
    obs, _ = env.reset(seed=seed)
    observations, rewards, actions = [obs], [], []
    rng = np.random.default_rng(1234)
    while True:
        a = policy(obs, rng)
        obs, r, term, trunc, info = env.step(a)
        observations.append(obs)
        rewards.append(r)
        actions.append(a)
        if term or trunc:
            return np.array(observations), np.array(rewards), actions, info, term


def random_policy(obs, rng):
    return int(rng.integers(2))


def test_check_env_passes():
    env = MultipathSchedulingEnv(SCENARIO, APP, reward="goodput")
    check_env(env.unwrapped, skip_render_check=True)


def test_spaces_and_initial_observation():
    env = MultipathSchedulingEnv(SCENARIO, APP, reward="goodput")
    assert env.observation_space.shape == (8,)
    assert env.observation_space.dtype == np.float32
    assert env.action_space == gym.spaces.Discrete(2)
    assert feature_names(2)[:4] == [f"path0_{f}" for f in FEATURES]
    obs, info = env.reset(seed=0)
    assert obs.dtype == np.float32 and obs.shape == (8,)
    # path 0: srtt = the handshake's round trip (envs.setup); path 1, not yet
    # validated: no RTT sample, srtt = 0.333 s; cwnd = 32 packets (initial window)
    rtt = env.connection.paths[0].srtt / RTT_SCALE_S
    assert env.connection.paths[0].has_rtt_sample and rtt < 1.0
    np.testing.assert_allclose(obs[3], rtt, rtol=1e-6)
    np.testing.assert_allclose(obs[0], 32 / rtt / RATE_SCALE_PKTS, rtol=1e-6)
    np.testing.assert_allclose(obs[7], 0.333 / RTT_SCALE_S, rtol=1e-6)
    assert obs[1] == 0.0  # nothing in flight yet
    assert "emulator_seed" in info
    # the returned observation is the caller's own: writing it changes no later one
    obs[:] = -1
    assert env._observe()[0] != -1


@pytest.mark.parametrize("policy", [lambda o, r: 0, random_policy], ids=["path0", "random"])
def test_full_episode_terminates_with_app_complete(policy):
    env = MultipathSchedulingEnv(SCENARIO, APP, reward="goodput")
    obs, rewards, actions, info, term = rollout(env, 3, policy)
    assert term
    assert env.application.done
    assert env.connection.delivered == APP["size_bytes"]
    m = info["metrics"]
    assert m["timed_out"] == 0.0 and m["download_time_s"] > 0
    assert info["episode_steps"] == len(actions)
    assert np.all(np.isfinite(obs)) and np.all(obs >= 0)
    # goodput reward = in-order bytes delivered during the step / payload
    payload = env.connection.payload
    assert np.all(rewards >= 0)
    np.testing.assert_allclose(rewards.sum(), APP["size_bytes"] / payload, rtol=1e-9)
    assert sum(p.packets_sent for p in env.connection.paths) >= len(actions)
    with pytest.raises(RuntimeError):
        env.step(0)


def test_same_seed_same_trajectory_different_seed_differs():
    env = MultipathSchedulingEnv(SCENARIO, APP, reward="goodput")
    o1, r1, a1, _, _ = rollout(env, 7, random_policy)
    o2, r2, a2, _, _ = rollout(env, 7, random_policy)
    assert a1 == a2
    np.testing.assert_array_equal(o1, o2)
    np.testing.assert_array_equal(r1, r2)
    o3, r3, _, _, _ = rollout(env, 8, random_policy)
    assert o1.shape != o3.shape or not np.array_equal(o1, o3)
    # a second, independent instance reproduces the same trajectory
    o4, r4, _, _, _ = rollout(
        MultipathSchedulingEnv(SCENARIO, APP, reward="goodput"), 7, random_policy
    )
    np.testing.assert_array_equal(o1, o4)
    np.testing.assert_array_equal(r1, r4)


def test_reset_drops_the_finished_emulations_events():
    """A reset clears the previous emulation's simulator: its queued events and its
    connection as an event handler, which would tie it into reference cycles."""
    env = MultipathSchedulingEnv(SCENARIO, APP)
    env.reset(seed=1)
    for _ in range(5):
        env.step(0)
    old = env.emulation.sim
    assert old.pending > 0
    env.reset(seed=2)
    assert env.emulation.sim is not old and old.pending == 0


def test_chosen_path_carries_the_packet():
    env = MultipathSchedulingEnv(SCENARIO, APP, reward="goodput")
    env.reset(seed=5)
    rng = np.random.default_rng(0)
    steps = 0
    while True:
        a = int(rng.integers(2))
        before = [p.packets_sent for p in env.connection.paths]
        _, _, term, trunc, _ = env.step(a)
        steps += 1
        if term or trunc:
            break
        # the packet leaves on the chosen path before the next decision,
        # also when that path had no room (it waits for the window to open)
        assert env.connection.paths[a].packets_sent > before[a]
    assert steps > 100


class _Alternate(Scheduler):
    def reset(self, view):
        self.i = 0

    def decide(self, view):
        self.i ^= 1
        return self.i


def test_env_reproduces_the_plain_emulator_bit_for_bit():
    """Driving the env with a policy equal to a Scheduler gives exactly the
    run that the scheduler gets from run_episode with the same emulator seed."""
    env = MultipathSchedulingEnv(SCENARIO, APP, reward="goodput")
    env.reset(seed=11)
    i = 0
    while True:
        i ^= 1
        _, _, term, trunc, info = env.step(i)
        if term or trunc:
            break
    res = run_episode(env.scenario, APP, _Alternate(), env.emulator_seed)
    for k in ("download_time_s", "events", "packets_sent", "path0_bytes", "path1_bytes"):
        assert info["metrics"][k] == res.metrics[k], k


@pytest.mark.parametrize("seed", [0, 3])
def test_reset_seed_is_the_emulator_seed_of_an_evaluate_run(seed):
    """reset(seed=s) runs the episode falcon.evaluate's run with seed s runs
    (falcon.jobs.run_episode_job): a seed means the same everywhere."""
    from falcon.jobs import Job, run_episode_job

    env = MultipathSchedulingEnv(SCENARIO, APP, reward="goodput")
    _, info = env.reset(seed=seed)
    assert info["emulator_seed"] == env.emulator_seed == seed
    i = 0
    while True:
        i ^= 1
        _, _, term, trunc, info = env.step(i)
        if term or trunc:
            break
    job = Job(0, "s", "a", "alternate", seed, SCENARIO, APP, _Alternate())
    metrics = run_episode_job(job)["metrics"]
    for k in ("download_time_s", "events", "packets_sent", "path0_bytes", "path1_bytes"):
        assert info["metrics"][k] == metrics[k], k
    env.reset()  # unseeded resets go on drawing emulator seeds from np_random
    first = env.emulator_seed
    env.reset(seed=seed)
    env.reset()
    assert env.emulator_seed == first


@pytest.mark.parametrize("reward", ["goodput", "goodput_rate", "ack_rate", "packet_rate"])
def test_rewards_positive_and_finite(reward):
    env = MultipathSchedulingEnv(SCENARIO, APP, reward=reward)
    _, rewards, _, _, term = rollout(env, 2, random_policy)
    assert term
    assert np.all(np.isfinite(rewards)) and np.all(rewards >= 0)
    assert rewards.sum() > 0


def test_ack_rate_reward_matches_rtt_scale():
    """A path with ~30 ms RTT acks a packet within roughly 30-100 ms, so the
    per-packet credit 0.1 s / time_to_ack lies in about (0.3, 4)."""
    env = MultipathSchedulingEnv(SCENARIO, APP, reward="ack_rate")
    _, rewards, _, _, _ = rollout(env, 2, lambda o, r: 0)
    nz = rewards[rewards > 0]
    assert nz.size > 0
    assert 0.2 < np.median(nz) < 4.0


def test_packet_rate_credits_every_decision_with_its_own_packet():
    """packet_rate: the final info attributes 0.1 s / (t_ack - t_decision) to
    each step's own decision; the step rewards hand out the same credits as
    their packets' fates become known, so both sum to the same return. On a
    fast (20 ms) + slow (100 ms, 5 Mbit/s) pair, decisions that pick the slow
    path earn far less than those that pick the fast one."""
    scenario = {
        "name": "fast_slow",
        "paths": [
            {"bandwidth_mbps": 100, "rtt_ms": 20, "rtt_std_ms": 2, "loss": 0.001},
            {"bandwidth_mbps": 5, "rtt_ms": 100, "rtt_std_ms": 20, "loss": 0.01},
        ],
    }
    env = MultipathSchedulingEnv(scenario, APP, reward="packet_rate")
    _, rewards, actions, info, term = rollout(env, 3, random_policy)
    credits = info["decision_rewards"]
    assert term and credits.dtype == np.float32 and credits.shape == (len(actions),)
    assert np.all(np.isfinite(credits)) and np.all(credits >= 0)
    assert rewards.sum() == pytest.approx(float(credits.sum(dtype=np.float64)), rel=1e-5)
    acts = np.array(actions)
    fast, slow = np.median(credits[acts == 0]), np.median(credits[acts == 1])
    assert 1.0 < fast < 5.0  # about 0.1 s / 20-100 ms
    assert slow < 0.5 * fast


def test_truncation_by_max_steps_and_max_duration():
    env = MultipathSchedulingEnv(SCENARIO, APP, max_steps=10, reward="goodput")
    env.reset(seed=0)
    for _ in range(10):
        _, _, term, trunc, info = env.step(0)
    assert trunc and not term
    assert info["episode_steps"] == 10 and info["metrics"]["timed_out"] == 1.0

    env = MultipathSchedulingEnv(SCENARIO, APP, max_duration_s=0.05, reward="goodput")
    _, _, _, info, term = rollout(env, 0, lambda o, r: 0)
    assert not term
    assert info["metrics"]["timed_out"] == 1.0
    assert env.connection.sim.now <= 0.05


def test_scenario_sampler_draws_from_np_random():
    seen = []

    def sampler(rng):
        loss = float(rng.uniform(0.0, 0.02))
        seen.append(loss)
        return {"paths": [{"link": "4g", "loss": loss}, {"link": "wlan"}]}

    env = MultipathSchedulingEnv(app=APP, scenario_sampler=sampler, reward="goodput")
    assert env.n_paths == 2
    seen.clear()
    env.reset(seed=1)
    env.reset(seed=1)
    env.reset(seed=2)
    assert seen[0] == seen[1] != seen[2]
    assert env.scenario["paths"][0]["loss"] == seen[2]
    with pytest.raises(ConfigError):
        env.reset(options={"scenario": {"paths": [{"link": "4g"}]}})


def test_bad_arguments():
    with pytest.raises(ConfigError):
        MultipathSchedulingEnv(SCENARIO, APP, reward="nope")
    env = MultipathSchedulingEnv(SCENARIO, APP, reward="goodput")
    env.reset(seed=0)
    with pytest.raises(ValueError):
        env.step(2)


def test_sync_vector_env_two_envs():
    venv = gym.vector.SyncVectorEnv(
        [lambda: MultipathSchedulingEnv(SCENARIO, APP, reward="goodput") for _ in range(2)]
    )
    obs, _ = venv.reset(seed=[0, 1])
    assert obs.shape == (2, 8) and obs.dtype == np.float32
    finished = 0
    for t in range(400):
        obs, rew, term, trunc, info = venv.step(np.array([t % 2, 1]))
        assert obs.shape == (2, 8) and rew.shape == (2,)
        assert np.all(np.isfinite(rew))
        finished += int(term.sum())
        if finished:
            assert "metrics" in info
            break
    assert finished >= 1
    venv.close()


def test_gymnasium_make():
    env = gym.make(ENV_ID, app=APP, reward="goodput")
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    obs, r, term, trunc, info = env.step(env.action_space.sample())
    assert math.isfinite(r)
    env.close()


def test_register_rllib_does_not_start_ray():
    ray = pytest.importorskip("ray")
    from ray.tune.registry import ENV_CREATOR, _global_registry

    name = register_rllib("falcon-multipath-test")
    assert name == "falcon-multipath-test"
    assert _global_registry.contains(ENV_CREATOR, name)
    assert not ray.is_initialized()
    env = _global_registry.get(ENV_CREATOR, name)({"app": APP})
    assert isinstance(env, MultipathSchedulingEnv)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (19,)  # the default (completion) MDP, two paths
