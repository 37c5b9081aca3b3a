"""GAPS: a DDPG agent that sets per-subflow GAPs to keep the receiver's
out-of-order queue (OQS) small (Liao et al., "Precise and Adaptable:
Leveraging Deep Reinforcement Learning for GAP-based Multipath Scheduler",
IFIP Networking 2020).

How it acts in this framework's scheduler hook (the paper's design first;
the variants below change three of its choices, and ours are the defaults):

* **Decision epoch**: every data ACK. ACKs arrive through
  :meth:`on_packet_acked`; the next call of :meth:`decide` after one (the
  transport asks right after processing an ACK frame whenever a path has
  room) observes the state (:mod:`baselines.gaps.features`), runs the actor
  and applies its action: GAP_i += round(a_i x ``max_step_packets``),
  clamped to [0, ``max_gap_packets``], for every subflow but the fastest,
  whose GAP is 0 (GAPs count from the fastest subflow; the paper works one
  pair, the order of more subflows by sRTT is ours).
* **Path and data**: the path is minRTT's (unprobed paths first); on the
  fastest path, with retransmissions pending or on an unprobed path, the
  next in-order data (a plain ``int``); on a slower path ``Decision(path,
  gap=GAP_path x payload)``, the GAP kept within
  :func:`baselines.rule_based.common.gap_limit` (so it never reaches past the
  unsent data or the flow-control credit).
* **Reward** of an epoch's action: ``-OQS x reward_scale`` at the next epoch,
  OQS in payload packets as the latest ACK reported it (``view.peer_oqs``,
  the paper's DSS-checksum feedback). ``reward_scale`` (0.01, ours) keeps the
  critic's targets near 1 (-OQS in packets is O(1..100) per epoch, and at
  gamma 0.99 the returns sum to thousands).

Four of the paper's choices are selectable (``configs/agent/gaps_paper.yaml``
is the paper's: ``epoch: ack``, ``reward: oqs``, ``gap_base: zero``,
``action: delta`` with 8-packet steps, a step every 4 epochs and 1 000
warm-up transitions; ``gaps.yaml`` and the constructor's defaults are ours:
``srtt``, ``oqs_mean``, ``model``, ``scale``):

* ``epoch: srtt``: at most one decision per sRTT of the fastest subflow,
  instead of every ACK. A GAP acts on the OQS a slow-path RTT later, about
  500 ACK epochs at 50 Mbit/s: beyond a gamma of 0.99's horizon (~100).
* ``reward: oqs_mean``: the OQS averaged over the epoch (time-weighted, from
  every ACK's report) instead of its value at one ACK.
* ``gap_base: model``: the GAP is built on the model GAP
  (:func:`baselines.gaps.features.model_gaps`: what the faster subflows
  deliver during the slower one's extra one-way delay), so that an untrained
  actor starts at the model's GAP.
* ``action``: ``delta`` (the paper's) changes the GAP (or its offset from the
  model) by up to ``max_step_packets``; ``absolute`` sets it, a in [-1, 1]
  spanning the whole range; ``scale`` (ours, with ``gap_base: model``) sets
  GAP = model x 4^a. Measured on the default setting of ``experiment=gaps``:
  an integrated ``delta`` drifts to a bound (a small bias of the actor adds
  up over hundreds of epochs: the GAPs went to 0 after the first second, and
  further with more training), ``absolute`` overshoots (a 0.1 bias is 26
  packets), while ``scale`` keeps a bias harmless (0.1 is x1.15).

Training (:meth:`fit`, through ``python -m falcon.train agent=gaps``): online
DDPG over ``episodes`` downloads, each on the scenario with its paths' RTTs
redrawn from ``rtt_ranges_ms`` (the paper's default setting: the fast path
U[20, 50] ms, the slow one U[50, 100] ms), OU exploration noise, one gradient
step every ``train_every`` epochs once ``warmup`` transitions are stored.
Evaluation is greedy (the actor alone). :meth:`save` writes ``model.h5``
(:mod:`baselines.gaps.export`: every weight of actor and critic, the
network config); ``model=`` loads one.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from baselines.dqn.learner import torch_threads
from baselines.gaps.features import N_FEATURES, SubflowObserver, model_gaps, rtt_order
from baselines.rule_based.common import fastest, gap_limit, minrtt_choice
from envs.errors import ConfigError
from envs.scheduler import ConnectionView, Decision, Scheduler, Trainable

if TYPE_CHECKING:  # torch: imported when training starts
    from baselines.gaps.ddpg import OUNoise, Replay

MODEL_FILE = "model.h5"
#: decision epochs: every data ACK (the paper's) | at most one per sRTT of the fastest subflow
EPOCHS = ("ack", "srtt")
#: reward: -OQS at the epoch (the paper's) | -its time average over the epoch
REWARDS = ("oqs", "oqs_mean")
#: what the actions move: the GAP itself (the paper's) | an offset from the model GAP
GAP_BASES = ("zero", "model")
#: what an action is: a change of the GAP (or offset) by up to max_step packets (the paper's) |
#: the GAP (or offset) itself, a in [-1, 1] spanning [0, max_gap] (or [-max_gap, max_gap]) |
#: a factor on the model GAP, 4^a (gap_base: model only)
ACTIONS = ("delta", "absolute", "scale")
CONFIG_FILE = "agent.json"


def _check_options(
    *,
    max_gap_packets,
    max_step_packets,
    reward_scale,
    train_every,
    threads,
    epoch,
    reward,
    gap_base,
    action,
) -> None:
    """Raise :class:`ConfigError` naming the first option of :class:`GAPS` out of range."""
    if not isinstance(max_gap_packets, int) or max_gap_packets < 0:
        raise ConfigError(f"gaps.max_gap_packets: must be an integer >= 0, got {max_gap_packets!r}")
    if not isinstance(max_step_packets, int) or max_step_packets < 1:
        raise ConfigError(
            f"gaps.max_step_packets: must be a positive integer, got {max_step_packets!r}"
        )
    if not reward_scale > 0:
        raise ConfigError(f"gaps.reward_scale: must be positive, got {reward_scale!r}")
    if not isinstance(train_every, int) or train_every < 1:
        raise ConfigError(f"gaps.train_every: must be a positive integer, got {train_every!r}")
    for key, value, known in (
        ("epoch", epoch, EPOCHS),
        ("reward", reward, REWARDS),
        ("gap_base", gap_base, GAP_BASES),
        ("action", action, ACTIONS),
    ):
        if value not in known:
            raise ConfigError(f"gaps.{key}: unknown value {value!r}; known: {', '.join(known)}")
    if action == "scale" and gap_base != "model":
        raise ConfigError("gaps.action: 'scale' multiplies the model GAP; it needs gap_base: model")
    if not isinstance(threads, int) or threads < 1:
        raise ConfigError(f"gaps.threads: must be a positive integer, got {threads!r}")


class GAPS(Scheduler, Trainable):
    name = "gaps"
    wants_packet_feedback = True

    def __init__(
        self,
        *,
        size: str = "cpu",
        network: Mapping | None = None,
        max_gap_packets: int = 256,
        max_step_packets: int = 16,
        reward_scale: float = 0.01,
        train_every: int = 1,
        epoch: str = "srtt",
        reward: str = "oqs_mean",
        gap_base: str = "model",
        action: str = "scale",
        actor_lr: float = 1e-4,
        critic_lr: float = 1e-3,
        tau: float = 0.001,
        gamma: float = 0.99,
        batch_size: int = 64,
        replay_capacity: int = 100_000,
        warmup: int = 200,
        ou_theta: float = 0.15,
        ou_sigma: float = 0.2,
        ou_decay: float = 0.9999,
        threads: int = 1,
        seed: int = 0,
        model: str | None = None,
    ) -> None:
        from baselines.gaps.ddpg import DDPG, DDPGConfig
        from baselines.gaps.network import net_config

        _check_options(
            max_gap_packets=max_gap_packets,
            max_step_packets=max_step_packets,
            reward_scale=reward_scale,
            train_every=train_every,
            threads=threads,
            epoch=epoch,
            reward=reward,
            gap_base=gap_base,
            action=action,
        )
        self.epoch = epoch
        self.reward = reward
        self.gap_base = gap_base
        self.action = action
        self.threads = threads
        self.size = size
        self.network = dict(network or {})
        self.max_gap_packets = max_gap_packets
        self.max_step_packets = max_step_packets
        self.reward_scale = float(reward_scale)
        self.train_every = train_every
        self.seed = int(seed)
        self.ddpg_config = DDPGConfig(
            actor_lr=actor_lr,
            critic_lr=critic_lr,
            tau=tau,
            gamma=gamma,
            batch_size=int(batch_size),
            replay_capacity=int(replay_capacity),
            warmup=int(warmup),
        )
        self.noise_config = {
            "theta": float(ou_theta),
            "sigma": float(ou_sigma),
            "decay": float(ou_decay),
        }
        self.net_config = net_config(N_FEATURES, size, **self.network)
        self.ddpg = DDPG(self.net_config, self.ddpg_config, self.seed)
        self.observer = SubflowObserver(self.net_config.max_subflows)
        self.learning = False
        self.replay: Replay | None = None
        self.noise: OUNoise | None = None
        self.rng = np.random.default_rng(np.random.SeedSequence((self.seed, 18)))
        self.gaps: list[float] = []  # the GAPs in force, per path index [packets]
        self.offsets: list[
            float
        ] = []  # what the actions integrate: the GAPs, or their offsets from the model
        self._acked = True
        self._prev = None
        self._t_epoch = 0.0
        self._oqs_area = 0.0  # integral of the reported OQS over the epoch [byte s]
        self._oqs_last = 0
        self._oqs_t = 0.0
        self.epochs = 0
        self.last_losses: dict[str, float] = {}
        if model is not None:
            self.load(model)

    # ------------------------------------------------------------ scheduler
    def reset(self, view: ConnectionView) -> None:
        n = len(view.paths)
        if n > self.net_config.max_subflows:
            raise ConfigError(
                f"gaps: the encoder takes at most {self.net_config.max_subflows} subflows, "
                f"the connection has {n}"
            )
        self.gaps = [0.0] * n
        self.offsets = [0.0] * n
        self.observer.reset(n, view.now)
        self._acked = True
        self._prev = None
        self._t_epoch = self._oqs_t = view.now
        self._oqs_area = 0.0
        self._oqs_last = 0
        if self.noise is not None:
            self.noise.reset()

    def on_packet_acked(self, view: ConnectionView, path: int, size: int, sent_time: float) -> None:
        self._acked = True
        now = view.now
        self._oqs_area += self._oqs_last * (now - self._oqs_t)
        self._oqs_last = view.peer_oqs
        self._oqs_t = now

    def decide(self, view: ConnectionView) -> int | Decision | None:
        if self._acked and (
            self.epoch == "ack" or view.now - self._t_epoch >= _fastest_srtt(view.paths)
        ):
            self._acked = False
            self._epoch(view)
        paths = view.paths
        c = minrtt_choice(paths)
        if c is None:
            return None
        if view.retransmit_bytes > 0 or not paths[c].has_rtt_sample or c == fastest(paths):
            return c
        payload = view.payload
        gap = int(self.gaps[c] + 0.5) * payload
        if gap > 0:
            lim = gap_limit(view)
            if gap > lim:
                gap = lim - lim % payload
        return Decision(c, gap=gap)

    def _epoch(self, view: ConnectionView) -> None:
        """Observe, learn from the previous action's outcome, act (module docstring)."""
        model = model_gaps(view.paths)
        x, mask, order = self.observer.observe(view, self.gaps, model, float(self.max_gap_packets))
        if self.learning and self._prev is not None:
            px, pm, pa = self._prev
            self.replay.add(px, pm, pa, self._reward(view), x, mask, False)
        self._t_epoch = self._oqs_t = view.now
        self._oqs_area = 0.0
        with torch_threads(self.threads):
            a = self.ddpg.act(x, mask)
        if self.learning:
            a = np.clip(a + self.noise.sample(), -1.0, 1.0) * mask
            a[0] = 0.0  # the fastest subflow's GAP stays 0
            self._train_step()
        self._prev = (x, mask, a)
        self.epochs += 1
        step = self.max_step_packets
        top = float(self.max_gap_packets)
        base = self.gap_base == "model"
        for r, i in enumerate(order):
            if r == 0:
                self.gaps[i] = self.offsets[i] = 0.0
                continue
            if self.action == "delta":
                o = self.offsets[i] + round(float(a[r]) * step)
            elif self.action == "scale":  # GAP = model x 4^a: a in [-1, 1] spans x0.25 .. x4
                o = model[i] * (4.0 ** float(a[r]) - 1.0) if base else float(a[r])
            else:  # absolute: a in [-1, 1] spans the whole range
                o = round(float(a[r]) * top) if base else round((float(a[r]) + 1.0) * 0.5 * top)
            lo = -top if base else 0.0
            o = lo if o < lo else (top if o > top else o)
            self.offsets[i] = o
            g = o + model[i] if base else o
            self.gaps[i] = 0.0 if g < 0.0 else (top if g > top else g)

    def _reward(self, view: ConnectionView) -> float:
        """Of the previous action: ``-OQS x reward_scale``, OQS [payload packets]
        as the latest ACK reported it (``reward: oqs``, the paper's) or its
        time average over the epoch (``oqs_mean``)."""
        oqs = view.peer_oqs
        if self.reward == "oqs_mean":
            dt = view.now - self._t_epoch
            if dt > 0.0:
                oqs = (self._oqs_area + self._oqs_last * (view.now - self._oqs_t)) / dt
        return -oqs / view.payload * self.reward_scale

    def _train_step(self) -> None:
        cfg = self.ddpg_config
        if self.epochs % self.train_every or len(self.replay) < max(cfg.warmup, cfg.batch_size):
            return
        with torch_threads(self.threads):
            self.last_losses = self.ddpg.update(self.replay.sample(self.rng, cfg.batch_size))

    def end_episode(self, view: ConnectionView) -> None:
        """Close the last transition (done: the download completed)."""
        if self.learning and self._prev is not None:
            x, mask, _ = self.observer.observe(
                view, self.gaps, model_gaps(view.paths), float(self.max_gap_packets)
            )
            px, pm, pa = self._prev
            self.replay.add(px, pm, pa, self._reward(view), x, mask, True)
        self._prev = None

    # ------------------------------------------------------------- training
    def fit(
        self,
        scenario,
        app,
        seed: int = 0,
        log: Callable | None = None,
        progress: bool = True,
        episodes: int = 60,
        rtt_ranges_ms: Sequence[Sequence[float]] | None = None,
        size_bytes: int | None = None,
        **unknown,
    ) -> Mapping[str, float]:
        """Online DDPG over ``episodes`` downloads (module docstring);
        ``rtt_ranges_ms``: per path ``[lo, hi]`` (uniform, redrawn per
        episode) or None (the scenario's RTTs); ``size_bytes``: the size of
        each training download (None: the app's)."""
        from baselines.gaps.ddpg import OUNoise, Replay
        from envs.runner import closing_metrics, setup_episode
        from envs.scenario import normalise_scenario
        from envs.sim import collector_paused

        if unknown:
            raise ConfigError(
                f"gaps.train: unknown key(s) {sorted(unknown)}; known: episodes, rtt_ranges_ms, "
                "size_bytes"
            )
        if not isinstance(episodes, int) or episodes < 1:
            raise ConfigError(f"gaps.train.episodes: must be a positive integer, got {episodes!r}")
        if size_bytes is not None:
            if not isinstance(size_bytes, int) or size_bytes < 1:
                raise ConfigError(
                    f"gaps.train.size_bytes: must be a positive integer, got {size_bytes!r}"
                )
            app = {"kind": "bulk", "size_bytes": size_bytes}
        base = normalise_scenario(scenario)
        ranges = _check_ranges(rtt_ranges_ms, len(base["paths"]))
        cfg = self.ddpg_config
        self.replay = Replay(cfg.replay_capacity, self.net_config.max_subflows, N_FEATURES)
        self.noise = OUNoise(self.net_config.max_subflows, self.rng, **self.noise_config)
        rng = np.random.default_rng(np.random.SeedSequence((int(seed), 181)))
        self.learning = True
        t0 = time.perf_counter()
        summary: dict[str, float] = {}
        try:
            for e in range(episodes):
                s = _with_rtts(base, ranges, rng)
                with collector_paused():
                    emu, conn, application, s = setup_episode(s, app, self, int(seed) * 100_003 + e)
                    end = emu.sim.run(s["max_duration_s"])
                    self.end_episode(conn)
                    m = closing_metrics(emu, conn, application, end)
                    del emu, conn, application
                row = {
                    "download_time_s": m["download_time_s"],
                    "oqs_mean_kb": m["oqs_mean_bytes"] / 1e3,
                    "oqs_p99_kb": m["oqs_p99_bytes"] / 1e3,
                    "updates": float(self.ddpg.updates),
                    **self.last_losses,
                }
                if log is not None:
                    log({f"train/{k}": float(v) for k, v in row.items()}, step=e)
                if progress:
                    print(
                        f"gaps: episode {e + 1}/{episodes}: {row['download_time_s']:.3f} s, OQS mean "
                        f"{row['oqs_mean_kb']:.1f} KB p99 {row['oqs_p99_kb']:.1f} KB, "
                        f"{self.ddpg.updates} updates [{time.perf_counter() - t0:.0f} s]",
                        flush=True,
                    )
                summary = row
        finally:
            self.learning = False
            self.replay = None
        summary["train_wall_s"] = time.perf_counter() - t0
        return summary

    # ---------------------------------------------------------------- files
    def save(self, directory) -> None:
        """``model.h5`` (every weight, :mod:`baselines.gaps.export`) and ``agent.json``."""
        from baselines.dqn.files import atomic_path
        from baselines.gaps.export import write_hdf5

        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        write_hdf5(d / MODEL_FILE, self)
        with atomic_path(d / CONFIG_FILE) as tmp:
            tmp.write_text(json.dumps(self.hyperparameters(), indent=2) + "\n")

    def load(self, path) -> None:
        """Weights from ``model.h5`` (or a folder holding it); the network config must match."""
        from baselines.gaps.export import read_into

        p = Path(path)
        read_into(p / MODEL_FILE if p.is_dir() else p, self)

    def hyperparameters(self) -> dict:
        return {
            "agent": "gaps",
            "size": self.size,
            "network": self.net_config.as_dict(),
            "max_gap_packets": self.max_gap_packets,
            "max_step_packets": self.max_step_packets,
            "reward_scale": self.reward_scale,
            "train_every": self.train_every,
            "threads": self.threads,
            "epoch": self.epoch,
            "reward": self.reward,
            "gap_base": self.gap_base,
            "action": self.action,
            "seed": self.seed,
            "ddpg": dict(vars(self.ddpg_config)),
            "noise": self.noise_config,
        }


def _fastest_srtt(paths) -> float:
    best = float("inf")
    for p in paths:
        if p.srtt < best:
            best = p.srtt
    return best


def _check_ranges(ranges, n_paths: int):
    if ranges is None:
        return None
    ranges = [list(r) for r in ranges]
    if len(ranges) != n_paths or any(
        len(r) != 2 or not 0 < float(r[0]) <= float(r[1]) for r in ranges
    ):
        raise ConfigError(
            f"gaps.train.rtt_ranges_ms: expected {n_paths} pairs [lo, hi] with 0 < lo <= hi, "
            f"got {ranges!r}"
        )
    return [(float(lo), float(hi)) for lo, hi in ranges]


def _with_rtts(base: dict, ranges, rng: np.random.Generator) -> dict:
    from envs.plain import copy_plain

    s = copy_plain(base)
    if ranges is not None:
        for p, (lo, hi) in zip(s["paths"], ranges):
            p["rtt_ms"] = float(rng.uniform(lo, hi))
    return s


__all__ = ["GAPS", "MODEL_FILE", "CONFIG_FILE", "rtt_order"]
