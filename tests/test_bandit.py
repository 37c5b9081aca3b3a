"""Bandit schedulers (baselines.bandit): LinUCB, Peekaboo, M-Peekaboo and the
change detector. Unit tests on hand-worked examples and a fake connection
view, then end-to-end claims on the emulator (medians over seeds).

Regimes used end to end:

* ``HET``: 50 Mbit/s 10 ms + 5 Mbit/s 150 ms (constant capacity, RTT std =
  10 % of the mean), 2 MB. Every packet minRTT puts
  on the slow path arrives ~140 ms after the fast-path data sent with it,
  which fills the receiver's out-of-order queue and the 768 KiB flow-control
  window; waiting for the fast path pays (fast path alone: 0.36 s; minRTT:
  median 0.94 s over seeds 1-7).
* ``TABLE_I``: the FALCON paper's 4G+5G and 4G+WLAN pairs, 2 MB, where
  M-Peekaboo must stay competitive with minRTT (within 1.25x).
* ``SWAP`` (M-Peekaboo's change test): two step traces that swap the paths'
  qualities at T = 0.75 s (50 Mbit/s 10 ms RTT <-> 5 Mbit/s 150 ms RTT,
  60-packet buffers), 8 MB, so ~5000 packets go before the change.
"""

from __future__ import annotations

import copy
import logging
import math
import statistics
from types import SimpleNamespace

import numpy as np
import pytest

from baselines import make_scheduler
from baselines.bandit import (
    ChangeDetector,
    LinUCB,
    MPeekaboo,
    NoChange,
    Peekaboo,
    StateFileError,
    TwoWindowDetector,
    load_state,
    make_detector,
    save_state,
)
from baselines.bandit.mpeekaboo import PendingLinUCB
from baselines.bandit.peekaboo import ARMS, FEATURES, SEND, WAIT
from envs.runner import run_episode

MSS = 1000


# ---------------------------------------------------------------- LinUCB
def test_linucb_hand_worked_2d_example():
    """alpha 0.75, ridge 1, d = 2, worked by hand:

    start: A = I, b = 0, theta = 0 -> p(x=(1,0)) = 0.75 sqrt(1) = 0.75.
    update (x=(1,0), r=1): A = diag(2, 1), b = (1, 0), A^-1 = diag(1/2, 1),
      theta = (1/2, 0); p((1,0)) = 1/2 + 0.75 sqrt(1/2); p((0,1)) = 0.75.
    update (x=(1,1), r=0): A = [[3,1],[1,2]] (det 5), A^-1 = [[2,-1],[-1,3]]/5,
      b = (1, 0), theta = (2/5, -1/5); p((1,1)) = 1/5 + 0.75 sqrt(3/5),
      greedy g((1,0)) = 2/5. (Sherman-Morrison: u = A^-1 x = (1/2, 1),
      1 + x.u = 5/2, A^-1 - u u^T / (5/2) = [[0.4,-0.2],[-0.2,0.6]].)
    """
    m = LinUCB(n_arms=2, dim=2, alpha=0.75)
    assert m.ucb(0, np.array([1.0, 0.0])) == pytest.approx(0.75)
    m.update(0, np.array([1.0, 0.0]), 1.0)
    np.testing.assert_allclose(m.A[0], [[2, 0], [0, 1]])
    np.testing.assert_allclose(m.b[0], [1, 0])
    np.testing.assert_allclose(m.A_inv[0], [[0.5, 0], [0, 1]])
    np.testing.assert_allclose(m.theta[0], [0.5, 0])
    assert m.ucb(0, np.array([1.0, 0.0])) == pytest.approx(0.5 + 0.75 * math.sqrt(0.5))
    assert m.ucb(0, np.array([0.0, 1.0])) == pytest.approx(0.75)
    m.update(0, np.array([1.0, 1.0]), 0.0)
    np.testing.assert_allclose(m.A[0], [[3, 1], [1, 2]])
    np.testing.assert_allclose(m.A_inv[0], [[0.4, -0.2], [-0.2, 0.6]], atol=1e-15)
    np.testing.assert_allclose(m.theta[0], [0.4, -0.2], atol=1e-15)
    assert m.ucb(0, np.array([1.0, 1.0])) == pytest.approx(0.2 + 0.75 * math.sqrt(0.6))
    assert m.greedy(0, np.array([1.0, 0.0])) == pytest.approx(0.4)
    # arm 1 untouched; vector scores agree with the per-arm ones
    np.testing.assert_array_equal(m.A[1], np.eye(2))
    x = np.array([[1.0, 1.0], [0.3, 0.7]])
    np.testing.assert_allclose(m.scores(x), [m.ucb(0, x[0]), m.ucb(1, x[1])])
    np.testing.assert_allclose(m.scores(x[0], greedy=True), [0.2, 0.0], atol=1e-15)


