"""Emulator speed benchmark: the compiled core against the pure-Python one.

    python -m benchmarks.emulator_speed [--repeats 5] [--episodes 40] [--size 2000000] [--tasks 30]
        [--workloads minrtt,dqn_collect,...] [--against REV] [--out FILE]

Workloads (each timed with ``time.process_time``, episode setup included,
after one untimed warm-up run that pays the lazy imports):

* ``minrtt``: 2 MB bulk downloads over the static 4G+5G pair (Table I
  links, jitter and loss on, OLIA) with minRTT; emulated packets per
  CPU-second;
* ``short_episodes``: minRTT downloads of ``SHORT_SIZE`` bytes (one packet)
  over the same pair, ``SHORT_PER_EPISODE`` x ``--episodes`` of them;
  episodes per CPU-second: an episode's fixed cost (normalisation, set-up,
  handshake, metrics, teardown), which every episode of the other workloads
  pays once;
* ``minrtt_traces``: the same over a real-trace pair (``TRACE_SCENARIO``: the
  train list's LTE + Wi-Fi condition, a Raca 4G drive and an Aydin Wi-Fi
  recording, random trace starts), where every packet's link service reads
  the capacity trace and every episode loads the trace files;
* ``modes``: the mode MDP's scheduler (:class:`baselines.modes.scheduler.ModeScheduler`,
  ``dqn_modes``' ten share modes and four rules) over the same real-trace pair,
  its chooser walking the modes five at a time, one per epoch: what the mode
  learners' behaviour, validation and evaluation downloads run;
* ``first_with_room``: the same with a trivial Python callback
  (:class:`envs.scheduler.FirstWithRoom`): the emulator plus one Python call
  per decision;
* ``paths_N`` (N = 2, 4, 8): one minRTT connection over N paths (100 Mbit/s
  each, base RTTs 20 to 55 ms, 2 % jitter, 0.1 % loss), 2 MB x N/2;
* ``connections_N`` (N = 1, 8, 64): N minRTT connections of two paths each,
  every first path through one shared 1 Gbit/s bottleneck, the second a
  private 50 Mbit/s path, 1 MB each, all in one simulator. Each scaling
  workload emulates the same bytes per repeat (``--episodes`` x 2 / N
  episodes of ``paths_N``, x 8 / N of ``connections_N``), so that none is a
  few milliseconds of CPU time, which this machine's noise would swamp;
* ``same_share_64``: ``connections_64`` with the shared bottleneck 64 times
  as fast (64 Gbit/s), so that each connection has the share of it that
  ``connections_1``'s has: every connection sends the packets that
  ``connections_1``'s sends, and none is retransmitted. ``connections_64``
  congests its bottleneck, and its packets carry loss recovery, congestion
  avoidance and more traffic on the jittered path; from ``connections_1`` to
  ``same_share_64`` only the number of connections changes (the scaling
  table's ``same_share`` row). Each scaling workload reports its
  retransmissions per packet;
* ``dqn_collect``: bank-build task collection (:class:`metalearning.collect.TaskCollector`,
  the bank presets' network and MDP, a fresh network, eps 0.3, 512
  decisions per task) on ``--tasks`` tasks drawn over the condition grid;
  decisions per CPU-second;
* ``gym_env``: the Gymnasium environment (:class:`envs.gym_env.MultipathSchedulingEnv`,
  the completion MDP, 2 MB over the static 4G+5G pair) stepped one decision
  at a time by a policy of the state (the path with the lower first
  feature), resets included; steps per CPU-second;
* ``vector_env``: the same policy as one array function over
  :class:`envs.vector_env.MultipathVectorEnv` with ``VECTOR_ENVS``
  instances (next-step autoreset), as many steps per repeat;
* ``vector_collect``: what ``dqn_collect`` would become through the vector
  environment: ``VECTOR_ENVS`` instances of the completion MDP, each acting
  on tasks drawn over the condition grid (``scenario_sampler``, 2 MB, the
  120 s cap, 512 decisions), stepped together by one eps-greedy (0.3)
  policy of the bank presets' fresh network whose pass is batched over all
  instances (NumPy's products); decisions per CPU-second until every
  instance has taken its 512, resets included. Its ceiling: it keeps no
  experience, and its one network is shared, where each cell of a bank
  build acts with its own (so there is nothing to batch);
* ``qnet_forward``: the per-decision Q-network forward pass and argmax of
  one state (:meth:`baselines.dqn.network.NumpyQNet.argmax`, the bank
  presets' 3 x 64 network and MDP, i.e. :class:`envs.dense.DenseForward`)
  on 20 000 states; forward passes per CPU-second, and in
  ``baseline_per_cpu_s`` the same with NumPy's matrix products (the
  scheduler's pass before ``envs/dense.py``), and in ``batched_per_cpu_s``
  states per CPU-second through NumPy's products in batches of ``BATCH``:
  the most that batching decisions across that many episodes run in
  lockstep could make of the pass (it batches nothing else of a decision).

Every repeat runs each workload once on each core, in a fresh interpreter
(``FALCON_PURE_PYTHON=1`` for the pure-Python one), alternating, so that both
see the same machine; the report gives per core the median over repeats and
the median of the per-repeat speed-ups (compiled / pure): the figure to
quote, since this machine's speed drifts. Each run also checks that both
cores emulated the same thing (a checksum of the results). The scaling
workloads run in turn within each repeat instead (every core of one, then
the next), and each row of the scaling table (``scaling``) gives the median
of its per-repeat cost ratios with the ratios themselves, so that a slow
phase of the machine cancels in each ratio as it does in a speed-up.

``--against REV`` times a git revision beside the working tree: its tracked
files, unpacked and compiled once under the FALCON cache
(:mod:`benchmarks.revision_tree`), run in every repeat too, turn about with
this tree; the report adds per workload its median (``previous``), the median
of the per-repeat ratios this tree / it (``vs_previous_median``: the figure
to quote for a change), and whether its checksums are this tree's. ``--against
HEAD`` times uncommitted changes, ``--against HEAD~1`` the last commit. The
workload code is this file's in both trees. The report records the working
tree's commit and a hash of its uncommitted changes (``tree``).

The report ends with ``targets``: each of :data:`TARGETS` whose workload ran,
its figure in this run and whether it meets the target, and whether every
workload gave the same results on both cores. It also names the machine
(``machine``: CPU model and count) and the load average at the start.
``--out FILE`` writes the report there too (atomically); the documentation's
speed page (``docs/results/speed.md``) is generated from the one kept in
``docs/speed/emulator_speed.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

#: the repository this benchmark times (its packages, compiled core or ``.py`` sources)
ROOT = Path(__file__).resolve().parent.parent
SCENARIO = {"name": "static_4g_5g", "paths": [{"link": "4g"}, {"link": "5g"}]}
#: the ``minrtt_traces`` workload's paths (train files of data/traces/split.yaml)
TRACE_SCENARIO = {
    "name": "lte_wifi_traces",
    "paths": [
        {
            "trace": "raca_4g_lte_2018/car/B_2018.01.17_09.10.11.csv",
            "trace_start_s": "random",
            "rtt_ms": 50,
            "rtt_std_ms": 12,
        },
        {
            "trace": "aydin_multipath_wifi_cellular/12_1_wifi.csv",
            "trace_start_s": "random",
            "rtt_ms": 20,
            "rtt_std_ms": 6,
        },
    ],
}
#: the scaling table: number of paths of one connection, and of connections sharing one bottleneck
PATH_COUNTS = (2, 4, 8)
CONNECTION_COUNTS = (1, 8, 64)
SCALING = (
    tuple(f"paths_{n}" for n in PATH_COUNTS)
    + tuple(f"connections_{n}" for n in CONNECTION_COUNTS)
    + (f"same_share_{CONNECTION_COUNTS[-1]}",)
)
#: states per batch of the ``qnet_forward`` workload's batched pass
BATCH = 64
#: instances of the ``vector_env`` workload
VECTOR_ENVS = 64
#: decisions per repeat of the ``gym_env`` and ``vector_env`` workloads
ENV_STEPS = 128_000
#: the bank workloads' tasks (``dqn_collect``, ``vector_collect``): scenario keys beside the
#: grid's, exploration probability and decisions per task
TASK_BASE = {"cc": "olia", "max_duration_s": 120.0}
TASK_EPSILON = 0.3
TASK_DECISIONS = 512
WORKLOADS = (
    "minrtt",
    "short_episodes",
    "minrtt_traces",
    "modes",
    "first_with_room",
    "dqn_collect",
    "qnet_forward",
    "gym_env",
    "vector_env",
    "vector_collect",
    *SCALING,
)


@dataclass(frozen=True)
class Target:
    """A speed target the compiled core is held to: ``figure`` of ``workload`` at least
    ``bound`` (at most, when ``at_most``). ``figure``: ``compiled``, the median per
    CPU-second of the workload's entry; ``speedup``, its median speed-up over the pure
    core; ``cost_growth``, the compiled per-packet cost growth of the scaling row
    ``workload`` (``paths`` or ``connections``)."""

    what: str
    workload: str
    figure: str
    bound: float
    at_most: bool = False

    def met_by(self, value: float) -> bool:
        return value <= self.bound if self.at_most else value >= self.bound


#: the targets of the report's ``targets`` (a single run's medians; docs/explanation/speed.md)
TARGETS = (
    Target("minRTT, 2 MB over Table I 4G + 5G [packets / CPU-s]", "minrtt", "compiled", 2e6),
    Target("minRTT, the pure-Python core's time over the compiled one's", "minrtt", "speedup", 15),
    Target("vector environment, 64 instances [steps / CPU-s]", "vector_env", "compiled", 3e5),
    Target("bank task collection [decisions / CPU-s]", "dqn_collect", "compiled", 3e5),
    Target("per-packet cost growth, 2 to 8 paths", "paths", "cost_growth", 1.5, at_most=True),
    Target(
        "per-packet cost growth, 1 to 64 connections",
        "connections",
        "cost_growth",
        1.5,
        at_most=True,
    ),
)


def per_cpu_s_key(entry: dict) -> str:
    """The key of a workload entry's medians per core (``median_<unit>_per_cpu_s``)."""
    return next(
        k
        for k in entry
        if k.startswith("median_") and k.endswith("_per_cpu_s") and "numpy" not in k
    )


