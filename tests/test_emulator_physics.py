"""The emulator against what networking says must happen.

Each test compares the emulator with an independent model (analytic queueing,
Mathis et al., slow-start arithmetic, coupled-CC design goal, the trace's own
mean), so it fails if the mechanism under test is missing or wrong.
"""

from __future__ import annotations

import json
import math

import pytest

from baselines import make_scheduler
from envs import ConfigError, Emulation, Scheduler, TraceError, run_episode, setup_episode
from envs.apps import BulkApp
from envs.traces import load_trace

BIG_FC = {"initial_window_bytes": 10**9, "max_window_bytes": 10**9, "autotune": False}
WIRE, PAYLOAD = 1350, 1290


def one_path(bw, rtt, loss=0.0, cc="newreno", **kw):
    """One path; ``setup: none`` unless given: the analytic models of the
    mechanisms tested here start with the data at the server at t = 0 (the
    connection setup has its own tests, at the end)."""
    path = {"bandwidth_mbps": bw, "rtt_ms": rtt, "loss": loss, "buffer_packets": 100_000}
    path.update(kw.pop("path", {}))
    s = {"paths": [path], "cc": cc, "flow_control": BIG_FC, "setup": "none"}
    s.update(kw)
    return s


class RecordingMinRTT(Scheduler):
    """minRTT on one path, recording every ACKed packet (send time, size, ack time)."""

    wants_packet_feedback = True

    def __init__(self):
        self.acks = []

    def decide(self, view):
        p = view.paths[0]
        return 0 if p.has_room else None

    def on_packet_acked(self, view, path, size, sent_time):
        self.acks.append((sent_time, size, view.now))


# ---------------------------------------------------------------- single path


def test_goodput_matches_link_rate_minus_headers():
    bw = 20.0
    r = run_episode(
        one_path(bw, 40), {"kind": "bulk", "size_bytes": 10_000_000}, make_scheduler("minrtt"), 0
    )
    expected = bw * PAYLOAD / WIRE
    assert r.metrics["timed_out"] == 0
    assert r.metrics["goodput_mbps"] == pytest.approx(expected, rel=0.05)
    assert r.metrics["goodput_mbps"] <= expected * 1.0001  # never faster than the link


def test_rtt_samples_are_base_rtt_plus_queueing():
    """With immediate ACKs, no jitter and a FIFO link, every RTT sample must be
    the base RTT plus the packet's own queueing and serialisation delay, which
    an independent FIFO recursion over the send times gives exactly."""
    bw, rtt = 10.0, 50.0
    sched = RecordingMinRTT()
    run_episode(
        one_path(bw, rtt, ack={"every": 1}), {"kind": "bulk", "size_bytes": 1_000_000}, sched, 0
    )
    rate = bw * 1e6 / 8
    last_departure = 0.0
    checked = 0
    queued_some = False
    for sent, size, acked in sorted(sched.acks):
        departure = max(sent, last_departure) + size / rate
        last_departure = departure
        expected = rtt / 1000 + (departure - sent)
        assert acked - sent == pytest.approx(expected, abs=1e-9)
        queued_some |= departure - sent > 2 * size / rate
        checked += 1
    assert checked > 700 and queued_some


class RecordingRttSamples(RecordingMinRTT):
    """Records (raw ACK time - send time, the view's ACK-delay-corrected sample)."""

    def on_packet_acked(self, view, path, size, sent_time):
        self.acks.append((view.now - sent_time, view.paths[path].rtt_sample(sent_time, view.now)))


def test_rtt_samples_are_corrected_by_the_reported_ack_delay():
    """RFC 9002 §5.3: a packet that waits alone at the receiver is ACKed when
    the delayed-ACK timer fires (25 ms); its raw RTT sample carries that wait,
    the corrected one (PathSender.rtt_sample) does not. A first flight of 9
    packets, ACK every 2: the 9th waits for the timer."""
    bw, rtt = 100.0, 40.0
    sched = RecordingRttSamples()
    run_episode(
        one_path(bw, rtt, initial_window_packets=9),
        {"kind": "bulk", "size_bytes": 40 * PAYLOAD},
        sched,
        0,
    )
    raw, corrected = zip(*sched.acks[:9])  # the first flight
    wire = WIRE * 8 / (bw * 1e6)  # serialisation of one packet [s]
    assert max(raw) == pytest.approx(rtt / 1000 + 0.025, abs=10 * wire)  # the delayed ACK
    assert max(corrected) == pytest.approx(
        rtt / 1000, abs=10 * wire
    )  # corrected back to path delay
    assert all(c <= r for c, r in zip(corrected, raw))
    assert min(corrected) >= rtt / 1000