def test_sherman_morrison_matches_numpy_inverse():
    rng = np.random.default_rng(7)
    m = LinUCB(n_arms=3, dim=6, alpha=0.75)
    for _ in range(5000):
        m.update(int(rng.integers(3)), rng.random(6), float(rng.random()))
    assert m.inverse_error() < 1e-9
    theta_exact = np.linalg.solve(m.A, m.b[:, :, None])[:, :, 0]
    np.testing.assert_allclose(m.theta, theta_exact, rtol=1e-8, atol=1e-10)
    np.testing.assert_array_equal(m.n_updates.sum(), 5000)
    m.reset(1)
    np.testing.assert_array_equal(m.A[1], np.eye(6))
    assert m.n_updates[1] == 0 and m.inverse_error() < 1e-9


# ---------------------------------------------------------------- fake view
class FakePath(SimpleNamespace):
    def rtt_sample(
        self, sent_time, now
    ):  # the view's ACK-delay-corrected sample; no ACK delay here
        return now - sent_time

    @property
    def has_room(self):
        return self.bytes_in_flight + self.mss <= self.cwnd


def path(srtt=0.05, cwnd=10 * MSS, inflight=0, probed=True, **kw):
    p = FakePath(
        srtt=srtt if probed else 0.333,
        latest_rtt=srtt if probed else 0.0,
        min_rtt=srtt,
        rttvar=srtt / 2,
        has_rtt_sample=probed,
        cwnd=cwnd,
        bytes_in_flight=inflight,
        packets_sent=0,
        mss=MSS,
        payload=MSS,
    )
    for k, v in kw.items():
        setattr(p, k, v)
    return p


def view(paths, now=0.0, send_window=10**6):
    return SimpleNamespace(now=now, paths=paths, send_window=send_window, payload=MSS)


def fast_full(now=0.0):
    """f = path 0 (10 ms) without room, s = path 1 (100 ms) with room."""
    return view([path(0.01, inflight=10 * MSS), path(0.1)], now=now)


def biased(towards: int, **kw) -> Peekaboo:
    """A Peekaboo whose model clearly prefers arm ``towards`` everywhere."""
    pk = Peekaboo(**kw)
    ones = np.ones(len(FEATURES))
    for _ in range(50):
        pk.bandit.update(towards, ones, 10.0)
        pk.bandit.update(1 - towards, ones, 0.0)
    return pk


def test_peekaboo_consulted_only_when_fast_path_full_and_slow_has_room():
    pk = Peekaboo()
    f_room = view([path(0.01), path(0.1)])
    pk.reset(f_room)
    assert pk.decide(f_room) == 0 and pk.consultations == 0  # f has room: f
    both_full = view([path(0.01, inflight=10 * MSS), path(0.1, inflight=10 * MSS)])
    assert pk.decide(both_full) is None and pk.consultations == 0  # nothing has room
    unprobed = view([path(0.01, inflight=10 * MSS), path(0.1, probed=False)])
    assert pk.decide(unprobed) == 1 and pk.consultations == 0  # probe first, no bandit
    v = fast_full()
    d = pk.decide(v)
    assert pk.consultations == 1 and d in (1, None)
    # the f/s roles follow srtt, not the path index
    pk2 = Peekaboo()
    v2 = view([path(0.1), path(0.01, inflight=10 * MSS)])
    pk2.reset(v2)
    pk2.decide(v2)
    assert pk2.consultations == 1


def test_peekaboo_wait_flag_blocks_slow_path_until_fast_has_room():
    pk = biased(WAIT)
    v = fast_full(now=1.0)
    pk.reset(v)
    assert pk.decide(v) is None and pk.waiting and pk.consultations == 1
    v.now = 1.001
    assert pk.decide(v) is None and pk.consultations == 1  # blocked, not consulted again
    v.paths[0].bytes_in_flight = 9 * MSS  # f has room again
    assert pk.decide(v) == 0 and not pk.waiting
    v.paths[0].bytes_in_flight = 10 * MSS  # f full again: consulted again
    assert pk.decide(v) is None and pk.consultations == 2
    # a send-biased model sends on s and sets no flag
    ps = biased(SEND)
    ps.reset(v)
    assert ps.decide(v) == 1 and not ps.waiting


