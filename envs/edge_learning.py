"""Distributed edge learning (DEL): n workers and one aggregation server over
shared multipath access paths (the workload of Pokhrel et al., IEEE/ACM ToN
2023; the ``workload`` keys: docs/reference/formats/scenario_schema.md, section ``del``).

Topology. The scenario's paths are the shared paths. Every worker has, per
direction it uses (``download``: server to worker, ``upload``: worker to
server), ONE multipath connection with one subflow per path; subflow i of
every worker in one direction goes through the same bottleneck (shared link
``down<i>`` / ``up<i>``). The two directions are separate bottlenecks, as an
access network's downlink and uplink are. A worker's own subflows never share
a link. Connections are set up once, at t = 0 (the scenario's ``setup``);
every transfer is then a message on the worker's persistent connection
(:class:`envs.apps.messages.MessageApp`: a new stream; delivered when its
last byte is in order at the receiver).

Iterations. Worker w's iteration = download the model (``model_bytes``; if
``download`` is in ``directions``, else instantaneous), compute (``compute_s``
+ a compute straggler's extra), upload the update (``update_bytes``; if
``upload`` is in ``directions``, else instantaneous). One rule for both modes,
with bound s (``bsp``: s = 0; ``ssp``: s = ``staleness``): a worker that has
completed c iterations starts its next one only while c - min over workers of
their completed count <= s, and then ``aggregate_s`` after the upload that
made it eligible reached the server (its own, or the slowest worker's). So
completed counts differ by at most s + 1 at any time; under BSP everybody
starts iteration k + 1 together, ``aggregate_s`` after the last update of
iteration k arrived.

An iteration's time: from its start to the same worker's next start (waiting
for the others and the aggregation included); for a worker's last completed
iteration (no next start before the episode ends), from its start to its
upload's completion. Only completed iterations count.

The episode ends when every worker has completed ``iterations`` (a worker
that reached it starts no more), or at ``duration_s`` emulated seconds.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from envs.apps.bulk import BulkApp
from envs.apps.messages import MessageApp
from envs.emulation import Emulation
from envs.errors import ConfigError
from envs.plain import copy_plain, merge_defaults, plain_mapping
from envs.scenario import normalise_scenario
from envs.scheduler import FirstWithRoom
from envs.sim import collector_paused

DIRECTIONS = ("download", "upload")
MODES = ("bsp", "ssp")
STRAGGLER_KINDS = ("bandwidth", "compute", "cross")
#: shared link name prefix per direction: subflow i of every worker uses ``down<i>`` / ``up<i>``
LINK_PREFIX = {"download": "down", "upload": "up"}
#: OQS samples kept per connection (nothing here reports them; the series stays small)
OQS_CAP = 64
#: a cross flow's transfer: never completes
CROSS_BYTES = 10**15

#: every default of the ``workload`` mapping (docs/reference/formats/scenario_schema.md, section ``del``)
DEL_DEFAULTS: dict = {
    "workers": 6,
    "mode": "bsp",  # bsp | ssp
    "staleness": 2,  # ssp bound s (bsp: 0)
    "model_bytes": 2_000_000,  # downloaded per iteration [bytes]
    "update_bytes": None,  # uploaded per iteration [bytes]; null: model_bytes
    "compute_s": 0.5,  # per-iteration compute time [s]
    "aggregate_s": 0.0,  # server time per aggregation [s]
    "iterations": None,  # stop when every worker completed this many; null: no limit
    "duration_s": 60.0,  # hard stop [emulated s]
    "directions": ["download", "upload"],
    "sample_period_s": 0.2,  # throughput sampling period [s]
    "cross_traffic": {"flows": 0, "path": 0, "cc": "cubic", "directions": None},
    "stragglers": {
        "count": 0,
        "kind": "bandwidth",
        "bandwidth_factor": 0.25,
        "compute_s": 1.0,
        "cross_flows": 5,
    },
}


# ------------------------------------------------------------------ input


def _int(value, key: str, lo: int, hi: float = math.inf) -> int:
    ok = (
        not isinstance(value, bool)
        and isinstance(value, int | float)
        and math.isfinite(value)
        and float(value).is_integer()
        and lo <= value <= hi
    )
    if not ok:
        rng = f">= {lo}" if hi == math.inf else f"in [{lo}, {int(hi)}]"
        raise ConfigError(f"workload.{key}: expected an integer {rng}, got {value!r}")
    return int(value)


def _float(value, key: str, positive: bool = False) -> float:
    ok = (
        not isinstance(value, bool)
        and isinstance(value, int | float)
        and math.isfinite(value)
        and (value > 0 if positive else value >= 0)
    )
    if not ok:
        raise ConfigError(
            f"workload.{key}: expected a finite number {'> 0' if positive else '>= 0'}, "
            f"got {value!r}"
        )
    return float(value)


def _choice(value, key: str, choices: tuple) -> str:
    if value not in choices:
        raise ConfigError(f"workload.{key}: expected one of {', '.join(choices)}, got {value!r}")
    return value


def _directions(value, key: str, allowed: tuple) -> list[str]:
    if (
        isinstance(value, str | bytes)
        or not isinstance(value, list | tuple)
        or not value
        or any(d not in allowed for d in value)
        or len(set(value)) != len(value)
    ):
        raise ConfigError(
            f"workload.{key}: expected a non-empty list of distinct directions from "
            f"{list(allowed)}, got {value!r}"
        )
    return [d for d in DIRECTIONS if d in value]


def normalise_workload(cfg) -> dict:
    """Defaults (:data:`DEL_DEFAULTS`) + validation of a ``workload`` mapping;
    a null value means the default (except ``update_bytes``, ``iterations``
    and ``cross_traffic.directions``, whose default is null). Bad input:
    a one-line :class:`ConfigError` naming the key, the value and what was expected."""
    w = merge_defaults(DEL_DEFAULTS, plain_mapping(cfg, "workload"), "workload")
    for k in ("cross_traffic", "stragglers"):
        sub = plain_mapping(w[k], f"workload.{k}")
        w[k] = merge_defaults(
            DEL_DEFAULTS[k],
            {kk: v for kk, v in sub.items() if v is not None or kk == "directions"},
            f"workload.{k}",
        )
    for k, v in DEL_DEFAULTS.items():
        if w[k] is None and v is not None:
            w[k] = copy_plain(v)
    w["workers"] = _int(w["workers"], "workers", 1)
    w["mode"] = _choice(w["mode"], "mode", MODES)
    w["staleness"] = _int(w["staleness"], "staleness", 0)
    w["model_bytes"] = _int(w["model_bytes"], "model_bytes", 1)
    w["update_bytes"] = (
        w["model_bytes"]
        if w["update_bytes"] is None
        else _int(w["update_bytes"], "update_bytes", 1)
    )
    w["compute_s"] = _float(w["compute_s"], "compute_s")
    w["aggregate_s"] = _float(w["aggregate_s"], "aggregate_s")
    if w["iterations"] is not None:
        w["iterations"] = _int(w["iterations"], "iterations", 1)
    w["duration_s"] = _float(w["duration_s"], "duration_s", positive=True)
    w["directions"] = _directions(w["directions"], "directions", DIRECTIONS)
    w["sample_period_s"] = _float(w["sample_period_s"], "sample_period_s", positive=True)
    x = w["cross_traffic"]
    x["flows"] = _int(x["flows"], "cross_traffic.flows", 0)
    x["path"] = _int(x["path"], "cross_traffic.path", 0)
    if not isinstance(x["cc"], str):
        raise ConfigError(
            f"workload.cross_traffic.cc: expected a congestion control name, got {x['cc']!r}"
        )
    x["directions"] = (
        list(w["directions"])
        if x["directions"] is None
        else _directions(
            x["directions"],
            "cross_traffic.directions (a subset of workload.directions)",
            tuple(w["directions"]),
        )
    )
    st = w["stragglers"]
    st["count"] = _int(st["count"], "stragglers.count", 0, w["workers"])
    st["kind"] = _choice(st["kind"], "stragglers.kind", STRAGGLER_KINDS)
    st["bandwidth_factor"] = _float(
        st["bandwidth_factor"], "stragglers.bandwidth_factor", positive=True
    )
    st["compute_s"] = _float(st["compute_s"], "stragglers.compute_s")
    st["cross_flows"] = _int(st["cross_flows"], "stragglers.cross_flows", 0)
    return w


# ------------------------------------------------------------------ metrics


def jain_index(x) -> float:
    """Jain's fairness index (sum x)^2 / (n sum x^2) of ``x``; NaN when all are 0."""
    x = np.asarray(x, dtype=np.float64)
    sq = float(np.sum(x * x))
    return float(np.sum(x)) ** 2 / (x.size * sq) if x.size and sq > 0 else math.nan


