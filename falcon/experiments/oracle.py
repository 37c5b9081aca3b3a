"""The learnability suite's references beside the best fixed split
(:mod:`falcon.experiments.learnability`): the best single path and the
hindsight oracle, and what a condition's *best known* time is.

* **Best single path**: the better of the fixed split's shares 0 and 1
  (every packet on path 1, every packet on path 0), by median.
* **Hindsight oracle**: for each seed, the fastest member of a policy family
  run on that very seed (the emulator is deterministic, so this is what one
  would get by choosing the policy knowing the seed's network). The family
  is :class:`baselines.rule_based.policy_family.SplitThreshold` over
  ``fixed_split_shares`` x ``oracle.thresholds`` x ``oracle.reinject``;
  its members with no threshold and no re-injection are the fixed split
  itself, whose runs the suite already has. The rules' runs of the seed are
  candidates too. So the oracle contains the best single path, the best
  fixed split and every rule seed by seed (never slower than any of them on
  any seed).
* **Cross-fitted policy**: the same candidates, but on each seed the one
  with the lowest median over the seeds of the *other* half (seeds are split
  by the parity of their position; :func:`crossfit_best`), run on that seed.
  It chooses one policy for the condition without seeing the seed it is
  scored on: what a learner that only picks the right member for the
  condition could reach. The gap between it and the oracle is the oracle's
  hindsight (the choice made knowing the seed's network), which no causal
  policy is guaranteed to close.
* **Trace-aware oracle** (``oracle.resample: true``): per seed the oracle's
  choice, run again on the same trace segments (the offsets and synthetic
  traces that seed draws, :func:`envs.emulation.pin_trace_draws`) with fresh
  delay and loss draws (seed + :data:`RESAMPLE_SEED_OFFSET`), once every
  candidate has run. What knowing the network the download meets is worth,
  without the oracle's luck of picking, among many candidates, the one whose
  delay and loss draws happened to fall well on that seed: the gap between
  it and the oracle is that luck, which no policy can capture.
* **Best known** (per condition): the lowest median of every rule, every
  reference and every scheduler the run scored. *Headroom* = the best rule's
  median / the best known median; a scheduler's *headroom captured* = (best
  rule's median - its median) / (best rule's median - best known median).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence

from envs.errors import ConfigError, check_flag

ORACLE = "oracle"
CROSSFIT = "crossfit_policy"
TRACE_ORACLE = "trace_aware_oracle"
#: the trace-aware oracle's fresh delay and loss draws: seed + this (disjoint from every suite seed)
RESAMPLE_SEED_OFFSET = 10_000_000
BEST_SINGLE = "best_single_path"
FAMILY_AGENT = "split_threshold"  # configs/agent/split_threshold.yaml
ORACLE_KEYS = ("thresholds", "reinject", "resample")


def check_oracle(value, where: str) -> dict | None:
    """The validated ``oracle`` setting: ``{thresholds: [float | None], reinject: [bool]}``
    (and ``resample: true`` when given so: the trace-aware oracle too), or None
    (false/null: no oracle)."""
    if value is None or value is False:
        return None
    if not isinstance(value, Mapping):
        raise ConfigError(
            f"{where}: expected a mapping {{thresholds: [...], reinject: [...]}} or false, "
            f"got {value!r}"
        )
    unknown = sorted(set(value) - set(ORACLE_KEYS))
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {unknown}; known: {list(ORACLE_KEYS)}")
    from baselines.rule_based.policy_family import check_threshold

    thresholds, reinject = value.get("thresholds"), value.get("reinject")
    if not isinstance(thresholds, list) or not thresholds:
        raise ConfigError(
            f"{where}.thresholds: expected a non-empty list of numbers >= 1 or null, got {thresholds!r}"
        )
    for t in thresholds:
        try:
            check_threshold(t)
        except ConfigError as e:
            raise ConfigError(f"{where}.thresholds: {e}") from None
    if (
        not isinstance(reinject, list)
        or not reinject
        or not all(isinstance(r, bool) for r in reinject)
    ):
        raise ConfigError(
            f"{where}.reinject: expected a non-empty list of true/false, got {reinject!r}"
        )
    if len(set(map(str, thresholds))) != len(thresholds) or len(set(reinject)) != len(reinject):
        raise ConfigError(f"{where}: a threshold or reinject value is listed twice")
    resample = value.get("resample", False)
    check_flag(resample, f"{where}.resample")
    out = {
        "thresholds": [None if t is None else float(t) for t in thresholds],
        "reinject": list(reinject),
    }
    return {**out, "resample": True} if resample else out


def label(share: float, threshold: float | None, reinject: bool) -> str:
    """A family member's name, e.g. ``share=0.3,threshold=1.5,reinject=on``."""
    t = "none" if threshold is None else f"{threshold:g}"
    return f"share={share:g},threshold={t},reinject={'on' if reinject else 'off'}"


