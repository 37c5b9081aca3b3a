"""Peekaboo (Wu et al., IEEE JSAC 2020), as released, with this framework's fixes
(floats, unit-range features).

Notation: *f* = the lowest-srtt path (with or without cwnd room), *s* = the
lowest-srtt path with room among the others (:mod:`baselines.rule_based.common`).

* **When it decides.** Only when *f* has no room and *s* has; otherwise it
  is minRTT (unprobed paths are probed first, by fewest packets sent). Two
  arms: F (index 0) = wait for *f*, S (index 1) = send on *s*. A wait sets
  the wait flag, which blocks *s* (returns ``None``: the connection asks
  again after the next ACK, loss or application event) until *f* has room
  again; the flag is cleared at the first decision that finds *f* with room.
* **Context** (6 features, in this order):
  [c_f/l_f, q_s/l_s, W/l_f, W/l_s, q_f/l_f, c_s/l_s], c = cwnd [bytes],
  q = bytes in flight, l = latest RTT sample [s], W = connection
  flow-control credit left (``view.send_window``) [bytes]. Every feature is
  a rate [bytes/s]; the released code feeds them raw (bytes per nanosecond).
  Here each is squashed to the unit range with v / (v + k), k =
  ``feature_scale_mbps`` (default 100 Mbit/s = 12.5e6 bytes/s; a list of 6
  gives one k per feature): monotone, 0 at 0, 0.5 at k, -> 1, no clipping,
  so neither a 10 Mbit/s nor a 10 Gbit/s path saturates the model.
* **Learning** (``mode="learn"``): LinUCB (:mod:`baselines.bandit.linucb`),
  alpha = 0.75; wait if p_S < p_F, else send.
* **Reward**, delayed: when the next packet carried by the chosen arm's path
  (*f* for F, *s* for S) after the decision is acknowledged,
  r = MSS / (ack time - decision time); A_a += x x^T, b_a += r x. MSS is the
  path's packet size on the wire. r is expressed in Mbit/s and divided by
  ``reward_scale_mbps`` (default 1: a 1350-byte packet acked 10.8 ms after
  the decision earns 1.0). Dividing every reward by one constant leaves the
  greedy ranking unchanged; it only sets how much alpha's exploration bonus
  weighs (raw bytes/s rewards, ~1e5, would make the bonus irrelevant).
  "The next packet": the first acknowledged packet of that path sent at or
  after the decision (strictly after, for a wait: a packet sent in the same
  instant as a wait went before it). Pending records are kept per path in
  decision order; every record an ACK completes is applied, oldest first.
  A record whose packet is lost is completed by the next acknowledged packet
  of that path (the loss shows as a late ACK, i.e. a low reward). Records
  still pending when a connection starts are dropped.
* **Deployment** (``mode="deploy"``): stochastic adjustment of the greedy
  scores g_a = theta_a . x: if g_S < g_F wait with probability
  ``p_wait`` = 0.7 (else send), otherwise send with probability ``p_send`` =
  0.9 (else wait). Random draws come from ``random.Random(seed)`` created by
  the constructor, so a fresh instance with the same seed on the same episode
  sequence decides the same. A and b keep learning from rewards in both modes.
* **Persistence**: A and b live in the instance, across connections. With
  ``state_file`` they are also loaded from that file at construction (if it
  exists) and written to it atomically (format: :mod:`baselines.bandit.linucb`)
  at the start of every later connection, every ``save_every`` updates
  (0 = never mid-connection) and by :meth:`save`. A missing file is a fresh
  start; a corrupt or mismatching one is one logged warning and a fresh start
  (never an exception in the middle of a transfer; the bad file is then
  overwritten by the next save).
* **Training** (``falcon.train``): :meth:`fit` runs ``episodes`` connections
  in learn mode on one scenario and app (seeds ``seed``, ``seed + 1``, ...)
  and then switches to ``mode_after_fit`` (default deploy).

Known behaviour (measured, Table I 4G + 5G, 20 MB, seeds 1-3; minRTT
0.87, 0.81, 2.1 s): in learn mode the wait arm can take over for good once *s*'s
RTT looked bad (its queue at the end of slow start); *s* is then never used
again, its srtt never refreshes, and the connection runs on the loss-limited
*f* alone (0.8, 9.5 and 24 s). Deploy mode's random sends keep *s* sampled
(0.9, 2.5, 3.8 s). On the Table I pairs with WLAN both modes are slower than
minRTT (5G + WLAN: 8-18 s learn, 16-23 s deploy, minRTT 4.4-16 s,
median 8.8 s).

More than two paths: *f* and *s* are the pair above (the minRTT choice when
*f* is full); the arms stay F and S.
"""

from __future__ import annotations

