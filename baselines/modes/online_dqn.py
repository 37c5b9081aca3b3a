"""Online DQN on the mode MDP: epsilon-greedy downloads of the condition
(:class:`baselines.modes.gym_env.ModeEnv`), every epoch into a replay memory,
DQN steps of the project's torch learner (:class:`baselines.dqn.learner.BatchedDQN`:
double Q, soft target updates) on minus each epoch's duration in a given
time unit. Used by DQN-On on the mode MDP (:mod:`baselines.modes.online`)
and, as one more candidate of its selection, by DQN-Off
(:class:`baselines.modes.learner.DQNModes`, ``train.online_episodes``)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from baselines.dqn.learner import BatchedDQN, DQNConfig
from baselines.dqn.network import QNetSpec
from baselines.dqn.replay import ReplayMemory
from baselines.modes.gym_env import ModeEnv
from baselines.modes.scheduler import mode_lists
from envs.errors import ConfigError, is_whole_number

#: training download ``k`` has the seed ``seed + ONLINE_SEED_OFFSET + k``: apart
#: from the behaviour log's (``seed + k``), the policy rounds' (``seed + 20 000 + ...``)
#: and the validation episodes' (``seed + 500 000 + k``)
ONLINE_SEED_OFFSET = 1000


def check_online_train(
    owner: str,
    episodes,
    epsilon,
    learning_starts,
    updates_per_step,
    replay_capacity,
) -> dict:
    """The online training settings as :func:`online_dqn` takes them; a bad one is a one-line error."""
    if isinstance(epsilon, bool) or not isinstance(epsilon, int | float) or not 0 <= epsilon <= 1:
        raise ConfigError(f"{owner}: epsilon must be in [0, 1], got {epsilon!r}")
    train = dict(
        episodes=episodes,
        learning_starts=learning_starts,
        updates_per_step=updates_per_step,
        replay_capacity=replay_capacity,
    )
    for key, v in train.items():
        if not is_whole_number(v, 1):
            raise ConfigError(f"{owner}: {key} must be a positive integer, got {v!r}")
    return {**train, "epsilon": float(epsilon)}


def online_dqn(
    spec: QNetSpec,
    config: DQNConfig,
    modes: Sequence,
    scenario,
    app,
    seed: int,
    unit_s: float,
    train: dict,
    net_seed: int = 0,
    name: str = "dqn_modes_on",
    log: Callable | None = None,
    say: Callable | None = None,
) -> tuple[list[np.ndarray], dict]:
    """Train one Q-network online; returns its weights and summary metrics.

    ``train``: :func:`check_online_train`'s dict: ``episodes`` epsilon-greedy
    downloads (seeds ``seed + ONLINE_SEED_OFFSET + k``, exploration from
    ``seed``), a reward of minus each epoch's duration / ``unit_s``, and
    ``updates_per_step`` DQN steps per epoch once ``learning_starts`` epochs
    are in the replay. ``net_seed``: the initial weights; ``name`` keys the
    per-episode return logged with ``log(metrics, episode)``."""
    shares, reinject, rules = mode_lists(modes)
    env = ModeEnv(scenario, app, shares=shares, reinject=reinject, rules=rules, time_unit_s=unit_s)
    learner = BatchedDQN(spec, 1, config, seed=net_seed)
    rng = np.random.default_rng(seed)
    replay = ReplayMemory(int(train["replay_capacity"]), spec.n_inputs, seed=seed + 1)
    returns, losses, steps = [], [], 0
    episodes, epsilon = train["episodes"], train["epsilon"]
    try:
        for ep in range(episodes):
            obs, _ = env.reset(seed=seed + ONLINE_SEED_OFFSET + ep)
            done, ret = False, 0.0
            while not done:
                if rng.random() < epsilon:
                    a = int(rng.integers(len(modes)))
                else:
                    a = int(learner.q(obs[None, None])[0, 0].argmax())
                obs2, r, terminated, truncated, _ = env.step(a)
                replay.add(obs, a, r, obs2, terminated)
                done, ret, obs, steps = terminated or truncated, ret + r, obs2, steps + 1
                if len(replay) >= train["learning_starts"]:
                    for _ in range(train["updates_per_step"]):
                        batch = replay.sample(config.batch_size)
                        losses.append(float(learner.update(*batch)[0]))
            returns.append(ret)
            if log is not None:
                log({f"train/{name}/episode_return": ret}, ep)
            if say is not None and (ep + 1) % max(1, episodes // 10) == 0:
                say(f"{name}: episode {ep + 1}/{episodes}, return {ret:.2f}, {steps} epochs")
    finally:
        env.close()  # unwinds an episode left half-way by an error
    out = {
        "episodes": float(episodes),
        "env_steps": float(steps),
        "final_return_mean": float(np.mean(returns[-max(1, len(returns) // 10) :])),
        "final_loss": float(np.mean(losses[-100:])) if losses else math.nan,
    }
    return learner.get_weights(0), out


__all__ = ["online_dqn", "check_online_train", "ONLINE_SEED_OFFSET"]