def test_peekaboo_context_is_unit_range_and_follows_spec_order():
    pk = Peekaboo(feature_scale_mbps=8.0)  # k = 1e6 bytes/s
    f = path(0.01, cwnd=20000, inflight=20000)  # c_f/l_f = q_f/l_f = 2e6 B/s
    s = path(0.1, cwnd=100000, inflight=50000)  # c_s/l_s = 1e6, q_s/l_s = 5e5 B/s
    x = pk.context(view([f, s], send_window=10000), f, s)  # W/l_f = 1e6, W/l_s = 1e5
    np.testing.assert_allclose(x, [2 / 3, 1 / 3, 1 / 2, 1 / 11, 2 / 3, 1 / 2])
    assert np.all((0 <= x) & (x < 1))


def test_peekaboo_delayed_rewards_next_packet_of_chosen_path_oldest_first():
    pk = biased(SEND)
    v = fast_full(now=1.0)
    pk.reset(v)
    A0, b0 = pk.bandit.A.copy(), pk.bandit.b.copy()
    assert pk.decide(v) == 1
    x1 = pk.context(v, v.paths[0], v.paths[1])
    v.now = 1.01
    assert pk.decide(v) == 1
    # an ACK on s of a packet sent before both decisions completes nothing
    v.now = 1.05
    pk.on_packet_acked(v, 1, MSS, 0.99)
    assert pk.updates == 0
    # a packet sent at the first decision completes only the first record
    v.now = 1.1
    pk.on_packet_acked(v, 1, MSS, 1.0)
    assert pk.updates == 1
    r = MSS / 0.1 * 8e-6  # MSS per 0.1 s in Mbit/s, reward_scale 1
    np.testing.assert_allclose(pk.bandit.A[SEND], A0[SEND] + np.outer(x1, x1))
    np.testing.assert_allclose(pk.bandit.b[SEND], b0[SEND] + r * x1)
    np.testing.assert_array_equal(pk.bandit.A[WAIT], A0[WAIT])
    v.now = 1.2
    pk.on_packet_acked(v, 1, MSS, 1.05)
    assert pk.updates == 2
    # a wait is rewarded by the next f packet sent strictly after the decision
    pw = biased(WAIT)
    pw.reset(v)
    v.now = 2.0
    assert pw.decide(v) is None
    pw.on_packet_acked(v, 0, MSS, 2.0)  # sent in the same instant, before the wait
    assert pw.updates == 0
    v.now = 2.03
    pw.on_packet_acked(v, 0, MSS, 2.01)
    assert pw.updates == 1 and pw.bandit.n_updates[WAIT] == 51


def test_peekaboo_deploy_stochastic_adjustment_is_seeded():
    def waits(pk, n=4000):
        v = fast_full()
        pk.reset(v)
        out = 0
        for _ in range(n):
            pk.waiting = False
            out += pk.decide(v) is None
        return out / n

    assert waits(biased(WAIT, mode="deploy", seed=1)) == pytest.approx(0.7, abs=0.03)
    assert waits(biased(SEND, mode="deploy", seed=1)) == pytest.approx(0.1, abs=0.02)
    assert waits(biased(WAIT, mode="learn")) == 1.0
    a, b = biased(WAIT, mode="deploy", seed=5), biased(WAIT, mode="deploy", seed=5)
    assert waits(a, 500) == waits(b, 500)


# ---------------------------------------------------------------- persistence
def test_state_file_round_trip_is_exact(tmp_path):
    rng = np.random.default_rng(3)
    pk = Peekaboo(state_file=str(tmp_path / "pk.npz"))
    for _ in range(300):
        pk.bandit.update(int(rng.integers(2)), rng.random(6), float(rng.random()))
    out = pk.save()
    assert out == tmp_path / "pk.npz"
    assert [p.name for p in tmp_path.iterdir()] == ["pk.npz"]  # no temp file left behind
    q = Peekaboo(state_file=str(out))
    for key in ("A", "b", "A_inv", "theta", "n_updates"):
        np.testing.assert_array_equal(getattr(q.bandit, key), getattr(pk.bandit, key))
    x = rng.random(6)
    assert q.bandit.scores(x).tolist() == pk.bandit.scores(x).tolist()
    # saving into a folder (falcon.train's save(model_dir)) and the low-level API
    f2 = pk.save(tmp_path)
    assert f2.name == "peekaboo_state.npz"
    m = LinUCB(2, 6)
    load_state(f2, m, kind="peekaboo", arms=ARMS, features=FEATURES)
    np.testing.assert_array_equal(m.A, pk.bandit.A)


