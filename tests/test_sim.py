"""The event loop pauses the cyclic garbage collector, and may: it makes no cycles.
The episode drivers pause it over the whole episode, and drop the emulation before it resumes."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import weakref
from contextlib import contextmanager

import pytest

import baselines.dqn.policy as dqn_policy
import envs.runner as runner
import metalearning.collect as collect
from baselines import make_scheduler
from baselines.dqn.network import QNetSpec
from baselines.dqn.policy import DQNScheduler
from envs.sim import Simulator, collector_paused


@pytest.fixture
def collector_on():
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_run_pauses_the_collector_and_restores_it(collector_on):
    seen = []
    sim = Simulator()
    sim.schedule(0.1, lambda _: seen.append(gc.isenabled()))
    sim.run()
    assert seen == [False]
    assert gc.isenabled()


def test_run_restores_the_collector_when_a_callback_raises(collector_on):
    def boom(_):
        raise RuntimeError("boom")

    sim = Simulator()
    sim.schedule(0.1, lambda _: None)
    sim.schedule(0.2, boom)
    with pytest.raises(RuntimeError):
        sim.run()
    assert gc.isenabled()
    assert sim.events_processed == 1


def test_collector_paused_restores_the_collector_also_after_a_raise_and_nests(collector_on):
    with collector_paused() as value:
        assert value is None and not gc.isenabled()
        with collector_paused():  # an inner pause leaves the outer one's state alone
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("boom")
    assert gc.isenabled()
    gc.disable()
    with collector_paused():
        pass
    assert not gc.isenabled()  # a collector that was off stays off


def test_run_leaves_a_disabled_collector_disabled():
    was = gc.isenabled()
    gc.disable()
    try:
        Simulator().run()
        assert not gc.isenabled()
    finally:
        if was:
            gc.enable()


_CYCLES = """
import gc, json, sys
from baselines import make_scheduler
from envs.runner import setup_episode
from envs.scenario import normalise_scenario
scen = normalise_scenario({"name": "cycles", "max_duration_s": 3.0, "paths": [{"link": "4g"}, {"link": "wlan"}]})
out = {}
for name in sys.argv[1:]:
    emu, conn, _app, s = setup_episode(scen, {"kind": "bulk", "size_bytes": 100_000_000}, make_scheduler(name), 1)
    gc.collect()
    emu.sim.run(until=s["max_duration_s"])
    out[name] = [sum(p.packets_sent for p in conn.paths), gc.collect()]
print(json.dumps(out))
"""


def test_an_episode_makes_no_reference_cycles_while_it_runs():
    """What makes the pause safe: everything the event loop drops is freed
    by reference counting, so a long run with the collector paused does not
    grow (a few objects of the schedulers' first calls are allowed, no
    per-packet ones). In a fresh interpreter: another test's threads could
    drop garbage meanwhile."""
    names = ["minrtt", "blest", "stms", "mpeekaboo"]
    res = subprocess.run(
        [sys.executable, "-c", _CYCLES, *names],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    out = json.loads(res.stdout.strip().splitlines()[-1])
    for name in names:
        packets, garbage = out[name]
        assert packets > 2_000, name
        assert garbage < 300, (name, garbage)  # made during the run (the emulation is alive)


_CLOSED = """
import gc, json
from baselines import make_scheduler
from baselines.dqn.network import QNetSpec
from envs.runner import run_episode
from metalearning.collect import TaskCollector
out = {}
collector = TaskCollector(QNetSpec(19, 2, (8, 8, 8)), epsilon=0.3)
for cc in ("olia", "lia", "cubic"):
    scen = {"name": "closed", "cc": cc, "paths": [{"link": "4g"}, {"link": "wlan"}]}
    runs = [lambda s: run_episode(scen, {"kind": "bulk", "size_bytes": 300_000}, make_scheduler("minrtt"), s),
            lambda s: run_episode(scen, {"kind": "bulk", "size_bytes": 300_000}, make_scheduler("blest"), s),
            lambda s: collector.collect(scen, None, s, 64)]
    for run in runs:
        run(0)  # (a first call's lazy caches)
    gc.collect()
    for seed in range(1, 4):
        for run in runs:
            run(seed)
    out[cc] = gc.collect()
