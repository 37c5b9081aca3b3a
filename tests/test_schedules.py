"""Per-path condition schedules (scenario key ``schedule``, docs/reference/formats/scenario_schema.md).

Each test measures a schedule's effect through what the emulator delivers
(per-packet RTTs, losses and ACKed bytes seen by a scheduler, the receiver's
out-of-order queue) against the values the schedule sets.
"""

from __future__ import annotations

import json
import math
import statistics

import numpy as np
import pytest

from envs import ConfigError, Emulation, Scheduler, run_episode
from envs.link import ScheduledPath
from envs.scenario import TABLE1_RANGES, normalise_schedule, random_condition_schedule

BIG_FC = {"initial_window_bytes": 10**9, "max_window_bytes": 10**9, "autotune": False}
WIRE, PAYLOAD = 1350, 1290
BULK = {"kind": "bulk", "size_bytes": 10**10}


class Recorder(Scheduler):
    """Single path; records (sent, size, ack time) of every ACKed packet and
    (sent, size) of every lost one. ``stop_and_wait``: one packet at a time,
    so that every RTT sample is one base-RTT draw plus serialisation."""

    wants_packet_feedback = True

    def __init__(self, stop_and_wait: bool = False):
        self.stop_and_wait = stop_and_wait
        self.acks, self.losses = [], []

    def decide(self, view):
        p = view.paths[0]
        if self.stop_and_wait:
            return 0 if p.packets_in_flight == 0 else None
        return 0 if p.has_room else None

    def on_packet_acked(self, view, path, size, sent_time):
        self.acks.append((sent_time, size, view.now))

    def on_packet_lost(self, view, path, size, sent_time):
        self.losses.append((sent_time, size))


def one_path(schedule, duration, **path):
    p = {"bandwidth_mbps": 100, "rtt_ms": 40, "rtt_std_ms": 0, "loss": 0.0, "schedule": schedule}
    p.update(path)
    return {
        "paths": [p],
        "cc": "cubic",
        "flow_control": BIG_FC,
        "max_duration_s": duration,
        "ack": {"every": 1},
    }


# ---------------------------------------------------------------- conditions follow the schedule


def test_rtt_samples_follow_the_new_mean_and_std_after_a_change():
    sched = [{"at_s": 8.0, "rtt_ms": 80, "rtt_std_ms": 24}]
    rec = Recorder(stop_and_wait=True)
    run_episode(one_path(sched, 24.0, rtt_ms=40, rtt_std_ms=4), BULK, rec, 0)
    serialisation = WIRE / (100e6 / 8)
    before = [(a - s - serialisation) * 1000 for s, _, a in rec.acks if s < 8.0]
    after = [(a - s - serialisation) * 1000 for s, _, a in rec.acks if s >= 8.0]
    assert len(before) > 150 and len(after) > 150
    assert statistics.fmean(before) == pytest.approx(40, rel=0.03)
    assert statistics.stdev(before) == pytest.approx(4, rel=0.15)
    assert statistics.fmean(after) == pytest.approx(80, rel=0.05)
    assert statistics.stdev(after) == pytest.approx(24, rel=0.15)


def test_loss_rate_follows_the_schedule_from_the_send_time_on():
    rec = Recorder()
    s = one_path(
        [{"at_s": 2.0, "loss": 0.03}], 10.0, bandwidth_mbps=20, rtt_ms=10, buffer_packets=1000
    )
    s["flow_control"] = {
        "initial_window_bytes": 200_000,
        "max_window_bytes": 200_000,
        "autotune": False,
    }
    run_episode(s, BULK, rec, 0)  # flow control caps the queue: no buffer drops
    lost_before = sum(1 for s, _ in rec.losses if s < 2.0)
    sent_before = sum(1 for s, _, _ in rec.acks if s < 2.0)
    lost_after = sum(1 for s, _ in rec.losses if s >= 2.0)
    sent_after = lost_after + sum(1 for s, _, _ in rec.acks if s >= 2.0)
    assert sent_before > 1000 and lost_before == 0
    assert sent_after > 3000
    assert lost_after / sent_after == pytest.approx(0.03, rel=0.25)


def test_capacity_changes_show_in_the_delivered_rate():
    sched = [{"at_s": 3.0, "bandwidth_mbps": 60}, {"at_s": 6.0, "bandwidth_mbps": 10}]
    rec = Recorder()
    run_episode(one_path(sched, 9.0, bandwidth_mbps=20, rtt_ms=20), BULK, rec, 0)

    def goodput(t0, t1):  # payload ACKed in [t0, t1) [Mbit/s]
        return sum(PAYLOAD for _, _, a in rec.acks if t0 <= a < t1) * 8 / (t1 - t0) / 1e6

    for (t0, t1), bw in (((1.0, 3.0), 20), ((4.0, 6.0), 60), ((7.0, 9.0), 10)):
        assert goodput(t0, t1) == pytest.approx(bw * PAYLOAD / WIRE, rel=0.03), (t0, bw)


