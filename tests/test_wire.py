"""The typed rings of the emulator core: in-flight packets (envs.sent) and what is on a
path's wire (envs.wire), checked against plain Python models under random use,
across several doublings and wrap-arounds."""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest

from envs import slab
from envs.link import Link
from envs.sent import SentPackets
from envs.sim import Simulator
from envs.slab import zeroed_floats, zeroed_ints
from envs.traces.base import CapacityTrace
from envs.wire import COLUMN_PAD, ROWS, STRIDE, AckWire, DataWire


def test_sent_packets_follow_a_dict_of_records_under_random_acks_and_losses():
    rng = np.random.default_rng(3)
    sent, model = SentPackets(), {}
    pn, scale = 0, ROWS // 256
    for step in range(20_000 * scale):
        burst = (
            step % (2800 * scale) < 1400 * scale
        )  # the window grows, then drains: several doublings
        if model and (not burst or rng.random() < 0.3):
            keys = list(model)
            victim = keys[0] if rng.random() < 0.5 else keys[int(rng.integers(len(keys)))]
            assert sent.has(victim) and victim in sent
            rec = model.pop(victim)
            assert sent[victim] == rec[:5]
            # take: removes, and counts the frame's copies
            assert sent.take(victim) == (2 if rec[5] else 1) and sent.take(victim) == 0
        else:
            rec = (0.001 * pn, 1000 + pn % 300, pn % 3, 1290 * pn, 1290, bool(pn % 5 == 0))
            sent.add(pn, *rec)
            model[pn] = rec
            pn += 1
        assert len(sent) == len(model) and bool(sent) == bool(model)
        assert sent.first() == (min(model) if model else -1)
    assert sent.mask + 1 >= 4 * ROWS  # it grew
    assert sent.keys() == sorted(model)
    assert sent.items() == [(k, model[k][:5]) for k in sorted(model)]
    assert all(sent.shared(k) == model[k][5] for k in model)
    assert not sent.has(pn) and not sent.has(-1)
    with pytest.raises(KeyError):
        sent[pn]
    with pytest.raises(ValueError, match="out of order"):
        sent.add(pn + 1, 0.0, 1, 0, 0, 1, False)


def test_a_shared_mark_sticks_to_its_packet():
    sent = SentPackets()
    for pn in range(3):
        sent.add(pn, 0.0, 100, 0, 100 * pn, 100, False)
    sent.mark_shared(1)
    assert [sent.shared(pn) for pn in range(3)] == [False, True, False]


def test_the_wires_are_fifo_queues_across_growth():
    rng = np.random.default_rng(5)
    data, acks = DataWire(Simulator(), 0, 1, 0), AckWire(Simulator(), 0, 2, 0)
    data_model, frame_model, pn_model = deque(), deque(), deque()
    pending, scale = 0, ROWS // 256
    for step in range(20_000 * scale):
        grow = step % (5000 * scale) < 3000 * scale
        if grow or not data_model:
            rec = (
                step,
                step % 7,
                1290 * step,
                1290 - step % 13,
                0.01 + 1e-6 * step,
                0.5 + 1e-5 * step,
                3 * step,
            )
            data.push(*rec)
            data_model.append(rec)
            acks.add_pn(step)
            pn_model.append(step)
            pending += 1
            if rng.random() < 0.5:
                frame = (
                    step,
                    1e-4 * step,
                    10 * step,
                    step % 50,
                    pending,
                    0.7 + 1e-5 * step,
                    3 * step + 1,
                )
                acks.push(*frame)
                frame_model.append(frame)
                pending = 0
        else:
            r = data.pop()
            assert data.record(r) == data_model.popleft()
            if frame_model:
                r = acks.pop()
                frame = frame_model.popleft()
                assert acks.frame(r) == frame
                assert [acks.pop_pn() for _ in range(frame[4])] == [
                    pn_model.popleft() for _ in range(frame[4])
                ]
        assert data.count == len(data_model) and acks.count == len(frame_model)
    assert data.mask + 1 >= 4 * ROWS and acks.mask + 1 >= 4 * ROWS and acks.pn_mask + 1 >= 4 * ROWS


