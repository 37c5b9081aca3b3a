"""SA-ECF (Rabitsch, Hurtig, Brunstrom, EPIQ 2018) as the SRPT-ECF paper runs it.

The paper's setting: weighted round robin across streams (150-byte
quantum, equal weights) with ECF applied to the aggregate unsent bytes.

* **Streams**: deficit round robin, byte-exact. Each visit adds ``quantum x
  weight`` bytes of credit to a stream; a stream sends a packet when its
  credit covers the packet (a full payload or what is left of the stream),
  so a quantum smaller than a packet still shares bytes fairly. Released
  streams join the tail of the round. With ``use_priority`` the round runs
  over the most urgent priority class present only (strict priority across
  classes, round robin within one).
* **Paths**: ``ecf: threshold`` (default) uses the same idealised ECF as
  SRPT-ECF on the *aggregate* unsent bytes: the path of rank ``j`` is used
  iff they exceed ``TH_j`` (so the comparison with SRPT-ECF isolates the
  stream ordering, as in the paper's simulator); ``ecf: lim`` uses the ECF
  inequality of Lim et al. (:class:`baselines.rule_based.ecf.ECF`), whose
  ``k`` is the aggregate unsent bytes too.

The fluid counterpart is :func:`baselines.stream_aware.fluid.sa_ecf`.
"""

from __future__ import annotations

import math

from baselines.rule_based.ecf import ECF
from baselines.stream_aware.base import StreamAwareScheduler
from envs.scheduler import ConnectionView, Decision


class DeficitRoundRobin:
    """Byte-exact deficit round robin over stream ids (one priority class)."""

    def __init__(self, quantum: float):
        self.quantum = float(quantum)
        self.ring: list[int] = []
        self.ptr = 0
        self.credited = False  # the stream at ptr got its credit for this visit
        self.deficit: dict[int, float] = {}

    def add(self, sid: int) -> None:
        """Join the tail of the round (just before the stream whose turn it is)."""
        if not self.ring:
            self.ring = [sid]
            self.ptr = 0
            self.credited = False
        else:
            self.ring.insert(self.ptr, sid)
            self.ptr += 1
        self.deficit[sid] = 0.0

    def sync(self, pending: dict) -> None:
        """Drop streams with nothing left to send."""
        if all(sid in pending for sid in self.ring):
            return
        n = len(self.ring)
        cur = self.ring[self.ptr] if n else None
        nxt = None
        for i in range(n):  # the first surviving stream from the pointer on
            sid = self.ring[(self.ptr + i) % n]
            if sid in pending:
                nxt = sid
                break
        self.ring = [sid for sid in self.ring if sid in pending]
        for sid in list(self.deficit):
            if sid not in pending:
                del self.deficit[sid]
        if nxt is None:
            self.ptr, self.credited = 0, False
            return
        self.ptr = self.ring.index(nxt)
        if nxt != cur:
            self.credited = False

    def pick(self, sizes: dict, weights: dict) -> int:
        """The stream that sends the next packet; ``sizes[sid]``: its next packet's payload."""
        ring, n = self.ring, len(self.ring)
        best = None
        for i in range(n):
            sid = ring[(self.ptr + i) % n]
            q = self.quantum * weights.get(sid, 1.0)
            need = max(0, math.ceil((sizes[sid] - self.deficit[sid]) / q - 1e-9))
            rounds = need if (i == 0 and self.credited) else max(need, 1) - 1
            if best is None or (rounds, i) < best:
                best = (rounds, i)
        rounds, w = best
        for i in range(n):
            sid = ring[(self.ptr + i) % n]
            visits = rounds if (i == 0 and self.credited) else rounds + (1 if i <= w else 0)
            self.deficit[sid] += visits * self.quantum * weights.get(sid, 1.0)
        self.ptr = (self.ptr + w) % n
        self.credited = True
        sid = ring[self.ptr]
        self.deficit[sid] -= sizes[sid]
        return sid


class SAECF(StreamAwareScheduler):
    """SA-ECF: DRR across streams (``quantum_bytes``, stream weights) + ECF on
    the aggregate unsent bytes (``ecf``: ``threshold`` or ``lim``)."""

    name = "sa_ecf"

    def __init__(
        self, quantum_bytes: float = 150, ecf: str = "threshold", beta: float = 0.25, **kwargs
    ) -> None:
        if ecf not in ("threshold", "lim"):
            raise ValueError(f"ecf: threshold or lim, not {ecf!r}")
        if float(quantum_bytes) <= 0:
            raise ValueError("quantum_bytes must be positive")
        self.quantum = float(quantum_bytes)
        self.ecf = ecf
        self._lim = ECF(beta=beta) if ecf == "lim" else None
        super().__init__(**kwargs)

    def _reset_state(self) -> None:
        super()._reset_state()
        self.classes: dict[int, DeficitRoundRobin] = {}
        self._aggregate = 0

    def reset(self, view: ConnectionView) -> None:
        super().reset(view)
        if self._lim is not None:
            self._lim.reset(view)

    def on_new_streams(self, view: ConnectionView, model, new) -> None:
        for st in new:
            p = self.prio(st)
            if p not in self.classes:
                self.classes[p] = DeficitRoundRobin(self.quantum)
            self.classes[p].add(st.stream_id)

    def prepare(self, view: ConnectionView, model, streams) -> None:
        self._aggregate = sum(st.remaining for st in streams)

    def next_stream(self, view: ConnectionView, streams):
        pend = {st.stream_id: st for st in streams}
        for p in sorted(self.classes):
            drr = self.classes[p]
            drr.sync(pend)
            if drr.ring:
                credit = view.send_window
                sizes = {
                    sid: max(1, min(view.payload, pend[sid].remaining, credit)) for sid in drr.ring
                }
                weights = {sid: pend[sid].weight for sid in drr.ring}
                return drr.pick(sizes, weights)
        return None

    def select(self, view: ConnectionView, model, j, streams):
        if self._aggregate > model.th[j]:
            return self.next_stream(view, streams)
        return None

    def probe_stream(self, view: ConnectionView, streams):
        return self.next_stream(view, streams)

    def decide(self, view: ConnectionView) -> int | Decision | None:
        if self._lim is None:
            return super().decide(view)
        streams = view.streams_pending()
        new = [st for st in streams if st.stream_id not in self.seen]
        if new:
            new.sort(key=lambda st: (st.release_time, st.stream_id))
            for st in new:
                self.seen.add(st.stream_id)
            self.on_new_streams(view, None, new)
        d = self._lim.decide(view)
        if d is None or view.retransmit_bytes > 0 or not streams:
            return d
        sid = self.next_stream(view, streams)
        return d if sid is None else Decision(d, stream_id=sid)


__all__ = ["SAECF", "DeficitRoundRobin"]
