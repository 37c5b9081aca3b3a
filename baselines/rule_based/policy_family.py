"""The oracle's policy family of the learnability suite: a fixed split with a
per-path exit threshold and optional tail re-injection.

A reference, not a scheduler of the field: the suite's hindsight oracle
(:mod:`falcon.experiments.oracle`) runs every member of a grid of these on
each seed (the emulator is deterministic) and keeps the fastest, which says
how much better than the rules one could do on a condition.
"""

from __future__ import annotations

import math

from baselines.rule_based.fixed_split import check_share
from envs.errors import ConfigError, check_flag
from envs.scheduler import ConnectionView, Decision, Scheduler


def check_threshold(threshold) -> float:
    """``threshold`` as a float >= 1 (None: infinity, the path is never left)."""
    if threshold is None:
        return math.inf
    if (
        isinstance(threshold, bool)
        or not isinstance(threshold, int | float)
        or math.isnan(threshold)
        or threshold < 1.0
    ):
        raise ConfigError(
            f"threshold: expected a number >= 1 or null (never leave a path), got {threshold!r}"
        )
    return float(threshold)


def predicted_delivery(p) -> float:
    """When a packet sent now on path ``p`` would reach the receiver [s from now]:
    half its smoothed RTT plus the time its window takes to drain the bytes
    ahead of it and the packet itself at ``cwnd / srtt``."""
    return p.srtt * (0.5 + (p.bytes_in_flight + p.mss) / p.cwnd)


class SplitThreshold(Scheduler):
    """Two paths. The split's path is the fixed split's
    (:class:`baselines.rule_based.fixed_split.FixedSplit`: path 0 while
    ``packets_sent`` of path 0 < ``share`` x (packets on both + 1)); it is
    *left* for the other path while its :func:`predicted_delivery` exceeds
    ``threshold`` times the other's (both paths probed); the chosen path
    without room is a wait. With ``reinject``, when nothing new can be sent,
    the path with room and the earlier predicted delivery re-injects the
    oldest frame in flight on the other path (:mod:`envs.scheduler`).

    ``threshold=None`` and ``reinject=False`` is the fixed split, decision
    for decision.

    Args:
        share: fraction of the packets on path 0, in [0, 1].
        threshold: >= 1, or None (infinity: never leave the split's path).
        reinject: re-inject at the tail (see above).
    """

    name = "split_threshold"
    native_rule = "split_threshold"  # decided in the compiled core (envs.rules.split_pick)

    def __init__(
        self, share: float = 0.5, threshold: float | None = None, reinject: bool = False
    ) -> None:
        self.share = check_share(share)
        self.threshold = check_threshold(threshold)
        self.reinjects = check_flag(reinject, "reinject")

    def reset(self, view: ConnectionView) -> None:
        if len(view.paths) != 2:
            raise ConfigError(
                f"split_threshold: needs exactly 2 paths, the scenario has {len(view.paths)}"
            )

    def decide(self, view: ConnectionView) -> int | Decision | None:
        p0, p1 = view.paths
        if self.reinjects and view.no_new_data:
            return tail_decision(view, p0, p1)
        sent0 = p0.packets_sent
        t, o = (p0, p1) if sent0 < self.share * (sent0 + p1.packets_sent + 1) else (p1, p0)
        if (
            self.threshold < math.inf
            and t.has_rtt_sample
            and o.has_rtt_sample
            and predicted_delivery(t) > self.threshold * predicted_delivery(o)
        ):
            t = o
        return t.index if t.has_room else None


def tail_decision(view: ConnectionView, p0, p1):
    """Tail re-injection of two paths (nothing new to send): the path with room
    and the earlier :func:`predicted_delivery` re-injects the oldest frame in
    flight alone on the other path; None (wait) when neither can."""
    order = (p0, p1) if predicted_delivery(p0) <= predicted_delivery(p1) else (p1, p0)
    for p in order:
        if p.has_room and view.reinject_source(p.index) is not None:
            return Decision(p.index, reinject=True)
    return None


__all__ = ["SplitThreshold", "check_threshold", "predicted_delivery", "tail_decision"]