def test_a_link_queue_counts_what_has_not_left_yet_across_growth():
    link = Link(CapacityTrace.constant(1e6), buffer_packets=1000)
    departures = [link.admit(0.0, 1000) for _ in range(1000)]  # 1000 > ROWS: the ring grows
    assert departures == pytest.approx([0.001 * (k + 1) for k in range(1000)])
    assert link.admit(0.0, 1000) == -1.0 and link.drops == 1  # the buffer is full
    assert link.occupancy(0.5005) == (500, 500_000)  # half of them have left
    link.buffer_packets = None
    assert link.buffer_packets is None and link.admit(0.5, 1000) == pytest.approx(1.001)
    link.buffer_bytes = 10_000
    assert link.buffer_bytes == 10_000 and link.admit(0.5, 1000) == -1.0


def test_only_the_oldest_entry_of_a_wire_has_its_arrival_event_queued():
    """Hundreds of packets in flight, a dozen events in the queue (envs.wire's module docstring)."""
    from baselines import make_scheduler
    from envs.runner import setup_episode
    from envs.scenario import normalise_scenario

    scenario = normalise_scenario({"paths": [{"link": "4g"}, {"link": "5g"}]})
    emu, conn, app, _ = setup_episode(
        scenario,
        {"kind": "bulk", "size_bytes": 2_000_000},
        make_scheduler("minrtt"),
        1,
        normalised=True,
    )
    events = on_wire = 0
    t = 0.0
    while not app.done:
        t += 0.002
        emu.sim.run(t)
        events = max(events, emu.sim.pending)
        on_wire = max(
            on_wire, sum(w.count for w in conn.data_wires) + sum(w.count for w in conn.ack_wires)
        )
    # per path: an arrival each way and two timers, and the connection's; plus loss-detection timer events
    # superseded by an earlier deadline, which wait in the queue until their time (17 at most here, at the
    # moment the second path opens: its first RTT samples move its deadline earlier several times)
    assert on_wire > 300 and events <= 20


def test_ring_blocks_are_zeroed_disjoint_and_their_columns_not_4_kib_apart():
    # row k of every column would map to one L1 set (envs.wire.COLUMN_PAD): a ring's columns
    # lie STRIDE words apart, and the slab leaves BLOCK_PAD words after each block
    assert STRIDE == ROWS + COLUMN_PAD and (8 * STRIDE) % 4096
    floats, ints = zeroed_floats(3 * STRIDE), zeroed_ints(2 * STRIDE)
    if slab.__file__.endswith(".py"):  # the .py core: lists of zeros
        assert floats == [0.0] * (3 * STRIDE) and ints == [0] * (2 * STRIDE)
        return
    floats, ints = np.asarray(floats), np.asarray(ints)
    assert (floats.dtype, floats.shape) == (np.float64, (3 * STRIDE,))
    assert (ints.dtype, ints.shape) == (np.int64, (2 * STRIDE,))
    # blocks over several slabs (and one longer than a slab), each written once taken: every
    # new one is zeroed, and none shares a word with another (each keeps its slab alive)
    kept = [floats, ints]
    sizes = [STRIDE + k % 3 for k in range(3 * slab.SLAB // STRIDE)] + [slab.SLAB + 5, 7]
    for k, n in enumerate(sizes):
        block = np.asarray(zeroed_ints(n) if k % 2 else zeroed_floats(n))
        assert block.shape == (n,) and not block.any()
        block[:] = -1
        kept.append(block)
    ranges = sorted((b.__array_interface__["data"][0], b.nbytes) for b in kept)
    assert all(a + size <= b for (a, size), (b, _) in zip(ranges, ranges[1:]))
    # two lone columns taken one after the other from a fresh slab (a whole slab's block
    # first uses up the current one): not 4 KiB apart
    kept.append(np.asarray(zeroed_floats(slab.SLAB)))
    first, second = np.asarray(zeroed_floats(ROWS)), np.asarray(zeroed_floats(ROWS))
    gap = second.__array_interface__["data"][0] - first.__array_interface__["data"][0]
    assert gap == 8 * (ROWS + slab.BLOCK_PAD) and gap % 4096