@pytest.mark.parametrize(
    "problem, message",
    [
        ("garbage", "not a readable .npz"),
        ("kind", "written by 'mpeekaboo'"),
        ("dims", "features"),
        ("version", "format version 99"),
        ("nan", "non-finite"),
    ],
)
def test_bad_state_file_is_one_warning_and_a_fresh_start(tmp_path, caplog, problem, message):
    f = tmp_path / "state.npz"
    if problem == "garbage":
        f.write_bytes(b"PK\x03\x04 this is not a zip archive")
    elif problem == "kind":
        save_state(f, LinUCB(2, 6), kind="mpeekaboo", arms=ARMS, features=FEATURES)
    elif problem == "dims":
        save_state(f, LinUCB(2, 5), kind="peekaboo", arms=ARMS, features=FEATURES[:5])
    else:
        save_state(f, LinUCB(2, 6), kind="peekaboo", arms=ARMS, features=FEATURES)
        with np.load(f) as z:
            data = {k: z[k] for k in z.files}
        if problem == "version":
            data["version"] = np.array(99)
        else:
            data["b"] = data["b"].copy()
            data["b"][0, 0] = np.nan
        with open(f, "wb") as fh:
            np.savez(fh, **data)
    with pytest.raises(StateFileError, match=message):
        load_state(f, LinUCB(2, 6), kind="peekaboo", arms=ARMS, features=FEATURES)
    with caplog.at_level(logging.WARNING, logger="baselines.bandit.peekaboo"):
        pk = Peekaboo(state_file=str(f))
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and message in warnings[0].getMessage()
    assert "starting from a fresh model" in warnings[0].getMessage()
    np.testing.assert_array_equal(pk.bandit.A, np.tile(np.eye(6), (2, 1, 1)))
    # the transfer runs to completion and the state file is rewritten (valid) afterwards
    res = run_episode(HET, BULK2, pk, 1)
    assert res.metrics["timed_out"] == 0 and pk.updates > 0
    pk.save()
    q = Peekaboo(state_file=str(f))
    np.testing.assert_array_equal(q.bandit.A, pk.bandit.A)


def test_missing_state_file_is_a_silent_fresh_start(tmp_path, caplog):
    with caplog.at_level(logging.WARNING):
        pk = Peekaboo(state_file=str(tmp_path / "new" / "pk.npz"))
    assert not caplog.records and pk.bandit.n_updates.sum() == 0
    run_episode(HET, BULK2, pk, 1)
    assert not (tmp_path / "new" / "pk.npz").exists()
    run_episode(HET, BULK2, pk, 2)  # reset() of the next connection saves the first
    q = Peekaboo(state_file=str(tmp_path / "new" / "pk.npz"))
    assert 0 < q.bandit.n_updates.sum() < pk.bandit.n_updates.sum()


# ---------------------------------------------------------------- end to end: Peekaboo
def _path(mbps, rtt_ms):
    return {"bandwidth_mbps": mbps, "rtt_ms": rtt_ms, "rtt_std_ms": rtt_ms / 10}


# Observed figures: both paths open at t = 0, and unpaced. With pacing (the
# default since) the slow path takes bursts no more, minRTT sends half as much
# on it (median 154 against 314 kB) and ties a trained Peekaboo (0.457 s
# against 0.460 s): the head-of-line blocking these tests are about is the
# unpaced sender's.
HET = {"paths": [_path(50, 10), _path(5, 150)], "setup": "none", "pacing": False}
BULK2 = {"kind": "bulk", "size_bytes": 2_000_000}
EVAL_SEEDS = (1, 2, 3, 4, 5, 6, 7)


class RecordingPeekaboo(Peekaboo):
    """Records (packets sent so far over all connections, arm) per consultation."""

    def __init__(self, **kw):
        super().__init__(record_decisions=True, **kw)
        self.log: list[tuple[int, int]] = []
        self.packets_before = 0

    def decide(self, view):
        n = len(self.decisions)
        d = super().decide(view)
        if len(self.decisions) > n:
            sent = self.packets_before + sum(p.packets_sent for p in view.paths)
            self.log.append((sent, self.decisions[-1]))
        return d


