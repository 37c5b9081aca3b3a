"""FCFS-minRTT (SRPT-ECF paper, Section IV-C): streams in arrival order, minRTT paths.

The stream sending next is the first pending one by (priority, release
time, stream id); the path is minRTT's choice
(:func:`baselines.rule_based.common.minrtt_choice`: an unprobed path with
room first, else the lowest-srtt path with room; it never waits while a
path has room).
"""

from __future__ import annotations

from baselines.rule_based.common import minrtt_choice
from envs.scheduler import ConnectionView, Decision, Scheduler


class FCFSMinRTT(Scheduler):
    name = "fcfs_minrtt"

    def __init__(self, use_priority: bool = True) -> None:
        self.use_priority = bool(use_priority)

    def order_key(self, st):
        return (st.priority if self.use_priority else 0, st.release_time, st.stream_id)

    def decide(self, view: ConnectionView) -> int | Decision | None:
        path = minrtt_choice(view.paths)
        if path is None:
            return None
        streams = view.streams_pending()
        if not streams or view.retransmit_bytes > 0:
            return path
        st = min(streams, key=self.order_key)
        return Decision(path, stream_id=st.stream_id)


__all__ = ["FCFSMinRTT"]