def test_buffer_overflow_drops_exactly_the_excess():
    s = one_path(1.0, 100, path={"buffer_packets": 10}, initial_window_packets=50)
    emu, conn, app, _ = setup_episode(
        s, {"kind": "bulk", "size_bytes": 1_000_000}, make_scheduler("minrtt"), 0
    )
    link = conn.paths[0].path.link
    # the initial window leaves in one burst at t=0: 10 fit, 40 are dropped
    assert conn.paths[0].packets_sent == 50
    assert link.drops == 40
    assert link.occupancy(0.0) == (10, 10 * WIRE)


def test_buffer_in_bytes():
    s = one_path(
        1.0,
        100,
        path={"buffer_packets": None, "buffer_bytes": 5 * WIRE + 100},
        initial_window_packets=20,
    )
    emu, conn, app, _ = setup_episode(
        s, {"kind": "bulk", "size_bytes": 1_000_000}, make_scheduler("minrtt"), 0
    )
    assert conn.paths[0].path.link.drops == 15


# ---------------------------------------------------------------- congestion control


@pytest.mark.parametrize("p", [0.002, 0.005, 0.02])
def test_newreno_follows_mathis_law(p):
    """Throughput ~ MSS/RTT * 1.22/sqrt(p) (Mathis et al. 1997) on a path whose
    capacity is never the limit."""
    rtt = 0.05
    rates = []
    for seed in range(2):
        r = run_episode(
            one_path(1000, rtt * 1000, p, max_duration_s=40),
            {"kind": "bulk", "size_bytes": 10**10},
            make_scheduler("minrtt"),
            seed,
        )
        rates.append(r.metrics["goodput_mbps"] * WIRE / PAYLOAD)
    mathis = WIRE * 8 / rtt * 1.22 / math.sqrt(p) / 1e6
    assert sum(rates) / len(rates) == pytest.approx(mathis, rel=0.25)


def test_cubic_beats_newreno_at_high_bdp():
    def goodput(cc):
        r = run_episode(
            one_path(300, 80, 2e-4, cc=cc, max_duration_s=10),
            {"kind": "bulk", "size_bytes": 10**10},
            make_scheduler("minrtt"),
            0,
        )
        return r.metrics["goodput_mbps"]

    assert goodput("cubic") > 1.3 * goodput("newreno")


def test_slow_start_doubles_the_window_every_rtt():
    # unpaced: a paced round is spread over 0.8 of an RTT (gain 1.25), so
    # rounds no longer end at whole RTTs, where this samples the window
    rtt = 0.1
    s = one_path(10_000, rtt * 1000, ack={"every": 1}, pacing=False)
    emu, conn, app, _ = setup_episode(
        s, {"kind": "bulk", "size_bytes": 50_000_000}, make_scheduler("minrtt"), 0
    )
    cwnds = []
    for k in range(6):
        # just before round k+1's ACKs start arriving, all of round k is acked
        emu.sim.run(until=(k + 1) * rtt + rtt / 2)
        cwnds.append(conn.paths[0].cwnd / WIRE)
    for k in range(1, 6):
        assert cwnds[k] == pytest.approx(2 * cwnds[k - 1], rel=0.02)
    assert cwnds[0] == pytest.approx(64, rel=0.02)


@pytest.mark.parametrize("bw,rtt", [(100, 40), (20, 60), (500, 30)])
def test_2mb_download_matches_analytic_time(bw, rtt):
    """T = setup + k RTT (slow-start rounds below the BDP) + rest / C + RTT/2,
    with the default setup (IETF QUIC: 1 RTT handshake + the request's RTT/2:
    the bound moved by exactly that when the setup was added). Unpaced: the
    model is window-limited rounds; a paced round is stretched towards the
    end of its RTT (``test_paced_download_is_at_most_one_round_slower``)."""
    s = one_path(bw, rtt, ack={"every": 1}, setup=None, pacing=False)
    r = run_episode(s, {"kind": "bulk", "size_bytes": 2_000_000}, make_scheduler("minrtt"), 0)
    n = math.ceil(2_000_000 / PAYLOAD)
    c = bw * 1e6 / 8
    rtt_s = rtt / 1000
    bdp_packets = c * rtt_s / WIRE
    rounds, sent, cwnd = 0, 0, 32
    while cwnd < bdp_packets and sent + cwnd < n:
        sent += cwnd
        cwnd *= 2
        rounds += 1
    analytic = 1.5 * rtt_s + rounds * rtt_s + (n - sent) * WIRE / c + rtt_s / 2
    assert r.metrics["download_time_s"] == pytest.approx(analytic, rel=0.03)


