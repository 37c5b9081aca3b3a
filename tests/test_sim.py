"""The event loop pauses the cyclic garbage collector, and may: it makes no cycles."""

from __future__ import annotations

import gc
import json
import subprocess
import sys

import pytest

from envs.sim import Simulator


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
    res = subprocess.run([sys.executable, "-c", _CYCLES, *names], capture_output=True, text=True,
                         timeout=300, check=True)
    out = json.loads(res.stdout.strip().splitlines()[-1])
    for name in names:
        packets, garbage = out[name]
        assert packets > 2_000, name
        assert garbage < 300, (name, garbage)        # made during the run (the emulation is alive)
