"""envs.metrics.percentile: NumPy's default percentile, bit for bit, without its call overhead."""

from __future__ import annotations

import numpy as np
import pytest

from envs.metrics import percentile


@pytest.mark.parametrize("n", [1, 2, 3, 7, 64, 301, 4096])
def test_percentile_equals_numpys_bit_for_bit(n):
    rng = np.random.default_rng(n)
    samples = [
        rng.uniform(0, 1e6, n),
        rng.integers(0, 50, n) * 1350,  # queue sizes in whole packets: many ties
        rng.exponential(0.3, n),
        list(rng.normal(5, 3, n)),  # a list, as the object times are
        np.sort(rng.integers(-(2**52), 2**52, n))[::-1],  # int64, ranked as integers
        rng.uniform(0, 1, (n, 3)),  # two dimensions: ranked flattened, as NumPy's
    ]
    for v in samples:
        for p in (0, 1, 37.5, 50, 95, 99, 99.9, 100):
            want = float(np.percentile(v, p))
            got = percentile(v, p)
            assert got == want, (n, p, got, want)
            assert type(got) is float


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_an_episodes_queue_mean_and_max_are_numpys_of_its_samples(seed):
    """The receiver's running sum and peak give the mean and maximum NumPy gives
    over every kept sample (a sum of whole bytes below 2**53 is exact)."""
    from baselines import make_scheduler
    from envs.metrics import episode_metrics
    from envs.runner import setup_episode

    scenario = {"name": "static_4g_5g", "paths": [{"link": "4g"}, {"link": "5g"}]}
    emu, conn, app, s = setup_episode(
        scenario, {"kind": "bulk", "size_bytes": 300_000}, make_scheduler("rr"), seed
    )
    end = emu.sim.run(until=s["max_duration_s"])
    m = episode_metrics(conn, app, end)
    v = conn.oqs_series()[1].astype(np.float64)
    assert conn.oqs_stride == 1 and v.max() > 0
    assert m["oqs_mean_bytes"] == float(v.mean()) and m["oqs_max_bytes"] == float(v.max())
    assert m["oqs_p99_bytes"] == float(np.percentile(v, 99))
    emu.close()
