"""The outcome of one seed claim (:class:`Verdict`) and the number helpers the checks share.

The checks themselves are in :mod:`falcon.reproduce.claims` (FALCON, and the
table of every figure's check), :mod:`falcon.reproduce.claims_srpt` (SRPT-ECF)
and :mod:`falcon.reproduce.claims_other` (GAPS, the hybrid MPTCP, HOP).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass
class Verdict:
    """One claim's outcome; ``ours`` maps labels (units in them) to our numbers."""

    claim_id: str
    reproduced: bool | None
    ours: dict = field(default_factory=dict)
    rule: str = ""
    reason: str = ""

    @property
    def label(self) -> str:
        return {True: "reproduced", False: "not reproduced", None: "not assessed"}[self.reproduced]


def _num(x) -> float:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return math.nan
    return v


def _ok(*xs) -> bool:
    return all(math.isfinite(_num(x)) for x in xs)


def _geo(values) -> float:
    v = [_num(x) for x in values if _ok(x) and _num(x) > 0]
    return math.exp(sum(math.log(x) for x in v) / len(v)) if v else math.nan


def paper(fig: Mapping, claim_id: str) -> dict:
    """The paper's numbers of one claim of ``fig`` (data/seed_claims.yaml): no check types them in."""
    return next(dict(c["values"]) for c in fig["claims"] if c["id"] == claim_id)


def _missing(claim_id: str, what: str) -> Verdict:
    return Verdict(claim_id, None, {}, "", f"not assessed at this scale: {what}")


def _medians(summary: Mapping, metric: str = "download_time_s") -> dict:
    """``{(scenario, app): {scheduler: median}}`` of an evaluate summary.json."""
    out: dict = {}
    for sc, apps in summary.get("results", {}).items():
        for app, per in apps.items():
            out[(sc, app)] = {ag: _num(m.get(metric, {}).get("median")) for ag, m in per.items()}
    return out


__all__ = ["Verdict", "paper"]
