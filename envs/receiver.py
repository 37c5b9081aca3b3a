"""The receiving end of a connection (:mod:`envs.transport`): per-path ACK
state, in-order delivery with an observable out-of-order queue, connection
flow control as quic-go does it, and delayed ACKs (every ``ack_every``
packets, at once on a gap, else after ``max_ack_delay``). :class:`Receiver`
is a part of :class:`envs.transport.Connection` (its state lives there).
Units: seconds and bytes."""

from __future__ import annotations

import math

import numpy as np

try:  # the compiled build's directives
    import cython
except ImportError:  # pragma: no cover - the .py build installed without Cython
    from envs._cython_stub import cython  # type: ignore[assignment]

from envs.events import ACK_ARRIVAL, ACK_TIMER, DATA_ARRIVAL
from envs.sim import Handler
from envs.slab import zeroed_floats, zeroed_ints
from envs.wire import ROWS, AckWire, DataWire, moved

INF = math.inf
#: initial rows of the kept queue samples (a power of two; they double when full): one
#: sample per data packet, so a 2 MB download (about 1 550 packets) fills them without
#: growing, where the wires' 512 rows grew them twice (four column copies per episode)
OQS_ROWS = 4 * ROWS


class RecvPathState:
    __slots__ = (
        "count",
        "largest",
        "largest_recv_time",
        "return_delay",
        "ack_deadline",
        "timer_pending_at",
    )

    def __init__(self):
        self.count = 0  # packets received since the last ACK (their numbers: AckWire.add_pn)
        self.largest = -1
        self.largest_recv_time = 0.0
        self.return_delay = 0.0
        self.ack_deadline = INF  # when the delayed ACK must go [s]
        self.timer_pending_at = INF  # time of the ACK-timer event in the heap, if any


