"""Round robin: cycle over the paths that have congestion-window room."""

from __future__ import annotations

from envs.scheduler import ConnectionView, Decision, Scheduler


class RoundRobin(Scheduler):
    """Send each packet on the next path (cyclically, after the last one
    used) that has room; wait when none has. Works for any number of paths."""

    name = "rr"
    #: decide() is envs.rules.round_robin_pick from ``_next``: the compiled core takes it
    native_rule = "rr"

    def __init__(self) -> None:
        self._next = 0

    def reset(self, view: ConnectionView) -> None:
        self._next = 0

    def decide(self, view: ConnectionView) -> int | Decision | None:
        paths = view.paths
        n = len(paths)
        i = self._next
        for _ in range(n):
            if i >= n:
                i = 0
            if paths[i].has_room:
                self._next = i + 1
                return i
            i += 1
        return None
