"""Unit tests of the rule-based schedulers (baselines.rule_based) on a small
fake connection view, with hand-worked decisions. Units: bytes and seconds.
MSS = payload = 1000 bytes unless a test says otherwise, so cwnd 10000 is 10
packets."""

import math
from types import SimpleNamespace

import pytest

from baselines import SCHEDULERS, make_scheduler
from baselines.rule_based import BLEST, DAPS, ECF, STMS, FixedSplit, MinRTT, RoundRobin
from baselines.rule_based.daps import build_schedule, delay_ticks
from envs.errors import ConfigError
from envs.scheduler import Decision, Scheduler

MSS = 1000


class FakePath(SimpleNamespace):
    def rtt_sample(
        self, sent_time, now
    ):  # the view's ACK-delay-corrected sample; no ACK delay here
        return now - sent_time

    @property
    def has_room(self):
        return self.bytes_in_flight + self.mss <= self.cwnd

    @property
    def in_slow_start(self):
        return self.cwnd < self.ssthresh


def path(srtt=0.05, cwnd=10 * MSS, inflight=0, probed=True, **kw):
    p = FakePath(
        srtt=srtt if probed else 0.333,
        rttvar=srtt / 2,
        min_rtt=srtt,
        latest_rtt=srtt,
        min_srtt=srtt if probed else math.inf,
        max_srtt=srtt if probed else 0.0,
        has_rtt_sample=probed,
        cwnd=cwnd,
        ssthresh=math.inf,
        bytes_in_flight=inflight,
        packets_sent=0,
        retransmissions=0,
        bytes_sent=0,
        mss=MSS,
        payload=MSS,
    )
    for k, v in kw.items():
        setattr(p, k, v)
    return p


class FakeView(SimpleNamespace):
    def streams_pending(self):
        return self.streams


def view(paths, now=0.0, send_window=10**7, pending=10**6, retransmit=0, streams=None):
    if streams is None:
        streams = [SimpleNamespace(stream_id=0, remaining=pending)] if pending else []
    return FakeView(
        now=now,
        paths=paths,
        send_window=send_window,
        pending_bytes=pending,
        retransmit_bytes=retransmit,
        payload=paths[0].payload,
        streams=streams,
    )


def send(v, d):
    """Apply a decision to the fake view: one packet more in flight on its path."""
    i = d.path if isinstance(d, Decision) else d
    p = v.paths[i]
    p.bytes_in_flight += p.mss
    p.bytes_sent += p.mss
    p.packets_sent += 1


# ---------------------------------------------------------------- registry
def test_registry_names_and_classes():
    rule_based = {
        "rr": RoundRobin,
        "minrtt": MinRTT,
        "blest": BLEST,
        "ecf": ECF,
        "daps": DAPS,
        "stms": STMS,
    }
    assert {k: SCHEDULERS[k] for k in rule_based} == rule_based
    from baselines import scheduler_class

    for name in list(SCHEDULERS):  # lazy "module:Class" entries resolve to real schedulers
        cls = scheduler_class(name)
        assert issubclass(cls, Scheduler)
        assert cls.name == name
        assert isinstance(make_scheduler(name), cls)


def test_make_scheduler_kwargs_and_unknown_name():
    assert make_scheduler("blest", lambda_init=1.1).lam == 1.1
    assert make_scheduler("ecf", beta=0.5).beta == 0.5
    with pytest.raises(ConfigError, match=r"unknown scheduler 'nope'; known: .*blest.*minrtt"):
        make_scheduler("nope")


def test_registry_lazy_string_entry(monkeypatch):
    monkeypatch.setitem(SCHEDULERS, "ecf2", "baselines.rule_based.ecf:ECF")
    assert isinstance(make_scheduler("ecf2"), ECF)
    assert SCHEDULERS["ecf2"] is ECF


