# cython: boundscheck=False, wraparound=False
# (the compiled queue's indices are never negative and always in range)
"""Discrete-event core: one clock, one event queue.

An event is a time [s], a sequence number, a callback and one argument; the
sequence number breaks ties in scheduling order, which makes every run
deterministic. Callbacks take one argument so the hot loop needs no closures.
:meth:`Simulator.schedule` queues one, :meth:`Simulator.run` processes them.

The queue has two implementations of one order, (time, sequence), so both
pop the same events in the same order:

* the ``.py`` module (the reference core) keeps ``(time, seq, callback,
  arg)`` tuples in a ``heapq`` list: C code, the fastest heap pure Python has;
* the compiled module (Cython, ``envs/sim.pxd``) keeps a heap of (time,
  sequence, slot) in typed columns, with the callbacks and arguments in
  lists indexed by slot: no tuple, no boxed float and no Python comparison
  per event, which were about a tenth of a minRTT episode's CPU time (perf:
  tuple allocation and rich comparisons in ``heappush``/``heappop``). The
  heap is 4-ary: half the levels of a binary one, whose sifts were a third
  of the queue's cost with many connections in one simulator (their
  children lie side by side in the columns).

:meth:`Simulator.run` pauses Python's cyclic garbage collector while it
processes events. An episode allocates a few objects per packet, which
trigger the collector's passes, and each pass walks the emulation's live
containers (the in-flight records, the acknowledged frames): about 13 % of a
minRTT episode's CPU time (perf), for no garbage, since the event loop makes
no reference cycles (reference counting frees everything it drops;
``tests/test_sim.py`` checks that a run leaves no cyclic garbage behind).
The collector's state is restored when ``run`` returns or raises.

Numbered events: the connection's per-packet events (a data packet or an ACK
frame arriving, the timers, the pacer's wake-up) go to a :class:`Handler`
registered once (:meth:`Simulator.register`) as an event number and an
integer argument (:meth:`Simulator.schedule_event`). The compiled queue keeps
the three in typed columns and calls the handler's ``handle`` as a C method:
no bound method to call through Python's protocol, no boxed argument, and no
reference to store in and clear from the slot lists, which were about a
tenth of a packet's instructions. The ``.py`` queue calls the handler's
callback of that number (:meth:`Handler.event_callbacks`) with the argument,
as an event scheduled with :meth:`Simulator.schedule`; both run the same
bodies in the same order.

C status returns: ``handle`` and the methods that a packet's events call
(the queue's pushes, the connection's sending, the receiver's and the loss
recovery's event bodies, the wires', in-flight records' and pacer's updates)
return ``int`` in the compiled core, 0, or -1 with an exception raised
(``cpdef int ... except -1`` in the ``.pxd`` files), and end with ``return 0``
in both cores, since Cython wants a value at every exit of such a function.
Returning ``None``, each of these calls (about 22 a packet) incremented and
decremented ``None``'s reference count, one shared word of memory, so the
calls' updates formed one chain of dependent reads and writes, a cost the
instruction count understates (2 % of a minRTT episode's instructions; 1.5-6 %
of its time in this machine's fastest runs, ``docs/explanation/speed.md``).
Python callers get 0 and ignore it.

:func:`collector_paused` extends the pause over a whole episode (set-up,
run, metrics: ``envs.runner.run_episode`` and the other episode drivers).
Paused only around the run, the collector woke up inside the metrics with
every container the run had allocated still young, walked them, promoted
the emulation to an older generation and freed it only at a later, costlier
pass. :meth:`Simulator.clear` drops the queued events, which is what ties
an emulation into reference cycles (the events' callbacks are bound methods
of the connection that holds the simulator), so that reference counting
frees a finished emulation at once and the collector's first pass after the
episode has nothing of it to walk.
"""

from __future__ import annotations

import gc
from heapq import heappop, heappush
from itertools import count

import numpy as np

try:  # the compiled queue's cast (the .py core never runs that code)
    import cython
