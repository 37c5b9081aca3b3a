"""Tests of the batched environment (envs.vector_env.MultipathVectorEnv): the
same trajectories as its single environments, Gymnasium's vector API
(spaces, next-step autoreset, infos with masks, reset masks), its
registration, and its errors. Apps are small (200 kB) to keep this fast."""

import gymnasium as gym
import numpy as np
import pytest

from envs.errors import ConfigError
from envs.gym_env import DECISION_REWARDS_KEY, ENV_ID, MultipathSchedulingEnv, _rllib_env_creator
from envs.vector_env import MultipathVectorEnv

APP = {"kind": "bulk", "size_bytes": 200_000}
SCENARIO = {"name": "static_4g_5g", "paths": [{"link": "4g"}, {"link": "5g"}]}


def policy(obs: np.ndarray) -> np.ndarray:
    """A batched array policy that depends on the state: the path whose first
    feature is the smaller (any deterministic function of the state would do)."""
    obs = np.atleast_2d(obs)
    half = obs.shape[1] // 2
    return (obs[:, 0] > obs[:, half]).astype(np.int64)


def drive_singles(envs, seed: int, steps: int):
    """The single environments driven as Gymnasium's next-step autoreset drives
    them: per step ``(obs, rewards, terminated, truncated, final infos)``."""
    obs = np.stack([env.reset(seed=seed + i)[0] for i, env in enumerate(envs)])
    done = [False] * len(envs)
    out = []
    for _ in range(steps):
        acts = policy(obs)
        rows, rew, term, trunc, finals = [], [], [], [], {}
        for i, env in enumerate(envs):
            if done[i]:
                o, _ = env.reset()
                r, te, tr = 0.0, False, False
                done[i] = False
            else:
                o, r, te, tr, info = env.step(int(acts[i]))
                if te or tr:
                    finals[i] = info
                    done[i] = True
            rows.append(o)
            rew.append(r)
            term.append(te)
            trunc.append(tr)
        obs = np.stack(rows)
        out.append((obs, np.array(rew), np.array(term), np.array(trunc), finals))
    return out


@pytest.mark.parametrize(
    "kwargs",
    [
        {},  # the completion MDP
        {"reward": "goodput"},
        {"reward": "packet_rate", "max_steps": 60},  # per-decision credits; truncation
    ],
    ids=["completion", "goodput", "packet_rate-truncated"],
)
def test_vector_env_gives_the_single_environments_trajectories(kwargs):
    n, seed, steps = 3, 7, 400
    singles = drive_singles(
        [MultipathSchedulingEnv(SCENARIO, APP, **kwargs) for _ in range(n)], seed, steps
    )
    venv = MultipathVectorEnv(n, SCENARIO, APP, **kwargs)
    obs, info = venv.reset(seed=seed)
    assert info["emulator_seed"].tolist() == [seed, seed + 1, seed + 2]
    ends = 0
    for obs_s, rew_s, term_s, trunc_s, finals in singles:
        obs, rew, term, trunc, info = venv.step(policy(obs))
        assert obs.dtype == np.float32 and obs.shape == (n, venv.single_observation_space.shape[0])
        np.testing.assert_array_equal(obs, obs_s)
        np.testing.assert_array_equal(rew, rew_s)
        np.testing.assert_array_equal(term, term_s)
        np.testing.assert_array_equal(trunc, trunc_s)
        ended = term | trunc
        if ended.any():
            assert info["_metrics"].tolist() == ended.tolist()
            for i in np.flatnonzero(ended):
                single = finals[i]
                assert info["episode_steps"][i] == single["episode_steps"]
                for k, v in single["metrics"].items():
                    np.testing.assert_equal(info["metrics"][k][i], v)
                if DECISION_REWARDS_KEY in single:
                    np.testing.assert_array_equal(
                        info[DECISION_REWARDS_KEY][i], single[DECISION_REWARDS_KEY]
                    )
            ends += int(ended.sum())
        else:
            assert "metrics" not in info
    assert ends >= n  # every instance ended at least once and was reset