# ---------------------------------------------------------------- minRTT, RR
def test_minrtt_lowest_srtt_with_room():
    v = view([path(0.05), path(0.02, inflight=10 * MSS), path(0.03)])
    assert MinRTT().decide(v) == 2  # path 1 is faster but full
    v.paths[1].bytes_in_flight = 0
    assert MinRTT().decide(v) == 1
    full = view([path(0.05, inflight=10 * MSS), path(0.02, inflight=10 * MSS)])
    assert MinRTT().decide(full) is None


def test_minrtt_probes_unprobed_paths_first_by_fewest_packets_sent():
    v = view([path(0.01), path(probed=False, packets_sent=3), path(probed=False, packets_sent=1)])
    assert MinRTT().decide(v) == 2
    v.paths[2].bytes_in_flight = 10 * MSS  # no room: next unprobed one
    assert MinRTT().decide(v) == 1
    v.paths[1].bytes_in_flight = 10 * MSS
    assert MinRTT().decide(v) == 0


def test_roundrobin_cycles_over_paths_with_room():
    rr = RoundRobin()
    v = view([path(), path(), path()])
    assert [rr.decide(v) for _ in range(4)] == [0, 1, 2, 0]
    v.paths[2].bytes_in_flight = 10 * MSS
    assert [rr.decide(v) for _ in range(3)] == [1, 0, 1]
    for p in v.paths:
        p.bytes_in_flight = 10 * MSS
    assert rr.decide(v) is None


# ---------------------------------------------------------------- fixed split
@pytest.mark.parametrize("share", [0.0, 0.1, 0.3, 0.5, 2 / 3, 0.9, 1.0])
def test_fixed_split_holds_its_share_after_every_packet(share):
    fs = FixedSplit(share=share)
    v = view([path(0.01), path(0.2)])  # both always have room: the split alone decides
    for n in range(1, 201):
        d = fs.decide(v)
        assert d in (0, 1)
        send(v, d)
        v.paths[d].bytes_in_flight = 0
        assert abs(v.paths[0].packets_sent - share * n) < 1.0  # path 0 carries ceil(share x n)
    assert v.paths[0].packets_sent == math.ceil(round(share * 200, 9))


def test_fixed_split_waits_when_the_chosen_path_is_full():
    fs = FixedSplit(share=0.5)
    v = view([path(0.01, inflight=10 * MSS), path(0.2)])  # path 0's turn, but it is full
    assert fs.decide(v) is None  # no fallback to path 1
    v.paths[0].bytes_in_flight = 0
    assert fs.decide(v) == 0
    send(v, 0)
    v.paths[1].bytes_in_flight = 10 * MSS  # path 1's turn, full
    assert fs.decide(v) is None
    # retransmissions follow the same rule (the decision only counts packets sent)
    v.retransmit_bytes = 5 * MSS
    assert fs.decide(v) is None
    v.paths[1].bytes_in_flight = 0
    assert fs.decide(v) == 1


@pytest.mark.parametrize("share", [-0.1, 1.5, math.nan, "half", True, None])
def test_fixed_split_rejects_a_bad_share(share):
    with pytest.raises(ConfigError, match=r"share: expected a number in \[0, 1\]"):
        FixedSplit(share=share)


def test_fixed_split_needs_two_paths():
    assert make_scheduler("fixed_split").share == 0.5
    with pytest.raises(ConfigError, match="needs exactly 2 paths, the scenario has 3"):
        FixedSplit(share=0.2).reset(view([path(), path(), path()]))


# ---------------------------------------------------------------- BLEST
def blest_view(send_window, f_ssthresh=8 * MSS, s_inflight=4 * MSS, now=0.0):
    f = path(0.02, cwnd=10 * MSS, inflight=10 * MSS, ssthresh=f_ssthresh)  # f: no room
    s = path(0.1, cwnd=10 * MSS, inflight=s_inflight, min_srtt=0.08, max_srtt=0.12)
    return view([f, s], now=now, send_window=send_window)


