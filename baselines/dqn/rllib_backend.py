"""Ray RLlib as an alternative training backend of DQN-On (``agent.backend=rllib``).

RLlib's DQN trains on the Gymnasium environment of the emulator
(:class:`envs.gym_env.MultipathSchedulingEnv`, registered with
:func:`envs.gym_env.register_rllib`), so rollouts scale out over Ray
workers (``rllib.num_env_runners``) and a cluster (``rllib.address``).
Each env runner steps the vector environment
(:class:`envs.vector_env.MultipathVectorEnv`, RLlib's
``gym_env_vectorize_mode="vector_entry_point"``): with
``rllib.num_envs_per_env_runner`` N > 1 one call steps N emulations and
RLlib's module computes their actions in one batched forward pass, which
amortises RLlib's per-call overhead (about 1.6 ms here, against a few µs
for the emulation of a step): sampling on the completion MDP ran 2-3x as
many steps per CPU-second with 8 instances and 6-7x with 32 as with one
(``python -m benchmarks.dqn_learner_speed``).

The RLModule is configured to FALCON's network (encoder = the hidden ReLU layers
of ``hidden``, a linear Q head, no dueling, no distributional Q, one-step
targets) and the learner to the agent's hyperparameters (lr, batch size,
gamma, soft target update tau, replay capacity, fixed epsilon). After
training, the module's dense layers are copied into the scheduler's own
network (:func:`extract_weights`, checked against the module's Q-values on
random states), so the trained scheduler schedules, keeps learning online
and exports exactly like a torch-backend DQN-On.

Reward (``rllib.env_reward``, default null: the agent's ``reward``, i.e. its
MDP, so that the weights RLlib learns fit the agent): the environment's
``"completion"`` and ``"packet_rate"`` give every decision the credit the
torch backend gives it (:mod:`envs.mdp`), but a decision's credit is known
only some time after its step returned (an RTT for ``packet_rate``, the
hindsight horizon for ``completion``). RLlib therefore samples complete episodes
(``batch_mode="complete_episodes"``) and an ``on_episode_end`` callback
(:func:`attribute_decision_rewards`) overwrites the episode's step rewards
with the per-decision credits of the final ``info["decision_rewards"]``
before the episode enters the replay buffer, so RLlib's DQN learns from the
same transitions as the torch backend (decisions still unresolved at the
episode's end get the credit of an ACK at the end; ``envs.gym_env``). The
environment's per-step rewards (``goodput``, ``goodput_rate``, ``ack_rate``)
are available too; they credit a decision with what happens until the next
one and teach the DQN to block on a slow path (``docs/reference/formats/model_formats.md``,
"Reward"). The other difference is by construction of RLlib: synchronous
updates (RLlib learns between sampling rounds; there is no emulated trainer
time).

Replay ratio: ``rllib.training_intensity`` (replayed per sampled
transitions) defaults to the torch backend's, ``batch_size /
train_interval``; RLlib turns it into gradient steps per sampling round
assuming a round of ``rollout_fragment_length`` steps of each instance
(``num_envs_per_env_runner`` per env runner). With complete episodes a round
is one episode of each instance whatever its length, so
``rollout_fragment_length`` should be about an episode's decisions (default
1000; a 2 MB download takes ~1500).
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Mapping
from contextlib import contextmanager

import numpy as np

from envs.errors import ConfigError, is_whole_number
from envs.gym_env import DECISION_REWARDS_KEY, ENV_REWARDS
from envs.mdp import COMPLETION, PACKET_RATE

#: options of the RLlib backend (``agent.rllib.*``) and their defaults
DEFAULTS: dict = {
    "iterations": 10,  # algo.train() calls
    "rollout_fragment_length": 1000,  # env steps per sampling round and env runner (see below)
    "num_env_runners": 0,  # 0: sample in the driver process; >0: Ray actors
    "num_envs_per_env_runner": None,  # emulations each env runner steps in one call; None: 1
    "num_cpus": None,  # ray.init(num_cpus=...) when Ray is started here
    "address": None,  # an existing Ray cluster ("auto", "ray://host:10001")
    "env_reward": None,  # the environment's reward (its MDP); None = the agent's
    "learning_starts": 64,  # env steps before the first update
    "training_intensity": None,  # replayed / sampled steps; None = batch_size / train_interval
    "max_steps": None,  # truncate training episodes after this many decisions
}


def check_options(options: Mapping) -> dict:
    """Validate ``agent.rllib`` and fill defaults (no Ray import)."""
    unknown = set(options) - set(DEFAULTS)
    if unknown:
        raise ConfigError(f"rllib: unknown option(s) {sorted(unknown)}; known: {sorted(DEFAULTS)}")
    out = {**DEFAULTS, **dict(options)}
    for key in ("iterations", "rollout_fragment_length", "learning_starts"):
        if int(out[key]) < 1:
            raise ConfigError(f"rllib.{key}: must be a positive integer, got {out[key]!r}")
        out[key] = int(out[key])
    if int(out["num_env_runners"]) < 0:
        raise ConfigError(f"rllib.num_env_runners: must be >= 0, got {out['num_env_runners']!r}")
    out["num_env_runners"] = int(out["num_env_runners"])
    if out["num_envs_per_env_runner"] is None:
        out["num_envs_per_env_runner"] = 1
    elif not is_whole_number(out["num_envs_per_env_runner"], 1):
        raise ConfigError(
            "rllib.num_envs_per_env_runner: must be a positive integer or null (one), got "
            f"{out['num_envs_per_env_runner']!r}"
        )
    if out["env_reward"] is not None and out["env_reward"] not in ENV_REWARDS:
        raise ConfigError(
            f"rllib.env_reward: unknown reward {out['env_reward']!r}; choose one of "
            f"{list(ENV_REWARDS)}"
        )
    return out


def attribute_decision_rewards(episode, **_) -> None:
    """RLlib ``on_episode_end`` callback: replace a complete episode's step
    rewards by the per-decision credits of its final info (module docstring)."""
    credits = episode.get_infos(-1).get(DECISION_REWARDS_KEY)
    if credits is None:
        return
    credits = np.asarray(credits, dtype=np.float32)
    if len(credits) != len(episode):
        raise ConfigError(
            f"rllib backend: {len(credits)} per-decision rewards for an episode chunk of "
            f"{len(episode)} steps (the packet_rate reward needs complete episodes)"
        )
    episode.set_rewards(new_data=[float(c) for c in credits], at_indices=slice(0, len(credits)))


def dqn_config(
    env: str,
    env_config: Mapping,
    hidden,
    learner,
    epsilon: float,
    seed: int,
    num_env_runners: int,
    rollout_fragment_length: int,
    batch_mode: str = "truncate_episodes",
    num_envs_per_env_runner: int = 1,
    vector_entry_point: bool = False,
    **training,
):
    """An RLlib ``DQNConfig`` shaped like the project's DQN (no Ray started):
    the registered environment ``env`` with ``env_config``, a torch module of
    ``hidden`` ReLU layers and a linear Q head (no dueling, no distributional
    Q, one-step targets), ``learner``'s (:class:`baselines.dqn.learner.DQNConfig`)
    lr, gamma, batch size, soft target update tau and double Q, a fixed
    ``epsilon``; ``training``: further ``.training()`` keys. Each env runner
    steps ``num_envs_per_env_runner`` instances of the environment, through the
    environment's own vector entry point if ``vector_entry_point`` (one call
    steps them all), else through Gymnasium's ``SyncVectorEnv``."""
    from ray.rllib.algorithms.dqn import DQNConfig as RLlibDQNConfig
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

    return (
        RLlibDQNConfig()
        .environment(env=env, env_config=dict(env_config))
        .framework("torch")
        .env_runners(
            num_env_runners=int(num_env_runners),
            rollout_fragment_length=int(rollout_fragment_length),
            batch_mode=batch_mode,
            num_envs_per_env_runner=int(num_envs_per_env_runner),
            gym_env_vectorize_mode="vector_entry_point" if vector_entry_point else "sync",
        )
        .training(
            lr=learner.lr,
            gamma=learner.gamma,
            train_batch_size_per_learner=learner.batch_size,
            tau=learner.tau,
            target_network_update_freq=1,
            double_q=learner.double_q,
            dueling=False,
            num_atoms=1,
            n_step=1,
            epsilon=[[0, epsilon], [1, epsilon]],
            **training,
        )
        .rl_module(
            model_config=DefaultModelConfig(
                fcnet_hiddens=list(hidden), fcnet_activation="relu", head_fcnet_hiddens=[]
            )
        )
        .debugging(seed=int(seed), log_level="ERROR")
        .reporting(min_sample_timesteps_per_iteration=int(rollout_fragment_length))
    )


