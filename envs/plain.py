"""Plain config data: a fast deep copy, mappings from dicts or OmegaConf
nodes, and defaults merged with what a user gave."""

from __future__ import annotations

import copy
import pickle
from collections.abc import Mapping

from envs.errors import ConfigError

#: the pickle protocol of :class:`PlainMemo`'s keys (fixed: a key must not change within a run)
PICKLE_PROTOCOL = 5


def copy_plain(value):
    """A deep copy of plain config data (dicts, lists, tuples, scalars);
    anything else goes through :func:`copy.deepcopy`. About 10x faster than
    ``deepcopy`` on a scenario, which every episode's setup normalises (it
    was a tenth of a 2 MB minRTT episode's CPU time)."""
    t = type(value)
    # identity tests, most frequent first (membership in a tuple of the atom types compared
    # a float's type with each in turn); compiled, the recursive calls are C calls
    if t is str or t is float or t is int or t is bool or value is None:
        return value
    if t is dict:
        return {k: copy_plain(v) for k, v in value.items()}
    if t is list:
        return [copy_plain(v) for v in value]
    if t is tuple:
        return tuple([copy_plain(v) for v in value])
    return copy.deepcopy(value)


#: :class:`PlainMemo`'s mark of an input seen once (its result not kept yet)
_SEEN_ONCE = object()


class PlainMemo:
    """Results of a function of plain config data (a dict of dicts, lists and
    scalars), kept for an input seen twice lately; a caller gets its own
    :func:`copy_plain` of a kept result. For the config normalisers, pure
    functions of their input and of their module's constant tables: a run's
    episodes normalise the same scenario again and again (a kept answer costs
    its key and a copy, about a third of normalising a two-path scenario). An
    input met only once is remembered by its key alone, so no result is kept
    for the cyclic collector to walk.

    The key is the input's pickle: two inputs have equal keys only if they are
    rebuilt alike, types included (``1``, ``1.0`` and ``True`` differ, and so do
    ``0.0`` and ``-0.0``). An input that is not a dict or cannot be pickled, and
    an input that raises, is never kept. At most ``size`` inputs are
    remembered; the oldest goes first."""

    __slots__ = ("function", "size", "_kept")

    def __init__(self, function, size: int = 64):
        self.function = function
        self.size = int(size)
        self._kept: dict = {}

    def __call__(self, value):
        if type(value) is not dict:
            return self.function(value)
        try:
            key = pickle.dumps(value, PICKLE_PROTOCOL)
        except Exception:  # not plain data after all: nothing to key it by
            return self.function(value)
        kept = self._kept.get(key)
        if kept is not None and kept is not _SEEN_ONCE:
            return copy_plain(kept)
        result = self.function(value)
        if kept is None:
            if len(self._kept) >= self.size:  # the oldest goes
                del self._kept[next(iter(self._kept))]
            self._kept[key] = _SEEN_ONCE
        else:  # seen twice: keep a copy (the caller may change its own)
            self._kept[key] = copy_plain(result)
        return result

    def clear(self) -> None:
        """Forget every input and kept result."""
        self._kept.clear()


def plain_mapping(cfg, where: str | None = None) -> dict:
    """A plain copy of a mapping or an OmegaConf node (None: ``{}``); anything
    else is a one-line :class:`ConfigError` (prefixed with ``where``)."""
    if cfg is None:
        return {}
    if not isinstance(cfg, Mapping):
        try:  # OmegaConf nodes without importing omegaconf in the emulator
            from omegaconf import OmegaConf

            return OmegaConf.to_container(cfg, resolve=True)
        except Exception:
            raise ConfigError(
                f"{where + ': ' if where else ''}expected a mapping, got {type(cfg).__name__}"
            ) from None
    return copy_plain(dict(cfg))


def merge_defaults(defaults: dict, given: Mapping, where: str) -> dict:
    """``defaults`` updated with ``given``, nested mappings merged key by key;
    a key ``defaults`` lacks is a one-line :class:`ConfigError` naming ``where``."""
    unknown = set(given) - set(defaults)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {sorted(unknown)}; known: {sorted(defaults)}")
    out = copy_plain(defaults)
    for k, v in given.items():
        if isinstance(out.get(k), dict) and isinstance(v, Mapping):
            out[k] = merge_defaults(out[k], dict(v), f"{where}.{k}")
        else:
            out[k] = v
    return out


__all__ = ["PlainMemo", "copy_plain", "merge_defaults", "plain_mapping"]
