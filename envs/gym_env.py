"""Gymnasium environment of the learned schedulers' MDPs: one step = one scheduling decision.

The emulator calls its scheduler from inside the event loop; this module turns
that around. An internal scheduler (:class:`envs.gym_agents.PacketAgent`, or
:class:`~envs.gym_agents.CompletionAgent` in the completion MDP) answers a
decision request with the action the environment was given, or, when there is
none, records that a decision is needed, stops the simulator and answers
"wait". :meth:`MultipathSchedulingEnv.step` hands the action over, lets the
connection send (``Connection.try_send``), which asks again for the next
packet, and runs the simulator until the next request, the end of the
application or the time limit. The agent's thinking costs no emulated time.

Two MDPs (:mod:`envs.mdp`, their one home); ``reward=`` picks one.

**Completion MDP** (``reward="completion"``, the default, the DQN agents'
default too): observation ``Box(COMPLETION_LOW, COMPLETION_HIGH, (8 *
n_paths + 3,), float32)`` (:func:`envs.mdp.completion_features_into`);
action ``Discrete(n_paths)``: the path gets the next packet if it has window
room, else the agent waits and is asked again at the next ACK (a path that
never sent gets one probe packet first, :func:`envs.mdp.probe_path`); the
reward of a decision is its reduction of the predicted completion time,
known only after the hindsight horizon (:class:`envs.credit.CompletionCredit`),
so, as for ``"packet_rate"`` below, each step's reward is the sum of the
credits that became known during it (the final step adds all the rest) and
the final ``info["decision_rewards"]`` gives each step its own decision's
credit (the RLlib backend trains on those).

**Paper MDP** (FALCON paper Sec. IV-B, "Learning elements"; the other rewards)
------------------------------------------------------------------------------

**Observation**: ``Box(0, OBS_HIGH, (4 * n_paths,), float32)``, one block of four
features per path, in path order (see :data:`FEATURES` and
:func:`feature_names`)::

    [cwnd/RTT, inflight/RTT, swnd/RTT, RTT]  (path 0), [...] (path 1), ...

* windows are counted in packets: ``cwnd`` [bytes on the wire] / packet size,
  ``inflight`` = packets in flight on the path, ``swnd`` = the connection's
  remaining flow-control credit [payload bytes] / payload per packet (the same
  credit on every path, divided by each path's RTT);
* ``RTT`` is the path's smoothed RTT (RFC 9002 ``srtt``; the RFC's initial
  0.333 s before the first sample) in units of :data:`RTT_SCALE_S` (100 ms);
* each window is divided by ``RTT`` (in those units) and by
  :data:`RATE_SCALE_PKTS` (1000 packets per 100 ms, about 108 Mbit/s with
  1350-byte packets), so the three rate features are ~0.01 for an initial
  window before any RTT sample, ~1 for a path running at ~100 Mbit/s and ~10
  for a saturated 1 Gbit/s 5G path; RTT is ~0.2-3;
* every entry is clipped to :data:`OBS_HIGH` (1e4), which real paths do not
  reach; it only keeps the space bounded.

**Action**: ``Discrete(n_paths)``, the path of the next packet (the next
in-order data, retransmissions first). A path is honoured whether or not it has
congestion-window room: without room the packet is committed to that path and
leaves when its window opens, and no other decision is asked for meanwhile
(the state tells the agent the path is congested). The agent is only asked
when some path could send.

**Reward** (``reward=``):

* ``"goodput"``: in-order bytes delivered to the client application
  during the step (from the previous decision to this one) divided by the
  payload of one packet, i.e. "packets of goodput" obtained since the previous
  decision. Finite even when the step takes no emulated time (several
  decisions at one instant: the later ones get 0). The undiscounted return of
  a complete episode is the app size in packets whatever the policy; it is the
  discount (per decision) and the time limit that reward delivering sooner.
* ``"goodput_rate"``: the same bytes divided by the step's emulated duration,
  floored at :data:`GOODPUT_MIN_INTERVAL_S` (1 ms), in units of
  :data:`GOODPUT_RATE_SCALE_BPS` (100 Mbit/s): a time-normalised goodput.
* ``"ack_rate"`` (Peekaboo-style per-packet credit): for every packet acked
  during the step, ``MSS / time to ACK``, in units of ``MSS`` per
  :data:`RTT_SCALE_S` (i.e. ``0.1 s / time_to_ack``), averaged over those
  packets; 0 when none was acked.
* ``"packet_rate"`` (the per-decision credit of FALCON's MDP, the DQN
  agents' reward in :mod:`baselines.dqn.policy`): every decision earns
  ``RTT_SCALE_S / (t_ack - t_decision)`` for the packet it sent (0 if that
  packet is declared lost; :func:`ack_credit`), matched to the path's
  ACK/loss callbacks in sending order. A packet's fate is known about an
  RTT after its decision, when the step that decided it has long returned,
  so the environment gives the credit twice:

  - as the step reward: the sum of the credits that became known during the
    step (whichever decisions they belong to), the final step adding the
    credits still unknown at the end of the episode (see below), so the
    undiscounted return is the sum of the per-decision credits;
  - attributed to the decisions: the final ``info["decision_rewards"]``
    (float32, one entry per step, in step order) holds each step's own
    credit. A learner that can rewrite an episode's rewards once it ends
    trains on the adapter's transitions; the Ray RLlib backend does it in
    an episode-end callback (``baselines.dqn.rllib_backend``).

  Decisions whose fate is still unknown when the episode ends (ACKs after
  the application completed are not reported; a decision held on a
  congested path until the data ran out) get the credit of an ACK at the
  episode's end, ``RTT_SCALE_S / (t_end - t_decision)`` (an upper bound;
  the adapter drops such decisions, an environment step cannot be dropped);
  a step whose action sent nothing gets 0.

**Episode**: one application run (default a 2 MB bulk download over static
4G + 5G). ``terminated`` when the application completes; ``truncated`` when the
scenario's ``max_duration_s`` (or the ``max_duration_s`` argument) of emulated
time passes, or after ``max_steps`` decisions. The final ``info`` carries
``metrics`` (:func:`envs.metrics.episode_metrics`) and ``episode_steps``
(and ``decision_rewards`` with the ``"packet_rate"`` reward).

**Seeding**: a seed means the same as everywhere else in the project:
``reset(seed=s)`` runs the emulator with seed ``s``, the episode that
``envs.run_episode(scenario, app, scheduler, s)`` and ``falcon.evaluate``'s
run with seed ``s`` emulate (``info["emulator_seed"] == s``). It also seeds
``self.np_random`` (Gymnasium convention), from which the scenario sampler, if
any, draws; a ``reset()`` without a seed draws the emulator seed from
``self.np_random`` (in ``[0, 2**32)``), so a seeded sequence of resets
reproduces its episodes bit for bit.

Registered as ``falcon/MultipathScheduling-v0`` on import (its vector entry
point, ``gymnasium.make_vec(..., vectorization_mode="vector_entry_point")``, is
:class:`envs.vector_env.MultipathVectorEnv`: N instances stepped in one call);
:func:`register_rllib` registers it with Ray RLlib.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from envs.apps import normalise_app
from envs.errors import ConfigError
from envs.gym_agents import CompletionAgent, PacketAgent
from envs.gym_core import RUNNING, TERMINATED, EpisodeRun, advance, hand_over
from envs.mdp import (  # the MDP's one home; re-exported here
    COMPLETION,
    COMPLETION_HIGH,
    COMPLETION_LOW,
    COMPLETION_UNIT,
    FEATURES,
    GOODPUT_MIN_INTERVAL_S,
    GOODPUT_RATE_SCALE_BPS,
    HINDSIGHT_RTTS,
    OBS_HIGH,
    PACKET_RATE,
    RATE_SCALE_PKTS,
    REWARDS,
    RTT_SCALE_S,
    ack_credit,
    check_reward_unit,
    feature_names,
    n_inputs,
    observe_into,
    step_reward,
)
from envs.metrics import episode_metrics
from envs.runner import setup_episode
from envs.scenario import normalise_scenario
from envs.scheduler import ConnectionView

#: every reward the environment offers
ENV_REWARDS = (*REWARDS, PACKET_RATE, COMPLETION)
#: final-info key of the per-decision credits of the "packet_rate" reward
DECISION_REWARDS_KEY = "decision_rewards"

ENV_ID = "falcon/MultipathScheduling-v0"
DEFAULT_SCENARIO: dict = {"name": "static_4g_5g", "paths": [{"link": "4g"}, {"link": "5g"}]}
DEFAULT_APP: dict = {"kind": "bulk", "size_bytes": 2_000_000}


def observe(view: ConnectionView) -> np.ndarray:
    """The FALCON state of a connection ``view`` as a float32 array of shape
    ``(4 * n_paths,)`` (see :func:`observe_into`)."""
    return np.asarray(observe_into(view, [0.0] * (4 * len(view.paths))), dtype=np.float32)


class MultipathSchedulingEnv(gym.Env):
    """The multipath-scheduling MDP over the packet-level emulator (see the
    module docstring for observation, action, reward and episode).

    Args:
        scenario: scenario dict (``docs/reference/formats/scenario_schema.md``); default static 4G + 5G.
        app: app dict; default a 2 MB bulk download.
        max_steps: truncate after this many decisions (None: no limit).
        max_duration_s: emulated-time limit [s]; default the scenario's.
        reward: ``"completion"`` (default), ``"goodput"``, ``"goodput_rate"``, ``"ack_rate"`` or
            ``"packet_rate"`` (module docstring, "Reward"); it names the MDP.
        hindsight_rtts: ``"completion"`` only: path estimates of a decision's
            credit taken this many smoothed RTTs after it (:mod:`envs.mdp`).
        reward_unit: ``"completion"`` only: the reward's unit, ``"packet"``
            (default) or ``"time"`` (:data:`envs.mdp.COMPLETION_UNITS`).
        scenario_sampler: ``callable(np_random) -> scenario dict`` called at
            every reset (e.g. a meta-learner's task sampler); overrides
            ``scenario``. Every sampled scenario must have ``n_paths`` paths.
        n_paths: number of paths; inferred from ``scenario`` (or one draw of
            the sampler with a throw-away generator) when not given.

    ``reset(options={"scenario": ..., "app": ...})`` overrides the scenario or
    app for one episode.
    """

    metadata = {"render_modes": []}

    def __init__(
        self,
        scenario: Mapping | None = None,
        app: Mapping | None = None,
        *,
        max_steps: int | None = None,
        max_duration_s: float | None = None,
        reward: str = COMPLETION,
        hindsight_rtts: float = HINDSIGHT_RTTS,
        reward_unit: str = COMPLETION_UNIT,
        scenario_sampler: Callable[[np.random.Generator], Any] | None = None,
        n_paths: int | None = None,
        render_mode: str | None = None,
    ):
        if reward not in ENV_REWARDS:
            raise ConfigError(
                f"reward: unknown reward {reward!r}; choose one of {list(ENV_REWARDS)}"
            )
        if max_steps is not None and int(max_steps) <= 0:
            raise ConfigError(f"max_steps: must be positive, got {max_steps}")
        if max_duration_s is not None and not float(max_duration_s) > 0:
            raise ConfigError(f"max_duration_s: must be positive, got {max_duration_s}")
        self.reward_kind = reward
        self.max_steps = None if max_steps is None else int(max_steps)
        self.max_duration_s = None if max_duration_s is None else float(max_duration_s)
        self.scenario_sampler = scenario_sampler
        self._scenario_cfg = normalise_scenario(DEFAULT_SCENARIO if scenario is None else scenario)
        self._app_cfg = normalise_app(DEFAULT_APP if app is None else app)
        if n_paths is None:
            s = (
                self._scenario_cfg
                if scenario_sampler is None
                else normalise_scenario(scenario_sampler(np.random.default_rng(0)))
            )
            n_paths = len(s["paths"])
        self.n_paths = int(n_paths)
        self.render_mode = render_mode
        self._completion = reward == COMPLETION
        n_in = n_inputs(self.n_paths, reward)
        if self._completion:
            self.observation_space = spaces.Box(
                COMPLETION_LOW, COMPLETION_HIGH, (n_in,), np.float32
            )
        else:
            self.observation_space = spaces.Box(0.0, OBS_HIGH, (n_in,), np.float32)
        self.action_space = spaces.Discrete(self.n_paths)
        self._per_decision = reward == PACKET_RATE
        self._sched = (
            CompletionAgent(float(hindsight_rtts), check_reward_unit(reward_unit))
            if self._completion
            else PacketAgent(ack_feedback=(reward == "ack_rate"), per_decision=self._per_decision)
        )
        self._vals = [0.0] * n_in
        self._pack = struct.Struct(f"={n_in}f").pack_into
        self._rew_goodput = reward == "goodput"
        self.emulation = None
        self.connection = None
        self.application = None
        self.scenario: dict | None = None
        self.emulator_seed: int | None = None
        self._sim = None
        self._run: EpisodeRun | None = None  # the current episode (envs.gym_core)
        self._over = True
        self._inv_payload = 1.0

    # ------------------------------------------------------------------ API
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        options = options or {}
        scenario = options.get("scenario")
        if scenario is None:
            scenario = (
                self.scenario_sampler(self.np_random)
                if self.scenario_sampler is not None
                else self._scenario_cfg
            )
        app = options.get("app", self._app_cfg)
        s = normalise_scenario(scenario)
        if len(s["paths"]) != self.n_paths:
            raise ConfigError(
                f"scenario has {len(s['paths'])} paths; this environment was built "
                f"for {self.n_paths}"
            )
        # a given seed is the emulator's seed (as in run_episode and falcon.evaluate)
        self.emulator_seed = (
            int(seed) if seed is not None else int(self.np_random.integers(0, 2**32))
        )
        sched = self._sched
        if self.emulation is not None:
            # the finished emulation's queued events, event handlers and the
            # connection's app tie it into reference cycles: dropped, reference
            # counting frees it (envs/sim.py, Emulation.close)
            self.emulation.close()
        emu, conn, application, s = setup_episode(
            s, app, sched, self.emulator_seed, normalised=True
        )
        self.emulation, self.connection, self.application, self.scenario = emu, conn, application, s
        self._sim = emu.sim
        until = self.max_duration_s if self.max_duration_s is not None else s["max_duration_s"]
        self._inv_payload = 1.0 / conn.payload
        self._run = EpisodeRun(
            sched,
            conn,
            emu.sim,
            until,
            -1 if self.max_steps is None else self.max_steps,
        )
        self._over = False
        self._advance()  # the app started; run to the first decision request
        return self._observe(), {"emulator_seed": self.emulator_seed}

    def step(self, action):
        if self._over:
            raise RuntimeError("episode is over: call reset()")
        a = int(action)
        if not 0 <= a < self.n_paths:
            raise ValueError(f"action {action!r} outside Discrete({self.n_paths})")
        reward, terminated, truncated, info = self._step(a)
        return self._observe(), reward, terminated, truncated, {} if info is None else info

    def _step(self, a: int) -> tuple[float, bool, bool, dict | None]:
        """One decision with the checked action ``a``: ``(reward, terminated,
        truncated, the final info or None)``; the observation is read after it
        (``_observe``, or :class:`envs.vector_env.MultipathVectorEnv` straight
        into its batch)."""
        run = self._run
        if self._completion:
            outcome = run.step(a)
            reward = run.reward
        else:
            reward = self._packet_step(a)
            outcome = run.count(self._sched.requested)
        if outcome == RUNNING:
            return float(reward), False, False, None
        return self._end(reward, outcome)

    def _end(self, reward: float, outcome: int) -> tuple[float, bool, bool, dict]:
        """The last step's ``(reward, terminated, truncated, final info)``, from its
        reward so far and its outcome (:meth:`envs.gym_core.EpisodeRun.count`)."""
        conn, sched, sim = self.connection, self._sched, self._sim
        terminated = outcome == TERMINATED
        self._over = True
        info = {
            "metrics": episode_metrics(conn, self.application, sim.now),
            "episode_steps": self._run.steps,
        }
        if self._per_decision:
            reward += sched.close_episode(sim.now)
            info[DECISION_REWARDS_KEY] = np.asarray(sched.credits, dtype=np.float32)
        elif self._completion:
            reward += sched.close_episode(conn, sim.now, terminated)
            info[DECISION_REWARDS_KEY] = np.asarray(sched.credits, dtype=np.float32)
        return float(reward), terminated, not terminated, info

    def close(self):
        if self.emulation is not None:
            self.emulation.close()
        self.emulation = self.connection = self.application = self._sim = None
        self._sched.sim = None
        self._over = True

    # ------------------------------------------------------------ internals
    def _advance(self) -> None:
        """Run the emulator until a decision is requested, the app completes,
        the time limit passes or no event is left (:func:`envs.gym_core.advance`)."""
        advance(self._sched, self.connection, self._sim, self._run.until)

    def _packet_step(self, a: int) -> float:
        """The paper MDP's step (every reward but ``"completion"``): the
        action handed over, the emulator run to the next request; its reward."""
        conn = self.connection
        sched = self._sched
        sim = self._sim
        delivered0 = conn.delivered
        t0 = sim.now
        sched.ack_credit = 0.0
        sched.ack_count = 0
        if self._per_decision:
            sched.begin_step()
        hand_over(sched, conn, sim, a, self._run.until)
        if self._rew_goodput:  # inlined: the common case
            return (conn.delivered - delivered0) * self._inv_payload
        if self._per_decision:
            return sched.step_credit
        return step_reward(
            self.reward_kind,
            conn.delivered - delivered0,
            sim.now - t0,
            conn.payload,
            sched.ack_credit,
            sched.ack_count,
        )

    def _observe(self) -> np.ndarray:
        obs = np.empty(len(self._vals), np.float32)
        self._observe_into(obs)
        return obs

    def _observe_into(self, row: np.ndarray) -> None:
        """The observation written into ``row`` (a float32 array, e.g. a row of
        a batch)."""
        if self._completion:  # the credit's float32 row (zeros before any decision)
            self._sched._credit.state_into(row)
        else:
            # Python floats are packed straight into the float32 buffer (struct
            # is several times faster than numpy item or slice assignment for a
            # handful of values)
            self._pack(row, 0, *observe_into(self.connection, self._vals))

    @property
    def steps(self) -> int:
        """Decisions taken in the current episode."""
        return 0 if self._run is None else self._run.steps


def _rllib_env_creator(env_config=None):
    config = dict(env_config or {})
    if "num_envs" in config:  # RLlib's gym_env_vectorize_mode="vector_entry_point"
        from envs.vector_env import MultipathVectorEnv

        return MultipathVectorEnv(**config)
    return MultipathSchedulingEnv(**config)


def register_rllib(name: str = "falcon-multipath") -> str:
    """Register the environment with Ray RLlib (``ray.tune.registry``) under
    ``name``; the RLlib ``env_config`` dict holds the constructor arguments.
    With ``config.env_runners(gym_env_vectorize_mode="vector_entry_point")``
    RLlib's env runners step :class:`envs.vector_env.MultipathVectorEnv`
    (``num_envs_per_env_runner`` instances in one call) instead of a
    ``SyncVectorEnv`` of single environments. Does not start Ray. Returns ``name``."""
    from ray.tune.registry import register_env

    register_env(name, _rllib_env_creator)
    return name


if ENV_ID not in gym.registry:
    gym.register(
        id=ENV_ID,
        entry_point="envs.gym_env:MultipathSchedulingEnv",
        vector_entry_point="envs.vector_env:MultipathVectorEnv",
    )


__all__ = [
    "MultipathSchedulingEnv",
    "register_rllib",
    "feature_names",
    "observe",
    "observe_into",
    "step_reward",
    "ack_credit",
    "ENV_ID",
    "FEATURES",
    "REWARDS",
    "ENV_REWARDS",
    "PACKET_RATE",
    "DECISION_REWARDS_KEY",
    "OBS_HIGH",
    "RTT_SCALE_S",
    "RATE_SCALE_PKTS",
    "GOODPUT_MIN_INTERVAL_S",
    "GOODPUT_RATE_SCALE_BPS",
    "DEFAULT_SCENARIO",
    "DEFAULT_APP",
]
