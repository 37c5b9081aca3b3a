"""Unit tests of the congestion controllers (envs.cc), driven directly with
synthetic ACK / loss sequences. Units: bytes and seconds."""

import math

import pytest

from envs.cc import CC_REGISTRY, COUPLED, CouplingGroup, make_cc
from envs.cc.coupled import Balia, Lia, Olia
from envs.cc.cubic import Cubic
from envs.cc.newreno import NewReno
from envs.errors import ConfigError

MSS = 1000


class Rtt:
    """Stand-in for the transport's RTT estimator [s]."""

    def __init__(self, srtt):
        self.srtt = srtt
        self.min_rtt = srtt
        self.latest_rtt = srtt
        self.rttvar = srtt / 2


def ack_round(cc, now, rtt, ack_bytes=2 * MSS):
    """Acknowledge one window (cwnd at the round start, in ``ack_bytes`` ACKs
    and a remainder) spread evenly over one RTT starting at ``now``; each ACK
    acknowledges packets sent one RTT earlier. Returns the round's end time."""
    r = Rtt(rtt)
    total = cc.cwnd
    n = max(1, math.ceil(total / ack_bytes))
    left = total
    for i in range(n):
        b = ack_bytes if left >= ack_bytes else left
        left -= b
        t = now + (i + 1) * rtt / n
        cc.on_ack(t, b, t - rtt, r)
    return now + rtt


def coupled_round(ccs, rtts, now):
    """One RTT of the longest path: each subflow acks its window once per own
    RTT, ACKs (2 MSS each) of all subflows interleaved in time order."""
    span = max(rtts)
    events = []
    for k, (cc, rtt) in enumerate(zip(ccs, rtts, strict=True)):
        t0 = now
        while t0 < now + span - 1e-12:
            n = max(1, round(cc.cwnd / (2 * MSS)))
            b = cc.cwnd / n
            for i in range(n):
                t = t0 + (i + 1) * rtt / n
                events.append((t, k, b, rtt))
            t0 += rtt
    events.sort()
    for t, k, b, rtt in events:
        ccs[k].on_ack(t, b, t - rtt, Rtt(rtt))
    return now + span


def put_in_ca(cc, cwnd_packets, srtt):
    cc.cwnd = float(cwnd_packets * MSS)
    cc.ssthresh = cc.cwnd
    cc.srtt = srtt


# ---------------------------------------------------------------- NewReno


@pytest.mark.parametrize("name", sorted(CC_REGISTRY))
def test_slow_start_doubles_per_rtt(name):
    cc = make_cc(name, MSS, 10)
    now = 0.0
    for k in range(4):
        before = cc.cwnd
        now = ack_round(cc, now, 0.05)
        assert cc.cwnd == pytest.approx(2 * before), k
    assert cc.cwnd == 160 * MSS


def test_newreno_ca_adds_one_mss_per_window():
    cc = NewReno(MSS, 10)
    put_in_ca(cc, 100, 0.05)
    before = cc.cwnd
    ack_round(cc, 0.0, 0.05)
    inc = (cc.cwnd - before) / MSS
    assert 0.99 <= inc <= 1.0
    # independent of the ACK granularity (byte counting)
    cc2 = NewReno(MSS, 10)
    put_in_ca(cc2, 100, 0.05)
    ack_round(cc2, 0.0, 0.05, ack_bytes=MSS)
    assert cc2.cwnd == pytest.approx(cc.cwnd, rel=1e-4)


def test_newreno_loss_halves_once_per_recovery_period():
    cc = NewReno(MSS, 10)
    put_in_ca(cc, 100, 0.05)
    cc.on_loss(1.0, MSS, 0.9)
    assert cc.cwnd == 50 * MSS and cc.ssthresh == 50 * MSS
    assert cc.recovery_start == 1.0
    # more losses of packets sent before the recovery started: ignored
    cc.on_loss(1.01, MSS, 0.95)
    cc.on_loss(1.02, MSS, 1.0)
    assert cc.cwnd == 50 * MSS
    # ACKs of packets sent before the recovery started: no increase
    cc.on_ack(1.03, 2 * MSS, 0.99, Rtt(0.05))
    assert cc.cwnd == 50 * MSS
    # a packet sent after the recovery started ends it
    cc.on_ack(1.1, 2 * MSS, 1.05, Rtt(0.05))
    assert cc.cwnd == pytest.approx(50 * MSS + MSS * 2 * MSS / (50 * MSS))
    cc.on_loss(1.2, MSS, 1.05)
    assert cc.cwnd == pytest.approx(cc.ssthresh) and cc.cwnd < 26 * MSS