def throughput_fluctuation(samples) -> float:
    """The paper's throughput fluctuation: per worker (row of ``samples``
    [workers, samples]) the mean absolute change between consecutive samples,
    averaged over workers; NaN with fewer than two samples."""
    s = np.asarray(samples, dtype=np.float64)
    if s.ndim != 2 or s.shape[1] < 2:
        return math.nan
    return float(np.mean(np.mean(np.abs(np.diff(s, axis=1)), axis=1)))


def unfairness_std(completed) -> float:
    """The paper's application unfairness: the (population, ddof 0) standard
    deviation of the workers' completed iteration counts."""
    c = np.asarray(completed, dtype=np.float64)
    return float(np.std(c)) if c.size else math.nan


def iteration_durations(starts, ends) -> np.ndarray:
    """Times of a worker's completed iterations (module docstring):
    ``starts[k + 1] - starts[k]`` while a next start exists, else
    ``ends[k] - starts[k]``; ``ends`` holds the completed iterations' upload completions."""
    s = np.asarray(starts, dtype=np.float64)
    e = np.asarray(ends, dtype=np.float64)
    n = e.size
    out = np.empty(n)
    nxt = min(n, s.size - 1)
    out[:nxt] = s[1 : nxt + 1] - s[:nxt]
    out[nxt:] = e[nxt:] - s[nxt:n]
    return out


