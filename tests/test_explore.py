"""Epsilon-greedy draws (envs/explore.py): the compiled build calls NumPy's
bit generator through its C interface; both builds must draw exactly what
``rng.random()`` and ``rng.integers(n)`` draw, and leave the Generator where
those calls leave it."""

from __future__ import annotations

import importlib.util
import pickle
from pathlib import Path

import numpy as np
import pytest

import envs.explore as explore
from envs.explore import MAX_ACTIONS, EpsilonDraws

SOURCE = Path(explore.__file__).with_name("explore.py")


def _source_module():
    """envs/explore.py loaded from its source (the .py build)."""
    spec = importlib.util.spec_from_file_location("explore_from_source", SOURCE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _numpy_explore(rng, eps, n):
    if eps > 0.0 and rng.random() < eps:
        return int(rng.integers(n))
    return -1


BUILDS = [pytest.param(EpsilonDraws, id="installed"), pytest.param(None, id="source")]


@pytest.mark.parametrize("build", BUILDS)
@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 9, 64, 1_000_003, MAX_ACTIONS])
@pytest.mark.parametrize("eps", [0.0, 0.3, 1.0])
def test_draws_are_numpys_and_leave_the_generator_where_numpy_would(build, n, eps):
    cls = build or _source_module().EpsilonDraws
    ours, ref = np.random.default_rng(n), np.random.default_rng(n)
    draws = cls(ours)
    # a mix with the Generator's own calls, so a shared state (PCG64's
    # buffered 32-bit half) must be honoured both ways
    got, want = [], []
    for k in range(1500):
        got.append(draws.explore(eps, n))
        want.append(_numpy_explore(ref, eps, n))
        if k % 97 == 0:
            got.append(int(ours.integers(7)))
            want.append(int(ref.integers(7)))
    assert got == want
    assert ours.random() == ref.random()
    if eps == 0.3 and n > 1:
        picks = [g for g in got if g >= 0]
        assert 0 < len(picks) < len(got) and len(set(picks)) > 1


@pytest.mark.parametrize("n", [0, -1, MAX_ACTIONS + 1])
def test_an_impossible_number_of_actions_is_refused(n):
    with pytest.raises(ValueError, match="number of actions"):
        EpsilonDraws(np.random.default_rng(0)).explore(0.5, n)


def test_draws_pickle_with_their_generator_state():
    d = EpsilonDraws(np.random.default_rng(3))
    d.explore(1.0, 4)
    e = pickle.loads(pickle.dumps(d))
    assert [d.explore(0.5, 4) for _ in range(50)] == [e.explore(0.5, 4) for _ in range(50)]
