"""M-Peekaboo (FALCON's Type-I online baseline): a RECONSTRUCTION (docstring TBD)."""

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

FEATURES = ("c_a/l_a", "q_a/l_a", "W/l_a", "room_a", "l_a/(l_a+l_o)", "c_o/l_o",
            "k/(k+c_a)", "bias")
DIM = len(FEATURES)


class MPeekaboo(Scheduler):
    name = "mpeekaboo"
    wants_packet_feedback = True

    def __init__(self, alpha: float = 0.75, ridge: float = 1.0, p_follow: float = 0.9,
                 feature_scale_mbps=100.0, probe_per_rtt: bool = True,
                 detector="two_window", fresh_per_connection: bool = True,
                 seed: int = 0, record_decisions: bool = False) -> None:
        if not 0.0 <= p_follow <= 1.0:
            raise ValueError(f"mpeekaboo: p_follow must be in [0, 1], got {p_follow}")
        self.alpha = float(alpha)
        self.ridge = float(ridge)
        self.p_follow = float(p_follow)
        self._k = squash_scales(feature_scale_mbps, 4)
        self.probe_per_rtt = bool(probe_per_rtt)
        self.detector = make_detector(detector)
        self.fresh_per_connection = bool(fresh_per_connection)
        self.seed = int(seed)
        self.rng = random.Random(self.seed)
        self.record_decisions = bool(record_decisions)
        self.bandit: LinUCB | None = None
        self.changes: list[tuple[float, int]] = []
        self.decisions: list[tuple[float, int]] = []
        self.updates = 0
        self.consultations = 0
        self._pending: list[deque] = []
        self._last_probe: list[float] = []
        self._blocked_s = 0.0
        self._t_last = 0.0
        self._is_blocked = False

    def reset(self, view) -> None:
        n = len(view.paths)
        if self.bandit is None or self.fresh_per_connection or self.bandit.n_arms != n:
            self.bandit = LinUCB(n, DIM, alpha=self.alpha, ridge=self.ridge)
        self.detector.reset()
        self._pending = [deque() for _ in range(n)]
        self._last_probe = [-math.inf] * n
        self._blocked_s = 0.0
        self._t_last = view.now
        self._is_blocked = False

    # ------------------------------------------------------------ blocked clock
    def _tick(self, view, now: float) -> None:
        if self._is_blocked and now > self._t_last:
            self._blocked_s += now - self._t_last
        self._t_last = now
        pending = view.pending_bytes
        if pending <= 0:
            blocked = False
            for p in view.paths:
                if p.bytes_in_flight > 0:
                    blocked = True
                    break
        else:
            blocked = view.retransmit_bytes <= 0 and view.send_window < view.payload
        self._is_blocked = blocked

    # ------------------------------------------------------------ decisions
    def contexts(self, view) -> np.ndarray:
        paths = view.paths
        n = len(paths)
        k0, k1, k2, k3 = self._k
        w = float(view.send_window)
        k = float(view.pending_bytes)
        lat = []
        for p in paths:
            lat.append(p.latest_rtt if p.latest_rtt > 0.0 else p.srtt)
        row: list[float] = []
        for a in range(n):
            o = -1
            for j in range(n):
                if j != a and (o < 0 or lat[j] < lat[o]):
                    o = j
            pa = paths[a]
            la = lat[a]
            lo = lat[o]
            c = pa.cwnd
            q = pa.bytes_in_flight
            row += (squash(c / la, k0), squash(q / la, k1), squash(w / la, k2),
                    (c - q) / c if c > q else 0.0, la / (la + lo),
                    squash(paths[o].cwnd / lo, k3), k / (k + c) if k > 0.0 else 0.0, 1.0)
        return np.array(row).reshape(n, DIM)

    def decide(self, view):
        now = view.now
        self._tick(view, now)
        paths = view.paths
        c = minrtt_choice(paths)
        if c is not None and not paths[c].has_rtt_sample:
            return c
        n = len(paths)
        if n == 1:
            return 0
        fi = fastest(paths)
        eligible = [j for j in range(n) if j == fi or paths[j].has_room]
        if len(eligible) == 1:
            return eligible[0]
        X = self.contexts(view)
        scores = self.bandit.scores(X)
        arm = eligible[0]
        best = scores[arm]
        for j in eligible[1:]:
            if scores[j] > best:
                arm = j
                best = scores[j]
        if self.p_follow < 1.0 and self.rng.random() >= self.p_follow:
            others = [j for j in eligible if j != arm]
            j = others[self.rng.randrange(len(others))] if len(others) > 1 else others[0]
            if not self.probe_per_rtt or now - self._last_probe[j] >= paths[j].srtt:
                self._last_probe[j] = now
                arm = j
        self.consultations += 1
        # opportunity rates [packets/s]: of the other paths with room (lost while a
        # committed packet waits) and of all paths (lost while the connection is blocked)
        pay = view.payload
        opp = 0.0
        tot = 0.0
        for j, p in enumerate(paths):
            r = p.cwnd / p.srtt / pay
            tot += r
            if j != arm and p.has_room:
                opp += r
        committed = not paths[arm].has_room
        self._pending[arm].append((now, X[arm], self._blocked_s, opp if committed else -1.0, tot))
        if self.record_decisions:
            self.decisions.append((now, arm))
        return arm

    # ------------------------------------------------------------ feedback
    def on_packet_lost(self, view, path: int, size: int, sent_time: float) -> None:
        self._tick(view, view.now)

    def on_packet_acked(self, view, path: int, size: int, sent_time: float) -> None:
        now = view.now
        self._tick(view, now)
        if self.detector.update(path, now - sent_time, now):
            self.bandit.reset()
            for q in self._pending:
                q.clear()
            self.changes.append((now, path))
            return
        q = self._pending[path]
        if not q or q[0][0] > sent_time:
            return
        bandit = self.bandit
        blocked = self._blocked_s
        while q and q[0][0] <= sent_time:
            t_dec, x, b_dec, opp, tot = q.popleft()
            cost = (blocked - b_dec) * tot
            if opp >= 0.0:
                cost += (sent_time - t_dec) * opp
            bandit.update(path, x, 1.0 / (1.0 + cost))
            self.updates += 1
