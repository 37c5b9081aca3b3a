"""Fixed split: a constant share of the packets on path 0, the rest on path 1.

A reference rather than a scheduler of the field: the learnability suite
(:mod:`falcon.experiments.learnability`) runs it for shares 0.0, 0.1, ...,
1.0 and reports the best one, which shows how much a static traffic split
could gain over the rule-based schedulers on a condition.
"""

from __future__ import annotations

import math

from envs.errors import ConfigError
from envs.scheduler import ConnectionView, Decision, Scheduler


def check_share(share) -> float:
    """``share`` as a float in [0, 1]; a one-line ConfigError otherwise."""
    if (
        isinstance(share, bool)
        or not isinstance(share, int | float)
        or not math.isfinite(share)
        or not 0.0 <= share <= 1.0
    ):
        raise ConfigError(
            f"share: expected a number in [0, 1] (fraction of the packets on path 0), got {share!r}"
        )
    return float(share)


class FixedSplit(Scheduler):
    """Send a fixed fraction ``share`` of the packets on path 0, the rest on
    path 1 (two paths only).

    Deterministic: the next packet goes on path 0 when ``packets_sent`` of
    path 0 < ``share`` x (packets sent on both paths + 1), else on path 1.
    Counts include retransmissions, which follow the same rule. When the
    chosen path has no congestion-window room the scheduler waits (returns
    None) instead of using the other path, so the split holds whatever the
    paths' rates: after n decisions path 0 has carried ``ceil(share x n)``
    packets (``share`` 0 or 1: a single path).

    Args:
        share: fraction of the packets sent on path 0, in [0, 1].
    """

    name = "fixed_split"
    native_rule = "fixed_split"  # decided in the compiled core (envs.rules.split_pick)

    def __init__(self, share: float = 0.5) -> None:
        self.share = check_share(share)

    def reset(self, view: ConnectionView) -> None:
        if len(view.paths) != 2:
            raise ConfigError(
                f"fixed_split: needs exactly 2 paths, the scenario has {len(view.paths)}"
            )

    def decide(self, view: ConnectionView) -> int | Decision | None:
        p0, p1 = view.paths
        sent0 = p0.packets_sent
        if sent0 < self.share * (sent0 + p1.packets_sent + 1):
            return 0 if p0.has_room else None
        return 1 if p1.has_room else None
