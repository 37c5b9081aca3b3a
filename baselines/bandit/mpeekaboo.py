"""M-Peekaboo (FALCON's Type-I online baseline): a RECONSTRUCTION.

There is no public code or text for M-Peekaboo beyond this: it extends
Peekaboo's learning scheme to path selection (for 5G mmWave), uses LinUCB
plus a stochastic adjustment, and (per the FALCON related-work section)
change-point detection. Everything below that is more specific is this
framework's reconstruction (``design/SPEC-baselines.md``), not the authors'
code.

* **Arms = paths.** M-Peekaboo is asked for every packet. Paths without an
  RTT sample are probed first (minRTT's rule); with one path it just uses it.
  Choosing a path that has no cwnd room commits the packet to that path (the
  connection sends it as soon as the window opens), so "wait for the fast
  path" is one of the choices, as in Peekaboo.
* **Per-arm context** (d = 8) for path a, with o = the other path of the
  pair: the lowest-latest-RTT path among the others (with two paths, simply
  the other one). c = cwnd, q = bytes in flight, l = latest RTT sample (srtt
  before the first sample), W = connection flow-control credit left:

  ====  ===================  ===========================================
  0     c_a / l_a            per-path (Peekaboo's features for path a)
  1     q_a / l_a            per-path
  2     W / l_a              per-path
  3     room_a               per-path: max(0, c_a - q_a) / c_a, free share of the cwnd
  4     c_o / l_o            pair: the alternative's rate features
  5     q_o / l_o            pair
  6     l_a / (l_a + l_o)    pair: a's share of the two latencies
  7     1                    bias
  ====  ===================  ===========================================

  Rates (0, 1, 2, 4, 5) are squashed to the unit range with v / (v + k),
  k = ``feature_scale_mbps`` (as in :mod:`baselines.bandit.peekaboo`);
  3 and 6 are already in [0, 1].
* **Learning**: disjoint LinUCB, alpha = 0.75; the choice is the arm with
  the highest UCB score (lowest index on ties).
* **Stochastic adjustment**: that choice is followed with probability
  ``p_follow`` (0.9); otherwise one of the other paths is picked uniformly.
  This keeps every path sampled, which both the bandit and the change
  detector need once the UCB bonus has shrunk. Draws come from
  ``random.Random(seed)``.
* **Reward**, delayed (Peekaboo's): when the first packet of the chosen path
  sent at or after the decision is acknowledged, r = payload / (ack time -
  decision time), expressed in Mbit/s and normalised by ``reward_scale_mbps``
  (default 1: a full packet acked 10 ms after the decision earns ~1).
  Pending records are per path in decision order, applied oldest first.
* **Change detection**: every acknowledged packet gives its path an RTT
  sample (ack time - send time) fed to ``detector.update(path, sample,
  now)`` (:mod:`baselines.bandit.change`; default the two-window mean-shift
  test, swappable for BOCPD later; ``None`` disables it). On a detected
  change all arms' A and b are reset and pending records (contexts of the
  old conditions) are dropped. ``changes`` lists the times of the resets.
* Each connection starts from a fresh model (``fresh_per_connection``; an
  online learner as evaluated in the FALCON paper); set it False to carry A
  and b over to the next connection with the same number of paths.
"""

from __future__ import annotations

import math
import random
from collections import deque

import numpy as np

from baselines.bandit.change import make_detector
from baselines.bandit.linucb import LinUCB
from baselines.bandit.peekaboo import squash, squash_scales
from baselines.rule_based.common import minrtt_choice
from envs.scheduler import Scheduler

FEATURES = ("c_a/l_a", "q_a/l_a", "W/l_a", "room_a", "c_o/l_o", "q_o/l_o",
            "l_a/(l_a+l_o)", "bias")
DIM = len(FEATURES)


