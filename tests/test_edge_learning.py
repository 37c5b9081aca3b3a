"""The distributed-edge-learning workload (envs/edge_learning.py): iteration
semantics (BSP/SSP), stragglers, cross traffic, metrics, input errors,
determinism, memory, and a bandwidth schedule on a shared link."""

from __future__ import annotations

import json
import math
import tracemalloc

import numpy as np
import pytest

from baselines import make_scheduler
from envs.edge_learning import (
    DEL_DEFAULTS,
    DelResult,
    iteration_durations,
    jain_index,
    normalise_workload,
    run_del_episode,
    throughput_fluctuation,
    unfairness_std,
)
from envs.emulation import Emulation
from envs.errors import ConfigError
from envs.scheduler import FirstWithRoom

PAYLOAD, WIRE = 1290, 1350


def minrtt(_worker, _direction):
    return make_scheduler("minrtt")


def two_paths(bw=20.0, rtt=30.0, **kw) -> dict:
    return {
        "paths": [{"bandwidth_mbps": bw, "rtt_ms": rtt}, {"bandwidth_mbps": bw, "rtt_ms": rtt}],
        "cc": "lia",
        **kw,
    }


SMALL = {"workers": 4, "model_bytes": 200_000, "compute_s": 0.1, "duration_s": 10.0}


def completed_over_time(res: DelResult) -> np.ndarray:
    """[events, workers]: each worker's completed count right after every completion."""
    times = np.sort(np.concatenate(res.iteration_end_s))
    return np.stack([np.searchsorted(e, times, side="right") for e in res.iteration_end_s], axis=1)


# ---------------------------------------------------------------- iteration semantics


def test_single_worker_iteration_time_matches_the_analytic_figure():
    # one worker, no setup, no pacing, loss-free and uncongested: a 50 kB
    # message leaves in the first flight, so a transfer takes the one-way delay
    # plus the serialisation of its packets (all on one 100 Mbit/s path at
    # most, half on each at least)
    sc = two_paths(bw=100.0, rtt=20.0, setup="none", pacing=False)
    size, compute = 50_000, 1.0
    res = run_del_episode(
        sc,
        {
            "workers": 1,
            "model_bytes": size,
            "compute_s": compute,
            "iterations": 5,
            "duration_s": 60,
        },
        minrtt,
    )
    packets = math.ceil(size / PAYLOAD)
    ser = packets * WIRE * 8 / 100e6
    lo, hi = compute + 2 * (0.010 + ser / 2), compute + 2 * (0.010 + ser) + 1e-9
    times = res.iteration_times[0]
    assert times.size == 5 and res.metrics["iterations_min"] == 5
    assert np.all((times >= lo) & (times <= hi)), (times, lo, hi)
    assert res.metrics["iteration_time_mean_s"] == pytest.approx(times.mean())
    assert res.metrics["duration_s"] == pytest.approx(res.iteration_end_s[0][-1])


def test_aggregation_time_separates_an_upload_from_the_next_start():
    res = run_del_episode(
        two_paths(),
        {
            "workers": 2,
            "model_bytes": 100_000,
            "compute_s": 0.1,
            "aggregate_s": 0.3,
            "iterations": 4,
        },
        minrtt,
    )
    s, e = res.iteration_start_s, res.iteration_end_s
    np.testing.assert_array_equal(s[0], s[1])  # BSP: everybody starts together
    last = np.maximum(e[0], e[1])  # the later update of each iteration
    np.testing.assert_allclose(s[0][1:] - last[:-1], 0.3, atol=1e-12)
    # the iteration time runs start to next start; the last one to its upload
    np.testing.assert_allclose(res.iteration_times[0][:-1], np.diff(s[0]))
    assert res.iteration_times[0][-1] == pytest.approx(e[0][-1] - s[0][-1])


