"""Integration tests of the rule-based schedulers (baselines.rule_based) on the
real emulator (envs.run_episode): each test checks a mechanism end to end and
would fail if the mechanism were missing. Bulk downloads; medians over several
seeds; every episode is run once per session and cached (the minRTT baseline
is shared by several tests).

Regimes (custom paths: constant capacity, RTT std = 10 % of the mean, no
loss unless stated; buffers 1 BDP, the scenario default):

* ``AGG``: two heterogeneous but comparable paths (30 Mbit/s 20 ms and
  20 Mbit/s 40 ms): aggregating them must beat either path alone.
* ``SLOW``: a fast path (50 Mbit/s, 20 ms) and a much slower one (5 Mbit/s,
  400 ms RTT: 20x the RTT, 1/10 of the rate), 5 MB. This is the regime of
  the BLEST/ECF papers: the slow path's RTT is many times the fast one's, so
  every packet minRTT puts on it arrives long after the fast-path data sent
  with it, which then waits in the receiver's out-of-order queue (and fills
  the 768 KiB flow-control window). Why 5 MB and this RTT ratio: ECF waits
  only while R_f (x_f + c_f) < c_f (R_s + delta), x_f = max(k, c_f), i.e.
  while the data left k fits in about R_s / R_f - 1 fast-path windows; with
  R_s / R_f ~ 20 and c_f ~ 2 BDP ~ 250 KB that is ~5 MB, so ECF waits during
  most of the transfer. With a smaller ratio or a larger file (e.g. 10 Mbit/s
  200 ms, 10 MB) ECF behaves as minRTT until the tail and the OQS gain is
  within noise. BLEST waits as long as the fast path could send more than
  the flow-control credit during the slow path's linger time, which holds
  here for the whole transfer.

OQS p99 is not asserted on: at start-up every scheduler probes both paths
(minRTT's rule for unprobed paths) and sends the slow path a full initial
window interleaved with the fast path's, so the p99 is set by start-up and
is the same (~720 kB) for all of them in ``SLOW``. The mean separates them.
"""

from __future__ import annotations

import functools
import math
import statistics

import numpy as np
import pytest

from baselines import make_scheduler
from baselines.rule_based.common import fastest, minrtt_choice
from envs.runner import run_episode
from envs.scheduler import Decision, Scheduler

NAMES = ("rr", "minrtt", "blest", "ecf", "daps", "stms")
SEEDS = (1, 2, 3, 4, 5, 6, 7)


def _path(mbps, rtt_ms, **kw):
    return {"bandwidth_mbps": mbps, "rtt_ms": rtt_ms, "rtt_std_ms": rtt_ms / 10, **kw}


FAST, SLOW_PATH = _path(50, 20), _path(5, 400)
AGG_A, AGG_B = _path(30, 20), _path(20, 40)

# The mechanism scenarios have no connection setup and no pacing (their
# observed figures were taken with both paths open at t = 0 and an unpaced
# sender); the presets keep the defaults. Pacing changes "slow" most: minRTT
# sends 437 kB instead of 1 523 kB on the 400 ms path and takes 2.70 s
# instead of 4.44 s (seeds 1-7), and round robin no longer queues more
# out of order than minRTT (419 against 468 kB).
UNPACED_NO_SETUP = {"setup": "none", "pacing": False}
SCENARIOS = {
    "agg": {"paths": [AGG_A, AGG_B], **UNPACED_NO_SETUP},
    "agg_a": {"paths": [AGG_A], **UNPACED_NO_SETUP},
    "agg_b": {"paths": [AGG_B], **UNPACED_NO_SETUP},
    "slow": {"paths": [FAST, SLOW_PATH], **UNPACED_NO_SETUP},
    # where DAPS/STMS used to stall (flow-control credit used up by gapped data)
    "slow200": {"paths": [FAST, _path(10, 200)], **UNPACED_NO_SETUP},
    "4g+5g": {"paths": [{"link": "4g"}, {"link": "5g"}]},
    "4g+wlan": {"paths": [{"link": "4g"}, {"link": "wlan"}]},
    "lossy": {"paths": [{"link": "4g", "loss": 0.02}, {"link": "wlan", "loss": 0.02}]},
}
SIZE = {"agg": 4_000_000, "slow": 5_000_000, "slow200": 8_000_000, "presets": 2_000_000}