@dataclass
class DelResult:
    """What one DEL episode measured (docs/reference/formats/scenario_schema.md, section ``del``)."""

    metrics: dict[str, float]
    #: per worker: the times of its completed iterations [s]
    iteration_times: list[np.ndarray]
    #: sample end times [s] (every ``sample_period_s``; full periods only)
    throughput_t: np.ndarray
    #: [workers, samples]: application bytes delivered on each worker's DEL connections, directions summed [Mbit/s]
    throughput_mbps: np.ndarray
    #: the worker with the fewest completed iterations (ties: the lowest mean throughput, then the lowest index)
    straggler: int
    scenario: dict = field(default_factory=dict)
    workload: dict = field(default_factory=dict)
    seed: int = 0
    #: per worker: start times of its iterations and completion times of its completed ones [s]
    iteration_start_s: list[np.ndarray] = field(default_factory=list)
    iteration_end_s: list[np.ndarray] = field(default_factory=list)


# ------------------------------------------------------------------ the session


def _scaled(p: dict, factor: float, link: str) -> dict:
    """Path ``p`` on its own link ``link`` at ``factor`` x its bandwidth (scheduled values too)."""
    if p["bandwidth_mbps"] is None:
        raise ConfigError(
            f"workload.stragglers.kind: a bandwidth or cross straggler needs paths with a constant "
            f"bandwidth_mbps (path {p['name']!r} has a trace or synthetic capacity)"
        )
    q = dict(p, shared_link=link, bandwidth_mbps=p["bandwidth_mbps"] * factor)
    if p["schedule"] is not None:
        segs = [
            dict(s, bandwidth_mbps=s["bandwidth_mbps"] * factor)
            if "bandwidth_mbps" in s
            else dict(s)
            for s in p["schedule"]["segments"]
        ]
        q["schedule"] = {"segments": segs, "period_s": p["schedule"]["period_s"]}
    return q


