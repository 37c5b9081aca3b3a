"""Hybrid MPTCP (Pokhrel et al., "Fair and Efficient Distributed Edge Learning
with Hybrid Multipath TCP", IEEE/ACM ToN 2023) and DRL-MPTCP.

Two timescales on one connection of the emulator:

* **Outer loop (learned), once per time slot** (``slot_s``, 0.2 s emulated):
  a timer started by :meth:`reset` measures the six per-subflow features of
  the slot that ends (:mod:`baselines.hybrid.features`), scores the previous
  slot's action (reward ``sum_i log rate_i``), runs the actor (an LSTM over
  the subflows in path order, :mod:`baselines.hybrid.network`) and applies
  its window exponents: ``cwnd_i <- clamp(cwnd_i x 2^a_i, min_window,
  max_window)``, ``max_window`` the smaller of the controller's and
  ``max_window_packets``. The schedule shares follow from the new windows,
  ``h_i = (w_i / tau_i) / sum_j (w_j / tau_j)`` (tau = sRTT).
* **Inner loop, between slots**: with ``inner_loop=True`` (Hybrid MPTCP) the
  path's own congestion control evolves the windows (LIA with the scenario's
  ``cc: lia``: halve on loss, the coupled increase per ACK); with
  ``inner_loop=False`` (DRL-MPTCP, ``configs/agent/drl_mptcp.yaml``) nothing
  does: :meth:`reset` installs :class:`envs.cc.held.HeldWindow` on every
  path (:func:`envs.cc.install_cc`), starting from the window the path's
  controller had (the scenario's initial window).

``action`` (what a_i does): ``scale`` (the paper's, and DRL-MPTCP's) is the
one-shot ``cwnd_i x 2^a_i`` above; ``gain`` (ours, ``configs/agent/hybrid.yaml``)
wraps each path's controller in :class:`envs.cc.scaled.ScaledWindow` and
sets its gain ``2^(gain_bits x a_i)``: the path sends with gain x LIA's
window until the next slot, LIA still reacting to every ACK and loss. Why:
LIA undoes a one-shot scaling within the slot (at 50 ms RTT and 3 % loss it
halves up to four times per 200 ms slot), so the paper's hybrid stays where
LIA is (measured on ``experiment=hybrid``: 1.14x LIA's iteration time, 11-23 %
of Exp. 1's capacity against LIA's 12-25 %); a held gain keeps the agent's
decision in force while LIA keeps the loss response.

:meth:`decide`: among the paths with room, the one most behind its share of
the decisions made since the slot started (deficit ``h_i x (n + 1) -
n_i``, n decisions so far, n_i on path i; ties to the lower index), WAIT
when no path has room (a connection whose driver never called :meth:`reset`
gets it at its first decision). When the connection is idle at a slot's end (nothing
pending, nothing in flight) the timer stops, and the next decision restarts
it; the slot after an idle time has no previous action to score.

Training (:meth:`fit`, ``python -m falcon.train agent=hybrid``): online DDPG
(:class:`baselines.gaps.ddpg.DDPG` with this package's networks; the paper's
hyperparameters, ours where it gives none) over emulated episodes whose
per-path conditions are drawn from the ``train:`` ranges, optionally with CUBIC flows sharing one path's
bottleneck (:mod:`baselines.hybrid.training`). Exploration: Gaussian noise
``N(0, noise_sigma)`` added to the actions, clipped to [-1, 1]; greedy
after training. Rewards enter the replay times ``reward_scale`` (ours,
keeping the critic's targets O(10) at gamma 0.97); the learning score logged
per episode is the unscaled mean reward per slot.

CPU: :attr:`cpu_seconds_per_slot` is the process time of the slot callback
(measuring, scoring, inference, applying the action) per slot, training
updates excluded (they are counted apart in :attr:`train_cpu_s`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from baselines.dqn.learner import torch_threads
from baselines.hybrid.features import N_FEATURES, SlotMeter, schedule_shares, slot_reward
from envs.errors import ConfigError, is_whole_number
from envs.scheduler import ConnectionView, Decision, Scheduler, Trainable

if TYPE_CHECKING:  # torch: imported when training starts
    from baselines.gaps.ddpg import Replay

MODEL_FILE = "model.h5"
#: what an action does: ``scale`` (the paper's: cwnd x 2^a once per slot) | ``gain`` (ours: a gain on the inner window)
ACTIONS = ("scale", "gain")
CONFIG_FILE = "agent.json"


def _check_options(
    *,
    inner_loop,
    action,
    gain_bits,
    slot_s,
    rate_floor_mbps,
    reward_scale,
    actor_lr,
    critic_lr,
    tau,
    gamma,
    noise_sigma,
    max_window_packets,
    batch_size,
    replay_capacity,
    warmup,
    threads,
) -> None:
    """Raise :class:`ConfigError` naming the first option of :class:`HybridMPTCP` out of range
    (the constructor's arguments; units in their names)."""
    if not isinstance(inner_loop, bool):
        raise ConfigError(f"hybrid.inner_loop: must be true or false, got {inner_loop!r}")
    if action not in ACTIONS:
        raise ConfigError(
            f"hybrid.action: unknown action {action!r}; choose one of {list(ACTIONS)}"
        )
    if action == "gain" and not inner_loop:
        raise ConfigError(
            "hybrid.action: 'gain' scales the inner loop's window; it needs inner_loop: true"
        )
    if (
        isinstance(gain_bits, bool)
        or not isinstance(gain_bits, int | float)
        or not 0 < gain_bits <= 8
    ):
        raise ConfigError(f"hybrid.gain_bits: must be a number in (0, 8], got {gain_bits!r}")
    for key, v in (
        ("slot_s", slot_s),
        ("rate_floor_mbps", rate_floor_mbps),
        ("reward_scale", reward_scale),
        ("actor_lr", actor_lr),
        ("critic_lr", critic_lr),
        ("tau", tau),
    ):
        if isinstance(v, bool) or not isinstance(v, int | float) or not v > 0:
            raise ConfigError(f"hybrid.{key}: must be a positive number, got {v!r}")
    if isinstance(gamma, bool) or not isinstance(gamma, int | float) or not 0.0 <= gamma < 1.0:
        raise ConfigError(f"hybrid.gamma: must be in [0, 1), got {gamma!r}")
    if isinstance(noise_sigma, bool) or not isinstance(noise_sigma, int | float) or noise_sigma < 0:
        raise ConfigError(f"hybrid.noise_sigma: must be a number >= 0, got {noise_sigma!r}")
    for key, v, lo in (
        ("max_window_packets", max_window_packets, 1),
        ("batch_size", batch_size, 1),
        ("replay_capacity", replay_capacity, 1),
        ("warmup", warmup, 0),
        ("threads", threads, 1),
    ):
        if not is_whole_number(v, lo):
            raise ConfigError(f"hybrid.{key}: must be an integer >= {lo}, got {v!r}")


class HybridMPTCP(Scheduler, Trainable):
    name = "hybrid"

    def __init__(
        self,
        *,
        inner_loop: bool = True,
        slot_s: float = 0.2,
        network: Mapping | None = None,
        max_window_packets: int = 4096,
        rate_floor_mbps: float = 0.1,
        reward_scale: float = 0.1,
        actor_lr: float = 9e-4,
        critic_lr: float = 9e-3,
        tau: float = 0.005,
        gamma: float = 0.97,
        batch_size: int = 64,
        replay_capacity: int = 2048,
        warmup: int = 256,
        noise_sigma: float = 0.2,
        threads: int = 1,
        seed: int = 0,
        model: str | None = None,
        action: str = "scale",
        gain_bits: float = 3.0,
    ) -> None:
        from baselines.gaps.ddpg import DDPG, DDPGConfig
        from baselines.hybrid.network import HybridNetConfig, build

        _check_options(
            inner_loop=inner_loop,
            action=action,
            gain_bits=gain_bits,
            slot_s=slot_s,
            rate_floor_mbps=rate_floor_mbps,
            reward_scale=reward_scale,
            actor_lr=actor_lr,
            critic_lr=critic_lr,
            tau=tau,
            gamma=gamma,
            noise_sigma=noise_sigma,
            max_window_packets=max_window_packets,
            batch_size=batch_size,
            replay_capacity=replay_capacity,
            warmup=warmup,
            threads=threads,
        )
        self.inner_loop = inner_loop
        self.action = action
        self.gain_bits = float(gain_bits)
        self.name = "hybrid" if inner_loop else "drl_mptcp"
        self.slot_s = float(slot_s)
        self.max_window_packets = max_window_packets
        self.rate_floor_mbps = float(rate_floor_mbps)
        self.reward_scale = float(reward_scale)
        self.noise_sigma = float(noise_sigma)
        self.threads = threads
        self.seed = int(seed)
        try:
            self.net_config = HybridNetConfig(n_features=N_FEATURES, **dict(network or {}))
        except TypeError as e:
            raise ConfigError(f"hybrid.network: {e}") from None
        self.ddpg_config = DDPGConfig(
            actor_lr=float(actor_lr),
            critic_lr=float(critic_lr),
            tau=float(tau),
            gamma=float(gamma),
            batch_size=batch_size,
            replay_capacity=replay_capacity,
            warmup=warmup,
        )
        self.ddpg = DDPG(self.net_config, self.ddpg_config, self.seed, build=build)
        self.rng = np.random.default_rng(np.random.SeedSequence((self.seed, 2002)))
        self.meter = SlotMeter()
        self.shares: list[float] = []
        self.actions: list[float] = []  # the latest window exponents a_i
        self._sent: list[int] = []  # decisions per path since the slot started
        self._total = 0
        self._gen = 0  # the live timer's generation (a reset orphans older ones)
        self._armed = False
        self._prev = None  # (x, action) of the slot that is running
        # training state (fit)
        self.learning = False
        self.replay: Replay | None = None
        self.sample_limit = None
        self.samples = 0
        self.last_losses: dict[str, float] = {}
        self.rewards: list[float] = []  # reward of every slot measured (unscaled)
        self.throughputs: list[float] = []  # connection throughput of every slot [Mbit/s]
        # CPU accounting
        self.slots = 0
        self.slot_cpu_s = 0.0
        self.train_cpu_s = 0.0
        if model is not None:
            self.load(model)

    # ------------------------------------------------------------ scheduler
    def reset(self, view: ConnectionView) -> None:
        paths = view.paths
        if not self.inner_loop:
            from envs.cc import HeldWindow, install_cc

            for p in paths:
                old = p.cc
                if isinstance(old, HeldWindow):
                    continue
                held = HeldWindow(p.mss, 1, max_window_bytes=old.max_window)
                held.cwnd = old.cwnd
                held.min_window = old.min_window
                install_cc(p, held)
        elif self.action == "gain":
            from envs.cc import install_cc
            from envs.cc.scaled import ScaledWindow

            for p in paths:
                if not isinstance(p.cc, ScaledWindow):
                    scaled = ScaledWindow(p.cc)
                    scaled.max_window = min(p.cc.max_window, float(self.max_window_packets * p.mss))
                    install_cc(p, scaled)
        self.shares = schedule_shares(paths)
        self.actions = [0.0] * len(paths)
        self._prev = None
        self._gen += 1
        self._arm(view)

    def _arm(self, view: ConnectionView) -> None:
        """Start a slot now; its end is a timer event."""
        now = view.now
        self.meter.start(view.paths, now)
        self._sent = [0] * len(view.paths)
        self._total = 0
        self._armed = True
        view.sim.schedule(now + self.slot_s, self._slot, (view, self._gen))

    def decide(self, view: ConnectionView) -> int | Decision | None:
        if not self._armed:
            if len(self.shares) != len(view.paths):  # a connection that never called reset()
                self.reset(view)
            else:
                self._prev = None
                self._arm(view)
        now = view.now
        shares = self.shares
        sent = self._sent
        n = self._total + 1
        best = -1
        best_deficit = -1e300
        for p in view.paths:
            if p.may_send(now):
                i = p.index
                d = shares[i] * n - sent[i]
                if d > best_deficit:
                    best, best_deficit = i, d
        if best < 0:
            return None
        sent[best] += 1
        self._total = n
        return best

    # ------------------------------------------------------------- the slot
    def _slot(self, arg) -> None:
        """Timer event: the end of a slot and the start of the next (module docstring)."""
        conn, gen = arg
        if gen != self._gen:
            return
        t0 = time.process_time()
        paths = conn.paths
        now = conn.sim.now
        x, thr = self.meter.measure(paths, now, self.shares)
        r = slot_reward(thr, self.rate_floor_mbps)
        mask = np.ones(len(paths), np.float32)
        if self.learning:
            self.rewards.append(r)
            self.throughputs.append(float(thr.sum()))
            if self._prev is not None:
                px, pa = self._prev
                self.replay.add(px, mask, pa, r * self.reward_scale, x, mask, False)
                self.samples += 1
        with torch_threads(self.threads):
            a = self.ddpg.act(x, mask)
        if self.learning and self.noise_sigma > 0.0:
            a = np.clip(
                a + self.rng.normal(0.0, self.noise_sigma, a.shape).astype(np.float32), -1.0, 1.0
            )
        idle = conn.pending_bytes <= 0 and all(p.bytes_in_flight <= 0 for p in paths)
        self.meter.start(paths, now)  # the windows before the action: window_change's base
        self._apply(paths, a)
        self.shares = schedule_shares(paths)
        self._sent = [0] * len(paths)
        self._total = 0
        self._prev = (x, a)
        self.slots += 1
        if idle:
            self._armed = False
            self._prev = None
        else:
            conn.sim.schedule(now + self.slot_s, self._slot, arg)
        self.slot_cpu_s += time.process_time() - t0
        if self.learning:
            t1 = time.process_time()
            cfg = self.ddpg_config
            if len(self.replay) >= max(cfg.warmup, cfg.batch_size):
                with torch_threads(self.threads):
                    self.last_losses = self.ddpg.update(
                        self.replay.sample(self.rng, cfg.batch_size)
                    )
            self.train_cpu_s += time.process_time() - t1
            if self.sample_limit is not None and self.samples >= self.sample_limit:
                conn.sim.stop()

    def _apply(self, paths, a) -> None:
        """``scale``: ``cwnd_i <- clamp(cwnd_i x 2^a_i, min_window, max_window)``;
        ``gain``: the gain on the inner window ``2^(gain_bits x a_i)``."""
        self.actions = [float(v) for v in a]
        if self.action == "gain":
            for p, ai in zip(paths, self.actions):
                p.cc.set_gain(2.0 ** (self.gain_bits * ai))
            return
        for p, ai in zip(paths, self.actions):
            cc = p.cc
            top = min(cc.max_window, float(self.max_window_packets * p.mss))
            w = cc.cwnd * 2.0**ai
            cc.cwnd = cc.min_window if w < cc.min_window else (top if w > top else w)

    @property
    def cpu_seconds_per_slot(self) -> float:
        """Process time [s] of the slot callback per slot, training updates excluded."""
        return self.slot_cpu_s / self.slots if self.slots else 0.0

    def act(self, x: np.ndarray) -> np.ndarray:
        """The greedy window exponents [S] for one state ``x`` [S, 6]."""
        with torch_threads(self.threads):
            return self.ddpg.act(np.asarray(x, np.float32), np.ones(len(x), np.float32))

    # ------------------------------------------------------------- training
    def fit(
        self,
        scenario,
        app,
        seed: int = 0,
        log: Callable | None = None,
        progress: bool = True,
        **train,
    ) -> Mapping[str, float]:
        """Online DDPG over emulated episodes (:func:`baselines.hybrid.training.fit`)."""
        from baselines.hybrid.training import fit

        return fit(self, scenario, app, seed=seed, log=log, progress=progress, **train)

    # ---------------------------------------------------------------- files
    def save(self, directory) -> None:
        """``model.h5`` (every weight, :mod:`baselines.hybrid.export`) and ``agent.json``."""
        from baselines.dqn.files import atomic_path
        from baselines.hybrid.export import write_hdf5

        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        write_hdf5(d / MODEL_FILE, self)
        with atomic_path(d / CONFIG_FILE) as tmp:
            tmp.write_text(json.dumps(self.hyperparameters(), indent=2) + "\n")

    def load(self, path) -> None:
        """Weights from ``model.h5`` (or a folder holding it); the network config must match."""
        from baselines.hybrid.export import read_into

        p = Path(path)
        read_into(p / MODEL_FILE if p.is_dir() else p, self)

    def hyperparameters(self) -> dict:
        return {
            "agent": self.name,
            "inner_loop": self.inner_loop,
            "action": self.action,
            "gain_bits": self.gain_bits,
            "slot_s": self.slot_s,
            "network": self.net_config.as_dict(),
            "max_window_packets": self.max_window_packets,
            "rate_floor_mbps": self.rate_floor_mbps,
            "reward_scale": self.reward_scale,
            "noise_sigma": self.noise_sigma,
            "threads": self.threads,
            "seed": self.seed,
            "ddpg": dict(vars(self.ddpg_config)),
        }


class DRLMPTCP(HybridMPTCP):
    """DRL-MPTCP: :class:`HybridMPTCP` without the inner loop (``inner_loop=False``
    by default; the registry's ``drl_mptcp``)."""

    name = "drl_mptcp"

    def __init__(self, *, inner_loop: bool = False, **kw) -> None:
        super().__init__(inner_loop=inner_loop, **kw)


__all__ = ["HybridMPTCP", "DRLMPTCP", "MODEL_FILE", "CONFIG_FILE"]
