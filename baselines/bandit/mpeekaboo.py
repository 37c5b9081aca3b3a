"""M-Peekaboo (FALCON's Type-I online baseline): a RECONSTRUCTION.

There is no public code or text for M-Peekaboo beyond this: it extends
Peekaboo's learning scheme to path selection (for 5G mmWave), uses LinUCB
plus a stochastic adjustment, and (per the FALCON related-work section)
change-point detection. The FALCON paper reports it as light, converging in
about 6 000 packets, and competitive with (in its Fig. 2 slightly better
than) minRTT and BLEST in static conditions. Everything more specific below
is this framework's reconstruction, not the
authors' code; the choices are justified by measurements (end of docstring).

Notation: *f* = the lowest-srtt path (with or without room), "room" =
``has_room`` (bytes in flight + MSS <= cwnd), c = cwnd [bytes], q = bytes in
flight, l = latest RTT sample (srtt before the first one), W = connection
flow-control credit left, k = bytes not yet sent.

* **When it decides; the arms.** The connection asks whenever some path has
  room. Arms: one "send on path j" arm per path (eligible when j has room)
  plus one **wait** arm (eligible when *f* has no room): the packet is
  committed to *f* and leaves when *f*'s window opens, nothing else is sent
  meanwhile (Peekaboo's wait, generalised from a pair to n paths). The
  scheduler never commits a packet to a full path other than *f*: that only
  blocks the connection behind a path that is both full and slower. Paths
  without an RTT sample are probed first (minRTT's rule); with one eligible
  arm (only *f* has room) there is nothing to learn and it is used directly.
* **Context** (d = 8 per arm; "o" = the lowest-latency other path, for the
  wait arm the lowest-latency path with room, i.e. the one the wait forgoes):

  ====  ==================  ============================================
  0     c_a / l_a           per-path rate features (Peekaboo's, for a)
  1     q_a / l_a
  2     W / l_a
  3     room_a              max(0, c_a - q_a) / c_a (< MSS / c_f for the wait arm)
  4     l_a / (l_a + l_o)   pair: a's share of the two latencies
  5     c_o / l_o           pair: the alternative's rate
  6     k / (k + c_a)       windows of a left to send (end of transfer -> 0)
  7     1                   bias
  ====  ==================  ============================================

  Rates (0, 1, 2, 5) are squashed to [0, 1) with v / (v + K), K =
  ``feature_scale_mbps`` (as in :mod:`baselines.bandit.peekaboo`); the
  others are in [0, 1] already. The wait arm sees *f*'s row.
* **Learning**: disjoint LinUCB, alpha = 0.75, ridge 1 (:class:`PendingLinUCB`):
  A_a += x x^T when the decision is made, b_a += r x when its reward comes
  (with the prediction at decision time standing in until then). Rewards
  arrive one RTT (up to hundreds of ms) after the decision while the
  connection decides every few microseconds; plain LinUCB would take every
  decision of that RTT from the same, unchanged scores and send whole bursts
  to an unexplored arm. Counting the decision in A at once shrinks its
  exploration bonus decision by decision. Measured against plain LinUCB
  (A and b updated when the reward arrives): on the path swap of the tests
  plain LinUCB's first decisions put ~60 packets on the 150 ms path at one
  instant, overflow its buffer and stall the connection on flow control
  for ~0.6 s (download 2.3-2.5 s vs 1.8-2.0 s, and the reset then no longer
  helps); HET 20 MB 4.30 vs 3.91 s, 2 MB 0.62 vs 0.58 s; Table I within
  noise (ratios 0.90-1.14 vs 1.00-1.11).
  The choice is the eligible arm with the highest UCB score.
* **Stochastic adjustment**: with probability 1 - ``p_follow`` (0.1) the
  choice is replaced by a uniformly drawn other *path with room* (never by a
  wait: a random commit to a full path only stalls the connection). With
  ``probe_per_rtt`` such a random send goes to a path at most once per srtt
  of that path: enough to keep every path's RTT sample and arm fresh (a path
  that is never used keeps a stale srtt), without putting 10 % of the
  traffic onto a slow path (measured with unlimited random sends: HET 20 MB
  4.82 vs 3.91 s; Table I 20 MB unaffected). Draws come from
  ``random.Random(seed)``.
* **Reward**: what the decision gains in throughput, in (0, 1]; 1 = no cost.
  - A *send* on path a costs the connection's sending opportunity it blocks:
    while the connection is blocked (no flow-control credit, or all data
    sent and some still in flight, i.e. waiting for head-of-line data), the
    path holding the oldest outstanding decision is charged dt x (sum_j c_j
    / srtt_j) / payload packets, shared by its outstanding decisions. The
    send's reward is 1 / (1 + its charges between decision and ACK). This is
    what makes a slow path costly where it fills the receive window
    (50 Mbit/s 10 ms + 5 Mbit/s 150 ms) and free where it does not (Table I).
  - A *wait* costs the other paths' idle capacity: hold time (decision to
    the moment the packet leaves, i.e. the next decision) x their sending
    rate sum c_j / srtt_j over the paths with room [packets];
    reward 1 / (1 + that). Given when the committed packet leaves.
  Pending send records are kept per path in decision order; the first ACK of
  that path for a packet sent at or after the decision completes them (a
  lost packet's record is completed by the next ACK of its path, with the
  charges accrued meanwhile).
* **Change detection**: every acknowledged packet gives its path an RTT
  sample (ack time - send time) for ``detector.update(path, sample, now)``
  (:mod:`baselines.bandit.change`; default the two-window mean-shift test,
  swappable for BOCPD; ``None`` disables it). A detector that also has
  ``update_loss(path, lost, now)`` (:class:`baselines.changepoint.PathChangeDetector`)
  gets the fate of every packet too. On a detected change all arms' A and b
  are reset and pending rewards dropped. ``changes`` lists (time, path) of
  the resets.
* Each connection starts from a fresh model (``fresh_per_connection``; an
  online learner with no prior data, as the FALCON paper evaluates it); set
  it False to carry A and b over to the next connection with the same number
  of paths.

Why not the simpler choices (measured, download time, medians of seeds;
minRTT for reference: Table I 20 MB 4G+5G 1.7 s, 4G+WLAN 9.4 s, 5G+WLAN 8.7 s):

* Peekaboo's reward, MSS / (ack time - decision time), measures one packet's
  latency: a wait for the 20 ms WLAN path beats a send on the 29 ms 4G path
  per packet, so the learner waits ever more and runs on the loss-limited
  WLAN window alone (previous version: 4G+WLAN 114 s, 5G+WLAN > 120 s).
* Paths as the only arms (a wait = choosing a full *f*): one linear model
  must then fit both the cheap sends and the expensive waits of a path and
  keeps overrating waits (one 4G+WLAN 2 MB run: 0.28 of its 0.57 s spent
  waiting while 4G had room; 4G+WLAN 2 MB 1.30x minRTT over seeds 1-8, with
  forgetting on). A
  separate wait arm learns them apart.
* Forgetting (discounted A, b, memory 500-3000 decisions) helped the
  paths-only version recover from slow-start data, but brought no consistent
  gain once waits had their own arm, and is left out.

Measured with the defaults (median download time [s], bulk; seeds 1-16 at
2 MB, 1-8 otherwise; scheduler seed = episode seed; Peekaboo fresh in deploy
mode; ``tests/test_bandit.py`` checks the 2 MB Table I and HET rows on seeds
1-8):

  ================================  ======  ========  =====  ==========  =====
  paths                      size   minRTT  Peekaboo  BLEST  M-Peekaboo  ratio
  ================================  ======  ========  =====  ==========  =====
  Table I 4G + 5G            2 MB   0.206   0.220     0.235  0.217       1.05
  Table I 4G + 5G           20 MB   1.75    2.48      1.83   1.91        1.09
  Table I 4G + WLAN          2 MB   0.332   0.427     0.324  0.343       1.03
  Table I 4G + WLAN         20 MB   9.39    20.9      8.86   9.35        1.00
  Table I 5G + WLAN          2 MB   0.269   0.336     0.324  0.298       1.11
  Table I 5G + WLAN         20 MB   8.69    20.4      8.83   8.71        1.00
  50/10 + 5/150 (HET)        2 MB   0.752   0.554     0.463  0.580       0.77
  50/10 + 5/150 (HET)        8 MB   2.53    2.25      1.48   1.77        0.70
  50/10 + 5/150 (HET)       20 MB   5.13    5.68      3.53   3.91        0.76
  30/20 + 20/40              2 MB   0.415   0.514     0.511  0.415       1.00
  30/20 + 20/40             20 MB   3.74    4.73      4.17   3.47        0.93
  ================================  ======  ========  =====  ==========  =====

(Mbit/s / ms RTT; ratio = M-Peekaboo / minRTT.) Competitive with minRTT on
the static Table I pairs (0-11 % slower; per seed it is faster on a quarter
to half of them), clearly faster where waiting for the fast path pays, and
it keeps using both paths where it does not (30/20 + 20/40, where BLEST
waits too much). It does not reach BLEST on HET: an online learner with no
prior pays for its exploration of the slow path. The two-window detector
fires on none of these runs. On the swap of ``tests/test_bandit.py``
(10 ms <-> 150 ms paths at 0.75 s) the reset cuts the wrong choices among
the first 300 decisions after the change from a median 142 to 82 (seeds
1-8, fewer on every seed).

Cost: one bandit decision (contexts, scores, commit) plus its reward is
about 40-85 us on a loaded 2-core machine (12 000-25 000 decisions/s; the
emulator without it: about 1 us per decision), under twice Peekaboo's per
consultation; M-Peekaboo is consulted on most packets (14 400 of 15 500 for
20 MB over 4G + 5G, Peekaboo 5 800).

Known limits: the first few hundred decisions of a connection are
exploration (LinUCB from scratch), visible on 2 MB transfers (0.2-0.3 s) and
on web pages (5-20 % over minRTT on 4G + 5G and 5G + WLAN). The default
detector only sees RTT changes; BOCPD's ``PathChangeDetector`` also sees
losses but, injected here, fired 1-17 times per static run (HET 2 MB,
4G + WLAN 20 MB, seeds 1-3), each reset restarting the exploration.
Retransmissions go wherever the next decision sends.
"""

