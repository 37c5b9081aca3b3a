"""The seeds of an emulation's random streams, without NumPy's SeedSequence objects.

An emulation draws each path's randomness from grandchildren of
``numpy.random.SeedSequence(seed)`` (:class:`envs.emulation.Emulation`: the
path's child, then one grandchild each for its trace, delay and loss). Building
those objects (a root, a child per path, three grandchildren each) and a
``Generator`` from each took about 45 µs per path, a twentieth of a 2 MB
download's CPU time and more of a short one's: SeedSequence coerces and
concatenates its entropy as small arrays, in Python-level code.

:class:`ChildSeed` is the seed sequence ``SeedSequence(entropy,
spawn_key=key)`` computed directly: the same entropy pool, by NumPy's
algorithm (the ``seed_seq_fe`` mixing of M. E. O'Neill, as
``numpy/random/bit_generator.pyx`` implements it), and the same
:meth:`ChildSeed.generate_state`. A ``PCG64`` seeded with it has the state
one seeded with the SeedSequence has, so every draw is the same
(``tests/test_seeds.py`` compares both for many seeds and spawn keys). It is
registered as a NumPy ``ISeedSequence``; it cannot spawn.

32-bit arithmetic is written with explicit masks, so the ``.py`` core computes
the same words as the compiled one (where the locals are 64-bit unsigned C
integers and the masks reduce modulo 2**32).
"""

from __future__ import annotations

import numpy as np
from numpy.random.bit_generator import ISeedSequence

MASK32 = 0xFFFFFFFF
# NumPy's SeedSequence constants (bit_generator.pyx)
INIT_A = 0x43B0D7E5
MULT_A = 0x931E8875
INIT_B = 0x8B51F9DD
MULT_B = 0x58F38DED
MIX_MULT_L = 0xCA01F9DD
MIX_MULT_R = 0x4973F715
XSHIFT = 16
#: SeedSequence's default pool size [32-bit words]
POOL_SIZE = 4
#: little-endian words, as SeedSequence pairs them into 64-bit ones
_LE32, _LE64 = np.dtype("<u4"), np.dtype("<u8")


class ChildSeed:
    """``numpy.random.SeedSequence(entropy, spawn_key=spawn_key)`` for seeding a bit
    generator (module docstring). ``entropy``: a non-negative integer, or a tuple or
    list of them (their words concatenated, as SeedSequence does); ``spawn_key``: a
    tuple of them. ``SeedSequence(entropy).spawn(n)``'s children are
    ``ChildSeed(entropy, (i,))`` for ``i`` in ``range(n)``."""

    __slots__ = ("entropy", "spawn_key", "_pool")

    def __init__(self, entropy: int | tuple | list, spawn_key: tuple = ()):
        self.spawn_key = tuple([int(k) for k in spawn_key])  # (a list: no generator object)
        if isinstance(entropy, (tuple, list)):
            self.entropy = tuple([int(e) for e in entropy])
            words = []
            for e in self.entropy:
                words.extend(_words(e))
        else:
            self.entropy = int(entropy)
            words = _words(self.entropy)
        if self.spawn_key and len(words) < POOL_SIZE:
            # SeedSequence pads the run entropy to the pool size when it has a spawn key
            words.extend([0] * (POOL_SIZE - len(words)))
        for k in self.spawn_key:
            words.extend(_words(k))
        self._pool = _mixed(words)

    @property
    def pool(self) -> list:
        """The entropy pool [POOL_SIZE 32-bit words] (SeedSequence's ``pool``)."""
        return list(self._pool)

    def generate_state(self, n_words: int, dtype=np.uint32):
        """``n_words`` words of ``dtype`` (uint32 or uint64) of seed state, as
        ``SeedSequence.generate_state`` gives them."""
        if dtype is np.uint64 or dtype is np.uint32:  # PCG64 asks for np.uint64 (no dtype object)
            wide = dtype is np.uint64
        elif np.dtype(dtype) in (np.dtype(np.uint32), np.dtype(np.uint64)):
            wide = np.dtype(dtype) == np.dtype(np.uint64)
        else:
            raise ValueError("only support uint32 or uint64")
        words = self._words32(2 * int(n_words) if wide else int(n_words))
        if wide:  # pairs of words, little-endian, as SeedSequence views them
            return np.array(words, _LE32).view(_LE64).astype(np.uint64, copy=False)
        return np.array(words, np.uint32)

    def words64(self, n_words: int) -> list:
        """``generate_state(n_words, np.uint64)`` as a list of Python integers."""
        words = self._words32(2 * n_words)
        out = []
        for i in range(n_words):  # little-endian pairs, as generate_state views them
            lo = words[2 * i]
            hi = words[2 * i + 1]
            out.append(lo | (hi << 32))
        return out

    def _words32(self, n: int) -> list:
        """The first ``n`` 32-bit words of seed state (``generate_state(n, np.uint32)``)."""
        words = []
        h = INIT_B
        for i in range(n):
            p = self._pool[i % POOL_SIZE]  # (to a C integer first: C arithmetic below)
            v = (p ^ h) & MASK32
            h = (h * MULT_B) & MASK32
            v = (v * h) & MASK32
            words.append(v ^ (v >> XSHIFT))
        return words

    def __repr__(self) -> str:
        return f"ChildSeed(entropy={self.entropy}, spawn_key={self.spawn_key})"


