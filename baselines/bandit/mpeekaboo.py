"""M-Peekaboo (FALCON's Type-I online baseline): a RECONSTRUCTION.

There is no public code or text for M-Peekaboo beyond this: it extends
Peekaboo's learning scheme to path selection (for 5G mmWave), uses LinUCB
plus a stochastic adjustment, and (per the FALCON related-work section)
change-point detection. Everything more specific below is this framework's
reconstruction (``design/SPEC-baselines.md``), not the authors' code.

* **Arms = paths, one decision per packet.** The action space is FALCON's
  (:mod:`envs.gym_env`): the path index of the next packet, honoured whether
  or not the path has cwnd room (without room the packet is committed to it
  and leaves when its window opens; nothing else is sent meanwhile), so
  "wait for a path" is part of every choice, as Peekaboo's wait is. Paths
  without an RTT sample are probed first (minRTT's rule); with one path it
  just uses it. ``arms="room_or_fastest"`` restricts the choice to the paths
  with room plus the lowest-srtt path *f* (i.e. one may only wait for *f*,
  Peekaboo's own wait semantics).
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
* **Learning**: disjoint LinUCB, alpha = 0.75; the choice is the eligible
  arm with the highest UCB score (lowest index on ties).
* **Stochastic adjustment**: that choice is followed with probability
  ``p_follow`` (0.9); otherwise one of the other paths *that have room* is
  picked uniformly (if none has room, the choice is followed): committing a
  random packet to a full path would only stall the connection. This keeps
  every path sampled, which both the bandit and the change detector need
  once the UCB bonus has shrunk. Draws come from ``random.Random(seed)``.
* **Reward**, delayed (Peekaboo's): when the first packet of the chosen path
  sent at or after the decision is acknowledged, r = payload / (ack time -
  decision time), in Mbit/s, normalised by ``reward_scale_mbps`` (default 1:
  a full 1290-byte payload acked 10.3 ms after the decision earns 1). Pending
  records are per path in decision order, applied oldest first.
* **Change detection**: every acknowledged packet gives its path an RTT
  sample (ack time - send time) fed to ``detector.update(path, sample,
  now)`` (:mod:`baselines.bandit.change`; default the two-window mean-shift
  test, swappable for BOCPD; ``None`` disables it). On a detected change all
  arms' A and b are reset and pending records (contexts of the old
  conditions) are dropped. ``changes`` lists (time, path) of the resets.
* Each connection starts from a fresh model (``fresh_per_connection``; an
  online learner, as the FALCON paper evaluates it); set it False to carry A
  and b over to the next connection with the same number of paths.

Known limitation (measured; download time, median of seeds 1-3, bulk
2 MB / 20 MB; minRTT -> M-Peekaboo ``arms=all`` -> ``arms=room_or_fastest``):
the per-packet reward values latency, not throughput, so the learner
converges to the lower-RTT path whenever waiting for it costs less per packet
than the RTT gap, even where that forgoes a whole path's capacity.

* 50/10 + 5/150 (Mbit/s / ms RTT): 0.62 -> 0.80 -> 0.54 s; 5.3 -> 4.4 -> 4.3 s
* 30/20 + 20/40: 0.42 -> 0.50 -> 0.46 s; 3.6 -> 5.2 -> 5.0 s
* Table I 4G + 5G: 0.20 -> 0.22 -> 0.21 s; 0.87 -> 3.5 -> 1.9 s
* Table I 4G + WLAN: 0.34 -> 0.61 -> 0.50 s; 10 -> 114 -> 89 s
* Table I 5G + WLAN: 0.36 -> 0.47 -> 0.36 s; 8.8 -> >120 (time-out) -> 74 s

In the loss-limited Table I pairs with WLAN (0.7 % loss, OLIA) the learner
sends nearly everything on (or waits for) the 20 ms WLAN path, whose window
stays small. The default ``arms="all"`` keeps FALCON's action space (the
same choices DQN and FALCON have); with it a reset after a change clearly
speeds up recovery (``tests/test_bandit.py``). With ``room_or_fastest`` the
lowest-srtt rule already follows a change of which path is fastest and the
reset brings little (measured: no fewer wrong choices after a path swap).
"""

from __future__ import annotations

import math
import random
from collections import deque

import numpy as np

from baselines.bandit.change import make_detector
from baselines.bandit.linucb import LinUCB
from baselines.bandit.peekaboo import squash, squash_scales
from baselines.rule_based.common import fastest, minrtt_choice
from envs.scheduler import Scheduler

FEATURES = ("c_a/l_a", "q_a/l_a", "W/l_a", "room_a", "c_o/l_o", "q_o/l_o",
            "l_a/(l_a+l_o)", "bias")
DIM = len(FEATURES)
ARM_SETS = ("all", "room_or_fastest")


class MPeekaboo(Scheduler):
    name = "mpeekaboo"
    wants_packet_feedback = True

    def __init__(self, alpha: float = 0.75, ridge: float = 1.0, p_follow: float = 0.9,
                 feature_scale_mbps=100.0, reward_scale_mbps: float = 1.0,
                 detector="two_window", arms: str = "all", fresh_per_connection: bool = True,
                 seed: int = 0, record_decisions: bool = False) -> None:
        if not 0.0 <= p_follow <= 1.0:
            raise ValueError(f"mpeekaboo: p_follow must be in [0, 1], got {p_follow}")
        if not (reward_scale_mbps > 0.0 and math.isfinite(reward_scale_mbps)):
            raise ValueError(f"mpeekaboo: reward_scale_mbps must be positive, got {reward_scale_mbps}")
        if arms not in ARM_SETS:
            raise ValueError(f"mpeekaboo: arms must be one of {ARM_SETS}, got {arms!r}")
        self.alpha = float(alpha)
        self.ridge = float(ridge)
        self.p_follow = float(p_follow)
        self._k = squash_scales(feature_scale_mbps, 5)
        self.reward_scale_mbps = float(reward_scale_mbps)
        self._reward_k = 8e-6 / self.reward_scale_mbps   # bytes/s -> reward units
        self.detector = make_detector(detector)
        self.arms = arms
        self.fresh_per_connection = bool(fresh_per_connection)
        self.seed = int(seed)
        self.rng = random.Random(self.seed)
        self.record_decisions = bool(record_decisions)
        self.bandit: LinUCB | None = None
        #: (time [s], path) of every change that reset the model (all connections)
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
            lat.append(p.latest_rtt if p.latest_rtt > 0.0 else p.srtt)
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
        scores = self.bandit.scores(X).tolist()
        if self.arms == "room_or_fastest":
            fi = fastest(paths)
            for j in range(n):
                if j != fi and not paths[j].has_room:
                    scores[j] = -math.inf
        arm = 0
        for j in range(1, n):
            if scores[j] > scores[arm]:
                arm = j
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
        if not q or q[0][0] > sent_time:
            return
        ps = view.paths[path]
        rate_k = (size - (ps.mss - ps.payload)) * self._reward_k
        bandit = self.bandit
        while q and q[0][0] <= sent_time:
            t_dec, x = q.popleft()
            dt = now - t_dec
            bandit.update(path, x, rate_k / dt if dt > 0.0 else 0.0)
            self.updates += 1
