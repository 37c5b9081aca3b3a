"""The sender's loss recovery of a connection (:mod:`envs.transport`), after
RFC 9002: ACK frames processed (newly acknowledged bytes, RTT samples, the
congestion controller's ACK), packets declared lost by the packet and time
thresholds (their frames queued for retransmission on any path), and the
loss-detection timer armed. :class:`Recovery` is the part of
:class:`envs.transport.Connection` that does this; its state lives there.
Units: seconds and bytes.
"""

from __future__ import annotations

import math

try:  # the compiled build's directives
    import cython
except ImportError:  # pragma: no cover - the .py build installed without Cython
    from envs._cython_stub import cython  # type: ignore[assignment]

from envs.events import LOSS_TIMER
from envs.path_sender import K_GRANULARITY, PathSender
from envs.receiver import Receiver
from envs.sent import live_frames

K_PACKET_THRESHOLD = 3  # RFC 9002 kPacketThreshold
K_TIME_THRESHOLD = 9.0 / 8.0  # RFC 9002 kTimeThreshold
ACKED_PRUNE_MIN = 65536  # acked frames remembered before the first prune (Recovery._prune_acked)
INF = math.inf


class Recovery(Receiver):
    """ACK processing, loss detection and the loss-detection timer (module docstring)."""

    def try_send(self) -> int:
        """Send what the scheduler decides (:meth:`envs.transport.Connection.try_send`)."""
        raise NotImplementedError

    # ----------------------------------------------------------- timers
    def _arm(self, ps: PathSender, deadline: float) -> int:
        ps.timer_deadline = deadline
        if deadline < ps.timer_pending_at:
            ps.timer_pending_at = deadline
            self.sim.schedule_event(deadline, self._hid, LOSS_TIMER, ps.index)
        return 0

    def _set_loss_detection_timer(self, ps: PathSender) -> int:
        if ps.loss_time < INF:
            self._arm(ps, ps.loss_time)
        elif ps.bytes_in_flight > 0:
            self._arm(ps, ps.time_of_last_ack_eliciting + ps.pto_period() * (1 << ps.pto_count))
        else:
            ps.timer_deadline = INF
        return 0

    # ----------------------------------------------------------- ACK processing
    def _on_ack(self, pidx) -> None:
        """Event: the oldest ACK frame on path ``pidx``'s wire reaches the sender."""
        self._ack_frame(pidx)

    @cython.boundscheck(False)  # pidx: a path (its event's argument); rows masked: in range
    @cython.wraparound(False)
    def _ack_frame(self, pidx) -> int:
        """Process the oldest ACK frame of path ``pidx`` (:class:`envs.wire.AckWire`)."""
        acks = self.ack_wires[pidx]
        r = acks.arrive()
        npn = acks.npn[r]
        if self.finished:
            acks.skip_pns(npn)
            return 0
        largest = acks.largest[r]
        ack_delay = acks.ack_delay[r]
        max_data = acks.max_data[r]
        self.peer_oqs = acks.oqs[r]
        now = self.sim.now
        ps = self.paths[pidx]
        ps.ack_delay = ack_delay if ack_delay < ps.max_ack_delay else ps.max_ack_delay
        sent = ps.sent
        acked_bytes = 0
        n_acked = 0
        largest_sent_time = -1.0
        last_sent_time = 0.0
        feedback = self.feedback
        for _k in range(npn):
            pn = acks.pop_pn()
            copies = sent.take(pn)
            if copies == 0:
                continue  # not in flight (acknowledged or declared lost)
            i = pn & sent.mask
            t_sent = sent.t_sent[i]
            size = sent.size[i]
            length = sent.length[i]
            if copies == 1:
                self.bytes_acked += length  # its frame's only copy: acknowledged once
            else:
                key = (sent.sid[i], sent.off[i])
                if key not in self.acked_frames:
                    self.acked_frames.add(key)
                    self.bytes_acked += length
            acked_bytes += size
            n_acked += 1
            ps.payload_bytes_acked += length
            if t_sent > last_sent_time:
                last_sent_time = t_sent
            if pn == largest:
                largest_sent_time = t_sent
            if feedback:
                self.scheduler.on_packet_acked(self, pidx, size, t_sent)
        if len(self.acked_frames) > self._prune_at:
            self._prune_acked()
        if max_data > self.max_data:
            self.max_data = max_data
        if largest > ps.largest_acked:
            ps.largest_acked = largest
        if acked_bytes:
            ps.bytes_in_flight -= acked_bytes
            ps.packets_acked += n_acked
            if largest_sent_time >= 0.0:
                ps.update_rtt(now - largest_sent_time, ack_delay)
            ps.pto_count = 0
            ps.cc.on_ack(now, acked_bytes, last_sent_time, ps)
            self._detect_lost(ps, now)
            self._set_loss_detection_timer(ps)
        self.try_send()
        return 0

    def _prune_acked(self) -> None:
        """Forget the acknowledged frames nothing can ask about (:func:`envs.sent.live_frames`);
        runs when the set has doubled since the last prune."""
        self.acked_frames &= live_frames(self.paths, self.retx)
        n = 2 * len(self.acked_frames)
        self._prune_at = n if n > ACKED_PRUNE_MIN else ACKED_PRUNE_MIN

    def _detect_lost(self, ps: PathSender, now: float) -> int:
        """RFC 9002 §6.1: packet and time thresholds. Both are monotone in the packet number, so lost
        packets form a prefix of the in-flight ones and the scan stops at the first survivor."""
        ps.loss_time = INF
        largest = ps.largest_acked
        if largest < 0:
            return 0
        rtt = ps.latest_rtt if ps.latest_rtt > ps.srtt else ps.srtt
        loss_delay = K_TIME_THRESHOLD * rtt
        if loss_delay < K_GRANULARITY:
            loss_delay = K_GRANULARITY
        sent = ps.sent
        first = sent.lo
        pn = sent.survivor(
            largest, now, loss_delay, K_PACKET_THRESHOLD
        )  # lost: those in flight before pn
        if pn <= largest and sent.has(pn):
            # the same float expression as SentPackets.survivor's, so a timer set
            # for loss_time always finds the packet lost when it fires
            ps.loss_time = sent.t_sent[pn & sent.mask] + loss_delay
        cc = ps.cc
        feedback = self.feedback
        for lost in range(first, pn):
            copies = sent.take(lost)
            if copies == 0:
                continue
            i = lost & sent.mask
            t_sent = sent.t_sent[i]
            size = sent.size[i]
            sid = sent.sid[i]
            off = sent.off[i]
            length = sent.length[i]
            ps.bytes_in_flight -= size
            ps.packets_lost += 1
            if copies == 1 or (sid, off) not in self.acked_frames:
                self.retx.append((sid, off, length))
                self.retx_frames += 1
                self.retransmit_bytes += length
            cc.on_loss(now, size, t_sent)
            if feedback:
                self.scheduler.on_packet_lost(self, ps.index, size, t_sent)
        return 0


def send_window_of(c: Recovery) -> int:
    """Connection ``c``'s flow-control credit left at the sender [bytes]
    (:attr:`envs.transport.Connection.send_window`; a C function for the
    completion MDP, ``envs/mdp.py``)."""
    w = c.max_data - c.fc_consumed
    return w if w > 0 else 0


def pending_bytes_of(c: Recovery) -> int:
    """Connection ``c``'s data released and not yet sent, retransmissions
    included [bytes] (:attr:`envs.transport.Connection.pending_bytes`)."""
    return c._pending_new + c.retransmit_bytes


__all__ = [
    "Recovery",
    "K_PACKET_THRESHOLD",
    "K_TIME_THRESHOLD",
    "ACKED_PRUNE_MIN",
    "pending_bytes_of",
    "send_window_of",
]