ISeedSequence.register(ChildSeed)


def state_words(seed, n_words: int) -> list:
    """``seed.generate_state(n_words, np.uint64)`` as Python integers: what a ``PCG64``
    seeded with the seed sequence ``seed`` reads (a :class:`ChildSeed` computes them without
    a NumPy array)."""
    if isinstance(seed, ChildSeed):
        child = seed  # (typed in the compiled core: a C call)
        return child.words64(n_words)
    if not isinstance(seed, ISeedSequence):
        raise TypeError(
            f"expected a numpy.random.Generator or a seed sequence, got {type(seed).__name__}"
        )
    return [int(w) for w in seed.generate_state(n_words, np.uint64)]


def generator(seed: ChildSeed) -> np.random.Generator:
    """The ``numpy.random.default_rng`` of the seed sequence ``seed`` stands for (PCG64)."""
    return np.random.Generator(np.random.PCG64(seed))


def _words(n: int) -> list:
    """A non-negative integer as 32-bit words, least significant first (at least one)."""
    if n < 0:
        raise ValueError("expected non-negative integer")
    words = [n & MASK32]
    n >>= 32
    while n > 0:
        words.append(n & MASK32)
        n >>= 32
    return words


def _mixed(entropy: list) -> list:
    """SeedSequence's pool of the assembled ``entropy`` words (``mix_entropy``)."""
    h = INIT_A
    mixer = [0, 0, 0, 0]  # POOL_SIZE words (a C array in the compiled core)
    for i in range(POOL_SIZE):
        v = entropy[i] if i < len(entropy) else 0
        v = (v ^ h) & MASK32  # hashmix(v)
        h = (h * MULT_A) & MASK32
        v = (v * h) & MASK32
        mixer[i] = v ^ (v >> XSHIFT)
    for i_src in range(POOL_SIZE):
        for i_dst in range(POOL_SIZE):
            if i_src != i_dst:
                mixer[i_dst] = _mix_in(mixer[i_dst], mixer[i_src], h)
                h = (h * MULT_A) & MASK32
    for i_src in range(POOL_SIZE, len(entropy)):
        for i_dst in range(POOL_SIZE):
            mixer[i_dst] = _mix_in(mixer[i_dst], entropy[i_src], h)
            h = (h * MULT_A) & MASK32
    return mixer


def _mix_in(x: int, value: int, h: int) -> int:
    """``mix(x, hashmix(value))`` with hash constant ``h`` (the caller advances it)."""
    v = (value ^ h) & MASK32
    v = (v * ((h * MULT_A) & MASK32)) & MASK32
    v ^= v >> XSHIFT
    r = (MIX_MULT_L * x - MIX_MULT_R * v) & MASK32
    return r ^ (r >> XSHIFT)


__all__ = ["ChildSeed", "generator", "state_words"]