def test_newreno_min_and_max_window():
    cc = NewReno(MSS, 10, min_window_packets=2, max_window_bytes=25 * MSS)
    ack_round(cc, 0.0, 0.05)
    ack_round(cc, 0.05, 0.05)
    assert cc.cwnd == 25 * MSS
    for k in range(10):
        cc.on_loss(1.0 + k, MSS, 0.5 + k)
    assert cc.cwnd == 2 * MSS


def test_persistent_congestion_collapse():
    cc = Cubic(MSS, 10)
    put_in_ca(cc, 100, 0.05)
    cc.on_loss(1.0, MSS, 0.9)
    cc.on_persistent_congestion(1.0)
    assert cc.cwnd == 2 * MSS and cc.ssthresh == 70 * MSS
    assert cc.in_slow_start


# ---------------------------------------------------------------- CUBIC


def test_cubic_loss_reduces_by_beta_once_per_recovery_period():
    cc = Cubic(MSS, 10)
    put_in_ca(cc, 100, 0.05)
    cc.on_loss(1.0, MSS, 0.9)
    assert cc.cwnd == pytest.approx(70 * MSS)
    assert cc.ssthresh == pytest.approx(70 * MSS)
    assert cc.w_max == pytest.approx(100 * MSS)
    cc.on_loss(1.01, MSS, 0.99)
    cc.on_ack(1.02, 2 * MSS, 1.0, Rtt(0.05))
    assert cc.cwnd == pytest.approx(70 * MSS)
    # second congestion event below W_max: fast convergence
    cc.on_ack(1.1, 2 * MSS, 1.05, Rtt(0.05))
    w = cc.cwnd
    cc.on_loss(1.2, MSS, 1.05)
    assert cc.cwnd == pytest.approx(0.7 * w)
    assert cc.w_max == pytest.approx(w * (1 + 0.7) / 2)
    slow = Cubic(MSS, 10, fast_convergence=False)
    put_in_ca(slow, 100, 0.05)
    slow.on_loss(1.0, MSS, 0.9)
    slow.on_ack(1.1, 2 * MSS, 1.05, Rtt(0.05))
    slow.on_loss(1.2, MSS, 1.05)
    assert slow.w_max == pytest.approx(w)


def _cubic_after_loss_at(w_max_packets, rtt, duration):
    """CUBIC in CA at ``w_max_packets``, one loss at t=0, then ACK rounds.
    Returns (cc, [(t, cwnd_packets)] at round ends)."""
    cc = Cubic(MSS, 10)
    put_in_ca(cc, w_max_packets, rtt)
    cc.on_loss(0.0, MSS, -rtt / 2)
    now, trace = 0.0, []
    while now < duration:
        now = ack_round(cc, now, rtt)
        trace.append((now, cc.cwnd / MSS))
    return cc, trace


def test_cubic_window_follows_cubic_function():
    c, beta, w_max, rtt = 0.4, 0.7, 1000.0, 0.1
    cc, trace = _cubic_after_loss_at(w_max, rtt, 14.0)
    k = (w_max * (1 - beta) / c) ** (1 / 3)  # RFC 9438 eq. 2, segments
    assert k == pytest.approx(9.0856, abs=1e-4)
    assert cc.k == pytest.approx(k, rel=1e-9)
    # the epoch starts with the first ACK after the recovery round
    assert rtt < cc.t_epoch <= 2 * rtt + 1e-9
    for t_probe in (0.5, 2.0, 5.0, k, 11.0, 13.0):
        now, w = min(trace, key=lambda p: abs(p[0] - cc.t_epoch - t_probe))
        t = now - cc.t_epoch
        expected = c * (t - k) ** 3 + w_max  # RFC 9438 eq. 1, segments
        assert w == pytest.approx(expected, rel=0.005), (t, w, expected)