def _shared_bottleneck_share(
    cc_multipath: str, competitor: str, subflows: int = 2, seeds=(0, 1, 2), T: float = 20.0
) -> float:
    """Mean share of a shared 20 Mbit/s drop-tail bottleneck that an n-subflow
    connection takes against one single-path flow with congestion control
    ``competitor``. A little RTT jitter breaks the phase effects that
    deterministic flows show at a shared drop-tail queue."""
    shares = []
    for seed in seeds:
        emu = Emulation(seed)
        path = {"bandwidth_mbps": 20, "rtt_ms": 40, "rtt_std_ms": 2, "shared_link": "bottleneck"}
        a = emu.connect({"paths": [path] * subflows, "cc": cc_multipath}, make_scheduler("minrtt"))
        b = emu.connect({"paths": [path], "cc": competitor}, make_scheduler("minrtt"))
        for conn in (a, b):
            BulkApp(10**10).start(conn)
        emu.sim.run(until=T)
        shares.append(a.delivered / (a.delivered + b.delivered))
    return sum(shares) / len(shares)


def test_coupled_cc_takes_no_more_than_one_flows_share():
    uncoupled = _shared_bottleneck_share("newreno", "newreno")
    # two independent NewReno subflows take ~2/3 (measured 0.655 unpaced,
    # 0.645 with every flow paced: the drop-tail queue drops differently)
    assert uncoupled > 0.62
    for cc in ("lia", "olia", "balia"):
        share = _shared_bottleneck_share(cc, "newreno")
        assert share < 0.62, cc  # ~1/2, one flow's share: the design goal of RFC 6356
        assert share < uncoupled - 0.08, cc


def test_coupled_cc_against_cubic_is_less_greedy_than_uncoupled_subflows():
    uncoupled = _shared_bottleneck_share("newreno", "cubic", seeds=(0, 1))
    for cc in ("lia", "olia", "balia"):
        assert _shared_bottleneck_share(cc, "cubic", seeds=(0, 1)) < uncoupled, cc


# ---------------------------------------------------------------- traces


def test_mahimahi_replay_yields_the_trace_mean_rate():
    window = 15.0
    spec = {
        "file": "mahimahi_cellular_lte/TMobile-LTE-short.down",
        "start_s": 20,
        "duration_s": window,
    }
    mean_mbps = (
        load_trace(
            "mahimahi_cellular_lte/TMobile-LTE-short.down", start_s=20, duration_s=window
        ).capacity.mean_rate
        * 8
        / 1e6
    )
    s = {
        "paths": [{"trace": spec, "rtt_ms": 20, "buffer_packets": 2000}],
        "cc": "cubic",
        "flow_control": BIG_FC,
        "max_duration_s": window,
    }
    r = run_episode(s, {"kind": "bulk", "size_bytes": 10**10}, make_scheduler("minrtt"), 0)
    wire_rate = r.metrics["goodput_mbps"] * WIRE / PAYLOAD
    assert wire_rate == pytest.approx(mean_mbps, rel=0.05)


# ---------------------------------------------------------------- determinism and input


def test_same_seed_same_result_different_seed_differs():
    s = {"paths": [{"link": "4g"}, {"link": "wlan"}]}

    def run(seed):
        r = run_episode(s, {"kind": "bulk"}, make_scheduler("minrtt"), seed)
        return json.dumps(r.metrics, sort_keys=True), r.timeseries["oqs_bytes"].tolist()

    assert run(3) == run(3)
    assert run(3)[0] != run(4)[0]