def target_rows(report: dict) -> list[dict]:
    """Each of :data:`TARGETS` whose workload the report ran, with its measured figure and
    whether it is met, then whether both cores gave the same results in every workload."""
    rows = []
    for t in TARGETS:
        if t.figure == "cost_growth":
            row = report.get("scaling", {}).get(t.workload)
            value = None if row is None else row["cost_growth"]["compiled"]
        else:
            entry = report["results"].get(t.workload)
            if entry is None:
                value = None
            elif t.figure == "speedup":
                value = entry["speedup_median"]
            else:
                value = entry[per_cpu_s_key(entry)]["compiled"]
        if value is not None:
            bound = ("<= " if t.at_most else ">= ") + shown(t.bound)
            rows.append(
                {"target": t.what, "bound": bound, "measured": value, "met": t.met_by(value)}
            )
    if report["results"]:
        same = [n for n, e in report["results"].items() if e["identical_results"]]
        rows.append(
            {
                "target": "the same results on both cores, every workload",
                "bound": "all",
                "measured": f"{len(same)} of {len(report['results'])}",
                "met": len(same) == len(report["results"]),
            }
        )
    return rows


def shown(x) -> str:
    """A measured figure as the report's summary prints it (text as it is)."""
    if isinstance(x, str):
        return x
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


