"""TRUE GAP (brute-force best static GAP) and the realised-GAP recorder.

* :func:`true_gap`: for a two-path scenario and an app, run
  :class:`~baselines.gaps.gap_rules.FixedGap` for every GAP of
  :func:`gap_grid` (0 .. ``max_gap_packets`` by ``step``, optionally refined
  around the best by ``refine_step``) on every seed; the TRUE GAP is the GAP
  with the smallest mean OQS (mean over seeds of the episodes' time-sampled
  ``oqs_mean_bytes``; ties: the smallest GAP). p99 OQS is reported beside it
  (the GAPS paper finds the TRUE GAP by brute force in the same way).
* :class:`GapRecorder`: wraps any scheduler, forwards every call and
  records the GAP [packets] of each decision that sends on a path other
  than the fastest one (:func:`~baselines.rule_based.common.fastest`: the
  lowest srtt among paths with an RTT sample; decisions taken while no path
  has a sample are not recorded).
* :func:`gap_deviation`: |mean realised GAP - TRUE GAP| / TRUE GAP x 100 %.
  When the TRUE GAP is 0 a relative deviation is undefined: the deviation is
  then the absolute |mean realised GAP| in packets, and the unit says so.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from baselines.gaps.gap_rules import DEFAULT_MAX_GAP_PACKETS, FixedGap, check_max_gap
from baselines.rule_based.common import fastest
from envs.errors import ConfigError, is_whole_number
from envs.scheduler import ConnectionView, Decision, Scheduler


# ---------------------------------------------------------------- recorder
class GapRecorder(Scheduler):
    """Forwards ``decide``, ``reset``, the per-packet feedback and the class
    flags (``wants_packet_feedback``, ``reask_when_idle``, ``name``) to
    ``inner`` (``view.wake_at`` needs nothing: the inner scheduler calls it on
    the view it is given) and records, per decision that sends on a slower
    path, the GAP in packets (``Decision.gap / view.payload``; 0 for a plain
    int or a Decision without gap). ``gaps`` keeps every value of the
    episodes since construction (or :meth:`clear`); ``by_path`` counts the
    decisions per path index."""

    def __init__(self, inner: Scheduler) -> None:
        self.inner = inner
        self.name = inner.name
        self.wants_packet_feedback = bool(inner.wants_packet_feedback)
        self.reask_when_idle = bool(inner.reask_when_idle)
        self.gaps: list[float] = []
        self.by_path: dict[int, int] = {}

    def clear(self) -> None:
        self.gaps = []
        self.by_path = {}

    def reset(self, view: ConnectionView) -> None:
        self.inner.reset(view)

    def decide(self, view: ConnectionView) -> int | Decision | None:
        d = self.inner.decide(view)
        if d is None:
            return d
        if isinstance(d, Decision):
            i, gap = d.path, d.gap
        else:
            i, gap = int(d), 0
        paths = view.paths
        f = fastest(paths)
        if 0 <= i < len(paths) and i != f and paths[f].has_rtt_sample:
            self.gaps.append(gap / view.payload)
            self.by_path[i] = self.by_path.get(i, 0) + 1
        return d

    def on_packet_acked(self, view: ConnectionView, path: int, size: int, sent_time: float) -> None:
        self.inner.on_packet_acked(view, path, size, sent_time)

    def on_packet_lost(self, view: ConnectionView, path: int, size: int, sent_time: float) -> None:
        self.inner.on_packet_lost(view, path, size, sent_time)

    @property
    def mean_gap(self) -> float:
        """Mean recorded GAP [packets]; NaN before any slower-path decision."""
        return float(np.mean(self.gaps)) if self.gaps else math.nan


def gap_deviation(realised_mean: float, true_gap_packets: float) -> tuple[float, str]:
    """``(deviation, unit)``: ``(|mean - TRUE| / TRUE x 100, "%")`` when the
    TRUE GAP is > 0, else ``(|mean|, "packets")``; NaN when either is NaN."""
    if not (math.isfinite(realised_mean) and math.isfinite(true_gap_packets)):
        return math.nan, "%"
    if true_gap_packets > 0:
        return abs(realised_mean - true_gap_packets) / true_gap_packets * 100.0, "%"
    return abs(realised_mean), "packets"


# ---------------------------------------------------------------- sweep
def gap_grid(max_gap_packets: int, step: int) -> list[int]:
    """0, step, 2 step, ... and ``max_gap_packets`` itself."""
    max_gap_packets = check_max_gap("true_gap", max_gap_packets)
    if not is_whole_number(step, 1):
        raise ConfigError(f"true_gap.step: expected an integer >= 1 [packets], got {step!r}")
    grid = list(range(0, max_gap_packets + 1, step))
    if grid[-1] != max_gap_packets:
        grid.append(max_gap_packets)
    return grid


@dataclass
class TrueGapResult:
    """The sweep's outcome: the TRUE GAP [packets], its mean and p99 OQS
    [bytes] (means over seeds), and one row per swept GAP (``gap_packets``,
    ``oqs_mean_bytes``, ``oqs_p99_bytes``, ``per_seed`` mean OQS)."""

    gap_packets: int
    oqs_mean_bytes: float
    oqs_p99_bytes: float
    curve: list[dict] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "gap_packets": self.gap_packets,
            "oqs_mean_bytes": self.oqs_mean_bytes,
            "oqs_p99_bytes": self.oqs_p99_bytes,
            "curve": self.curve,
        }


def _default_run(scenario, app, scheduler, seed) -> Mapping[str, float]:
    import envs

    return envs.run_episode(scenario, app, scheduler, seed).metrics


def true_gap(
    scenario: Mapping,
    app: Mapping,
    *,
    seeds: Sequence[int] = (0,),
    max_gap_packets: int = DEFAULT_MAX_GAP_PACKETS,
    step: int = 8,
    refine_step: int | None = None,
    run: Callable | None = None,
) -> TrueGapResult:
    """The static GAP minimising the mean OQS on ``scenario`` (two paths)
    over ``seeds`` (module docstring). ``refine_step``: after the coarse grid,
    also sweep the GAPs within one ``step`` of the best at ``refine_step``.
    ``run(scenario, app, scheduler, seed)`` -> episode metrics (default:
    :func:`envs.run_episode`)."""
    n_paths = len(scenario.get("paths") or [])
    if n_paths != 2:
        raise ConfigError(
            f"true_gap: the TRUE GAP sweep needs a two-path scenario, got {n_paths} path(s)"
        )
    seeds = [int(s) for s in seeds]
    if not seeds:
        raise ConfigError("true_gap.seeds: give at least one seed")
    run = run or _default_run
    rows: dict[int, dict] = {}

    def sweep(gaps):
        for g in gaps:
            if g in rows:
                continue
            ms = [run(scenario, app, FixedGap(g, max_gap_packets), s) for s in seeds]
            rows[g] = {
                "gap_packets": int(g),
                "oqs_mean_bytes": float(np.mean([m["oqs_mean_bytes"] for m in ms])),
                "oqs_p99_bytes": float(np.mean([m["oqs_p99_bytes"] for m in ms])),
                "per_seed": [float(m["oqs_mean_bytes"]) for m in ms],
            }

    sweep(gap_grid(max_gap_packets, step))
    if refine_step is not None:
        if not is_whole_number(refine_step, 1):
            raise ConfigError(
                f"true_gap.refine_step: expected an integer >= 1 or null, got {refine_step!r}"
            )
        best = _best(rows)
        lo, hi = max(0, best - step), min(max_gap_packets, best + step)
        sweep(range(lo, hi + 1, refine_step))
    best = _best(rows)
    curve = [rows[g] for g in sorted(rows)]
    return TrueGapResult(best, rows[best]["oqs_mean_bytes"], rows[best]["oqs_p99_bytes"], curve)


def _best(rows: Mapping[int, dict]) -> int:
    return min(sorted(rows), key=lambda g: rows[g]["oqs_mean_bytes"])


__all__ = ["GapRecorder", "gap_deviation", "gap_grid", "true_gap", "TrueGapResult"]
