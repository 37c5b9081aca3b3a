"""Applications on the emulator: bulk, web page (dependency tree, WRR), streams."""

from __future__ import annotations

import math

import pytest

from baselines import make_scheduler
from envs import ConfigError, run_episode, setup_episode
from envs.apps.pages import load_page

TWO_PATHS = {"paths": [{"link": "4g"}, {"link": "wlan"}]}


@pytest.mark.parametrize("page", ["google", "github", "stackoverflow"])
def test_web_page_downloads_every_object_after_its_parent(page):
    model = load_page(page)
    emu, conn, app, s = setup_episode(
        TWO_PATHS, {"kind": "web", "page": page}, make_scheduler("minrtt"), 1
    )
    emu.sim.run(until=60)
    assert app.done
    assert conn.delivered == model.total_bytes
    req_delay = min(p["rtt_ms"] for p in s["paths"]) / 2000
    for o in model.objects:
        assert app.complete[o.id] > 0
        if o.parent is not None:
            # requested one request delay after the parent completed, then served
            assert app.released[o.id] == pytest.approx(app.complete[o.parent] + req_delay)
            assert app.complete[o.id] > app.released[o.id]
    assert app.done_time == max(app.complete)


def test_web_metrics_report_page_and_object_times():
    r = run_episode(TWO_PATHS, {"kind": "web", "page": "github"}, make_scheduler("minrtt"), 0)
    m = r.metrics
    assert m["timed_out"] == 0
    assert len(r.object_times) == 61 and all(t > 0 for t in r.object_times)
    assert 0 < m["object_time_mean_s"] <= m["object_time_p95_s"] <= m["download_time_s"]


def test_weighted_round_robin_serves_streams_in_proportion_to_weight():
    """Two streams on one slow path, weights 3 and 1: while both are active the
    heavier one is sent three times as fast (no setup: released at t = 0)."""
    s = {"paths": [{"bandwidth_mbps": 5, "rtt_ms": 20}], "setup": "none"}
    app = {"kind": "streams", "streams": [{"release_s": 0, "size_bytes": 2_000_000}] * 2}
    emu, conn, _, _ = setup_episode(s, app, make_scheduler("minrtt"), 0)
    emu.sim.run(until=0.0)  # both streams released
    conn.send_streams[0].weight = 3.0
    emu.sim.run(until=0.2)
    a0, b0 = conn.send_streams[0].sent_offset, conn.send_streams[1].sent_offset
    emu.sim.run(until=1.2)
    a, b = conn.send_streams[0].sent_offset - a0, conn.send_streams[1].sent_offset - b0
    assert a / b == pytest.approx(3.0, rel=0.05)


def test_stream_trace_releases_at_given_times(tmp_path):
    trace = tmp_path / "streams.csv"
    trace.write_text("release_s,size_bytes,priority\n0.0,100000,1\n0.5,50000,0\n1.0,200000,2\n")
    r = run_episode(
        TWO_PATHS, {"kind": "streams", "trace": str(trace)}, make_scheduler("minrtt"), 0
    )
    assert r.metrics["timed_out"] == 0
    assert len(r.object_times) == 3
    assert all(0 < t < 1.0 for t in r.object_times)
    assert r.metrics["download_time_s"] > 1.0  # the last stream is released at 1 s


def test_inline_streams_and_bad_stream_input(tmp_path):
    r = run_episode(
        TWO_PATHS,
        {"kind": "streams", "streams": [{"release_s": 0, "size_bytes": 30000}]},
        make_scheduler("minrtt"),
        0,
    )
    assert not math.isnan(r.metrics["download_time_s"])
    bad = tmp_path / "bad.csv"
    bad.write_text("release_s,size_bytes\n0.0,abc\n")
    with pytest.raises(ConfigError, match="bad.csv:2"):
        run_episode(TWO_PATHS, {"kind": "streams", "trace": str(bad)}, make_scheduler("minrtt"), 0)
    with pytest.raises(ConfigError, match="needs app.trace"):
        run_episode(TWO_PATHS, {"kind": "streams"}, make_scheduler("minrtt"), 0)


def test_timeout_is_reported_not_hidden():
    s = {"paths": [{"bandwidth_mbps": 1, "rtt_ms": 20}], "max_duration_s": 0.5}
    r = run_episode(s, {"kind": "bulk", "size_bytes": 2_000_000}, make_scheduler("minrtt"), 0)
    assert r.metrics["timed_out"] == 1
    assert math.isnan(r.metrics["download_time_s"])
    assert r.metrics["elapsed_s"] == pytest.approx(0.5)