@pytest.mark.parametrize(
    "scenario,fragment",
    [
        ({"paths": []}, "at least one path"),
        ({"paths": [{"link": "6g"}]}, "unknown link '6g'"),
        ({"paths": [{"bandwidth_mbps": -5}]}, "bandwidth_mbps"),
        ({"paths": [{"bandwidth_mbps": "fast"}]}, "expected a number"),
        ({"paths": [{"bandwidth_mbps": 10, "loss": 1.0}]}, "loss"),
        ({"paths": [{"bandwidth_mbps": 10, "rtt_ms": 0}]}, "rtt_ms"),
        ({"paths": [{"bandwidth_mbps": 10, "colour": "red"}]}, "unknown key(s) ['colour']"),
        ({"paths": [{"bandwidth_mbps": 10}], "cc": "vegas"}, "unknown congestion control 'vegas'"),
        ({"paths": [{"rtt_ms": 10}]}, "exactly one of bandwidth_mbps, trace, synthetic"),
        ({"paths": [{"bandwidth_mbps": 10, "loss_model": "burst"}]}, "loss_model"),
    ],
)
def test_bad_scenario_gives_one_clear_line(scenario, fragment):
    with pytest.raises(ConfigError) as e:
        run_episode(scenario, {"kind": "bulk"}, make_scheduler("minrtt"), 0)
    assert fragment in str(e.value)
    assert "\n" not in str(e.value)


def test_missing_trace_file_is_a_trace_error():
    with pytest.raises(TraceError, match="no_such_trace.csv"):
        run_episode(
            {"paths": [{"trace": "no_such_trace.csv"}]},
            {"kind": "bulk"},
            make_scheduler("minrtt"),
            0,
        )


def test_bad_app_is_a_config_error():
    with pytest.raises(ConfigError, match="app.kind"):
        run_episode({"paths": [{"link": "4g"}]}, {"kind": "video"}, make_scheduler("minrtt"), 0)
    with pytest.raises(ConfigError, match="size_bytes"):
        run_episode(
            {"paths": [{"link": "4g"}]},
            {"kind": "bulk", "size_bytes": 0},
            make_scheduler("minrtt"),
            0,
        )


def test_random_trace_start_is_seeded_and_trace_loss_can_be_ignored():
    trace = "raca_5g_2020/download_driving/B_2019.12.16_07.22.43.csv"
    s = {"paths": [{"link": "5g", "trace": trace, "trace_start_s": "random", "trace_loss": False}]}
    emu_a, conn_a, _, _ = setup_episode(s, {"kind": "bulk"}, make_scheduler("minrtt"), 1)
    emu_b, conn_b, _, _ = setup_episode(s, {"kind": "bulk"}, make_scheduler("minrtt"), 1)
    emu_c, conn_c, _, _ = setup_episode(s, {"kind": "bulk"}, make_scheduler("minrtt"), 2)
    off = [c.paths[0].path.link.offset for c in (conn_a, conn_b, conn_c)]
    assert off[0] == off[1] != off[2]
    assert 0 <= off[2] < load_trace(trace).capacity.period
    assert conn_a.paths[0].path.loss.series is None  # Table I loss, not ping loss
    assert conn_a.paths[0].path.delay.one_way_series is not None  # ping RTT kept


def test_flow_control_counts_highest_offset_so_gaps_cannot_stall():
    """RFC 9000 §4.1: credit is consumed by the highest offset sent. A
    scheduler that always skips ahead must not use up the credit on
    out-of-order data and leave the hole below it unsendable."""
    from envs import Decision

    class AlwaysGap(Scheduler):
        def decide(self, view):
            for p in view.paths:
                if p.has_room:
                    return Decision(p.index, gap=50 * view.payload)
            return None

    s = {
        "paths": [{"bandwidth_mbps": 20, "rtt_ms": 20}],
        "flow_control": {
            "initial_window_bytes": 100_000,
            "max_window_bytes": 200_000,
            "autotune": True,
        },
    }
    r = run_episode(s, {"kind": "bulk", "size_bytes": 1_000_000}, AlwaysGap(), 0)
    assert r.metrics["timed_out"] == 0 and r.metrics["stalled"] == 0


def test_waiting_with_nothing_in_flight_is_asked_again():
    class WaitFirstTen(Scheduler):
        def __init__(self):
            self.calls = 0

        def decide(self, view):
            self.calls += 1
            return None if self.calls <= 10 else 0

    r = run_episode(one_path(10, 20), {"kind": "bulk", "size_bytes": 100_000}, WaitFirstTen(), 0)
    assert r.metrics["timed_out"] == 0