def test_bulk_iteration_time_is_the_transfer_time_at_capacity():
    # one worker alone on one 20 Mbit/s path with a 2-BDP buffer: the 3 MB
    # model and update each take about size / capacity (slow start costs a little)
    sc = {
        "paths": [{"bandwidth_mbps": 20, "rtt_ms": 20, "buffer_bdp": 2}],
        "cc": "cubic",
        "setup": "none",
    }
    res = run_del_episode(
        sc, {"workers": 1, "model_bytes": 3_000_000, "compute_s": 0.2, "iterations": 3}, minrtt
    )
    transfer = 3_000_000 / PAYLOAD * WIRE * 8 / 20e6
    assert res.iteration_times[0][1:] == pytest.approx(2 * transfer + 0.2, rel=0.08)


def test_upload_only_makes_the_download_instantaneous():
    both = run_del_episode(two_paths(), {**SMALL, "iterations": 3}, minrtt)
    up = run_del_episode(two_paths(), {**SMALL, "iterations": 3, "directions": ["upload"]}, minrtt)
    assert up.metrics["iteration_time_mean_s"] < 0.75 * both.metrics["iteration_time_mean_s"]
    assert up.metrics["throughput_mean_mbps"] > 0


@pytest.mark.parametrize("mode,bound", [("ssp", 2), ("ssp", 1), ("bsp", 0)])
def test_staleness_bound_limits_how_far_a_fast_worker_runs_ahead(mode, bound):
    wl = {
        **SMALL,
        "mode": mode,
        "staleness": bound,
        "stragglers": {"count": 1, "kind": "compute", "compute_s": 0.6},
    }
    res = run_del_episode(two_paths(), wl, minrtt)
    spread = completed_over_time(res)
    lead = spread.max(axis=1) - spread.min(axis=1)
    # a worker with c completed starts its next iteration only while c - min <= s
    assert lead.max() == bound + 1
    started = np.asarray([s.size for s in res.iteration_start_s])
    assert started.max() - min(e.size for e in res.iteration_end_s) <= bound + 1
    if mode == "bsp":
        for s in res.iteration_start_s[1:]:
            np.testing.assert_array_equal(s, res.iteration_start_s[0])


def test_ssp_lets_fast_workers_run_ahead_and_bsp_does_not():
    st = {"count": 1, "kind": "compute", "compute_s": 0.6}
    ssp = run_del_episode(two_paths(), {**SMALL, "mode": "ssp", "stragglers": st}, minrtt)
    bsp = run_del_episode(two_paths(), {**SMALL, "mode": "bsp", "stragglers": st}, minrtt)
    assert ssp.metrics["iterations_max"] > bsp.metrics["iterations_max"]
    assert ssp.metrics["unfairness_std"] > bsp.metrics["unfairness_std"]
    assert ssp.straggler == 3


@pytest.mark.parametrize("kind", ["bandwidth", "cross"])
def test_a_network_straggler_falls_behind_under_ssp_and_slows_everybody_under_bsp(kind):
    st = {"count": 1, "kind": kind}
    free_ssp = run_del_episode(two_paths(), {**SMALL, "mode": "ssp"}, minrtt)
    ssp = run_del_episode(two_paths(), {**SMALL, "mode": "ssp", "stragglers": st}, minrtt)
    done = [e.size for e in ssp.iteration_end_s]
    assert ssp.straggler == 3 and done[3] < min(done[:3])
    assert (
        ssp.metrics["straggler_throughput_mean_mbps"]
        < 0.8 * free_ssp.metrics["throughput_mean_mbps"]
    )
    free = run_del_episode(two_paths(), {**SMALL, "mode": "bsp"}, minrtt)
    bsp = run_del_episode(two_paths(), {**SMALL, "mode": "bsp", "stragglers": st}, minrtt)
    assert bsp.metrics["iterations_max"] < 0.7 * free.metrics["iterations_min"]


