"""The deadline-block app (envs/apps/blocks.py) and the HOP paper's comparison
schedulers STTF and DEMS (baselines/rule_based/sttf.py, dems.py).
Units: bytes and seconds."""

import math
from types import SimpleNamespace

import numpy as np
import pytest

from baselines import SCHEDULERS, make_scheduler
from baselines.rule_based import DEMS, STTF
from baselines.rule_based.sttf import bandwidth_estimate, delivery_time
from envs.apps import BlockApp, make_app, normalise_app
from envs.apps.blocks import END_MARGIN_S, block_metrics, block_metrics_from_times
from envs.cc import CC_REGISTRY
from envs.errors import ConfigError
from envs.runner import run_episode, setup_episode
from envs.scheduler import Decision, Scheduler
from envs.streams import SendStream, wrr_pick

MSS = 1000
CCS = ["cubic"] + (["bbr"] if "bbr" in CC_REGISTRY else [])


def two_paths(mbps=(40, 40), rtt_ms=(25, 25), cc="cubic"):
    return {
        "paths": [
            {"bandwidth_mbps": b, "rtt_ms": r, "buffer_packets": 1000, "cc": cc}
            for b, r in zip(mbps, rtt_ms)
        ],
        "setup": "none",
    }


def blocks(block_bytes, duration_s, period_s=0.025, deadline_s=0.035):
    return {
        "kind": "blocks",
        "block_bytes": block_bytes,
        "period_s": period_s,
        "deadline_s": deadline_s,
        "duration_s": duration_s,
    }


def run_app(scenario, app, scheduler, seed=0):
    emu, conn, application, s = setup_episode(scenario, app, scheduler, seed)
    emu.sim.run(until=s["max_duration_s"])
    return conn, application


# ------------------------------------------------------------------ the app
@pytest.mark.parametrize("cc", CCS)
def test_small_blocks_are_all_on_time(cc):
    conn, app = run_app(two_paths(cc=cc), blocks(20_000, 1.0), make_scheduler("minrtt"))
    out = app.block_outcomes()
    assert app.n_blocks == 40 and app.done
    assert out["on_time"].all() and out["release_s"][1] == pytest.approx(0.025)
    delays = out["completion_s"] - out["release_s"]
    assert np.all(delays > 0.0125) and np.all(delays <= 0.035)  # at least a one-way delay
    assert np.allclose(app.object_times(), delays)
    m = block_metrics(app)
    assert m == {
        "blocks": 40,
        "on_time": 40,
        "failure_probability": 0.0,
        "goodput_mbps": pytest.approx(40 * 20_000 * 8 / 1.0 / 1e6),
    }
    # the last block completes: the episode ends then, not at the final check
    assert app.done_time == pytest.approx(app.start_time + out["completion_s"][-1])


def test_blocks_beyond_the_capacity_all_fail_and_the_episode_ends():
    # 80 Mb/s x 35 ms = 350 kB per deadline: 500 kB blocks can never make it
    conn, app = run_app(two_paths(), blocks(500_000, 0.5), make_scheduler("minrtt"))
    out = app.block_outcomes()
    assert app.n_blocks == 20 and not out["on_time"].any()
    assert (
        block_metrics(app)["failure_probability"] == 1.0
        and block_metrics(app)["goodput_mbps"] == 0.0
    )
    # the final check: the last block's deadline plus the margin
    assert app.done_time == pytest.approx(app.start_time + 19 * 0.025 + 0.035 + END_MARGIN_S)
    assert conn.finished


def test_block_release_times_and_count():
    app = make_app(blocks(1000, 30.0), 0.01)
    assert isinstance(app, BlockApp) and app.n_blocks == 1200 and app.sizes == [1000] * 1200
    assert app.object_release_times()[-1] == pytest.approx(1199 * 0.025)
    assert make_app(blocks(1000, 0.1, period_s=0.03), 0.01).n_blocks == 3


def test_swrr_with_zero_weights_is_fifo():
    """The rule the app relies on: weight 0 for every stream makes
    :func:`envs.streams.wrr_pick` always return the first pending stream."""
    active = [SendStream(i, 10_000, 0.0) for i in range(3)]
    for _ in range(50):
        assert wrr_pick(active) is active[0]
    active.pop(0)
    active.append(SendStream(3, 10_000, 0.0))
    assert all(wrr_pick(active) is active[0] for _ in range(50)) and active[0].stream_id == 1


class FifoWatch(Scheduler):
    """minRTT that checks, at every decision, that only the oldest pending
    block has sent any byte (a newer one is untouched while an older one has
    unsent data)."""

    name = "fifo_watch"

    def __init__(self):
        self.inner = make_scheduler("minrtt")
        self.max_pending = 0
        self.violations = 0

    def decide(self, view):
        self.check(view)
        return self.inner.decide(view)

    def check(self, view):
        pending = sorted(view.streams_pending(), key=lambda st: st.stream_id)
        self.max_pending = max(self.max_pending, len(pending))
        self.violations += sum(st.sent_offset > 0 or st.remaining != st.size for st in pending[1:])


