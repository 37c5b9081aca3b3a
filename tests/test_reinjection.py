"""Re-injection and redundancy in the transport (envs.scheduler, envs.transport) and the
schedulers that use them (baselines/rule_based/reinjection.py, policy_family.py)."""

from __future__ import annotations

import math

import pytest

from baselines import make_scheduler
from envs.runner import run_episode, setup_episode
from envs.scheduler import Decision, Scheduler

FIVE_G_WLAN = {"paths": [{"link": "5g"}, {"link": "wlan"}]}
LOSSY = {"paths": [{"link": "5g"}, {"link": "wlan", "loss": 0.03}]}
# a small fixed receive window and a slow path with a large window of its own: the slow
# path's data in flight holds the connection's window (the case Linux MPTCP's
# opportunistic retransmission was made for)
BLOCKED = {
    "flow_control": {"initial_window_bytes": 100_000, "autotune": False},
    "paths": [{"bandwidth_mbps": 20, "rtt_ms": 20}, {"bandwidth_mbps": 10, "rtt_ms": 200}],
}
BULK = {"kind": "bulk", "size_bytes": 1_000_000}


def _run(scenario, name, seed=0, **kw):
    return run_episode(scenario, BULK, make_scheduler(name, **kw), seed)


@pytest.mark.parametrize("name", ["minrtt_xlink", "redundant"])
def test_copies_are_sent_counted_and_delivered_once(name):
    r = _run(LOSSY, name, seed=1)
    m = r.metrics
    assert m["timed_out"] == 0.0
    assert m["reinjected_bytes"] > 0
    assert m["redundancy_overhead"] == pytest.approx(m["reinjected_bytes"] / BULK["size_bytes"])


def test_the_connection_acknowledges_every_byte_once_with_copies():
    emu, conn, _app, s = setup_episode(LOSSY, BULK, make_scheduler("redundant"), 2)
    emu.sim.run(until=s["max_duration_s"])
    assert conn.reinjected_packets > 0
    assert conn.bytes_acked <= BULK["size_bytes"]  # a frame acknowledged on both paths counts once
    assert conn.delivered == BULK["size_bytes"]  # the receiver keeps the first copy only
    emu.close()


def test_schedulers_without_reinjection_have_no_copies_and_no_overhead_metric():
    m = _run(LOSSY, "minrtt", seed=1).metrics
    assert "reinjected_bytes" not in m and "redundancy_overhead" not in m


def test_tail_reinjection_shortens_the_tail_of_a_lossy_slow_path():
    """The 5G + lossy WLAN pair: minRTT leaves the tail losses of the slow path to its
    timeouts; re-injecting them on the fast path finishes sooner (median of 8 seeds)."""

    def median(name):
        xs = sorted(_run(LOSSY, name, seed=s).metrics["download_time_s"] for s in range(8))
        return (xs[3] + xs[4]) / 2

    assert median("minrtt_xlink") < median("minrtt")


def test_tail_reinjection_without_copies_while_blocked_waits_for_credit():
    """``when_blocked=False`` copies only once all data is sent: where flow control
    holds new data back (BLOCKED) it copies less than XLINK's rule, and where it
    never blocks (1 MB over 5G + lossy WLAN) it is XLINK's rule, bit for bit."""
    xlink = _run(BLOCKED, "minrtt_xlink").metrics
    tail = _run(BLOCKED, "minrtt_xlink", when_blocked=False).metrics
    assert 0 <= tail["reinjected_bytes"] < xlink["reinjected_bytes"]
    for seed in range(3):
        assert (
            _run(LOSSY, "minrtt_xlink", seed=seed).metrics
            == _run(LOSSY, "minrtt_xlink", seed=seed, when_blocked=False).metrics
        )


def test_when_blocked_must_be_a_boolean():
    from envs.errors import ConfigError

    with pytest.raises(ConfigError, match="when_blocked: expected true or false, got 'no'"):
        make_scheduler("minrtt_xlink", when_blocked="no")


