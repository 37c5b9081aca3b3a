"""Discrete-event core: one clock, one event heap.

Events are ``(time [s], sequence, callback, argument)`` tuples; the sequence
number breaks ties in scheduling order, which makes every run deterministic.
Callbacks take one argument so the hot loop needs no closures.
"""

from __future__ import annotations

from heapq import heappop, heappush
from itertools import count


class Simulator:
    __slots__ = ("now", "heap", "seq", "stopped", "events_processed")

    def __init__(self):
        self.now = 0.0
        #: the event heap and the tie-breaking counter; hot loops may push
        #: ``(time, next(sim.seq), callback, arg)`` onto ``heap`` directly.
        self.heap: list = []
        self.seq = count()
        self.stopped = False
        self.events_processed = 0

    def schedule(self, time: float, callback, arg=None) -> None:
        """Run ``callback(arg)`` at emulated ``time`` [s] (never in the past)."""
        heappush(self.heap, (time, next(self.seq), callback, arg))

    def stop(self) -> None:
        self.stopped = True

    def run(self, until: float = float("inf")) -> float:
        """Process events in time order until none is left, :meth:`stop` is
        called, or the next event lies beyond ``until`` [s]. Returns the clock."""
        heap = self.heap
        n = 0
        self.stopped = False
        while heap:
            if heap[0][0] > until:
                self.now = until
                break
            t, _, callback, arg = heappop(heap)
            self.now = t
            callback(arg)
            n += 1
            if self.stopped:
                break
        self.events_processed += n
        return self.now

    @property
    def pending(self) -> int:
        return len(self.heap)