#: where :func:`machine` reads the CPU's fields and its caches (Linux)
CPUINFO = Path("/proc/cpuinfo")
CPU_CACHES = Path("/sys/devices/system/cpu/cpu0/cache")


def machine() -> dict:
    """What the run ran on: the CPU's model (Linux's ``/proc/cpuinfo``, else the platform's
    name for it), its number of CPUs, and the operating system. On Linux also the CPU's
    family, model and stepping (``cpu_id``) and its caches' sizes (``caches``: each
    level's size as the first CPU sees it, e.g. ``L1d 48K``): a virtual machine may give
    its CPU a generic name ("AMD EPYC") that two generations of different speed share."""
    cpu = platform.processor()
    out: dict = {}
    try:
        with open(CPUINFO) as f:
            fields: dict = {}
            for line in f:
                if not line.strip():
                    break  # the first CPU's fields
                key, _, value = line.partition(":")
                fields[key.strip()] = value.strip()
        cpu = fields.get("model name", cpu)
        if "cpu family" in fields:
            out["cpu_id"] = (
                f"family {fields['cpu family']} model {fields.get('model', '?')} "
                f"stepping {fields.get('stepping', '?')}"
            )
    except OSError:
        pass
    caches = []
    for index in sorted(CPU_CACHES.glob("index*")):
        try:
            level, kind, size = ((index / f).read_text().strip() for f in ("level", "type", "size"))
        except OSError:
            continue
        name = {"Data": "d", "Instruction": "i"}.get(kind, "")
        caches.append(f"L{level}{name} {size}")
    if caches:
        out["caches"] = ", ".join(caches)
    return {"cpu": cpu or "unknown", "cpus": os.cpu_count(), "platform": platform.platform(), **out}


def _episodes(name: str, episodes: int, size: int) -> dict:
    from baselines import make_scheduler
    from envs.runner import run_episode
    from envs.scheduler import FirstWithRoom

    scenario = TRACE_SCENARIO if name in ("minrtt_traces", "modes") else SCENARIO

    def sched():
        if name == "first_with_room":
            return FirstWithRoom()
        if name == "modes":
            return _mode_scheduler()
        return make_scheduler("minrtt" if name == "minrtt_traces" else name)

    run_episode(
        scenario, {"kind": "bulk", "size_bytes": size}, sched(), 10**6
    )  # warm-up (lazy imports, the trace files' first parse)
    packets, check = 0, 0.0
    t0 = time.process_time()
    for seed in range(episodes):
        r = run_episode(scenario, {"kind": "bulk", "size_bytes": size}, sched(), seed)
        packets += r.metrics["packets_sent"]
        check += r.metrics["download_time_s"]
    cpu = time.process_time() - t0
    return {"per_cpu_s": packets / cpu, "unit": "packets", "count": packets, "checksum": check}


