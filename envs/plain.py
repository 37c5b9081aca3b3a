"""Plain config data: a fast deep copy, mappings from dicts or OmegaConf
nodes, and defaults merged with what a user gave."""

from __future__ import annotations

import copy
from collections.abc import Mapping

from envs.errors import ConfigError

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


def frozen_plain(value):
    """A hashable key of plain config data (dicts, lists, tuples, str, int, float,
    bool, None), or None when ``value`` holds anything else. Two values have equal
    keys only if they have the same types, keys in the same order and values:
    ``1``, ``1.0`` and ``True`` differ, and so do ``0.0`` and ``-0.0``."""
    t = type(value)
    if t is str or t is int or t is bool or value is None:
        return (t, value)
    if t is float:
        return (t, value.hex())
    if t is dict:
        items = []
        for k, v in value.items():
            fk = frozen_plain(k)
            fv = frozen_plain(v)
            if fk is None or fv is None:
                return None
            items.append((fk, fv))
        return (t, tuple(items))
    if t is list or t is tuple:
        out = []
        for v in value:
            fv = frozen_plain(v)
            if fv is None:
                return None
            out.append(fv)
        return (t, tuple(out))
    return None


class PlainMemo:
    """The last ``size`` results of a function of plain config data, by
    :func:`frozen_plain` key: a caller gets its own :func:`copy_plain` of a kept
    result. For the config normalisers, pure functions of their input and of
    their module's constant tables, which every episode's set-up calls with
    the same config: a kept answer costs a key and a copy (about a fifth of
    normalising a two-path scenario). Input that is not plain data (an OmegaConf
    node, a NumPy number), and an input that raises, is never kept."""

    __slots__ = ("function", "size", "_kept")

    def __init__(self, function, size: int = 64):
        self.function = function
        self.size = int(size)
        self._kept: dict = {}

    def __call__(self, value):
        key = frozen_plain(value) if type(value) is dict else None
        if key is None:
            return self.function(value)
        kept = self._kept.get(key)
        if kept is None:
            kept = self.function(value)
            if len(self._kept) >= self.size:  # the oldest goes
                del self._kept[next(iter(self._kept))]
            self._kept[key] = kept
            kept = copy_plain(kept)  # the caller's copy: the kept one stays as computed
        else:
            kept = copy_plain(kept)
        return kept

    def clear(self) -> None:
        """Forget every kept result."""
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


__all__ = ["PlainMemo", "copy_plain", "frozen_plain", "merge_defaults", "plain_mapping"]
