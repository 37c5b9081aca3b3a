# cython: boundscheck=False, wraparound=False
# (every index into a column is masked into range)
"""What is on a path's wire: the data packets on their way to the receiver
and the ACK frames on their way back to the sender (:mod:`envs.transport`).

A path never reorders (:meth:`envs.link.Path.send` clamps every arrival to
the previous one, in both directions), and events of equal time run in the
order they were scheduled (:mod:`envs.sim`), so the packets of one path
reach the receiver in the order they were sent, and its ACK frames reach
the sender in the order they were sent. Each direction is therefore a FIFO
queue: the sender appends a packet's fields when it sends it, and the
arrival event (whose argument is only the path index) takes the oldest.
This keeps the per-packet events free of tuples and boxed numbers.

Only the oldest entry of a wire has its arrival event in the simulator's
queue: each entry keeps its arrival time (``due``) and the event sequence
number reserved for it when it was sent (``seq``,
:meth:`envs.sim.Simulator.reserve`), and the arrival of one entry schedules
the next with that number. Arrivals on a wire are in (time, sequence)
order, so every event still runs exactly where it would have run had each
arrival been queued at its send, while the event queue holds a few events
per path instead of one per packet in flight (about a thousand in a 5G
window: a tenth of a minRTT episode's CPU time went into that heap).

Each queue is a ring of columns, one per field, indexed by a row number
``& mask``; it doubles when full. In the compiled core (``COMPILED``) the
columns are typed arrays (``envs/wire.pxd``); in the ``.py`` core they are
lists, which pure Python indexes faster. Units: seconds and bytes.
"""

from __future__ import annotations

import numpy as np

from envs.slab import zeroed_floats, zeroed_ints

#: True in the compiled module (an extension's ``__file__`` is not the ``.py``)
COMPILED = not __file__.endswith(".py")
#: initial rows of a ring (a power of two; a ring doubles when full): more than an
#: episode's window of packets usually needs, so that few rings grow
ROWS = 512
#: the compiled core's columns of one ring lie this many 8-byte words [one 64-byte cache
#: line] further apart than their length: columns a power of two long, back to back, put
#: a row's words at addresses 4 KiB apart or a multiple of that, which the L1 data cache
#: maps to one set, so a ring's row (a word per column) and a few other rings' rows
#: evicted each other (about 6 of a packet's 7 column writes missed L1 in
#: callgrind's cache model); one line more per column spreads a row over as many sets
COLUMN_PAD = 8


def column(kind: str, n: int):
    """A column of ``n`` zeros: ``kind`` 'd' (float) or 'q' (int), as ``COMPILED`` stores it."""
    if COMPILED:
        return np.zeros(n, np.float64 if kind == "d" else np.int64)
    return [0.0] * n if kind == "d" else [0] * n


#: words from one column of a ring to the next in its block: its rows and the padding
STRIDE = ROWS + COLUMN_PAD


def regrown(col, kind: str, head: int, count: int):
    """The ``count`` rows of ring column ``col`` from row ``head`` on, in order from row 0
    of a column twice as long."""
    return moved(col, kind, head, head + count, 0)


def moved(col, kind: str, first: int, end: int, to: int):
    """A column twice as long as ``col`` (a power of two long) holding its rows
    ``first & mask`` ... ``(end - 1) & mask`` (``mask`` = its length - 1) at rows
    ``(to + k) & new mask`` for k = 0, 1, ...: a ring doubling (:func:`regrown`:
    ``to`` = 0; :class:`envs.sent.SentPackets`: ``to`` = ``first``, rows keyed by number)."""
    n = len(col)
    out = column(kind, 2 * n)
    if COMPILED:  # both column types are 8 bytes wide: rows are copied as 64-bit words
        _copy_rows(np.asarray(col).view(np.int64), out.view(np.int64), first, end, to)
        return out
    h = first & (n - 1)
    rows = (col[h:] + col[:h])[: end - first]  # in order (list slices: C speed)
    s = to & (2 * n - 1)
    split = min(len(rows), 2 * n - s)  # the rows that fit before the end
    out[s : s + split] = rows[:split]
    out[: len(rows) - split] = rows[split:]
    return out


def _copy_rows(src, dst, first: int, end: int, to: int) -> None:
    """The compiled core's ring copy for :func:`moved`: rows ``first & m_src`` ...
    ``(end - 1) & m_src`` of ``src`` to rows ``(to + k) & m_dst`` of ``dst``, in a
    typed loop (``envs/wire.pxd``; a NumPy gather cost ~10 us a column)."""
    m_src = len(src) - 1
    m_dst = len(dst) - 1
    for k in range(end - first):
        dst[(to + k) & m_dst] = src[(first + k) & m_src]