def test_cubic_beats_newreno_at_large_bdp():
    rtt = 0.1
    cubic, _ = _cubic_after_loss_at(1000, rtt, 5.0)
    reno = NewReno(MSS, 10)
    put_in_ca(reno, 1000, rtt)
    reno.on_loss(0.0, MSS, -rtt / 2)
    now = 0.0
    while now < 5.0:
        now = ack_round(reno, now, rtt)
    # NewReno: 500 packets + ~1 per RTT after the recovery round
    assert reno.cwnd / MSS == pytest.approx(500 + 49, rel=0.01)
    assert cubic.cwnd / MSS > 950
    assert cubic.cwnd > 1.7 * reno.cwnd


def test_cubic_reno_friendly_region_at_small_bdp():
    rtt = 0.01
    cc, trace = _cubic_after_loss_at(20, rtt, 1.5)
    # K = cbrt(20*0.3/0.4) ~ 2.47 s: the cubic curve barely moves, W_est rules.
    rounds = [w for _, w in trace]
    # first phase: alpha_cubic = 3(1-b)/(1+b) ~ 0.53 segments per RTT until
    # W_est reaches cwnd_prior (20), then 1 segment per RTT (RFC 9438 §4.3)
    early = rounds[5] - rounds[1]
    assert early / 4 == pytest.approx(3 * 0.3 / 1.7, rel=0.08)
    late = rounds[-1] - rounds[-21]
    assert late / 20 == pytest.approx(1.0, rel=0.05)
    assert rounds[-1] > 2 * cc.w_cubic(trace[-1][0] - cc.t_epoch) / MSS


# ---------------------------------------------------------------- coupled


@pytest.mark.parametrize("name", sorted(COUPLED))
def test_single_member_group_is_newreno(name):
    reno = NewReno(MSS, 10)
    cc = make_cc(name, MSS, 10)
    assert cc.group.members == [cc]
    now = 0.0
    for step in range(40):
        for x in (reno, cc):
            ack_round(x, now, 0.04)
        now += 0.04
        if step in (6, 20, 31):
            for x in (reno, cc):
                x.on_loss(now + 0.001, MSS, now - 0.01)
                x.on_loss(now + 0.002, MSS, now - 0.005)  # same recovery period
        assert cc.cwnd == pytest.approx(reno.cwnd, rel=1e-9), step
        assert cc.ssthresh == pytest.approx(reno.ssthresh, rel=1e-9), step


@pytest.mark.parametrize("name", sorted(COUPLED))
@pytest.mark.parametrize("windows", [(40, 40), (20, 60), (10, 30, 50)])
def test_coupled_equal_rtt_no_faster_than_one_reno(name, windows):
    group = CouplingGroup()
    ccs = [make_cc(name, MSS, 10, group=group) for _ in windows]
    for i, (cc, w) in enumerate(zip(ccs, windows, strict=True)):
        put_in_ca(cc, w, 0.05)
        cc.l1 = 1e5 * (i + 1)  # distinct loss histories (OLIA)
    now = 0.0
    for _ in range(20):
        before = sum(cc.cwnd for cc in ccs)
        now = coupled_round(ccs, [0.05] * len(ccs), now)
        inc = (sum(cc.cwnd for cc in ccs) - before) / MSS
        assert 0.2 < inc <= 1.0


