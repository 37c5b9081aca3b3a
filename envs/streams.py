"""The streams of a connection (:mod:`envs.transport`): the sender's
:class:`SendStream` (unsent data, holes left by gaps, weight and priority)
and the receiver's :class:`RecvStream` (reassembly with an out-of-order
queue). Units: bytes and seconds."""

from __future__ import annotations

import math

import numpy as np

from envs.wire import column, moved

#: True in the compiled module (an extension's ``__file__`` is not the ``.py``)
COMPILED = not __file__.endswith(".py")

#: initial capacity of a stream's unsent ranges (doubles when full: gaps split ranges)
RANGES = 4
#: initial slots of a receive stream's out-of-order table (compiled core; doubles at half full)
OOO_SLOTS = 64


class SendStream:
    """Sender side of a stream: the unsent byte ranges, sorted and disjoint.

    Range ``i < n_ranges`` is ``[_lo[i], _hi[i])`` [bytes]. The ranges live in
    typed columns (:func:`envs.wire.column`), not in a list of ``[start,
    end]`` lists: the connection takes the next in-order bytes of a stream
    for nearly every packet (:meth:`envs.transport.Connection.try_send`), and
    each such list update allocated a Python integer. Most streams only ever
    hold one range; a gap (:meth:`take`) splits one in two."""

    __slots__ = (
        "stream_id",
        "size",
        "weight",
        "priority",
        "release_time",
        "_lo",
        "_hi",
        "n_ranges",
        "unsent_bytes",
        "sent_offset",
        "swrr_current",
    )

    def __init__(self, stream_id, size, weight=1.0, priority=0, release_time=0.0):
        self.stream_id = stream_id
        self.size = size
        self.weight = weight
        self.priority = priority
        self.release_time = release_time
        self._lo = column("q", RANGES)
        self._hi = column("q", RANGES)
        self._hi[0] = size  # one range, [0, size) (empty for an empty stream, as a list held it)
        self.n_ranges = 1
        self.unsent_bytes = size
        self.sent_offset = 0  # highest offset handed out so far
        self.swrr_current = 0.0

    @property
    def unsent(self) -> list:
        """The unsent ranges as ``[start, end]`` lists [bytes] (a copy)."""
        return [[self._lo[i], self._hi[i]] for i in range(self.n_ranges)]

    @property
    def remaining(self) -> int:
        return self.unsent_bytes

    @property
    def hole_bytes(self) -> int:
        """Unsent bytes below the highest offset sent (left by gaps) [bytes]."""
        return self.unsent_bytes - (self.size - self.sent_offset)

    def take(self, max_len: int, gap: int = 0, credit: float = math.inf):
        """Hand out up to ``max_len`` unsent bytes, skipping ``gap`` bytes ahead
        of the first unsent one, within ``credit`` bytes of connection
        flow-control credit. Flow control counts the highest offset sent
        (RFC 9000 §4.1): filling a hole below it is free, extending it costs.
        A gap that would leave no credit falls back to the first unsent byte.
        Returns ``(offset, length, credit used)``; length 0 if nothing fits."""
        lo = self._lo
        hi = self._hi
        high = self.sent_offset
        k, start = 0, lo[0]
        if gap > 0:
            target = start + gap
            j = 0
            while j < self.n_ranges - 1 and hi[j] <= target:
                j += 1
            gapped = hi[j] - 1
            if target < gapped:
                gapped = target
            if lo[j] > gapped:
                gapped = lo[j]
            if gapped < high or gapped - high < credit:  # affordable: take the gap
                k, start = j, gapped
        end_k = hi[k]
        length = end_k - start
        if max_len < length:
            length = max_len
        room = high - start + credit  # bytes that fit under the credit from start
        if room < length:
            length = int(room) if room > 0 else 0
        if length <= 0:
            return start, 0, 0
        end = start + length
        if start > lo[k]:  # split the range around the taken bytes
            hi[k] = start
            if end < end_k:
                self._insert(k + 1, end, end_k)
        else:
            lo[k] = end
            if end >= end_k:
                self._remove(k)
        self.unsent_bytes -= length
        used = 0
        if end > high:
            used = end - high
            self.sent_offset = end
        return start, length, used

    def take_front(self, max_len: int, credit: int) -> int:
        """Hand out the next in-order bytes: at most ``max_len``, at most ``credit`` (> 0)
        [bytes], from the first unsent byte, which must be ``sent_offset`` (no hole below
        it). Returns the offset; the length is what ``unsent_bytes`` fell by. The
        common case of :meth:`take` (no gap, no hole), for the connection's
        per-packet path."""
        off = self._lo[0]
        length = self._hi[0] - off
        if max_len < length:
            length = max_len
        if credit < length:
            length = credit
        end = off + length
        self._lo[0] = end
        if end >= self._hi[0]:
            self._remove(0)
        self.unsent_bytes -= length
        if end > self.sent_offset:
            self.sent_offset = end
        return off

    def _insert(self, k: int, lo: int, hi: int) -> None:
        """Insert range ``[lo, hi)`` at index ``k``, shifting the later ones up."""
        n = self.n_ranges
        if n == len(self._lo):
            self._lo = moved(self._lo, "q", 0, n, 0)
            self._hi = moved(self._hi, "q", 0, n, 0)
        i = n
        while i > k:
            self._lo[i] = self._lo[i - 1]
            self._hi[i] = self._hi[i - 1]
            i -= 1
        self._lo[k] = lo
        self._hi[k] = hi
        self.n_ranges = n + 1

    def _remove(self, k: int) -> None:
        """Remove range ``k``, shifting the later ones down."""
        n = self.n_ranges - 1
        for i in range(k, n):
            self._lo[i] = self._lo[i + 1]
            self._hi[i] = self._hi[i + 1]
        self.n_ranges = n


