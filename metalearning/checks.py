"""Config helpers shared by the meta-learning configs: field validation, plain values.

Each check reads ``obj.<key>``, raises a one-line :class:`ConfigError`
``"<section>.<key>: <problem>, got <value>"`` when it is unusable, and
stores the normalised value back on the (frozen) dataclass.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from envs.errors import ConfigError


def _bad(obj, section: str, key: str, msg: str):
    raise ConfigError(f"{section}.{key}: {msg}, got {getattr(obj, key)!r}")


def positive_ints(obj, section: str, *keys: str) -> None:
    """Every ``key`` is an integer >= 1 (stored as ``int``)."""
    for key in keys:
        v = getattr(obj, key)
        if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 1:
            _bad(obj, section, key, "must be a positive integer")
        object.__setattr__(obj, key, int(v))


def optional_positive_int(obj, section: str, key: str) -> None:
    """``key`` is None or an integer >= 1."""
    v = getattr(obj, key)
    if v is not None:
        if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 1:
            _bad(obj, section, key, "must be a positive integer or null")
        object.__setattr__(obj, key, int(v))


def numbers_in(obj, section: str, *specs: tuple[str, float, float, bool]) -> None:
    """Every ``(key, lo, hi, lo_open)``: a finite number in ``[lo, hi]`` (``(lo,
    hi]`` when ``lo_open``), stored as ``float``."""
    for key, lo, hi, lo_open in specs:
        v = getattr(obj, key)
        try:
            x = float(v)
        except (TypeError, ValueError):
            _bad(obj, section, key, "must be a number")
        if isinstance(v, bool) or not math.isfinite(x) or x < lo or x > hi or (lo_open and x == lo):
            _bad(obj, section, key, f"must be in {'(' if lo_open else '['}{lo}, {hi}]")
        object.__setattr__(obj, key, x)


def plain(x):
    """Plain dicts and lists of a config value (mappings such as OmegaConf
    nodes and tuples become JSON-able dicts and lists)."""
    if isinstance(x, Mapping):
        return {str(k): plain(v) for k, v in x.items()}
    if isinstance(x, Sequence) and not isinstance(x, str | bytes):
        return [plain(v) for v in x]
    return x


__all__ = ["positive_ints", "optional_positive_int", "numbers_in", "plain"]
