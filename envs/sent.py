# cython: boundscheck=False, wraparound=False
# (every index into a column is masked into range)
"""A path's sent, not yet acknowledged or lost packets, keyed by packet
number (:class:`envs.path_sender.PathSender` ``.sent``).

Packet numbers of a path are consecutive, so the records live in a ring of
columns indexed by ``pn & mask`` over the window ``[lo, hi)``: ``hi`` is the
next packet number, ``lo`` the oldest one still in flight (or ``hi``). A
record is sent time [s], size on the wire [bytes], and stream, offset and
length [bytes] of its frame, plus a state: gone (acknowledged or lost),
in flight, or in flight and *shared*: its frame has had another copy (a
retransmission, or the original of one), so only a frame in that state
can have been acknowledged already (:mod:`envs.transport` looks such frames
up in ``acked_frames``; every other frame is acknowledged once).

In the compiled core (``COMPILED`` of :mod:`envs.wire`) the columns are
typed arrays (``envs/sent.pxd``) and the connection reads them directly; in
the ``.py`` core they are lists. Reading code outside the core uses the
mapping view: ``len``, ``in``, ``[pn]`` (a tuple ``(time_sent, size,
stream_id, offset, length)``), ``keys``, ``values``, ``items``, in packet
number order.
"""

from __future__ import annotations

from envs.slab import zeroed_floats, zeroed_ints
from envs.wire import ROWS, STRIDE, moved

#: record states, which are also the number of copies its frame has had (1, or 2 for
#: several: :meth:`SentPackets.take`); the methods compare with these literals, since
#: a module global is a Python object in the compiled core
GONE, IN_FLIGHT, SHARED = 0, 1, 2


