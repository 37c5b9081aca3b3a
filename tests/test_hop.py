"""HOP (Chiariotti et al., IEEE/ACM ToN 2021): the deadline block transport, JUMP/LEAP/FLIP, SKIP and the references."""

import itertools
import math

import numpy as np
import pytest

from baselines.hop.hop import HOP
from baselines.hop.oracle import gaussian_bound, no_queueing_bound
from baselines.hop.schedule import (
    delivered_distribution,
    failure_probability,
    flip,
    greedy_order,
    jump,
    leap,
    path_cap,
)
from baselines.hop.skip import SkipEstimator, truncated_mean
from envs.deadline import BlockPlan, BlockScheduler, normalise_block, run_block_episode
from envs.errors import ConfigError


def synthetic_path(mean_mbps, rtt_ms=25, std_mbps=8, duration_s=30):
    return {
        "synthetic": {
            "kind": "gaussian_rate",
            "mean_mbps": mean_mbps,
            "std_mbps": std_mbps,
            "step_s": 0.025,
            "duration_s": duration_s,
            "dist": "truncnorm",
        },
        "rtt_ms": rtt_ms,
        "buffer_packets": 1000,
    }


BALANCED = {"paths": [synthetic_path(40), synthetic_path(40)]}
CONSTANT = {
    "paths": [
        {"bandwidth_mbps": 40, "rtt_ms": 25, "buffer_packets": 1000},
        {"bandwidth_mbps": 40, "rtt_ms": 25, "buffer_packets": 1000},
    ]
}


# ---------------------------------------------------------------- the schedule math


def brute_force_failure(lams, counts, k, samples):
    """P(on-time total < k) by enumerating each path's first late packet."""
    total = 0.0
    ranges = [range(s + 1) for s in counts]
    for d in itertools.product(*ranges):
        p = 1.0
        for lam, s, di in zip(lams, counts, d):
            p *= delivered_distribution(lam, s)[di]
        if sum(d) < k:
            total += p
    return total


def random_lams(rng, m, n):
    return [np.sort(rng.uniform(0, 1, n) ** rng.uniform(1, 6)) for _ in range(m)]


def test_the_failure_probability_is_exact_against_enumeration():
    rng = np.random.default_rng(0)
    for _ in range(30):
        m = int(rng.integers(1, 4))
        lams = random_lams(rng, m, 6)
        counts = [int(c) for c in rng.integers(0, 7, m)]
        k = int(rng.integers(1, 8))
        assert failure_probability(lams, counts, k) == pytest.approx(
            brute_force_failure(lams, counts, k, None), abs=1e-12
        )
        for s in counts:
            assert delivered_distribution(lams[0], s).sum() == pytest.approx(1.0)


def test_the_failure_probability_matches_a_fifo_monte_carlo():
    """Per path one capacity draw decides how many of the burst make it (FIFO):
    lambda(j) = P(capacity < j); the exact P_e equals the simulated one."""
    rng = np.random.default_rng(1)
    mus, sds, counts, k = [20.0, 12.0], [4.0, 3.0], [25, 16], 30
    from statistics import NormalDist

    lams = [
        np.array([NormalDist(mu, sd).cdf(j) for j in range(1, s + 1)])
        for mu, sd, s in zip(mus, sds, counts)
    ]
    caps = np.stack([rng.normal(mu, sd, 200_000) for mu, sd in zip(mus, sds)])
    on_time = sum(np.clip(np.floor(c), 0, s) for c, s in zip(caps, counts))
    assert failure_probability(lams, counts, k) == pytest.approx(np.mean(on_time < k), abs=3e-3)


def naive_jump(lams, k, p_thr, caps, min_per_path, eps):
    """JUMP as the paper states it: one packet at a time until P_e meets the target."""
    order = greedy_order(
        lams, [min(c, k) for c in caps], [min(min_per_path, min(c, k)) for c in caps], eps
    )
    for s in order:
        if failure_probability(lams, s, k) <= 1 - p_thr:
            return s, True
    return order[-1], False