class Recorder(Scheduler):
    """Transparent wrapper: forwards every call to ``inner`` and records what
    it decided. ``waits`` counts ``None`` answers given while some path had
    congestion-window room (a real wait: the transport only asks when a
    packet could be sent); ``waits_slow_room`` those while the minRTT choice
    was a slower path with room; ``idle_waits`` those while nothing at all
    was in flight (no ACK or loss would then come back to re-ask: a stall)."""

    def __init__(self, inner: Scheduler):
        self.inner = inner
        self.name = inner.name
        self.wants_packet_feedback = inner.wants_packet_feedback
        self.conn = None
        self.calls = self.waits = self.waits_slow_room = self.idle_waits = 0
        self.gapped = self.gap_bytes = 0

    def reset(self, view) -> None:
        self.conn = view
        self.inner.reset(view)

    def decide(self, view):
        d = self.inner.decide(view)
        self.calls += 1
        paths = view.paths
        if d is None:
            if any(p.has_room for p in paths):
                self.waits += 1
                if not any(p.bytes_in_flight for p in paths):
                    self.idle_waits += 1
                c = minrtt_choice(paths)
                if c is not None and c != fastest(paths):
                    self.waits_slow_room += 1
        elif isinstance(d, Decision) and d.gap > 0:
            self.gapped += 1
            self.gap_bytes += d.gap
        return d

    def on_packet_acked(self, view, path, size, sent_time) -> None:
        self.inner.on_packet_acked(view, path, size, sent_time)

    def on_packet_lost(self, view, path, size, sent_time) -> None:
        self.inner.on_packet_lost(view, path, size, sent_time)


class Run:
    """What the tests need of one episode (the connection itself is dropped)."""

    def __init__(self, result, rec: Recorder, size: int):
        self.m = result.metrics
        self.waits, self.waits_slow_room, self.idle_waits = (
            rec.waits,
            rec.waits_slow_room,
            rec.idle_waits,
        )
        self.gapped, self.gap_bytes = rec.gapped, rec.gap_bytes
        conn = rec.conn
        rs = conn.recv_streams[0]
        self.delivered = conn.delivered
        self.next_offset = rs.next_offset
        self.ooo_left = len(rs.ooo)
        self.oqs_end = conn.oqs
        self.unsent = sum(st.remaining for st in conn.send_streams.values())
        self.size = size


def _run(scheduler: Scheduler, scenario: str, size: int, seed: int) -> Run:
    rec = Recorder(scheduler)
    res = run_episode(SCENARIOS[scenario], {"kind": "bulk", "size_bytes": size}, rec, seed)
    return Run(res, rec, size)


@functools.cache
def episode(name: str, scenario: str, size: int, seed: int) -> Run:
    return _run(make_scheduler(name), scenario, size, seed)


def runs(name, scenario, size, seeds=SEEDS):
    return [episode(name, scenario, size, s) for s in seeds]


def med(rs, key):
    return statistics.median(r.m[key] for r in rs)


def assert_completed(rs):
    for r in rs:
        # a wait is only ever answered while something is in flight, so an ACK
        # or a loss comes back and the connection asks again
        assert r.idle_waits == 0
        assert r.m["timed_out"] == 0.0, f"timed out after {r.m['elapsed_s']:.3f} s"
        assert math.isfinite(r.m["download_time_s"])


# ---------------------------------------------------------------------------
def test_minrtt_aggregates_two_heterogeneous_paths():
    size = SIZE["agg"]
    both = runs("minrtt", "agg", size)
    a = runs("minrtt", "agg_a", size)
    b = runs("minrtt", "agg_b", size)
    for rs in (both, a, b):
        assert_completed(rs)
    t_both, t_a, t_b = (med(rs, "download_time_s") for rs in (both, a, b))
    # observed: ~0.87 s vs 1.17 s (30 Mbit/s path alone) and 1.81 s (20 Mbit/s)
    assert t_both < 0.9 * min(t_a, t_b), (t_both, t_a, t_b)
    # and it does so by really using the second path
    assert med(both, "path1_share") > 0.2


@pytest.mark.parametrize("name", ["blest", "ecf"])
def test_blest_ecf_wait_and_reduce_oqs(name):
    size = SIZE["slow"]
    base = runs("minrtt", "slow", size)
    rs = runs(name, "slow", size)
    assert_completed(base)
    assert_completed(rs)
    # the mechanism: they really wait (None while the slow path had room) and
    # the transfer still completes, i.e. a wait is re-asked after an ACK ...
    assert all(r.waits_slow_room > 0 for r in rs), [r.waits_slow_room for r in rs]
    # ... so they put much less on the slow path than minRTT
    # (observed: blest 43 kB = only the start-up probe, ecf ~0.53 MB, minrtt ~1.55 MB)
    assert med(rs, "path1_bytes") < 0.5 * med(base, "path1_bytes")
    # the effect: a smaller out-of-order queue (observed mean: blest ~66 kB,
    # ecf ~189 kB, minrtt ~281 kB) and, here, a shorter download
    assert med(rs, "oqs_mean_bytes") < 0.8 * med(base, "oqs_mean_bytes")
    assert med(rs, "download_time_s") < med(base, "download_time_s")


def test_round_robin_suffers_on_heterogeneous_paths():
    size = SIZE["slow"]
    base = runs("minrtt", "slow", size)
    rs = runs("rr", "slow", size)
    assert_completed(rs)
    # observed: rr ~5.1 s / 355 kB vs minrtt ~4.4 s / 281 kB
    assert med(rs, "download_time_s") > med(base, "download_time_s")
    assert med(rs, "oqs_mean_bytes") > 1.1 * med(base, "oqs_mean_bytes")


