"""Discrete-event core: one clock, one event heap.

Events are ``(time [s], sequence, callback, argument)`` tuples; the sequence
number breaks ties in scheduling order, which makes every run deterministic.
Callbacks take one argument so the hot loop needs no closures.

:meth:`Simulator.run` pauses Python's cyclic garbage collector while it
processes events. An episode allocates a few tuples and floats per packet,
which trigger the collector's passes, and each pass walks the emulation's
live containers (the in-flight records, the acknowledged frames): about
13 % of a minRTT episode's CPU time (perf), for no garbage, since the event loop makes
no reference cycles (reference counting frees everything it drops;
``tests/test_sim.py`` checks that a run leaves no cyclic garbage behind).
The collector's state is restored when ``run`` returns or raises.

:func:`collector_paused` extends the pause over a whole episode (set-up,
run, metrics: ``envs.runner.run_episode`` and the other episode drivers).
Paused only around the run, the collector woke up inside the metrics with
every container the run had allocated still young, walked them, promoted
the emulation (a few thousand objects in reference cycles: the connection,
its paths and their callbacks) to an older generation and freed it only at
a later, costlier pass: 5-10 % of a minRTT episode's CPU time. Paused over
the episode, the first pass after it finds the emulation already garbage.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from heapq import heappop, heappush
from itertools import count


@contextmanager
def collector_paused():
    """Pause Python's cyclic garbage collector for the ``with`` block, and
    restore its state after (also when the block raises); a collector that
    was off stays off."""
    collecting = gc.isenabled()
    if collecting:
        gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


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
        collecting = gc.isenabled()
        if collecting:
            gc.disable()              # see the module docstring
        try:
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
        finally:
            self.events_processed += n
            if collecting:
                gc.enable()
        return self.now

    @property
    def pending(self) -> int:
        return len(self.heap)
