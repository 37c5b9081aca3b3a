"""How many generated inputs the fuzz tests run.

``FALCON_FUZZ_EXAMPLES`` (default 800) is the base count each fuzz test
scales from. Every fuzz test runs twice: at 1x in the default suite and at
10x as a ``slow`` test (``make test-all``), on another seeded stream.
"""

from __future__ import annotations

import os

import pytest

BASE = int(os.environ.get("FALCON_FUZZ_EXAMPLES", "800"))
SLOW_FACTOR = 10
#: ``@pytest.mark.parametrize("scale", SCALES)``: 1 by default, 10 in the slow run
SCALES = [
    pytest.param(1, id="x1"),
    pytest.param(SLOW_FACTOR, id=f"x{SLOW_FACTOR}", marks=pytest.mark.slow),
]


def examples(share: float, scale: int) -> int:
    """``share`` of the base count, times ``scale`` (at least 1)."""
    return max(1, int(BASE * share) * int(scale))