def test_opportunistic_retransmission_fires_only_when_flow_control_blocks():
    blocked = _run(BLOCKED, "minrtt_or").metrics
    assert blocked["reinjected_bytes"] > 0
    assert blocked["download_time_s"] < 0.5 * _run(BLOCKED, "minrtt").metrics["download_time_s"]
    free = _run(FIVE_G_WLAN, "minrtt_or").metrics  # flow control never blocks 1 MB here
    plain = _run(FIVE_G_WLAN, "minrtt").metrics
    assert free["reinjected_bytes"] == 0
    assert free["download_time_s"] == plain["download_time_s"]


def test_penalise_halves_the_window_once_per_rtt():
    emu, conn, _app, _s = setup_episode(FIVE_G_WLAN, BULK, make_scheduler("minrtt"), 0)
    ps = conn.paths[1]
    ps.cc.cwnd, ps.cc.ssthresh = 40_000.0, 30_000.0  # in congestion avoidance
    ps.srtt = 0.05
    assert conn.penalise(1)
    assert (ps.cc.cwnd, ps.cc.ssthresh) == (20_000.0, 15_000.0)
    assert not conn.penalise(1)  # again within one srtt: no
    assert ps.cc.cwnd == 20_000.0
    ps.cc.cwnd, ps.cc.ssthresh = 1000.0, math.inf  # slow start: ssthresh kept, floor min_window
    conn._penalised_at[1] = -1.0  # as if one srtt had passed
    assert conn.penalise(1)
    assert ps.cc.cwnd == ps.cc.min_window and ps.cc.ssthresh == math.inf
    emu.close()


class _CopyEverything(Scheduler):
    """Asks for a re-injection on every decision, also with new data waiting."""

    reinjects = True

    def decide(self, view):
        for p in view.paths:
            if p.has_room:
                return Decision(p.index, reinject=True)
        return None


def test_a_reinjection_with_nothing_to_copy_sends_the_next_data():
    m = run_episode(FIVE_G_WLAN, BULK, _CopyEverything(), 0).metrics
    assert m["timed_out"] == 0.0 and m["reinjected_bytes"] > 0


class _NoReinjectFlag(_CopyEverything):
    reinjects = False


def test_without_the_flag_the_tail_is_never_offered():
    """A scheduler without ``reinjects`` is not asked once nothing new can be sent, so a
    Decision(reinject=True) is only taken while there is new data (and then copies)."""
    m = run_episode(FIVE_G_WLAN, BULK, _NoReinjectFlag(), 0).metrics
    assert m["timed_out"] == 0.0 and "reinjected_bytes" not in m


@pytest.mark.parametrize("share", [0.0, 0.3, 0.5, 1.0])
def test_split_threshold_without_threshold_or_reinjection_is_the_fixed_split(share):
    scen = {"paths": [{"link": "4g"}, {"link": "wlan"}]}
    a = run_episode(scen, BULK, make_scheduler("fixed_split", share=share), 3).metrics
    b = run_episode(scen, BULK, make_scheduler("split_threshold", share=share), 3).metrics
    assert a == b


def test_split_threshold_leaves_a_path_that_is_far_worse():
    scen = {"paths": [{"bandwidth_mbps": 50, "rtt_ms": 20}, {"bandwidth_mbps": 2, "rtt_ms": 300}]}
    split = run_episode(scen, BULK, make_scheduler("split_threshold", share=0.5), 0).metrics
    left = run_episode(
        scen, BULK, make_scheduler("split_threshold", share=0.5, threshold=1.5), 0
    ).metrics
    assert left["download_time_s"] < 0.5 * split["download_time_s"]
    assert left["path0_share"] > split["path0_share"]


@pytest.mark.parametrize("bad", [0.5, -1, "x", True, float("nan")])
def test_split_threshold_rejects_a_bad_threshold(bad):
    from envs.errors import ConfigError

    with pytest.raises(ConfigError, match="threshold"):
        make_scheduler("split_threshold", threshold=bad)
