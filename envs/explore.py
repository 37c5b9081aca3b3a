"""The exploration draws of an epsilon-greedy agent, from a NumPy Generator.

:meth:`EpsilonDraws.explore` is the random half of an epsilon-greedy choice
among ``n`` actions: with probability ``epsilon`` a uniformly random action,
else -1 (act greedily). It draws exactly what ::

    if epsilon > 0 and rng.random() < epsilon:
        return int(rng.integers(n))
    return -1

draws from the Generator ``rng``, and leaves ``rng`` in the same state, so
other users of ``rng`` are not disturbed and an agent's episodes are the
same in both builds. Through NumPy these two calls cost about 0.3 and 1.1 µs
a decision (argument parsing and a new NumPy integer); the compiled build
(``envs/explore.pxd``) calls the bit generator through the C interface that
NumPy publishes for compiled extensions (``BitGenerator.capsule``), with
NumPy's algorithms (``random_standard_uniform``; for ``integers``, Lemire's
bounded method on 32-bit draws), in a few nanoseconds.
``tests/test_explore.py`` checks the streams against NumPy's.
"""

from __future__ import annotations

#: True in the compiled module (an extension's ``__file__`` is not the ``.py``)
COMPILED = not __file__.endswith(".py")
#: the largest number of actions (NumPy's 32-bit bounded method, see the .pxd)
MAX_ACTIONS = 2**32 - 1


class EpsilonDraws:
    """Epsilon-greedy draws from the Generator ``rng`` (module docstring)."""

    def __init__(self, rng):
        self.rng = rng
        if COMPILED:
            self._bitgen = PyCapsule_GetPointer(rng.bit_generator.capsule, b"BitGenerator")  # noqa: F821

    def explore(self, epsilon: float, n: int) -> int:
        """A uniformly random action in ``[0, n)`` with probability
        ``epsilon``, else -1; ``1 <= n <=`` :data:`MAX_ACTIONS`."""
        if not 1 <= n <= MAX_ACTIONS:
            raise ValueError(
                f"explore: the number of actions must be in [1, {MAX_ACTIONS}], got {n}"
            )
        if COMPILED:
            if epsilon > 0.0 and falcon_uniform(self._bitgen) < epsilon:  # noqa: F821
                return falcon_below(self._bitgen, n)  # noqa: F821
            return -1
        rng = self.rng
        if epsilon > 0.0 and rng.random() < epsilon:
            return int(rng.integers(n))
        return -1

    def __reduce__(self):
        return EpsilonDraws, (self.rng,)


__all__ = ["EpsilonDraws", "MAX_ACTIONS"]
