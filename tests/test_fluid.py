"""The exact fluid model of stream-aware scheduling (baselines.stream_aware.fluid)
against the SRPT-ECF paper's toy examples (Jonglez et al., FIT 2020, Figs. 3, 5, 6) and its
theorem. Toy units: bytes, milliseconds, bytes/ms (200 KB/s = 200 B/ms)."""

import itertools
import random
from fractions import Fraction as F

import pytest

from baselines.stream_aware import fluid
from baselines.stream_aware.fluid import (
    PathSet,
    ecf_completion,
    ecf_single,
    ecf_switch_times,
    offline_oracle,
    sa_ecf,
    srpt_ecf,
    thresholds,
)

# Figs. 3, 5, 6: path 0 = 200 KB/s, 5 ms; path 1 = 500 KB/s, 10 ms
TOY = [(200, 5), (500, 10)]


def test_fig3_single_stream_ecf():
    """10 KB alone: both paths until t = 12.86 ms, then path 0 only; done at 22.86 ms."""
    assert thresholds(TOY) == [0, 1000]  # S_lim = R_1 (D_2 - D_1)
    res = ecf_single(10_000, TOY)
    assert res.completion == [F(160, 7)]  # 22.857... ms exactly
    assert round(float(res.completion[0]), 2) == 22.86
    stop0, stop1 = ecf_switch_times(10_000, TOY)
    assert stop1 == F(90, 7) and round(float(stop1), 2) == 12.86
    # simultaneous completion at the receiver: both paths' last bytes arrive together
    assert stop0 + 5 == stop1 + 10 == F(160, 7)
    # Eqs. (1)-(3)
    assert ecf_completion(800, TOY) == 5 + F(800, 200)
    assert ecf_completion(10_000, TOY) == 10 + F(10_000 - 1000, 700)
    assert ecf_completion(1000, TOY) == 10 == 5 + F(1000, 200)  # continuous at S_lim


def test_fig5_srpt_ecf():
    """900 B and 800 B: (9, 11) ms; the small stream uses path 0 only, the big one
    path 1 until t = 1 ms then path 0 after the small one."""
    res = srpt_ecf([900, 800], TOY)
    assert res.completion == [11, 9]
    assert res.sorted_completion() == [9, 11]
    assert res.sent_by(0, stream=1) == [(0, 4)]
    assert res.sent_by(1, stream=0) == [(0, 1)]
    assert res.sent_by(0, stream=0) == [(4, 6)]
    assert res.sent_by(1, stream=1) == []
    assert res.order_changes == 0


def test_fig6_sa_ecf():
    """SA-ECF, 150-byte quantum: (11, 11.25) ms exactly, which the paper prints
    as (11, 11.2) (one decimal, half to even); the total is ECF's 11 ms."""
    res = sa_ecf([900, 800], TOY, quantum=150)
    assert res.completion == [11, F(45, 4)]
    assert [round(float(c), 1) for c in res.sorted_completion()] == [11.0, 11.2]
    # worse than SRPT-ECF for every order statistic, not better in total
    assert all(
        a <= b
        for a, b in zip(srpt_ecf([900, 800], TOY).sorted_completion(), res.sorted_completion())
    )


def test_exact_arithmetic_and_inputs():
    assert fluid.q(0.067) == F(67, 1000)
    assert fluid.q("1.05") == F(21, 20)
    res = srpt_ecf(
        [{"size_bytes": 900, "release_s": 0}, (800, 0.0, 0)],
        [{"rate": 200, "delay": 5}, (500.0, 10.0)],
    )
    assert res.completion == [11, 9] and all(isinstance(c, F) for c in res.completion)
    with pytest.raises(ValueError):
        srpt_ecf([0], TOY)
    with pytest.raises(ValueError):
        srpt_ecf([1], [(0, 1)])


def test_n_path_thresholds_and_completion():
    """Three paths: TH_j = sum_{i<j} R_i (D_j - D_i); C* matches the simulated
    single stream, whose data arrives at the same time on every path used."""
    paths = [(300, 20), (100, 2), (200, 8)]  # unsorted on purpose
    ps = PathSet(paths)
    assert ps.order == [1, 2, 0]
    assert ps.th == [0, 100 * 6, 100 * 18 + 200 * 12]
    for size in (50, 600, 601, 2000, 4200, 4201, 9000):
        res = ecf_single(size, paths)
        assert res.completion[0] == ps.completion(size)
        arrivals = {s.path: s.t1 + F(dict(enumerate(paths))[s.path][1]) for s in res.segments}
        assert len(set(arrivals.values())) == 1
        used = sum(1 for th in ps.th if size > th)
        assert len(arrivals) == used