class Receiver(Handler):
    """Data arrival, reassembly, flow-control updates and ACK sending. Its events go
    to the connection's :meth:`envs.transport.Connection.handle` (:mod:`envs.events`)."""

    def _init_receiver(
        self,
        ack_every: int,
        max_ack_delay: float,
        ack_size: int,
        fc_initial_window: int,
        fc_max_window: int,
        fc_autotune: bool,
        record_oqs: bool,
        oqs_series_cap: int,
    ) -> None:
        """The receiving end's state (``Connection.__init__``, once its ``paths`` exist); sizes in bytes,
        ``max_ack_delay`` in s."""
        self.ack_every = max(1, int(ack_every))
        self.max_ack_delay = max_ack_delay
        self.ack_size = ack_size
        self._rs_sid, self._rs = -1, None  # the receive stream of the last data packet
        self.rx_paths = [RecvPathState() for _ in self.paths]
        # what is on each path's wire (envs.wire): data packets and ACK frames, oldest first
        self.data_wires = [
            DataWire(self.sim, self._hid, DATA_ARRIVAL, i) for i in range(len(self.paths))
        ]
        self.ack_wires = [
            AckWire(self.sim, self._hid, ACK_ARRIVAL, i) for i in range(len(self.paths))
        ]
        # flow control as the receiver sets it (the sender's view is Connection.max_data)
        self.fc_window = fc_initial_window
        self.fc_max_window = fc_max_window
        self.fc_autotune = fc_autotune
        self._rx_max_data = fc_initial_window  # receiver's current limit
        self._epoch_start_time = 0.0
        self._epoch_start_offset = 0
        # the out-of-order queue [bytes] and its kept samples (_record_oqs)
        self.oqs = 0
        self.record_oqs = record_oqs
        # kept samples: time [s] and queue [bytes]; the first oqs_kept rows
        self._oqs_t = zeroed_floats(OQS_ROWS)
        self._oqs_v = zeroed_ints(OQS_ROWS)
        self.oqs_kept = 0
        self.oqs_cap = max(2, int(oqs_series_cap))
        self.oqs_stride = 1
        self.oqs_seen = 0
        self._oqs_next = 1  # the next kept sample's number: a multiple of oqs_stride
        self.oqs_sum = 0.0
        self.oqs_peak = 0
        self.delivered = 0
        self.first_byte_time = -1.0  # first data byte at the client [s]; -1: none yet

    # ----------------------------------------------------------- receiver
    def _on_data_arrival(self, pidx) -> None:
        """Event: the oldest data packet on path ``pidx``'s wire (``data_wires``)
        reaches the receiver. (Event callbacks stay plain methods; their bodies
        are typed methods of the compiled core.)"""
        self._data_arrival(pidx)

    @cython.boundscheck(False)  # every index is a path's (its event's argument): in range
    @cython.wraparound(False)
    def _data_arrival(self, pidx) -> int:
        w = self.data_wires[pidx]
        r = w.arrive()
        pn = w.pn[r]
        sid = w.sid[r]
        off = w.off[r]
        length = w.length[r]
        now = self.sim.now
        if self.first_byte_time < 0.0:
            self.first_byte_time = now
        rp = self.rx_paths[pidx]
        acks = self.ack_wires[pidx]
        acks.add_pn(pn)
        rp.count += 1
        rp.return_delay = w.return_delay[r]
        immediate = pn != rp.largest + 1  # a gap: ACK at once (RFC 9000 §13.2.1)
        if pn > rp.largest:
            rp.largest = pn
            rp.largest_recv_time = now
        if sid == self._rs_sid:  # the stream of the packet before (a dict lookup saved)
            st = self._rs
        else:
            st = self.recv_streams[sid]
            self._rs_sid = sid
            self._rs = st
        nxt = st.next_offset
        if off == nxt:
            nxt += length
            if st.ooo_count:
                seg = st.ooo_pop(nxt)
                while seg >= 0:
                    self.oqs -= seg
                    nxt += seg
                    seg = st.ooo_pop(nxt)
            self.delivered += nxt - st.next_offset
            st.next_offset = nxt
            if self._rx_max_data - self.delivered <= 0.75 * self.fc_window:
                self._consume(now)
            if nxt >= st.size and st.complete_time < 0:
                st.complete_time = now
                if self.app is not None:
                    self.app.on_stream_complete(sid, now)
        elif off > nxt and st.ooo_put(off, length):
            self.oqs += length
        if self.record_oqs:
            self._record_oqs(now)
        if immediate or rp.count >= self.ack_every:
            self._send_ack(pidx, now)
        elif rp.ack_deadline == INF:
            rp.ack_deadline = now + self.max_ack_delay
            # one timer event in flight per path at most: an event that finds
            # a later deadline re-arms itself (see _on_ack_timer)
            if rp.timer_pending_at == INF:
                rp.timer_pending_at = rp.ack_deadline
                self.sim.schedule_event(rp.ack_deadline, self._hid, ACK_TIMER, pidx)
        return 0

    def _consume(self, now: float) -> None:
        """Called when a quarter of the flow-control window has been consumed
        (the client application reads delivered data at once); update the
        connection flow-control limit as quic-go does (window update when a
        quarter of the window is consumed; auto-tuning doubles the window when
        an epoch is consumed in under 4 x fraction x RTT)."""
        if self.fc_autotune:
            in_epoch = self.delivered - self._epoch_start_offset
            if in_epoch > self.fc_window / 2:
                rtt = min(p.srtt for p in self.paths)
                fraction = in_epoch / self.fc_window
                if now - self._epoch_start_time < 4.0 * fraction * rtt:
                    self.fc_window = min(2 * self.fc_window, self.fc_max_window)
                self._epoch_start_time = now
                self._epoch_start_offset = self.delivered
        self._rx_max_data = self.delivered + self.fc_window

    def _on_ack_timer(self, pidx: int) -> None:
        """Event: path ``pidx``'s delayed-ACK timer."""
        self._ack_timer(pidx)

    @cython.boundscheck(False)  # pidx is a path's index (its event's argument): in range
    @cython.wraparound(False)
    def _ack_timer(self, pidx: int) -> int:
        """:meth:`_on_ack_timer`'s body (the connection's ``handle`` calls it as a C method)."""
        rp = self.rx_paths[pidx]
        now = self.sim.now
        rp.timer_pending_at = INF
        if rp.ack_deadline <= now:
            if rp.count:
                self._send_ack(pidx, now)
        elif rp.ack_deadline < INF:
            rp.timer_pending_at = rp.ack_deadline
            self.sim.schedule_event(rp.ack_deadline, self._hid, ACK_TIMER, pidx)
        return 0

    @cython.boundscheck(False)  # every row is below oqs_kept, which the growth keeps in range
    @cython.wraparound(False)
    def _record_oqs(self, now: float) -> int:
        """One sample of the out-of-order queue [bytes] per data packet.
        Once ``oqs_cap`` samples are kept, every other one is dropped and
        only every ``oqs_stride``-th sample is kept from then on (the stride
        doubles at each thinning): a long connection keeps at most
        ``oqs_cap`` samples, evenly spread, while the count, sum and maximum
        of all samples stay exact (:func:`envs.metrics.episode_metrics`)."""
        oqs = self.oqs
        self.oqs_seen += 1
        self.oqs_sum += oqs
        if oqs > self.oqs_peak:
            self.oqs_peak = oqs
        if self.oqs_seen == self._oqs_next:  # (a test, not a division per packet)
            n = self.oqs_kept
            if n == len(self._oqs_v):
                self._oqs_t = moved(self._oqs_t, "d", 0, n, 0)
                self._oqs_v = moved(self._oqs_v, "q", 0, n, 0)
            self._oqs_t[n] = now
            self._oqs_v[n] = oqs
            n += 1
            if n >= self.oqs_cap:
                # kept: samples number stride, 2 stride, ...; keep the even multiples (rows 1, 3, ...)
                k = 0
                for j in range(1, n, 2):
                    self._oqs_t[k] = self._oqs_t[j]
                    self._oqs_v[k] = self._oqs_v[j]
                    k += 1
                n = k
                self.oqs_stride *= 2
                # the next multiple of the new stride (this sample may have been dropped)
                self._oqs_next = (self.oqs_seen // self.oqs_stride + 1) * self.oqs_stride
            else:
                self._oqs_next += self.oqs_stride
            self.oqs_kept = n
        return 0

    def oqs_series(self) -> tuple:
        """The kept OQS samples (:meth:`_record_oqs`) as NumPy arrays: times [s] (float64)
        and queue sizes [bytes] (int64), copies."""
        n = self.oqs_kept
        return (
            np.array(self._oqs_t[:n], dtype=np.float64),
            np.array(self._oqs_v[:n], dtype=np.int64),
        )

    @property
    def oqs_t(self) -> list:
        """Times [s] of the kept OQS samples (a list; :meth:`oqs_series` gives arrays)."""
        return self.oqs_series()[0].tolist()

    @property
    def oqs_v(self) -> list:
        """Out-of-order queue [bytes] of the kept samples (a list; :meth:`oqs_series` gives arrays)."""
        return self.oqs_series()[1].tolist()

    @cython.boundscheck(False)  # pidx is a path's index: in range
    @cython.wraparound(False)
    def _send_ack(self, pidx: int, now: float) -> int:
        rp = self.rx_paths[pidx]
        ps = self.paths[pidx]
        arrival = ps.path.ack_arrival(now, rp.return_delay, self.ack_size)
        acks = self.ack_wires[pidx]
        acks.push(
            rp.largest,
            now - rp.largest_recv_time,
            self._rx_max_data,
            self.oqs,
            rp.count,
            arrival,
            self.sim.reserve(),
        )
        acks.queue_first()
        rp.count = 0
        rp.ack_deadline = INF
        return 0


__all__ = ["Receiver", "RecvPathState"]