class DelSession:
    """The DEL workload on one :class:`Emulation` (built in :meth:`build`, run by :func:`run_del_episode`)."""

    def __init__(
        self,
        emu: Emulation,
        scenario: dict,
        workload: dict,
        scheduler_for,
        on_iteration: Callable[[int, int, float], None] | None = None,
    ):
        self.emu, self.sim = emu, emu.sim
        self.s, self.w = scenario, workload
        self.n = workload["workers"]
        self.bound = 0 if workload["mode"] == "bsp" else workload["staleness"]
        self.scheduler_for = scheduler_for
        self.on_iteration = on_iteration
        st = workload["stragglers"]
        self.stragglers = list(range(self.n - st["count"], self.n))
        self.extra_compute = [
            st["compute_s"] if st["kind"] == "compute" and v in self.stragglers else 0.0
            for v in range(self.n)
        ]
        self.apps: list[dict[str, MessageApp]] = [{} for _ in range(self.n)]
        self.conns: list[list] = [[] for _ in range(self.n)]  # a worker's DEL connections
        self.cross: list = []  # cross-traffic connections
        self.completed = [0] * self.n
        self.busy = [False] * self.n
        self.starts = [array("d") for _ in range(self.n)]
        self.ends = [array("d") for _ in range(self.n)]
        self.samples = [array("q") for _ in range(self.n)]  # cumulative delivered bytes per sample
        self.sample_t = array("d")
        self.end_time = -1.0

    # -- building --------------------------------------------------------
    def _connect(self, paths: list[dict], scheduler, name: str, cc: str | None = None):
        s = dict(self.s, paths=paths)
        if cc is not None:
            s["cc"] = cc
        conn = self.emu.connect(s, scheduler, name=name)
        conn.oqs_cap = OQS_CAP
        scheduler.reset(conn)
        return conn

    def _cross_flows(self, path: dict, count: int, cc: str, name: str) -> None:
        for j in range(count):
            conn = self._connect([dict(path, cc=None)], FirstWithRoom(), f"{name}.x{j}", cc)
            BulkApp(CROSS_BYTES).start(conn)
            self.cross.append(conn)

    def build(self) -> None:
        """Every connection, in a fixed order (the seed's streams are taken in build order):
        per worker and direction its DEL connection (a cross straggler's cross flows right
        after it), then the cross traffic."""
        st = self.w["stragglers"]
        paths = self.s["paths"]
        for v in range(self.n):
            for d in self.w["directions"]:
                pre = LINK_PREFIX[d]
                own = v in self.stragglers and st["kind"] in ("bandwidth", "cross")
                if own:
                    factor = (st["bandwidth_factor"] if st["kind"] == "bandwidth" else 1.0) / self.n
                    ps = [_scaled(p, factor, f"{pre}{i}.w{v}") for i, p in enumerate(paths)]
                else:
                    ps = [dict(p, shared_link=f"{pre}{i}") for i, p in enumerate(paths)]
                conn = self._connect(ps, self.scheduler_for(v, d), f"w{v}.{d}")
                app = MessageApp(self._on_delivered)
                app.start(conn)
                self.apps[v][d] = app
                self.conns[v].append(conn)
                if own and st["kind"] == "cross":
                    for i, p in enumerate(ps):
                        self._cross_flows(p, st["cross_flows"], "cubic", f"w{v}.{d}.p{i}")
        x = self.w["cross_traffic"]
        if x["flows"]:
            if x["path"] >= len(paths):
                raise ConfigError(
                    f"workload.cross_traffic.path: {x['path']} is not a path index of the scenario "
                    f"({len(paths)} paths)"
                )
            for d in x["directions"]:
                p = dict(paths[x["path"]], shared_link=f"{LINK_PREFIX[d]}{x['path']}")
                self._cross_flows(p, x["flows"], x["cc"], f"cross.{d}")

    # -- iterations ------------------------------------------------------
    def start(self) -> None:
        for v in range(self.n):
            self.busy[v] = True
            self.sim.schedule(0.0, self._start_iteration, v)
        self.sim.schedule(self.w["sample_period_s"], self._sample, 1)

    def _start_iteration(self, v: int) -> None:
        self.starts[v].append(self.sim.now)
        if "download" in self.apps[v]:
            self.apps[v]["download"].send(self.w["model_bytes"], (v, "download"))
        else:
            self._downloaded(v)

    def _on_delivered(self, tag, now: float) -> None:
        v, d = tag
        if d == "download":
            self._downloaded(v)
        else:
            self._uploaded(v)

    def _downloaded(self, v: int) -> None:
        self.sim.schedule(
            self.sim.now + self.w["compute_s"] + self.extra_compute[v], self._computed, v
        )

    def _computed(self, v: int) -> None:
        if "upload" in self.apps[v]:
            self.apps[v]["upload"].send(self.w["update_bytes"], (v, "upload"))
        else:
            self._uploaded(v)

    def _uploaded(self, v: int) -> None:
        now = self.sim.now
        self.ends[v].append(now)
        self.completed[v] += 1
        self.busy[v] = False
        if self.on_iteration is not None:
            self.on_iteration(v, self.completed[v], now)
        cap = self.w["iterations"]
        lo = min(self.completed)
        if cap is not None and lo >= cap:
            self.end_time = now
            self.sim.stop()
            return
        release = now + self.w["aggregate_s"]
        for u in range(self.n):
            c = self.completed[u]
            if not self.busy[u] and c - lo <= self.bound and (cap is None or c < cap):
                self.busy[u] = True
                self.sim.schedule(release, self._start_iteration, u)

    # -- sampling --------------------------------------------------------
    def _sample(self, k: int) -> None:
        self.sample_t.append(self.sim.now)
        for v in range(self.n):
            self.samples[v].append(sum(c.delivered for c in self.conns[v]))
            for app in self.apps[v].values():
                app.retire()
        for c in self.cross:  # bounded memory for the endless flows too (semantically transparent)
            c._prune_acked()
        t = (k + 1) * self.w["sample_period_s"]
        if t <= self.w["duration_s"] + 1e-9:
            self.sim.schedule(t, self._sample, k + 1)

    # -- results ---------------------------------------------------------
    def result(self, seed: int) -> DelResult:
        end = self.end_time if self.end_time >= 0 else self.sim.now
        n = self.n
        period = self.w["sample_period_s"]
        t = np.asarray(self.sample_t, dtype=np.float64)
        cum = np.asarray([np.asarray(a, dtype=np.float64) for a in self.samples]).reshape(n, t.size)
        tput = np.diff(cum, axis=1, prepend=0.0) * 8 / period / 1e6
        delivered = np.asarray(
            [sum(c.delivered for c in conns) for conns in self.conns], dtype=np.float64
        )
        mean_tput = delivered * 8 / end / 1e6 if end > 0 else np.zeros(n)
        starts = [np.asarray(a, dtype=np.float64) for a in self.starts]
        ends = [np.asarray(a, dtype=np.float64) for a in self.ends]
        times = [iteration_durations(s, e) for s, e in zip(starts, ends)]
        every = np.concatenate(times) if times else np.zeros(0)
        completed = np.asarray(self.completed, dtype=np.float64)
        straggler = min(range(n), key=lambda v: (self.completed[v], mean_tput[v], v))
        cross = np.asarray([c.delivered for c in self.cross], dtype=np.float64)
        metrics = {
            "iteration_time_mean_s": float(every.mean()) if every.size else math.nan,
            "iteration_time_p95_s": float(np.percentile(every, 95)) if every.size else math.nan,
            "iterations_mean": float(completed.mean()),
            "iterations_min": float(completed.min()),
            "iterations_max": float(completed.max()),
            "unfairness_std": unfairness_std(completed),
            "jain_throughput": jain_index(mean_tput),
            "throughput_mean_mbps": float(mean_tput.mean()),
            "throughput_fluctuation_mbps": throughput_fluctuation(tput),
            "straggler_throughput_mean_mbps": float(mean_tput[straggler]),
            "straggler": float(straggler),
            "cross_throughput_mbps": float(cross.mean() * 8 / end / 1e6)
            if cross.size and end > 0
            else 0.0,
            "duration_s": float(end),
        }
        return DelResult(
            metrics=metrics,
            iteration_times=times,
            throughput_t=t,
            throughput_mbps=tput,
            straggler=int(straggler),
            scenario=self.s,
            workload=self.w,
            seed=int(seed),
            iteration_start_s=starts,
            iteration_end_s=ends,
        )