def test_bdp_buffer_follows_the_segments_explicit_buffer_stays():
    emu = Emulation(0)
    sched = [{"at_s": 1.0, "bandwidth_mbps": 81, "rtt_ms": 100}]
    conn = emu.connect(
        {
            "paths": [
                {"bandwidth_mbps": 27, "rtt_ms": 20, "schedule": sched},
                {"bandwidth_mbps": 27, "rtt_ms": 20, "schedule": sched, "buffer_packets": 77},
            ]
        },
        Recorder(),
    )
    follows, fixed = (c.path for c in conn.paths)
    bdp = 27e6 / 8 * 0.020 / WIRE  # 50 packets
    assert follows.link.buffer_packets == math.ceil(bdp) and fixed.link.buffer_packets == 77
    for path in (follows, fixed):
        path.transmit(1.5, WIRE)
    assert follows.link.buffer_packets == math.ceil(bdp * 3 * 5) and fixed.link.buffer_packets == 77


# ---------------------------------------------------------------- ordering, looping, determinism


def test_an_rtt_drop_never_reorders_packets_within_a_path():
    # 200 ms -> 20 ms: packets sent just after the drop would overtake the
    # ones still in flight; the receiver's out-of-order queue must stay empty
    s = one_path([{"at_s": 1.0, "rtt_ms": 20}], 3.0, rtt_ms=200, buffer_packets=100_000)
    r = run_episode(s, BULK, Recorder(), 0)
    assert r.metrics["packets_sent"] > 3000 and r.metrics["packets_lost"] == 0
    assert r.timeseries["oqs_bytes"].max() == 0
    # the same at the path: arrivals never decrease although base delays would
    path = Emulation(0).connect(s, Recorder()).paths[0].path
    last, overtook = 0.0, 0
    for k in range(1000):
        now = 0.9 + k * 2e-4  # slower than the link serves: departure = now + serialisation
        arrival, half = path.transmit(now, WIRE)
        overtook += now + WIRE / 12.5e6 + half < last
        assert arrival >= last
        last = arrival
    assert overtook > 0


def test_looped_schedule_repeats_and_starts_each_period_from_the_path_values():
    s = one_path(
        {"segments": [{"at_s": 0.5, "rtt_ms": 80}, {"at_s": 0.8, "rtt_ms": 60}], "period_s": 1.0},
        5.0,
        rtt_ms=40,
    )
    path = Emulation(0).connect(s, Recorder()).paths[0].path
    assert isinstance(path, ScheduledPath)
    for t, want in ((0.1, 40), (0.6, 80), (0.9, 60), (1.2, 40), (1.55, 80), (4.85, 60), (5.0, 40)):
        path.transmit(t, WIRE)
        assert path.delay.mean_rtt * 1000 == pytest.approx(want), t
        assert path.state_at(t).mean_rtt * 1000 == pytest.approx(want), t
    # an idle gap over several periods lands on the right segment
    path.transmit(9.7, WIRE)
    assert path.delay.mean_rtt * 1000 == pytest.approx(80)


def test_scheduled_rtt_overrides_a_trace_delay_series_until_the_period_ends():
    trace = "raca_5g_2020/download_driving/B_2019.12.16_07.22.43.csv"
    s = {
        "paths": [
            {
                "link": "5g",
                "trace": trace,
                "trace_loss": False,
                "schedule": {"segments": [{"at_s": 1.0, "rtt_ms": 100}], "period_s": 2.0},
            }
        ]
    }
    path = Emulation(0).connect(s, Recorder()).paths[0].path
    series = path.delay.one_way_series
    assert series is not None
    path.transmit(1.5, WIRE)
    assert path.delay.one_way_series is None and path.delay.mean_rtt == pytest.approx(0.1)
    assert path.delay.cv == pytest.approx(6.4 / 100)  # Table I std over the scheduled mean
    path.transmit(2.5, WIRE)
    assert path.delay.one_way_series is series


def _run(scenario, seed):
    r = run_episode(scenario, {"kind": "bulk"}, Recorder(), seed)
    return json.dumps(r.metrics, sort_keys=True), r.timeseries["oqs_bytes"].tolist()


@pytest.mark.parametrize(
    "schedule",
    [
        [{"at_s": 0.0, "rtt_ms": 29.2, "rtt_std_ms": 4.8, "loss": 0.001, "bandwidth_mbps": 140}],
        {"segments": [{"at_s": 0.05, "rtt_ms": 29.2, "rtt_std_ms": 4.8}], "period_s": 0.1},
    ],
)
def test_a_schedule_of_the_path_values_gives_a_bit_identical_run(schedule):
    plain = {"paths": [{"link": "4g"}], "cc": "olia"}
    scheduled = {"paths": [{"link": "4g", "schedule": schedule}], "cc": "olia"}
    conn = Emulation(0).connect(scheduled, Recorder())
    assert isinstance(conn.paths[0].path, ScheduledPath)
    assert _run(scheduled, 5) == _run(plain, 5)