def train_rllib(
    config,
    iterations: int,
    spec,
    name: str,
    *,
    address: str | None = None,
    num_cpus: int | None = None,
    log: Callable | None = None,
    progress: bool = True,
    check_states: np.ndarray | None = None,
) -> tuple[list[np.ndarray], dict[str, float]]:
    """Build ``config``'s algorithm in a Ray session (:func:`ray_session`), run
    ``iterations`` ``algo.train()`` calls (each: ``log(point, step=i)`` and a
    progress line on stderr) and return the module's dense layers as ``spec``'s
    weights (:func:`extract_weights`, checked on ``check_states``) and the
    last iteration's point."""
    t0 = time.perf_counter()
    last: dict[str, float] = {}
    with ray_session(address, num_cpus):
        algo = config.build_algo()
        try:
            for it in range(int(iterations)):
                res = algo.train()
                env = res.get("env_runners", {})
                last = {
                    "episode_return_mean": float(env.get("episode_return_mean", math.nan)),
                    "episode_len_mean": float(env.get("episode_len_mean", math.nan)),
                    "env_steps": float(res.get("num_env_steps_sampled_lifetime", math.nan)),
                }
                learner = res.get("learners", {}).get("default_policy", {})
                if "qf_loss" in learner:
                    last["loss"] = float(learner["qf_loss"])
                if log is not None:
                    log(last, step=it)
                if progress:
                    print(
                        f"{name} (rllib): iteration {it + 1}/{iterations}  "
                        f"return {last['episode_return_mean']:.4g}  steps {last['env_steps']:.0f}  "
                        f"[{time.perf_counter() - t0:.1f} s]",
                        file=sys.stderr,
                        flush=True,
                    )
            weights = extract_weights(algo.get_module(), spec, check_states)
        finally:
            algo.stop()
    return weights, last


