"""Simulator objects from normalised scenarios: links, paths, connections.

:class:`Emulation` turns the output of :func:`envs.scenario.normalise_scenario`
into one simulator and its connections; several connections built in one
Emulation share every link whose path config names the same ``shared_link``.
A path's ``schedule`` (validated by :func:`envs.scenario.normalise_schedule`)
becomes a :class:`envs.link.ScheduledPath` here. Scenario defaults, presets
and validation stay in :mod:`envs.scenario`.
"""

from __future__ import annotations

import functools
import math
import os

import numpy as np

from envs.cc import make_cc
from envs.cc.base import CouplingGroup
from envs.errors import ConfigError
from envs.link import DelayModel, Link, LossModel, Path, PathState, ScheduledPath
from envs.path_schedule import (
    bandwidth_steps,
    check_shared_steps,
    resolve_schedule,
    scheduled_capacity,
)
from envs.plain import plain_mapping
from envs.scenario import normalise_scenario
from envs.seeds import ChildSeed, generator
from envs.sim import Simulator
from envs.traces.base import CapacityTrace, PathTrace
from envs.traces.summary import weighted_quantile, window_rates
from envs.transport import Connection

#: a trace path's default buffer is one BDP at this percentile of its rate over windows of BUFFER_RATE_WINDOW_S
BUFFER_RATE_QUANTILE = 0.95
BUFFER_RATE_WINDOW_S = 0.1


def buffer_rate(cap: CapacityTrace) -> float:
    """The rate [bytes/s] a ``buffer_bdp`` buffer is sized by: a constant path's rate; for a
    capacity trace the 95th percentile of its 100-ms window rates. (The whole-period mean
    leaves the queue far below the BDP at the rates the trace offers: on the Mahimahi LTE
    traces a single loss-based flow then used 55-69 % of the offered capacity; at the p95
    rate 89-90 %, Mahimahi's unlimited queue 94 %, with seconds of queueing.)"""
    if cap.is_constant:
        return cap.mean_rate
    return _trace_buffer_rate(cap)


#: capacity traces whose :func:`buffer_rate` is kept
BUFFER_RATE_CACHE_SIZE = 64


@functools.lru_cache(maxsize=BUFFER_RATE_CACHE_SIZE)
def _trace_buffer_rate(cap: CapacityTrace) -> float:
    """:func:`buffer_rate` of a capacity trace. A trace condition's episodes share
    one loaded trace (envs.traces.loaders caches them) and the rate is a function of
    it, so it is kept per trace object (traces hash by identity; the cache holds the
    object, so its id cannot be reused while the entry lives)."""
    rates, lengths = window_rates(cap, BUFFER_RATE_WINDOW_S)
    return weighted_quantile(rates, lengths, BUFFER_RATE_QUANTILE)


#: constant-rate capacity traces kept, by rate and name
CONSTANT_TRACE_CACHE_SIZE = 64


@functools.lru_cache(maxsize=CONSTANT_TRACE_CACHE_SIZE)
def constant_capacity(rate_bytes_per_s: float, name: str = "constant") -> CapacityTrace:
    """``CapacityTrace.constant(rate_bytes_per_s, name)``, one object per rate and name:
    every constant-rate path of every episode had built its own (three arrays and their
    typed columns, about 3 us of a short episode's set-up, cold). A capacity trace is
    never modified once built, as the trace loaders' cache already relies on."""
    return CapacityTrace.constant(rate_bytes_per_s, name)