class MPeekaboo(Scheduler):
    name = "mpeekaboo"
    wants_packet_feedback = True

    def __init__(self, alpha: float = 0.75, ridge: float = 1.0, p_follow: float = 0.9,
                 feature_scale_mbps=100.0, reward_scale_mbps: float = 1.0,
                 detector="two_window", fresh_per_connection: bool = True, seed: int = 0,
                 record_decisions: bool = False) -> None:
        if not 0.0 <= p_follow <= 1.0:
            raise ValueError(f"mpeekaboo: p_follow must be in [0, 1], got {p_follow}")
        if not (reward_scale_mbps > 0.0 and math.isfinite(reward_scale_mbps)):
            raise ValueError(f"mpeekaboo: reward_scale_mbps must be positive, got {reward_scale_mbps}")
        self.alpha = float(alpha)
        self.ridge = float(ridge)
        self.p_follow = float(p_follow)
        k = squash_scales(feature_scale_mbps, 5)
        self._k = k
        self.reward_scale_mbps = float(reward_scale_mbps)
        self._reward_k = 8e-6 / self.reward_scale_mbps   # bytes/s -> reward units
        self.detector = make_detector(detector)
        self.fresh_per_connection = bool(fresh_per_connection)
        self.seed = int(seed)
        self.rng = random.Random(self.seed)
        self.record_decisions = bool(record_decisions)
        self.bandit: LinUCB | None = None
        #: (time [s], path) of every change that reset the model
        self.changes: list[tuple[float, int]] = []
        #: (time [s], arm) of every bandit decision (when record_decisions)
        self.decisions: list[tuple[float, int]] = []
        self.updates = 0
        self._pending: list[deque] = []

    def reset(self, view) -> None:
        n = len(view.paths)
        if self.bandit is None or self.fresh_per_connection or self.bandit.n_arms != n:
            self.bandit = LinUCB(n, DIM, alpha=self.alpha, ridge=self.ridge)
        self.detector.reset()
        self._pending = [deque() for _ in range(n)]

    # ------------------------------------------------------------ decisions
    def contexts(self, view) -> np.ndarray:
        """(n_paths, 8) contexts, one row per arm (module docstring)."""
        paths = view.paths
        n = len(paths)
        k0, k1, k2, k3, k4 = self._k
        w = float(view.send_window)
        lat = []
        cq = []
        for p in paths:
            la = p.latest_rtt if p.latest_rtt > 0.0 else p.srtt
            lat.append(la)
            cq.append((p.cwnd, p.bytes_in_flight))
        row: list[float] = []
        for a in range(n):
            o = -1
            for j in range(n):
                if j != a and (o < 0 or lat[j] < lat[o]):
                    o = j
            la = lat[a]
            lo = lat[o]
            c, q = cq[a]
            co, qo = cq[o]
            row += (squash(c / la, k0), squash(q / la, k1), squash(w / la, k2),
                    (c - q) / c if c > q else 0.0,
                    squash(co / lo, k3), squash(qo / lo, k4), la / (la + lo), 1.0)
        return np.array(row).reshape(n, DIM)

    def decide(self, view):
        paths = view.paths
        c = minrtt_choice(paths)
        if c is not None and not paths[c].has_rtt_sample:
            return c                     # probe an unprobed path first
        n = len(paths)
        if n == 1:
            return 0
        X = self.contexts(view)
        scores = self.bandit.scores(X)
        arm = int(np.argmax(scores))
        if self.p_follow < 1.0 and self.rng.random() >= self.p_follow:
            others = [j for j in range(n) if j != arm and paths[j].has_room]
            if others:
                arm = others[self.rng.randrange(len(others))] if len(others) > 1 else others[0]
        now = view.now
        self._pending[arm].append((now, X[arm]))
        if self.record_decisions:
            self.decisions.append((now, arm))
        return arm

    # ------------------------------------------------------------ feedback
    def on_packet_acked(self, view, path: int, size: int, sent_time: float) -> None:
        now = view.now
        if self.detector.update(path, now - sent_time, now):
            self.bandit.reset()
            for q in self._pending:
                q.clear()
            self.changes.append((now, path))
            return
        q = self._pending[path]
        if not q:
            return
        ps = view.paths[path]
        payload = size - (ps.mss - ps.payload)
        bandit = self.bandit
        while q and q[0][0] <= sent_time:
            t_dec, x = q.popleft()
            dt = now - t_dec
            bandit.update(path, x, payload / dt * self._reward_k if dt > 0.0 else 0.0)
            self.updates += 1
