"""GAP schedulers (baselines.gaps.gap_rules), the realised-GAP recorder and
the TRUE GAP sweep (baselines.gaps.true_gap): hand-worked gaps on a fake
two-path view (the fakes of test_schedulers_unit: MSS = payload = 1000
bytes), clamping, config errors, and short emulated episodes."""

import math

import pytest
from test_schedulers_unit import MSS, path, view

import envs
from baselines import SCHEDULERS, make_scheduler, scheduler_class
from baselines.gaps.gap_rules import BlestGap, EcfGap, FixedGap, gap_bytes, srtt_rank
from baselines.gaps.true_gap import GapRecorder, gap_deviation, gap_grid, true_gap
from baselines.rule_based import STMS
from envs.errors import ConfigError
from envs.scheduler import Decision, Scheduler


def two_paths(f_srtt=0.02, s_srtt=0.1, f_cwnd=10, s_inflight=4, **kw):
    """f (no room: cwnd full) and s (room): minRTT picks the slower s."""
    f = path(f_srtt, cwnd=f_cwnd * MSS, inflight=f_cwnd * MSS, rttvar=0.005)
    s = path(
        s_srtt,
        cwnd=10 * MSS,
        inflight=s_inflight * MSS,
        rttvar=0.01,
        min_srtt=s_srtt,
        max_srtt=s_srtt,
    )
    return view([f, s], **kw)


# ---------------------------------------------------------------- registry
def test_registry_entries_and_configs():
    for name, cls in (("blest_gap", BlestGap), ("ecf_gap", EcfGap), ("fixed_gap", FixedGap)):
        assert name in SCHEDULERS and scheduler_class(name) is cls and cls.name == name
        assert isinstance(make_scheduler(name), Scheduler)


# ---------------------------------------------------------------- FixedGap
def test_fixed_gap_on_the_slower_path_only():
    v = two_paths()
    assert FixedGap(5).decide(v) == Decision(1, gap=5 * MSS)
    v.paths[0].bytes_in_flight = 0  # f has room: plain int, no gap
    assert FixedGap(5).decide(v) == 0
    v = two_paths(retransmit=MSS)  # retransmissions pending: plain int
    d = FixedGap(5).decide(v)
    assert d == 1 and not isinstance(d, Decision)
    v = two_paths()
    v.paths[1] = path(0.1, probed=False)  # unprobed s: probed first, plain int
    assert FixedGap(5).decide(v) == 1
    v = two_paths()
    v.paths[1].bytes_in_flight = v.paths[1].cwnd  # no room anywhere: wait
    assert FixedGap(5).decide(v) is None


def test_fixed_gap_per_srtt_rank_with_three_paths():
    f = path(0.02, inflight=10 * MSS)
    mid = path(0.05, inflight=10 * MSS)
    slow = path(0.1)
    v = view([slow, f, mid])  # index order != srtt order
    assert [srtt_rank(v.paths, i) for i in range(3)] == [2, 0, 1]
    assert FixedGap([3, 7]).decide(v) == Decision(0, gap=7 * MSS)
    v.paths[0].bytes_in_flight = v.paths[0].cwnd
    v.paths[2].bytes_in_flight = 0
    assert FixedGap([3, 7]).decide(v) == Decision(2, gap=3 * MSS)
    assert FixedGap(4).decide(v) == Decision(2, gap=4 * MSS)  # one number: every slower path


def test_gap_clamped_to_gap_limit_and_max_gap():
    # the stream has 4500 bytes left: a gap beyond 3500 would send a short packet
    assert FixedGap(9).decide(two_paths(pending=4500)) == Decision(1, gap=3 * MSS)
    # flow-control credit 6000: gap + payload <= credit
    assert FixedGap(9).decide(two_paths(send_window=6000)) == Decision(1, gap=5 * MSS)
    # BLEST's X (72 packets, below) clamped to max_gap_packets
    assert BlestGap(max_gap_packets=10).decide(two_paths()) == Decision(1, gap=10 * MSS)
    v = two_paths()
    assert gap_bytes(v, 2.49, 64) == 2 * MSS and gap_bytes(v, 2.5, 64) == 3 * MSS
    assert (
        gap_bytes(v, -3.0, 64) == 0
        and gap_bytes(v, math.nan, 64) == 0
        and gap_bytes(v, 1e9, 64) == 64 * MSS
    )