#: the ``short_episodes`` workload's download [bytes]: one packet
SHORT_SIZE = 1000
#: ``short_episodes`` runs this many episodes per ``--episodes`` (a 1 kB episode costs
#: about a quarter of a 2 MB one's CPU time: enough of them to time)
SHORT_PER_EPISODE = 25


def _short_episodes(episodes: int) -> dict:
    """Episodes per CPU-second of the ``short_episodes`` workload (module docstring)."""
    from baselines import make_scheduler
    from envs.runner import run_episode

    app = {"kind": "bulk", "size_bytes": SHORT_SIZE}
    run_episode(SCENARIO, app, make_scheduler("minrtt"), 10**6)  # warm-up
    n = episodes * SHORT_PER_EPISODE
    check = 0.0
    t0 = time.process_time()
    for seed in range(n):
        check += run_episode(SCENARIO, app, make_scheduler("minrtt"), seed).metrics[
            "download_time_s"
        ]
    cpu = time.process_time() - t0
    return {"per_cpu_s": n / cpu, "unit": "episodes", "count": n, "checksum": check}


def _mode_scheduler():
    """The ``modes`` workload's scheduler: ``dqn_modes``' modes, a chooser that walks them."""
    from baselines.modes.scheduler import DEFAULT_RULES, ModeScheduler, make_modes

    modes = make_modes(rules=DEFAULT_RULES)
    epochs = [0]

    def walk(state) -> int:
        epochs[0] += 1
        return (5 * epochs[0]) % len(modes)

    return ModeScheduler(modes, walk)


def _paths(n: int) -> dict:
    return {
        "name": f"paths_{n}",
        "paths": [
            {
                "bandwidth_mbps": 100,
                "rtt_ms": 20 + 5 * i,
                "rtt_std_ms": 0.4 + 0.1 * i,
                "loss": 0.001,
            }
            for i in range(n)
        ],
    }


