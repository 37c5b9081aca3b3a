"""The streams' typed bookkeeping (envs/streams.py) against plain models under
random use: a send stream's unsent ranges against the list of ``[start, end]``
lists it replaced, a receive stream's out-of-order queue against a dict (the
compiled core's open-addressing table: collisions, wrap-around, deletion,
growth)."""

from __future__ import annotations

import math
import random

import pytest

from envs.streams import RecvStream, SendStream


class ListStream:
    """The unsent ranges as a list of ``[start, end]`` lists (the stream's code
    before its ranges were typed)."""

    def __init__(self, size):
        self.size = size
        self.unsent = [[0, size]]
        self.unsent_bytes = size
        self.sent_offset = 0

    def take(self, max_len, gap=0, credit=math.inf):
        unsent = self.unsent
        high = self.sent_offset
        k, start = 0, unsent[0][0]
        if gap > 0:
            target = start + gap
            j = 0
            while j < len(unsent) - 1 and unsent[j][1] <= target:
                j += 1
            gapped = max(unsent[j][0], min(target, unsent[j][1] - 1))
            if gapped < high or gapped - high < credit:
                k, start = j, gapped
        iv = unsent[k]
        length = iv[1] - start
        if max_len < length:
            length = max_len
        room = high - start + credit
        if room < length:
            length = int(room) if room > 0 else 0
        if length <= 0:
            return start, 0, 0
        if start > iv[0]:
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


@pytest.mark.parametrize("seed", range(6))
def test_send_stream_ranges_match_the_list_model(seed):
    """Gaps split ranges (beyond the initial capacity of four), holes fill, credit
    limits; take_front is take's no-gap case whenever no hole lies below the front."""
    rng = random.Random(seed)
    size = rng.choice([0, 1, 5_000, 200_000])
    st, model = SendStream(0, size), ListStream(size)
    for _ in range(400):
        if model.unsent_bytes <= 0:
            break
        max_len = rng.choice([1, 100, 1290])
        credit = rng.choice([math.inf, 0, 500, 10**6])
        no_hole = model.unsent[0][0] == model.sent_offset
        if no_hole and credit != math.inf and credit > 0 and rng.random() < 0.4:
            before = st.unsent_bytes
            off = st.take_front(max_len, credit)
            expect = model.take(max_len, 0, credit)
            assert (off, before - st.unsent_bytes) == expect[:2]
        else:
            gap = rng.choice([0, 0, 1, 1290, 5 * 1290, 50_000])
            assert st.take(max_len, gap, credit) == model.take(max_len, gap, credit)
        assert st.unsent == model.unsent
        assert (st.unsent_bytes, st.sent_offset) == (model.unsent_bytes, model.sent_offset)
        assert st.n_ranges == len(model.unsent)


@pytest.mark.parametrize("seed", range(6))
def test_out_of_order_queue_matches_a_dict(seed):
    """Offsets that step by a power of two (which collide in the table unless its
    hash folds their high bits), by a payload, and at random; pops of queued and
    absent offsets, so that runs wrap around the table and deletions shift them."""
    rng = random.Random(seed)
    rs, model = RecvStream(10**9), {}
    step = rng.choice([1024, 1290, 4096])
    for _ in range(3_000):
        if rng.random() < 0.55:
            off = rng.choice([rng.randrange(2_000) * step, rng.randrange(10**8)])
            length = rng.randrange(0, 1500)
            queued = off not in model
            assert rs.ooo_put(off, length) is queued
            if queued:
                model[off] = length
        else:
            off = (
                rng.choice(list(model))
                if model and rng.random() < 0.7
                else rng.randrange(2_000) * step
            )
            assert rs.ooo_pop(off) == model.pop(off, -1)
        assert rs.ooo_count == len(model)
    assert rs.ooo == model
    for off in list(model):  # empty it: every entry still found after all the shifts
        assert rs.ooo_pop(off) == model.pop(off)
    assert rs.ooo_count == 0 and rs.ooo == {}
