"""A fast deep copy of plain config data."""

from __future__ import annotations

import copy

_ATOMS = (str, int, float, bool, type(None))


def copy_plain(value):
    """A deep copy of plain config data (dicts, lists, tuples, scalars);
    anything else goes through :func:`copy.deepcopy`. About 10x faster than
    ``deepcopy`` on a scenario, which every episode's setup normalises (it
    was a tenth of a 2 MB minRTT episode's CPU time)."""
    t = type(value)
    if t in _ATOMS:
        return value
    if t is dict:
        return {k: copy_plain(v) for k, v in value.items()}
    if t is list:
        return [copy_plain(v) for v in value]
    if t is tuple:
        return tuple(copy_plain(v) for v in value)
    return copy.deepcopy(value)


__all__ = ["copy_plain"]
