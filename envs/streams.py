"""The streams of a connection (:mod:`envs.transport`): the sender's
:class:`SendStream` (unsent data, holes left by gaps, weight and priority)
and the receiver's :class:`RecvStream` (reassembly with an out-of-order
queue). Units: bytes and seconds."""

from __future__ import annotations

import math


class SendStream:
    """Sender side of a stream: unsent byte ranges (sorted, disjoint)."""

    __slots__ = (
        "stream_id",
        "size",
        "weight",
        "priority",
        "release_time",
        "unsent",
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
        self.unsent = [[0, size]]
        self.unsent_bytes = size
        self.sent_offset = 0  # highest offset handed out so far
        self.swrr_current = 0.0

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
        unsent = self.unsent
        high = self.sent_offset
        k, start = 0, unsent[0][0]
        if gap > 0:
            target = start + gap
            j = 0
            while j < len(unsent) - 1 and unsent[j][1] <= target:
                j += 1
            gapped = max(unsent[j][0], min(target, unsent[j][1] - 1))
            if gapped < high or gapped - high < credit:  # affordable: take the gap
                k, start = j, gapped
        iv = unsent[k]
        length = iv[1] - start
        if max_len < length:
            length = max_len
        room = high - start + credit  # bytes that fit under the credit from start
        if room < length:
            length = int(room) if room > 0 else 0
        if length <= 0:
            return start, 0, 0
        if start > iv[0]:  # split the interval around the taken range
            unsent.insert(k + 1, [start + length, iv[1]])
            iv[1] = start
            if unsent[k + 1][0] >= unsent[k + 1][1]:
                unsent.pop(k + 1)
        else:
            iv[0] = start + length
            if iv[0] >= iv[1]:
                unsent.pop(k)
        self.unsent_bytes -= length
        end = start + length
        used = 0
        if end > high:
            used = end - high
            self.sent_offset = end
        return start, length, used


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
    __slots__ = ("size", "next_offset", "ooo", "complete_time")

    def __init__(self, size):
        self.size = size
        self.next_offset = 0
        self.ooo: dict[int, int] = {}  # offset -> length, frames above a hole
        self.complete_time = -1.0


__all__ = ["SendStream", "RecvStream", "any_holes", "wrr_pick"]
