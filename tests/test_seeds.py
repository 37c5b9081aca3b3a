"""envs.seeds.ChildSeed against numpy.random.SeedSequence: the same pool, the
same seed words and the same PCG64 state, for entropies of one to five 32-bit
words (an integer, or a sequence of them) and spawn keys of zero to three
elements (the emulation's are (path, 0..2))."""

from __future__ import annotations

import random

import numpy as np
import pytest

from envs.emulation import Emulation
from envs.seeds import ChildSeed, generator, state_words


@pytest.mark.parametrize("seed", range(4))
def test_child_seed_is_the_seed_sequence_of_its_spawn_key(seed):
    rng = random.Random(seed)
    for _ in range(300):
        entropy = rng.choice(
            [0, 1, 10**6, rng.randrange(2**32), rng.randrange(2**64), rng.randrange(2**150)]
        )
        key = tuple(rng.randrange(rng.choice([3, 2**32, 2**45])) for _ in range(rng.randrange(4)))
        ref, mine = np.random.SeedSequence(entropy, spawn_key=key), ChildSeed(entropy, key)
        assert mine.pool == list(ref.pool)
        for n, dtype in ((1, np.uint32), (4, np.uint64), (7, "uint32"), (3, np.dtype(np.uint64))):
            a, b = ref.generate_state(n, dtype), mine.generate_state(n, dtype)
            assert a.dtype == b.dtype and np.array_equal(a, b)
        assert generator(mine).bit_generator.state == np.random.default_rng(ref).bit_generator.state
        words = ref.generate_state(4, np.uint64).tolist()
        assert mine.words64(4) == state_words(mine, 4) == state_words(ref, 4) == words


@pytest.mark.parametrize("seed", range(3))
def test_a_sequence_entropy_and_spawned_children_match_the_seed_sequence(seed):
    """Entropy given as a tuple or list of integers (their words concatenated, as
    the Reptile loop's ``(seed, cell, iteration)``), and ``spawn(n)``'s children."""
    rng = random.Random(100 + seed)
    for _ in range(200):
        entropy = [
            rng.choice([0, 1, 728, rng.randrange(2**32), rng.randrange(2**70)])
            for _ in range(rng.randrange(6))
        ]
        entropy = tuple(entropy) if rng.random() < 0.5 else entropy
        ref = np.random.SeedSequence(entropy)
        assert ChildSeed(entropy).pool == list(ref.pool)
        for i, child in enumerate(ref.spawn(3)):
            mine = ChildSeed(entropy, (i,))
            assert mine.pool == list(child.pool)
            assert mine.generate_state(2, np.uint32).tolist() == child.generate_state(2).tolist()
            assert (
                generator(mine).bit_generator.state
                == np.random.default_rng(child).bit_generator.state
            )


def test_state_words_of_anything_else_is_an_error():
    with pytest.raises(TypeError, match="seed sequence, got int"):
        state_words(7, 4)


def test_the_emulation_draws_from_the_spawned_grandchildren():
    """Path k's trace, delay and loss seeds are SeedSequence(seed).spawn(1)[0].spawn(3), in path order."""
    emu = Emulation(12345)
    root = np.random.SeedSequence(12345)
    for _ in range(3):
        expect = root.spawn(1)[0].spawn(3)
        for mine, ref in zip(emu._child(), expect, strict=True):
            assert mine.pool == list(ref.pool)


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="non-negative"):
        ChildSeed(-1)
    with pytest.raises(ValueError, match="non-negative"):
        ChildSeed((3, -1))
    with pytest.raises(ValueError, match="non-negative"):
        Emulation(-3)
    with pytest.raises(ValueError, match="uint32 or uint64"):
        ChildSeed(1).generate_state(2, np.float64)