def test_peekaboo_learns_to_wait_and_beats_minrtt_on_heterogeneous_paths():
    """Train 4 connections in learn mode (A, b carried over), then deploy.

    Observed (seeds 1-10): minRTT median 0.95 s (bimodal, 0.57-1.09 s);
    trained Peekaboo in deploy mode 0.55 s, in learn mode 0.46 s. The
    learner waits at every consultation from ~1000 packets on (its first 64
    consultations send: ties go to S until S's UCB bonus shrinks). What the
    persisted A, b buy here is that a new connection waits from its first
    consultation; a fresh Peekaboo learns the same within its first
    connection and reaches the same medians (learn 0.45 s, deploy 0.55 s),
    so the test does not claim more than that."""
    pk = RecordingPeekaboo()
    for i in range(4):
        res = run_episode(HET, BULK2, pk, 1000 + i)
        pk.packets_before += int(res.metrics["packets_sent"])
    # decisions stabilise: wait fraction per 1000-packet window, after the first 2000 packets
    windows: dict[int, list[int]] = {}
    for sent, arm in pk.log:
        windows.setdefault(sent // 1000, []).append(arm)
    late = [w.count(WAIT) / len(w) for k, w in sorted(windows.items()) if k >= 2 and len(w) >= 20]
    assert len(late) >= 3
    assert min(late) >= 0.9 and max(late) - min(late) <= 0.1, late
    # persisted A, b: a new connection waits from the start; a fresh learner first sends
    trained, fresh = copy.deepcopy(pk), RecordingPeekaboo()
    for sched in (trained, fresh):
        sched.decisions.clear()
        run_episode(HET, BULK2, sched, 7)
    assert trained.decisions[:20] == [WAIT] * 20 and fresh.decisions[:20] == [SEND] * 20

    def median_time(make):
        return statistics.median(
            run_episode(HET, BULK2, make(), s).metrics["download_time_s"] for s in EVAL_SEEDS
        )

    minrtt = median_time(lambda: make_scheduler("minrtt"))
    pk.mode = "deploy"
    deploy = median_time(lambda: copy.deepcopy(pk))
    assert deploy < 0.8 * minrtt, (deploy, minrtt)


def test_peekaboo_fit_then_save_for_falcon_train(tmp_path):
    pk = Peekaboo()
    logged = []
    final = pk.fit(
        HET,
        {"kind": "bulk", "size_bytes": 500_000},
        seed=10,
        episodes=2,
        log=lambda m, step: logged.append((step, m)),
    )
    assert pk.mode == "deploy" and final["episodes"] == 2.0 and [s for s, _ in logged] == [0, 1]
    out = pk.save(tmp_path)
    q = Peekaboo(state_file=str(out))
    np.testing.assert_array_equal(q.bandit.b, pk.bandit.b)


# ---------------------------------------------------------------- change detector
def test_two_window_detector_fires_on_a_step_not_on_noise():
    rng = np.random.default_rng(0)
    det = TwoWindowDetector(window=32, ratio=2.5, min_shift_s=0.01)
    fired = [det.update(0, 0.02 * (1 + 0.3 * rng.standard_normal()), i * 1e-3) for i in range(2000)]
    assert not any(fired)
    fired = [
        det.update(0, 0.15 * (1 + 0.1 * rng.standard_normal()), 2 + i * 1e-3) for i in range(64)
    ]
    assert fired.index(True) < 32 and sum(fired) == 1  # fires once, within a window
    assert det.detections[0][1] == 0
    assert not det.update(1, 5.0, 3.0)  # other paths are separate
    det.reset()
    assert det.detections == []
    # a 2x sawtooth-like swing (1x -> 2x base RTT) is below the default ratio
    d2 = TwoWindowDetector()
    assert not any(d2.update(0, 0.02 if (i // 200) % 2 else 0.04, 0.0) for i in range(2000))


def test_make_detector_accepts_names_mappings_objects_and_none():
    assert isinstance(make_detector(None), NoChange)
    assert isinstance(make_detector("none"), NoChange)
    d = make_detector({"kind": "two_window", "window": 8})
    assert isinstance(d, TwoWindowDetector) and d.window == 8
    custom = ChangeDetector()
    assert make_detector(custom) is custom
    with pytest.raises(ValueError, match="unknown change detector 'bocpd'"):
        make_detector("bocpd")


class FireAt(ChangeDetector):
    """Injected detector: fires at the n-th sample."""

    def __init__(self, n):
        self.n = n
        self.count = 0

    def update(self, path, sample, now):
        self.count += 1
        return self.count == self.n


def test_mpeekaboo_resets_on_injected_detector():
    m = MPeekaboo(detector=FireAt(600), seed=1)
    res = run_episode(HET, BULK2, m, 1)
    assert res.metrics["timed_out"] == 0 and len(m.changes) == 1
    # the model only holds what came after the reset (n_updates counts decisions)
    before = m.consultations
    assert 0 < m.bandit.n_updates.sum() < before


class LossFeed(ChangeDetector):
    """Injected detector with a loss feed (as baselines.changepoint's BOCPD
    has): counts the packets it is told about, fires on the first loss."""

    def __init__(self):
        self.fates = []

    def update_loss(self, path, lost, now):
        self.fates.append(lost)
        return lost and self.fates.count(True) == 1


def test_mpeekaboo_feeds_packet_fates_to_a_detector_with_a_loss_feed():
    m = MPeekaboo(detector=LossFeed(), seed=1)
    res = run_episode(TABLE_I["4G+WLAN"], BULK2, m, 1)
    fates = m.detector.fates
    # every acknowledged or lost packet (some are still in flight when the download completes)
    assert 0.95 * res.metrics["packets_sent"] < len(fates) <= res.metrics["packets_sent"]
    assert sum(fates) == res.metrics["packets_lost"] > 0
    assert len(m.changes) == 1


# ---------------------------------------------------------------- M-Peekaboo units
def mview(paths, now=0.0, send_window=10**6, pending=10**6):
    return SimpleNamespace(
        now=now,
        paths=paths,
        send_window=send_window,
        payload=MSS,
        pending_bytes=pending,
        retransmit_bytes=0,
    )


def test_pending_linucb_equals_linucb_once_all_rewards_are_in():
    """commit (A += x x^T, b += r_hat x at decision time) then settle (b +=
    (r - r_hat) x when the reward comes), in any order, ends where plain
    LinUCB updates end; a decision in flight already shrinks the bonus."""
    rng = np.random.default_rng(11)
    pend, plain = PendingLinUCB(3, 8), LinUCB(3, 8)
    inflight = []
    for i in range(600):
        arm, x, r = int(rng.integers(3)), rng.random(8), float(rng.random())
        X = rng.random((3, 8))
        inflight.append((arm, x, r, pend.commit(arm, x)))
        plain.update(arm, x, r)
        if i % 7 == 6:  # rewards arrive late and out of order
            rng.shuffle(inflight)
            for a, xx, rr, r_hat in inflight:
                pend.settle(a, xx, rr - r_hat)
            inflight = []
            for key in ("A", "b", "A_inv", "theta", "n_updates"):
                np.testing.assert_allclose(getattr(pend, key), getattr(plain, key), atol=1e-9)
            np.testing.assert_allclose(pend.prepare(X)[0], plain.scores(X), atol=1e-9)
    fresh = PendingLinUCB(1, 2)
    x = np.array([1.0, 0.0])
    before = fresh.prepare(x[None])[0][0]
    assert fresh.commit(0, x) == 0.0  # theta = 0: r_hat = 0
    after = fresh.prepare(x[None])[0][0]  # A = diag(2, 1): bonus 0.75 sqrt(1/2)
    assert after == pytest.approx(0.75 * math.sqrt(0.5)) and after < before == pytest.approx(0.75)


def biased_m(arm: int, n_paths: int = 2, **kw) -> MPeekaboo:
    """A fresh M-Peekaboo (no random draws) whose model prefers ``arm``."""
    m = MPeekaboo(p_follow=1.0, **kw)
    m.reset(mview([path() for _ in range(n_paths)]))
    m.bandit.b[arm] += 5.0
    return m


def test_mpeekaboo_arms_wait_only_for_the_fastest_path():
    # f (path 0) full, s (path 1) with room: arms = send on 1, wait (index 2)
    m = biased_m(2, record_decisions=True)
    v = mview([path(0.01, inflight=10 * MSS), path(0.1)], now=1.0)
    assert m.decide(v) == 0 and m.waits == 1 and m.consultations == 1  # committed to f
    assert m.decisions == [(1.0, 0)]
    # a path without room other than f is never chosen, however it scores
    m3 = biased_m(1, n_paths=3)
    v3 = mview([path(0.01, inflight=10 * MSS), path(0.02, inflight=10 * MSS), path(0.1)])
    assert all(m3.decide(v3) in (0, 2) for _ in range(20))
    # f has room and nobody else: f, no bandit decision; unprobed paths first
    m0 = biased_m(1)
    assert m0.decide(mview([path(0.01), path(0.1, inflight=10 * MSS)])) == 0
    assert m0.decide(mview([path(0.01), path(0.1, probed=False)])) == 1
    assert m0.consultations == 0
    # both with room: a send arm, the one the model prefers
    assert m0.decide(mview([path(0.01), path(0.1)])) == 1 and m0.consultations == 1


def test_mpeekaboo_wait_reward_is_the_idle_capacity_of_the_other_paths():
    """Wait at t = 1.0 for f (path 0, full); the connection asks again at
    1.004 (the committed packet has left). Path 1 had room, 10 packets per
    0.1 s = 100 packets/s idle for 4 ms: cost 0.4 packets, r = 1 / 1.4."""
    m = biased_m(2)
    b0, A0 = m.bandit.b[2].copy(), m.bandit.A[2].copy()
    v = mview([path(0.01, inflight=10 * MSS), path(0.1)], now=1.0)
    x = m.contexts(v, 1)[2]
    assert m.decide(v) == 0 and m.updates == 0
    v.now = 1.004
    v.paths[0].bytes_in_flight = 9 * MSS
    m.decide(v)
    assert m.updates == 1
    np.testing.assert_allclose(m.bandit.b[2], b0 + x / 1.4)
    np.testing.assert_allclose(m.bandit.A[2], A0 + np.outer(x, x))


def test_mpeekaboo_send_reward_charges_blocked_time_to_the_head_of_line_path():
    """Send on path 1 at t = 1.0; from 1.01 to 1.03 the connection has no
    flow-control credit, and path 1 holds the only (oldest) outstanding
    decision: it is charged 0.02 s x (10/0.01 + 10/0.1) packets/s = 22
    packets. Its ACK at 1.1 gives r = 1 / (1 + 22)."""
    m = biased_m(1)
    b0 = m.bandit.b[1].copy()
    v = mview([path(0.01, inflight=10 * MSS), path(0.1)], now=1.0)
    x = m.contexts(v, 1)[1]
    assert m.decide(v) == 1
    v.now, v.send_window = 1.01, 0
    m.on_packet_lost(v, 0, MSS, 0.9)  # any callback advances the charge clock
    v.now, v.send_window = 1.03, 10**6
    m.on_packet_lost(v, 0, MSS, 0.9)
    v.now = 1.1
    m.on_packet_acked(v, 1, MSS, 0.99)  # sent before the decision: completes nothing
    assert m.updates == 0
    m.on_packet_acked(v, 1, MSS, 1.0)
    assert m.updates == 1
    np.testing.assert_allclose(m.bandit.b[1], b0 + x / 23)


# ---------------------------------------------------------------- end to end: M-Peekaboo
TABLE_I = {
    "4G+5G": {"paths": [{"link": "4g"}, {"link": "5g"}]},
    "4G+WLAN": {"paths": [{"link": "4g"}, {"link": "wlan"}]},
}
M_SEEDS = (1, 2, 3, 4, 5, 6, 7, 8)


def _medians(scenario, app, seeds=M_SEEDS):
    """Median download time of minRTT and of M-Peekaboo (scheduler seed =
    episode seed) over ``seeds``, plus the per-seed pairs."""
    pairs = []
    for s in seeds:
        ref = run_episode(scenario, app, make_scheduler("minrtt"), s).metrics["download_time_s"]
        m = MPeekaboo(seed=s)
        res = run_episode(scenario, app, m, s)
        assert res.metrics["timed_out"] == 0 and m.changes == []  # static: no false change
        pairs.append((ref, res.metrics["download_time_s"]))
    return (statistics.median(p[0] for p in pairs), statistics.median(p[1] for p in pairs), pairs)


@pytest.mark.parametrize("pair", sorted(TABLE_I))
def test_mpeekaboo_is_competitive_with_minrtt_on_table_i_pairs(pair):
    """Median download time within 1.25x of minRTT's, 2 MB, seeds 1-8.

    Observed (seeds 1-8): 4G+5G 0.207 vs 0.198 s (1.04x), 4G+WLAN 0.369 vs
    0.337 s (1.10x). Over seeds 1-16 and at 20 MB the ratios are 0.99-1.11
    (module docstring of baselines/bandit/mpeekaboo.py). Slightly slower, not
    faster: the first few hundred decisions of a fresh LinUCB explore."""
    ref, mine, pairs = _medians(TABLE_I[pair], BULK2)
    assert mine < 1.25 * ref, pairs


def test_mpeekaboo_beats_minrtt_on_heterogeneous_paths():
    """HET (50 Mbit/s 10 ms + 5 Mbit/s 150 ms), 2 MB, seeds 1-8, fresh model
    per connection. Observed: M-Peekaboo median 0.575 s vs minRTT 0.952 s,
    faster on 7 of 8 seeds (8 MB: 1.77 vs 2.53 s). It learns within the
    connection that sends on the slow path cost flow-control stalls (the
    blocked-time charge of its reward) and waits for the fast path."""
    ref, mine, pairs = _medians(HET, BULK2)
    assert mine < 0.8 * ref, pairs
    assert sum(m < r for r, m in pairs) >= 6, pairs


T_CHANGE = 0.75


@pytest.fixture
def swap_scenario(tmp_path):
    def trace(name, before, after):
        f = tmp_path / name
        rows = [(0, *before), (int(T_CHANGE * 1000), *after), (600_000, *after)]
        f.write_text(
            "time_ms,bw_kbps,delay_ms,loss\n" + "".join(f"{t},{bw},{d},0\n" for t, bw, d in rows)
        )
        return str(f)

    fast, slow = (50_000, 5), (5_000, 75)  # kbit/s, one-way ms
    return {
        "paths": [
            {
                "trace": trace("a.csv", fast, slow),
                "rtt_ms": 20,
                "rtt_std_ms": 2,
                "buffer_packets": 60,
            },
            {
                "trace": trace("b.csv", slow, fast),
                "rtt_ms": 20,
                "rtt_std_ms": 2,
                "buffer_packets": 60,
            },
        ],
        "setup": "none",
        "pacing": False,
    }  # observed figures: both paths open at t = 0, unpaced (HET)


def test_mpeekaboo_with_reset_recovers_faster_after_an_abrupt_change(swap_scenario):
    """Wrong choices (the old fast path, now the slow one) among the first 300
    bandit decisions after the swap, with the two-window detector vs without.

    Observed (seeds 1-8, same setup): with reset 68-89 (median 82), without
    115-166 (median 142); with reset fewer on every seed. Both detections
    (path 0 gets slower, path 1 faster) come 0.17-0.36 s after the change.
    Download times are about equal (median 1.9 s both): the change stalls the
    connection (data queued on the degraded path) for longer than the learners
    take to adapt."""
    app = {"kind": "bulk", "size_bytes": 8_000_000}
    wrong = {True: [], False: []}
    for seed in (1, 2, 3, 4):
        for reset in (True, False):
            m = MPeekaboo(
                seed=seed, record_decisions=True, detector="two_window" if reset else None
            )
            res = run_episode(swap_scenario, app, m, seed)
            assert res.metrics["timed_out"] == 0
            after = [a for t, a in m.decisions if t >= T_CHANGE][:300]
            assert len(after) == 300
            wrong[reset].append(after.count(0))
            if reset:
                assert m.changes and all(T_CHANGE < t < T_CHANGE + 0.4 for t, _ in m.changes), (
                    m.changes
                )
            else:
                assert m.changes == []
    assert statistics.median(wrong[True]) < 0.8 * statistics.median(wrong[False]), wrong
    assert sum(a < b for a, b in zip(wrong[True], wrong[False])) >= 3, wrong


# ---------------------------------------------------------------- registry, determinism
@pytest.mark.parametrize("name, cls", [("peekaboo", Peekaboo), ("mpeekaboo", MPeekaboo)])
def test_registry_and_determinism_per_seed(name, cls):
    sched = make_scheduler(name, seed=4, record_decisions=True)
    assert isinstance(sched, cls) and sched.name == name and sched.wants_packet_feedback
    kw = {"mode": "deploy"} if name == "peekaboo" else {}
    app = {"kind": "bulk", "size_bytes": 1_000_000}

    def run(seed, sched_seed):
        s = make_scheduler(name, seed=sched_seed, record_decisions=True, **kw)
        r = run_episode(HET, app, s, seed)
        return r.metrics, list(s.decisions)

    a, b = run(3, 4), run(3, 4)
    assert a == b
    assert run(3, 5)[1] != a[1]  # another scheduler seed, other random draws