def test_blest_hand_worked_wait_and_send():
    # Linger time of s: n = 4 + 1 = 5 < c_s = 10, T = 0.08 + 0.04 * 5 / 10 = 0.1 (= srtt_s).
    # k = T / ((0.02 + 0.02) / 2) + 1 = 6; f in congestion avoidance:
    # packets = (max(10, 8 + 1) + (6 - 1) / 2) * 6 = 75; X = 75 * 1000 * 1.2 = 90000.
    b = BLEST()
    assert b.linger_time(blest_view(0).paths[1]) == pytest.approx(0.1)
    v = blest_view(send_window=100_000)  # budget 100000 - (1000 + 4000) = 95000 >= X
    assert b.fast_bytes(v.paths[0], v.paths[1]) == pytest.approx(90_000)
    assert b.decide(v) == 1
    v = blest_view(send_window=90_000)  # budget 85000 < X: wait for real
    assert b.decide(v) is None
    # f with room: no BLEST check at all
    v.paths[0].bytes_in_flight = 0
    assert b.decide(v) == 0


def test_blest_slow_start_linger_max_and_total_window():
    b = BLEST()
    # f in slow start: packets = 10 * (2^6 - 1) = 630, X = 756000
    v = blest_view(send_window=100_000, f_ssthresh=math.inf)
    assert b.fast_bytes(v.paths[0], v.paths[1]) == pytest.approx(756_000)
    assert b.decide(v) is None
    assert b.decide(blest_view(send_window=800_000, f_ssthresh=math.inf)) == 1
    # n = 9 + 1 >= c_s = 10: T = maxsrtt_s = 0.12, k = 7, packets = (10 + 3) * 7 = 91
    v = blest_view(send_window=10**7, s_inflight=9 * MSS)
    assert b.linger_time(v.paths[1]) == pytest.approx(0.12)
    assert b.fast_bytes(v.paths[0], v.paths[1]) == pytest.approx(91 * 1000 * 1.2)
    # 'total' window: credit 90000 + in flight (10000 + 4000) -> budget 99000 >= 90000
    assert BLEST(send_window="total").decide(blest_view(send_window=90_000)) == 1
    assert BLEST().decide(blest_view(send_window=90_000)) is None


def test_blest_lambda_adaptation_and_clamp():
    b = BLEST()
    # budget 80000: X = 75000 * lambda waits at 1.2 (90000) but not at 1.0
    v = blest_view(send_window=85_000)
    assert b.decide(v) is None and b.lam == pytest.approx(1.2)  # starts the clock
    v.now = 0.05  # < min_srtt_s = 0.08
    b.decide(v)
    assert b.lam == pytest.approx(1.2)
    v.now = 0.1
    b.decide(v)
    assert b.lam == pytest.approx(1.19)  # no retransmission
    v.paths[0].retransmissions = 1
    v.now = 0.15  # too early again
    b.decide(v)
    assert b.lam == pytest.approx(1.19)
    v.now = 0.2
    b.decide(v)
    assert b.lam == pytest.approx(1.23)  # retransmission: +0.04
    for _ in range(10):
        v.now += 0.1
        v.paths[1].retransmissions += 1
        b.decide(v)
    assert b.lam == pytest.approx(1.3)
    for _ in range(40):
        v.now += 0.1
        b.decide(v)
    assert b.lam == pytest.approx(1.0)
    assert b.decide(v) == 1  # X = 75000 <= 80000


# ---------------------------------------------------------------- ECF
def ecf_view(pending, f_srtt=0.02, f_var=0.005, s_srtt=0.1, s_var=0.01):
    f = path(f_srtt, cwnd=10 * MSS, inflight=10 * MSS, rttvar=f_var)  # f: no room
    s = path(s_srtt, cwnd=10 * MSS, inflight=0, rttvar=s_var)
    return view([f, s], pending=pending)