print(json.dumps(out))
"""


def test_a_closed_episode_leaves_no_reference_cycles():
    """After an episode, closing its emulation leaves nothing for the cyclic collector,
    also the coupling of the paths' congestion controllers (a coupled controller and
    its group name each other): left to the collector, a few objects per episode made
    it traverse every live object of a long run again and again. In a fresh interpreter."""
    res = subprocess.run(
        [sys.executable, "-c", _CLOSED], capture_output=True, text=True, timeout=300, check=True
    )
    assert json.loads(res.stdout.strip().splitlines()[-1]) == {"olia": 0, "lia": 0, "cubic": 0}


SMALL = {
    "name": "small",
    "paths": [{"bandwidth_mbps": 20, "rtt_ms": 20}, {"bandwidth_mbps": 10, "rtt_ms": 40}],
}
BULK = {"kind": "bulk", "size_bytes": 200_000}


def _drive_dqn():
    DQNScheduler(reward="packet_rate", seed=0, epsilon=0.0).drive_episode(SMALL, BULK, seed=1)


def _collect_task():
    collect.TaskCollector(QNetSpec(19, 2, (8, 8, 8)), epsilon=0.3).collect(SMALL, None, 1, 64)


@pytest.mark.parametrize(
    "module, drive, dropped",
    [
        (runner, lambda: runner.run_episode(SMALL, BULK, make_scheduler("minrtt"), 1), True),
        (collect, _collect_task, True),
        # a DQN scheduler keeps its last view (FALCON reads it between connections)
        (dqn_policy, _drive_dqn, False),
    ],
    ids=["run_episode", "task_collector", "drive_episode"],
)
def test_episode_drivers_pause_the_collector_and_drop_the_emulation_first(
    monkeypatch, collector_on, module, drive, dropped
):
    """Set-up, run and metrics see the collector paused, and when the pause
    ends nothing of the driver's holds the emulation: the collector's next
    pass finds it garbage (envs/sim.py says why that matters)."""
    seen = {}
    real_setup = module.setup_episode

    def setup(*args, **kwargs):
        seen["collecting"] = gc.isenabled()
        emu, conn, app, s = real_setup(*args, **kwargs)
        seen["app"] = weakref.ref(app)
        return emu, conn, app, s

    @contextmanager
    def paused():
        with collector_paused():
            yield
            gc.collect()  # what a pass at this point would find
            seen["dropped"] = seen["app"]() is None

    monkeypatch.setattr(module, "setup_episode", setup)
    monkeypatch.setattr(module, "collector_paused", paused)
    drive()
    assert seen["collecting"] is False
    assert seen["dropped"] is dropped
    assert gc.isenabled()


def test_events_run_in_time_then_scheduling_order_as_the_queue_grows_and_after_clear():
    """Against a heapq model of (time, sequence): thousands of events with many equal
    times, half scheduled from callbacks, so the compiled queue doubles several times."""
    import heapq

    import numpy as np

    rng = np.random.default_rng(4)
    sim, model, ran, seq = Simulator(), [], [], iter(range(10**9))

    def add(t: float) -> None:
        k = next(seq)
        sim.schedule(t, callback, k)
        heapq.heappush(model, (t, k))

    def callback(k: int) -> None:
        ran.append((sim.now, k))
        if k % 2 == 0 and k < 6000:
            add(sim.now + float(rng.integers(0, 4)) * 0.001)  # often a tie with queued events

    for base in (0.0, 1.0):
        for _ in range(2000):
            add(base + float(rng.integers(0, 200)) * 0.001)
        assert sim.pending == 2000
        sim.run(until=base + 0.1)
        expected = [heapq.heappop(model) for _ in range(len(ran))]
        assert (
            ran == expected
            and all(t <= base + 0.1 for t, _ in ran)
            and sim.pending == len(model) > 0
        )
        sim.clear()
        assert sim.pending == 0
        model.clear()
        ran.clear()


def test_a_reserved_event_runs_where_it_would_have_run_if_scheduled_then():
    """envs.wire queues a path's next arrival only when the one before it runs, with
    the sequence number reserved at its send: ties at equal times keep the send order."""
    sim, ran = Simulator(), []
    early = sim.reserve()  # reserved first: runs first among the ties at t = 1
    sim.schedule(1.0, ran.append, "scheduled after the reservation")
    late = sim.reserve()
    sim.schedule(1.0, ran.append, "scheduled after both reservations")
    sim.schedule(
        0.5, lambda _: sim.schedule_reserved(1.0, late, ran.append, "reserved second"), None
    )
    sim.schedule(
        0.5, lambda _: sim.schedule_reserved(1.0, early, ran.append, "reserved first"), None
    )
    sim.run()
    assert ran == [
        "reserved first",
        "scheduled after the reservation",
        "reserved second",
        "scheduled after both reservations",
    ]