class _Wire:
    """What both directions share: the ring's position (``head``, ``count``,
    ``mask``) and each entry's arrival time [s] (``due``) and reserved event
    sequence number (``seq``), and the scheduling of the oldest entry's
    arrival (module docstring)."""

    __slots__ = ("due", "seq", "head", "count", "mask", "sim", "handler", "kind", "pidx")

    def _target(self, sim, handler: int, kind: int, pidx: int) -> None:
        """Where an entry's arrival goes: event ``kind`` of registered ``handler`` with
        argument ``pidx``, in ``sim`` (:meth:`envs.sim.Simulator.schedule_event`). Kept by
        the wire, not passed per packet: a simulator passed as an argument is a reference
        taken and dropped per call in the compiled core."""
        self.sim = sim
        self.handler = handler
        self.kind = kind
        self.pidx = pidx

    def _init_ring(self, due, seq) -> None:
        """An empty ring of ``ROWS`` rows whose arrival times and sequence numbers are
        the columns ``due`` and ``seq`` (from :mod:`envs.slab`)."""
        self.due = due
        self.seq = seq
        self.head = 0
        self.count = 0
        self.mask = ROWS - 1

    def queue_first(self) -> int:
        """After a push: if the new entry is the only one on the wire, queue its
        arrival (:meth:`_target`; else the one before it will)."""
        if self.count == 1:
            self.sim.schedule_event_reserved(
                self.due[self.head], self.seq[self.head], self.handler, self.kind, self.pidx
            )
        return 0

    def arrive(self) -> int:
        """The oldest entry's arrival event runs: remove the entry (:meth:`pop`), queue
        the next one's arrival, and return the entry's row."""
        r = self.pop()
        if self.count:
            self.sim.schedule_event_reserved(
                self.due[self.head], self.seq[self.head], self.handler, self.kind, self.pidx
            )
        return r

    def pop(self) -> int:
        """Remove the oldest entry, queueing nothing; return its row (read it before the next push)."""
        r = self.head
        self.head = (r + 1) & self.mask
        self.count -= 1
        return r

    def _grow_ring(self) -> None:
        self.due = regrown(self.due, "d", self.head, self.count)
        self.seq = regrown(self.seq, "q", self.head, self.count)
        self.head = 0
        self.mask = 2 * self.mask + 1


class DataWire(_Wire):
    """A path's data packets on their way to the receiver, oldest first: packet
    number, stream, offset and length [bytes] of its frame, the return delay
    [s] of the ACK it triggers (:meth:`envs.link.Path.send`), and its arrival
    time [s] and event sequence number (module docstring)."""

    __slots__ = ("pn", "sid", "off", "length", "return_delay")

    def __init__(self, sim, handler: int, kind: int, pidx: int):
        """An empty wire whose arrivals go to ``sim`` as :meth:`_target` says."""
        self._carve(zeroed_floats(2 * STRIDE), zeroed_ints(5 * STRIDE))
        self._target(sim, handler, kind, pidx)

    def _carve(self, floats, ints) -> None:
        """Take the columns from blocks of :mod:`envs.slab`, :data:`STRIDE` words apart."""
        self.return_delay = floats[:ROWS]
        self.pn = ints[:ROWS]
        self.sid = ints[STRIDE : STRIDE + ROWS]
        self.off = ints[2 * STRIDE : 2 * STRIDE + ROWS]
        self.length = ints[3 * STRIDE : 3 * STRIDE + ROWS]
        self._init_ring(floats[STRIDE : STRIDE + ROWS], ints[4 * STRIDE : 4 * STRIDE + ROWS])

    def push(
        self, pn: int, sid: int, off: int, length: int, return_delay: float, due: float, seq: int
    ) -> int:
        if self.count > self.mask:
            self._grow()
        r = (self.head + self.count) & self.mask
        self.pn[r] = pn
        self.sid[r] = sid
        self.off[r] = off
        self.length[r] = length
        self.return_delay[r] = return_delay
        self.due[r] = due
        self.seq[r] = seq
        self.count += 1
        return 0

    def record(self, r: int) -> tuple:
        """Row ``r`` as ``(pn, sid, off, length, return_delay, due, seq)`` (the columns are C
        arrays in the compiled core, which Python code cannot index)."""
        return (
            self.pn[r],
            self.sid[r],
            self.off[r],
            self.length[r],
            self.return_delay[r],
            self.due[r],
            self.seq[r],
        )

    def _grow(self) -> None:
        h, n = self.head, self.count
        self.pn = regrown(self.pn, "q", h, n)
        self.sid = regrown(self.sid, "q", h, n)
        self.off = regrown(self.off, "q", h, n)
        self.length = regrown(self.length, "q", h, n)
        self.return_delay = regrown(self.return_delay, "d", h, n)
        self._grow_ring()


