"""DQN-On on the mode MDP (baselines/modes/online.py): online DQN with the
project's torch learner (fast) and with RLlib's (its options without Ray;
a real training run is slow: starting Ray takes ~20 s here)."""

import numpy as np
import pytest

from baselines import make_scheduler
from baselines.modes.online import DQNModesOn
from envs import run_episode
from envs.errors import ConfigError

#: path 1 only slows a download: sending everything on path 0 is best
SCEN = {
    "paths": [
        {"bandwidth_mbps": 30, "rtt_ms": 20},
        {"bandwidth_mbps": 1, "rtt_ms": 150, "loss": 0.05},
    ]
}
APP = {"kind": "bulk", "size_bytes": 1_000_000}


def _agent(**kw):
    return DQNModesOn(shares=[0.0, 0.5, 1.0], reinject=[False], rules=["minrtt"], hidden=[32], **kw)


def _median(s, n=5):
    return float(
        np.median([run_episode(SCEN, APP, s, seed=k).metrics["download_time_s"] for k in range(n)])
    )


def test_online_dqn_learns_to_leave_a_useless_path_alone(tmp_path):
    agent = _agent(switch_margins=[0.0, None])
    returns = []
    out = agent.fit(
        SCEN,
        APP,
        seed=7,
        episodes=150,
        epsilon=0.2,
        learning_starts=64,
        updates_per_step=4,  # 6 training seeds x 2 network seeds: all at 1.00 x path 0 alone
        validation_episodes=4,
        log=lambda m, step: returns.append(m.get("train/dqn_modes_on/episode_return")),
        progress=False,
    )
    assert out["env_steps"] > 150 and np.isfinite(out["final_loss"]) and out["reward_unit_s"] > 0
    assert len([r for r in returns if r is not None]) == 150  # one return logged per episode
    single, minrtt = (
        _median(make_scheduler("fixed_split", share=1.0)),
        _median(make_scheduler("minrtt")),
    )
    assert single < minrtt  # the condition: path 1 only slows the download
    assert _median(agent) <= 1.10 * single
    agent.save(tmp_path)
    again = DQNModesOn(model=str(tmp_path))
    assert again.modes == agent.modes and _median(again) == _median(agent)


def test_options_are_checked():
    assert _agent().backend == "torch"
    rl = _agent(backend="rllib", rllib={"iterations": 3})
    assert rl.rllib_options["iterations"] == 3 and rl.rllib_options["num_env_runners"] == 0
    with pytest.raises(ConfigError, match="backend: unknown 'tf'"):
        _agent(backend="tf")
    with pytest.raises(ConfigError, match=r"rllib: unknown option\(s\) \['iters'\]"):
        _agent(backend="rllib", rllib={"iters": 3})
    with pytest.raises(ConfigError, match="rllib.iterations: must be a positive integer"):
        _agent(backend="rllib", rllib={"iterations": 0})
    with pytest.raises(ConfigError, match="epsilon must be in"):
        _agent().fit(SCEN, APP, epsilon=1.5, progress=False)
    with pytest.raises(ConfigError, match="episodes must be a positive integer"):
        _agent().fit(SCEN, APP, episodes=0, progress=False)


def test_the_agent_config_builds_it():
    from pathlib import Path

    import yaml
    from hydra.utils import instantiate

    cfg = yaml.safe_load(
        (Path(__file__).resolve().parents[1] / "configs/agent/dqn_modes_on.yaml").read_text()
    )
    cfg.pop("train")
    agent = instantiate(cfg)
    assert isinstance(agent, DQNModesOn) and len(agent.modes) == 14
    assert make_scheduler("dqn_modes_on").backend == "torch"


@pytest.mark.slow
def test_the_rllib_backend_trains_on_the_mode_environment_and_schedules():
    agent = _agent(
        backend="rllib", rllib={"iterations": 2, "rollout_fragment_length": 50, "num_cpus": 1}
    )
    points = []
    out = agent.fit(
        SCEN,
        APP,
        seed=0,
        validation_episodes=2,
        log=lambda m, step: points.append(m),
        progress=False,
    )
    assert out["iterations"] == 2 and out["env_steps"] >= 100 and len(points) >= 2
    assert run_episode(SCEN, APP, agent, 0).metrics["timed_out"] == 0
