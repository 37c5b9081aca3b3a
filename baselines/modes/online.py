"""DQN-On on the mode MDP: a Q-network over the modes learned online, by
interacting with the condition (:class:`baselines.modes.gym_env.ModeEnv`),
with the project's torch DQN or with Ray RLlib's.

:class:`baselines.modes.learner.DQNModes` (DQN-Off) learns from a behaviour
log that holds every mode, and fits each mode's return-to-go. Here the data
is what the learner's own epsilon-greedy policy does, epoch after epoch, and
the target is DQN's bootstrapped one on the environment's reward, minus the
epoch's duration in a unit of a twentieth of the condition's median download
time (so a download's return is about -20 whatever its size; the median is
that of ``probe_episodes`` downloads holding the first rule mode, or mode 0).
Online learning needs no log of every mode, at the price of exploring
while it learns.

``backend``:

* ``torch``: ``episodes`` training downloads, epsilon-greedy; every epoch
  goes to a replay memory and, once ``learning_starts`` epochs are in it,
  ``updates_per_step`` DQN steps (:class:`baselines.dqn.learner.BatchedDQN`,
  double Q, soft target updates) follow each epoch.
* ``rllib``: RLlib's DQN on the registered environment
  (:func:`baselines.modes.gym_env.register_rllib`; ``rllib.iterations``
  ``algo.train()`` calls of ``rollout_fragment_length`` epochs each, with
  ``num_env_runners`` Ray actors sampling), its network the same shape, its
  weights then copied into the scheduler's
  (:func:`baselines.dqn.rllib_backend.extract_weights`, checked against the
  module's Q-values).

Either way the trained network is deployed greedily (frozen: the evaluation
does not learn on), with the switch margin chosen on validation episodes as
:class:`~baselines.modes.learner.DQNModes` chooses it, and saved in the same
model file.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Mapping

import numpy as np

from baselines.dqn.network import NumpyQNet, QNetSpec
from baselines.dqn.rllib_backend import dqn_config, train_rllib
from baselines.modes.experience import EPOCHS_PER_MEDIAN
from baselines.modes.features import n_inputs
from baselines.modes.gym_env import MODE_HIGH, MODE_LOW
from baselines.modes.learner import DQNModes, Ensemble
from baselines.modes.online_dqn import check_online_train, online_dqn
from baselines.modes.scheduler import ModeScheduler, mode_lists
from envs import run_episode
from envs.errors import ConfigError, is_whole_number

BACKENDS = ("torch", "rllib")
#: the options of the RLlib backend (``rllib:``) and their defaults
RLLIB_DEFAULTS: dict = {
    "iterations": 20,  # algo.train() calls
    "rollout_fragment_length": 200,  # epochs sampled per call and env runner
    "num_env_runners": 0,  # 0: sample in the driver; >0: Ray actors
    "num_cpus": None,  # ray.init(num_cpus=...) when Ray is started here
    "address": None,  # an existing Ray cluster
}


def check_rllib_options(options: Mapping | None) -> dict:
    """``rllib:`` with its defaults filled in; unknown keys and bad counts are errors."""
    unknown = set(options or {}) - set(RLLIB_DEFAULTS)
    if unknown:
        raise ConfigError(
            f"rllib: unknown option(s) {sorted(unknown)}; known: {sorted(RLLIB_DEFAULTS)}"
        )
    out = {**RLLIB_DEFAULTS, **dict(options or {})}
    for key in ("iterations", "rollout_fragment_length"):
        if not is_whole_number(out[key], 1):
            raise ConfigError(f"rllib.{key}: must be a positive integer, got {out[key]!r}")
    if isinstance(out["num_env_runners"], bool) or int(out["num_env_runners"]) < 0:
        raise ConfigError(f"rllib.num_env_runners: must be >= 0, got {out['num_env_runners']!r}")
    return out


class DQNModesOn(DQNModes):
    """DQN-On on the mode MDP (module docstring). The mode, network and
    selection arguments are :class:`~baselines.modes.learner.DQNModes`'
    (``gamma`` is the discount per epoch); ``backend``: :data:`BACKENDS`;
    ``rllib``: :data:`RLLIB_DEFAULTS` overrides."""

    name = "dqn_modes_on"

    def __init__(self, *args, backend: str = "torch", rllib: Mapping | None = None, **kw) -> None:
        if backend not in BACKENDS:
            raise ConfigError(f"backend: unknown {backend!r}; known: {list(BACKENDS)}")
        self.backend = backend
        self.rllib_options = check_rllib_options(rllib)
        kw.setdefault("target", "td")
        kw.setdefault("constant_candidates", 0)
        super().__init__(*args, **kw)

    # its own train: keys, hence its own keywords (falcon.train passes the agent's train: section)
    def fit(  # type: ignore[override]
        self,
        scenario,
        app,
        seed: int = 0,
        episodes: int = 200,
        epsilon: float = 0.1,
        learning_starts: int = 200,
        updates_per_step: int = 4,
        replay_capacity: int = 50_000,
        probe_episodes: int = 3,
        validation_episodes: int = 32,
        log: Callable | None = None,
        progress: bool = True,
    ) -> dict:
        """Learn online on ``(scenario, app)`` (module docstring); returns summary metrics."""
        train = check_online_train(
            self.name, episodes, epsilon, learning_starts, updates_per_step, replay_capacity
        )
        if not is_whole_number(probe_episodes, 1):
            raise ConfigError(
                f"{self.name}: probe_episodes must be a positive integer, got {probe_episodes!r}"
            )
        say = print if progress else None
        unit_s = self._probe_unit(scenario, app, seed, probe_episodes)
        self.spec = QNetSpec(n_inputs(2), len(self.modes), self.hidden)
        t0 = time.perf_counter()
        if self.backend == "torch":
            weights, out = self._fit_torch(scenario, app, seed, unit_s, train, log, say)
        else:
            weights, out = self._fit_rllib(scenario, app, seed, unit_s, train["epsilon"], log, say)
        self.q = Ensemble([NumpyQNet(weights, self.spec)])
        self.constant_mode = None
        best, record = self._select([(scenario, app)], seed, int(validation_episodes), say, [])
        self.switch_margin = self.margins[best]
        out.update(
            reward_unit_s=unit_s,
            wall_time_s=time.perf_counter() - t0,
            switch_margin=self.switch_margin if math.isfinite(self.switch_margin) else -1.0,
            selected_mean_cost=float(record[best]["mean_cost"] or math.nan),
        )
        if log is not None:
            log({f"train/{self.name}/{k}": v for k, v in out.items()}, None)
        return out

    # ------------------------------------------------------------ internals
    def _probe_unit(self, scenario, app, seed: int, n: int) -> float:
        """A twentieth of the median download time [s] of ``n`` downloads holding
        the first rule mode (mode 0 without one), seeds ``seed + k``."""
        held = next((i for i, m in enumerate(self.modes) if isinstance(m, str)), 0)
        times = []
        for k in range(n):
            m = run_episode(scenario, app, ModeScheduler(self.modes, lambda s: held), seed + k)
            times.append(m.metrics["elapsed_s"])
        return statistics.median(times) / EPOCHS_PER_MEDIAN

    def _fit_torch(self, scenario, app, seed: int, unit_s: float, train: dict, log, say):
        return online_dqn(
            self.spec, self.config, self.modes, scenario, app, seed, unit_s, train,
            net_seed=self.seed, name=self.name, log=log, say=say,
        )  # fmt: skip

    def _fit_rllib(self, scenario, app, seed, unit_s, epsilon, log, say):
        from baselines.modes.gym_env import register_rllib
        from envs.scenario import normalise_scenario

        opts = self.rllib_options
        shares, reinject, rules = mode_lists(self.modes)
        env_config = {
            "scenario": normalise_scenario(scenario),
            "app": app,
            "shares": shares,
            "reinject": reinject,
            "rules": rules,
            "time_unit_s": unit_s,
        }
        config = dqn_config(
            register_rllib(),
            env_config,
            self.hidden,
            self.config,
            epsilon,
            seed,
            opts["num_env_runners"],
            opts["rollout_fragment_length"],
            num_steps_sampled_before_learning_starts=self.config.batch_size,
        )
        check = np.random.default_rng(0).uniform(
            MODE_LOW, np.minimum(MODE_HIGH, 10.0), (64, len(MODE_LOW))
        )
        weights, last = train_rllib(
            config,
            opts["iterations"],
            self.spec,
            self.name,
            address=opts["address"],
            num_cpus=opts["num_cpus"],
            log=None
            if log is None
            else lambda p, step: log({f"train/{self.name}/{k}": v for k, v in p.items()}, step),
            progress=say is not None,
            check_states=check.astype(np.float32),
        )
        return weights, {**last, "iterations": float(opts["iterations"])}


__all__ = ["DQNModesOn", "BACKENDS", "RLLIB_DEFAULTS", "check_rllib_options"]
