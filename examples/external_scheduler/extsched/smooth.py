"""Lowest smoothed RTT with hysteresis."""

from __future__ import annotations

from envs.scheduler import Scheduler


class SmoothedRTT(Scheduler):
    """minRTT that does not flap: it keeps a *preferred* path and moves the
    preference only when another path's smoothed RTT is lower by more than
    ``hysteresis`` (a fraction: 0.2 = the other path must be over 20 %
    faster, i.e. ``srtt_other * 1.2 < srtt_preferred``). Each decision:

    1. a path with window room and no RTT sample yet is probed first;
    2. the preferred path, if it has room;
    3. else the lowest-srtt path with room (overflow, as minRTT);
    4. else wait (``None``).

    Two paths whose RTTs cross back and forth within the margin keep their
    order, so the scheduler does not split a flight between them on noise.
    Any number of paths.
    """

    name = "smooth_rtt"

    def __init__(self, hysteresis: float = 0.2) -> None:
        if (
            isinstance(hysteresis, bool)
            or not isinstance(hysteresis, int | float)
            or not hysteresis >= 0
        ):
            raise ValueError(f"hysteresis: expected a fraction >= 0, got {hysteresis!r}")
        self.hysteresis = float(hysteresis)
        self.preferred: int | None = None

    def reset(self, view) -> None:
        self.preferred = None

    def _update_preference(self, paths) -> None:
        sampled = [i for i, p in enumerate(paths) if p.has_rtt_sample]
        if not sampled:
            return
        best = min(sampled, key=lambda i: paths[i].srtt)
        cur = self.preferred
        if (
            cur is None
            or cur >= len(paths)
            or not paths[cur].has_rtt_sample
            or paths[best].srtt * (1.0 + self.hysteresis) < paths[cur].srtt
        ):
            self.preferred = best

    def decide(self, view) -> int | None:
        paths = view.paths
        for i, p in enumerate(paths):
            if p.has_room and not p.has_rtt_sample:
                return i
        self._update_preference(paths)
        if self.preferred is not None and paths[self.preferred].has_room:
            return self.preferred
        room = [i for i, p in enumerate(paths) if p.has_room]
        return min(room, key=lambda i: paths[i].srtt) if room else None