def test_jump_by_bisection_is_the_greedy_schedule():
    rng = np.random.default_rng(2)
    for _ in range(40):
        m = int(rng.integers(1, 4))
        lams = random_lams(rng, m, 40)
        k = int(rng.integers(1, 30))
        caps = [int(c) for c in rng.integers(5, 41, m)]
        counts, pe, ok = jump(lams, k, 0.9, caps, min_per_path=3, eps=1e-3)
        want, want_ok = naive_jump(lams, k, 0.9, caps, 3, 1e-3)
        assert (tuple(counts), ok) == (tuple(want), want_ok)
        if ok:
            assert pe <= 0.1 + 1e-12


def test_jump_prefers_the_reliable_path_and_ties_go_to_the_least_used():
    good = np.linspace(0.0, 0.01, 50)
    bad = np.linspace(0.5, 0.9, 50)
    counts, _, ok = jump([good, bad], 20, 0.98, [50, 50], min_per_path=0)
    assert ok and tuple(counts) == (20, 0)
    same = np.zeros(50)
    order = greedy_order([same, same], [50, 50], [0, 0])
    assert order[1] == (1, 0) and order[2] == (1, 1) and order[4] == (2, 2)


def test_an_infeasible_block_gets_the_maximal_schedule_flagged():
    lam = np.full(30, 0.5)
    counts, pe, ok = jump([lam, lam], 40, 0.98, [30, 30])
    assert not ok and tuple(counts) == (30, 30) and pe > 0.02


def test_leap_finds_the_largest_feasible_block_and_flip_the_shortest_deadline():
    from statistics import NormalDist

    lams = [np.array([NormalDist(60, 8).cdf(j) for j in range(1, 101)])] * 2
    k, counts, pe = leap(lams, 0.98, [100, 100], k_max=200, min_per_path=0)
    assert jump(lams, k, 0.98, [100, 100], 0)[2] and not jump(lams, k + 1, 0.98, [100, 100], 0)[2]
    assert pe <= 0.02 and 60 < k < 120

    def lams_at(T):  # capacity 2 packets per ms per path, +- 20 %
        return [
            np.array([NormalDist(2 * T * 1e3, 0.4 * T * 1e3).cdf(j) for j in range(1, 201)])
        ] * 2

    T, counts, pe, ok = flip(
        lams_at, 60, 0.98, lambda T: [200, 200], t_max=0.2, quantum=0.001, min_per_path=0
    )
    assert ok and pe <= 0.02
    assert not jump(lams_at(T - 0.001), 60, 0.98, [200, 200], 0)[2]


# ---------------------------------------------------------------- SKIP


def test_skip_measures_the_capacity_of_a_constant_path_from_ack_spacing():
    est = SkipEstimator(1500)
    rate = 5e6  # bytes/s (40 Mb/s)
    pn = 0
    for burst in range(40):
        t0 = burst * 0.025
        est.on_sent(t0, pn, 60)
        for j in range(60):  # served back to back, acked one RTT later
            est.on_ack(pn + j, t0, t0 + 0.025 + (j + 1) * 1500 / rate)
        pn += 60
    est.forecast(1.0, 0.02)
    assert est.rate == pytest.approx(rate, rel=0.02)
    assert est.min_rtt == pytest.approx(0.025 + 1500 / rate)


def test_skip_resets_to_the_outage_rate_and_follows_a_down_step():
    est = SkipEstimator(1500)
    for _ in range(50):
        est.step(5e6)
    for _ in range(3):
        est.step(0.0)
    assert est.x == est.outage_rate and est.p_out > 0
    est2 = SkipEstimator(1500)
    for _ in range(50):
        est2.step(5e6)
    for _ in range(5):
        est2.step(1e6)
    assert est2.x == pytest.approx(1e6, rel=0.05)  # a long-standing step: reset to the recent mean