def test_ecf_waits_in_hand_worked_case_and_sets_flag():
    # k = 5000: x_f = max(5000, 10000) = 10000, delta = 0.01.
    # 0.02 * (10000 + 10000) = 400 < 1 * 10000 * (0.1 + 0.01) = 1100, and
    # R_s x_s = 0.1 * 10000 = 1000 >= c_s (2 R_f + delta) = 10000 * 0.05 = 500 -> wait.
    e = ECF()
    assert e.decide(ecf_view(5000)) is None
    assert e.waiting == 1
    # much data left: 0.02 * (100000 + 10000) = 2200 >= 1100 -> send on s, w = 0
    assert e.decide(ecf_view(100_000)) == 1
    assert e.waiting == 0


def test_ecf_hysteresis_of_waiting_flag():
    # k = 50000: lhs = 0.02 * 60000 = 1200; rhs = 1100 (w = 0) or 1.25 * 1100 = 1375 (w = 1)
    e = ECF()
    assert e.decide(ecf_view(50_000)) == 1 and e.waiting == 0
    e.waiting = 1
    assert e.decide(ecf_view(50_000)) is None and e.waiting == 1  # 5000 >= 500: keep waiting


def test_ecf_sends_on_s_when_fast_path_not_much_better():
    e = ECF()
    e.waiting = 1
    # f barely faster: 0.09 * 20000 = 1800 >= 1.25 * 10000 * 0.11 = 1375 -> send, w = 0
    assert e.decide(ecf_view(5000, f_srtt=0.09)) == 1 and e.waiting == 0
    # 0.02 * 20000 = 400 < 10000 * (0.04 + 0.001) = 410, but R_s x_s = 400 < 10000 * 0.041:
    # s completes in time -> send on s, flag unchanged
    for w in (0, 1):
        e.waiting = w
        assert e.decide(ecf_view(5000, f_var=0.001, s_srtt=0.04, s_var=0.001)) == 1
        assert e.waiting == w
    # f with room: f, no ECF check
    v = ecf_view(5000)
    v.paths[0].bytes_in_flight = 0
    assert ECF().decide(v) == 0


# ---------------------------------------------------------------- DAPS
def test_daps_delay_rounding_and_schedule():
    assert delay_ticks(0.020, 0.002) == 5 and delay_ticks(0.060, 0.002) == 15
    # default 4 ms: 10 ms -> 12 ms (3 ticks), 30 ms -> 32 ms (8 ticks), lcm 24 ticks
    assert delay_ticks(0.020, 0.004) == 3 and delay_ticks(0.060, 0.004) == 8
    assert delay_ticks(0.001, 0.004) == 1
    period, blocks = build_schedule([0, 1], [5, 15], [3, 2], 4096)
    assert period == 15
    assert blocks == [(0, 0, 3), (0, 3, 3), (0, 6, 3), (1, 9, 2)]
    assert build_schedule([1, 0], [3, 8], [1, 1], 4096)[0] == 24
    assert build_schedule([0, 1], [7, 11], [1, 1], 20)[0] == 20  # cut


def test_daps_hands_out_segments_in_schedule_order():
    # srtt 20 / 60 ms, d = 10 / 30 ms (2 ms ticks: 5 / 15), lcm 30 ms; cwnd 3 / 2 packets:
    # positions 0-8 on f (three rounds), 9-10 on s.
    d = DAPS(delay_granularity_s=0.002)
    v = view([path(0.02, cwnd=3 * MSS), path(0.06, cwnd=2 * MSS)])
    out = []
    for _ in range(6):
        r = d.decide(v)
        out.append(r)
        if r is not None:
            send(v, r)
    assert d.period == 15
    assert out == [0, 0, 0, Decision(1, gap=6 * MSS), Decision(1, gap=7 * MSS), None]
    v.paths[0].bytes_in_flight = 0  # f acked: positions 3-5
    assert [d.decide(v) for _ in range(3)] == [0, 0, 0]
    v.paths[1].bytes_in_flight = 0  # s has room, but its share is used
    v.paths[0].bytes_in_flight = 3 * MSS
    assert d.decide(v) is None
    v.paths[0].bytes_in_flight = 0  # positions 6-8, then a new schedule
    assert [d.decide(v) for _ in range(3)] == [0, 0, 0]
    v.paths[0].bytes_in_flight = 3 * MSS
    assert d.decide(v) == Decision(1, gap=9 * MSS)  # new schedule: s owns 9-10 again