def test_pruning_acknowledged_frames_changes_nothing_and_bounds_memory(monkeypatch):
    """Connection._prune_acked forgets acked frames that no packet in flight or
    queued retransmission refers to: a lossy transfer (retransmissions,
    spurious ones included) gives the same episode with pruning every ~40
    frames as with none, and the set stays bounded. The set holds only frames
    that had several copies (envs.sent: shared records), not one entry per packet."""
    import envs.recovery as recovery
    import envs.transport as transport

    sc = {
        "paths": [
            {"bandwidth_mbps": 80, "rtt_ms": 20, "rtt_std_ms": 8, "loss": 0.02},
            {"bandwidth_mbps": 40, "rtt_ms": 60, "rtt_std_ms": 20, "loss": 0.01},
        ]
    }

    def episode(prune_min: int):
        monkeypatch.setattr(transport, "ACKED_PRUNE_MIN", prune_min)  # the first prune
        monkeypatch.setattr(recovery, "ACKED_PRUNE_MIN", prune_min)  # the floor of the later ones
        emu, conn, app, s = setup_episode(
            sc, {"kind": "bulk", "size_bytes": 12_000_000}, make_scheduler("ecf"), 4
        )
        largest = 0
        t = 0.0
        while not app.done:
            t += 0.05
            emu.sim.run(t)
            largest = max(largest, len(conn.acked_frames))
        return (
            app.done_time,
            conn.bytes_acked,
            conn.retransmit_bytes,
            [p.packets_sent for p in conn.paths],
            [p.packets_lost for p in conn.paths],
            [p.retransmissions for p in conn.paths],
        ), largest

    never, largest_never = episode(10**9)
    pruned, largest_pruned = episode(40)
    assert pruned == never
    assert sum(never[5]) > 100  # the retransmission path was exercised
    assert 100 < largest_never < 0.1 * sum(never[3])  # retransmitted frames only, not every packet
    assert largest_pruned < 0.6 * largest_never


@pytest.mark.parametrize("cap", [100, 101])
def test_oqs_series_is_thinned_to_its_cap_with_exact_mean_and_max(cap):
    """A connection keeps at most ``oqs_cap`` OQS samples: past the cap every
    other one is dropped and the stride doubles. The kept samples are exactly
    every stride-th sample of the full series, and the mean and maximum
    reported are those of all samples. An odd cap drops the sample just kept
    at each thinning, so the next kept one is not a stride after it."""
    from envs.metrics import episode_metrics

    sc = {
        "paths": [
            {"bandwidth_mbps": 50, "rtt_ms": 10, "rtt_std_ms": 4, "loss": 0.01},
            {"bandwidth_mbps": 20, "rtt_ms": 80, "rtt_std_ms": 30, "loss": 0.01},
        ]
    }

    def episode(cap: int | None):
        emu, conn, app, s = setup_episode(
            sc, {"kind": "bulk", "size_bytes": 3_000_000}, make_scheduler("rr"), 2
        )
        if cap is not None:
            conn.oqs_cap = cap
        end = emu.sim.run(until=s["max_duration_s"])
        return conn, episode_metrics(conn, app, end)

    full, m_full = episode(None)
    thin, m_thin = episode(cap)
    assert full.oqs_stride == 1 and thin.oqs_stride >= 8 and len(thin.oqs_v) < cap
    k = thin.oqs_stride
    assert thin.oqs_v == full.oqs_v[k - 1 :: k][: len(thin.oqs_v)]
    assert thin.oqs_t == full.oqs_t[k - 1 :: k][: len(thin.oqs_t)]
    assert len(full.oqs_v) - k < k * len(thin.oqs_v) <= len(full.oqs_v)
    assert m_thin["oqs_max_bytes"] == m_full["oqs_max_bytes"] > 0
    assert m_thin["oqs_mean_bytes"] == pytest.approx(m_full["oqs_mean_bytes"], rel=1e-12)
    assert m_thin["download_time_s"] == m_full["download_time_s"]