except ImportError:  # pragma: no cover - the .py build installed without Cython
    from envs._cython_stub import cython  # type: ignore[assignment]

#: True in the compiled module (an extension's ``__file__`` is not the ``.py``)
COMPILED = not __file__.endswith(".py")
#: initial number of event slots of the compiled queue (it doubles when full): a two-path
#: connection keeps a few dozen events queued at most (34 in 2 MB minRTT episodes over
#: Table I 4G + 5G); 512 slots cost 40 kB zeroed and two 512-item lists per episode
SLOTS = 64
#: the compiled queue's integer columns, rows of one block, lie this many words (a cache
#: line) further apart than their length, off the 4 KiB stride that maps a slot's words
#: to one L1 set (envs.wire.COLUMN_PAD; 5 % fewer L1 data misses in a minRTT episode)
QUEUE_PAD = 8


def collector_paused() -> _CollectorPause:
    """Pause Python's cyclic garbage collector for the ``with`` block, and
    restore its state after (also when the block raises); a collector that
    was off stays off."""
    return _CollectorPause()


class _CollectorPause:
    """:func:`collector_paused`'s context manager: a class, not a ``@contextmanager``
    generator, whose set-up and teardown cost 2.8 us a block against 0.4 us, paid by
    every episode and every step of the vector environment."""

    __slots__ = ("_collecting",)

    def __enter__(self) -> None:
        self._collecting = gc.isenabled()
        if self._collecting:
            gc.disable()

    def __exit__(self, *exc) -> None:  # (None: an exception goes on)
        if self._collecting:
            gc.enable()


class Handler:
    """The target of numbered events (module docstring): :meth:`handle` runs event
    ``kind`` (> 0) with its integer argument."""

    __slots__ = ()

    def handle(self, kind: int, arg: int) -> int:
        """Run event ``kind`` with ``arg`` (the compiled queue's call); returns 0, a C
        status (module docstring), which an override must return too. A Python subclass
        overrides :meth:`event_callbacks`, which both queues follow."""
        self.event_callbacks()[kind](arg)
        return 0

    def event_callbacks(self) -> tuple:
        """The callback of each event number (index 0 unused): what the ``.py``
        queue calls, and what :meth:`handle` must do."""
        raise NotImplementedError


