"""The mode MDP (:mod:`baselines.modes`) as a Gymnasium environment: one step = one epoch's mode.

**Observation**: the mode state of :mod:`baselines.modes.features`,
``Box(MODE_LOW, MODE_HIGH, (n_inputs(2),), float32)`` (per path: estimated
rate, smoothed RTT, RTT variation, delivery over the last epoch, ACK age,
epoch loss, usable; then unacknowledged data, elapsed time and the mode in
force).

**Action**: ``Discrete(len(modes))``, the mode of the next epoch
(:func:`baselines.modes.scheduler.make_modes`: every ``(share, reinject)``
pair, shares outermost, then the rules); :attr:`ModeEnv.modes` lists them.

**Reward**: ``-(t_next - t) / time_unit_s`` for the epoch from the decision
at ``t`` to the next decision (or the download's end), so the undiscounted
return of a complete episode is minus the download time from the first
decision, in units of ``time_unit_s``.

**Episode**: one application run. ``terminated`` when the download completes;
``truncated`` at the scenario's time limit or after ``max_steps`` epochs.
The final ``info`` carries ``metrics`` (:func:`envs.metrics.episode_metrics`)
and ``episode_steps``; every ``info`` has the emulated time ``t_s`` [s].

**Seeding**: ``reset(seed=s)`` emulates the episode that
``envs.run_episode(scenario, app, ModeScheduler(modes, chooser), s)`` does
when ``chooser`` picks the same modes: the same download, bit for bit.

How: the emulator calls its scheduler from inside its event loop, and a mode
is asked for at an epoch's first decision, wherever that falls in the loop.
Rather than stopping the loop there and resuming it from outside (which
moves the sends that follow within the same event), each episode runs in a
worker thread whose chooser hands the state to :meth:`ModeEnv.step`'s caller
and blocks until it gets the mode back: the emulation is exactly
``run_episode``'s, and only one of the two threads runs at a time. An epoch
lasts tens of milliseconds of emulated time, so the two thread hand-offs per
step cost little beside the emulation.

Registered as ``falcon/ModeScheduling-v0``; :func:`register_rllib` registers
it with Ray RLlib, whose DQN then trains on the mode MDP.
"""

from __future__ import annotations

import math
import queue
import threading
from collections.abc import Mapping, Sequence

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from baselines.modes.features import GLOBAL_FEATURES, PATH_FEATURES, RANGES, n_inputs
from baselines.modes.scheduler import DEFAULT_RULES, DEFAULT_SHARES, ModeScheduler, make_modes
from envs.apps import normalise_app
from envs.errors import ConfigError
from envs.gym_env import DEFAULT_APP, DEFAULT_SCENARIO
from envs.runner import closing_metrics, setup_episode
from envs.scenario import normalise_scenario

ENV_ID = "falcon/ModeScheduling-v0"
#: the observation's bounds, feature by feature (:data:`baselines.modes.features.RANGES`)
MODE_LOW = np.array([RANGES[f][0] for f in PATH_FEATURES * 2 + GLOBAL_FEATURES], dtype=np.float32)
MODE_HIGH = np.array([RANGES[f][1] for f in PATH_FEATURES * 2 + GLOBAL_FEATURES], dtype=np.float32)


class _Aborted(Exception):
    """Raised in the worker's chooser to unwind an episode the environment left."""


_ABORT = object()


