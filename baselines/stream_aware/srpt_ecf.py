"""SRPT-ECF (Jonglez, Heusse, Gaujal, FIT 2020), packet level.

The paper's rule, as :func:`baselines.stream_aware.fluid.srpt_ecf` computes it,
applied at every sending opportunity:

1. *Order.* Streams are ordered lexicographically by (priority, isolated
   remaining completion time, release time, stream id). The isolated
   remaining completion time is Eq. 5 in absolute time: ``max(now +
   C*(unsent), T_in-flight)`` with ``C*`` the ECF completion time of the
   unsent bytes alone on all paths and ``T_in-flight`` the latest expected
   arrival of the stream's packets already sent. As in the paper (Section
   IV-A) a new stream is *inserted* into the order when it is first seen
   (before the first stream whose (priority, key) exceeds its own) and the
   others keep their relative order: re-sorting by unsent bytes causes
   priority inversion (Fig. 5), and re-sorting everything by Eq. 5 makes
   the order oscillate as soon as a slow path carries a byte of a stream
   that is not the last one (see ``fluid.srpt_ecf(ordering="resort")``).
2. *Paths.* The path of rank ``j`` (sorted by delay) serves the first stream
   in that order whose cumulative unsent size (its own plus that of every
   stream ahead of it) exceeds ``TH_j``; if there is none it stays idle
   (the scheduler returns ``None``, ECF's wait) until the next ACK or release.

Path model, pacing and the in-flight records: :mod:`baselines.stream_aware.base`.
"""

from __future__ import annotations

from baselines.stream_aware.base import PathModel, StreamAwareScheduler
from envs.scheduler import ConnectionView


class SRPTECF(StreamAwareScheduler):
    """SRPT-ECF. ``rates_mbps`` + ``one_way_delays_ms``: the fluid path model
    (then paced to the ACK clock by default); without them the paths are
    measured (``cwnd/srtt``, ``srtt - min_rtt/2``)."""

    name = "srpt_ecf"

    def _reset_state(self) -> None:
        super()._reset_state()
        self.order: list[int] = []
        self._cum: list[tuple[int, int]] = []

    def key(self, now: float, model: PathModel, st) -> float:
        """Eq. 5: isolated remaining completion date of a stream [s]."""
        unsent, t = self.fluid_state(st.stream_id, now, st.remaining)
        k = now + model.completion(unsent)
        return t if t is not None and t > k else k

    def on_new_streams(self, view: ConnectionView, model, new) -> None:
        pend = {st.stream_id: st for st in view.streams_pending()}
        order = [sid for sid in self.order if sid in pend]
        now = view.now
        cur = [(self.prio(pend[sid]), self.key(now, model, pend[sid])) for sid in order]
        for st in new:
            kk = (self.prio(st), now + model.completion(st.remaining))
            pos = next((i for i, c in enumerate(cur) if c > kk), len(order))
            order.insert(pos, st.stream_id)
            cur.insert(pos, kk)
        self.order = order

    def prepare(self, view: ConnectionView, model, streams) -> None:
        pend = {st.stream_id: st.remaining for st in streams}
        if len(self.order) != len(pend) or any(sid not in pend for sid in self.order):
            self.order = [sid for sid in self.order if sid in pend]
        cum = []
        acc = 0
        for sid in self.order:
            acc += pend[sid]
            cum.append((sid, acc))
        self._cum = cum

    def select(self, view: ConnectionView, model, j, streams):
        th = model.th[j]
        for sid, cs in self._cum:
            if cs > th:
                return sid
        return None

    def probe_stream(self, view: ConnectionView, streams):
        return self.order[-1] if self.order else None


__all__ = ["SRPTECF"]