def load_path_trace(spec, seed_seq: ChildSeed | np.random.SeedSequence) -> PathTrace:
    """A path's capacity from ``trace`` (file) or ``synthetic`` (generator) config."""
    from envs.traces import load_trace, synthetic
    from envs.traces.catalog import resolve_trace_path

    if isinstance(spec, str):
        return load_trace(resolve_trace_path(spec))
    spec = plain_mapping(spec)
    if "file" in spec:
        if not isinstance(spec["file"], str | os.PathLike):
            raise ConfigError(f"trace.file: expected a file path, got {spec['file']!r}")
        opts = {k: v for k, v in spec.items() if k not in ("file", "format") and v is not None}
        return load_trace(resolve_trace_path(spec["file"]), spec.get("format", "auto"), **opts)
    kind = spec.pop("kind", None)
    gen = getattr(synthetic, str(kind), None) if kind and not str(kind).startswith("_") else None
    if gen is None or not callable(gen):
        raise ConfigError(f"synthetic.kind: unknown generator {kind!r}")
    spec.setdefault("seed", int(seed_seq.generate_state(1)[0]))
    try:
        out = gen(**spec)
    except TypeError as e:
        raise ConfigError(f"synthetic {kind}: {e}") from None
    return (
        out if isinstance(out, PathTrace) else PathTrace(capacity=out, source=f"synthetic:{kind}")
    )


def cc_options(name, scenario: dict) -> dict:
    """The scenario's options of the congestion control ``name``: ``hystart`` for CUBIC."""
    if scenario["hystart"] and isinstance(name, str) and name.strip().lower() == "cubic":
        return {"hystart": True}
    return {}


def _bdp_buffer(p: dict, scenario: dict, rate: float, rtt_s: float) -> int:
    """A ``buffer_bdp`` buffer [packets] at ``rate`` [bytes/s] and ``rtt_s`` [s]: at least 10."""
    bdp_packets = rate * rtt_s / scenario["packet_size"]
    return max(10, math.ceil(p["buffer_bdp"] * bdp_packets))


def _segment_buffer(p: dict, scenario: dict, ptrace: PathTrace, c: dict, delay_series) -> int:
    """The ``buffer_bdp`` buffer [packets] of one resolved schedule segment ``c``."""
    rate = (
        ptrace.capacity.mean_rate if c["bandwidth_mbps"] is None else c["bandwidth_mbps"] * 1e6 / 8
    )
    return _bdp_buffer(
        p, scenario, rate, 2 * delay_series.mean if c["rtt_trace"] else c["rtt_ms"] / 1000
    )


def _return_link(p: dict) -> Link | None:
    """The path's return link of ``return_bandwidth_mbps``; None when the path gives none (acknowledgements then see no return bottleneck)."""
    if p["return_bandwidth_mbps"] is None:
        return None
    return Link(
        constant_capacity(p["return_bandwidth_mbps"] * 1e6 / 8),
        None,
        None,
        name=p["name"] + "-ret",
    )