def _joint_state(rho_target: float):
    """A calibrated SKIP with two unacknowledged bursts and a fixed error history."""
    est = SkipEstimator(1500, calibrate=True, queue="joint")
    rng = np.random.default_rng(0)
    real = [5e6]
    for _ in range(399):  # an AR(1) history of realised rates with lag-one correlation ~rho_target
        real.append(
            5e6 + rho_target * (real[-1] - 5e6) + math.sqrt(1 - rho_target**2) * rng.normal(0, 1e6)
        )
    est._errors.extend((5e6, r) for r in real)
    est.has_sample, est.min_rtt, est.last_ack_time = True, 0.025, 0.100
    est.unacked.extend([(pn, 0.090) for pn in range(40)] + [(pn, 0.110) for pn in range(40, 100)])
    return est


@pytest.mark.parametrize("rho_target", [0.0, 0.9])
def test_the_joint_lateness_is_the_bivariate_model_it_states(rho_target):
    """Gauss-Hermite quadrature against a Monte Carlo of the stated model:
    past and window rates jointly Gaussian with the calibrated mean, spread
    and the measured lag-one correlation; backlog max_b (m_b L - C_p dt_b)^+."""
    est = _joint_state(rho_target)
    now, T, n = 0.115, 0.035, 120
    rho = est.rate_correlation()
    assert rho == pytest.approx(rho_target, abs=0.12)
    mu, sd = est._recalibrated()
    lam = est.lateness(now, T, n)
    rng = np.random.default_rng(1)
    z1, z2 = rng.standard_normal((2, 400_000))
    c_p = np.maximum(mu + sd * z1, 0.0)
    c_w = mu + sd * (rho * z1 + math.sqrt(1 - rho * rho) * z2)
    window = T - 0.0125
    t_dep = 0.100 - 0.025
    backlog = np.maximum.reduce(
        [
            np.zeros_like(c_p),
            100 * 1500 - c_p * (now - max(0.090, t_dep)),
            60 * 1500 - c_p * (now - 0.110),
        ]
    )
    j = np.arange(1, n + 1)
    mc = np.array([np.mean(c_w * window < backlog + jj * 1500) for jj in j])
    assert np.max(np.abs(lam - mc)) < 0.01
    assert np.all(np.diff(lam) >= -1e-12)


def test_lateness_of_a_packet_does_not_depend_on_the_packets_after_it():
    """What lets HOP reuse the vector its lateness cap read as every
    schedule's lateness (HOP._lams): lambda(j) for n packets is the prefix of
    lambda(j) for more."""
    for queue in ("joint", "shared"):
        est = _joint_state(0.3)
        est.queue = queue
        long, short = est.lateness(0.115, 0.035, 150), est.lateness(0.115, 0.035, 40)
        assert np.array_equal(long[:40], short)


def test_the_lateness_cap_counts_the_packets_at_most_that_late():
    class Stub:
        has_sample, min_rtt, rate, rate_std = True, 0.025, 5e6, 1e6

        def lateness(self, now, deadline, n):
            return np.linspace(0.0, 1.0, n)

    hop = HOP(cap="lateness", lateness_cap=0.25)
    hop.estimators = [Stub(), Stub()]
    n = path_cap(5e6 + 3 * 1e6, 0.035, 0.0125, 1500)  # what rate + 3 std carries in the window
    assert n == 120
    assert (
        hop._caps(0.0, 0.035, 1500, 10_000)
        == [int(np.count_nonzero(np.linspace(0.0, 1.0, n) <= 0.25))] * 2
    )
    for kw in (
        {"queue": "joint"},
        {"queue": "joint", "calibrate": True, "estimator": "oracle"},
        {"lateness_cap": 1.0},
        {"queue": "fifo"},
    ):
        with pytest.raises(ConfigError):
            HOP(**kw)