def test_cross_traffic_lowers_del_throughput_on_the_shared_path():
    wl = {**SMALL, "workers": 3}
    alone = run_del_episode(two_paths(), wl, minrtt)
    crossed = run_del_episode(two_paths(), {**wl, "cross_traffic": {"flows": 5, "path": 0}}, minrtt)
    assert crossed.metrics["cross_throughput_mbps"] > 1.0
    assert alone.metrics["cross_throughput_mbps"] == 0.0
    assert crossed.metrics["throughput_mean_mbps"] < 0.85 * alone.metrics["throughput_mean_mbps"]
    assert crossed.metrics["iterations_mean"] < alone.metrics["iterations_mean"]


def test_throughput_samples_add_up_to_the_delivered_bytes():
    wl = {**SMALL, "workers": 2, "duration_s": 4.0, "sample_period_s": 0.25}
    res = run_del_episode(two_paths(), wl, minrtt)
    assert res.throughput_mbps.shape == (2, 16)
    np.testing.assert_allclose(res.throughput_t, 0.25 * np.arange(1, 17))
    # the whole run fits in the 16 full periods: the samples' mean is the mean throughput
    assert res.throughput_mbps.mean() == pytest.approx(
        res.metrics["throughput_mean_mbps"], rel=1e-9
    )
    # the iterations' bytes are all the bytes delivered, give or take the ones in transfer at the end
    per_iter = 2 * SMALL["model_bytes"] * 8 / 1e6 / wl["duration_s"]
    done = np.asarray([e.size for e in res.iteration_end_s])
    assert np.all(res.throughput_mbps.mean(axis=1) >= done * per_iter - 1e-9)
    assert np.all(res.throughput_mbps.mean(axis=1) <= (done + 1) * per_iter + 1e-9)


# ---------------------------------------------------------------- metrics


def test_metric_functions_on_hand_made_cases():
    assert throughput_fluctuation([[1.0, 3.0, 2.0], [0.0, 0.0, 4.0]]) == pytest.approx(
        (1.5 + 2.0) / 2
    )
    assert math.isnan(throughput_fluctuation([[1.0], [2.0]]))
    assert unfairness_std([3, 5]) == pytest.approx(1.0)
    assert unfairness_std([4, 4, 4]) == 0.0
    assert jain_index([2.0, 2.0, 2.0]) == pytest.approx(1.0)
    assert jain_index([1.0, 0.0]) == pytest.approx(0.5)
    assert math.isnan(jain_index([0.0, 0.0]))
    np.testing.assert_allclose(iteration_durations([0.0, 2.0, 5.0], [1.5, 4.0]), [2.0, 3.0])
    np.testing.assert_allclose(iteration_durations([0.0, 2.0], [1.5, 4.0]), [2.0, 2.0])
    assert iteration_durations([0.0], []).size == 0


def test_metrics_follow_from_the_arrays():
    st = {"count": 1, "kind": "compute", "compute_s": 0.6}
    res = run_del_episode(two_paths(), {**SMALL, "mode": "ssp", "stragglers": st}, minrtt)
    m = res.metrics
    counts = [e.size for e in res.iteration_end_s]
    assert m["unfairness_std"] == pytest.approx(np.std(counts))
    assert m["iterations_min"] == min(counts) and m["iterations_max"] == max(counts)
    assert m["throughput_fluctuation_mbps"] == pytest.approx(
        np.mean([np.mean(np.abs(np.diff(row))) for row in res.throughput_mbps])
    )
    every = np.concatenate(res.iteration_times)
    assert m["iteration_time_p95_s"] == pytest.approx(np.percentile(every, 95))
    assert 0 < m["jain_throughput"] <= 1
    for key in (
        "iteration_time_mean_s",
        "iterations_mean",
        "throughput_mean_mbps",
        "straggler_throughput_mean_mbps",
        "duration_s",
    ):
        assert key in m


# ---------------------------------------------------------------- input


def test_defaults_live_in_one_place():
    w = normalise_workload({})
    assert w["update_bytes"] == DEL_DEFAULTS["model_bytes"]
    assert w["cross_traffic"]["directions"] == ["download", "upload"]
    assert normalise_workload({"directions": ["upload"]})["cross_traffic"]["directions"] == [
        "upload"
    ]
    assert normalise_workload({"stragglers": {"count": 2}})["stragglers"]["kind"] == "bandwidth"
    assert normalise_workload(w) == w


