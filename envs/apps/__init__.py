"""Applications that drive a connection: bulk, web page, stream trace."""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping

from envs.apps.bulk import BulkApp
from envs.apps.streams import StreamsApp, load_stream_trace
from envs.apps.web import WebApp
from envs.errors import ConfigError

APP_DEFAULTS = {"kind": "bulk", "size_bytes": 2_000_000, "page": "google", "trace": None, "streams": None}
APP_KINDS = ("bulk", "web", "streams")


def normalise_app(cfg) -> dict:
    if cfg is None:
        cfg = {}
    if not isinstance(cfg, Mapping):
        from omegaconf import OmegaConf
        if not OmegaConf.is_dict(cfg):
            raise ConfigError(f"app: expected a mapping of app keys, got {cfg!r}")
        cfg = OmegaConf.to_container(cfg, resolve=True)
    unknown = set(cfg) - set(APP_DEFAULTS)
    if unknown:
        raise ConfigError(f"app: unknown key(s) {sorted(unknown)}; known: {sorted(APP_DEFAULTS)}")
    a = copy.deepcopy(APP_DEFAULTS)
    a.update(copy.deepcopy(dict(cfg)))
    if a["kind"] not in APP_KINDS:
        raise ConfigError(f"app.kind: unknown app {a['kind']!r}; choose one of {list(APP_KINDS)}")
    for key in ("page", "trace"):
        if a[key] is not None and not isinstance(a[key], str | os.PathLike):
            raise ConfigError(f"app.{key}: expected a name or a file path, got {a[key]!r}")
    if a["kind"] == "bulk":
        try:
            a["size_bytes"] = int(a["size_bytes"])
        except (TypeError, ValueError, OverflowError):
            raise ConfigError(f"app.size_bytes: expected an integer, got {a['size_bytes']!r}") from None
        if a["size_bytes"] <= 0:
            raise ConfigError(f"app.size_bytes: must be positive, got {a['size_bytes']}")
    return a


def make_app(cfg, request_delay_s: float):
    """Build the app; ``request_delay_s`` is the client->server request delay [s]."""
    a = normalise_app(cfg)
    if a["kind"] == "bulk":
        return BulkApp(a["size_bytes"])
    if a["kind"] == "web":
        from envs.apps.pages import load_page
        return WebApp(load_page(a["page"]), request_delay_s)
    streams = a["streams"] if a["streams"] is not None else (
        load_stream_trace(a["trace"]) if a["trace"] is not None else None)
    if streams is None:
        raise ConfigError("app: kind=streams needs app.trace (CSV path) or app.streams (inline list)")
    return StreamsApp(streams)


__all__ = ["BulkApp", "WebApp", "StreamsApp", "make_app", "normalise_app", "APP_DEFAULTS"]