def _scaling(name: str, episodes: int) -> dict:
    """Packets per CPU-second of a scaling workload (module docstring)."""
    from baselines import make_scheduler
    from envs.apps import make_app
    from envs.emulation import Emulation
    from envs.runner import run_episode
    from envs.sim import collector_paused

    kind, count = name.rsplit("_", 1)
    n = int(count)

    def one(seed: int) -> tuple[float, float, float]:
        if kind == "paths":
            r = run_episode(
                _paths(n),
                {"kind": "bulk", "size_bytes": 1_000_000 * n},
                make_scheduler("minrtt"),
                seed,
            )
            m = r.metrics
            return m["packets_sent"], m["events"], m["retransmissions"], m["download_time_s"]
        emu = Emulation(seed)
        conns = []
        # same_share_N: the bottleneck N times as fast, each connection's share of it as one's
        bottleneck_mbps = 1000 * (n if kind == "same_share" else 1)
        for k in range(n):
            sc = {
                "paths": [
                    {"bandwidth_mbps": bottleneck_mbps, "rtt_ms": 20, "shared_link": "bottleneck"},
                    {"bandwidth_mbps": 50, "rtt_ms": 30 + k % 7, "rtt_std_ms": 1},
                ]
            }
            sched = make_scheduler("minrtt")
            conn = emu.connect(sc, sched)
            app = make_app({"kind": "bulk", "size_bytes": 1_000_000}, 0.01)
            sched.reset(conn)
            app.start(conn)
            conns.append(conn)
        end = emu.sim.run(120.0)
        packets = sum(c.packets_sent for c in conns)
        retransmissions = sum(p.retransmissions for c in conns for p in c.paths)
        events = emu.sim.events_processed
        emu.close()  # freed by reference counting, as the episode drivers leave it
        return packets, events, retransmissions, end

    one(10**6)  # warm-up
    packets, events, retransmissions, check = 0, 0, 0, 0.0
    t0 = time.process_time()
    for seed in range(
        max(1, episodes * (2 if kind == "paths" else 8) // n)
    ):  # equal bytes (docstring)
        with collector_paused():  # as the project's episode drivers run (envs.runner.run_episode)
            p, e, r, t = one(seed)
        packets += p
        events += e
        retransmissions += r
        check += t
    cpu = time.process_time() - t0
    return {
        "per_cpu_s": packets / cpu,
        "unit": "packets",
        "count": packets,
        "events": events,
        "retransmissions": retransmissions,
        "checksum": check,
    }


def _quick_bank():
    """The bank workloads' grid, network spec and fresh network weights (the quick
    bank preset's, seed 0)."""
    from falcon.config import load_group, to_plain
    from metalearning.build import BankBuildSpec
    from metalearning.reptile import initial_params, split_params

    bank = BankBuildSpec.from_config(to_plain(load_group("bank", "quick")))
    spec = bank.qnet_spec
    return bank.grid, spec, split_params(spec, initial_params(spec, 0))


def _collect(tasks: int) -> dict:
    import numpy as np

    from metalearning.collect import TaskCollector

    grid, spec, weights = _quick_bank()
    collector = TaskCollector(spec, TASK_EPSILON)
    rng = np.random.default_rng(0)
    drawn = [grid.sample_task(int(c), rng, TASK_BASE) for c in rng.integers(0, grid.n_cells, tasks)]
    collector.collect(drawn[0], weights, 10**6, TASK_DECISIONS)  # warm-up (lazy imports)
    n, check = 0, 0.0
    t0 = time.process_time()
    for k, task in enumerate(drawn):
        exp = collector.collect(task, weights, k, TASK_DECISIONS)
        n += exp.n
        check += float(exp.rewards.sum())
    cpu = time.process_time() - t0
    return {"per_cpu_s": n / cpu, "unit": "decisions", "count": n, "checksum": check}


def _forward(states: int = 20_000) -> dict:
    import numpy as np

    from baselines.dqn.network import NumpyQNet

    _, spec, weights = _quick_bank()
    net = NumpyQNet(weights, spec)
    xs = list(np.random.default_rng(0).uniform(0, 2, (states, spec.n_inputs)).astype(np.float32))
    pairs = net._pairs

    def matmul_argmax(x):
        for i, (w, b) in enumerate(pairs):
            x = x @ w
            x += b
            if i < len(pairs) - 1:
                np.maximum(x, 0.0, out=x)
        return int(x.argmax())

    net.argmax(xs[0])
    t0 = time.process_time()
    check = sum(net.argmax(x) for x in xs)
    cpu = time.process_time() - t0
    t0 = time.process_time()
    for x in xs:
        matmul_argmax(x)
    base = time.process_time() - t0
    batch = np.stack(xs)
    t0 = time.process_time()
    for k in range(0, states, BATCH):
        net(batch[k : k + BATCH]).argmax(axis=1)
    batched = time.process_time() - t0
    return {
        "per_cpu_s": states / cpu,
        "unit": "forwards",
        "count": states,
        "checksum": float(check),
        "baseline_per_cpu_s": states / base,
        "batched_per_cpu_s": states / batched,
    }


def _policy(obs):
    """The environment workloads' policy, batched or not: the path whose
    first feature is the lower (a function of the state, so that both cores
    must emulate the same decisions to give the same checksum)."""
    import numpy as np

    obs = np.atleast_2d(obs)
    return (obs[:, 0] > obs[:, obs.shape[1] // 2]).astype(np.int64)


def _gym_env(steps: int = ENV_STEPS) -> dict:
    from envs.gym_env import MultipathSchedulingEnv

    env = MultipathSchedulingEnv(SCENARIO)
    obs, _ = env.reset(seed=0)
    n, check = 0, 0.0
    t0 = time.process_time()
    while n < steps:
        obs, r, term, trunc, _ = env.step(int(_policy(obs)[0]))
        n += 1
        check += r
        if term or trunc:
            obs, _ = env.reset()
    cpu = time.process_time() - t0
    return {"per_cpu_s": n / cpu, "unit": "steps", "count": n, "checksum": check}


def _vector_env(steps: int = ENV_STEPS, n_envs: int = VECTOR_ENVS) -> dict:
    from envs.vector_env import MultipathVectorEnv

    venv = MultipathVectorEnv(n_envs, SCENARIO, copy=False)
    obs, _ = venv.reset(seed=0)
    n, check = 0, 0.0
    t0 = time.process_time()
    while n < steps:
        obs, r, *_ = venv.step(_policy(obs))
        n += n_envs
        check += float(r.sum())
    cpu = time.process_time() - t0
    return {"per_cpu_s": n / cpu, "unit": "steps", "count": n, "checksum": check}


def _vector_collect(n_envs: int = VECTOR_ENVS, decisions: int = TASK_DECISIONS) -> dict:
    import numpy as np

    from baselines.dqn.network import NumpyQNet
    from envs.vector_env import MultipathVectorEnv
    from metalearning.collect import DEFAULT_TASK_BYTES, DEFAULT_TASK_MAX_DURATION_S, bulk_app

    grid, spec, weights = _quick_bank()

    def task(rng):  # a task of a cell drawn with the instance's own generator
        return grid.sample_task(int(rng.integers(grid.n_cells)), rng, TASK_BASE)

    venv = MultipathVectorEnv(
        n_envs,
        app=bulk_app(DEFAULT_TASK_BYTES),
        copy=False,
        max_steps=decisions,
        max_duration_s=DEFAULT_TASK_MAX_DURATION_S,
        scenario_sampler=task,
    )
    net = NumpyQNet(weights, spec)
    draws = np.random.default_rng(1)
    active = np.ones(n_envs, np.bool_)
    n, check = 0, 0.0
    t0 = time.process_time()
    obs, _ = venv.reset(seed=0)
    while active.any():
        actions = net(obs).argmax(axis=1)
        explore = draws.random(n_envs) < TASK_EPSILON
        actions[explore] = draws.integers(0, spec.n_actions, int(explore.sum()))
        obs, r, terminated, truncated, _ = venv.step(actions)
        n += int(active.sum())
        check += float(r[active].sum())
        active &= ~(terminated | truncated)
    cpu = time.process_time() - t0
    venv.close()
    return {"per_cpu_s": n / cpu, "unit": "decisions", "count": n, "checksum": check}


def run_single(workload: str, args) -> dict:
    """One workload on this interpreter's core."""
    import envs

    if workload == "dqn_collect":
        out = _collect(args.tasks)
    elif workload == "qnet_forward":
        out = _forward()
    elif workload == "gym_env":
        out = _gym_env()
    elif workload == "vector_env":
        out = _vector_env()
    elif workload == "vector_collect":
        out = _vector_collect()
    elif workload in SCALING:
        out = _scaling(workload, args.episodes)
    elif workload == "short_episodes":
        out = _short_episodes(args.episodes)
    else:
        out = _episodes(workload, args.episodes, args.size)
    # the tree whose packages ran (checked by _repeats against the tree asked for)
    return {
        **out,
        "core": envs.core_kind(),
        "source": str(Path(envs.__file__).resolve().parents[1]),
    }


def _child(workload: str, pure: bool, args, tree: Path = ROOT) -> dict:
    """One workload in a fresh interpreter that imports the packages of ``tree`` (this
    repository, or an earlier revision's tree of ``--against``); this file's workload
    code runs either way, so both trees are timed doing the same thing."""
    env = {k: v for k, v in os.environ.items() if k != "FALCON_PURE_PYTHON"}
    if pure:
        env["FALCON_PURE_PYTHON"] = "1"
    env["PYTHONPATH"] = os.pathsep.join([str(tree), *filter(None, [env.get("PYTHONPATH")])])
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--single",
        workload,
        "--episodes",
        str(args.episodes),
        "--size",
        str(args.size),
        "--tasks",
        str(args.tasks),
    ]
    res = subprocess.run(cmd, env=env, cwd=tree, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        last = (res.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise WorkloadError(f"{workload} in {tree}: {last}")
    return json.loads(res.stdout)


class WorkloadError(RuntimeError):
    """A workload's interpreter failed (the message: its last line of error output)."""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument(
        "--episodes",
        type=int,
        default=40,
        help="episodes per repeat (minrtt, first_with_room; the scaling workloads scale it)",
    )
    ap.add_argument("--size", type=int, default=2_000_000, help="bulk size [bytes]")
    ap.add_argument(
        "--tasks", type=int, default=30, help="collected tasks per repeat (dqn_collect)"
    )
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument(
        "--against",
        metavar="REV",
        help="also time git revision REV (e.g. HEAD, HEAD~1, a commit) with its own compiled "
        "core, built once under the FALCON cache, and report every figure against it",
    )
    ap.add_argument(
        "--out", type=Path, help="also write the report here (JSON; docs/speed/emulator_speed.json)"
    )
    ap.add_argument("--single", choices=WORKLOADS, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.single:
        print(json.dumps(run_single(args.single, args)))
        return 0
    from benchmarks.revision_tree import RevisionTreeError, prepared_tree
    from falcon.reproduce.runs import code_state

    report: dict = {
        "scenario": SCENARIO["name"],
        "size_bytes": args.size,
        "episodes": args.episodes,
        "tasks": args.tasks,
        "repeats": args.repeats,
        "python": sys.version.split()[0],
        "machine": machine(),
        "load_average": os.getloadavg(),
        "tree": code_state(),  # this tree's commit and a hash of its uncommitted changes
    }
    previous = None
    if args.against:
        try:
            previous, commit = prepared_tree(args.against, ROOT)
        except RevisionTreeError as e:
            print(f"emulator_speed: --against: {e}", file=sys.stderr)
            return 2
        report["previous"] = {"revision": args.against, "commit": commit, "tree": str(previous)}
    report["results"] = {}
    names = args.workloads.split(",")
    # the scaling workloads run in turn within each repeat, so that each scaling row's
    # per-repeat ratio compares two runs a few seconds apart (_scaling_table)
    together = [n for n in names if n in SCALING]
    groups = [[n] for n in names if n not in SCALING] + ([together] if together else [])
    for group in groups:
        try:
            grouped = _repeats(group, args, previous)
        except WorkloadError as e:
            print(f"emulator_speed: {e}", file=sys.stderr)
            return 1
        for name in group:
            report["results"][name] = _entry(name, grouped[name], args, report.get("previous"))
    report["results"] = {n: report["results"][n] for n in names}  # in the order asked for
    scaling = _scaling_table(report["results"])
    if scaling:
        report["scaling"] = scaling
        for row in scaling.values():
            print(
                f"{row['from']:>15s} -> {row['to']:15s} per-packet cost x{row['cost_growth']['compiled']:.2f} "
                f"[{min(row['cost_growths']['compiled']):.2f}-{max(row['cost_growths']['compiled']):.2f}] "
                f"(pure Python x{row['cost_growth']['python']:.2f})"
                + (
                    f", events per packet {row['events_per_packet'][0]:.3f} -> "
                    f"{row['events_per_packet'][1]:.3f}"
                    if "events_per_packet" in row
                    else ""
                )
                + (
                    f", retransmissions per packet {row['retransmissions_per_packet'][0]:.4f} -> "
                    f"{row['retransmissions_per_packet'][1]:.4f}"
                    if "retransmissions_per_packet" in row
                    else ""
                ),
                file=sys.stderr,
            )
    report["targets"] = target_rows(report)
    for row in report["targets"]:
        met = "met" if row["met"] else "NOT met"
        print(
            f"target: {row['target']}: {shown(row['measured'])} ({row['bound']}) {met}",
            file=sys.stderr,
        )
    text = json.dumps(report, indent=2)
    if args.out is not None:
        from baselines.dqn.files import atomic_path

        with atomic_path(args.out) as tmp:
            tmp.write_text(text + "\n")
    print(text)
    return 0


def _entry(name: str, runs: dict, args, previous: dict | None) -> dict:
    """Workload ``name``'s entry of the report from its runs per core (:func:`_repeats`;
    ``previous``: the report's revision timed beside this tree), its summary printed on
    standard error."""
    if runs["compiled"][0]["core"] != "compiled":
        print(
            f"{name}: the compiled core is not built (`make core`); both runs are pure Python",
            file=sys.stderr,
        )
    ratios, same = _paired(runs["compiled"], runs["python"])
    unit = runs["python"][0]["unit"]
    entry = {
        f"median_{unit}_per_cpu_s": {
            c: round(statistics.median(r["per_cpu_s"] for r in rs)) for c, rs in runs.items()
        },
        "speedup_median": round(statistics.median(ratios), 3),
        "speedups": [round(x, 3) for x in ratios],
        "identical_results": same,
        f"{unit}_per_run": runs["python"][0]["count"],
    }
    if "events" in runs["python"][0]:  # the scaling workloads: the same on every run
        first = runs["python"][0]
        entry["events_per_packet"] = round(first["events"] / first["count"], 3)
        entry["retransmissions_per_packet"] = round(first["retransmissions"] / first["count"], 4)
        # each repeat's figure per core: the scaling rows pair them repeat by repeat
        entry["per_cpu_s_by_repeat"] = {
            c: [round(r["per_cpu_s"]) for r in rs] for c, rs in runs.items()
        }
    if "previous" in runs:
        entry.update(_against_previous(runs))
    if "baseline_per_cpu_s" in runs["compiled"][0]:
        entry["median_numpy_batched_per_cpu_s"] = round(
            statistics.median(r["batched_per_cpu_s"] for r in runs["compiled"])
        )
        base = [r["baseline_per_cpu_s"] for r in runs["compiled"]]
        entry["median_numpy_matmul_per_cpu_s"] = round(statistics.median(base))
        entry["speedup_over_numpy_matmul"] = round(
            statistics.median(r["per_cpu_s"] / r["baseline_per_cpu_s"] for r in runs["compiled"]),
            3,
        )
    print(
        f"{name:16s} {unit}/CPU-s compiled {entry[f'median_{unit}_per_cpu_s']['compiled']:>9,} "
        f"pure {entry[f'median_{unit}_per_cpu_s']['python']:>9,}  x{entry['speedup_median']:.2f} "
        f"identical={same}",
        file=sys.stderr,
        flush=True,
    )
    if entry.get("previous_core", "compiled") != "compiled":
        print(
            f"{name}: revision {args.against} runs its pure-Python core (no compiled module "
            "was built in its tree)",
            file=sys.stderr,
        )
    if "vs_previous_median" in entry:
        print(
            f"{'':16s} {previous['commit'][:12]} "
            f"{entry[f'median_{unit}_per_cpu_s']['previous']:>9,}  this tree "
            f"x{entry['vs_previous_median']:.2f}  identical={entry['identical_to_previous']}",
            file=sys.stderr,
            flush=True,
        )
    if "speedup_over_numpy_matmul" in entry:
        print(
            f"{'':16s} NumPy matmul {entry['median_numpy_matmul_per_cpu_s']:>9,}  compiled "
            f"x{entry['speedup_over_numpy_matmul']:.2f}",
            file=sys.stderr,
            flush=True,
        )
        print(
            f"{'':16s} NumPy batches of {BATCH} {entry['median_numpy_batched_per_cpu_s']:>9,} states/CPU-s",
            file=sys.stderr,
            flush=True,
        )
    return entry


def _repeats(names: list[str], args, previous: Path | None) -> dict:
    """``args.repeats`` runs of each workload of ``names`` on each core: ``compiled`` (this
    tree), ``python`` (this tree, ``FALCON_PURE_PYTHON=1``) and, with a ``previous`` tree,
    ``previous`` (its compiled core); per workload, its runs per core. Each repeat runs
    every workload in turn, and each workload on all cores once, this tree and the
    previous one in turn first, so that all see the same phases of the machine's speed."""
    trees = {"compiled": (False, ROOT), "python": (True, ROOT)}
    if previous is not None:
        trees["previous"] = (False, previous)
    runs: dict = {name: {core: [] for core in trees} for name in names}
    for k in range(args.repeats):
        order = ["compiled", "previous"] if k % 2 == 0 else ["previous", "compiled"]
        for name in names:
            for core in [c for c in order if c in trees] + ["python"]:
                pure, tree = trees[core]
                run = _child(name, pure, args, tree)
                if Path(run["source"]) != tree.resolve():
                    raise WorkloadError(
                        f"{name}: imported the packages of {run['source']}, not {tree}"
                    )
                runs[name][core].append(run)
        if len(names) > 1:
            print(
                f"{', '.join(names)}: repeat {k + 1} of {args.repeats} done",
                file=sys.stderr,
                flush=True,
            )
    return runs


def _paired(a: list, b: list) -> tuple[list[float], bool]:
    """Runs ``a`` against runs ``b``, repeat by repeat: the speed ratios a / b, and whether
    every checksum is the same."""
    ratios = [x["per_cpu_s"] / y["per_cpu_s"] for x, y in zip(a, b)]
    return ratios, all(x["checksum"] == y["checksum"] for x, y in zip(a, b))


def _against_previous(runs: dict) -> dict:
    """This tree's compiled runs against the previous revision's (:func:`_paired`): the
    median ratio (the figure to quote), the ratios, whether the checksums agree, and which
    core the previous revision ran."""
    ratios, same = _paired(runs["compiled"], runs["previous"])
    return {
        "vs_previous_median": round(statistics.median(ratios), 3),
        "vs_previous": [round(x, 3) for x in ratios],
        "identical_to_previous": same,
        "previous_core": runs["previous"][0]["core"],
    }


#: the scaling table's rows: each row's name, and the workloads it compares (module docstring)
SCALING_ROWS = {
    "paths": (f"paths_{PATH_COUNTS[0]}", f"paths_{PATH_COUNTS[-1]}"),
    "connections": (f"connections_{CONNECTION_COUNTS[0]}", f"connections_{CONNECTION_COUNTS[-1]}"),
    "same_share": (f"connections_{CONNECTION_COUNTS[0]}", f"same_share_{CONNECTION_COUNTS[-1]}"),
}


def _scaling_table(results: dict) -> dict:
    """Per-packet CPU cost of the larger scaling workload of each row of
    :data:`SCALING_ROWS` over the smaller, per core: the median (``cost_growth``, the
    figure to quote) of the per-repeat ratios (``cost_growths``), each the smaller one's
    packets per CPU-second over the larger one's in the same repeat, a few seconds apart
    (:func:`_repeats`), so that the machine's drifting speed cancels as in a speed-up.
    Also, for each workload, the events per packet (``events_per_packet``: whether that
    growth comes from more emulated events per packet or from a higher cost per event) and
    the retransmissions per packet (``retransmissions_per_packet``: whether the larger
    one's packets carry loss recovery the smaller one's do not)."""
    out = {}
    for row, (lo, hi) in SCALING_ROWS.items():
        if lo in results and hi in results:
            a, b = results[lo]["per_cpu_s_by_repeat"], results[hi]["per_cpu_s_by_repeat"]
            ratios = {c: [x / y for x, y in zip(a[c], b[c], strict=True)] for c in a}
            out[row] = {
                "from": lo,
                "to": hi,
                "cost_growth": {c: round(statistics.median(r), 3) for c, r in ratios.items()},
                "cost_growths": {c: [round(x, 3) for x in r] for c, r in ratios.items()},
            }
            for key in ("events_per_packet", "retransmissions_per_packet"):
                if key in results[lo] and key in results[hi]:
                    out[row][key] = [results[lo][key], results[hi][key]]
    return out


if __name__ == "__main__":
    raise SystemExit(main())