def test_blocks_are_served_in_release_order():
    # 100 kB every 10 ms = 80 Mb/s offered to 80 Mb/s: blocks queue up behind each other
    watch = FifoWatch()
    conn, app = run_app(two_paths(), blocks(100_000, 0.3, period_s=0.01), watch)
    watch.check(conn)
    assert watch.max_pending >= 3 and watch.violations == 0
    done = [c for c in app.complete if c >= 0]
    assert len(done) >= 10 and done == sorted(done)  # completed in release order


def test_metrics_arithmetic():
    m = block_metrics_from_times([0.01, 0.04, math.nan, 0.035], 1000, 2.0, 0.035)
    assert m == {
        "blocks": 4,
        "on_time": 2,
        "failure_probability": 0.5,
        "goodput_mbps": pytest.approx(2 * 1000 * 8 / 2.0 / 1e6),
    }
    # a stricter deadline given explicitly
    assert block_metrics_from_times([0.01, 0.04, math.nan, 0.035], 1000, 2.0, 0.02)["on_time"] == 1
    app = BlockApp(1000, 0.025, 0.035, 0.1)
    assert block_metrics(app)["failure_probability"] == 1.0  # nothing ran: nothing delivered
    assert np.isnan(app.block_outcomes()["completion_s"]).all()


# ------------------------------------------------------------------ config
def test_blocks_config_defaults():
    a = normalise_app({"kind": "blocks", "block_bytes": "100000"})
    assert (a["block_bytes"], a["period_s"], a["deadline_s"], a["duration_s"]) == (
        100_000,
        0.025,
        0.035,
        30.0,
    )


@pytest.mark.parametrize(
    "bad, key",
    [
        ({}, "app.block_bytes"),
        ({"block_bytes": None}, "app.block_bytes"),
        ({"block_bytes": "big"}, "app.block_bytes"),
        ({"block_bytes": 0}, "app.block_bytes"),
        ({"block_bytes": 1000, "period_s": 0}, "app.period_s"),
        ({"block_bytes": 1000, "period_s": "x"}, "app.period_s"),
        ({"block_bytes": 1000, "deadline_s": -1}, "app.deadline_s"),
        ({"block_bytes": 1000, "deadline_s": float("inf")}, "app.deadline_s"),
        ({"block_bytes": 1000, "duration_s": None}, "app.duration_s"),
        ({"block_bytes": 1000, "duration_s": 0.01}, "app.duration_s"),
    ],
)
def test_blocks_config_errors_name_the_key(bad, key):
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")) as e:
        normalise_app({"kind": "blocks", **bad})
    assert "\n" not in str(e.value)


def test_other_apps_are_unchanged():
    base = normalise_app({"kind": "bulk", "size_bytes": 1000})
    assert set(base) == {"kind", "size_bytes", "page", "trace", "streams"}
    assert (
        normalise_app({"kind": "bulk", "size_bytes": 1000, "period_s": None, "block_bytes": None})
        == base
    )
    with pytest.raises(ConfigError, match=r"app\.period_s: only used by kind=blocks"):
        normalise_app({"kind": "bulk", "period_s": 0.1})
    with pytest.raises(ConfigError, match="unknown key"):
        normalise_app({"kind": "bulk", "blocks": 1})


# ------------------------------------------------------------------ STTF
class FakePath(SimpleNamespace):
    @property
    def has_room(self):
        return self.bytes_in_flight + self.mss <= self.cwnd


def path(srtt, cwnd, inflight=0, probed=True, **kw):
    return FakePath(
        srtt=srtt if probed else 0.333,
        min_rtt=srtt if probed else math.inf,
        has_rtt_sample=probed,
        cwnd=cwnd,
        bytes_in_flight=inflight,
        packets_sent=0,
        mss=MSS,
        payload=MSS,
        **kw,
    )


def view(paths, streams=()):
    return SimpleNamespace(paths=paths, payload=MSS, streams_pending=lambda: list(streams))


def test_sttf_delivery_estimate():
    a = path(0.02, 20 * MSS, 15 * MSS)
    assert bandwidth_estimate(a) == pytest.approx(1e6)  # cwnd / srtt
    assert delivery_time(a) == pytest.approx(16 * MSS / 1e6 + 0.01)
    a.cc = SimpleNamespace(bandwidth=4e6)  # BBR's estimate wins
    assert delivery_time(a) == pytest.approx(16 * MSS / 4e6 + 0.01)
    a.cc = SimpleNamespace(bandwidth=0.0)  # no sample yet: cwnd / srtt
    assert bandwidth_estimate(a) == pytest.approx(1e6)


def test_sttf_picks_the_earliest_delivery():
    slow = path(0.05, 10 * MSS)  # 1 packet / 2e5 B/s + 25 ms = 30 ms
    fast = path(0.02, 20 * MSS, 15 * MSS)  # 16 packets / 1e6 B/s + 10 ms = 26 ms
    assert STTF().decide(view([fast, slow])) == 0
    fast.bytes_in_flight = 18 * MSS  # 29 ms, whatever the order of the paths
    assert STTF().decide(view([slow, fast])) == 1
    fast.bytes_in_flight = 20 * MSS  # 31 ms and no room: the slow path
    assert STTF().decide(view([fast, slow])) == 1
    # a queue on the fast path does not make a lower-RTT path win by itself
    fast.bytes_in_flight, fast.min_rtt = 0, 0.02
    slow.bytes_in_flight = 0
    assert STTF().decide(view([slow, fast])) == 1


