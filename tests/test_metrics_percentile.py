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
    ]
    for v in samples:
        for p in (0, 1, 37.5, 50, 95, 99, 99.9, 100):
            want = float(np.percentile(v, p))
            got = percentile(v, p)
            assert got == want, (n, p, got, want)
            assert type(got) is float