@pytest.mark.parametrize(
    "make, key",
    [
        (lambda: FixedGap(-1), "gap_packets"),
        (lambda: FixedGap(300, max_gap_packets=256), "gap_packets"),
        (lambda: FixedGap([2, 20], max_gap_packets=10), "gap_packets"),
        (lambda: FixedGap(2.5), "gap_packets"),
        (lambda: FixedGap(0, max_gap_packets=-1), "max_gap_packets"),
        (lambda: BlestGap(max_gap_packets=-5), "max_gap_packets"),
        (lambda: EcfGap(max_gap_packets=1.5), "max_gap_packets"),
    ],
)
def test_bad_gap_settings_are_one_line_config_errors(make, key):
    with pytest.raises(ConfigError) as e:
        make()
    msg = str(e.value)
    assert "\n" not in msg and key in msg


# ---------------------------------------------------------------- BLEST and ECF
def test_blest_gap_hand_worked():
    # r = 0.1 / 0.02 = 5; X = 1000 * (10 + (5 - 1) / 2) * 5 * 1.2 = 72000 bytes = 72 packets
    b = BlestGap()
    v = two_paths()
    assert b.gap_x(v.paths[0], v.paths[1]) == pytest.approx(72_000)
    assert b.decide(v) == Decision(1, gap=72 * MSS)
    # free send window 80000 - (1000 + 4000) = 75000 >= X: send; 76000 - 5000 < X: skip s (wait)
    assert BlestGap().decide(two_paths(send_window=80_000)) == Decision(1, gap=72 * MSS)
    assert BlestGap().decide(two_paths(send_window=76_000)) is None
    # lambda adapts as BLEST's: -0.01 after one min-sRTT of s without retransmission
    b = BlestGap()
    b.reset(two_paths(now=0.0))
    b.decide(two_paths(now=0.2))
    assert b.lam == pytest.approx(1.19)


def test_ecf_gap_sends_with_the_one_way_delay_gap_and_waits_like_ecf():
    # ECF sends on s (plenty of data left: f would not finish first):
    # gap = cwnd_f / srtt_f * ((srtt_s + delta) - srtt_f) / 2 = 10 / 0.05 * (0.07 - 0.05) / 2 = 2 packets
    v = two_paths(f_srtt=0.05, s_srtt=0.06)
    assert EcfGap().gap_packets(v, 0, 1) == pytest.approx(2.0)
    assert EcfGap().decide(v) == Decision(1, gap=2 * MSS)
    # 20 vs 100 ms: 10 / 0.02 * (0.11 - 0.02) / 2 = 22.5 -> 23 packets (rounded half up)
    assert EcfGap().decide(two_paths()) == Decision(1, gap=23 * MSS)
    # little data left: ECF's wait rule holds (f finishes first), flag set
    e = EcfGap()
    assert e.decide(two_paths(pending=5000)) is None and e.waiting == 1


# ---------------------------------------------------------------- deviation
def test_gap_deviation_relative_and_absolute_when_true_gap_is_zero():
    assert gap_deviation(10.0, 8.0) == (pytest.approx(25.0), "%")
    assert gap_deviation(3.0, 0.0) == (3.0, "packets")
    assert math.isnan(gap_deviation(math.nan, 8.0)[0])


# ---------------------------------------------------------------- recorder
class Counting(Scheduler):
    """minRTT-like: path 1 with gap 2 packets whenever it has room, feedback counted."""

    name = "counting"
    wants_packet_feedback = True
    reask_when_idle = False

    def __init__(self):
        self.acked = self.lost = self.resets = 0

    def reset(self, v):
        self.resets += 1

    def decide(self, v):
        if v.paths[0].has_room:
            return 0
        if v.paths[1].has_room:
            return Decision(1, gap=2 * v.payload)
        return None

    def on_packet_acked(self, v, p, size, t):
        self.acked += 1

    def on_packet_lost(self, v, p, size, t):
        self.lost += 1


def test_recorder_records_slower_path_gaps_and_forwards_everything():
    inner = Counting()
    rec = GapRecorder(inner)
    assert (rec.name, rec.wants_packet_feedback, rec.reask_when_idle) == ("counting", True, False)
    v = two_paths()
    assert rec.decide(v) == Decision(1, gap=2 * MSS)
    v.paths[0].bytes_in_flight = 0
    assert rec.decide(v) == 0  # the fastest path: not recorded
    assert rec.gaps == [2.0] and rec.by_path == {1: 1} and rec.mean_gap == 2.0
    rec.on_packet_acked(v, 0, MSS, 0.0)
    rec.on_packet_lost(v, 1, MSS, 0.0)
    rec.reset(v)
    assert (inner.acked, inner.lost, inner.resets) == (1, 1, 1)
    # a plain int on the slower path counts as gap 0
    rec2 = GapRecorder(make_scheduler("minrtt"))
    rec2.decide(two_paths())
    assert rec2.gaps == [0.0]


