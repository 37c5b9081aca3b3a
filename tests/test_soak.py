"""Soak: the online learners over one long connection whose conditions change
every 2 s. After the first 10 % of the decisions, the process's memory stays
within 10 % (plus a small allowance for the allocator), and every structure
with a documented bound keeps to it: DQN-On's replay memory, FALCON's
replay, event log, offline-update buffers, estimation rings and change
detectors, and the emulator's event heap and acknowledged-frame set.

The per-packet OQS series (``Connection.oqs_t`` / ``oqs_v``) stays on: it
is thinned at ``oqs_cap`` samples (``envs.receiver.Receiver._record_oqs``);
the soak sets a small cap so that the thinning happens several times.

Default suite: 30 000 decisions per learner; ``slow`` run (``make test-all``): 1 000 000.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from envs.apps import make_app
from envs.emulation import Emulation
from envs.scenario import random_condition_schedule

OQS_CAP = 4096  # OQS samples kept (the default, 2**18, is reached only by the slow run)
PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def rss_mb() -> float:
    """Resident memory of this process [MiB] (Linux)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE / 2**20


def long_scenario(seed: int) -> dict:
    rng = np.random.default_rng(seed)
    return {
        "max_duration_s": 10**6,
        "paths": [
            {
                "bandwidth_mbps": 100,
                "rtt_ms": 25,
                "rtt_std_ms": 5,
                "loss": 0.002,
                "schedule": {"segments": random_condition_schedule(rng, 2.0, 20), "period_s": 40.0},
            },
            {
                "bandwidth_mbps": 60,
                "rtt_ms": 40,
                "rtt_std_ms": 8,
                "loss": 0.004,
                "schedule": {
                    "segments": random_condition_schedule(rng, 2.0, 20, start_s=1.0),
                    "period_s": 40.0,
                },
            },
        ],
    }


def soak(sched, decisions: int, seed: int = 0):
    """Drive one endless bulk download until ``decisions``; (decisions, RSS) samples and the connection."""
    emu = Emulation(seed)
    conn = emu.connect(long_scenario(seed), sched)
    conn.oqs_cap = OQS_CAP
    app = make_app({"kind": "bulk", "size_bytes": 10**13}, 0.01)
    sched.reset(conn)
    app.start(conn)
    samples, heap, t = [], 0, 0.0
    while sched.decisions < decisions:
        t += 0.25
        emu.sim.run(t)
        samples.append((sched.decisions, rss_mb()))
        heap = max(heap, emu.sim.pending)
    return samples, conn, heap


def flat_after_warmup(samples, decisions: int) -> tuple[float, float]:
    """(RSS at 10 % of the decisions, largest RSS after it) [MiB]."""
    warm = next(r for d, r in samples if d >= decisions // 10)
    return warm, max(r for d, r in samples if d >= decisions // 10)


def check_flat(samples, decisions: int, conn, heap: int) -> None:
    warm, peak = flat_after_warmup(samples, decisions)
    print(
        f"RSS {warm:.1f} MiB at 10 % of {decisions} decisions, at most {peak:.1f} MiB after",
        flush=True,
    )
    assert peak <= warm * 1.10 + 8.0, f"memory grew from {warm:.1f} to {peak:.1f} MiB"
    assert heap < 1000, heap  # events in the heap: per packet in flight, not per packet sent
    assert len(conn.acked_frames) < 70_000  # pruned (envs.transport.Connection._prune_acked)
    assert len(conn.oqs_v) < OQS_CAP and conn.oqs_stride >= 4  # thinned, several times


def dqn_on():
    from baselines.dqn.dqn_on import DQNOn

    return DQNOn(hidden=(32, 32), seed=1, replay_capacity=5000, log_every=10**9)


def falcon():
    from baselines.dqn.network import QNetSpec
    from envs.mdp import n_inputs
    from falcon.online.scheduler import FalconScheduler
    from metalearning.bank import MetaModelBank
    from metalearning.grid import ConditionGrid

    bank = MetaModelBank.initial(
        ConditionGrid(), QNetSpec(n_inputs(2, "completion"), 2, (16, 16, 16)), seed=3
    )
    return FalconScheduler(
        bank,
        seed=2,
        max_events=200,
        replay_capacity=2000,
        log_every=10**9,
        offline={
            "interval_s": 5.0,
            "interval_episodes": None,
            "capacity_per_cell": 500,
            "max_cells": 8,
        },
    )


def bounded_learner_state(name: str, sched) -> None:
    assert len(sched.replay) <= sched.replay.capacity
    if name == "falcon":
        assert len(sched.events) <= sched.max_events
        assert sched.changes > 3, "the schedule's changes were not detected"
        off = sched.offline
        assert all(len(buf) <= off.capacity_per_cell for buf in off._store.values())
        assert len(off._store) <= off.max_cells


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc (Linux)")
@pytest.mark.parametrize("decisions", [30_000, pytest.param(1_000_000, marks=pytest.mark.slow)])
@pytest.mark.parametrize("name", ["dqn_on", "falcon"])
def test_memory_stays_flat_over_a_long_connection(name, decisions):
    sched = {"dqn_on": dqn_on, "falcon": falcon}[name]()
    samples, conn, heap = soak(sched, decisions)
    check_flat(samples, decisions, conn, heap)
    bounded_learner_state(name, sched)
