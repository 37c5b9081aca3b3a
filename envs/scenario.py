"""Scenarios from plain dicts: defaults, presets, validation (schema: docs/reference/formats/scenario_schema.md).

``normalise_scenario`` fills defaults and Table I presets and validates every
key and value, raising :class:`ConfigError` with a one-line message that
names the offending key. :class:`envs.emulation.Emulation` turns a normalised
scenario into simulator objects (still importable from here). A path's
``schedule`` changes its conditions over emulated time (:func:`normalise_schedule`,
:func:`random_condition_schedule`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from envs.errors import ConfigError, FalconInputError, check_flag
from envs.path_schedule import SCHEDULE_FIELDS
from envs.path_sender import PACING_DEFAULTS
from envs.plain import PlainMemo, merge_defaults, plain_mapping
from envs.setup import SETUP_DEFAULTS, normalise_setup

#: The FALCON paper's Table I links (bandwidth, RTT mean +- std, loss).
LINKS: dict[str, dict] = {
    "5g": {
        "name": "5g",
        "bandwidth_mbps": 1100.0,
        "rtt_ms": 27.4,
        "rtt_std_ms": 6.4,
        "loss": 0.001,
    },
    "4g": {"name": "4g", "bandwidth_mbps": 140.0, "rtt_ms": 29.2, "rtt_std_ms": 4.8, "loss": 0.001},
    "wlan": {
        "name": "wlan",
        "bandwidth_mbps": 30.0,
        "rtt_ms": 20.0,
        "rtt_std_ms": 10.0,
        "loss": 0.007,
    },
}

SCENARIO_DEFAULTS: dict = {
    "name": "custom",
    "packet_size": 1350,
    "header_bytes": 60,
    "initial_window_packets": 32,
    "min_window_packets": 2,
    "max_duration_s": 120.0,
    "ack": {"every": 2, "max_delay_ms": 25.0, "size_bytes": 50},
    "flow_control": {
        "initial_window_bytes": 786432,
        "max_window_bytes": 15728640,
        "autotune": True,
    },
    "cc": "olia",
    "hystart": True,
    "setup": dict(SETUP_DEFAULTS),
    "pacing": dict(PACING_DEFAULTS),
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
    "schedule": None,
}

#: Path fields a schedule segment may set (units in the names; loss is a probability).

#: Per schedule field, (min, max) over the Table I links: the default ranges of
#: :func:`random_condition_schedule`.
TABLE1_RANGES: dict[str, tuple[float, float]] = {
    f: (min(link[f] for link in LINKS.values()), max(link[f] for link in LINKS.values()))
    for f in SCHEDULE_FIELDS
}


def _number(value, key: str, lo: float = 0.0, hi: float = math.inf, lo_open: bool = False) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{key}: expected a number, got {value!r}") from None
    if not math.isfinite(x) or x < lo or x > hi or (lo_open and x == lo):
        rng = f"({lo}, {hi}]" if lo_open else f"[{lo}, {hi}]"
        raise ConfigError(f"{key}: {value!r} is outside {rng}")
    return x


def normalise_pacing(value) -> dict:
    """The ``pacing:`` block (``docs/reference/formats/scenario_schema.md``, :mod:`envs.path_sender`); true/false: the defaults on/off."""
    if isinstance(value, bool):
        return {**PACING_DEFAULTS, "enabled": value}
    if not isinstance(value, dict):
        raise ConfigError(
            f"scenario.pacing: expected true, false or a mapping of {sorted(PACING_DEFAULTS)}, "
            f"got {value!r}"
        )
    out = merge_defaults(PACING_DEFAULTS, value, "scenario.pacing")
    check_flag(out["enabled"], "scenario.pacing.enabled")
    out["gain"] = _number(out["gain"], "scenario.pacing.gain", 0.0, lo_open=True)
    out["burst_packets"] = int(_number(out["burst_packets"], "scenario.pacing.burst_packets", 1))
    out["min_delay_ms"] = _number(out["min_delay_ms"], "scenario.pacing.min_delay_ms", 0.0)
    return out


def normalise_path(pcfg, i: int) -> dict:
    # None means "not set": the preset's or the default value applies (the
    # config tree gives every path every key as null, falcon/schema.py, so each
    # can be overridden without "+")
    given = {k: v for k, v in plain_mapping(pcfg, f"paths[{i}]").items() if v is not None}
    preset = given.get("link")
    base = dict(PATH_DEFAULTS)
    if preset is not None:
        if str(preset).lower() not in LINKS:
            raise ConfigError(f"paths[{i}].link: unknown link {preset!r}; known: {sorted(LINKS)}")
        base.update(LINKS[str(preset).lower()])
    p = merge_defaults(base, given, f"paths[{i}]")
    key = f"paths[{i}]"
    sources = [k for k in ("bandwidth_mbps", "trace", "synthetic") if p[k] is not None]
    if p["link"] is not None and len(sources) > 1 and "bandwidth_mbps" in sources:
        # a trace or synthetic process overrides the preset's constant bandwidth
        if "bandwidth_mbps" not in given:
            p["bandwidth_mbps"] = None
            sources.remove("bandwidth_mbps")
    if len(sources) != 1:
        raise ConfigError(
            f"{key}: give exactly one of bandwidth_mbps, trace, synthetic (got {sources or 'none'})"
        )
    if p["bandwidth_mbps"] is not None:
        p["bandwidth_mbps"] = _number(
            p["bandwidth_mbps"], f"{key}.bandwidth_mbps", 0.0, lo_open=True
        )
    p["rtt_ms"] = _number(p["rtt_ms"], f"{key}.rtt_ms", 0.0, lo_open=True)
    p["rtt_std_ms"] = _number(p["rtt_std_ms"], f"{key}.rtt_std_ms", 0.0)
    p["loss"] = _number(p["loss"], f"{key}.loss", 0.0, 1.0)
    if p["loss"] >= 1.0:
        raise ConfigError(
            f"{key}.loss: {p['loss']} would lose every packet (give a probability below 1)"
        )
    if p["loss_model"] not in ("bernoulli", "gilbert_elliott"):
        raise ConfigError(
            f"{key}.loss_model: unknown {p['loss_model']!r}; choose bernoulli or gilbert_elliott"
        )
    if p["loss_model"] == "gilbert_elliott":
        ge = plain_mapping(p["ge"])
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
        check_flag(p[flag], f"{key}.{flag}")
    if p["return_bandwidth_mbps"] is not None:
        p["return_bandwidth_mbps"] = _number(
            p["return_bandwidth_mbps"], f"{key}.return_bandwidth_mbps", 0.0, lo_open=True
        )
    if p["schedule"] is not None:
        p["schedule"] = normalise_schedule(p["schedule"], f"{key}.schedule")
        fields = {f for seg in p["schedule"]["segments"] for f in seg}
        if "bandwidth_mbps" in fields and p["bandwidth_mbps"] is None:
            raise ConfigError(
                f"{key}.schedule: bandwidth_mbps can only be scheduled on a path with a constant "
                "bandwidth_mbps (not a trace or synthetic capacity)"
            )
        if "loss" in fields and p["loss_model"] != "bernoulli":
            raise ConfigError(
                f"{key}.schedule: loss can only be scheduled with loss_model bernoulli"
            )
    if p["name"] is None:
        p["name"] = p["link"] or f"path{i}"
    return p


def _segment_value(field: str, value, key: str) -> float:
    if field == "rtt_ms" or field == "bandwidth_mbps":
        return _number(value, key, 0.0, lo_open=True)
    x = _number(value, key, 0.0, 1.0 if field == "loss" else math.inf)
    if field == "loss" and x >= 1.0:
        raise ConfigError(f"{key}: {x} would lose every packet (give a probability below 1)")
    return x


def normalise_schedule(schedule, key: str = "schedule") -> dict:
    """Validate a path's ``schedule`` (docs/reference/formats/scenario_schema.md); returns
    ``{"segments": [{"at_s": float, <given fields>: float}, ...], "period_s": float | None}``.

    Accepts a list of segments (not looped) or ``{segments: [...], period_s: P}``
    (looped every ``P`` s). A segment field that is absent or null keeps the
    previous segment's value (the path's own before the first segment).
    """
    if isinstance(schedule, (str, bytes)) or not isinstance(schedule, (Mapping, Sequence)):
        raise ConfigError(
            f"{key}: expected a list of segments or {{segments: [...], period_s: ...}}, "
            f"got {schedule!r}"
        )
    if isinstance(schedule, Mapping):
        sched = plain_mapping(schedule)
        unknown = set(sched) - {"segments", "period_s"}
        if unknown:
            raise ConfigError(
                f"{key}: unknown key(s) {sorted(unknown)}; known: ['period_s', 'segments']"
            )
        segments, period = sched.get("segments"), sched.get("period_s")
    else:
        segments, period = list(schedule), None
    if isinstance(segments, (str, bytes)) or not isinstance(segments, Sequence) or not segments:
        raise ConfigError(
            f"{key}: give a non-empty list of segments {{at_s: ..., rtt_ms: ..., ...}}"
        )
    out, last = [], -1.0
    for k, seg in enumerate(segments):
        where = f"{key}[{k}]"
        if not isinstance(seg, Mapping):
            raise ConfigError(
                f"{where}: expected a mapping {{at_s: ..., rtt_ms: ..., ...}}, got {seg!r}"
            )
        seg = {f: v for f, v in plain_mapping(seg).items() if v is not None}
        unknown = set(seg) - {"at_s", *SCHEDULE_FIELDS}
        if unknown:
            raise ConfigError(
                f"{where}: unknown key(s) {sorted(unknown)}; known: {sorted(('at_s',) + SCHEDULE_FIELDS)}"
            )
        if "at_s" not in seg:
            raise ConfigError(f"{where}: missing at_s (segment start time [s])")
        at = _number(seg["at_s"], f"{where}.at_s", 0.0)
        if at <= last:
            raise ConfigError(
                f"{where}.at_s: {at} does not come after the previous segment's {last}; "
                "start times must strictly increase"
            )
        last = at
        norm = {"at_s": at}
        for f in SCHEDULE_FIELDS:
            if f in seg:
                norm[f] = _segment_value(f, seg[f], f"{where}.{f}")
        out.append(norm)
    if period is not None:
        period = _number(period, f"{key}.period_s", 0.0, lo_open=True)
        if period <= last:
            raise ConfigError(
                f"{key}.period_s: {period} must exceed the last segment's at_s {last}"
            )
    return {"segments": out, "period_s": period}


def random_condition_schedule(
    rng: np.random.Generator,
    interval_s: float,
    n_segments: int,
    ranges: Mapping[str, tuple[float, float]] | None = None,
    start_s: float = 0.0,
) -> list[dict]:
    """A schedule of ``n_segments`` random conditions, one every ``interval_s`` [s].

    Segment ``k`` starts at ``start_s + k * interval_s`` [s] and sets each
    field of ``ranges`` (``{field: (lo, hi)}``, fields of
    :data:`SCHEDULE_FIELDS`) to a uniform draw from ``[lo, hi]``; fields
    not in ``ranges`` keep the path's values. ``ranges=None`` varies all
    four over the Table I min/max (:data:`TABLE1_RANGES`). Draws come from
    ``rng`` only (field by field in SCHEDULE_FIELDS order), so a seeded
    generator reproduces the schedule. The result is a valid path
    ``schedule`` value.
    """
    interval_s = _number(interval_s, "random_condition_schedule.interval_s", 0.0, lo_open=True)
    start_s = _number(start_s, "random_condition_schedule.start_s", 0.0)
    if (
        isinstance(n_segments, bool)
        or not isinstance(n_segments, (int, np.integer))
        or n_segments < 1
    ):
        raise ConfigError(
            f"random_condition_schedule.n_segments: expected an integer >= 1, got {n_segments!r}"
        )
    ranges = dict(TABLE1_RANGES if ranges is None else ranges)
    unknown = set(ranges) - set(SCHEDULE_FIELDS)
    if unknown or not ranges:
        raise ConfigError(
            f"random_condition_schedule.ranges: fields must be a non-empty subset of "
            f"{list(SCHEDULE_FIELDS)} (got {sorted(ranges)})"
        )
    segments = [{"at_s": start_s + k * interval_s} for k in range(int(n_segments))]
    for f in SCHEDULE_FIELDS:
        if f not in ranges:
            continue
        try:
            lo, hi = ranges[f]
        except (TypeError, ValueError):
            raise ConfigError(
                f"random_condition_schedule.ranges.{f}: expected (lo, hi), got {ranges[f]!r}"
            ) from None
        lo = _segment_value(f, lo, f"random_condition_schedule.ranges.{f}")
        hi = _segment_value(f, hi, f"random_condition_schedule.ranges.{f}")
        if hi < lo:
            raise ConfigError(f"random_condition_schedule.ranges.{f}: lo {lo} exceeds hi {hi}")
        for seg, x in zip(segments, rng.uniform(lo, hi, len(segments)).tolist()):
            seg[f] = x
    return segments


def normalise_scenario(cfg, keep: bool = True) -> dict:
    """Defaults + presets + validation; returns a new plain dict. A string is
    the name of a scenario preset (``configs/scenario/``, :mod:`envs.presets`).
    A dict normalised twice lately is kept: a later call with the same dict gets
    a copy of the kept result (:class:`envs.plain.PlainMemo`). ``keep=False``
    neither looks ``cfg`` up nor remembers it: a scenario met once, such as a
    bank task's, then costs no key."""
    if isinstance(cfg, str):
        from envs.presets import resolve

        cfg = resolve(cfg, "scenario")
    return _NORMALISED(cfg) if keep else _normalised(cfg)


