"""Weighted split by estimated rate."""

from __future__ import annotations

from envs.scheduler import Scheduler


class RateSplit(Scheduler):
    """Packets go to the paths in proportion to their estimated rates.

    A path's rate estimate is its congestion window over its smoothed RTT
    (``cwnd / srtt`` [bytes/s]: what a window-limited path delivers); its
    weight is that rate to the power ``exponent`` (0: round robin, 1:
    proportional to rate, larger: the fast path gets more than its share).
    Among the paths with window room the choice is smooth weighted round
    robin: each path with room gains its weight in credit, the one with the
    most credit is chosen and pays the weights' sum. So over any stretch in
    which the same paths have room, path *i* carries a share
    ``w_i / sum(w)`` of the packets, spread evenly rather than in bursts.
    Waits (``None``) when no path has room. Any number of paths.
    """

    name = "rate_split"

    def __init__(self, exponent: float = 1.0) -> None:
        if isinstance(exponent, bool) or not isinstance(exponent, int | float) or not exponent >= 0:
            raise ValueError(f"exponent: expected a number >= 0, got {exponent!r}")
        self.exponent = float(exponent)
        self.credit: list[float] = []

    def reset(self, view) -> None:
        self.credit = [0.0] * len(view.paths)

    def weight(self, path) -> float:
        """``(cwnd / srtt) ** exponent`` of one path (``cwnd`` [bytes], ``srtt`` [s])."""
        return (path.cwnd / path.srtt) ** self.exponent

    def decide(self, view) -> int | None:
        paths = view.paths
        if len(self.credit) != len(paths):
            self.credit = [0.0] * len(paths)
        room = [i for i, p in enumerate(paths) if p.has_room]
        if not room:
            return None
        total = 0.0
        for i in room:
            w = self.weight(paths[i])
            self.credit[i] += w
            total += w
        best = max(room, key=lambda i: self.credit[i])
        self.credit[best] -= total
        return best
