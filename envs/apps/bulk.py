"""Bulk transfer: one stream of ``size_bytes`` released at time 0 (an HTTP GET
of a file whose request has just reached the server)."""

from __future__ import annotations


class BulkApp:
    kind = "bulk"

    def __init__(self, size_bytes: int = 2_000_000):
        if int(size_bytes) <= 0:
            raise ValueError("bulk size_bytes must be positive")
        self.size = int(size_bytes)
        self.conn = None
        self.start_time = 0.0
        self.done_time = -1.0

    @property
    def sizes(self) -> list[int]:
        return [self.size]

    def start(self, conn) -> None:
        self.conn = conn
        conn.app = self
        self.start_time = conn.sim.now
        conn.open_stream(0, self.size)

    def on_stream_complete(self, stream_id: int, now: float) -> None:
        self.done_time = now
        self.conn.finished = True
        self.conn.sim.stop()

    @property
    def done(self) -> bool:
        return self.done_time >= 0

    def object_times(self) -> list[float]:
        return [self.done_time - self.start_time if self.done else float("nan")]
