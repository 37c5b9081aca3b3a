"""Zeroed blocks of typed words that the emulator's rings take their columns from
(:mod:`envs.wire`, :mod:`envs.sent`, :mod:`envs.link`, :mod:`envs.receiver`).

An episode builds about a dozen of them. A NumPy array per block, taken by a typed view
(the buffer's format parsed, a Cython memoryview made), had cost about 4 000
instructions each: a tenth of a one-packet episode. In the compiled core (``COMPILED``)
a block is instead the next words of the current slab, one zeroed array shared by the
blocks carved from it; the ``.py`` core's blocks are lists.
"""

from __future__ import annotations

import numpy as np

#: True in the compiled module (an extension's ``__file__`` is not the ``.py``)
COMPILED = not __file__.endswith(".py")
#: words left unused after each block: blocks a power of two long handed out back to
#: back would lie 4 KiB (or a multiple) apart, so their rows would map to one L1 set
#: (:data:`envs.wire.COLUMN_PAD`, the same gap between a ring's columns)
BLOCK_PAD = 8
_pad = BLOCK_PAD  # (a C integer in the compiled module: read per block)
#: words of a slab (:func:`zeroed_floats`, :func:`zeroed_ints`): 120 KiB, under glibc's
#: threshold for serving an allocation by its own mapping (128 KiB), whose fresh pages
#: each cost a page fault (8 a one-packet episode with 256 KiB slabs, a tenth of its time)
SLAB = 15 * 1024

# the compiled core's current slabs and the next free word of each (zeroed_floats, zeroed_ints)
_floats = np.zeros(0, np.float64)
_floats_at = 0
_ints = np.zeros(0, np.int64)
_ints_at = 0


def zeroed_floats(n: int):
    """A block of ``n`` zeroed floats for a ring's columns (a ring of several slices them
    :data:`envs.wire.STRIDE` words apart). Compiled: the next ``n`` words of the current
    slab, a zeroed array of :data:`SLAB` words (a new one when it has fewer left), as a
    typed view; the next block starts :data:`BLOCK_PAD` words after it. A slab lives as
    long as a ring carved from it; no word is handed out twice. ``.py`` core: a list (its
    slices are copies)."""
    global _floats, _floats_at
    if not COMPILED:
        return _listed(0.0, n)
    if _floats_at + n > _floats.shape[0]:
        _floats = np.zeros(max(SLAB, n), np.float64)
        _floats_at = 0
    at = _floats_at
    _floats_at = at + n + _pad
    return _floats[at : at + n]


def _listed(zero, n: int):
    """The ``.py`` core's column of ``n`` zeros (a Python object to the compiled module,
    which never calls it)."""
    return [zero] * n


def zeroed_ints(n: int):
    """:func:`zeroed_floats` for integer columns (64-bit)."""
    global _ints, _ints_at
    if not COMPILED:
        return _listed(0, n)
    if _ints_at + n > _ints.shape[0]:
        _ints = np.zeros(max(SLAB, n), np.int64)
        _ints_at = 0
    at = _ints_at
    _ints_at = at + n + _pad
    return _ints[at : at + n]


__all__ = ["BLOCK_PAD", "SLAB", "zeroed_floats", "zeroed_ints"]