def test_coupled_aggregate_increase_hand_computed():
    """Windows 20 and 60 MSS, equal RTT: per RTT, path r acks W_r bytes.
    LIA: alpha = 80*60/80^2 = 0.75, total = alpha = 0.75 MSS.
    OLIA: sum_r w_r^2/(sum w)^2 + sum alpha_r = (400+3600)/6400 = 0.625 MSS.
    BALIA: sum_r w_r^2/(sum w)^2 (1+a_r)(4+a_r)/10 with a = (3, 1):
    400/6400*2.8 + 3600/6400*1 = 0.7375 MSS."""
    for name, expected in (("lia", 0.75), ("olia", 0.625), ("balia", 0.7375)):
        group = CouplingGroup()
        ccs = [make_cc(name, MSS, 10, group=group) for _ in range(2)]
        put_in_ca(ccs[0], 20, 0.05)
        put_in_ca(ccs[1], 60, 0.05)
        coupled_round(ccs, [0.05, 0.05], 0.0)
        inc = (ccs[0].cwnd + ccs[1].cwnd) / MSS - 80
        assert inc == pytest.approx(expected, rel=0.03), name


def test_lia_alpha_unequal_rtts_hand_computed():
    group = CouplingGroup()
    a, b = Lia(MSS, 10, group=group), Lia(MSS, 10, group=group)
    put_in_ca(a, 10, 0.01)  # W = 1e4 B, W/rtt = 1e6 B/s,  W/rtt^2 = 1e8
    put_in_ca(b, 40, 0.1)  # W = 4e4 B, W/rtt = 4e5 B/s,  W/rtt^2 = 4e6
    alpha = 5e4 * 1e8 / (1.4e6) ** 2
    assert alpha == pytest.approx(2.5510204, rel=1e-6)
    assert a.alpha() == pytest.approx(alpha, rel=1e-12)
    assert b.alpha() == pytest.approx(alpha, rel=1e-12)
    # subflow a: min(alpha*b*mss/total, b*mss/w_a) = min(0.0510 b, 0.1 b)
    a.on_ack(1.0, 2 * MSS, 0.99, Rtt(0.01))
    assert a.cwnd - 1e4 == pytest.approx(alpha * 2 * MSS * MSS / 5e4, rel=1e-12)
    # subflow b: capped by its own Reno increase 2*MSS*MSS/4e4 = 50 B
    b.on_ack(1.0, 2 * MSS, 0.9, Rtt(0.1))
    assert b.cwnd - 4e4 == pytest.approx(50.0, rel=1e-12)


def test_olia_alpha_sets_hand_computed():
    group = CouplingGroup()
    p = [Olia(MSS, 10, group=group) for _ in range(3)]
    # (window [MSS], rtt [s], l [B]); l/rtt^2 = 4e8, 4e7, 1e8: best = p0;
    # largest window = p1; B \ M = {p0}: alpha = 1/3, -1/3, 0.
    for cc, (w, r, ll) in zip(p, [(10, 0.05, 1e6), (30, 0.05, 1e5), (20, 0.1, 1e6)], strict=True):
        put_in_ca(cc, w, r)
        cc.l1, cc.l2 = ll, ll / 2
    assert [cc.alpha() for cc in p] == pytest.approx([1 / 3, -1 / 3, 0.0])
    # best path also has the largest window: B \ M empty, all alpha 0
    p[1].l1 = 1e9
    assert [cc.alpha() for cc in p] == [0.0, 0.0, 0.0]
    # increase on p0 for one 2-MSS ACK, hand formula in bytes
    p[1].l1 = 1e5
    rate_sum = 1e4 / 0.05 + 3e4 / 0.05 + 2e4 / 0.1
    expected = 2 * MSS * MSS * ((1e4 / 0.05**2) / rate_sum**2 + (1 / 3) / 1e4)
    p[0].on_ack(1.0, 2 * MSS, 0.95, Rtt(0.05))
    assert p[0].cwnd - 1e4 == pytest.approx(expected, rel=1e-9)


def test_olia_inter_loss_counters():
    cc = Olia(MSS, 10)
    put_in_ca(cc, 10, 0.05)
    ack_round(cc, 0.0, 0.05)
    assert cc.l2 == pytest.approx(10 * MSS) and cc.l1 == 0
    cc.on_loss(0.06, MSS, 0.055)
    cc.on_loss(0.07, MSS, 0.056)  # same recovery period: no shift
    assert cc.l1 == pytest.approx(10 * MSS) and cc.l2 == 0
    cc.on_ack(0.08, 3 * MSS, 0.03, Rtt(0.05))  # counted although in recovery
    assert cc.l2 == 3 * MSS