# ------------------------------------------------------------------ connection setup
@pytest.mark.parametrize("rtt_ms", [10, 40, 200])
@pytest.mark.parametrize(
    "handshake, rtts", [("quic", 1), ("gquic", 2), ("tcp_tls", 2), ("zero_rtt", 0)]
)
def test_setup_costs_the_handshake_and_request_trips_of_the_initial_path(rtt_ms, handshake, rtts):
    """A 2 MB download over one 5 Mbit/s path: against ``setup: none`` (the
    data at the server at t = 0), the setup adds the handshake's round trips
    plus the request's one-way trip, to within one packet time; the first
    byte arrives one more one-way trip later."""
    packet_time = WIRE * 8 / 5e6
    rtt = rtt_ms / 1000

    def run(setup):  # round trips of one RTT draw each (handshake_link: its own tests)
        setup = setup if setup == "none" else {"handshake": setup, "handshake_link": False}
        return run_episode(
            one_path(5, rtt_ms, setup=setup),
            {"kind": "bulk", "size_bytes": 2_000_000},
            make_scheduler("minrtt"),
            0,
        ).metrics

    none, with_setup = run("none"), run(handshake)
    extra = with_setup["download_time_s"] - none["download_time_s"]
    assert extra == pytest.approx((rtts + 0.5) * rtt, abs=packet_time)
    assert with_setup["time_to_first_byte_s"] == pytest.approx(
        (rtts + 1) * rtt + packet_time, abs=packet_time
    )
    assert none["time_to_first_byte_s"] == pytest.approx(0.5 * rtt + packet_time, abs=packet_time)


def test_secondary_path_carries_data_one_rtt_after_the_request():
    """``path_validation: true``: path 1 (100 ms) stays closed until one of its RTTs
    after the server has the request (1.5 RTTs of the 20 ms path 0 after the
    start), then carries data; ``path_validation: false`` opens it with path 0."""
    sc = {
        "paths": [{"bandwidth_mbps": 50, "rtt_ms": 20}, {"bandwidth_mbps": 50, "rtt_ms": 100}],
        "setup": {"path_validation": True, "handshake_link": False},
    }
    t_up, t_open = 0.030, 0.130
    emu, conn, app, _ = setup_episode(
        sc, {"kind": "bulk", "size_bytes": 2_000_000}, make_scheduler("rr"), 0
    )
    emu.sim.run(t_open - 1e-6)
    p0, p1 = conn.paths
    assert p0.packets_sent > 0 and not p1.is_open and p1.packets_sent == 0 and not p1.has_room
    emu.sim.run(t_open + 1e-6)
    assert p1.is_open and p1.packets_sent > 0
    emu, conn, app, _ = setup_episode(
        {**sc, "setup": {"path_validation": False, "handshake_link": False}},
        {"kind": "bulk", "size_bytes": 10**6},
        make_scheduler("rr"),
        0,
    )
    emu.sim.run(t_up + 1e-6)
    assert all(p.is_open and p.packets_sent > 0 for p in conn.paths)


@pytest.mark.parametrize(
    "handshake, ready_rtts", [("quic", 1), ("gquic", 2), ("tcp_tls", 1), ("zero_rtt", 1)]
)
def test_mutual_validation_opens_a_path_after_the_servers_own_challenge(handshake, ready_rtts):
    """``path_validation: mutual``: the client's challenge leaves when its handshake is complete
    (``ready_rtts`` of the 20 ms path 0), reaches the server half an RTT of the 100 ms path 1 later,
    and the server sends data after its own challenge's round trip: 1.5 RTTs of path 1 in all."""
    sc = {
        "paths": [{"bandwidth_mbps": 50, "rtt_ms": 20}, {"bandwidth_mbps": 50, "rtt_ms": 100}],
        "setup": {"handshake": handshake, "path_validation": "mutual", "handshake_link": False},
    }
    t_open = ready_rtts * 0.020 + 1.5 * 0.100
    emu, conn, app, _ = setup_episode(
        sc, {"kind": "bulk", "size_bytes": 2_000_000}, make_scheduler("rr"), 0
    )
    assert conn.paths[1].open_time == pytest.approx(t_open)
    emu.sim.run(t_open - 1e-6)
    assert not conn.paths[1].is_open and conn.paths[1].packets_sent == 0
    emu.sim.run(t_open + 1e-6)
    assert conn.paths[1].is_open and conn.paths[1].packets_sent > 0
    assert conn.paths[1].srtt == pytest.approx(
        0.100
    )  # the server's challenge round trip: its first sample


def test_streams_requested_during_the_setup_open_when_the_connection_is_up():
    """A stream trace's streams released before the request reached the
    server open together then; later ones at their release time."""
    from envs.apps import StreamsApp

    emu = Emulation(0)
    conn = emu.connect(one_path(20, 40, setup={"handshake_link": False}), make_scheduler("minrtt"))
    app = StreamsApp(
        [
            {"release_s": 0.0, "size_bytes": 5000},
            {"release_s": 0.01, "size_bytes": 5000},
            {"release_s": 0.2, "size_bytes": 5000},
        ]
    )
    app.start(conn)
    emu.sim.run(0.06 - 1e-6)  # the request arrives at 1.5 x 40 ms
    assert not conn.send_streams
    emu.sim.run(0.06 + 1e-6)
    assert sorted(conn.send_streams) == [0, 1]
    emu.sim.run(10.0)
    assert app.done and app.object_release_times() == [0.0, 0.01, 0.2]


