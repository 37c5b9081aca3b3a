"""DQN-On: a DQN scheduler that learns online, from scratch, with asynchronous updates.

The baseline of the FALCON paper (Sec. V-C): FALCON's
state, action and reward; a DQN that learns while it schedules, with the
trainer apart from the network process (:mod:`baselines.dqn.async_trainer`:
each gradient step costs emulated time, the old weights keep scheduling
until the new ones are deployed). Every decision closes a transition that
enters the replay memory (and the experience log, if one is attached).

Variants (Fig. 3 of the paper):

* DQN-On(Z) (``configs/agent/dqn_on.yaml``): no buffered data.
* DQN-On(N) (``dqn_on_n.yaml``): before going online, ``packets_per_condition``
  (100) decisions of experience are buffered on each of two nearby
  conditions (RTT variation and loss -3 % and +3 %,
  :func:`baselines.dqn.conditions.deviate_scenario`), kept in the replay
  memory, and the network is pre-trained on them.
* DQN-On(W) (``dqn_on_w.yaml``): the same on four conditions (+-3 %, +-6 %).

Online learning never stops: the scheduler keeps learning in every episode
it runs, in :meth:`DQNOn.fit` (``python -m falcon.train``: the online
experience gathered before the evaluation) and in the evaluation episodes
(each starting from the trained state).

``backend: rllib`` trains with Ray RLlib's DQN instead
(:mod:`baselines.dqn.rllib_backend`); the learned weights come back into
this scheduler, which then schedules (and keeps learning) as above. RLlib's
env runners step the vector environment (:mod:`envs.vector_env`):
``rllib.num_envs_per_env_runner`` emulations per call, their actions from
one batched pass of the network. The torch backend stays one connection
learning as it schedules, the paper's setting: its cost is the learner's
(a gradient step per ``train_interval`` decisions), which stepping
emulations together would not reduce.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from baselines.dqn.async_trainer import AsyncTrainer, calibrate
from baselines.dqn.conditions import deviate_scenario
from baselines.dqn.policy import DQNScheduler
from envs.errors import ConfigError
from envs.scenario import normalise_scenario
from envs.scheduler import ConnectionView, Trainable

BACKENDS = ("torch", "rllib")


def _buffer_config(buffer) -> dict | None:
    if buffer is None:
        return None
    if not isinstance(buffer, Mapping):
        raise ConfigError(f"buffer: expected a mapping or null, got {buffer!r}")
    known = {"deviations", "packets_per_condition", "pretrain_steps", "epsilon"}
    unknown = set(buffer) - known
    if unknown:
        raise ConfigError(f"buffer: unknown key(s) {sorted(unknown)}; known: {sorted(known)}")
    devs = buffer.get("deviations")
    if not isinstance(devs, Sequence) or isinstance(devs, str) or not devs:
        raise ConfigError(
            f"buffer.deviations: expected a non-empty list of relative deviations, got {devs!r}"
        )
    out = {
        "deviations": [float(d) for d in devs],
        "packets_per_condition": int(buffer.get("packets_per_condition", 100)),
        "pretrain_steps": int(buffer.get("pretrain_steps", 200)),
        "epsilon": None if buffer.get("epsilon") is None else float(buffer["epsilon"]),
    }
    if out["packets_per_condition"] < 1 or out["pretrain_steps"] < 0:
        raise ConfigError("buffer: packets_per_condition must be >= 1 and pretrain_steps >= 0")
    return out


class DQNOn(DQNScheduler, Trainable):
    """DQN-On (module docstring). Constructor arguments beyond
    :class:`~baselines.dqn.policy.DQNScheduler`'s:

    Args:
        warmup: transitions in the replay memory before training starts.
        train_interval: transitions per gradient step (4: Mnih et al. 2015).
        steps_per_update: gradient steps per job; weights deployed after each job.
        train_step_cost_s: emulated time of one gradient step [s]; ``"auto"``
            calibrates it on this machine; 0 = synchronous learning.
        buffer: null (DQN-On(Z)) or ``{deviations: [...], packets_per_condition,
            pretrain_steps, epsilon}`` (DQN-On(N)/(W)).
        backend: ``"torch"`` (this package's learner) or ``"rllib"``.
        rllib: options of the RLlib backend (:mod:`baselines.dqn.rllib_backend`).
        log_every: progress line on stderr every this many training episodes.
    """

    name = "dqn_on"

    def __init__(
        self,
        *,
        warmup: int = 64,
        train_interval: int = 4,
        steps_per_update: int = 1,
        train_step_cost_s: float | str = 0.00045,
        buffer: Mapping | None = None,
        backend: str = "torch",
        rllib: Mapping | None = None,
        log_every: int = 5,
        **kw,
    ):
        super().__init__(**kw)
        if backend not in BACKENDS:
            raise ConfigError(f"backend: unknown backend {backend!r}; known: {list(BACKENDS)}")
        if int(warmup) < 1:
            raise ConfigError(f"warmup: must be a positive integer, got {warmup!r}")
        if train_step_cost_s == "auto":
            train_step_cost_s = calibrate(self.hidden, technique=self.technique)
        elif isinstance(train_step_cost_s, str):
            raise ConfigError(
                f"train_step_cost_s: expected seconds or 'auto', got {train_step_cost_s!r}"
            )
        self.warmup = int(warmup)
        self.backend = backend
        self.rllib_options = dict(rllib or {})
        if backend == "rllib":
            from baselines.dqn.rllib_backend import check_options

            self.rllib_options = check_options(self.rllib_options)
        self.buffer = _buffer_config(buffer)
        self.buffered = False
        self.log_every = max(1, int(log_every))
        self.trainer = AsyncTrainer(
            self._train_steps,
            self.deploy,
            self._ready,
            step_cost_s=train_step_cost_s,
            train_interval=train_interval,
            steps_per_update=steps_per_update,
        )
        self.recording = True
        self.episodes_run = 0

    # ---------------------------------------------------------- learning
    def _ready(self) -> bool:
        return len(self.replay) >= self.warmup

    def _train_steps(self, n: int) -> float:
        replay, learner, bs = self.replay, self.learner, self.learner_config.batch_size
        loss = 0.0
        for _ in range(n):
            loss = float(learner.update(*replay.sample(bs))[0])
        return loss

    def on_transition(self, state, action, reward, next_state, done, time) -> None:
        self.replay.add(state, action, reward, next_state, done)
        if self.recorder is not None:
            self.recorder.add(state, action, reward, next_state, done, time)
        self.trainer.notify()

    def reset(self, view: ConnectionView) -> None:
        if self.buffer is not None and not self.buffered:
            raise ConfigError(
                f"{self.name}: the buffered experience (buffer:) is gathered by fit(); "
                "train this agent with python -m falcon.train"
            )
        super().reset(view)
        self.trainer.attach(view.sim)

    # ---------------------------------------------------------- episodes
    def run_episode(
        self,
        scenario,
        app,
        seed: int,
        max_duration_s: float | None = None,
        max_decisions: int | None = None,
    ) -> dict[str, float]:
        """One online episode (download) with learning; its metrics.
        ``max_decisions``: record only that many decisions and end the
        episode as soon as their transitions are complete (buffering)."""
        # the budget counts from the first decision (the app starts sending in setup_episode)
        self.record_budget = None if max_decisions is None else int(max_decisions)
        try:
            m = self.drive_episode(scenario, app, seed, max_duration_s)
        finally:
            self.record_budget = None
        self.trainer.flush()
        self.episodes_run += 1
        return m

    def _collect_buffer(self, scenario, app, seed: int) -> dict[str, float]:
        """DQN-On(N)/(W): buffer ``packets_per_condition`` decisions on every
        deviated condition, then pre-train ``pretrain_steps`` steps on them."""
        b = self.buffer
        eps0 = self.epsilon
        if b["epsilon"] is not None:
            self.epsilon = b["epsilon"]
        trainer_cost = self.trainer.step_cost_s
        n0 = len(self.replay) if self.replay is not None else 0
        # the buffered data is collected before the trainer exists: no learning meanwhile
        self.trainer.step_cost_s, interval = 0.0, self.trainer.train_interval
        self.trainer.train_interval = 1 << 62
        self.buffered = True
        decisions0 = self.decisions  # buffering decisions are not online packets
        try:
            for i, d in enumerate(b["deviations"]):
                cond = deviate_scenario(scenario, rtt_variation=d, loss=d)
                self.run_episode(
                    cond, app, seed + 7919 * (i + 1), max_decisions=b["packets_per_condition"]
                )
        finally:
            self.epsilon = eps0
            self.trainer.step_cost_s, self.trainer.train_interval = trainer_cost, interval
            self.trainer.pending = 0
            self.decisions = decisions0
        n = len(self.replay) - n0
        loss = (
            self._train_steps(b["pretrain_steps"])
            if b["pretrain_steps"] and len(self.replay)
            else math.nan
        )
        self.deploy()
        return {"buffered_transitions": float(n), "pretrain_loss": loss}

    def fit(
        self,
        scenario,
        app,
        seed: int = 0,
        episodes: int = 30,
        log: Callable | None = None,
        experience_log: str | None = None,
        progress: bool = True,
        max_duration_s: float | None = None,
    ) -> dict[str, float]:
        """Online experience before the evaluation: ``episodes`` downloads of
        ``app`` over ``scenario`` (seeds ``seed, seed+1, ...``), learning
        asynchronously all along. DQN-On(N)/(W) first buffer their nearby
        conditions. ``log(metrics, step)`` receives each episode's learning
        curve point; ``experience_log`` writes every transition to that HDF5
        file (:mod:`baselines.dqn.experience`). Returns summary metrics.
        """
        if self.backend == "rllib":
            from baselines.dqn.rllib_backend import fit_rllib

            return fit_rllib(
                self, scenario, app, seed=seed, log=log, progress=progress, **self.rllib_options
            )
        s = normalise_scenario(scenario)
        if self.spec is None:
            self.build(len(s["paths"]))
        out: dict[str, float] = {}
        if self.buffer is not None and not self.buffered:
            out.update(self._collect_buffer(s, app, seed))
            if progress:
                print(
                    f"{self.name}: buffered {out['buffered_transitions']:.0f} transitions from "
                    f"{len(self.buffer['deviations'])} nearby conditions, pre-trained "
                    f"{self.buffer['pretrain_steps']} steps",
                    file=sys.stderr,
                    flush=True,
                )
        recorder = None
        if experience_log is not None:
            from baselines.dqn.experience import ExperienceRecorder

            recorder = self.recorder = ExperienceRecorder(
                self.n_paths, reward=self.reward_kind, reward_unit=self.reward_unit
            )
        times: list[float] = []
        t_start = time.perf_counter()
        steps0 = self.trainer.gradient_steps
        try:
            for ep in range(int(episodes)):
                if recorder is not None:
                    recorder.begin_episode(s, seed + ep)
                g0, d0 = self.trainer.gradient_steps, self.decisions
                m = self.run_episode(s, app, seed + ep, max_duration_s)
                losses = self.trainer.take_losses()
                dt = m["download_time_s"]
                times.append(dt)
                point = {
                    "download_time_s": dt,
                    "elapsed_s": m["elapsed_s"],
                    "timed_out": m["timed_out"],
                    "loss": float(np.mean(losses)) if losses else math.nan,
                    "gradient_steps": float(self.trainer.gradient_steps - g0),
                    "decisions": float(self.decisions - d0),
                    "replay_size": float(len(self.replay)),
                    "online_packets": float(self.decisions),
                }
                if log is not None:
                    log(point, step=ep)
                if progress and ((ep + 1) % self.log_every == 0 or ep + 1 == episodes):
                    recent = [t for t in times[-self.log_every :] if not math.isnan(t)]
                    print(
                        f"{self.name}: episode {ep + 1}/{episodes}  download "
                        f"{np.median(recent) if recent else math.nan:.3f} s (median of last "
                        f"{len(recent)})  loss {point['loss']:.4g}  steps "
                        f"{self.trainer.gradient_steps}  packets {self.decisions}  "
                        f"[{time.perf_counter() - t_start:.1f} s]",
                        file=sys.stderr,
                        flush=True,
                    )
        finally:
            self.recorder = None
        if recorder is not None:
            recorder.write(experience_log)
        k = max(1, min(5, len(times)))
        out.update(
            {
                "episodes": float(len(times)),
                "final_download_time_s": float(np.nanmedian(times[-k:])) if times else math.nan,
                "gradient_steps": float(self.trainer.gradient_steps - steps0),
                "online_packets": float(self.decisions),
                "wall_time_s": time.perf_counter() - t_start,
            }
        )
        return out

    def hyperparameters(self) -> dict:
        return {
            **super().hyperparameters(),
            "warmup": self.warmup,
            "train_interval": self.trainer.train_interval,
            "steps_per_update": self.trainer.steps_per_update,
            "train_step_cost_s": self.trainer.step_cost_s,
            "buffer": self.buffer,
            "backend": self.backend,
        }


__all__ = ["DQNOn", "BACKENDS"]