def test_truncated_mean():
    assert truncated_mean(0.0, 1.0, -math.inf, math.inf) == pytest.approx(0.0)
    assert truncated_mean(0.0, 1.0, 0.0, math.inf) == pytest.approx(math.sqrt(2 / math.pi))
    assert truncated_mean(5.0, 1.0, 0.0, 1.0) < 1.0


@pytest.mark.parametrize("seed", [3, 4])
def test_the_calibrated_forecast_is_calibrated(seed):
    """The issue's bar: blocks whose realised window capacity falls below the
    forecast's 2 % quantile: within 1-4 % (per path, after a warm-up);
    the paper's formula misses it by far (its spread is too small)."""

    def below_q02(hop):
        r = run_block_episode(
            {"paths": [synthetic_path(32), synthetic_path(48)]},
            {"block_bytes": 100_000, "duration_s": 30},
            hop,
            seed=seed,
        )
        f = np.array(hop.forecasts)[40:]
        return np.mean(r.window_capacity[40:] < f[:, :, 0] - 2.054 * f[:, :, 1], axis=0)

    ours = below_q02(HOP(calibrate=True, cap="backlog"))
    assert np.all((ours >= 0.01) & (ours <= 0.04)), ours
    assert np.all(below_q02(HOP()) > 0.06)


# ---------------------------------------------------------------- the block transport


class Fixed(BlockScheduler):
    name = "fixed"

    def __init__(self, counts, k=None):
        self.counts, self.k_override = counts, k
        self.acks = []

    def plan(self, session, block, k):
        return BlockPlan(k if self.k_override is None else self.k_override, self.counts)

    def on_ack(self, path, pn, sent_time, now):
        self.acks.append((path, pn, sent_time, now))


def test_blocks_within_capacity_all_decode_and_too_large_ones_all_fail():
    small = run_block_episode(CONSTANT, {"block_bytes": 30_000, "duration_s": 1.0}, Fixed((10, 10)))
    assert small.metrics["failure_probability"] == 0.0 and small.metrics["blocks"] == 40
    assert small.metrics["goodput_mbps"] == pytest.approx(30_000 * 8 / 0.025 / 1e6)
    assert np.all(small.decode_s < 0.035)
    # 40 Mb/s per path serves 75 packets in the 22.5 ms window: 100 per path cannot all make it
    big = run_block_episode(
        CONSTANT, {"block_bytes": 300_000, "duration_s": 0.5}, Fixed((100, 100))
    )
    assert big.metrics["failure_probability"] == 1.0
    assert np.all(big.on_time <= 2 * 75)


def test_every_packet_is_acknowledged_in_order_per_path():
    sched = Fixed((5, 3))
    run_block_episode(CONSTANT, {"block_bytes": 12_000, "duration_s": 0.25}, sched)
    assert len(sched.acks) == 10 * 8
    for path in (0, 1):
        pns = [a[1] for a in sched.acks if a[0] == path]
        times = [a[3] for a in sched.acks if a[0] == path]
        assert pns == sorted(pns) and times == sorted(times)


def test_the_window_capacity_is_the_trace_ground_truth():
    r = run_block_episode(CONSTANT, {"block_bytes": 10_000, "duration_s": 0.25}, Fixed((7, 7)))
    assert np.allclose(r.window_capacity, 5e6 * (0.035 - 0.0125))


def test_block_config_errors_are_one_line():
    for bad, key in (
        ({"block_bytes": 0}, "block_bytes"),
        ({"deadline_s": -1}, "deadline_s"),
        ({"p_thr": 1.0}, "p_thr"),
        ({"header_bytes": 1500}, "header_bytes"),
        ({"nope": 1}, "unknown"),
        ({"period_s": "x"}, "period_s"),
    ):
        with pytest.raises(ConfigError, match=key) as e:
            normalise_block(bad)
        assert "\n" not in str(e.value)
    assert (
        normalise_block({"deadline_s": None, "block_bytes": 1000})["deadline_s"]
        == normalise_block({})["deadline_s"]
    )
    with pytest.raises(ValueError, match="counts"):
        run_block_episode(CONSTANT, {"block_bytes": 10_000, "duration_s": 0.1}, Fixed((1,)))
    for kw in ({"mode": "fast"}, {"estimator": "psychic"}, {"cap": "none"}, {"p_thr": 2}):
        with pytest.raises(ConfigError):
            HOP(**kw)