def member_groups(shares: Sequence[float], oracle: Mapping) -> list[tuple[dict, ...]]:
    """The family members the suite must run, one group per (threshold, reinject)
    pair (a job each): every share of the group; the fixed split's own members
    (no threshold, no re-injection) are left out (the fixed split's job has them)."""
    groups = []
    for t in oracle["thresholds"]:
        for r in oracle["reinject"]:
            if t is None and not r:
                continue
            groups.append(tuple({"share": s, "threshold": t, "reinject": r} for s in shares))
    return groups


def per_seed_best(
    candidates: Mapping[str, Sequence[float]],
) -> tuple[list[float], list[str | None]]:
    """Per seed, the lowest value over ``candidates`` (``{label: value per seed}``,
    NaN = did not finish) and the label that has it (first in order on ties);
    NaN and None where no candidate finished."""
    n = len(next(iter(candidates.values()))) if candidates else 0
    best, chosen = [], []
    for k in range(n):
        v, who = math.nan, None
        for name, values in candidates.items():
            x = values[k]
            if x is not None and math.isfinite(x) and (who is None or x < v):
                v, who = x, name
        best.append(v)
        chosen.append(who)
    return best, chosen


def crossfit_best(
    candidates: Mapping[str, Sequence[float]],
) -> tuple[list[float], list[str | None]]:
    """Per seed ``k``: the value on ``k`` of the candidate with the lowest median
    over the seeds of the other fold (positions of the other parity; NaN = did
    not finish, slower than every finished run; a candidate whose fold median
    is not a finished run is not chosen), and that candidate's label (first
    in order on ties); NaN and None where no candidate can be chosen."""
    n = len(next(iter(candidates.values()))) if candidates else 0
    pick: dict[int, str | None] = {}
    for fold in (0, 1):
        best, who = math.inf, None
        for name, values in candidates.items():
            xs = [
                x if x is not None and math.isfinite(x) else math.inf
                for k, x in enumerate(values)
                if k % 2 != fold
            ]
            if not xs:
                continue
            med = statistics.median(xs)
            if med < best:
                best, who = med, name
        pick[fold] = who
    values, chosen = [], []
    for k in range(n):
        who = pick[k % 2]
        x = candidates[who][k] if who is not None else math.nan
        values.append(x if x is not None else math.nan)
        chosen.append(who)
    return values, chosen


def captured(
    best_rule: float | None, best_known: float | None, median: float | None
) -> float | None:
    """The share of the headroom a median captures (module docstring); None where there is
    no headroom (best known = best rule) or a median is missing."""
    if best_rule is None or best_known is None or median is None or not best_known < best_rule:
        return None
    return (best_rule - median) / (best_rule - best_known)


__all__ = [
    "ORACLE",
    "CROSSFIT",
    "RESAMPLE_SEED_OFFSET",
    "TRACE_ORACLE",
    "crossfit_best",
    "BEST_SINGLE",
    "FAMILY_AGENT",
    "check_oracle",
    "label",
    "member_groups",
    "per_seed_best",
    "captured",
]
