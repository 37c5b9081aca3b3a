"""A batched environment: N emulations of :class:`envs.gym_env.MultipathSchedulingEnv`
stepped in one call, with Gymnasium's vector API (``gymnasium.vector.VectorEnv``).

``MultipathVectorEnv(num_envs, scenario, app, **env_kwargs)`` holds
``num_envs`` instances of the single environment (every keyword of its
constructor is accepted: ``reward=``, ``max_steps=``, ``scenario_sampler=``,
...). ``step(actions)`` takes one action per instance (an integer array of
shape ``(num_envs,)``) and returns the observations as one float32 array
``(num_envs, n_inputs)``, the rewards (float64), ``terminated`` and
``truncated`` (bool) as arrays, and the infos in Gymnasium's vector form (each
key with a boolean mask ``_key``: the final step's ``metrics`` and
``episode_steps``, its ``decision_rewards`` as an object array of one
float32 array per instance that ended; a reset's ``emulator_seed``). So a
policy is one array function over the batch, e.g. a Q-network's forward pass
on all instances at once.

**Autoreset** is Gymnasium 1.x's default, ``AutoresetMode.NEXT_STEP``
(``metadata["autoreset_mode"]``): the step after an instance's episode ends
resets that instance (its action is ignored; reward 0, ``terminated`` and
``truncated`` false) and returns the new episode's first observation.

**Seeding** is the single environment's, per instance: ``reset(seed=s)`` gives
instance ``i`` the seed ``s + i`` (a list gives each its own), i.e. the episode
``envs.run_episode(scenario, app, scheduler, s + i)`` emulates; an autoreset
draws the next emulator seed from that instance's ``np_random``, as a
``reset()`` without a seed does. A vector environment of N instances
therefore gives exactly the trajectories of the N single environments driven
the same way (``tests/test_vector_env.py`` compares them step by step).
``reset(options={"reset_mask": mask})`` resets only the instances of a
boolean mask.

``gymnasium.make_vec("falcon/MultipathScheduling-v0", num_envs=N,
vectorization_mode="vector_entry_point", ...)`` builds one;
:func:`envs.gym_env.register_rllib` makes Ray RLlib build one for its env
runners with ``config.env_runners(num_envs_per_env_runner=N,
gym_env_vectorize_mode="vector_entry_point")``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from envs.errors import ConfigError, is_whole_number
from envs.gym_core import RUNNING, TERMINATED, TRUNCATED, first_bad_action, step_runs
from envs.gym_env import DECISION_REWARDS_KEY, MultipathSchedulingEnv
from envs.sim import collector_paused


class MultipathVectorEnv(VectorEnv):
    """``num_envs`` (>= 1) multipath-scheduling emulations stepped together
    (module docstring). ``scenario``, ``app`` and every other keyword
    (``env_kwargs``) are :class:`~envs.gym_env.MultipathSchedulingEnv`'s;
    ``copy=True`` (default) returns a copy of the observation batch,
    ``copy=False`` the batch that the next call overwrites (faster, as
    Gymnasium's ``copy=False``)."""

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": []}

    def __init__(
        self,
        num_envs: int,
        scenario=None,
        app=None,
        *,
        copy: bool = True,
        **env_kwargs,
    ):
        if not is_whole_number(num_envs, 1):
            raise ConfigError(f"num_envs: expected a whole number >= 1, got {num_envs!r}")
        self.num_envs = int(num_envs)
        self.envs = [
            MultipathSchedulingEnv(scenario, app, **env_kwargs) for _ in range(self.num_envs)
        ]
        first = self.envs[0]
        self.n_paths = first.n_paths
        self.single_observation_space = first.observation_space
        self.single_action_space = first.action_space
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.copy = bool(copy)
        n_in = self.single_observation_space.shape[0]
        self._obs = np.zeros((self.num_envs, n_in), np.float32)
        self._rows = list(self._obs)  # row views: written in place by each instance
        self._rewards = np.zeros(self.num_envs, np.float64)
        self._terminated = np.zeros(self.num_envs, np.bool_)
        self._truncated = np.zeros(self.num_envs, np.bool_)
        self._autoreset = np.zeros(self.num_envs, np.bool_)
        self._outcomes = np.zeros(self.num_envs, np.int8)  # envs.gym_core.EpisodeRun.step's
        # the completion MDP's instances step in one compiled call (envs.gym_core.step_runs):
        # the current episode of each instance, None while it waits for its autoreset
        self._completion = first._completion
        self._runs: list = [None] * self.num_envs
        self._ended = 0  # instances whose episode ended at the previous step (they reset now)
        self._started = False

    # ------------------------------------------------------------------ API
    def reset(
        self,
        *,
        seed: int | Sequence[int | None] | None = None,
        options: dict[str, Any] | None = None,
    ):
        """Reset every instance (or those of ``options["reset_mask"]``);
        returns ``(observations, infos)``."""
        seeds = self._seeds(seed)
        options = dict(options or {})
        mask = options.pop("reset_mask", None)
        if mask is None:
            mask = np.ones(self.num_envs, np.bool_)
        else:
            mask = np.asarray(mask)
            if mask.shape != (self.num_envs,) or mask.dtype != np.bool_:
                raise ValueError(
                    f"reset_mask: expected a bool array of shape ({self.num_envs},), "
                    f"got {mask.dtype} {mask.shape}"
                )
        infos: dict = {}
        for i in np.flatnonzero(mask):
            env = self.envs[i]
            _, info = env.reset(seed=seeds[i], options=options or None)
            env._observe_into(self._rows[i])
            self._runs[i] = env._run
            infos = self._add_info(infos, info, int(i))
        self._terminated[mask] = False
        self._truncated[mask] = False
        self._autoreset[mask] = False
        self._started = True
        return self._out(self._obs), infos

    def step(self, actions):
        """One decision of every instance (module docstring, autoreset);
        returns ``(observations, rewards, terminated, truncated, infos)``."""
        if not self._started:
            raise RuntimeError("step() before reset(): call reset() first")
        acts = np.asarray(actions)
        if acts.shape != (self.num_envs,) or acts.dtype.kind not in "iu":
            raise ValueError(
                f"actions: expected an integer array of shape ({self.num_envs},), "
                f"got {acts.dtype} {acts.shape}"
            )
        acts = np.ascontiguousarray(acts, np.int64)
        i = first_bad_action(acts, self.n_paths)
        if i >= 0:  # all checked before any instance steps
            raise ValueError(
                f"actions: instance {i}'s action {acts[i]} is outside [0, {self.n_paths})"
            )
        with collector_paused():  # the instances' steps make no reference cycles (envs/sim.py)
            if self._completion:
                infos = self._step_runs(acts)
            else:
                infos = self._step_all(acts.tolist())
        return (
            self._out(self._obs),
            self._rewards.copy(),
            self._terminated.copy(),
            self._truncated.copy(),
            infos,
        )

    def _step_runs(self, acts: np.ndarray) -> dict:
        """The completion MDP's :meth:`_step_all`: the instances that run on step in one
        compiled call (:func:`envs.gym_core.step_runs`), then those that ended or
        autoreset are handled one by one."""
        outcomes, rewards = self._outcomes, self._rewards
        previous_ends = self._ended
        if previous_ends:  # the flags of the previous step's ends, cleared
            outcomes.fill(RUNNING)
            self._terminated.fill(False)
            self._truncated.fill(False)
        self._ended = step_runs(self._runs, acts, self._obs, rewards, outcomes)  # None: skipped
        infos: dict = {}
        if previous_ends:  # those instances reset now (next-step autoreset)
            for i in np.flatnonzero(self._autoreset):
                infos = self._autoreset_one(infos, int(i))
                self._runs[i] = self.envs[i]._run
        if not self._ended:
            return infos
        np.equal(outcomes, TERMINATED, out=self._terminated)
        np.equal(outcomes, TRUNCATED, out=self._truncated)
        for i in np.flatnonzero(outcomes != RUNNING):
            i = int(i)
            env = self.envs[i]
            r, _, _, info = env._end(rewards[i], int(outcomes[i]))
            env._observe_into(self._rows[i])
            rewards[i] = r
            self._autoreset[i] = True
            self._runs[i] = None
            infos = self._add_final_info(infos, info, i)
        return infos

    def _autoreset_one(self, infos: dict, i: int) -> dict:
        """Reset instance ``i`` whose episode ended at the previous step (module docstring)."""
        env = self.envs[i]
        _, info = env.reset()
        env._observe_into(self._rows[i])
        self._rewards[i] = 0.0
        self._terminated[i] = self._truncated[i] = self._autoreset[i] = False
        return self._add_info(infos, info, i)

    def _step_all(self, acts: list) -> dict:
        """Step instance ``i`` with action ``acts[i]`` (or autoreset it), writing its row
        of the batch; returns the step's infos."""
        infos: dict = {}
        rows, rewards = self._rows, self._rewards
        terminated, truncated, autoreset = self._terminated, self._truncated, self._autoreset
        for i, a in enumerate(acts):
            env = self.envs[i]
            if autoreset[i]:
                infos = self._autoreset_one(infos, i)
                continue
            r, te, tr, info = env._step(a)
            env._observe_into(rows[i])
            rewards[i] = r
            terminated[i] = te
            truncated[i] = tr
            if info is not None:
                autoreset[i] = True
                infos = self._add_final_info(infos, info, i)
        return infos

    def close_extras(self, **kwargs) -> None:
        for env in getattr(self, "envs", ()):  # () when the constructor raised
            env.close()

    # ------------------------------------------------------------ internals
    def _add_final_info(self, infos: dict, info: dict, i: int) -> dict:
        """Gymnasium's ``_add_info``, except that the per-decision credits
        (one entry per step: episodes differ in length) go into an object
        array, one float32 array per instance that ended."""
        credits = info.get(DECISION_REWARDS_KEY)
        if credits is None:
            return self._add_info(infos, info, i)
        infos = self._add_info(
            infos, {k: v for k, v in info.items() if k != DECISION_REWARDS_KEY}, i
        )
        if DECISION_REWARDS_KEY not in infos:
            infos[DECISION_REWARDS_KEY] = np.full(self.num_envs, None, object)
            infos["_" + DECISION_REWARDS_KEY] = np.zeros(self.num_envs, np.bool_)
        infos[DECISION_REWARDS_KEY][i] = credits
        infos["_" + DECISION_REWARDS_KEY][i] = True
        return infos

    def _seeds(self, seed) -> list:
        if seed is None:
            return [None] * self.num_envs
        if is_whole_number(seed, 0):
            return [int(seed) + i for i in range(self.num_envs)]
        seeds = list(seed)
        if len(seeds) != self.num_envs:
            raise ValueError(
                f"seed: a list of seeds needs one per instance ({self.num_envs}), got {len(seeds)}"
            )
        return seeds

    def _out(self, obs: np.ndarray) -> np.ndarray:
        return obs.copy() if self.copy else obs


__all__ = ["MultipathVectorEnv"]