class Emulation:
    """One simulator and its links; builds connections from scenario dicts.

    All randomness derives from ``seed`` through ``numpy.random.SeedSequence``
    children taken in build order, so a scenario plus a seed reproduces a run
    bit for bit: path ``k``'s trace, delay and loss draw from the grandchildren
    ``(k, 0)``, ``(k, 1)`` and ``(k, 2)`` of ``SeedSequence(seed)``, computed
    without building the SeedSequence objects (:class:`envs.seeds.ChildSeed`).

    A shared link (``shared_link``) is built once, by the first path naming
    it: its capacity, a scheduled ``bandwidth_mbps`` included, and its buffer.
    A later path naming it must schedule the same bandwidth steps or none
    (:func:`envs.path_schedule.check_shared_steps`); its delay, loss and other schedule fields
    stay its own.
    """

    def __init__(self, seed: int = 0):
        self.sim = Simulator()
        self.seed = int(seed)
        if self.seed < 0:
            raise ValueError(f"seed: expected a non-negative integer, got {seed!r}")
        self._children = 0  # children of SeedSequence(seed) taken (one per path built)
        self.shared_links: dict[str, Link] = {}
        #: per shared link, the bandwidth schedule its builder gave it (:func:`envs.path_schedule.bandwidth_steps`; None: none)
        self._shared_steps: dict[str, tuple | None] = {}
        self.connections: list[Connection] = []

    def _child(self) -> tuple[ChildSeed, ChildSeed, ChildSeed]:
        """The next child's three children (``SeedSequence(seed).spawn(1)[0].spawn(3)``)."""
        k = self._children
        self._children = k + 1
        return (
            ChildSeed(self.seed, (k, 0)),
            ChildSeed(self.seed, (k, 1)),
            ChildSeed(self.seed, (k, 2)),
        )

    def build_path(self, p: dict, scenario: dict) -> Path:
        """Simulator objects of one normalised path config ``p``."""
        trace_seq, delay_seq, loss_seq = self._child()
        if p["bandwidth_mbps"] is not None:
            ptrace = PathTrace(constant_capacity(p["bandwidth_mbps"] * 1e6 / 8, p["name"]))
        else:
            ptrace = load_path_trace(
                p["trace"] if p["trace"] is not None else p["synthetic"], trace_seq
            )
        delay_series = ptrace.delay if p["trace_delay"] else None
        loss_series = ptrace.loss if p["trace_loss"] else None
        offset = p["trace_start_s"]
        if offset == "random":
            offset = float(generator(trace_seq).uniform(0.0, ptrace.capacity.period))
        schedule = p.get("schedule")
        segments = (
            resolve_schedule(p, schedule, delay_series is not None, loss_series is not None)
            if schedule is not None
            else None
        )
        link, buffer_follows = self._forward_link(
            p, scenario, ptrace, segments, offset, delay_series
        )
        cv = p["rtt_std_ms"] / p["rtt_ms"]
        # the models draw from their seed sequences' PCG64 streams (envs.link.RandomDraws)
        delay = DelayModel(p["rtt_ms"] / 1000, cv, delay_seq, delay_series, offset)
        loss = LossModel(
            p["loss"],
            loss_seq,
            loss_series,
            p["ge"] if p["loss_model"] == "gilbert_elliott" else None,
            offset,
        )
        ret = _return_link(p)
        if segments is None:
            return Path(link, delay, loss, ret, name=p["name"])
        # same expressions as the DelayModel/LossModel above: a segment holding
        # the path's own values sets bit-identical numbers
        states = [
            PathState(
                mean_rtt=c["rtt_ms"] / 1000,
                cv=c["rtt_std_ms"] / c["rtt_ms"],
                delay_series=delay_series if c["rtt_trace"] else None,
                loss=c["loss"],
                loss_series=loss_series if c["loss_trace"] else None,
                buffer_packets=(
                    _segment_buffer(p, scenario, ptrace, c, delay_series)
                    if buffer_follows
                    else None
                ),
            )
            for _, c in segments
        ]
        return ScheduledPath(
            link,
            delay,
            loss,
            ret,
            name=p["name"],
            times=[t for t, _ in segments],
            states=states,
            period=schedule["period_s"],
        )

    def _forward_link(
        self, p: dict, scenario: dict, ptrace: PathTrace, segments, offset: float, delay_series
    ) -> tuple[Link, bool]:
        """The path's forward link, built or (``shared_link``) taken from an earlier path, and
        whether its buffer follows each scheduled segment's BDP."""
        link = self.shared_links.get(p["shared_link"]) if p["shared_link"] else None
        if link is not None:
            check_shared_steps(
                p, self._shared_steps[p["shared_link"]], bandwidth_steps(p, segments)
            )
            return link, False
        # a buffer sized by buffer_bdp follows each scheduled segment's BDP
        # (one link per path only: a shared queue keeps its size)
        buffer_follows = False
        rtt_s = p["rtt_ms"] / 1000 if delay_series is None else 2 * delay_series.mean
        if p["buffer_packets"] is None and p["buffer_bytes"] is None:
            buffer_packets = _bdp_buffer(p, scenario, buffer_rate(ptrace.capacity), rtt_s)
            buffer_follows = segments is not None and not p["shared_link"]
        else:
            buffer_packets = p["buffer_packets"]
        capacity = ptrace.capacity
        if segments is not None and any(
            c["bandwidth_mbps"] != p["bandwidth_mbps"] for _, c in segments
        ):
            # scheduled times are emulated time: the curve starts at t=0, no trace offset
            capacity = scheduled_capacity(
                segments, p["schedule"]["period_s"], p["bandwidth_mbps"], p["name"]
            )
            offset_link = 0.0
        else:
            offset_link = offset
        link = Link(capacity, buffer_packets, p["buffer_bytes"], name=p["name"], offset=offset_link)
        if p["shared_link"]:
            self.shared_links[p["shared_link"]] = link
            self._shared_steps[p["shared_link"]] = bandwidth_steps(p, segments)
        return link, buffer_follows

    def connect(
        self, scenario, scheduler, name: str | None = None, normalised: bool = False
    ) -> Connection:
        """Build a connection for a raw scenario dict, or for the output of
        :func:`normalise_scenario` with ``normalised=True`` (not normalised again)."""
        s = scenario if normalised else normalise_scenario(scenario)
        paths = [self.build_path(p, s) for p in s["paths"]]
        group = CouplingGroup()
        ccs = [
            make_cc(
                p["cc"] or s["cc"],
                s["packet_size"],
                s["initial_window_packets"],
                group=group,
                min_window_packets=s["min_window_packets"],
                **cc_options(p["cc"] or s["cc"], s),
            )
            for p in s["paths"]
        ]
        conn = Connection(
            self.sim,
            paths,
            ccs,
            scheduler,
            packet_size=s["packet_size"],
            header_bytes=s["header_bytes"],
            ack_every=s["ack"]["every"],
            max_ack_delay=s["ack"]["max_delay_ms"] / 1000,
            ack_size=s["ack"]["size_bytes"],
            fc_initial_window=s["flow_control"]["initial_window_bytes"],
            fc_max_window=s["flow_control"]["max_window_bytes"],
            fc_autotune=bool(s["flow_control"]["autotune"]),
            setup=s["setup"],
            pacing=s["pacing"],
            name=name or f"conn{len(self.connections)}",
        )
        self.connections.append(conn)
        return conn

    def close(self) -> None:
        """Drop the queued events and close each connection, so that reference
        counting alone frees a finished emulation (:meth:`envs.sim.Simulator.clear`,
        :meth:`envs.transport.Connection.close`)."""
        self.sim.clear()
        for conn in self.connections:
            conn.close()