def test_daps_smoothed_cwnd_and_fallbacks():
    d = DAPS(delay_granularity_s=0.002)
    v = view([path(0.02, cwnd=3 * MSS), path(0.06, cwnd=2 * MSS)])
    d.decide(v)
    v.paths[0].cwnd = 11 * MSS
    v.now = 0.05  # >= srtt: one new sample
    d._sample_cwnd(v.paths, v.now)
    assert d._scwnd[0] == pytest.approx(3 * MSS + (11 - 3) * MSS / 8)
    d.rebuild(v)
    assert d.schedule[0] == (0, 0, 4)  # 4000 bytes -> 4 segments
    # no RTT sample anywhere: minRTT probing
    u = view([path(probed=False, packets_sent=2), path(probed=False, packets_sent=0)])
    assert DAPS().decide(u) == 1
    # retransmissions pending: minRTT, no schedule position used
    w = view([path(0.02, cwnd=3 * MSS, inflight=3 * MSS), path(0.06)], retransmit=1000)
    assert DAPS().decide(w) == 1
    # s's position lies past the data still unsent: s does not send
    x = view(
        [path(0.02, cwnd=3 * MSS, inflight=3 * MSS), path(0.06, cwnd=2 * MSS)], pending=5 * MSS
    )
    assert DAPS(delay_granularity_s=0.002).decide(x) is None


# ---------------------------------------------------------------- STMS
def stms_view(s_srtt=0.06, remaining=10**6):
    f = path(0.02, cwnd=10 * MSS, inflight=10 * MSS)  # f: no room
    s = path(s_srtt, cwnd=10 * MSS)
    return view([f, s], pending=remaining)


def test_stms_gap_positive_on_slow_path_zero_when_rtts_equal():
    # model: cwnd_f / srtt_f * (srtt_s - srtt_f) / 2 = 10000 / 0.02 * 0.02 = 10000 bytes
    assert STMS().decide(stms_view()) == Decision(1, gap=10 * MSS)
    d = STMS().decide(stms_view(s_srtt=0.02))
    assert isinstance(d, Decision) and d.path == 1 and d.gap == 0
    v = stms_view()
    v.paths[0].bytes_in_flight = 0
    assert STMS().decide(v) == 0  # f has room: in-order data, no gap
    assert STMS().decide(stms_view(remaining=5 * MSS)) == Decision(1, gap=4 * MSS)


@pytest.mark.parametrize(
    "fast_sent, corr",
    [
        (
            60_000,
            +1250.0,
        ),  # F = 60000 * 0.02 / 0.06 = 20000: 10000 late (> 2 packets) -> +10000 / 8
        (15_000, -625.0),  # F = 5000: 5000 early -> -5000 / 8
        (33_000, -125.0),  # F = 11000: 1000 late, inside the 2-packet band -> -1000 / 8
    ],
)
def test_stms_gap_adapts_from_acked_data(fast_sent, corr):
    st = STMS()
    v = stms_view()
    assert st.decide(v) == Decision(1, gap=10 * MSS)  # sent at t = 0, snapshot taken
    v.paths[0].bytes_sent += fast_sent  # f's sending meanwhile
    v.now = 0.06  # acked one RTT of s later
    st.on_packet_acked(v, 1, MSS, 0.0)
    assert st.corr[1] == pytest.approx(corr)
    assert st.decide(v).gap == round((10_000 + corr) / MSS) * MSS
    st.on_packet_acked(v, 1, MSS, 0.0)  # no record left: ignored
    assert st.corr[1] == pytest.approx(corr)
