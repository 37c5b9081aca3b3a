"""Scenarios from plain dicts: paths, links, connections (schema: envs/SCHEMA.md).

``normalise_scenario`` fills defaults and Table I presets and validates every
key and value, raising :class:`ConfigError` with a one-line message that
names the offending key. :class:`Emulation` turns a normalised scenario into
simulator objects; several connections built in one Emulation share every
link whose path config names the same ``shared_link``.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping

import numpy as np

from envs.cc import make_cc
from envs.cc.base import CouplingGroup
from envs.errors import ConfigError, FalconInputError
from envs.link import DelayModel, Link, LossModel, Path
from envs.sim import Simulator
from envs.traces.base import CapacityTrace, PathTrace
from envs.transport import Connection

#: The FALCON paper's Table I links (bandwidth, RTT mean +- std, loss).
LINKS: dict[str, dict] = {
    "5g": {"name": "5g", "bandwidth_mbps": 1100.0, "rtt_ms": 27.4, "rtt_std_ms": 6.4, "loss": 0.001},
    "4g": {"name": "4g", "bandwidth_mbps": 140.0, "rtt_ms": 29.2, "rtt_std_ms": 4.8, "loss": 0.001},
    "wlan": {"name": "wlan", "bandwidth_mbps": 30.0, "rtt_ms": 20.0, "rtt_std_ms": 10.0, "loss": 0.007},
}

SCENARIO_DEFAULTS: dict = {
    "name": "custom",
    "packet_size": 1350,
    "header_bytes": 60,
    "initial_window_packets": 32,
    "min_window_packets": 2,
    "max_duration_s": 120.0,
    "ack": {"every": 2, "max_delay_ms": 25.0, "size_bytes": 50},
    "flow_control": {"initial_window_bytes": 786432, "max_window_bytes": 15728640, "autotune": True},
    "cc": "olia",
    "paths": [],
}

PATH_DEFAULTS: dict = {
    "link": None,
    "name": None,
    "bandwidth_mbps": None,
    "trace": None,
    "synthetic": None,
    "trace_start_s": 0.0,
    "trace_delay": True,
    "trace_loss": True,
    "rtt_ms": 30.0,
    "rtt_std_ms": 0.0,
    "loss": 0.0,
    "loss_model": "bernoulli",
    "ge": None,
    "buffer_packets": None,
    "buffer_bytes": None,
    "buffer_bdp": 1.0,
    "cc": None,
    "return_bandwidth_mbps": None,
    "shared_link": None,
}


def _plain(cfg) -> dict:
    if cfg is None:
        return {}
    if not isinstance(cfg, Mapping):
        try:  # OmegaConf nodes without importing omegaconf in the emulator
            from omegaconf import OmegaConf
            return OmegaConf.to_container(cfg, resolve=True)
        except Exception:
            raise ConfigError(f"expected a mapping, got {type(cfg).__name__}") from None
    return copy.deepcopy(dict(cfg))


def _merge(defaults: dict, given: dict, where: str) -> dict:
    unknown = set(given) - set(defaults)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {sorted(unknown)}; known: {sorted(defaults)}")
    out = copy.deepcopy(defaults)
    for k, v in given.items():
        if isinstance(out.get(k), dict) and isinstance(v, Mapping):
            out[k] = _merge(out[k], dict(v), f"{where}.{k}")
        else:
            out[k] = v
    return out


def _number(value, key: str, lo: float = 0.0, hi: float = math.inf, lo_open: bool = False) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{key}: expected a number, got {value!r}") from None
    if not math.isfinite(x) or x < lo or x > hi or (lo_open and x == lo):
        rng = f"({lo}, {hi}]" if lo_open else f"[{lo}, {hi}]"
        raise ConfigError(f"{key}: {value!r} is outside {rng}")
    return x


def normalise_path(pcfg, i: int) -> dict:
    # None means "not set": the preset's or the default value applies (config
    # files list every field as null so each can be overridden without "+")
    given = {k: v for k, v in _plain(pcfg).items() if v is not None}
    preset = given.get("link")
    base = dict(PATH_DEFAULTS)
    if preset is not None:
        if str(preset).lower() not in LINKS:
            raise ConfigError(f"paths[{i}].link: unknown link {preset!r}; known: {sorted(LINKS)}")
        base.update(LINKS[str(preset).lower()])
    p = _merge(base, given, f"paths[{i}]")
    key = f"paths[{i}]"
    sources = [k for k in ("bandwidth_mbps", "trace", "synthetic") if p[k] is not None]
    if p["link"] is not None and len(sources) > 1 and "bandwidth_mbps" in sources:
        # a trace or synthetic process overrides the preset's constant bandwidth
        if "bandwidth_mbps" not in given:
            p["bandwidth_mbps"] = None
            sources.remove("bandwidth_mbps")
    if len(sources) != 1:
        raise ConfigError(f"{key}: give exactly one of bandwidth_mbps, trace, synthetic (got {sources or 'none'})")
    if p["bandwidth_mbps"] is not None:
        p["bandwidth_mbps"] = _number(p["bandwidth_mbps"], f"{key}.bandwidth_mbps", 0.0, lo_open=True)
    p["rtt_ms"] = _number(p["rtt_ms"], f"{key}.rtt_ms", 0.0, lo_open=True)
    p["rtt_std_ms"] = _number(p["rtt_std_ms"], f"{key}.rtt_std_ms", 0.0)
    p["loss"] = _number(p["loss"], f"{key}.loss", 0.0, 1.0)
    if p["loss"] >= 1.0:
        raise ConfigError(f"{key}.loss: {p['loss']} would lose every packet (give a probability below 1)")
    if p["loss_model"] not in ("bernoulli", "gilbert_elliott"):
        raise ConfigError(f"{key}.loss_model: unknown {p['loss_model']!r}; choose bernoulli or gilbert_elliott")
    if p["loss_model"] == "gilbert_elliott":
        ge = _plain(p["ge"])
        need = {"p_gb", "p_bg", "loss_good", "loss_bad"}
        if set(ge) != need:
            raise ConfigError(f"{key}.ge: gilbert_elliott needs exactly {sorted(need)}")
        p["ge"] = {k: _number(v, f"{key}.ge.{k}", 0.0, 1.0) for k, v in ge.items()}
    for bk in ("buffer_packets", "buffer_bytes"):
        if p[bk] is not None:
            p[bk] = int(_number(p[bk], f"{key}.{bk}", 1.0))
    p["buffer_bdp"] = _number(p["buffer_bdp"], f"{key}.buffer_bdp", 0.0, lo_open=True)
    if p["trace_start_s"] != "random":
        p["trace_start_s"] = _number(p["trace_start_s"], f"{key}.trace_start_s", 0.0)
    for flag in ("trace_delay", "trace_loss"):
        if not isinstance(p[flag], bool):
            raise ConfigError(f"{key}.{flag}: expected true or false, got {p[flag]!r}")
    if p["return_bandwidth_mbps"] is not None:
        p["return_bandwidth_mbps"] = _number(p["return_bandwidth_mbps"], f"{key}.return_bandwidth_mbps",
                                             0.0, lo_open=True)
    if p["name"] is None:
        p["name"] = p["link"] or f"path{i}"
    return p


def normalise_scenario(cfg) -> dict:
    """Defaults + presets + validation; returns a new plain dict."""
    s = _merge(SCENARIO_DEFAULTS, _plain(cfg), "scenario")
    paths = s["paths"]
    if not isinstance(paths, (list, tuple)) or not paths:
        raise ConfigError("scenario.paths: give at least one path")
    s["paths"] = [normalise_path(p, i) for i, p in enumerate(paths)]
    s["packet_size"] = int(_number(s["packet_size"], "scenario.packet_size", 100, 65527))
    s["header_bytes"] = int(_number(s["header_bytes"], "scenario.header_bytes", 0, s["packet_size"] - 1))
    s["initial_window_packets"] = int(_number(s["initial_window_packets"], "scenario.initial_window_packets", 1))
    s["min_window_packets"] = int(_number(s["min_window_packets"], "scenario.min_window_packets", 1))
    s["max_duration_s"] = _number(s["max_duration_s"], "scenario.max_duration_s", 0.0, lo_open=True)
    s["ack"]["every"] = int(_number(s["ack"]["every"], "scenario.ack.every", 1))
    s["ack"]["max_delay_ms"] = _number(s["ack"]["max_delay_ms"], "scenario.ack.max_delay_ms", 0.0)
    fc = s["flow_control"]
    fc["initial_window_bytes"] = int(_number(fc["initial_window_bytes"], "scenario.flow_control.initial_window_bytes",
                                             s["packet_size"]))
    fc["max_window_bytes"] = int(_number(fc["max_window_bytes"], "scenario.flow_control.max_window_bytes",
                                         fc["initial_window_bytes"]))
    return s


def load_path_trace(spec, seed_seq: np.random.SeedSequence) -> PathTrace:
    """A path's capacity from ``trace`` (file) or ``synthetic`` (generator) config."""
    from envs.traces import load_trace, synthetic
    from envs.traces.catalog import resolve_trace_path

    if isinstance(spec, str):
        return load_trace(resolve_trace_path(spec))
    spec = _plain(spec)
    if "file" in spec:
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
    return out if isinstance(out, PathTrace) else PathTrace(capacity=out, source=f"synthetic:{kind}")