class ModeEnv(gym.Env):
    """The mode MDP over the emulator (module docstring).

    Args:
        scenario: a two-path scenario dict or preset name; default static 4G + 5G.
        app: app dict; default a 2 MB bulk download.
        shares, reinject, rules: the modes (:func:`baselines.modes.scheduler.make_modes`).
        time_unit_s: the reward's time unit [s].
        max_steps: truncate after this many epochs (None: no limit).
    """

    metadata = {"render_modes": []}

    def __init__(
        self,
        scenario: Mapping | str | None = None,
        app: Mapping | str | None = None,
        *,
        shares: Sequence[float] = DEFAULT_SHARES,
        reinject: Sequence[bool] = (False, True),
        rules: Sequence[str] = DEFAULT_RULES,
        time_unit_s: float = 0.1,
        max_steps: int | None = None,
        render_mode: str | None = None,
    ) -> None:
        if not (isinstance(time_unit_s, int | float) and time_unit_s > 0):
            raise ConfigError(f"time_unit_s: must be a positive number, got {time_unit_s!r}")
        if max_steps is not None and int(max_steps) <= 0:
            raise ConfigError(f"max_steps: must be positive, got {max_steps}")
        self.modes = make_modes(list(shares), list(reinject), list(rules))
        self.scenario = normalise_scenario(DEFAULT_SCENARIO if scenario is None else scenario)
        if len(self.scenario["paths"]) != 2:
            raise ConfigError(
                f"the mode MDP needs exactly 2 paths, the scenario has {len(self.scenario['paths'])}"
            )
        self.app = normalise_app(DEFAULT_APP if app is None else app)
        self.time_unit_s = float(time_unit_s)
        self.max_steps = None if max_steps is None else int(max_steps)
        self.render_mode = render_mode
        self.observation_space = spaces.Box(MODE_LOW, MODE_HIGH, (n_inputs(2),), np.float32)
        self.action_space = spaces.Discrete(len(self.modes))
        self.emulator_seed: int | None = None
        self._thread: threading.Thread | None = None
        self._events: queue.SimpleQueue = queue.SimpleQueue()
        self._actions: queue.SimpleQueue = queue.SimpleQueue()
        self._t = 0.0
        self._steps = 0
        self._over = True

    # ------------------------------------------------------------------ API
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self._stop_worker()
        self.emulator_seed = (
            int(seed) if seed is not None else int(self.np_random.integers(0, 2**32))
        )
        self._events, self._actions = queue.SimpleQueue(), queue.SimpleQueue()
        self._thread = threading.Thread(
            target=_episode,
            args=(self.modes, self.scenario, self.app, self.emulator_seed),
            kwargs={"events": self._events, "actions": self._actions},
            name="falcon-mode-episode",
            daemon=True,
        )
        self._steps, self._over = 0, False
        self._thread.start()
        kind, payload = self._next()
        if kind != "decide":
            raise ConfigError(
                f"mode environment: the episode (seed {self.emulator_seed}) ended before its first epoch"
            )
        state, self._t = payload
        return state, {"emulator_seed": self.emulator_seed, "t_s": self._t}

    def step(self, action):
        if self._over:
            raise RuntimeError("episode is over: call reset()")
        a = int(action)
        if not 0 <= a < len(self.modes):
            raise ValueError(f"action {action!r} outside Discrete({len(self.modes)})")
        self._actions.put(a)
        kind, payload = self._next()
        self._steps += 1
        if kind == "decide":
            state, t = payload
            reward = -(t - self._t) / self.time_unit_s
            self._t = t
            truncated = self.max_steps is not None and self._steps >= self.max_steps
            if not truncated:
                return state, reward, False, False, {"t_s": t}
            self._over = True
            self._stop_worker()
            info = {"t_s": t, "episode_steps": self._steps}
            return state, reward, False, True, info
        metrics, end = payload
        reward = -(end - self._t) / self.time_unit_s
        self._over = True
        self._thread = None
        terminated = math.isfinite(metrics["download_time_s"])
        info = {"t_s": end, "metrics": metrics, "episode_steps": self._steps}
        return self._last_state, reward, terminated, not terminated, info

    def close(self):
        self._stop_worker()
        self._over = True

    @property
    def steps(self) -> int:
        """Epochs decided in the current episode."""
        return self._steps

    def __del__(self):
        # the worker holds no reference to the environment: unwind a running episode
        if getattr(self, "_thread", None) is not None:
            self._actions.put(_ABORT)

    # ------------------------------------------------------------ internals
    def _next(self):
        kind, payload = self._events.get()
        if kind == "error":
            self._over, self._thread = True, None
            raise payload
        if kind == "decide":
            self._last_state = payload[0]
        return kind, payload

    def _stop_worker(self) -> None:
        """Unwind an episode still running (its chooser raises), and wait for it."""
        thread, self._thread = self._thread, None
        if thread is not None and thread.is_alive():
            self._actions.put(_ABORT)
            thread.join()


class _ViewedModes(ModeScheduler):
    """A mode scheduler that keeps its connection's view (for the clock)."""

    def reset(self, view) -> None:
        super().reset(view)
        self.view = view


def _episode(
    modes, scenario, app, seed: int, *, events: queue.SimpleQueue, actions: queue.SimpleQueue
) -> None:
    """The worker thread of :class:`ModeEnv`: ``run_episode``'s emulation, whose
    chooser hands each state to the environment and waits for its mode."""

    def chooser(state: np.ndarray) -> int:
        events.put(("decide", (state.copy(), sched.view.now)))
        a = actions.get()
        if a is _ABORT:
            raise _Aborted
        return a

    try:
        sched = _ViewedModes(modes, chooser)
        emu, conn, application, s = setup_episode(scenario, app, sched, seed, normalised=True)
        end = emu.sim.run(until=s["max_duration_s"])
        metrics = closing_metrics(emu, conn, application, end)
        events.put(("done", (metrics, application.start_time + metrics["elapsed_s"])))
    except _Aborted:
        pass
    except BaseException as e:  # handed to the environment, raised in its caller's thread
        events.put(("error", e))


def _rllib_env_creator(env_config=None) -> ModeEnv:
    return ModeEnv(**dict(env_config or {}))


def register_rllib(name: str = "falcon-modes") -> str:
    """Register :class:`ModeEnv` with Ray RLlib (``ray.tune.registry``) under
    ``name``; RLlib's ``env_config`` holds the constructor's arguments. Does
    not start Ray. Returns ``name``."""
    from ray.tune.registry import register_env

    register_env(name, _rllib_env_creator)
    return name


if ENV_ID not in gym.registry:
    gym.register(id=ENV_ID, entry_point="baselines.modes.gym_env:ModeEnv")

__all__ = ["ModeEnv", "ENV_ID", "MODE_LOW", "MODE_HIGH", "register_rllib"]
