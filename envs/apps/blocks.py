"""Deadline blocks (the HOP paper's application): every ``period_s`` the
application writes a block of ``block_bytes``; a block is useful only if its
last byte reaches the client, in order, within ``deadline_s`` of its release.

Block n (n = 0 .. floor(duration_s / period_s) - 1) is released at the app's
start + n x period_s as stream n. Here the blocks ride the reliable
connection (:mod:`envs.transport`), as MPTCP/MPQUIC would carry them: a late
block is still delivered (it keeps using capacity), it only counts as failed.

Served in release order (FIFO, one reliable byte stream). The connection
picks among pending streams by smooth weighted round robin
(:func:`envs.streams.wrr_pick`: every stream's counter grows by its weight,
the largest counter wins, ties to the first in the list, and the winner's
counter drops by the sum of the weights). With weight 0 for every stream all
counters stay 0 forever, so the pick is always the first pending stream of
the connection's list, which holds the streams in the order they were opened
(appended at release, removed once fully sent): the oldest block with unsent
data. Retransmissions still go first (the transport's rule), as in a
reliable byte stream. Schedulers that pick a stream themselves
(``Decision.stream_id``) override this, as they mean to.

Times: release and completion are relative to the app's start [s];
``object_times`` = completion - release, NaN for a block never completed
within the episode.
"""

from __future__ import annotations

import math

import numpy as np

from envs.apps.base import App

#: the final check runs this long after the last block's deadline [s], so that
#: a block completing exactly at its deadline is counted first
END_MARGIN_S = 1e-3


def block_count(period_s: float, duration_s: float) -> int:
    """floor(duration / period), robust to float rounding (30 / 0.025 = 1200)."""
    return int(math.floor(duration_s / period_s + 1e-9))


class BlockApp(App):
    kind = "blocks"

    def __init__(self, block_bytes: int, period_s: float, deadline_s: float, duration_s: float):
        """Sizes [bytes] and times [s]; defaults: :data:`envs.apps.BLOCK_DEFAULTS` (``make_app``)."""
        super().__init__()
        if int(block_bytes) <= 0 or not (
            period_s > 0
            and deadline_s > 0
            and math.isfinite(period_s)
            and math.isfinite(deadline_s)
            and math.isfinite(duration_s)
        ):
            raise ValueError(
                "blocks: block_bytes, period_s and deadline_s must be positive and finite"
            )
        self.block_bytes = int(block_bytes)
        self.period_s = float(period_s)
        self.deadline_s = float(deadline_s)
        self.duration_s = float(duration_s)
        self.n_blocks = block_count(self.period_s, self.duration_s)
        if self.n_blocks < 1:
            raise ValueError("blocks: duration_s must hold at least one period")
        self.release = [n * self.period_s for n in range(self.n_blocks)]  # relative to start [s]
        self.complete = [-1.0] * self.n_blocks  # absolute [s]; -1: not yet
        self._next = 0  # next block to release
        self._left = self.n_blocks

    @property
    def sizes(self) -> list[int]:
        return [self.block_bytes] * self.n_blocks

    # ------------------------------------------------------------ events
    def _begin(self) -> None:
        # blocks whose release time passed during the connection setup open
        # now, together; the rest one event each, chained (a small heap)
        now = self.conn.sim.now
        while self._next < self.n_blocks and self.start_time + self.release[self._next] <= now:
            self._open_one()
        self.conn.try_send()
        self._schedule_next()
        last_deadline = self.start_time + self.release[-1] + self.deadline_s
        self.conn.sim.schedule(max(now, last_deadline + END_MARGIN_S), self._final_check, None)

    def _schedule_next(self) -> None:
        if self._next < self.n_blocks:
            self.conn.sim.schedule(self.start_time + self.release[self._next], self._release, None)

    def _release(self, _arg) -> None:
        if self.conn.finished:
            return
        self._open_one()
        self.conn.try_send()
        self._schedule_next()

    def _open_one(self) -> None:
        n = self._next
        self._next += 1
        # weight 0: FIFO among the pending blocks (module docstring)
        self.conn.open_stream(n, self.block_bytes, weight=0.0, priority=0, send=False)

    def on_stream_complete(self, stream_id: int, now: float) -> None:
        self.complete[stream_id] = now
        self._left -= 1
        if self._left == 0:
            self._finish(now)

    def _final_check(self, _arg) -> None:
        """Every block is complete or past its deadline: the episode ends."""
        if not self.done:
            self._finish(self.conn.sim.now)

    # ------------------------------------------------------------ results
    def object_release_times(self) -> list[float]:
        return list(self.release)

    def object_times(self) -> list[float]:
        return [
            c - (self.start_time + r) if c >= 0 else float("nan")
            for c, r in zip(self.complete, self.release)
        ]

    def block_outcomes(self, deadline_s: float | None = None) -> dict[str, np.ndarray]:
        """Per block: ``release_s`` and ``completion_s`` (relative to the app's
        start [s], NaN if never completed) and ``on_time`` (completed within
        ``deadline_s`` of its release; default the app's deadline)."""
        deadline = self.deadline_s if deadline_s is None else float(deadline_s)
        release = np.asarray(self.release, dtype=np.float64)
        completion = np.asarray(
            [c - self.start_time if c >= 0 else np.nan for c in self.complete], dtype=np.float64
        )
        with np.errstate(invalid="ignore"):
            on_time = (completion - release) <= deadline + 1e-12
        return {"release_s": release, "completion_s": completion, "on_time": on_time}


def block_metrics_from_times(
    object_times, block_bytes: int, duration_s: float, deadline_s: float
) -> dict:
    """Block metrics from per-block delivery times (completion - release [s],
    NaN = never completed), e.g. an :class:`envs.runner.EpisodeResult`'s
    ``object_times``: ``blocks`` (count), ``on_time`` (count),
    ``failure_probability`` (share of blocks not on time), ``goodput_mbps``
    (on-time blocks x block_bytes x 8 / duration_s / 1e6)."""
    t = np.asarray(object_times, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        ok = int(np.count_nonzero(t <= float(deadline_s) + 1e-12))
    n = int(t.size)
    return {
        "blocks": n,
        "on_time": ok,
        "failure_probability": (1.0 - ok / n) if n else math.nan,
        "goodput_mbps": ok * int(block_bytes) * 8 / float(duration_s) / 1e6
        if duration_s > 0
        else 0.0,
    }


def block_metrics(app: BlockApp, deadline_s: float | None = None) -> dict:
    """:func:`block_metrics_from_times` of a finished :class:`BlockApp`
    (``deadline_s``: default the app's own)."""
    deadline = app.deadline_s if deadline_s is None else float(deadline_s)
    return block_metrics_from_times(app.object_times(), app.block_bytes, app.duration_s, deadline)


__all__ = ["BlockApp", "block_metrics", "block_metrics_from_times", "block_count", "END_MARGIN_S"]
