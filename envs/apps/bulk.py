"""Bulk transfer: one stream of ``size_bytes`` released at time 0 (an HTTP GET
of a file whose request has just reached the server)."""

from __future__ import annotations

from envs.apps.base import App


class BulkApp(App):
    kind = "bulk"

    def __init__(self, size_bytes: int = 2_000_000):
        super().__init__()
        if int(size_bytes) <= 0:
            raise ValueError("bulk size_bytes must be positive")
        self.size = int(size_bytes)

    @property
    def sizes(self) -> list[int]:
        return [self.size]

    def _begin(self) -> None:
        self.conn.open_stream(0, self.size)

    def on_stream_complete(self, stream_id: int, now: float) -> None:
        self._finish(now)

    def object_times(self) -> list[float]:
        return [self.done_time - self.start_time if self.done else float("nan")]
