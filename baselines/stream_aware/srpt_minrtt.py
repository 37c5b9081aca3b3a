"""SRPT-minRTT (SRPT-ECF paper, Section IV-C): smallest stream first, minRTT paths.

The stream sending next is the pending one with the fewest unsent bytes
(shortest remaining processing time), ties by release time then stream id,
after the application priority; the path is minRTT's choice. The stream
being served only shrinks, so it keeps its place until a smaller one is
released (no inversion).
"""

from __future__ import annotations

from baselines.stream_aware.fcfs_minrtt import FCFSMinRTT


class SRPTMinRTT(FCFSMinRTT):
    name = "srpt_minrtt"

    def order_key(self, st):
        return (
            st.priority if self.use_priority else 0,
            st.remaining,
            st.release_time,
            st.stream_id,
        )


__all__ = ["SRPTMinRTT"]