def test_setup_block_is_validated():
    from envs.scenario import normalise_scenario

    base = {"paths": [{"bandwidth_mbps": 10}]}
    full = {"path_validation": "mutual", "rtt_samples": True, "handshake_link": True}
    assert normalise_scenario(base)["setup"] == {"handshake": "quic", **full}
    assert normalise_scenario({**base, "setup": "none"})["setup"] == {
        "handshake": "none",
        "path_validation": False,
        "rtt_samples": False,
        "handshake_link": False,
    }
    assert normalise_scenario({**base, "setup": "gquic"})["setup"] == {"handshake": "gquic", **full}
    assert (
        normalise_scenario({**base, "setup": {"path_validation": "mutual"}})["setup"][
            "path_validation"
        ]
        == "mutual"
    )
    for bad, msg in (
        ("tls", "handshake: unknown 'tls'"),
        ({"handshake": "quic", "x": 1}, "unknown key"),
        ({"path_validation": "yes"}, "expected true, false or 'mutual'"),
        ({"rtt_samples": "yes"}, "expected true or false"),
        ({"handshake_link": 1}, "handshake_link: expected true or false"),
        (3, "expected none, a handshake"),
    ):
        with pytest.raises(ConfigError, match=msg):
            normalise_scenario({**base, "setup": bad})


# ---------------------------------------------------------------- setup RTT samples and pacing


def test_the_setup_round_trips_are_the_first_rtt_samples():
    """The handshake's round trip is path 0's first RTT sample before any
    data, a validated path's round trip is its sample when it opens;
    ``rtt_samples: false`` and ``zero_rtt`` leave path 0 without one."""
    sc = {
        "paths": [{"bandwidth_mbps": 50, "rtt_ms": 20}, {"bandwidth_mbps": 50, "rtt_ms": 100}],
        "setup": {"handshake_link": False},
    }  # RTT draws only (the link's share: tests/test_replay_physics.py)
    emu, conn, app, _ = setup_episode(
        sc, {"kind": "bulk", "size_bytes": 10**6}, make_scheduler("minrtt"), 0
    )
    p0, p1 = conn.paths
    assert p0.has_rtt_sample and p0.srtt == pytest.approx(0.020) and p0.packets_sent == 0
    assert not p1.has_rtt_sample
    emu.sim.run(0.170 + 1e-6)  # path 1 opens 1.5 x 100 ms after the handshake (20 ms)
    assert p1.is_open and p1.has_rtt_sample and p1.min_rtt == pytest.approx(0.100)
    for setup in ({"rtt_samples": False}, {"handshake": "zero_rtt"}):
        emu, conn, app, _ = setup_episode(
            {**sc, "setup": setup},
            {"kind": "bulk", "size_bytes": 10**6},
            make_scheduler("minrtt"),
            0,
        )
        assert not conn.paths[0].has_rtt_sample


def _first_flight(pacing, rtt_ms=80, buffer_packets=100_000):
    """Send times [s] and losses of the first flight (32 packets) on one
    50 Mbit/s path, before its first ACK arrives (the default setup: the
    request reaches the server at 1.5 RTT)."""
    rtt = rtt_ms / 1000
    sc = {
        "paths": [{"bandwidth_mbps": 50, "rtt_ms": rtt_ms, "buffer_packets": buffer_packets}],
        "cc": "newreno",
        "pacing": pacing,
        "setup": {"handshake_link": False},
    }
    emu, conn, app, _ = setup_episode(
        sc, {"kind": "bulk", "size_bytes": 10**7}, make_scheduler("minrtt"), 0
    )
    emu.sim.run(1.5 * rtt + rtt - 1e-3)
    p = conn.paths[0]
    return 1.5 * rtt, sorted(sp[0] for sp in p.sent.values()), p.path.link.drops


