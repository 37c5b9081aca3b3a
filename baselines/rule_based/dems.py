"""DEMS: decoupled multipath scheduling (Guo et al., ICNP 2017), for block
and stream data.

The data of one chunk (a stream: a block, an object, a file) is split
between two paths from both ends: the fast path (lowest srtt) sends it from
its start forwards, the slow path from its end backwards, each as fast as
its own congestion window lets it (decoupled), until the two meet; both
subflows then finish together, whatever their rates, without a rate
estimate. When a stream's data is all sent, the next stream (the oldest
pending one, in the connection's release order) is split the same way.

How it maps onto the scheduler hook (:mod:`envs.scheduler`):

* The current stream is the first of ``view.streams_pending()`` (the
  connection keeps them in release order).
* Front: ``Decision(fast, stream_id)``, the stream's first unsent byte.
* Back: ``Decision(slow, stream_id, gap)`` with gap = (unsent bytes of the
  stream) - payload, so the packet is the stream's last unsent chunk
  (:meth:`envs.streams.SendStream.take` skips ``gap`` bytes past the first
  unsent one). The two ends leave one contiguous unsent range between them,
  so that count is exact; when a packet or less is left, gap 0. When the
  connection's flow-control credit cannot cover the jump, the transport
  sends the first unsent byte instead (``take``'s rule), so nothing stalls.
* When several paths have room the fast one goes first; otherwise the
  lowest-srtt other path with room. No path with room: wait (``None``).
* More than two paths: the fastest sends from the front, every other path
  from the back (each takes the current last unsent chunk, so the slow
  paths share the back end in descending order).
* Paths without an RTT sample count as slow (back) paths; *f* is chosen as
  in :mod:`baselines.rule_based.common` (path 0 before any sample).
* Retransmissions go first (the transport's rule; the gap then does not
  apply). A decision of this project for the HOP comparison: no extra
  redundancy where the two ends meet (the paper's optional duplicate sending
  is left out).
"""

from __future__ import annotations

from baselines.rule_based.common import INF, fastest
from envs.scheduler import ConnectionView, Decision, Scheduler


class DEMS(Scheduler):
    name = "dems"

    def decide(self, view: ConnectionView) -> int | Decision | None:
        paths = view.paths
        f = fastest(paths)
        if f < 0:
            return None
        if paths[f].has_room:
            path, front = f, True
        else:
            path, front, best = -1, False, INF
            for i, p in enumerate(paths):
                if i != f and p.has_room and p.srtt < best:
                    path, best = i, p.srtt
            if path < 0:
                return None
        pending = view.streams_pending()
        if not pending:
            return path  # retransmissions only
        st = pending[0]
        if front:
            return Decision(path, st.stream_id)
        gap = st.remaining - view.payload
        return Decision(path, st.stream_id, gap if gap > 0 else 0)