def test_completion_instances_that_end_apart_keep_the_single_trajectories():
    """The completion MDP's compiled batch step (envs.gym_core.step_runs): instances
    truncated by max_steps at different times (one restarted by a reset mask), some
    waiting for their autoreset while the others step, give the single environments'
    observations, rewards and flags."""
    n, kwargs = 3, {"max_steps": 25}
    venv = MultipathVectorEnv(n, SCENARIO, APP, **kwargs)
    singles = [MultipathSchedulingEnv(SCENARIO, APP, **kwargs) for _ in range(n)]
    obs, _ = venv.reset(seed=3)
    single_obs = np.stack([env.reset(seed=3 + i)[0] for i, env in enumerate(singles)])
    done = [False] * n
    ends = 0
    for t in range(80):
        if t == 10:  # instance 1 starts over: its episode ends 10 steps after the others'
            obs, _ = venv.reset(seed=11, options={"reset_mask": np.array([False, True, False])})
            single_obs[1] = singles[1].reset(seed=12)[0]
            np.testing.assert_array_equal(obs, single_obs)
        acts = policy(obs)
        obs, rew, term, trunc, info = venv.step(acts)
        for i, env in enumerate(singles):
            if done[i]:
                o, _ = env.reset()
                r, te, tr, fin = 0.0, False, False, {}
                done[i] = False
            else:
                o, r, te, tr, fin = env.step(int(acts[i]))
                done[i] = te or tr
            single_obs[i] = o
            np.testing.assert_array_equal(obs[i], o)
            assert (rew[i], term[i], trunc[i]) == (r, te, tr)
            if done[i]:
                ends += 1
                assert info["episode_steps"][i] == fin["episode_steps"] == 25
                np.testing.assert_array_equal(
                    info[DECISION_REWARDS_KEY][i], fin[DECISION_REWARDS_KEY]
                )
    assert ends >= 2 * n


def test_vector_env_spaces_and_autoreset():
    venv = MultipathVectorEnv(4, SCENARIO, APP, max_steps=5)
    assert venv.metadata["autoreset_mode"] == gym.vector.AutoresetMode.NEXT_STEP
    assert venv.observation_space.shape == (4, venv.single_observation_space.shape[0])
    assert isinstance(venv.action_space, gym.spaces.MultiDiscrete)
    assert venv.action_space.nvec.tolist() == [2, 2, 2, 2]
    obs, _ = venv.reset(seed=0)
    assert venv.observation_space.contains(obs)
    for _ in range(5):
        obs, rew, term, trunc, info = venv.step(np.zeros(4, np.int64))
    assert trunc.all() and not term.any()
    # the next step resets every instance: reward 0, nothing ended, new seeds drawn
    obs, rew, term, trunc, info = venv.step(np.ones(4, np.int64))
    assert rew.tolist() == [0.0] * 4 and not (term | trunc).any()
    assert info["_emulator_seed"].all() and "metrics" not in info
    assert venv.observation_space.contains(obs)


def test_reset_mask_resets_only_the_masked_instances():
    venv = MultipathVectorEnv(3, SCENARIO, APP)
    obs0, _ = venv.reset(seed=0)
    obs = obs0
    for _ in range(20):
        obs, *_ = venv.step(policy(obs))
    mask = np.array([False, True, False])
    obs2, info = venv.reset(seed=0, options={"reset_mask": mask})
    assert info["_emulator_seed"].tolist() == mask.tolist() and info["emulator_seed"][1] == 1
    np.testing.assert_array_equal(obs2[1], obs0[1])  # instance 1 starts over with seed 0 + 1
    np.testing.assert_array_equal(obs2[[0, 2]], obs[[0, 2]])  # the others go on


def test_copy_false_returns_the_batch_the_next_call_overwrites():
    venv = MultipathVectorEnv(2, SCENARIO, APP, copy=False)
    obs, _ = venv.reset(seed=0)
    first = obs.copy()
    nxt, *_ = venv.step(np.array([1, 1]))
    assert nxt is obs and not np.array_equal(first, nxt)
    copied = MultipathVectorEnv(2, SCENARIO, APP)
    a, _ = copied.reset(seed=0)
    b, *_ = copied.step(np.array([1, 1]))
    assert a is not b and np.array_equal(a, first)


def test_make_vec_and_rllib_build_the_vector_env():
    venv = gym.make_vec(
        ENV_ID, num_envs=2, vectorization_mode="vector_entry_point", scenario=SCENARIO, app=APP
    )
    assert isinstance(venv, MultipathVectorEnv) and venv.num_envs == 2
    assert isinstance(_rllib_env_creator({"num_envs": 3, "app": APP}), MultipathVectorEnv)
    assert isinstance(_rllib_env_creator({"app": APP}), MultipathSchedulingEnv)