from __future__ import annotations

import math
import random
from collections import deque

import numpy as np

from baselines.bandit.change import make_detector
from baselines.bandit.linucb import LinUCB
from baselines.bandit.peekaboo import squash_scales
from baselines.rule_based.common import fastest, minrtt_choice
from envs.scheduler import ConnectionView, Decision, Scheduler

FEATURES = (
    "c_a/l_a",
    "q_a/l_a",
    "W/l_a",
    "room_a",
    "l_a/(l_a+l_o)",
    "c_o/l_o",
    "k/(k+c_a)",
    "bias",
)
DIM = len(FEATURES)


class PendingLinUCB(LinUCB):
    """Disjoint LinUCB for delayed rewards.

    :meth:`commit` (at decision time): A_a += x x^T, b_a += r_hat x with
    r_hat = theta_a . x clipped to [0, 1] (the reward range), returned.
    :meth:`settle` (when the reward r arrives): b_a += (r - r_hat) x. Once
    every reward is in, A and b are exactly plain LinUCB's after the same
    updates; meanwhile decisions in flight shrink the bonus and count as
    their predicted reward."""

    @property
    def theta(self) -> np.ndarray:
        """theta_a = A_a^-1 b_a, derived on access (not kept up to date per
        update: that matrix product per decision and per ACK is avoidable)."""
        return np.einsum("aij,aj->ai", self.A_inv, self.b)

    @theta.setter
    def theta(self, value) -> None:
        pass  # derived; LinUCB.reset() / set_state() assign it

    def prepare(self, X: np.ndarray):
        """UCB scores of contexts ``X`` (one row per arm) and the parts
        :meth:`commit` reuses: (scores, U = A^-1 x per arm, greedy, x^T A^-1 x)."""
        U = (self.A_inv @ X[:, :, None])[:, :, 0]
        g = (U * self.b).sum(axis=1)  # theta . x (A^-1 is symmetric)
        q = (U * X).sum(axis=1)
        return g + self.alpha * np.sqrt(np.maximum(q, 0.0)), U, g, q

    def commit(self, arm: int, x: np.ndarray, u=None, g=None, q=None) -> float:
        """Count decision x on ``arm`` (``u``, ``g``, ``q``: its parts from
        :meth:`prepare`, recomputed when not given); returns r_hat."""
        inv = self.A_inv[arm]
        if u is None:
            u = inv @ x
            g = float(u @ self.b[arm])
            q = float(x @ u)
        g = float(g)
        r_hat = 0.0 if g < 0.0 else (1.0 if g > 1.0 else g)
        a = self.A[arm]
        a += x[:, None] * x
        inv -= u[:, None] * (u * (1.0 / (1.0 + float(q))))
        b = self.b[arm]
        b += r_hat * x
        self.n_updates[arm] += 1
        return r_hat

    def settle(self, arm: int, x: np.ndarray, dr: float) -> None:
        b = self.b[arm]
        b += dr * x