@pytest.mark.parametrize("name", ["daps", "stms"])
def test_daps_stms_complete_with_gaps_and_reduce_oqs(name):
    # complete on both slow-path regimes, with no timeout (and no stall: before
    # the flow-control cap in common.gap_limit, STMS stalled in 5 of 6 seeds
    # of slow200/8 MB and DAPS on 4G+WLAN / 4G+5G at 8 MB)
    for scenario in ("slow", "slow200"):
        size = SIZE[scenario]
        base = runs("minrtt", scenario, size)
        rs = runs(name, scenario, size)
        assert_completed(rs)
        # they send gapped data: later sequence numbers on the slower path
        assert all(r.gapped > 0 for r in rs), [r.gapped for r in rs]
        # and they reduce the mean OQS against minRTT (observed medians with
        # RFC 9000 flow-control accounting, slow: daps ~199 kB, stms ~285 kB,
        # minrtt ~281 kB; slow200: daps ~151 kB, stms ~292 kB, minrtt ~354 kB).
        # STMS's gaps use up flow-control credit (the highest offset counts),
        # so on "slow" (5 Mbit/s, 400 ms) it only matches minRTT: no claim there.
        # Download time is not asserted: STMS is not faster than minRTT.
        if name == "stms" and scenario == "slow":
            continue
        assert med(rs, "oqs_mean_bytes") < 0.9 * med(base, "oqs_mean_bytes"), scenario


@pytest.mark.parametrize("name", ["daps", "stms"])
def test_gap_schedulers_do_not_stall_on_flow_control(name):
    # Regression: gapped packets placed beyond the receiver's flow-control
    # limit used up the credit while the hole below stayed unsent: no window
    # update, the event queue ran dry and the episode ended as "timed out"
    # after ~1 s. Before the fix DAPS stalled here in seeds 0, 2, 5, 6, 7
    # and STMS in seed 6.
    rs = runs(name, "4g+wlan", 8_000_000, seeds=(0, 2, 5, 6))
    assert_completed(rs)
    assert all(r.delivered == 8_000_000 for r in rs)


@pytest.mark.parametrize("scenario", ["4g+5g", "4g+wlan", "lossy"])
@pytest.mark.parametrize("name", NAMES)
def test_every_scheduler_delivers_all_bytes(name, scenario):
    size = SIZE["presets"]
    rs = runs(name, scenario, size, seeds=(1, 2, 3))
    assert_completed(rs)
    for r in rs:
        assert r.unsent == 0
        assert r.delivered == size and r.next_offset == size
        assert r.ooo_left == 0 and r.oqs_end == 0
        assert r.m["goodput_mbps"] > 0
    if scenario == "lossy":  # the loss-recovery path was exercised
        assert all(r.m["retransmissions"] > 0 for r in rs)


@pytest.mark.parametrize("name", NAMES)
def test_same_seed_same_metrics_other_seed_other_time(name):
    scenario, size = "4g+wlan", 1_000_000
    r1 = run_episode(
        SCENARIOS[scenario], {"kind": "bulk", "size_bytes": size}, make_scheduler(name), 7
    )
    r2 = run_episode(
        SCENARIOS[scenario], {"kind": "bulk", "size_bytes": size}, make_scheduler(name), 7
    )
    r3 = run_episode(
        SCENARIOS[scenario], {"kind": "bulk", "size_bytes": size}, make_scheduler(name), 8
    )
    assert r1.metrics == r2.metrics
    for k in r1.timeseries:
        np.testing.assert_array_equal(r1.timeseries[k], r2.timeseries[k])
    assert r1.metrics["download_time_s"] != r3.metrics["download_time_s"]


class WaitForFast(Scheduler):
    """Only the fastest path after probing: waits (None) whenever minRTT would
    use a slower path. Relies entirely on the transport asking again later."""

    name = "wait_for_fast"

    def decide(self, view):
        c = minrtt_choice(view.paths)
        if c is None:
            return None
        if view.paths[c].has_rtt_sample and c != fastest(view.paths):
            return None
        return c


class WaitEveryOther(Scheduler):
    """minRTT, but answers None to every second question."""

    name = "wait_every_other"

    def __init__(self):
        self.n = 0

    def decide(self, view):
        self.n += 1
        return None if self.n % 2 == 0 else minrtt_choice(view.paths)


def test_waiting_does_not_deadlock_the_connection():
    size = SIZE["slow"]
    fast_only = _run(WaitForFast(), "slow", size, 1)
    assert fast_only.m["timed_out"] == 0.0 and fast_only.delivered == size
    assert fast_only.waits_slow_room > 0
    # after the start-up probe (one initial window) nothing more goes on the slow path
    assert fast_only.m["path1_bytes"] <= 32 * 1350
    # every second answer None: each ACK then releases one packet at most, so
    # this is slow (~17 s emulated for 500 kB) but must still complete
    flaky = _run(WaitEveryOther(), "4g+wlan", 500_000, 1)
    assert flaky.m["timed_out"] == 0.0 and flaky.delivered == 500_000
    assert flaky.waits > 0