def test_paced_first_flight_is_a_burst_then_one_packet_per_mss_over_the_rate():
    """quic-go's pacer: 10 packets at once, then one packet every
    mss / (1.25 x cwnd / srtt) = 2 ms (cwnd 32 packets, srtt 80 ms)."""
    t_up, sends, _ = _first_flight(True)
    assert len(sends) == 32 and sends[:10] == [t_up] * 10
    gaps = [b - a for a, b in zip(sends[9:], sends[10:])]
    assert gaps == pytest.approx([0.080 / (1.25 * 32)] * 22, rel=1e-9)
    _, unpaced, _ = _first_flight(False)
    assert unpaced == [t_up] * 32


def test_a_paced_burst_no_longer_overflows_a_10_packet_buffer():
    _, _, drops = _first_flight(True, rtt_ms=40, buffer_packets=10)
    _, _, unpaced_drops = _first_flight(False, rtt_ms=40, buffer_packets=10)
    assert drops == 0 and unpaced_drops >= 20


@pytest.mark.parametrize("bw,rtt", [(100, 40), (20, 60), (500, 30)])
def test_paced_download_is_at_most_one_round_slower(bw, rtt):
    """Pacing at 1.25 x cwnd / srtt spreads a round over 0.8 of an RTT: on a
    loss-free path a 2 MB download takes no less than unpaced (up to the
    jitter of the order of events) and at most 0.8 RTT longer."""

    def run(pacing):
        s = one_path(bw, rtt, ack={"every": 1}, setup=None, pacing=pacing)
        return run_episode(
            s, {"kind": "bulk", "size_bytes": 2_000_000}, make_scheduler("minrtt"), 0
        ).metrics

    paced, unpaced = run(True), run(False)
    assert paced["packets_lost"] == unpaced["packets_lost"] == 0
    assert (
        unpaced["download_time_s"] - 1e-3
        <= paced["download_time_s"]
        <= unpaced["download_time_s"] + 0.8 * rtt / 1000
    )


def test_pacing_block_is_validated():
    from envs.scenario import normalise_scenario

    base = {"paths": [{"bandwidth_mbps": 10}]}
    assert normalise_scenario(base)["pacing"] == {
        "enabled": True,
        "gain": 1.25,
        "burst_packets": 10,
        "min_delay_ms": 1.0,
    }
    assert normalise_scenario({**base, "pacing": False})["pacing"]["enabled"] is False
    assert normalise_scenario({**base, "pacing": {"gain": 2}})["pacing"]["gain"] == 2.0
    for bad, msg in (
        ({"gain": 0}, "scenario.pacing.gain"),
        ({"rate": 1}, "unknown key"),
        ({"enabled": "yes"}, "expected true or false"),
        ("on", "expected true, false or a mapping"),
        ({"burst_packets": 0}, "scenario.pacing.burst_packets"),
    ):
        with pytest.raises(ConfigError, match=msg):
            normalise_scenario({**base, "pacing": bad})


def test_a_trace_paths_default_buffer_is_one_bdp_at_its_p95_rate():
    """A capacity trace's default buffer (``buffer_bdp: 1``) is sized by the 95th percentile of
    its 100-ms window rates, not its whole-period mean: the Mahimahi T-Mobile LTE trace (mean
    16.7, p95 39.5 Mbit/s) gets ~220 packets at 60 ms instead of 93, and a 20 MB download then
    uses most of the capacity the trace offers (it used 55 % with the mean-rate buffer)."""
    from envs.emulation import buffer_rate

    def bdp_packets(rate):
        return math.ceil(rate * 0.060 / 1350)

    sc = {"paths": [{"trace": "mahimahi_cellular_lte/TMobile-LTE-short.down", "rtt_ms": 60}]}
    emu, conn, _app, _ = setup_episode(
        sc, {"kind": "bulk", "size_bytes": 10**6}, make_scheduler("minrtt"), 0
    )
    link = conn.paths[0].path.link
    cap = link.capacity
    assert buffer_rate(cap) > 2 * cap.mean_rate
    assert link.buffer_packets == bdp_packets(buffer_rate(cap)) > 2 * bdp_packets(cap.mean_rate)
    emu.close()
    m = run_episode(
        sc, {"kind": "bulk", "size_bytes": 20_000_000}, make_scheduler("minrtt"), 0
    ).metrics
    assert m["path0_utilisation"] > 0.8


def test_emulation_names_stay_importable_from_envs_scenario():
    """Emulation and its helpers moved to envs.emulation; the old import path still works."""
    import envs.emulation
    import envs.scenario

    for name in envs.scenario._MOVED:
        assert getattr(envs.scenario, name) is getattr(envs.emulation, name)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        envs.scenario.nope  # noqa: B018
