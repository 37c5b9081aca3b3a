"""A path's condition schedule made concrete (docs/reference/formats/scenario_schema.md, "schedule (per
path)"): the resolved segments, the capacity curve of a scheduled
bandwidth, and the rule for schedules on a shared link. The schedule's
normalisation stays in :mod:`envs.scenario`; :class:`envs.emulation.Emulation`
builds paths with these."""

from __future__ import annotations

from envs.errors import ConfigError
from envs.traces.base import CapacityTrace

SCHEDULE_FIELDS = ("bandwidth_mbps", "rtt_ms", "rtt_std_ms", "loss")

# An unlooped schedule's last capacity must hold "forever", but capacity
# curves loop: give them a period no episode reaches [s] (about 32 years).
_HOLD_S = 1e9


def resolve_schedule(
    p: dict, schedule: dict, rtt_trace: bool, loss_trace: bool
) -> list[tuple[float, dict]]:
    """``[(start [s], conditions)]`` of a normalised path's schedule, every
    field filled: a segment's unset fields carry over from the one before,
    the first from the path. ``rtt_trace`` / ``loss_trace``: the mean RTT /
    loss still comes from the trace's series (until a segment sets it). A
    looped schedule whose first segment starts after 0 gets the path's own
    conditions at 0, so every period starts from them."""
    base = {f: p[f] for f in SCHEDULE_FIELDS}
    base.update(rtt_trace=rtt_trace, loss_trace=loss_trace)
    out = []
    segs = schedule["segments"]
    if schedule["period_s"] is not None and segs[0]["at_s"] > 0.0:
        out.append((0.0, dict(base)))
    cur = base
    for seg in segs:
        cur = dict(cur)
        cur.update({f: seg[f] for f in SCHEDULE_FIELDS if f in seg})
        cur["rtt_trace"] = cur["rtt_trace"] and "rtt_ms" not in seg
        cur["loss_trace"] = cur["loss_trace"] and "loss" not in seg
        out.append((seg["at_s"], cur))
    return out


def scheduled_capacity(
    segments: list[tuple[float, dict]], period: float | None, base_mbps: float, name: str
) -> CapacityTrace:
    """The piecewise-constant capacity curve [bytes/s] of a schedule on a
    path of constant rate ``base_mbps`` [Mbit/s] (``segments`` from
    :func:`resolve_schedule`); the path's own rate holds before the first start."""
    times = [t for t, _ in segments]
    rates = [c["bandwidth_mbps"] * 1e6 / 8 for _, c in segments]
    if times[0] > 0.0:  # unlooped, starting late: the path's own rate first
        times.insert(0, 0.0)
        rates.insert(0, base_mbps * 1e6 / 8)
    return CapacityTrace(
        times, rates, period if period is not None else times[-1] + _HOLD_S, name=name
    )


def bandwidth_steps(p: dict, segments: list[tuple[float, dict]] | None) -> tuple | None:
    """What a path's schedule says about its capacity: ``(period_s, ((at_s,
    Mbit/s), ...))`` over the segments that set ``bandwidth_mbps``, or None
    when no segment does (``segments`` from :func:`resolve_schedule`)."""
    if segments is None or not any("bandwidth_mbps" in seg for seg in p["schedule"]["segments"]):
        return None
    return p["schedule"]["period_s"], tuple((t, c["bandwidth_mbps"]) for t, c in segments)


def check_shared_steps(p: dict, built: tuple | None, steps: tuple | None) -> None:
    """A path joining an already built shared link may schedule its bandwidth
    only as the link's builder did (the link's capacity curve is built once)."""
    if steps is not None and steps != built:
        raise ConfigError(
            f"path {p['name']!r}.schedule: shared_link {p['shared_link']!r} was built with "
            f"{'another' if built is not None else 'no'} bandwidth_mbps schedule; the paths of one "
            "shared link carry the same bandwidth schedule or none (the first path builds the link)"
        )


__all__ = [
    "SCHEDULE_FIELDS",
    "bandwidth_steps",
    "check_shared_steps",
    "resolve_schedule",
    "scheduled_capacity",
]
