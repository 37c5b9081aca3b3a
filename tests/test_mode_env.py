"""The mode MDP as a Gymnasium environment (baselines/modes/gym_env.py): the
episode run_episode emulates, bit for bit, one step per epoch; episodes left
half-way unwind their worker thread."""

import threading

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from baselines.modes import ModeScheduler
from baselines.modes.gym_env import ENV_ID, MODE_HIGH, MODE_LOW, ModeEnv
from envs import run_episode
from envs.errors import ConfigError

SCEN = {
    "paths": [
        {"bandwidth_mbps": 20, "rtt_ms": 30, "rtt_std_ms": 3, "loss": 0.002},
        {"bandwidth_mbps": 10, "rtt_ms": 80, "rtt_std_ms": 8},
    ]
}
APP = {"kind": "bulk", "size_bytes": 600_000}


def _policy(n_modes: int):
    """A deterministic chooser that changes mode with the state."""
    w = np.random.default_rng(0).normal(size=(len(MODE_LOW), n_modes))

    def choose(state: np.ndarray) -> int:
        return int(np.argmax(np.tanh(state) @ w))

    return choose


def test_the_environment_emulates_run_episode_bit_for_bit():
    env = ModeEnv(SCEN, APP, time_unit_s=0.05)
    choose = _policy(len(env.modes))
    sched = ModeScheduler(env.modes, choose)
    ref = run_episode(SCEN, APP, sched, seed=11).metrics
    obs, info = env.reset(seed=11)
    states, times, rewards = [obs], [info["t_s"]], []
    done = False
    while not done:
        obs, r, terminated, truncated, info = env.step(choose(obs))
        rewards.append(r)
        done = terminated or truncated
        if not done:
            states.append(obs)
            times.append(info["t_s"])
    assert terminated and not truncated
    assert info["metrics"]["download_time_s"] == ref["download_time_s"]
    assert info["episode_steps"] == len(sched.trace) == len(states)
    assert len({m for _, m, _, _ in sched.trace}) > 1  # the chooser did change mode
    for s, (ts, *_) in zip(states, sched.trace, strict=True):
        np.testing.assert_array_equal(s, ts)
    assert times == [t for _, _, t, _ in sched.trace]
    # the undiscounted return: minus the time from the first decision to the end, in units
    assert sum(rewards) == pytest.approx(-(info["t_s"] - times[0]) / 0.05)
    assert all(r <= 0 for r in rewards)


def test_it_passes_gymnasiums_checker_and_is_registered():
    env = ModeEnv(SCEN, APP)
    check_env(env, skip_render_check=True)
    env.close()
    made = gym.make(ENV_ID, scenario=SCEN, app=APP)
    assert made.observation_space.shape == MODE_LOW.shape == MODE_HIGH.shape
    made.close()


def _episode_threads() -> int:
    return sum(t.name == "falcon-mode-episode" for t in threading.enumerate())


def test_an_episode_left_half_way_unwinds_its_thread():
    before = _episode_threads()
    env = ModeEnv(SCEN, APP)
    env.reset(seed=1)
    env.step(0)
    assert _episode_threads() == before + 1
    env.reset(seed=2)  # the first episode is abandoned
    assert _episode_threads() == before + 1
    env.close()
    assert _episode_threads() == before
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(0)


def test_max_steps_truncates_and_bad_input_is_refused():
    env = ModeEnv(SCEN, APP, max_steps=2)
    env.reset(seed=0)
    assert env.step(1)[2:4] == (False, False)
    _, _, terminated, truncated, info = env.step(1)
    assert (terminated, truncated, info["episode_steps"]) == (False, True, 2)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="outside Discrete"):
        env.step(len(env.modes))
    env.close()
    three = {"paths": SCEN["paths"] + [SCEN["paths"][0]]}
    with pytest.raises(ConfigError, match="exactly 2 paths"):
        ModeEnv(three, APP)
    with pytest.raises(ConfigError, match="time_unit_s"):
        ModeEnv(SCEN, APP, time_unit_s=0)


def test_a_vector_of_environments_steps_the_single_environments_trajectories():
    n = 3
    vec = gym.vector.SyncVectorEnv([lambda: ModeEnv(SCEN, APP) for _ in range(n)])
    obs, _ = vec.reset(seed=[4, 5, 6])
    actions = np.array([0, 3, 9])
    for _ in range(4):
        obs, rewards, *_ = vec.step(actions)
    for i, seed in enumerate((4, 5, 6)):
        single = ModeEnv(SCEN, APP)
        o, _ = single.reset(seed=seed)
        for _ in range(4):
            o, r, *_ = single.step(int(actions[i]))
        np.testing.assert_array_equal(o, obs[i])
        assert r == rewards[i]
        single.close()
    vec.close()