def pin_trace_draws(scenario, seed: int) -> dict:
    """The normalised ``scenario`` with the trace draws of ``seed`` written in:
    every path's ``trace_start_s: random`` becomes the offset [s] that ``seed``
    draws for it, and every synthetic trace gets the generator seed that
    ``seed`` gives it. Run with another seed, the result has the same trace
    segments (the network the download meets) and fresh delay and loss draws
    (its noise); run with ``seed`` itself it is the very run of ``scenario``.
    Mirrors the draws of :meth:`Emulation.build_path` (one child of
    ``SeedSequence(seed)`` per path in path order, its first grandchild for the
    trace), for the one connection of :func:`envs.runner.run_episode`."""
    out = normalise_scenario(scenario)
    seq = np.random.SeedSequence(int(seed))
    for p in out["paths"]:
        trace_seq = seq.spawn(1)[0].spawn(3)[0]
        if p["bandwidth_mbps"] is not None:
            continue
        if p["trace"] is None:
            spec = plain_mapping(p["synthetic"])
            spec.setdefault("seed", int(trace_seq.generate_state(1)[0]))
            p["synthetic"] = spec
        if p["trace_start_s"] == "random":
            period = load_path_trace(
                p["trace"] if p["trace"] is not None else p["synthetic"], trace_seq
            ).capacity.period
            p["trace_start_s"] = float(np.random.default_rng(trace_seq).uniform(0.0, period))
    return out


__all__ = [
    "BUFFER_RATE_QUANTILE",
    "BUFFER_RATE_WINDOW_S",
    "Emulation",
    "buffer_rate",
    "cc_options",
    "load_path_trace",
    "pin_trace_draws",
]