def test_balia_loss_reduction_hand_computed():
    def pair(rtt2):
        group = CouplingGroup()
        a, b = Balia(MSS, 10, group=group), Balia(MSS, 10, group=group)
        put_in_ca(a, 10, 0.01)  # x = 1e6 B/s
        put_in_ca(b, 40, rtt2)
        return a, b

    # x_b = 4e5 B/s: alpha_a = 1, alpha_b = 2.5 -> min(., 1.5) = 1.5
    a, b = pair(0.1)
    assert a.alpha() == pytest.approx(1.0) and b.alpha() == pytest.approx(2.5)
    b.on_loss(1.0, MSS, 0.9)
    assert b.cwnd == pytest.approx(40 * MSS - 20 * MSS * 1.5)  # 10 MSS
    assert b.ssthresh == pytest.approx(10 * MSS)
    a, b = pair(0.1)
    a.on_loss(1.0, MSS, 0.9)
    assert a.cwnd == pytest.approx(5 * MSS)
    # x_b = 4e4/0.032 = 1.25e6 B/s: alpha_a = 1.25 -> 10 - 5*1.25 = 3.75 MSS
    a, b = pair(0.032)
    a.on_loss(1.0, MSS, 0.9)
    assert a.cwnd == pytest.approx(3.75 * MSS)
    # increase, hand formula: b*mss*(x_r/rtt_r)/(sum x)^2*(1+a)(4+a)/10
    a, b = pair(0.032)
    x_a, x_b = 1e4 / 0.01, 4e4 / 0.032
    al = x_b / x_a
    expected = 2 * MSS * MSS * (x_a / 0.01) / (x_a + x_b) ** 2 * (1 + al) * (4 + al) / 10
    a.on_ack(1.0, 2 * MSS, 0.99, Rtt(0.01))
    assert a.cwnd - 1e4 == pytest.approx(expected, rel=1e-12)


# ---------------------------------------------------------------- registry


def test_make_cc_registry_and_groups():
    assert set(CC_REGISTRY) == {"newreno", "cubic", "lia", "olia", "balia", "bbr"}
    group = CouplingGroup()
    a = make_cc("olia", MSS, 32, group=group, min_window_packets=4)
    b = make_cc("OLIA", MSS, 32, group=group)
    assert group.members == [a, b] and a.min_window == 4 * MSS
    assert a.cwnd == 32 * MSS
    solo = make_cc("lia", MSS, 32)
    assert solo.group.members == [solo]
    reno = make_cc("newreno", MSS, 32, group=group, max_window_bytes=1e6)
    assert reno.group is None and len(group.members) == 2 and reno.max_window == 1e6
    cubic = make_cc("cubic", MSS, 32, beta=0.8, fast_convergence=False)
    assert isinstance(cubic, Cubic) and cubic.beta == 0.8


@pytest.mark.parametrize("bad", ["copa", "", None])
def test_make_cc_unknown_name(bad):
    with pytest.raises(ConfigError, match="unknown congestion control.*choose one of"):
        make_cc(bad, MSS, 32)


def test_floor_div_is_pythons_float_floor_division():
    """OLIA's window in packets (envs.cc.coupled.floor_div: C's fmod and floor in the
    compiled core) equals CPython's ``//``, also just below whole multiples, where
    ``a / b`` rounds up to a whole number and C's ``floor(a / b)`` is one too many."""
    import numpy as np

    from envs.cc.coupled import floor_div

    rng = np.random.default_rng(7)
    b = rng.integers(100, 2000, 200_000) * (1.0 + rng.random(200_000))
    a = np.nextafter(rng.integers(1, 100_000, 200_000) * b, 0.0)
    pairs = list(
        zip(
            np.concatenate([a, rng.random(20_000) * 1e7]).tolist(),
            np.concatenate([b, b[:20_000]]).tolist(),
        )
    )
    assert sum(math.floor(x / y) != x // y for x, y in pairs) > 10  # the case is there
    assert [floor_div(x, y) for x, y in pairs] == [x // y for x, y in pairs]