def test_sttf_waits_for_a_faster_path_without_room():
    fast = path(0.02, 20 * MSS, 20 * MSS)  # 21 ms + 10 ms = 31 ms, no room
    slow = path(0.2, 10 * MSS)  # 1000 / 5e4 + 100 ms = 120 ms
    assert STTF().decide(view([fast, slow])) is None
    # an unprobed path with room is probed first; a closed path is no candidate
    assert STTF().decide(view([fast, path(0.05, 10 * MSS, probed=False)])) == 1
    fast.is_open = False
    assert STTF().decide(view([fast, slow])) == 1


# ------------------------------------------------------------------ DEMS
def test_dems_decisions():
    st = SimpleNamespace(stream_id=7, remaining=10 * MSS, size=10 * MSS)
    fast, slow = path(0.02, 10 * MSS), path(0.05, 10 * MSS)
    assert DEMS().decide(view([fast, slow], [st])) == Decision(0, 7, 0)
    fast.bytes_in_flight = 10 * MSS  # fast full: the slow path takes the last chunk
    assert DEMS().decide(view([fast, slow], [st])) == Decision(1, 7, 9 * MSS)
    st.remaining = MSS // 2  # less than a packet left: from its first byte
    assert DEMS().decide(view([fast, slow], [st])) == Decision(1, 7, 0)
    assert DEMS().decide(view([slow, fast], [st])) == Decision(0, 7, 0)  # path 0 is the slow one
    slow.bytes_in_flight = 10 * MSS
    assert DEMS().decide(view([fast, slow], [st])) is None
    # three paths: every path but the fastest sends from the back
    third = path(0.03, 10 * MSS)
    st.remaining = 10 * MSS
    assert DEMS().decide(view([fast, slow, third], [st])) == Decision(2, 7, 9 * MSS)


class FrameLog(Scheduler):
    """DEMS, recording every frame (path, stream, offset, length) it sees in
    the paths' sent-packet maps at each decision."""

    name = "frame_log"

    def __init__(self):
        self.inner = DEMS()
        self.frames = {}

    def decide(self, view):
        self.collect(view)
        return self.inner.decide(view)

    def collect(self, view):
        for p in view.paths:
            for pn, (_t, _size, sid, off, length) in p.sent.items():
                self.frames[(p.index, pn)] = (sid, off, length)


def test_dems_fast_path_from_the_start_slow_path_from_the_end():
    size = 300_000
    log = FrameLog()
    conn, app = run_app(
        two_paths(mbps=(40, 40), rtt_ms=(20, 60)), blocks(size, 0.025, deadline_s=1.0), log
    )
    log.collect(conn)
    assert app.done and app.block_outcomes()["on_time"].all()
    assert sum(p.retransmissions for p in conn.paths) == 0
    by_path = {i: [log.frames[k] for k in sorted(log.frames) if k[0] == i] for i in (0, 1)}
    assert by_path[0] and by_path[1]
    assert by_path[0][0][1] == 0  # fast: from offset 0 ...
    assert [f[1] for f in by_path[0]] == sorted(f[1] for f in by_path[0])  # ... forwards
    assert by_path[1][0][1] + by_path[1][0][2] == size  # slow: from the end ...
    assert [f[1] for f in by_path[1]] == sorted(
        (f[1] for f in by_path[1]), reverse=True
    )  # ... backwards
    # every byte sent exactly once (no retransmissions here, no redundancy)
    spans = sorted((off, off + length) for sid, off, length in log.frames.values())
    assert spans[0][0] == 0 and spans[-1][1] == size
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
    # the two ends meet: the fast path's last frame ends where the slow path's last begins
    assert max(f[1] + f[2] for f in by_path[0]) == min(f[1] for f in by_path[1])


@pytest.mark.parametrize("name", ["sttf", "dems"])
@pytest.mark.parametrize("cc", CCS)
def test_run_episode_with_blocks_finishes(name, cc):
    assert name in SCHEDULERS
    r = run_episode(
        two_paths(rtt_ms=(20, 30), cc=cc), blocks(60_000, 0.5), make_scheduler(name), seed=1
    )
    assert r.metrics["timed_out"] == 0.0 and r.metrics["stalled"] == 0.0
    assert len(r.object_times) == 20 and r.object_release_times[1] == pytest.approx(0.025)
    m = block_metrics_from_times(r.object_times, 60_000, 0.5, 0.035)
    # loose: BBR's estimates settle during this short run (cubic: every block on time)
    assert m["failure_probability"] <= (0.0 if cc == "cubic" else 0.25)
    assert r.metrics["path0_bytes"] > 0 and r.metrics["path1_bytes"] > 0