def _normalised(cfg) -> dict:
    """:func:`normalise_scenario` of a mapping."""
    s = merge_defaults(SCENARIO_DEFAULTS, plain_mapping(cfg, "scenario"), "scenario")
    paths = s["paths"]
    if not isinstance(paths, (list, tuple)) or not paths:
        raise ConfigError("scenario.paths: give at least one path")
    s["paths"] = [normalise_path(p, i) for i, p in enumerate(paths)]
    s["packet_size"] = int(_number(s["packet_size"], "scenario.packet_size", 100, 65527))
    s["header_bytes"] = int(
        _number(s["header_bytes"], "scenario.header_bytes", 0, s["packet_size"] - 1)
    )
    s["initial_window_packets"] = int(
        _number(s["initial_window_packets"], "scenario.initial_window_packets", 1)
    )
    s["min_window_packets"] = int(
        _number(s["min_window_packets"], "scenario.min_window_packets", 1)
    )
    s["max_duration_s"] = _number(s["max_duration_s"], "scenario.max_duration_s", 0.0, lo_open=True)
    for key in ("ack", "flow_control"):
        if not isinstance(s[key], dict):
            raise ConfigError(
                f"scenario.{key}: expected a mapping of {sorted(SCENARIO_DEFAULTS[key])}, "
                f"got {s[key]!r}"
            )
    check_flag(s["hystart"], "scenario.hystart")
    s["setup"] = normalise_setup(s["setup"])
    s["pacing"] = normalise_pacing(s["pacing"])
    s["ack"]["every"] = int(_number(s["ack"]["every"], "scenario.ack.every", 1))
    s["ack"]["max_delay_ms"] = _number(s["ack"]["max_delay_ms"], "scenario.ack.max_delay_ms", 0.0)
    fc = s["flow_control"]
    fc["initial_window_bytes"] = int(
        _number(
            fc["initial_window_bytes"],
            "scenario.flow_control.initial_window_bytes",
            s["packet_size"],
        )
    )
    fc["max_window_bytes"] = int(
        _number(
            fc["max_window_bytes"],
            "scenario.flow_control.max_window_bytes",
            fc["initial_window_bytes"],
        )
    )
    return s


#: the scenarios normalised lately (a trace condition's episodes share one)
_NORMALISED = PlainMemo(_normalised)

#: names that moved to :mod:`envs.emulation` (building simulator objects), still
#: importable from here; resolved on first use, as envs.emulation imports this module
_MOVED = ("Emulation", "buffer_rate", "load_path_trace", "cc_options")


def __getattr__(name: str):
    if name in _MOVED:
        import envs.emulation

        return getattr(envs.emulation, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "LINKS",
    "normalise_scenario",
    "normalise_path",
    "FalconInputError",
    "SCHEDULE_FIELDS",
    "TABLE1_RANGES",
    "normalise_schedule",
    "random_condition_schedule",
]