def run_del_episode(
    scenario,
    workload,
    scheduler_for,
    seed: int = 0,
    on_iteration: Callable[[int, int, float], None] | None = None,
) -> DelResult:
    """Run the DEL workload (module docstring) until every worker completed
    ``iterations`` or ``duration_s`` passed. ``scenario``: a scenario mapping
    whose ``paths`` are the shared paths (their ``shared_link`` is set here;
    ``max_duration_s`` is unused); ``workload``: :data:`DEL_DEFAULTS` keys;
    ``scheduler_for(worker, direction)``: a new scheduler for that worker's
    connection in ``direction`` ("download" | "upload"); ``on_iteration(worker,
    completed, now)``: called when a worker completes an iteration. All
    randomness comes from ``Emulation(seed)``: a scenario, workload and seed
    reproduce the run bit for bit."""
    s = normalise_scenario(scenario)
    w = normalise_workload(workload)
    with collector_paused():
        emu = Emulation(seed)
        session = DelSession(emu, s, w, scheduler_for, on_iteration)
        session.build()
        session.start()
        emu.sim.run(until=w["duration_s"])
        return session.result(seed)


__all__ = [
    "DEL_DEFAULTS",
    "DIRECTIONS",
    "DelResult",
    "DelSession",
    "iteration_durations",
    "jain_index",
    "normalise_workload",
    "run_del_episode",
    "throughput_fluctuation",
    "unfairness_std",
]
