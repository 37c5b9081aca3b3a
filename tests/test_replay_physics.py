"""The emulator's replay options of #46 (python -m falcon.deploy.fidelity):
HyStart++ for CUBIC (``scenario.hystart``, envs/cc/hystart.py) and the
handshake crossing the path's link (``scenario.setup.handshake_link``,
envs/setup.py). Off, both leave every result bit for bit as before."""

from __future__ import annotations

import math

import pytest

from envs import run_episode
from envs.cc import make_cc
from envs.cc.hystart import CSS_GROWTH_DIVISOR, CSS_ROUNDS, EXIT, N_RTT_SAMPLE, HyStartPP
from envs.emulation import Emulation
from envs.errors import ConfigError
from envs.scenario import normalise_scenario
from envs.setup import FLIGHT_BYTES, crossed, setup_timeline

#: tquic's HyStart++ test vector (hystart_plus_plus.rs): each round's minimum RTT [ms]
ROUND_MIN_MS = [30, 32, 38, 40, 36, 42, 43, 44, 45, 46]
#: the phase after each of those rounds (1: standard slow start, CSS_GROWTH_DIVISOR: conservative)
AFTER = [1, 1, CSS_GROWTH_DIVISOR, CSS_GROWTH_DIVISOR, 1] + [CSS_GROWTH_DIVISOR] * 5


def _round(hs: HyStartPP, r: int, min_ms: float) -> list[int]:
    """Round ``r``: N_RTT_SAMPLE ACKs of packets sent at 10 r + 0.5 s, RTTs min_ms .. min_ms + 7 ms."""
    return [
        hs.on_ack(10 * r + 1 + 0.01 * i, 10 * r + 0.5, (min_ms + i) / 1000)
        for i in range(N_RTT_SAMPLE)
    ]


def test_hystart_follows_rfc9406_on_tquics_vector():
    hs = HyStartPP()
    for r, (ms, want) in enumerate(zip(ROUND_MIN_MS, AFTER)):
        got = _round(hs, r, ms)
        assert got[-1] == want, f"round {r + 1} ({ms} ms): divisor {got[-1]}, expected {want}"
        assert not hs.exited
    # the fifth round in conservative slow start is over: the next round's first ACK ends slow start
    assert hs.on_ack(101, 100.5, 0.047) == EXIT and hs.exited and CSS_ROUNDS == 5
    assert hs.on_ack(102, 101.5, 0.020) == EXIT  # for good


def test_hystart_waits_for_enough_samples_and_a_loss_ends_it():
    hs = HyStartPP()
    _round(hs, 0, 30)
    # 7 samples of a much later round: not judged yet; the 8th makes it conservative
    assert [hs.on_ack(11 + 0.01 * i, 10.5, 0.080) for i in range(N_RTT_SAMPLE)][-2:] == [
        1,
        CSS_GROWTH_DIVISOR,
    ]
    hs.on_congestion()
    assert hs.exited


def test_cubic_with_hystart_leaves_slow_start_before_the_deep_queue_overflows():
    """2 MB over 20 Mbit/s, 60 ms, a queue of 3 BDP, tquic's initial window:
    plain slow start doubles the window until the queue overflows (~300 packets
    lost); HyStart++ turns conservative when the queueing delay shows, so the
    overshoot, and the loss, is a fraction of that."""
    from baselines import make_scheduler

    scen = {
        "cc": "cubic",
        "initial_window_packets": 10,
        "paths": [{"bandwidth_mbps": 20, "rtt_ms": 60, "buffer_bdp": 3}],
    }
    app = {"kind": "bulk", "size_bytes": 2_000_000}
    plain = run_episode({**scen, "hystart": False}, app, make_scheduler("minrtt"), seed=0).metrics
    hy = run_episode(scen, app, make_scheduler("minrtt"), seed=0).metrics  # HyStart++: the default
    assert plain["retransmissions"] > 200
    assert hy["retransmissions"] < 0.5 * plain["retransmissions"]
    assert hy["download_time_s"] == pytest.approx(plain["download_time_s"], rel=0.05)
    assert (
        make_cc("cubic", 1350, 10, hystart=True).hystart is not None
        and make_cc("cubic", 1350, 10).hystart is None
    )