import logging
import math
import random
import sys
from collections import deque
from pathlib import Path

import numpy as np

from baselines.bandit.linucb import LinUCB, StateFileError, load_state, save_state
from baselines.rule_based.common import fastest, minrtt_choice
from envs.scheduler import ConnectionView, Decision, Scheduler, Trainable

_log = logging.getLogger(__name__)

ARMS = ("F", "S")
WAIT, SEND = 0, 1
FEATURES = ("c_f/l_f", "q_s/l_s", "W/l_f", "W/l_s", "q_f/l_f", "c_s/l_s")
STATE_FILE_NAME = "peekaboo_state.npz"
MODES = ("learn", "deploy")


def squash_scales(feature_scale_mbps, n: int) -> list[float]:
    """The k of v / (v + k) per feature [bytes/s] from a value in Mbit/s
    (one number for all ``n`` features, or a list of ``n``)."""
    if isinstance(feature_scale_mbps, (int, float)):
        values = [float(feature_scale_mbps)] * n
    else:
        values = [float(v) for v in feature_scale_mbps]
        if len(values) != n:
            raise ValueError(f"feature_scale_mbps: expected one value or {n}, got {len(values)}")
    for v in values:
        if not (v > 0.0 and math.isfinite(v)):
            raise ValueError(f"feature_scale_mbps must be positive and finite, got {v}")
    return [v * 1e6 / 8.0 for v in values]


def squash(v: float, k: float) -> float:
    """v / (v + k) for v >= 0 (negative or NaN inputs give 0)."""
    return v / (v + k) if v > 0.0 else 0.0