def build_config(agent, scenario, app, seed: int, options: Mapping):
    """The RLlib ``DQNConfig`` for a DQN-On agent (no Ray started)."""
    from envs.gym_env import register_rllib

    opts = check_options(options)
    name = register_rllib()
    lc = agent.learner_config
    reward = opts["env_reward"] or agent.reward_kind
    env_config = {"scenario": scenario, "app": app, "reward": reward}
    if reward == COMPLETION:
        env_config["hindsight_rtts"] = agent.hindsight_rtts
        env_config["reward_unit"] = agent.reward_unit
    if opts["max_steps"] is not None:
        env_config["max_steps"] = int(opts["max_steps"])
    # the torch backend's replay ratio unless given: batch_size replayed
    # transitions per train_interval sampled ones (RLlib's own default is one
    # update per sampling round, far fewer)
    intensity = opts["training_intensity"]
    if intensity is None:
        intensity = lc.batch_size / agent.trainer.train_interval
    per_decision = reward in (PACKET_RATE, COMPLETION)  # credits attributed at the episode's end
    cfg = dqn_config(
        name,
        env_config,
        agent.hidden,
        lc,
        float(agent.epsilon),
        seed,
        opts["num_env_runners"],
        opts["rollout_fragment_length"],
        # packet_rate: rewards are attributed once the episode ended
        batch_mode="complete_episodes" if per_decision else "truncate_episodes",
        num_envs_per_env_runner=opts["num_envs_per_env_runner"],
        vector_entry_point=True,  # envs.vector_env.MultipathVectorEnv, also for one instance
        num_steps_sampled_before_learning_starts=opts["learning_starts"],
        replay_buffer_config={"type": "EpisodeReplayBuffer", "capacity": agent.replay_capacity},
        td_error_loss_fn="huber" if lc.loss == "huber" else "mse",
        training_intensity=float(intensity),
    )
    if per_decision:
        cfg = cfg.callbacks(on_episode_end=attribute_decision_rewards)
    return cfg