def wrr_pick(active: list) -> SendStream:
    """The next stream of smooth weighted round robin over ``active`` (the
    streams with unsent data); updates their ``swrr_current``."""
    best = None
    total = 0.0
    for st in active:
        st.swrr_current += st.weight
        total += st.weight
        if best is None or st.swrr_current > best.swrr_current:
            best = st
    best.swrr_current -= total
    return best


def any_holes(active: list) -> bool:
    """Some stream of ``active`` has unsent bytes below its highest offset
    sent (free to send without flow-control credit)."""
    for st in active:
        if st.hole_bytes > 0:
            return True
    return False


class RecvStream:
    """Receiver side of a stream: the next in-order offset, and the out-of-order
    queue (the frames that arrived above a hole: offset -> length [bytes]).

    The .py core keeps the queue in a dict. The compiled core keeps it in an
    open-addressing table of typed columns (linear probing, at most half
    full, backward-shift deletion), allocated at the first frame that arrives
    out of order: about half of the packets of a two-path download wait
    there, and a dict entry cost two Python integers per frame. Both hold the
    same entries (the receiver never iterates the queue)."""

    __slots__ = (
        "size",
        "next_offset",
        "complete_time",
        "ooo_count",
        "_ooo",
        "_keys",
        "_vals",
        "_mask",
    )

    def __init__(self, size):
        self.size = size
        self.next_offset = 0
        self.complete_time = -1.0
        self.ooo_count = 0  # frames in the out-of-order queue
        self._ooo: dict[int, int] | None = None if COMPILED else {}  # the .py core's queue
        self._mask = 0  # the compiled core's table: capacity - 1 (0: not allocated)

    @property
    def ooo(self) -> dict:
        """The out-of-order queue, offset -> length [bytes] (a copy)."""
        if not COMPILED:
            return dict(self._ooo)
        return {
            self._keys[i]: self._vals[i]
            for i in range(self._mask + 1 if self._mask else 0)
            if self._keys[i] >= 0
        }

    def ooo_put(self, off: int, length: int) -> bool:
        """Queue the frame at ``off`` [bytes] of ``length`` [bytes] unless one at ``off`` is
        queued already; True if queued."""
        if not COMPILED:
            if off in self._ooo:
                return False
            self._ooo[off] = length
            self.ooo_count += 1
            return True
        if 2 * (self.ooo_count + 1) > self._mask + 1:
            self._grow()
        mask = self._mask
        i = _slot(off, mask)
        while self._keys[i] >= 0:
            if self._keys[i] == off:
                return False
            i = (i + 1) & mask
        self._keys[i] = off
        self._vals[i] = length
        self.ooo_count += 1
        return True

    def ooo_pop(self, off: int) -> int:
        """Remove the frame queued at ``off`` [bytes] and return its length; -1 if none."""
        if not COMPILED:
            length = self._ooo.pop(off, -1)
            if length >= 0:
                self.ooo_count -= 1
            return length
        if self.ooo_count == 0:
            return -1
        mask = self._mask
        i = _slot(off, mask)
        while self._keys[i] != off:
            if self._keys[i] < 0:
                return -1
            i = (i + 1) & mask
        length = self._vals[i]
        # backward-shift deletion: move up each later entry of the run whose home
        # slot is not cyclically in (i, j], so that every probe still finds it
        j = i
        while True:
            j = (j + 1) & mask
            if self._keys[j] < 0:
                break
            home = _slot(self._keys[j], mask)
            if (i < home <= j) if i <= j else (i < home or home <= j):
                continue
            self._keys[i] = self._keys[j]
            self._vals[i] = self._vals[j]
            i = j
        self._keys[i] = -1
        self.ooo_count -= 1
        return length

    def _grow(self) -> None:
        """Allocate the table (``OOO_SLOTS`` slots), or double it and re-insert its entries.
        Keys and values are the two rows of one array (one NumPy call, and no NumPy view
        per row in the compiled core); a value is read only where its key is set."""
        old_mask = self._mask
        cap = OOO_SLOTS if old_mask == 0 else 2 * (old_mask + 1)
        table = np.empty((2, cap), np.int64)
        keys = table[0]
        for i in range(cap):
            keys[i] = -1
        if old_mask == 0:
            self._keys = keys
            self._vals = table[1]
            self._mask = cap - 1
            return
        old_keys = self._keys
        old_vals = self._vals
        self._keys = keys
        self._vals = table[1]
        self._mask = cap - 1
        for k in range(old_mask + 1):
            if old_keys[k] >= 0:
                i = _slot(old_keys[k], self._mask)
                while keys[i] >= 0:
                    i = (i + 1) & self._mask
                keys[i] = old_keys[k]
                self._vals[i] = old_vals[k]


def _slot(off: int, mask: int) -> int:
    """The home slot of offset ``off`` in a table of ``mask`` + 1 slots: the offset's bits
    folded, since offsets step by the payload size (often a multiple of a power of two)."""
    return (off ^ (off >> 9) ^ (off >> 19)) & mask


__all__ = ["SendStream", "RecvStream", "any_holes", "wrr_pick"]