@pytest.mark.parametrize(
    "workload,fragment",
    [
        ({"colour": 1}, "unknown key(s) ['colour']"),
        ({"workers": 0}, "workload.workers"),
        ({"workers": 2.5}, "workload.workers"),
        ({"mode": "async"}, "workload.mode: expected one of bsp, ssp, got 'async'"),
        ({"staleness": -1}, "workload.staleness"),
        ({"model_bytes": -5}, "workload.model_bytes: expected an integer >= 1, got -5"),
        ({"update_bytes": 0}, "workload.update_bytes"),
        ({"compute_s": -0.1}, "workload.compute_s"),
        ({"duration_s": 0}, "workload.duration_s"),
        ({"iterations": 0}, "workload.iterations"),
        ({"directions": ["sideways"]}, "workload.directions"),
        ({"directions": []}, "workload.directions"),
        ({"sample_period_s": "often"}, "workload.sample_period_s"),
        ({"cross_traffic": {"flows": -1}}, "workload.cross_traffic.flows"),
        ({"cross_traffic": {"speed": 1}}, "workload.cross_traffic: unknown key(s) ['speed']"),
        (
            {"directions": ["upload"], "cross_traffic": {"directions": ["download"]}},
            "cross_traffic.directions",
        ),
        (
            {"stragglers": {"count": 7}},
            "workload.stragglers.count: expected an integer in [0, 6], got 7",
        ),
        (
            {"stragglers": {"kind": "slow"}},
            "workload.stragglers.kind: expected one of bandwidth, compute, cross",
        ),
        ({"stragglers": {"bandwidth_factor": 0}}, "workload.stragglers.bandwidth_factor"),
        (
            {"cross_traffic": {"flows": 1, "path": 2}},
            "workload.cross_traffic.path: 2 is not a path index",
        ),
        ({"cross_traffic": {"flows": 1, "cc": "vegas"}}, "vegas"),
    ],
)
def test_bad_workload_gives_one_clear_line(workload, fragment):
    with pytest.raises(ConfigError) as e:
        run_del_episode(
            two_paths(), {**workload, "duration_s": workload.get("duration_s", 1.0)}, minrtt
        )
    assert fragment in str(e.value)
    assert "\n" not in str(e.value)


def test_network_straggler_needs_constant_bandwidth_paths():
    sc = {"paths": [{"trace": "mahimahi_cellular_lte/TMobile-LTE-short.down"}]}
    with pytest.raises(ConfigError, match="constant bandwidth_mbps"):
        run_del_episode(sc, {"stragglers": {"count": 1}, "duration_s": 1.0}, minrtt)


# ---------------------------------------------------------------- determinism


def _fingerprint(res: DelResult) -> str:
    arrays = [res.throughput_mbps, res.throughput_t, *res.iteration_times, *res.iteration_start_s]
    return json.dumps(res.metrics, sort_keys=True) + "".join(a.tobytes().hex() for a in arrays)


def test_same_seed_same_run_bit_for_bit():
    sc = {
        "paths": [
            {"bandwidth_mbps": 20, "rtt_ms": 30, "rtt_std_ms": 5, "loss": 0.01},
            {"bandwidth_mbps": 20, "rtt_ms": 40, "rtt_std_ms": 8, "loss": 0.005},
        ],
        "cc": "lia",
    }
    wl = {
        **SMALL,
        "mode": "ssp",
        "cross_traffic": {"flows": 2},
        "stragglers": {"count": 1, "kind": "cross", "cross_flows": 1},
    }
    a, b = (run_del_episode(sc, wl, minrtt, seed=3) for _ in range(2))
    assert _fingerprint(a) == _fingerprint(b)
    assert _fingerprint(run_del_episode(sc, wl, minrtt, seed=4)) != _fingerprint(a)


