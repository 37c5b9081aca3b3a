"""The simplified BBR v1 (envs/cc/bbr.py) on the emulator: its bandwidth
estimate, goodput, standing queue (against CUBIC's), pacing and its reaction
to a capacity drop. Units: bytes, seconds; rates in Mbit/s where named so."""

import statistics

import pytest

from baselines.rule_based.minrtt import MinRTT
from envs.cc import CC_REGISTRY, COUPLED, CouplingGroup, make_cc
from envs.cc.bbr import BBR, PROBE_BW, STARTUP
from envs.runner import run_episode, setup_episode

LINK_MBPS = 40.0
BASE_RTT = 0.025  # [s]
MSS = 1500


def _scenario(cc: str, schedule=None) -> dict:
    path = {"bandwidth_mbps": LINK_MBPS, "rtt_ms": BASE_RTT * 1000, "buffer_packets": 1000}
    if schedule is not None:
        path["schedule"] = schedule
    return {"cc": cc, "paths": [path], "setup": "none"}


def _sampled(cc: str, size: int = 10_000_000, schedule=None, until: float = 30.0, dt: float = 0.05):
    """Run a bulk download, sampling the path every ``dt`` [s]: a list of
    (time [s], path, bandwidth estimate [Mbit/s] or None, srtt [s])."""
    emu, conn, _app, _s = setup_episode(
        _scenario(cc, schedule), {"kind": "bulk", "size_bytes": size}, MinRTT()
    )
    rows, t = [], 0.0
    while emu.sim.pending and not conn.finished and t < until:
        t += dt
        emu.sim.run(until=t)
        ps = conn.paths[0]
        bw = ps.cc.bandwidth * 8 / 1e6 if isinstance(ps.cc, BBR) else None
        rows.append((t, ps, bw, ps.srtt))
    return rows


def test_make_cc_builds_an_uncoupled_bbr():
    cc = make_cc("BBR", MSS, 32, group=CouplingGroup(), min_window_packets=2)
    assert isinstance(cc, BBR) and cc.name == "bbr" and CC_REGISTRY["bbr"] is BBR
    assert "bbr" not in COUPLED and cc.group is None
    assert cc.cwnd == 32 * MSS and cc.min_window == 4 * MSS  # BBR's floor: 4 packets
    assert cc.bandwidth == 0.0 and cc.min_rtt_estimate == float("inf") and cc.pacing_rate == 0.0
    assert cc.state == STARTUP and cc.in_slow_start
    with pytest.raises(AttributeError):
        cc.bandwidth = 1.0  # read-only estimate


def test_losses_do_not_reduce_the_window():
    cc = make_cc("bbr", MSS, 32)
    for i in range(10):
        cc.on_packet_sent(0.001 * i, MSS)
    before = cc.cwnd
    cc.on_loss(0.1, MSS, 0.0)
    cc.on_pto(0.2)
    assert cc.cwnd == before and cc.inflight == 9 * MSS


def test_constant_link_estimate_goodput_and_small_queue_against_cubic():
    rows = _sampled("bbr")
    late = [r for r in rows if r[0] >= 1.0]
    assert late, "the download ended before 1 s"
    for t, _ps, bw, _srtt in late:
        assert bw == pytest.approx(LINK_MBPS, rel=0.10), t
    ps = rows[-1][1]
    assert ps.cc.state == PROBE_BW and not ps.cc.in_slow_start
    assert ps.cc.min_rtt_estimate == pytest.approx(BASE_RTT, rel=0.1)
    bbr_srtt = statistics.median(r[3] for r in rows)
    assert bbr_srtt < 1.5 * BASE_RTT
    # the same link under CUBIC fills the 1000-packet buffer (so the test can fail)
    cubic_srtt = statistics.median(r[3] for r in _sampled("cubic"))
    assert cubic_srtt > 4 * bbr_srtt

    res = run_episode(_scenario("bbr"), {"kind": "bulk", "size_bytes": 10_000_000}, MinRTT())
    m = res.metrics
    assert m["timed_out"] == 0.0 and m["packets_lost"] == 0.0
    assert m["goodput_mbps"] > 0.85 * LINK_MBPS


def test_the_pacer_runs_at_bbrs_rate():
    rows = _sampled("bbr", size=5_000_000)
    for _t, ps, _bw, _srtt in rows:
        cc = ps.cc
        assert cc.pacing_rate > 0.0
        assert ps.pace_rate() == cc.pacing_rate
        if cc.state == PROBE_BW:
            assert cc.pacing_rate == pytest.approx(cc.pacing_gain * cc.bandwidth, rel=1e-12)
            assert cc.cwnd == pytest.approx(
                max(2 * cc.bandwidth * cc.min_rtt_estimate, 4 * MSS), rel=0.05
            )
    # a window-based controller leaves the pacer its own rule: 1.25 x cwnd / srtt
    ps = _sampled("cubic", size=1_000_000)[-1][1]
    assert ps.cc.pacing_rate == 0.0
    assert ps.pace_rate() == pytest.approx(1.25 * ps.cc.cwnd / ps.srtt, rel=1e-12)


def test_the_estimate_follows_a_capacity_drop_and_rise():
    schedule = [{"at_s": 3.0, "bandwidth_mbps": 10.0}, {"at_s": 8.0, "bandwidth_mbps": LINK_MBPS}]
    rows = _sampled("bbr", size=10**9, schedule=schedule, until=12.0)

    def bw_at(t):
        return next(r[2] for r in rows if r[0] >= t - 1e-9)

    assert bw_at(2.9) == pytest.approx(LINK_MBPS, rel=0.10)
    assert bw_at(6.0) == pytest.approx(10.0, rel=0.10)  # within 3 s of the drop
    assert all(r[2] == pytest.approx(10.0, rel=0.10) for r in rows if 6.0 <= r[0] < 8.0)
    assert bw_at(10.0) == pytest.approx(LINK_MBPS, rel=0.10)  # within 2 s of the rise