def test_same_seed_same_run_with_a_random_schedule():
    sched = random_condition_schedule(np.random.default_rng(1), 0.3, 4)
    s = {"paths": [{"link": "4g", "schedule": sched}, {"link": "wlan", "schedule": sched}]}
    assert _run(s, 3) == _run(s, 3)
    assert _run(s, 3)[0] != _run(s, 4)[0]


# ---------------------------------------------------------------- random schedules and validation


def test_random_condition_schedule_draws_table1_conditions_reproducibly():
    sched = random_condition_schedule(np.random.default_rng(7), 0.5, 6)
    assert sched == random_condition_schedule(np.random.default_rng(7), 0.5, 6)
    assert [seg["at_s"] for seg in sched] == pytest.approx([0.0, 0.5, 1.0, 1.5, 2.0, 2.5])
    assert TABLE1_RANGES == {
        "bandwidth_mbps": (30.0, 1100.0),
        "rtt_ms": (20.0, 29.2),
        "rtt_std_ms": (4.8, 10.0),
        "loss": (0.001, 0.007),
    }
    for field, (lo, hi) in TABLE1_RANGES.items():
        values = [seg[field] for seg in sched]
        assert all(lo <= v <= hi for v in values) and len(set(values)) == 6
    assert normalise_schedule(sched)["segments"] == sched
    only_rtt = random_condition_schedule(
        np.random.default_rng(7), 2.0, 3, {"rtt_ms": (50, 60)}, start_s=1.0
    )
    assert [sorted(seg) for seg in only_rtt] == [["at_s", "rtt_ms"]] * 3 and only_rtt[0][
        "at_s"
    ] == 1.0


@pytest.mark.parametrize(
    "args,fragment",
    [
        ((0.0, 3), "interval_s"),
        ((1.0, 0), "n_segments"),
        ((1.0, 2, {"jitter": (0, 1)}), "ranges"),
        ((1.0, 2, {"loss": (0.1, 0.01)}), "exceeds"),
        ((1.0, 2, {"loss": (0.1, 1.0)}), "loss"),
    ],
)
def test_random_condition_schedule_rejects_bad_arguments(args, fragment):
    with pytest.raises(ConfigError, match=fragment):
        random_condition_schedule(np.random.default_rng(0), *args)


TRACE = "mahimahi_cellular_lte/TMobile-LTE-short.down"


@pytest.mark.parametrize(
    "path,fragment",
    [
        ({"schedule": [{"at_s": 1.0}, {"at_s": 1.0}]}, "strictly increase"),
        ({"schedule": [{"at_s": 2.0}, {"at_s": 1.0}]}, "strictly increase"),
        ({"schedule": [{"at_s": -1.0}]}, "schedule[0].at_s"),
        ({"schedule": [{"rtt_ms": 10}]}, "missing at_s"),
        ({"schedule": [{"at_s": 0, "rtt_ms": -5}]}, "schedule[0].rtt_ms"),
        ({"schedule": [{"at_s": 0, "rtt_std_ms": -1}]}, "schedule[0].rtt_std_ms"),
        ({"schedule": [{"at_s": 0, "bandwidth_mbps": 0}]}, "schedule[0].bandwidth_mbps"),
        ({"schedule": [{"at_s": 0, "loss": 1.5}]}, "schedule[0].loss"),
        ({"schedule": [{"at_s": 0, "loss": 1.0}]}, "lose every packet"),
        ({"schedule": [{"at_s": 0, "jitter_ms": 3}]}, "unknown key(s) ['jitter_ms']"),
        ({"schedule": {"segments": [{"at_s": 0}], "loop": True}}, "unknown key(s) ['loop']"),
        ({"schedule": {"segments": [{"at_s": 0}, {"at_s": 2}], "period_s": 2}}, "period_s"),
        ({"schedule": []}, "non-empty list"),
        ({"schedule": "fast"}, "expected a list of segments"),
        ({"schedule": [3]}, "schedule[0]: expected a mapping"),
        (
            {
                "bandwidth_mbps": None,
                "trace": TRACE,
                "schedule": [{"at_s": 1, "bandwidth_mbps": 5}],
            },
            "constant bandwidth_mbps",
        ),
        (
            {
                "loss_model": "gilbert_elliott",
                "ge": {"p_gb": 0.1, "p_bg": 0.5, "loss_good": 0, "loss_bad": 0.5},
                "schedule": [{"at_s": 1, "loss": 0.1}],
            },
            "loss_model bernoulli",
        ),
    ],
)
def test_bad_schedule_gives_one_clear_line(path, fragment):
    p = {"bandwidth_mbps": 10, "rtt_ms": 20}
    p.update(path)
    with pytest.raises(ConfigError) as e:
        Emulation(0).connect({"paths": [p]}, Recorder())
    assert fragment in str(e.value) and "paths[0].schedule" in str(e.value)
    assert "\n" not in str(e.value)