def scen(loss=0.0):
    return {
        "paths": [
            {"bandwidth_mbps": 50, "rtt_ms": 20, "buffer_packets": 100, "loss": loss},
            {"bandwidth_mbps": 50, "rtt_ms": 100, "buffer_packets": 100, "loss": loss},
        ]
    }


APP = {"kind": "bulk", "size_bytes": 3_000_000}


def test_recorder_in_an_emulated_episode_forwards_feedback():
    inner = Counting()
    rec = GapRecorder(inner)
    m = envs.run_episode(scen(loss=0.01), APP, rec, 0).metrics
    assert not m["timed_out"] and inner.resets == 1 and inner.acked > 100 and inner.lost > 0
    assert len(rec.gaps) > 10 and set(rec.gaps) <= {2.0}


def test_fixed_gap_in_an_episode_sends_gaps_and_cuts_the_oqs():
    rec = GapRecorder(FixedGap(80))
    m_gap = envs.run_episode(scen(), APP, rec, 0).metrics
    m_min = envs.run_episode(scen(), APP, make_scheduler("minrtt"), 0).metrics
    assert len(rec.gaps) > 10 and rec.mean_gap > 40  # real Decision gaps (clamped near the end)
    assert not m_gap["timed_out"] and not m_min["timed_out"]
    assert m_gap["oqs_mean_bytes"] < 0.9 * m_min["oqs_mean_bytes"]


# ---------------------------------------------------------------- TRUE GAP
def test_true_gap_finds_the_minimum_of_the_sweep():
    calls = []

    def fake(scenario, app, sched, seed):  # OQS = (gap - 20)^2 (+ seed), p99 = 2 x that
        g = sched.gaps[0]
        calls.append((g, seed))
        return {"oqs_mean_bytes": (g - 20) ** 2 + seed, "oqs_p99_bytes": 2 * ((g - 20) ** 2 + seed)}

    assert gap_grid(64, 8) == [0, 8, 16, 24, 32, 40, 48, 56, 64] and gap_grid(10, 4) == [
        0,
        4,
        8,
        10,
    ]
    r = true_gap(scen(), APP, seeds=[0, 2], max_gap_packets=64, step=8, run=fake)
    assert r.gap_packets == 16  # 16 and 24 tie: the smaller one
    assert r.oqs_mean_bytes == pytest.approx(17.0) and r.oqs_p99_bytes == pytest.approx(34.0)
    assert [c["gap_packets"] for c in r.curve] == gap_grid(64, 8) and len(calls) == 18
    r = true_gap(scen(), APP, seeds=[0], max_gap_packets=64, step=8, refine_step=2, run=fake)
    assert r.gap_packets == 20 and 18 in [c["gap_packets"] for c in r.curve]
    with pytest.raises(ConfigError, match="two-path"):
        true_gap({"paths": scen()["paths"] * 2}, APP, run=fake)
    with pytest.raises(ConfigError, match="step"):
        true_gap(scen(), APP, step=0, run=fake)


def test_true_gap_sweep_in_emulated_episodes():
    r = true_gap(
        scen(), {"kind": "bulk", "size_bytes": 1_500_000}, seeds=[0], max_gap_packets=120, step=40
    )
    means = {c["gap_packets"]: c["oqs_mean_bytes"] for c in r.curve}
    assert sorted(means) == [0, 40, 80, 120]
    assert r.gap_packets == min(means, key=means.get) and r.gap_packets > 0
    assert r.oqs_mean_bytes == means[r.gap_packets]


def test_stms_is_a_gap_scheduler_the_recorder_sees():
    rec = GapRecorder(STMS())
    envs.run_episode(scen(), APP, rec, 0)
    assert rec.gaps and rec.mean_gap > 0


def test_recorder_keeps_the_inner_schedulers_wake_at_working():
    from baselines.rule_based.common import minrtt_choice

    class Late(Scheduler):  # waits until 50 ms with a wake-up, never re-asked when idle
        name = "late"
        reask_when_idle = False

        def decide(self, v):
            if v.now < 0.05:
                v.wake_at(0.05)
                return None
            return minrtt_choice(v.paths)

    rec = GapRecorder(Late())
    m = envs.run_episode(scen(), {"kind": "bulk", "size_bytes": 200_000}, rec, 0).metrics
    assert (
        not m["timed_out"]
        and m["time_to_first_byte_s"] > 0.05
        and rec.gaps == [0.0] * len(rec.gaps)
    )