def module_q_values(module, states: np.ndarray) -> np.ndarray:
    """Q-values of an RLlib DQN torch module (``compute_q_values``) for ``states`` ``[B, n]``."""
    import torch

    with torch.no_grad():
        out = module.compute_q_values({"obs": torch.as_tensor(np.asarray(states, np.float32))})
    return out["qf_preds"].cpu().numpy()


def extract_weights(module, spec, check_states: np.ndarray | None = None) -> list[np.ndarray]:
    """The dense layers of an RLlib DQN torch module (encoder, then Q head)
    as ``[W0, b0, ...]`` with ``W`` ``[in, out]``; verified against the
    module's own Q-values on ``check_states`` (random states if None)."""
    import torch

    linears = [
        m
        for part in (module.encoder, module.af)
        for m in part.modules()
        if isinstance(m, torch.nn.Linear)
    ]
    sizes = [(lin.in_features, lin.out_features) for lin in linears]
    if sizes != spec.layer_sizes:
        raise ConfigError(
            f"rllib backend: the RLlib module's dense layers {sizes} do not match the "
            f"agent's network {spec.layer_sizes}"
        )
    weights = []
    for lin in linears:
        weights += [
            lin.weight.detach().cpu().numpy().T.copy(),
            lin.bias.detach().cpu().numpy().copy(),
        ]
    if check_states is None:
        check_states = (
            np.random.default_rng(0).uniform(0, 10, (64, spec.n_inputs)).astype(np.float32)
        )
    with torch.no_grad():
        q_ref = module_q_values(module, check_states)
    x = check_states
    n = len(weights) // 2
    for i in range(n):
        x = x @ weights[2 * i] + weights[2 * i + 1]
        if i < n - 1:
            x = np.maximum(x, 0)
    diff = float(np.abs(x - q_ref).max())
    if not diff < 1e-4:
        raise ConfigError(
            f"rllib backend: extracted weights do not reproduce the module's Q-values "
            f"(max difference {diff:.3g})"
        )
    return weights


@contextmanager
def ray_session(address: str | None = None, num_cpus: int | None = None):
    """Ray for the ``with`` block: started here (at ``address``, or locally with
    ``num_cpus``) unless it is already running, and stopped after if started here."""
    import ray

    started = False
    if not ray.is_initialized():
        init_kw = {"include_dashboard": False, "log_to_driver": False, "logging_level": "ERROR"}
        if address:
            init_kw["address"] = address
        elif num_cpus is not None:
            init_kw["num_cpus"] = int(num_cpus)
        ray.init(**init_kw)
        started = True
    try:
        yield
    finally:
        if started:
            ray.shutdown()


def fit_rllib(
    agent,
    scenario,
    app,
    seed: int = 0,
    log: Callable | None = None,
    progress: bool = True,
    **options,
) -> dict[str, float]:
    """Train ``agent`` (a :class:`~baselines.dqn.dqn_on.DQNOn`) with RLlib's DQN,
    then load the learned weights into it. Starts Ray (or connects to
    ``address``) unless it is already running; stops what it started."""
    from envs.scenario import normalise_scenario

    opts = check_options(options)
    if opts["env_reward"] is not None and agent.reward_kind != opts["env_reward"]:
        # the weights come back into the agent: both must see one MDP
        raise ConfigError(
            f"rllib.env_reward: {opts['env_reward']!r} differs from the agent's reward "
            f"{agent.reward_kind!r}; the Gymnasium env offers {list(ENV_REWARDS)}"
        )
    s = normalise_scenario(scenario)
    if agent.spec is None:
        agent.build(len(s["paths"]))
    t0 = time.perf_counter()
    weights, last = train_rllib(
        build_config(agent, s, app, seed, opts),
        opts["iterations"],
        agent.spec,
        agent.name,
        address=opts["address"],
        num_cpus=opts["num_cpus"],
        log=log,
        progress=progress,
    )
    agent.learner.set_weights(weights)
    agent.deploy()
    return {
        **last,
        "iterations": float(opts["iterations"]),
        "wall_time_s": time.perf_counter() - t0,
    }


__all__ = [
    "fit_rllib",
    "ray_session",
    "dqn_config",
    "train_rllib",
    "build_config",
    "attribute_decision_rewards",
    "extract_weights",
    "module_q_values",
    "check_options",
    "DEFAULTS",
]