def test_hystart_key_is_checked_and_only_cubic_takes_it():
    with pytest.raises(ConfigError, match="scenario.hystart"):
        normalise_scenario({"hystart": "yes", "paths": [{"bandwidth_mbps": 10}]})
    emu = Emulation(0)
    from baselines import make_scheduler

    conn = emu.connect(
        {
            "cc": "olia",
            "hystart": True,
            "paths": [{"bandwidth_mbps": 10}, {"bandwidth_mbps": 5, "cc": "cubic"}],
        },
        make_scheduler("minrtt"),
    )
    assert not hasattr(conn.paths[0].cc, "hystart") and conn.paths[1].cc.hystart is not None


def _outage_path(tmp_path, rtt_ms: float = 40.0):
    """Path 0 of a trace with no capacity for its first second, 20 Mbit/s after."""
    f = tmp_path / "outage.csv"
    f.write_text("time_s,rate_Mbps\n0,0\n1,20\n4,20\n")
    s = normalise_scenario({"paths": [{"trace": str(f), "rtt_ms": rtt_ms}]})
    return Emulation(0).build_path(s["paths"][0], s), s


def test_handshake_crosses_the_link_and_waits_out_an_outage(tmp_path):
    path, s = _outage_path(tmp_path)
    on = dict(s["setup"])  # the default
    off = {**on, "handshake_link": False}  # the model before
    t_up_off, _, rtts_off = setup_timeline([path], off, 0.0)
    path2, _ = _outage_path(tmp_path)  # the same delay draws
    t_up_on, _, rtts_on = setup_timeline([path2], on, 0.0)
    assert (
        rtts_off[0] == pytest.approx(0.040) and t_up_off < 0.1
    )  # the request arrives in the outage
    # the server's flight leaves when the link returns (1 s) plus its serialisation, then half an RTT
    serialise = FLIGHT_BYTES / (20e6 / 8)
    assert rtts_on[0] == pytest.approx(1.0 + serialise + 0.020, abs=1e-9)
    assert t_up_on == pytest.approx(rtts_on[0] + 0.020, abs=1e-9)


def test_handshake_link_on_a_constant_path_costs_one_datagrams_serialisation():
    s = normalise_scenario(
        {"paths": [{"bandwidth_mbps": 10, "rtt_ms": 30}, {"bandwidth_mbps": 5, "rtt_ms": 50}]}
    )
    paths = [Emulation(0).build_path(p, s) for p in s["paths"]]
    t_up, opens, rtts = setup_timeline(paths, s["setup"], 0.0)
    assert rtts[0] == pytest.approx(0.030 + FLIGHT_BYTES / 1.25e6, abs=1e-12)
    assert rtts[1] == pytest.approx(
        0.050 + FLIGHT_BYTES / 0.625e6, abs=1e-12
    )  # the server's PATH_CHALLENGE
    assert opens[1] == pytest.approx(rtts[0] + 0.025 + rtts[1], abs=1e-12)
    assert crossed(paths[0], 0.5) == pytest.approx(0.5 + FLIGHT_BYTES / 1.25e6)
    with pytest.raises(ConfigError, match="handshake_link"):
        normalise_scenario({"setup": {"handshake_link": 1}, "paths": [{"bandwidth_mbps": 10}]})


def test_handshake_link_lets_a_download_start_after_the_outage(tmp_path):
    """Measured from the request, as the real client does, the download no longer
    contains the outage the handshake waited out."""
    from baselines import make_scheduler
    from falcon.deploy.worlds import emulated_episode

    f = tmp_path / "outage.csv"
    f.write_text("time_s,rate_Mbps\n0,0\n1,20\n4,20\n")
    scen = {"paths": [{"trace": str(f), "rtt_ms": 40}]}
    app = {"kind": "bulk", "size_bytes": 500_000}
    before = emulated_episode(
        {**scen, "setup": {"handshake_link": False}}, app, make_scheduler("minrtt"), 0
    )
    after = emulated_episode(scen, app, make_scheduler("minrtt"), 0)  # the default
    assert before["download_time_s"] > 0.9 > after["download_time_s"] > 0.2
    assert after["handshake_s"] > 1.0 and math.isfinite(after["connection_time_s"])