class Peekaboo(Scheduler, Trainable):
    name = "peekaboo"
    wants_packet_feedback = True

    def __init__(
        self,
        mode: str = "learn",
        alpha: float = 0.75,
        ridge: float = 1.0,
        feature_scale_mbps=100.0,
        reward_scale_mbps: float = 1.0,
        p_wait: float = 0.7,
        p_send: float = 0.9,
        seed: int = 0,
        state_file: str | None = None,
        save_every: int = 0,
        mode_after_fit: str = "deploy",
        record_decisions: bool = False,
    ) -> None:
        if mode not in MODES or mode_after_fit not in MODES:
            raise ValueError(
                f"peekaboo: mode must be one of {MODES}, got {mode!r} / {mode_after_fit!r}"
            )
        for nm, p in (("p_wait", p_wait), ("p_send", p_send)):
            if not 0.0 <= p <= 1.0:
                raise ValueError(f"peekaboo: {nm} must be in [0, 1], got {p}")
        if not (reward_scale_mbps > 0.0 and math.isfinite(reward_scale_mbps)):
            raise ValueError(
                f"peekaboo: reward_scale_mbps must be positive, got {reward_scale_mbps}"
            )
        self.mode = mode
        self.mode_after_fit = mode_after_fit
        self.scales = squash_scales(feature_scale_mbps, len(FEATURES))
        self.reward_scale_mbps = float(reward_scale_mbps)
        self._reward_k = 8e-6 / self.reward_scale_mbps  # bytes/s -> reward units
        self.p_wait = float(p_wait)
        self.p_send = float(p_send)
        self.seed = int(seed)
        self.rng = random.Random(self.seed)
        self.bandit = LinUCB(len(ARMS), len(FEATURES), alpha=alpha, ridge=ridge)
        self.state_file = Path(state_file) if state_file else None
        self.save_every = int(save_every)
        self.record_decisions = bool(record_decisions)
        #: arms chosen at each consultation (when record_decisions), all connections
        self.decisions: list[int] = []
        self.consultations = 0
        self.waits = 0
        self.updates = 0
        self.waiting = False
        self._pending: list[deque] = []
        self._dirty = False
        self._connections = 0
        if self.state_file is not None:
            self.load(self.state_file, missing_ok=True)

    # ------------------------------------------------------------ persistence
    def load(self, path, missing_ok: bool = False) -> bool:
        """Load A, b from ``path``; on any problem log one warning and keep
        (or start) a fresh model. True when loaded."""
        path = Path(path)
        if missing_ok and not path.exists():
            return False
        try:
            load_state(path, self.bandit, kind=self.name, arms=ARMS, features=FEATURES)
        except StateFileError as exc:
            _log.warning(
                "%s: ignoring state file (%s); starting from a fresh model", self.name, exc
            )
            self.bandit.reset()
            return False
        return True

    def save(self, path=None) -> Path | None:
        """Write A, b atomically: to ``path`` (a file, or a folder that gets
        ``peekaboo_state.npz``), else to ``state_file``. Returns the file."""
        if path is None:
            if self.state_file is None:
                return None
            target = self.state_file
        else:
            target = Path(path)
            if target.is_dir():
                target = target / STATE_FILE_NAME
        out = save_state(target, self.bandit, kind=self.name, arms=ARMS, features=FEATURES)
        if path is None:
            self._dirty = False
        return out

    def _autosave(self) -> None:
        if self.state_file is None or not self._dirty:
            return
        try:
            self.save()
        except OSError as exc:  # never break a transfer over a file
            _log.warning("%s: cannot write state file %s (%s)", self.name, self.state_file, exc)
            self._dirty = False

    # ------------------------------------------------------------ connection
    def reset(self, view: ConnectionView) -> None:
        if self._connections:
            self._autosave()
        self._connections += 1
        self.waiting = False
        self._pending = [deque() for _ in view.paths]

    def context(self, view: ConnectionView, f, s) -> np.ndarray:
        """The 6 unit-range features of module docstring, for paths f and s."""
        k = self.scales
        lf = f.latest_rtt if f.latest_rtt > 0.0 else f.srtt
        ls = s.latest_rtt if s.latest_rtt > 0.0 else s.srtt
        w = float(view.send_window)
        return np.array(
            (
                squash(f.cwnd / lf, k[0]),
                squash(s.bytes_in_flight / ls, k[1]),
                squash(w / lf, k[2]),
                squash(w / ls, k[3]),
                squash(f.bytes_in_flight / lf, k[4]),
                squash(s.cwnd / ls, k[5]),
            )
        )

    def choose(self, x: np.ndarray) -> int:
        """WAIT or SEND for context x, by the current mode."""
        bandit = self.bandit
        if self.mode == "learn":
            return WAIT if bandit.ucb(SEND, x) < bandit.ucb(WAIT, x) else SEND
        if bandit.greedy(SEND, x) < bandit.greedy(WAIT, x):
            return WAIT if self.rng.random() < self.p_wait else SEND
        return SEND if self.rng.random() < self.p_send else WAIT

    def decide(self, view: ConnectionView) -> int | Decision | None:
        paths = view.paths
        fi = fastest(paths)
        f = paths[fi]
        if f.has_room:
            self.waiting = False
        c = minrtt_choice(paths)
        if c is None:
            return None
        if c == fi or not paths[c].has_rtt_sample:
            return c
        if self.waiting:  # a wait blocks s until f has room again
            return None
        s = paths[c]
        x = self.context(view, f, s)
        arm = self.choose(x)
        self.consultations += 1
        if self.record_decisions:
            self.decisions.append(arm)
        now = view.now
        if arm == WAIT:
            self.waits += 1
            self.waiting = True
            self._pending[fi].append((now, WAIT, x, True))
            return None
        self._pending[c].append((now, SEND, x, False))
        return c

    # ------------------------------------------------------------ rewards
    def on_packet_acked(self, view: ConnectionView, path: int, size: int, sent_time: float) -> None:
        q = self._pending[path]
        if not q:
            return
        now = view.now
        mss = view.paths[path].mss
        bandit = self.bandit
        while q:
            t_dec, arm, x, strict = q[0]
            if sent_time < t_dec or (strict and sent_time == t_dec):
                break
            q.popleft()
            dt = now - t_dec
            r = mss / dt * self._reward_k if dt > 0.0 else 0.0
            bandit.update(arm, x, r)
            self.updates += 1
            self._dirty = True
            if self.save_every > 0 and self.updates % self.save_every == 0:
                self._autosave()

    # ------------------------------------------------------------ training
    def fit(
        self, scenario, app, seed: int = 0, episodes: int = 10, log=None, progress: bool = True
    ) -> dict:
        """Learn over ``episodes`` connections (seeds ``seed`` ... ``seed +
        episodes - 1``) in learn mode, then switch to ``mode_after_fit``
        (``progress``: a line per 10 connections)."""
        from envs.runner import run_episode

        self.mode = "learn"
        times = []
        for i in range(int(episodes)):
            res = run_episode(scenario, app, self, seed + i)
            times.append(res.metrics["download_time_s"])
            if log is not None:
                log({"download_time_s": times[-1], "wait_fraction": self.wait_fraction()}, i)
            if progress and (i + 1) % 10 == 0:
                print(
                    f"peekaboo: {i + 1}/{int(episodes)} connections, last {times[-1]:.3f} s",
                    file=sys.stderr,
                )
        self.mode = self.mode_after_fit
        self._autosave()
        return {
            "episodes": float(len(times)),
            "last_download_time_s": float(times[-1]) if times else math.nan,
            "wait_fraction": self.wait_fraction(),
        }

    def wait_fraction(self) -> float:
        """Fraction of consultations that chose to wait (so far, all connections)."""
        return self.waits / self.consultations if self.consultations else math.nan