class SentPackets:
    """The in-flight packets of one path (module docstring)."""

    __slots__ = ("t_sent", "size", "sid", "off", "length", "state", "lo", "hi", "n", "mask")

    def __init__(self):
        self._carve(zeroed_floats(ROWS), zeroed_ints(5 * STRIDE))
        self.lo = 0  # oldest packet number that may be in flight [pn]
        self.hi = 0  # next packet number
        self.n = 0  # packets in flight
        self.mask = ROWS - 1

    def _carve(self, floats, ints) -> None:
        """Take the columns from blocks of :mod:`envs.slab`, ``STRIDE`` words apart."""
        self.t_sent = floats[:ROWS]
        self.size = ints[:ROWS]
        self.sid = ints[STRIDE : STRIDE + ROWS]
        self.off = ints[2 * STRIDE : 2 * STRIDE + ROWS]
        self.length = ints[3 * STRIDE : 3 * STRIDE + ROWS]
        self.state = ints[4 * STRIDE : 4 * STRIDE + ROWS]

    def add(
        self, pn: int, t_sent: float, size: int, sid: int, off: int, length: int, shared: bool
    ) -> int:
        """Record packet ``pn`` (the next number: ``hi``) as sent at ``t_sent`` [s]."""
        if pn != self.hi:
            raise ValueError(f"packet {pn} sent out of order: the next packet number is {self.hi}")
        if pn - self.lo > self.mask:
            self._grow()
        i = pn & self.mask
        self.t_sent[i] = t_sent
        self.size[i] = size
        self.sid[i] = sid
        self.off[i] = off
        self.length[i] = length
        self.state[i] = 2 if shared else 1
        self.hi = pn + 1
        self.n += 1
        return 0

    def has(self, pn: int) -> bool:
        """Packet ``pn`` is in flight."""
        return self.lo <= pn < self.hi and self.state[pn & self.mask] != 0

    def time_sent(self, pn: int) -> float:
        """When packet ``pn``, in flight, was sent [s] (``self[pn][0]`` without the tuple)."""
        if not self.has(pn):
            raise KeyError(pn)
        return self.t_sent[pn & self.mask]

    def take(self, pn: int) -> int:
        """Remove packet ``pn`` if it is in flight, and say how many copies its frame has
        had: 0 (it is not in flight), 1 (the only one) or 2 (several: shared). Its row
        stays readable (``pn & mask``) until the next :meth:`add`."""
        if pn < self.lo or pn >= self.hi:
            return 0
        mask = self.mask
        copies = self.state[pn & mask]
        if copies == 0:
            return 0
        self.state[pn & mask] = 0
        self.n -= 1
        if pn == self.lo:
            lo = pn + 1
            while lo < self.hi and self.state[lo & mask] == 0:
                lo += 1
            self.lo = lo
        return copies

    def shared(self, pn: int) -> bool:
        """Packet ``pn``'s frame has had another copy (in flight: :meth:`has`)."""
        return self.state[pn & self.mask] == 2

    def mark_shared(self, pn: int) -> None:
        """Packet ``pn``'s frame now has another copy in flight."""
        self.state[pn & self.mask] = 2

    def first(self) -> int:
        """The oldest packet number in flight; -1 if none."""
        return self.lo if self.n > 0 else -1

    def first_single(self, start: int) -> int:
        """The oldest packet number at or after ``start`` that is in flight as its
        frame's only copy (a re-injection candidate: :mod:`envs.transport`); -1 if none."""
        pn = start if start > self.lo else self.lo
        mask = self.mask
        while pn < self.hi:
            if self.state[pn & mask] == 1:
                return pn
            pn += 1
        return -1

    def survivor(self, largest: int, now: float, loss_delay: float, packet_threshold: int) -> int:
        """RFC 9002 §6.1 at ``now`` [s] with packet ``largest`` acknowledged: the first
        packet number not lost. A packet is lost when it was sent ``loss_delay`` [s] or
        more ago or ``packet_threshold`` numbers before ``largest``; both rules are
        monotone in the number, so the lost packets are those in flight before the
        returned number (the first survivor, else ``min(hi, largest + 1)``)."""
        end = self.hi if self.hi <= largest else largest + 1
        pn = self.lo
        while pn < end:
            i = pn & self.mask
            if self.state[i] != 0 and not (
                self.t_sent[i] + loss_delay <= now or largest >= pn + packet_threshold
            ):
                return pn
            pn += 1
        return pn

    def _grow(self) -> None:
        """Double the ring; each packet's row stays ``pn & mask`` (of the new mask)."""
        lo, hi = self.lo, self.hi
        self.t_sent = moved(self.t_sent, "d", lo, hi, lo)
        self.size = moved(self.size, "q", lo, hi, lo)
        self.sid = moved(self.sid, "q", lo, hi, lo)
        self.off = moved(self.off, "q", lo, hi, lo)
        self.length = moved(self.length, "q", lo, hi, lo)
        self.state = moved(self.state, "q", lo, hi, lo)
        self.mask = 2 * self.mask + 1

    # -- the mapping view (module docstring) ------------------------------
    def __len__(self) -> int:
        return self.n

    def __bool__(self) -> bool:
        return self.n > 0

    def __contains__(self, pn) -> bool:
        return self.has(pn)

    def __getitem__(self, pn: int) -> tuple:
        if not self.has(pn):
            raise KeyError(pn)
        i = pn & self.mask
        return (self.t_sent[i], self.size[i], self.sid[i], self.off[i], self.length[i])

    def keys(self) -> list[int]:
        return [pn for pn in range(self.lo, self.hi) if self.state[pn & self.mask] != 0]

    def __iter__(self):
        return iter(self.keys())

    def values(self) -> list[tuple]:
        return [self[pn] for pn in self.keys()]

    def items(self) -> list[tuple]:
        return [(pn, self[pn]) for pn in self.keys()]


def live_frames(paths, retx) -> set:
    """The frames (stream, offset) that an acknowledgement or a loss can still ask
    about: those of the packets in flight on ``paths`` (path senders) and of the
    retransmissions queued in ``retx`` ((stream, offset, length) tuples)."""
    live = set()
    for ps in paths:
        for _t_sent, _size, sid, off, _length in ps.sent.values():
            live.add((sid, off))
    for sid, off, _length in retx:
        live.add((sid, off))
    return live


__all__ = ["SentPackets", "GONE", "IN_FLIGHT", "SHARED", "live_frames"]
