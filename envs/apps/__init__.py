"""Applications that drive a connection: bulk, web page, stream trace, deadline blocks."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping

from envs.apps.blocks import BlockApp, block_count, block_metrics
from envs.apps.bulk import BulkApp
from envs.apps.streams import StreamsApp, load_stream_trace
from envs.apps.web import WebApp
from envs.errors import ConfigError
from envs.plain import PlainMemo, copy_plain

APP_DEFAULTS = {
    "kind": "bulk",
    "size_bytes": 2_000_000,
    "page": "google",
    "trace": None,
    "streams": None,
}
APP_KINDS = ("bulk", "web", "streams", "blocks")
#: keys of kind=blocks only (None: required). Other kinds never carry them, so
#: their normalised config is what it was before the blocks app existed; a
#: null value there (e.g. a composed YAML) is dropped, any other is an error.
BLOCK_DEFAULTS = {"block_bytes": None, "period_s": 0.025, "deadline_s": 0.035, "duration_s": 30.0}


def normalise_app(cfg) -> dict:
    """Defaults + validation; returns a new plain dict. A string is the name
    of an app preset (``configs/app/``, :mod:`envs.presets`). A dict normalised
    twice lately is kept: a later call with the same dict gets a copy of the
    kept result (:class:`envs.plain.PlainMemo`)."""
    if cfg is None:
        cfg = {}
    if isinstance(cfg, str):
        from envs.presets import resolve

        cfg = resolve(cfg, "app")
    return _NORMALISED(cfg)


def _normalised(cfg) -> dict:
    """:func:`normalise_app` of a mapping (or an OmegaConf node)."""
    if not isinstance(cfg, Mapping):
        from omegaconf import OmegaConf

        if not OmegaConf.is_dict(cfg):
            raise ConfigError(f"app: expected a mapping of app keys, got {cfg!r}")
        cfg = OmegaConf.to_container(cfg, resolve=True)
    unknown = set(cfg) - set(APP_DEFAULTS) - set(BLOCK_DEFAULTS)
    if unknown:
        raise ConfigError(
            f"app: unknown key(s) {sorted(unknown)}; known: {sorted({**APP_DEFAULTS, **BLOCK_DEFAULTS})}"
        )
    a = copy_plain(APP_DEFAULTS)
    a.update(copy_plain(dict(cfg)))
    if a["kind"] not in APP_KINDS:
        raise ConfigError(f"app.kind: unknown app {a['kind']!r}; choose one of {list(APP_KINDS)}")
    if a["kind"] == "blocks":
        return _normalise_blocks(a)
    for key in BLOCK_DEFAULTS:
        if a.pop(key, None) is not None:
            raise ConfigError(f"app.{key}: only used by kind=blocks (kind is {a['kind']!r})")
    for key in ("page", "trace"):
        if a[key] is not None and not isinstance(a[key], str | os.PathLike):
            raise ConfigError(f"app.{key}: expected a name or a file path, got {a[key]!r}")
    if a["kind"] == "bulk":
        try:
            a["size_bytes"] = int(a["size_bytes"])
        except (TypeError, ValueError, OverflowError):
            raise ConfigError(
                f"app.size_bytes: expected an integer, got {a['size_bytes']!r}"
            ) from None
        if a["size_bytes"] <= 0:
            raise ConfigError(f"app.size_bytes: must be positive, got {a['size_bytes']}")
    return a


#: the app configs normalised lately (every episode of a run has the same)
_NORMALISED = PlainMemo(_normalised)


def _normalise_blocks(a: dict) -> dict:
    """kind=blocks: its keys checked and filled (one-line ConfigError naming the key)."""
    for key, default in BLOCK_DEFAULTS.items():
        a.setdefault(key, default)
    if a["block_bytes"] is None:
        raise ConfigError("app.block_bytes: kind=blocks needs a block size [bytes]")
    try:
        a["block_bytes"] = int(a["block_bytes"])
    except (TypeError, ValueError, OverflowError):
        raise ConfigError(
            f"app.block_bytes: expected an integer, got {a['block_bytes']!r}"
        ) from None
    if a["block_bytes"] <= 0:
        raise ConfigError(f"app.block_bytes: must be positive, got {a['block_bytes']}")
    for key in ("period_s", "deadline_s", "duration_s"):
        v = a[key]
        try:
            v = float(v)
        except (TypeError, ValueError, OverflowError):
            raise ConfigError(f"app.{key}: expected a number of seconds, got {a[key]!r}") from None
        if isinstance(a[key], bool) or not (math.isfinite(v) and v > 0):
            raise ConfigError(f"app.{key}: must be positive and finite, got {a[key]!r}")
        a[key] = v
    if block_count(a["period_s"], a["duration_s"]) < 1:
        raise ConfigError(
            f"app.duration_s: must hold at least one period_s ({a['period_s']}), got {a['duration_s']}"
        )
    return a


def make_app(cfg, request_delay_s: float):
    """Build the app; ``request_delay_s`` is the client->server request delay [s]."""
    a = normalise_app(cfg)
    if a["kind"] == "bulk":
        return BulkApp(a["size_bytes"])
    if a["kind"] == "blocks":
        return BlockApp(a["block_bytes"], a["period_s"], a["deadline_s"], a["duration_s"])
    if a["kind"] == "web":
        from envs.apps.pages import load_page

        return WebApp(load_page(a["page"]), request_delay_s)
    streams = (
        a["streams"]
        if a["streams"] is not None
        else (load_stream_trace(a["trace"]) if a["trace"] is not None else None)
    )
    if streams is None:
        raise ConfigError(
            "app: kind=streams needs app.trace (CSV path) or app.streams (inline list)"
        )
    return StreamsApp(streams)


__all__ = [
    "BulkApp",
    "WebApp",
    "StreamsApp",
    "BlockApp",
    "block_metrics",
    "make_app",
    "normalise_app",
    "APP_DEFAULTS",
    "BLOCK_DEFAULTS",
]