def test_offline_srpt_ecf_is_optimal_for_every_order_statistic():
    """Theorem (Section III-B): the sorted completion times of SRPT-ECF are
    component-wise <= those of any priority order (random small instances)."""
    rng = random.Random(7)
    for _ in range(30):
        paths = [(rng.randint(1, 9) * 100, rng.randint(1, 20)) for _ in range(rng.choice([2, 3]))]
        sizes = [rng.randint(1, 40) * 100 for _ in range(rng.randint(1, 5))]
        best = srpt_ecf(sizes, paths)
        assert best.order_changes == 0
        # work conservation: every byte is sent once
        rate = dict(enumerate(F(r) for r, _ in paths))
        assert sum((s.t1 - s.t0) * rate[s.path] for s in best.segments) == sum(sizes)
        for perm in itertools.permutations(range(len(sizes))):
            other = srpt_ecf(sizes, paths, order=perm).sorted_completion()
            assert all(a <= b for a, b in zip(best.sorted_completion(), other))


def test_online_insertion_and_preemption():
    """A big stream is pre-empted by later small ones (Fig. 7's pattern): the
    small ones go first on path 0; the big one keeps path 1 while the
    cumulative size exceeds the threshold and finishes on both paths at once."""
    res = srpt_ecf([(10_000, 0), (1000, 4), (500, 9)], TOY)
    assert res.order_changes == 0
    assert res.completion == [25, 10, F(15, 2)]
    assert res.sent_by(0, stream=1) == [(4, 9)] and res.sent_by(0, stream=2) == [(9, F(23, 2))]
    assert res.sent_by(1, stream=0) == [(0, 15)]  # 15 + 10 = 25 = 20 + 5
    assert res.sent_by(0, stream=0) == [(0, 4), (F(23, 2), 20)]


def test_online_stability_random():
    """With insertion the relative order of released streams never changes."""
    rng = random.Random(3)
    for _ in range(80):
        paths = [(rng.randint(1, 9) * 100, rng.randint(1, 20)) for _ in range(rng.choice([2, 3]))]
        streams = [
            (rng.randint(1, 40) * 100, rng.randint(0, 30), rng.choice([0, 0, 1]))
            for _ in range(rng.randint(2, 7))
        ]
        assert srpt_ecf(streams, paths).order_changes == 0


def test_resorting_by_eq5_is_unstable():
    """Re-sorting every stream by Eq. 5 all the time is not the algorithm: once
    the slow path (15 ms) carries a byte of a stream that is not the last one,
    that stream's key jumps to t + 15 ms, above a larger stream's, the order
    flips back and forth and the optimal completion sequence is lost."""
    paths, sizes = [(700, 15), (400, 6)], [3300, 1300, 3300, 2500, 3400]
    ins = srpt_ecf(sizes, paths)
    res = srpt_ecf(sizes, paths, ordering="resort")
    assert ins.order_changes == 0 and res.order_changes > 10
    a, b = ins.sorted_completion(), res.sorted_completion()
    assert all(x <= y for x, y in zip(a, b)) and a[2] < b[2] and ins.mean() < res.mean()


def test_priorities_are_strict():
    """A larger stream of a more urgent priority goes first (lexicographic order)."""
    plain = srpt_ecf([(900, 0, 0), (800, 0, 0)], TOY).completion
    prio = srpt_ecf([(900, 0, 0), (800, 0, 1)], TOY).completion
    assert plain == [11, 9]
    # the 900-B stream alone on path 0 (isolated ECF time); the 800-B one takes
    # path 1 while the cumulative 1700 B exceeds TH_1 and ends with path 0
    assert prio == [ecf_completion(900, TOY), 11] == [F(19, 2), 11]


def test_offline_oracle_anticipates():
    """Section IV-B / Fig. 8: knowing the later releases, the big stream keeps
    the slow path longer; the oracle is never worse than online SRPT-ECF."""
    streams = [(2000, 0), (400, 4), (300, 6)]
    online = srpt_ecf(streams, TOY)
    best = offline_oracle(streams, TOY, "mean")
    assert best.order == (1, 2, 0)
    assert online.completion == [F(209, 14), 7, F(13, 2)]
    assert best.completion == [F(87, 7), 7, F(13, 2)]
    assert float(1 - best.completion[0] / online.completion[0]) == pytest.approx(0.167, abs=1e-3)
    rng = random.Random(11)
    for _ in range(25):
        s = [(rng.randint(1, 30) * 100, rng.randint(0, 12)) for _ in range(rng.randint(2, 4))]
        assert offline_oracle(s, TOY, "mean").mean() <= srpt_ecf(s, TOY).mean()
        assert max(offline_oracle(s, TOY, "max").completion) <= max(srpt_ecf(s, TOY).completion)
    with pytest.raises(ValueError):
        offline_oracle([(100, 0)] * 9, TOY)


def test_active_streams_and_result_helpers():
    res = srpt_ecf([(10_000, 0), (1000, 4), (500, 9)], TOY)
    assert [res.active_streams(t) for t in (0, 4, 9, 10, 14, 24, 25)] == [1, 2, 3, 3, 2, 1, 0]
    assert res.mean() == (25 + 10 + F(15, 2)) / 3
