"""Stream trace replay: streams released at given times with sizes and
priorities (HTTP/2-style request traces, stream-aware scheduling).

Trace CSV: header ``release_s,size_bytes,priority`` (priority optional,
default 0; smaller = more urgent). Completion time of a stream = time its
last byte is delivered in order minus its release time.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping
from pathlib import Path

from envs.apps.base import App
from envs.errors import ConfigError


def load_stream_trace(path) -> list[dict]:
    """Streams from a CSV: the path as given, else relative to ``data/``."""
    from envs.traces.catalog import data_dir

    given = Path(path).expanduser()
    path = given if given.is_file() or given.is_absolute() else data_dir() / given
    if not path.is_file():
        raise ConfigError(f"stream trace {given}: file not found (also looked under {data_dir()})")
    try:
        with path.open(newline="", encoding="utf-8") as fh:
            rows = _stream_rows(path, csv.DictReader(fh))
    except (UnicodeDecodeError, csv.Error) as e:
        raise ConfigError(f"stream trace {path}: not a readable CSV text file ({e})") from None
    if not rows:
        raise ConfigError(f"stream trace {path}: no streams")
    return rows


def _stream_rows(path, reader) -> list[dict]:
    if reader.fieldnames is None or not {"release_s", "size_bytes"} <= set(reader.fieldnames):
        raise ConfigError(f"stream trace {path}: header must have release_s,size_bytes[,priority]")
    rows = []
    for i, row in enumerate(reader, start=2):
        rows.append(
            stream_entry(
                {
                    "release_s": row["release_s"],
                    "size_bytes": row["size_bytes"],
                    "priority": row.get("priority") or 0,
                },
                f"stream trace {path}:{i}",
            )
        )
    return rows


def stream_entry(s, where: str) -> dict:
    """One stream ``{release_s, size_bytes, priority}`` checked: release
    time [s] finite and >= 0, size [bytes] > 0, integer priority (default 0);
    numbers may be given as strings (CSV cells). One-line ConfigError."""
    if not isinstance(s, Mapping):
        raise ConfigError(
            f"{where}: a stream is a mapping {{release_s, size_bytes[, priority]}}, got {s!r}"
        )
    try:
        rel = float(s["release_s"])
        size = int(float(s["size_bytes"]))
        prio = int(float(s.get("priority") or 0))
    except KeyError as e:
        raise ConfigError(f"{where}: the stream has no {e}") from None
    except (TypeError, ValueError, OverflowError):
        raise ConfigError(f"{where}: a value is missing, not a number or not finite") from None
    if not (math.isfinite(rel) and rel >= 0) or size <= 0:
        raise ConfigError(f"{where}: release_s must be finite and >= 0, size_bytes > 0")
    return {"release_s": rel, "size_bytes": size, "priority": prio}


class StreamsApp(App):
    kind = "streams"

    def __init__(self, streams: list[dict]):
        super().__init__()
        if not isinstance(streams, list | tuple) or not streams:
            raise ConfigError(f"streams app: expected a non-empty list of streams, got {streams!r}")
        self.streams = sorted(
            (stream_entry(s, f"streams app, stream {k}") for k, s in enumerate(streams)),
            key=lambda s: s["release_s"],
        )
        self.complete = [-1.0] * len(self.streams)
        self._left = len(self.streams)

    @property
    def sizes(self) -> list[int]:
        return [s["size_bytes"] for s in self.streams]

    def _begin(self) -> None:
        # streams released at the same instant open in one event, so that the
        # scheduler's first decision sees all of them; those requested before
        # the connection was up (envs.setup) open now, together
        now = self.conn.sim.now
        groups: dict[float, list[int]] = {}
        for i, s in enumerate(self.streams):
            groups.setdefault(max(now, self.start_time + s["release_s"]), []).append(i)
        for at, ids in groups.items():
            self.conn.sim.schedule(at, self._open, ids)

    def _open(self, ids: list[int]) -> None:
        for i in ids:
            s = self.streams[i]
            self.conn.open_stream(
                i, s["size_bytes"], weight=1.0, priority=s["priority"], send=False
            )
        self.conn.try_send()

    def on_stream_complete(self, stream_id: int, now: float) -> None:
        self.complete[stream_id] = now
        self._left -= 1
        if self._left == 0:
            self._finish(now)

    def object_release_times(self) -> list[float]:
        return [s["release_s"] for s in self.streams]

    def object_times(self) -> list[float]:
        return [
            c - (self.start_time + s["release_s"]) if c >= 0 else float("nan")
            for c, s in zip(self.complete, self.streams)
        ]