class MPeekaboo(Scheduler):
    name = "mpeekaboo"
    wants_packet_feedback = True

    def __init__(
        self,
        alpha: float = 0.75,
        ridge: float = 1.0,
        p_follow: float = 0.9,
        feature_scale_mbps=100.0,
        probe_per_rtt: bool = True,
        detector="two_window",
        fresh_per_connection: bool = True,
        seed: int = 0,
        record_decisions: bool = False,
    ) -> None:
        if not 0.0 <= p_follow <= 1.0:
            raise ValueError(f"mpeekaboo: p_follow must be in [0, 1], got {p_follow}")
        self.alpha = float(alpha)
        self.ridge = float(ridge)
        self.p_follow = float(p_follow)
        self._k = squash_scales(feature_scale_mbps, 4)
        self.probe_per_rtt = bool(probe_per_rtt)
        self.detector = make_detector(detector)
        loss_feed = getattr(self.detector, "update_loss", None)
        self._loss_feed = loss_feed if callable(loss_feed) else None
        self.fresh_per_connection = bool(fresh_per_connection)
        self.seed = int(seed)
        self.rng = random.Random(self.seed)
        self.record_decisions = bool(record_decisions)
        self.bandit: PendingLinUCB | None = None
        #: (time [s], path) of every change that reset the model (all connections)
        self.changes: list[tuple[float, int]] = []
        #: (time [s], path) of every bandit decision (when record_decisions);
        #: a wait is recorded as its path, f
        self.decisions: list[tuple[float, int]] = []
        self.consultations = 0  # bandit decisions (two or more eligible arms)
        self.waits = 0  # ... of which waits
        self.updates = 0  # rewards received
        self._pending: list[deque] = []
        self._last_probe: list[float] = []
        self._blk: list[float] = []
        self._t_last = 0.0
        self._block_path = -1
        self._block_rate = 0.0
        self._wait = None

    def reset(self, view: ConnectionView) -> None:
        n = len(view.paths)
        if self.bandit is None or self.fresh_per_connection or self.bandit.n_arms != n + 1:
            self.bandit = PendingLinUCB(n + 1, DIM, alpha=self.alpha, ridge=self.ridge)
        self.detector.reset()
        # per path: outstanding decisions (t_dec, x or None, charge clock at t_dec, r_hat)
        self._pending = [deque() for _ in range(n)]
        self._last_probe = [-math.inf] * n
        self._blk = [0.0] * n  # per path: charge clock [packets per outstanding decision]
        self._t_last = view.now
        self._block_path = -1
        self._block_rate = 0.0
        self._wait = None  # (t_dec, x, r_hat, opportunity rate) of a wait in progress

    # ------------------------------------------------------------ charges
    def _tick(self, view: ConnectionView, now: float) -> None:
        """Advance the charge clocks to ``now`` and find who is charged next.
        While the connection is blocked (no flow-control credit, or nothing
        left to send but data in flight) the path with the oldest outstanding
        decision (the head-of-line data) is charged the connection's lost
        sending opportunity, dt x (sum_j c_j / srtt_j) / payload packets,
        shared by its outstanding decisions."""
        if self._block_path >= 0 and now > self._t_last:
            self._blk[self._block_path] += (now - self._t_last) * self._block_rate
        self._t_last = now
        self._block_path = -1
        if view.pending_bytes > 0 and (
            view.retransmit_bytes > 0 or view.send_window >= view.payload
        ):
            return
        oldest = math.inf
        pstar = -1
        for j, q in enumerate(self._pending):
            if q and q[0][0] < oldest:
                oldest = q[0][0]
                pstar = j
        if pstar < 0:
            return
        tot = 0.0
        for p in view.paths:
            tot += p.cwnd / p.srtt
        self._block_path = pstar
        self._block_rate = tot / view.payload / len(self._pending[pstar])

    # ------------------------------------------------------------ decisions
    def contexts(self, view: ConnectionView, s: int = -1, fi: int = -1) -> np.ndarray:
        """(n_paths + 1, 8) contexts: one row per send arm, then the wait
        arm's (path f against ``s``, the path with room it forgoes; module
        docstring)."""
        paths = view.paths
        n = len(paths)
        k0, k1, k2, k3 = self._k
        w = float(view.send_window)
        k = float(view.pending_bytes)
        lat = []
        cw = []
        for p in paths:
            lat.append(p.latest_rtt if p.latest_rtt > 0.0 else p.srtt)
            cw.append(p.cwnd)
        if fi < 0:
            fi = fastest(paths)
        row: list[float] = []
        for i in range(n + 1):
            a = i if i < n else fi
            o = s if i == n and s >= 0 else -1
            if o < 0:
                for j in range(n):
                    if j != a and (o < 0 or lat[j] < lat[o]):
                        o = j
            la = lat[a]
            lo = lat[o]
            c = cw[a]
            q = paths[a].bytes_in_flight
            v0 = c / la
            v1 = q / la
            v2 = w / la
            v3 = cw[o] / lo
            row += (
                v0 / (v0 + k0),
                v1 / (v1 + k1) if v1 > 0.0 else 0.0,
                v2 / (v2 + k2) if v2 > 0.0 else 0.0,
                (c - q) / c if c > q else 0.0,
                la / (la + lo),
                v3 / (v3 + k3),
                k / (k + c) if k > 0.0 else 0.0,
                1.0,
            )
        return np.array(row).reshape(n + 1, DIM)

    def decide(self, view: ConnectionView) -> int | Decision | None:
        now = view.now
        self._tick(view, now)
        if self._wait is not None:
            # the connection asks again only once the committed packet has left
            t_dec, x, r_hat, opp = self._wait
            self._wait = None
            self.bandit.settle(len(view.paths), x, 1.0 / (1.0 + (now - t_dec) * opp) - r_hat)
            self.updates += 1
        paths = view.paths
        n = len(paths)
        if n == 1:
            return 0
        c = minrtt_choice(paths)
        if c is None:
            return None
        fi = fastest(paths)
        if not paths[c].has_rtt_sample or (
            c == fi and not any(paths[j].has_room for j in range(n) if j != fi)
        ):
            self._pending[c].append((now, None, self._blk[c], 0.0))  # probe / only choice
            return c
        wait = not paths[fi].has_room
        eligible = [j for j in range(n) if paths[j].has_room]
        if wait:
            eligible.append(n)
        X = self.contexts(view, c if wait else -1, fi)
        scores, U, G, Q = self.bandit.prepare(X)
        scores = scores.tolist()
        arm = eligible[0]
        best = scores[arm]
        for j in eligible[1:]:
            if scores[j] > best:
                arm = j
                best = scores[j]
        if self.p_follow < 1.0 and self.rng.random() >= self.p_follow:
            others = [j for j in eligible if j != arm and j < n]
            if others:
                j = others[self.rng.randrange(len(others))] if len(others) > 1 else others[0]
                if not self.probe_per_rtt or now - self._last_probe[j] >= paths[j].srtt:
                    self._last_probe[j] = now
                    arm = j
        self.consultations += 1
        x = X[arm]
        r_hat = self.bandit.commit(arm, x, U[arm], G[arm], Q[arm])
        if arm < n:
            path = arm
            self._pending[path].append((now, x, self._blk[path], r_hat))
        else:
            # a wait idles the paths with room: their sending rate [packets/s] is lost
            self.waits += 1
            opp = 0.0
            for p in paths:
                if p.has_room:
                    opp += p.cwnd / p.srtt
            self._wait = (now, x, r_hat, opp / view.payload)
            path = fi
            self._pending[path].append((now, None, self._blk[path], 0.0))
        if self.record_decisions:
            self.decisions.append((now, path))
        return path

    # ------------------------------------------------------------ feedback
    def _changed(self, now: float, path: int) -> None:
        self.bandit.reset()
        for q in self._pending:
            q.clear()
        self._wait = None
        self._block_path = -1
        self.changes.append((now, path))

    def on_packet_lost(self, view: ConnectionView, path: int, size: int, sent_time: float) -> None:
        now = view.now
        self._tick(view, now)
        if self._loss_feed is not None and self._loss_feed(path, True, now):
            self._changed(now, path)

    def on_packet_acked(self, view: ConnectionView, path: int, size: int, sent_time: float) -> None:
        now = view.now
        self._tick(view, now)
        changed = self.detector.update(path, view.paths[path].rtt_sample(sent_time, now), now)
        if self._loss_feed is not None and self._loss_feed(path, False, now):
            changed = True
        if changed:
            self._changed(now, path)
            return
        q = self._pending[path]
        if not q or q[0][0] > sent_time:
            return
        bandit = self.bandit
        charged = self._blk[path]
        while q and q[0][0] <= sent_time:
            t_dec, x, c_dec, r_hat = q.popleft()
            if x is not None:
                bandit.settle(path, x, 1.0 / (1.0 + charged - c_dec) - r_hat)
                self.updates += 1