class Simulator:
    __slots__ = (
        "now",
        "heap",
        "seq",
        "stopped",
        "events_processed",
        "_n",
        "_next_seq",
        "_time",
        "_order",
        "_slot",
        "_free",
        "_nfree",
        "_cb",
        "_arg",
        "_kind",
        "_hid",
        "_iarg",
        "_handlers",
        "_event_callbacks",
    )

    def __init__(self):
        self.now = 0.0
        self.stopped = False
        self.events_processed = 0
        # the reference queue (module docstring)
        self.heap: list = []
        self.seq = count()
        # the compiled queue: a heap of (time, sequence, slot) in three columns, and
        # per slot the callback and argument
        self._n = 0
        self._next_seq = 0
        self._carve(
            np.zeros(SLOTS), np.zeros((5, SLOTS + QUEUE_PAD), np.int64), _free_slots(SLOTS - 1, -1)
        )
        self._nfree = SLOTS
        self._cb = [None] * SLOTS
        self._arg = [None] * SLOTS
        self._handlers: list = []
        self._event_callbacks: list = []  # the .py queue's: per handler, its callbacks

    def _carve(self, times, ints, free) -> None:
        """Take the compiled queue's columns: times [s], the first ``SLOTS`` words of each row
        of ``ints`` (columns carved from one allocation: a typed view each, no NumPy view),
        and the free slots."""
        self._time = times
        self._order = ints[0][:SLOTS]
        self._slot = ints[1][:SLOTS]
        # numbered events: per slot the number (0: a callback event), handler and argument
        self._kind = ints[2][:SLOTS]
        self._hid = ints[3][:SLOTS]
        self._iarg = ints[4][:SLOTS]
        self._free = free

    def register(self, handler: Handler) -> int:
        """Make ``handler`` a target of numbered events; returns its number for
        :meth:`schedule_event`. :meth:`clear` forgets every handler."""
        self._handlers.append(handler)
        if not COMPILED:
            self._event_callbacks.append(handler.event_callbacks())
        return len(self._handlers) - 1

    def schedule_event(self, time: float, handler: int, kind: int, arg: int) -> int:
        """Run event ``kind`` (> 0) of registered ``handler`` with integer ``arg`` at
        emulated ``time`` [s] (module docstring)."""
        if COMPILED:
            self._push_event(time, self._next_seq, handler, kind, arg)
            self._next_seq += 1
        else:
            heappush(self.heap, (time, next(self.seq), self._event_callbacks[handler][kind], arg))
        return 0

    def schedule_event_reserved(
        self, time: float, seq: int, handler: int, kind: int, arg: int
    ) -> int:
        """:meth:`schedule_event` in the place of sequence number ``seq`` (:meth:`reserve`)."""
        if COMPILED:
            self._push_event(time, seq, handler, kind, arg)
        else:
            heappush(self.heap, (time, seq, self._event_callbacks[handler][kind], arg))
        return 0

    def schedule(self, time: float, callback, arg=None) -> None:
        """Run ``callback(arg)`` at emulated ``time`` [s] (never in the past)."""
        if COMPILED:
            self._push(time, self._next_seq, callback, arg)
            self._next_seq += 1
        else:
            heappush(self.heap, (time, next(self.seq), callback, arg))

    def reserve(self) -> int:
        """The sequence number an event scheduled now would get, for an event that
        :meth:`schedule_reserved` queues later: it then runs exactly where it would
        have run had it been scheduled now. It must be queued before the clock
        passes it (:mod:`envs.wire`: a path's next arrival, queued when the one
        before it runs)."""
        if COMPILED:
            self._next_seq += 1
            return self._next_seq - 1
        return next(self.seq)

    def schedule_reserved(self, time: float, seq: int, callback, arg=None) -> None:
        """Run ``callback(arg)`` at ``time`` [s] in the place of sequence number ``seq``
        (from :meth:`reserve`)."""
        if COMPILED:
            self._push(time, seq, callback, arg)
        else:
            heappush(self.heap, (time, seq, callback, arg))

    def stop(self) -> None:
        self.stopped = True

    def run(self, until: float = float("inf")) -> float:
        """Process events in time order until none is left, :meth:`stop` is
        called, or the next event lies beyond ``until`` [s]. Returns the clock."""
        n = 0
        self.stopped = False
        collecting = gc.isenabled()
        if collecting:
            gc.disable()  # see the module docstring
        try:
            if COMPILED:
                while self._n > 0:
                    if self._time[0] > until:
                        self.now = until
                        break
                    self._pop_and_call()
                    n += 1
                    if self.stopped:
                        break
            else:
                heap = self.heap
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

    def clear(self) -> None:
        """Drop every queued event and registered handler (the end of an episode: module docstring)."""
        self.heap = []
        self._handlers = []
        self._event_callbacks = []
        # the queued events' slots only: their callbacks dropped, the slots freed again
        # (which slot an event takes decides nothing: the heap orders by time and sequence)
        for i in range(self._n):
            s = self._slot[i]
            self._cb[s] = None
            self._arg[s] = None
            self._free[self._nfree] = s
            self._nfree += 1
        self._n = 0

    @property
    def pending(self) -> int:
        """Number of queued events."""
        return self.queued()

    def queued(self) -> int:
        """:attr:`pending` as a method (a C call from the compiled core)."""
        return self._n if COMPILED else len(self.heap)

    # -- the compiled queue (module docstring); the .py core never calls these.
    # Heap position i holds an event's time (_time[i]), sequence number
    # (_order[i]) and slot (_slot[i], where its callback and argument are): the
    # comparisons of a sift read neighbouring positions, not slots scattered
    # over the arrays (several events per connection wait in the queue).
    def _take_slot(self) -> int:
        """A free slot for a new event (the slots double when none is left)."""
        if self._nfree == 0:
            self._grow()
        self._nfree -= 1
        return self._free[self._nfree]

    def _push(self, time: float, seq: int, callback, arg) -> None:
        s = self._take_slot()
        self._cb[s] = callback
        self._arg[s] = arg
        self._kind[s] = 0
        self._sift_up(time, seq, s)

    def _push_event(self, time: float, seq: int, handler: int, kind: int, arg: int) -> int:
        s = self._take_slot()
        self._kind[s] = kind
        self._hid[s] = handler
        self._iarg[s] = arg
        self._sift_up(time, seq, s)
        return 0

    def _sift_up(self, time: float, seq: int, s: int) -> int:
        """Queue slot ``s``'s event at (``time``, ``seq``)."""
        # sift up: parents that come after the new event move down
        i = self._n
        self._n = i + 1
        while i > 0:
            parent = (i - 1) >> 2
            pt = self._time[parent]
            if pt < time or (pt == time and self._order[parent] < seq):
                break
            self._time[i] = pt
            self._order[i] = self._order[parent]
            self._slot[i] = self._slot[parent]
            i = parent
        self._time[i] = time
        self._order[i] = seq
        self._slot[i] = s
        return 0

    def _pop_and_call(self) -> int:
        """Remove the earliest event, advance the clock to it, and call its callback."""
        s = self._slot[0]
        kind = self._kind[s]
        if kind == 0:
            callback = self._cb[s]
            arg = self._arg[s]
            self._cb[s] = None
            self._arg[s] = None
        else:
            h = self._hid[s]
            iarg = self._iarg[s]
        self.now = self._time[0]
        self._free[self._nfree] = s
        self._nfree += 1
        n = self._n - 1
        self._n = n
        if n > 0:
            # sift the last event down from the root, past children that come before it
            lt = self._time[n]
            lo = self._order[n]
            ls = self._slot[n]
            i = 0
            c = 1
            while c < n:
                # the earliest of the (up to four) children c, ..., c + 3
                ct = self._time[c]
                end = c + 4 if c + 4 < n else n
                j = c + 1
                b = c
                while j < end:
                    t2 = self._time[j]
                    if t2 < ct or (t2 == ct and self._order[j] < self._order[b]):
                        b = j
                        ct = t2
                    j += 1
                if lt < ct or (lt == ct and lo < self._order[b]):
                    break
                self._time[i] = ct
                self._order[i] = self._order[b]
                self._slot[i] = self._slot[b]
                i = b
                c = 4 * i + 1
            self._time[i] = lt
            self._order[i] = lo
            self._slot[i] = ls
        if kind == 0:
            callback(arg)
        else:
            # a registered Handler (register's argument is one): no second type test
            handler = cython.cast(Handler, self._handlers[h])
            handler.handle(kind, iarg)
        return 0

    def _grow(self) -> None:
        """Double the number of slots (only when every slot holds an event).

        NumPy copies the typed columns as buffers: ``array(kind, column)``,
        used before, converted them element by element through Python
        objects, about 6 % of a minRTT episode's CPU time (perf).
        """
        cap = len(self._cb)
        self._time = _doubled("d", self._time)
        self._order = _doubled("q", self._order)
        self._slot = _doubled("q", self._slot)
        self._free = _doubled("q", _free_slots(2 * cap - 1, cap - 1))
        self._kind = _doubled("q", self._kind)
        self._hid = _doubled("q", self._hid)
        self._iarg = _doubled("q", self._iarg)
        self._nfree = cap
        self._cb = self._cb + [None] * cap
        self._arg = self._arg + [None] * cap


def _doubled(kind: str, col):
    """A typed column (``kind`` 'd' or 'q') twice as long as ``col``: its values, then zeros."""
    return np.concatenate(
        (np.asarray(col), np.zeros(len(col), np.float64 if kind == "d" else np.int64))
    )


def _free_slots(first: int, stop: int):
    """The slot numbers ``first, first - 1, ..., stop + 1`` as a typed column (the free list pops from its end)."""
    return np.arange(first, stop, -1, dtype=np.int64)