# ---------------------------------------------------------------- HOP end to end


def test_hop_runs_are_reproducible_from_the_seed():
    a = run_block_episode(
        BALANCED,
        {"block_bytes": 120_000, "duration_s": 2},
        HOP(calibrate=True, cap="backlog"),
        seed=5,
    )
    b = run_block_episode(
        BALANCED,
        {"block_bytes": 120_000, "duration_s": 2},
        HOP(calibrate=True, cap="backlog"),
        seed=5,
    )
    assert a.metrics == b.metrics and np.array_equal(a.sent, b.sent)


def test_ideal_jump_meets_the_target_where_the_bound_allows_and_ours_beats_the_papers_design():
    block = {"block_bytes": 120_000, "duration_s": 15}
    ideal = run_block_episode(BALANCED, block, HOP(estimator="oracle", cap="backlog"), seed=1)
    assert ideal.metrics["failure_probability"] <= 0.03
    ours = run_block_episode(BALANCED, block, HOP(calibrate=True, cap="backlog"), seed=1)
    paper = run_block_episode(BALANCED, block, HOP(), seed=1)
    assert ours.metrics["failure_probability"] < 0.5 * paper.metrics["failure_probability"]
    bound = no_queueing_bound(ideal.window_capacity, 0.98, 0.025)
    assert bound["goodput_mbps"] == pytest.approx(51, rel=0.06)


def test_the_joint_queue_model_and_the_lateness_cap_close_most_of_the_gap_to_ideal_jump():
    """At 140 kB on the balanced case (redraws once per RTT), serving the
    queue at the window's capacity (session 17's design) fails 2.5x as often
    as ideal JUMP; the joint model with the lateness cap comes within a
    few tenths of a percent of it and sends far less redundancy."""
    block = {"block_bytes": 140_000, "duration_s": 15}
    runs = {
        name: run_block_episode(BALANCED, block, HOP(**kw), seed=1)
        for name, kw in (
            ("backlog", {"calibrate": True, "cap": "backlog"}),
            ("ours", {"calibrate": True, "cap": "lateness", "queue": "joint"}),
            ("ideal", {"estimator": "oracle", "cap": "backlog"}),
        )
    }
    fail = {n: r.metrics["failure_probability"] for n, r in runs.items()}
    assert fail["ours"] < 0.7 * fail["backlog"], fail
    assert fail["ours"] < fail["ideal"] + 0.01, fail
    assert runs["ours"].metrics["redundancy"] < 0.6 * runs["backlog"].metrics["redundancy"]


def test_the_gaussian_bound_of_the_balanced_case_is_about_51_mbps():
    b = gaussian_bound([40, 40], [8, 8], [0.0125, 0.0125], 0.035, 0.98, 0.025)
    assert b["goodput_mbps"] == pytest.approx(51.1, abs=0.3)


def test_leap_and_flip_choose_their_block_size_and_deadline():
    leap_run = run_block_episode(
        BALANCED,
        {"block_bytes": 100_000, "duration_s": 3},
        HOP(mode="leap", calibrate=True, cap="backlog"),
        seed=2,
    )
    assert len(set(leap_run.k[10:].tolist())) > 3  # the size follows the forecast
    flip_run = run_block_episode(
        BALANCED,
        {"block_bytes": 60_000, "duration_s": 3},
        HOP(mode="flip", calibrate=True, cap="backlog"),
        seed=2,
    )
    assert (
        flip_run.deadline_s[10:].mean() < 0.035
    )  # a small block needs less than the contract's 35 ms