def test_vector_env_errors():
    with pytest.raises(ConfigError, match="num_envs: expected a whole number >= 1"):
        MultipathVectorEnv(0)
    venv = MultipathVectorEnv(2, SCENARIO, APP)
    with pytest.raises(RuntimeError, match="before reset"):
        venv.step(np.zeros(2, np.int64))
    obs, _ = venv.reset(seed=3)
    with pytest.raises(ValueError, match=r"integer array of shape \(2,\)"):
        venv.step(np.zeros(3, np.int64))
    with pytest.raises(ValueError, match=r"integer array of shape \(2,\)"):
        venv.step(np.zeros(2))
    steps_before = [e.steps for e in venv.envs]
    with pytest.raises(ValueError, match=r"instance 1's action 2 is outside \[0, 2\)"):
        venv.step(np.array([0, 2]))
    with pytest.raises(ValueError, match=r"instance 0's action -1 is outside \[0, 2\)"):
        venv.step(np.array([-1, 0]))
    assert [e.steps for e in venv.envs] == steps_before  # nothing stepped
    with pytest.raises(ValueError, match="one per instance"):
        venv.reset(seed=[1, 2, 3])
    with pytest.raises(ValueError, match="reset_mask: expected a bool array"):
        venv.reset(options={"reset_mask": np.array([1, 0])})


def test_rllib_env_runner_steps_the_vector_env():
    """RLlib's own env runner, in this process (Ray not started), builds the
    vector env through register_rllib and samples complete steps from it."""
    import ray
    from ray.rllib.algorithms.dqn import DQNConfig
    from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner

    from envs.gym_env import register_rllib

    small = {"kind": "bulk", "size_bytes": 30_000}  # ~25 decisions: episodes end and reset
    config = (
        DQNConfig()
        .environment(register_rllib(), env_config={"scenario": SCENARIO, "app": small})
        .env_runners(num_envs_per_env_runner=3, gym_env_vectorize_mode="vector_entry_point")
    )
    runner = SingleAgentEnvRunner(config=config)
    assert isinstance(runner.env.unwrapped, MultipathVectorEnv)
    assert runner.env.unwrapped.num_envs == 3
    episodes = runner.sample(num_timesteps=300, random_actions=True)
    assert sum(len(e) for e in episodes) == 300
    assert sum(e.is_done for e in episodes) >= 6  # every instance ended and reset more than once
    runner.stop()
    assert not ray.is_initialized()


def test_same_steps_as_gymnasiums_sync_vector_env():
    """Gymnasium's own SyncVectorEnv over the same single environments (an
    independent implementation of the vector API) gives the same batches."""
    ref = gym.vector.SyncVectorEnv(
        [lambda: MultipathSchedulingEnv(SCENARIO, APP, max_steps=150) for _ in range(4)]
    )
    venv = MultipathVectorEnv(4, SCENARIO, APP, max_steps=150)
    a, _ = ref.reset(seed=11)
    b, _ = venv.reset(seed=11)
    for _ in range(400):
        np.testing.assert_array_equal(a, b)
        a, ra, ta, ua, ia = ref.step(policy(a))
        b, rb, tb, ub, ib = venv.step(policy(b))
        np.testing.assert_array_equal(ra, rb)
        assert ta.tolist() == tb.tolist() and ua.tolist() == ub.tolist()
        assert (
            ia.get("_episode_steps", np.zeros(4, bool)).tolist()
            == ib.get("_episode_steps", np.zeros(4, bool)).tolist()
        )


def test_benchmark_env_workloads_run():
    from benchmarks.emulator_speed import _gym_env, _vector_env

    single = _gym_env(steps=300)
    batched = _vector_env(steps=256, n_envs=4)
    assert single["count"] == 300 and single["per_cpu_s"] > 0 and single["unit"] == "steps"
    assert batched["count"] == 256 and batched["per_cpu_s"] > 0


def test_benchmark_vector_collection_counts_each_instances_decisions():
    """The ``vector_collect`` workload: every instance's task counted up to its
    budget of decisions and no further (an instance that ended autoresets and
    keeps stepping, uncounted), the same checksum on a second run."""
    from benchmarks.emulator_speed import _vector_collect

    out = _vector_collect(n_envs=3, decisions=25)
    assert out["count"] == 75 and out["unit"] == "decisions" and out["per_cpu_s"] > 0
    assert _vector_collect(n_envs=3, decisions=25)["checksum"] == out["checksum"]