class Emulation:
    """One simulator and its links; builds connections from scenario dicts.

    All randomness derives from ``seed`` through ``numpy.random.SeedSequence``
    children taken in build order, so a scenario plus a seed reproduces a run
    bit for bit.
    """

    def __init__(self, seed: int = 0):
        self.sim = Simulator()
        self.seed = int(seed)
        self._seq = np.random.SeedSequence(self.seed)
        self.shared_links: dict[str, Link] = {}
        self.connections: list[Connection] = []

    def _child(self) -> np.random.SeedSequence:
        return self._seq.spawn(1)[0]

    def build_path(self, p: dict, scenario: dict) -> Path:
        child = self._child()
        trace_seq, delay_seq, loss_seq = child.spawn(3)
        if p["bandwidth_mbps"] is not None:
            ptrace = PathTrace(CapacityTrace.constant(p["bandwidth_mbps"] * 1e6 / 8, name=p["name"]))
        else:
            ptrace = load_path_trace(p["trace"] if p["trace"] is not None else p["synthetic"], trace_seq)
        delay_series = ptrace.delay if p["trace_delay"] else None
        loss_series = ptrace.loss if p["trace_loss"] else None
        offset = p["trace_start_s"]
        if offset == "random":
            offset = float(np.random.default_rng(trace_seq).uniform(0.0, ptrace.capacity.period))
        link = self.shared_links.get(p["shared_link"]) if p["shared_link"] else None
        if link is None:
            rtt_s = p["rtt_ms"] / 1000 if delay_series is None else 2 * delay_series.mean
            if p["buffer_packets"] is None and p["buffer_bytes"] is None:
                bdp_packets = ptrace.capacity.mean_rate * rtt_s / scenario["packet_size"]
                buffer_packets = max(10, math.ceil(p["buffer_bdp"] * bdp_packets))
            else:
                buffer_packets = p["buffer_packets"]
            link = Link(ptrace.capacity, buffer_packets, p["buffer_bytes"], name=p["name"], offset=offset)
            if p["shared_link"]:
                self.shared_links[p["shared_link"]] = link
        cv = p["rtt_std_ms"] / p["rtt_ms"]
        delay = DelayModel(p["rtt_ms"] / 1000, cv, np.random.default_rng(delay_seq), delay_series, offset)
        loss = LossModel(p["loss"], np.random.default_rng(loss_seq), loss_series,
                         p["ge"] if p["loss_model"] == "gilbert_elliott" else None, offset)
        ret = None
        if p["return_bandwidth_mbps"] is not None:
            ret = Link(CapacityTrace.constant(p["return_bandwidth_mbps"] * 1e6 / 8), None, None,
                       name=p["name"] + "-ret")
        return Path(link, delay, loss, ret, name=p["name"])

    def connect(self, scenario, scheduler, name: str | None = None) -> Connection:
        """Build a connection for a (normalised or raw) scenario dict."""
        s = normalise_scenario(scenario)
        paths = [self.build_path(p, s) for p in s["paths"]]
        group = CouplingGroup()
        ccs = [make_cc(p["cc"] or s["cc"], s["packet_size"], s["initial_window_packets"],
                       group=group, min_window_packets=s["min_window_packets"]) for p in s["paths"]]
        conn = Connection(
            self.sim, paths, ccs, scheduler,
            packet_size=s["packet_size"], header_bytes=s["header_bytes"],
            ack_every=s["ack"]["every"], max_ack_delay=s["ack"]["max_delay_ms"] / 1000,
            ack_size=s["ack"]["size_bytes"],
            fc_initial_window=s["flow_control"]["initial_window_bytes"],
            fc_max_window=s["flow_control"]["max_window_bytes"],
            fc_autotune=bool(s["flow_control"]["autotune"]),
            name=name or f"conn{len(self.connections)}")
        self.connections.append(conn)
        return conn


__all__ = ["LINKS", "Emulation", "normalise_scenario", "normalise_path", "FalconInputError"]