class AckWire(_Wire):
    """A path's ACK frames on their way to the sender, oldest first: largest packet
    number, ACK delay [s], the receiver's flow-control limit [bytes], its
    out-of-order queue [bytes], how many packet numbers the frame acknowledges,
    and its arrival time [s] and event sequence number (module docstring).
    Those packet numbers wait in a second ring, in frame order: the receiver adds
    each packet's number when it arrives (:meth:`add_pn`) and a frame takes the ones
    added since the previous frame (:meth:`push`)."""

    __slots__ = (
        "largest",
        "ack_delay",
        "max_data",
        "oqs",
        "npn",
        "pns",
        "pn_head",
        "pn_count",
        "pn_mask",
    )

    def __init__(self, sim, handler: int, kind: int, pidx: int):
        """An empty wire whose arrivals go to ``sim`` as :meth:`_target` says."""
        self._carve(zeroed_floats(2 * STRIDE), zeroed_ints(6 * STRIDE))
        self._target(sim, handler, kind, pidx)

    def _carve(self, floats, ints) -> None:
        """Take the columns from blocks of :mod:`envs.slab`, :data:`STRIDE` words apart."""
        self.ack_delay = floats[:ROWS]
        self.largest = ints[:ROWS]
        self.max_data = ints[STRIDE : STRIDE + ROWS]
        self.oqs = ints[2 * STRIDE : 2 * STRIDE + ROWS]
        self.npn = ints[3 * STRIDE : 3 * STRIDE + ROWS]
        self.pns = ints[4 * STRIDE : 4 * STRIDE + ROWS]
        self.pn_head = 0
        self.pn_count = 0
        self.pn_mask = ROWS - 1
        self._init_ring(floats[STRIDE : STRIDE + ROWS], ints[5 * STRIDE : 5 * STRIDE + ROWS])

    def add_pn(self, pn: int) -> int:
        """A data packet arrived: its number goes into the next frame."""
        if self.pn_count > self.pn_mask:
            self.pns = regrown(self.pns, "q", self.pn_head, self.pn_count)
            self.pn_head = 0
            self.pn_mask = 2 * self.pn_mask + 1
        self.pns[(self.pn_head + self.pn_count) & self.pn_mask] = pn
        self.pn_count += 1
        return 0

    def pop_pn(self) -> int:
        """The oldest packet number of the oldest frame (after :meth:`arrive`)."""
        h = self.pn_head
        self.pn_head = (h + 1) & self.pn_mask
        self.pn_count -= 1
        return self.pns[h]

    def skip_pns(self, n: int) -> None:
        """Drop the oldest ``n`` packet numbers (those of a frame nobody reads)."""
        self.pn_head = (self.pn_head + n) & self.pn_mask
        self.pn_count -= n

    def push(
        self,
        largest: int,
        ack_delay: float,
        max_data: int,
        oqs: int,
        npn: int,
        due: float,
        seq: int,
    ) -> int:
        """A frame leaves the receiver, acknowledging the ``npn`` numbers added last."""
        if self.count > self.mask:
            self._grow()
        r = (self.head + self.count) & self.mask
        self.largest[r] = largest
        self.ack_delay[r] = ack_delay
        self.max_data[r] = max_data
        self.oqs[r] = oqs
        self.npn[r] = npn
        self.due[r] = due
        self.seq[r] = seq
        self.count += 1
        return 0

    def frame(self, r: int) -> tuple:
        """Row ``r`` as ``(largest, ack_delay, max_data, oqs, npn, due, seq)`` (see :meth:`DataWire.record`)."""
        return (
            self.largest[r],
            self.ack_delay[r],
            self.max_data[r],
            self.oqs[r],
            self.npn[r],
            self.due[r],
            self.seq[r],
        )

    def _grow(self) -> None:
        h, n = self.head, self.count
        self.largest = regrown(self.largest, "q", h, n)
        self.ack_delay = regrown(self.ack_delay, "d", h, n)
        self.max_data = regrown(self.max_data, "q", h, n)
        self.oqs = regrown(self.oqs, "q", h, n)
        self.npn = regrown(self.npn, "q", h, n)
        self._grow_ring()


__all__ = ["AckWire", "DataWire", "column", "moved", "regrown"]