# ---------------------------------------------------------------- memory


def test_soak_memory_stays_flat():
    # 6 workers x 200 iterations of small messages over lossy paths: traced
    # memory after iteration 20 stays within 10 % (no per-packet or
    # per-message growth: streams retired, acknowledged frames pruned, OQS capped)
    sc = {
        "paths": [
            {"bandwidth_mbps": 30, "rtt_ms": 20, "loss": 0.01},
            {"bandwidth_mbps": 30, "rtt_ms": 30, "rtt_std_ms": 3, "loss": 0.01},
        ],
        "cc": "lia",
    }
    wl = {
        "workers": 6,
        "mode": "ssp",
        "model_bytes": 30_000,
        "compute_s": 0.02,
        "iterations": 200,
        "duration_s": 10_000.0,
    }
    marks = {}

    def hook(worker, completed, _now):
        if worker == 0 and completed % 20 == 0:
            marks[completed] = tracemalloc.get_traced_memory()[0]

    tracemalloc.start()
    try:
        res = run_del_episode(sc, wl, minrtt, on_iteration=hook)
    finally:
        tracemalloc.stop()
    assert res.metrics["iterations_min"] == 200 and sorted(marks)[0] == 20 and 200 in marks
    base = marks[20]
    assert max(marks.values()) <= 1.10 * base, {k: round(v / 1e6, 3) for k, v in marks.items()}


# ---------------------------------------------------------------- shared-link schedule


EXP1_SCHEDULE = [{"at_s": 10.0, "bandwidth_mbps": 2.0}, {"at_s": 30.0, "bandwidth_mbps": 16.0}]


def test_bandwidth_schedule_on_a_shared_link():
    path = {"bandwidth_mbps": 8, "rtt_ms": 50, "shared_link": "s", "schedule": EXP1_SCHEDULE}
    emu = Emulation(0)
    emu.connect({"paths": [path]}, FirstWithRoom())
    emu.connect({"paths": [path]}, FirstWithRoom())  # the same schedule
    emu.connect(
        {"paths": [dict(path, schedule=[{"at_s": 5.0, "rtt_ms": 80}])]}, FirstWithRoom()
    )  # none
    link = emu.shared_links["s"]
    for t0, t1, mbps in ((0, 10, 8), (10, 30, 2), (30, 40, 16)):
        assert link.offered_bytes(t0, t1) == pytest.approx(mbps * 1e6 / 8 * (t1 - t0))
    other = dict(path, schedule=[{"at_s": 10.0, "bandwidth_mbps": 4.0}])
    with pytest.raises(ConfigError, match="same bandwidth schedule or none") as e:
        emu.connect({"paths": [other]}, FirstWithRoom())
    assert "\n" not in str(e.value)
    fresh = Emulation(0)
    fresh.connect({"paths": [dict(path, schedule=None)]}, FirstWithRoom())
    with pytest.raises(ConfigError, match="was built with no bandwidth_mbps schedule"):
        fresh.connect({"paths": [path]}, FirstWithRoom())


def test_del_follows_a_scheduled_shared_path():
    # Exp. 1 shape: path 0 fixed 8 Mbit/s, path 1 8 -> 2 (at 10 s) -> 16 (at 30 s), three workers share both
    sc = {
        "paths": [
            {"bandwidth_mbps": 8, "rtt_ms": 50},
            {"bandwidth_mbps": 8, "rtt_ms": 50, "schedule": EXP1_SCHEDULE},
        ],
        "cc": "lia",
    }
    res = run_del_episode(
        sc,
        {"workers": 3, "model_bytes": 300_000, "compute_s": 0.1, "duration_s": 40.0, "mode": "ssp"},
        minrtt,
    )
    total = res.throughput_mbps.sum(axis=0)
    t = res.throughput_t

    def mean(a, b):
        return total[(t > a) & (t <= b)].mean()

    low, high = mean(12, 30), mean(32, 40)
    assert low < 2 * (8 + 2) and high > low * 1.4, (low, high)
