"""The emulator's random draws (envs.link): drawn in parts of a block as needed,
they are the numbers whole blocks drawn at once give, also when the delay
deviation changes in the middle of a block (its remaining draws are drawn
and dropped, as dropping a whole block did). The compiled core draws one number
at a time through the Generator's bit generator: the same numbers, and none
left over."""

from __future__ import annotations

import numpy as np
import pytest

from envs import link
from envs.link import _BLOCK, _SUB, DelayModel, LossModel
from envs.seeds import ChildSeed


def _whole_blocks(seed: int, plan: list[tuple[float, int]]) -> list[float]:
    """Gamma factors of a reference that draws whole blocks of _BLOCK at once and drops
    the rest of its block at each change of deviation: ``plan`` is (cv, samples) per stretch."""
    rng, out = np.random.default_rng(seed), []
    for cv, n in plan:
        k = 1.0 / (cv * cv)
        while n > 0:
            block = rng.gamma(k, 1.0 / k, _BLOCK)
            take = min(n, _BLOCK)
            out.extend(block[:take].tolist())
            n -= take
    return out


def test_delay_draws_equal_whole_blocks_across_changes_of_deviation():
    assert _BLOCK % _SUB == 0 and _SUB < _BLOCK
    # stretches that end inside a part, on a part's edge, past a block, and one with no draw
    plan = [(0.3, 700), (0.05, _SUB), (0.05, 0), (1.2, _BLOCK + 3), (0.3, 1), (0.7, 2 * _BLOCK)]
    delay = DelayModel(0.04, plan[0][0], np.random.default_rng(11))
    got = []
    for cv, n in plan:
        delay.set(0.04, cv)
        got.extend(delay.sample_rtt(0.0) for _ in range(n))
    assert got == [0.04 * g for g in _whole_blocks(11, plan)]


def test_an_unchanged_deviation_keeps_the_block():
    a = DelayModel(0.02, 0.4, np.random.default_rng(5))
    b = DelayModel(0.02, 0.4, np.random.default_rng(5))
    xs = [a.sample_rtt(0.0) for _ in range(3 * _SUB // 2)]
    b.sample_rtt(0.0)
    b.set(0.02, 0.4)  # the same values: nothing drawn or dropped
    assert [b.sample_rtt(0.0) for _ in range(len(xs) - 1)] == xs[1:]


def test_loss_draws_equal_one_stream_of_uniforms():
    p = 0.3
    loss = LossModel(p, np.random.default_rng(8))
    u = np.random.default_rng(8).random(2 * _BLOCK + 5)
    assert [loss.lost(0.0) for _ in range(len(u))] == (u < p).tolist()


@pytest.mark.skipif(link.__file__.endswith(".py"), reason="the .py core draws parts of blocks")
def test_the_compiled_core_draws_only_the_numbers_it_uses():
    # one number at a time through the bit generator: after n samples the Generator
    # stands where n draws leave it (the .py core's part would have drawn 512)
    delay_rng, loss_rng = np.random.default_rng(21), np.random.default_rng(22)
    delay, loss = DelayModel(0.03, 0.2, delay_rng), LossModel(0.1, loss_rng)
    n = _SUB // 2 + 7
    xs = [delay.sample_rtt(0.0) for _ in range(n)]
    losses = [loss.lost(0.0) for _ in range(n)]
    ref_delay, ref_loss = np.random.default_rng(21), np.random.default_rng(22)
    k = 1.0 / (0.2 * 0.2)
    assert xs == [0.03 * g for g in ref_delay.gamma(k, 1.0 / k, n).tolist()]
    assert losses == (ref_loss.random(n) < 0.1).tolist()
    assert delay_rng.random() == ref_delay.random()
    assert loss_rng.random() == ref_loss.random()


@pytest.mark.parametrize("entropy", [0, 7, 2**40 + 3, 2**70 + 11])
def test_a_seed_sequence_draws_what_its_pcg64_generator_draws(entropy):
    # a model given a seed sequence draws numpy.random.Generator(PCG64(seq))'s numbers
    # (the compiled core from a PCG64 of its own, envs/link_draws.h), across changes of
    # deviation (shapes above and below 1: both of NumPy's Gamma methods) and both losses
    for key in [(0, 1), (3, 2), ()]:
        seq, child = np.random.SeedSequence(entropy, spawn_key=key), ChildSeed(entropy, key)
        plan = [(0.3, 700), (1.7, 900), (0.02, _BLOCK + 5), (0.6, 3)]
        got, want = [], []
        for source, out in ((child, got), (np.random.Generator(np.random.PCG64(seq)), want)):
            delay = DelayModel(0.05, plan[0][0], source)
            for cv, n in plan:
                delay.set(0.05, cv)
                out.extend(delay.sample_rtt(0.0) for _ in range(n))
        assert got == want
        ge = {"p_gb": 0.05, "p_bg": 0.3, "loss_good": 0.01, "loss_bad": 0.5}
        for p, model in ((0.2, None), (0.0, ge)):
            mine = LossModel(p, ChildSeed(entropy, key), ge=model)
            ref = LossModel(p, np.random.Generator(np.random.PCG64(seq)), ge=model)
            assert [mine.lost(0.0) for _ in range(3000)] == [ref.lost(0.0) for _ in range(3000)]


def test_a_model_needs_a_generator_or_a_seed_sequence():
    with pytest.raises(TypeError, match="Generator or a seed sequence, got int"):
        DelayModel(0.05, 0.1, 12)
