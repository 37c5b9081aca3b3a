"""An MPQUIC-like connection: streams, per-path packet-number spaces, RFC 9002
RTT estimation and loss detection, retransmission on any path, connection flow
control, receiver reassembly with an observable out-of-order queue, ACKs.

Units: seconds and bytes. One data packet carries one STREAM frame of at most
``payload`` bytes; its size on the wire is the frame length plus
``header_bytes``. ACKs travel on the return direction of the path the data
came on, are never lost (ACK loss is not modelled) and report the receiver's
out-of-order queue (``peer_oqs``: GAPS's feedback).

Simplifications against a real QUIC stack, each documented where it lives: no
persistent-congestion collapse, one frame per packet, the receiver's flow-control
auto-tuning uses the sender's smallest smoothed RTT. Paths are paced
(:mod:`envs.path_sender`) unless ``pacing`` is off. Packets in flight: :mod:`envs.sent`;
on the wire: :mod:`envs.wire`.
"""

from __future__ import annotations

import math
from collections import deque

from envs.path_sender import K_GRANULARITY, PathSender, pace_wake_time
from envs.receiver import Receiver
from envs.rules import native_decision, rule_code
from envs.scheduler import Scheduler
from envs.sent import live_frames
from envs.setup import SETUP_NONE
from envs.streams import RecvStream, SendStream, any_holes, wrr_pick

K_PACKET_THRESHOLD = 3          # RFC 9002 kPacketThreshold
K_TIME_THRESHOLD = 9.0 / 8.0    # RFC 9002 kTimeThreshold
REASK_DELAY = 0.001             # s; see Connection._maybe_reask
ACKED_PRUNE_MIN = 65536         # acked frames remembered before the first prune (Connection._prune_acked)
OQS_SERIES_CAP = 2**18          # OQS samples kept (Receiver._record_oqs); an episode sends far fewer packets
INF = math.inf


class Connection(Receiver):
    """One multipath connection between a server (sender) and a client.

    ``app`` drives it: ``open_stream`` releases data, ``on_stream_complete``
    is called back when a stream is fully delivered in order to the client.
    """

    def __init__(self, sim, paths, ccs, scheduler: Scheduler, *, packet_size=1350,
                 header_bytes=60, ack_every=2, max_ack_delay=0.025, ack_size=50,
                 fc_initial_window=786432, fc_max_window=15728640, fc_autotune=True,
                 record_oqs=True, oqs_series_cap=OQS_SERIES_CAP, setup=None, pacing=None, name="conn"):
        self.sim = sim
        self.name = name
        self.scheduler = scheduler
        self.native_rule = rule_code(scheduler)   # envs.rules: decisions without a Python call
        # the per-packet events' callbacks, bound once (binding a method allocates)
        self._data_event, self._ack_event = self._on_data_arrival, self._on_ack
        self.mss = packet_size
        self.payload = packet_size - header_bytes
        if self.payload <= 0:
            raise ValueError("packet_size must exceed header_bytes")
        self.header_bytes = header_bytes
        self.paths = [PathSender(i, p, cc, packet_size, self.payload, max_ack_delay, sim, pacing)
                      for i, (p, cc) in enumerate(zip(paths, ccs))]
        self.paced, self._pace_wake_at = self.paths[0].pace_gain > 0.0, INF   # pacer on; its next wake-up [s]
        # streams
        self.send_streams: dict[int, SendStream] = {}
        self.active: list[SendStream] = []       # released, with unsent data
        self.recv_streams: dict[int, RecvStream] = {}
        self.retx: deque = deque()                # (stream_id, offset, length) to resend
        self.retransmit_bytes = 0
        #: (stream, offset) of the acknowledged frames that had several copies (pruned): only
        #: those can be acknowledged twice or acknowledged and lost (envs.sent: shared records)
        self.acked_frames: set = set()
        self._prune_at = ACKED_PRUNE_MIN
        self.fc_consumed = 0                      # sum of streams' highest offsets sent (flow control)
        self.bytes_acked = 0
        self._pending_new = 0                     # released, not yet sent
        self._blocked: tuple | None = None        # decision committed to a path without room
        self._reask_pending = False
        self.max_data = fc_initial_window         # receiver's limit as known to the sender
        self.peer_oqs = 0                         # the receiver's OQS as the latest ACK reported it [bytes]
        self._init_receiver(ack_every, max_ack_delay, ack_size, fc_initial_window, fc_max_window, fc_autotune,
                            record_oqs, oqs_series_cap)
        self.app = None
        self.feedback = scheduler.wants_packet_feedback
        #: re-injection (envs.scheduler): asked also when nothing new can be sent
        self.reinjects = bool(getattr(scheduler, "reinjects", False))
        self.reinjected_bytes = 0                 # payload bytes of re-injected copies
        self.reinjected_packets = 0
        #: per path, the packet number below which no frame is a single copy in flight
        #: (only re-injection and loss change that, so the candidate search resumes there)
        self._reinject_from = [0] * len(self.paths)
        self._penalised_at = [-INF] * len(self.paths)   # last penalise() of each path [s]
        self.start_time = sim.now
        self.finished = False
        #: the connection setup (envs.setup; a normalised ``setup:`` block); None: none
        self.setup = dict(SETUP_NONE) if setup is None else dict(setup)

    def close(self) -> None:
        """Drop what ties a finished connection into reference cycles (its
        application and scheduler, which may hold it, and its bound event
        callbacks), so that reference counting frees it (``envs.scenario.Emulation.close``)."""
        self.app = self.scheduler = None
        self._data_event = self._ack_event = None

    # ----------------------------------------------------------- views
    @property
    def now(self) -> float:
        return self.sim.now

    @property
    def send_window(self) -> int:
        """Connection flow-control credit left at the sender [bytes]."""
        w = self.max_data - self.fc_consumed
        return w if w > 0 else 0

    @property
    def pending_bytes(self) -> int:
        return self._pending_new + self.retransmit_bytes

    def streams_pending(self) -> list[SendStream]:
        return self.active

    @property
    def no_new_data(self) -> bool:
        """Nothing new can be sent now: all data sent and no retransmission
        queued, or new data waiting for flow-control credit."""
        return not self._has_data()

    @property
    def flow_blocked(self) -> bool:
        """New data waits for connection flow-control credit (no hole to fill)."""
        return self._pending_new > 0 and self.max_data <= self.fc_consumed and not any_holes(self.active)

    # ----------------------------------------------------------- re-injection (envs.scheduler)
    def _reinject_candidate(self, path: int):
        """``(source path, packet number)`` of the frame a re-injection on ``path`` would
        copy: the earliest sent of the frames in flight as their only copy on the other
        paths (ties: the lower path index); None if there is none."""
        best = None
        best_t = INF
        cursor = self._reinject_from
        for q in self.paths:
            i = q.index
            if i == path:
                continue
            pn = q.sent.first_single(cursor[i])
            if pn < 0:
                cursor[i] = q.sent.hi
                continue
            cursor[i] = pn
            t = q.sent[pn][0]
            if t < best_t:
                best_t = t
                best = (i, pn)
        return best

    def reinject_source(self, path: int):
        """The path whose frame a re-injection on ``path`` would copy; None if none."""
        c = self._reinject_candidate(path)
        return None if c is None else c[0]

    def reinject_sent_time(self, path: int):
        """When the frame a re-injection on ``path`` would copy was sent [s]; None if none."""
        c = self._reinject_candidate(path)
        return None if c is None else self.paths[c[0]].sent[c[1]][0]

    def _may_reinject(self) -> bool:
        """Some open path could carry a copy of a frame in flight on another path."""
        for p in self.paths:
            if p.is_open and self._reinject_candidate(p.index) is not None:
                return True
        return False

    def _reinject_on(self, ps: PathSender) -> bool:
        """Send on ``ps`` a copy of the frame :meth:`_reinject_candidate` names; False if none."""
        c = self._reinject_candidate(ps.index)
        if c is None:
            return False
        sent = self.paths[c[0]].sent
        _t, _size, sid, off, length = sent[c[1]]
        sent.mark_shared(c[1])          # two copies of its frame now (envs.sent)
        self.reinjected_bytes += length
        self.reinjected_packets += 1
        self._transmit(ps, sid, off, length, True)
        return True

    def penalise(self, path: int) -> bool:
        """Linux MPTCP's penalisation of ``path`` (``mptcp_rcv_buf_optimization``):
        halve its congestion window (:meth:`envs.cc.base.CongestionController.penalise`),
        at most once per its smoothed RTT; returns whether it did."""
        ps = self.paths[path]
        now = self.sim.now
        if now - self._penalised_at[path] < ps.srtt:
            return False
        self._penalised_at[path] = now
        ps.cc.penalise()
        return True

    # ----------------------------------------------------------- app API
    def wake_at(self, time: float) -> None:
        """Ask the scheduler again at emulated ``time`` [s], e.g. after a wait
        that only makes sense until a known date (a scheduler hook)."""
        self.sim.schedule(max(time, self.sim.now), self._reask_at, None)

    def _reask_at(self, _arg) -> None:
        if not self.finished:
            self.try_send()

    def _on_path_open(self, index) -> None:
        """Event: path ``index`` is validated and may carry data (envs.setup.establish)."""
        self.paths[index].is_open = True
        self.try_send()

    def open_stream(self, stream_id: int, size: int, weight: float = 1.0, priority: int = 0,
                    send: bool = True) -> None:
        """Release ``size`` bytes on a new stream now (the server has them).
        ``send=False`` defers the scheduling decision, so that an app opening
        several streams at one instant lets the scheduler see all of them."""
        if size <= 0:
            raise ValueError(f"stream {stream_id}: size must be positive")
        st = SendStream(stream_id, size, weight, priority, self.sim.now)
        self.send_streams[stream_id] = st
        self.recv_streams[stream_id] = RecvStream(size)
        self.active.append(st)
        self._pending_new += size
        if send:
            self.try_send()

    # ----------------------------------------------------------- sending
    def _has_data(self) -> bool:
        if self.retx:
            return True
        return self._pending_new > 0 and (self.max_data > self.fc_consumed or any_holes(self.active))

    def try_send(self) -> None:
        """Ask the scheduler for decisions while there is data and a path to take it."""
        paths = self.paths
        decide = self.scheduler.decide
        now = self.sim.now
        while True:
            blocked = self._blocked
            if blocked is not None:
                ps = paths[blocked[0]]
                if not ps.may_send(now):
                    self._arm_pace_wake(now)
                    return
                self._blocked = None
                if not self._has_data():
                    return
                self._send_on(ps, blocked[1], blocked[2])
                continue
            tail = False      # nothing new to send: only a re-injection may go
            if not self.retx and (self._pending_new <= 0 or
                                  (self.max_data <= self.fc_consumed and not any_holes(self.active))):
                if not self.reinjects or not self._may_reinject():
                    return
                tail = True
            for p in paths:   # a packet can be sent only if some path has room
                if p.may_send(now):
                    break
            else:
                self._arm_pace_wake(now)
                return
            rule = self.native_rule
            if rule == 0:
                d = decide(self)
            else:
                d = native_decision(rule, paths, self.scheduler, self, now)
            if d is None:
                self._maybe_reask()
                if not self.sim.stopped:   # else an outside agent decides and calls again (envs.gym_env)
                    self._arm_pace_wake(now)
                return
            if type(d) is int:
                if tail:
                    return
                ps = paths[d]
                sid = None
                gap = 0
            else:
                ps = paths[d.path]
                sid = d.stream_id
                gap = d.gap
                if d.reinject:
                    if not ps.may_send(now):    # a copy goes only on a path with room: a wait
                        self._arm_pace_wake(now)
                        return
                    if self._reinject_on(ps):
                        continue
                    if tail:
                        return
                elif tail:
                    return
            if not ps.may_send(now):
                self._blocked = (ps.index, sid, gap)
                self._arm_pace_wake(now)
                return
            active = self.active
            if sid is None and not gap and not self.retx and len(active) == 1 \
                    and active[0].unsent[0][0] == active[0].sent_offset:
                # the common case, inlined: new in-order data of the only
                # stream, no holes, so every byte costs flow-control credit
                # (credit > 0 here: checked above)
                st = active[0]
                iv = st.unsent[0]
                credit = self.max_data - self.fc_consumed
                length = iv[1] - iv[0]
                if self.payload < length:
                    length = self.payload
                if credit < length:
                    length = credit
                off = iv[0]
                iv[0] = off + length
                if iv[0] >= iv[1]:
                    st.unsent.pop(0)
                st.unsent_bytes -= length
                st.sent_offset = iv[0] if iv[0] > st.sent_offset else st.sent_offset
                if st.unsent_bytes <= 0:
                    active.pop()
                self._pending_new -= length
                self.fc_consumed += length
                self._transmit(ps, st.stream_id, off, length, False)
            else:
                self._send_on(ps, sid, gap)

    def _next_frame(self, stream_id, gap):
        """Pick the data of the next packet: retransmissions first, then new data."""
        retx = self.retx
        while retx:
            sid, off, length = retx.popleft()
            self.retransmit_bytes -= length
            if (sid, off) not in self.acked_frames:
                return sid, off, length, True
        active = self.active
        if not active:
            return None
        credit = self.max_data - self.fc_consumed
        if stream_id is not None:
            st = self.send_streams.get(stream_id)
            if st is None or st.unsent_bytes <= 0:
                st = wrr_pick(self.active)
        elif len(active) == 1:
            st = active[0]
        else:
            st = wrr_pick(self.active)
        if credit <= 0 and st.hole_bytes <= 0:
            # no credit: only holes below a stream's highest offset can go
            st = next((x for x in active if x.hole_bytes > 0), None)
            if st is None:
                return None
            gap = 0
        off, length, used = st.take(self.payload, gap, credit if credit > 0 else 0)
        if length <= 0:
            return None
        if st.unsent_bytes <= 0:
            active.remove(st)
        self._pending_new -= length
        self.fc_consumed += used
        return st.stream_id, off, length, False

    def _maybe_reask(self) -> None:
        """A scheduler that waits while nothing is in flight would never be asked
        again (no ACK or loss will come): ask again after ``REASK_DELAY`` [s]."""
        if self._reask_pending or self.finished or not self.scheduler.reask_when_idle:
            return
        for p in self.paths:
            if p.bytes_in_flight > 0:
                return
        self._reask_pending = True
        self.sim.schedule(self.sim.now + REASK_DELAY, self._reask, None)

    def _reask(self, _arg) -> None:
        self._reask_pending = False
        if not self.finished:
            self.try_send()

    def _arm_pace_wake(self, now: float) -> None:
        """Ask again when the first path held back only by its pacer may send."""
        if not self.paced:
            return
        t = pace_wake_time(self.paths, now)
        if t < self._pace_wake_at:
            self._pace_wake_at = t
            self.sim.schedule(t, self._on_pace_wake, None)

    def _on_pace_wake(self, _arg) -> None:
        if self.sim.now == self._pace_wake_at:   # else superseded by an earlier one
            self._pace_wake_at = INF
            self._reask_at(None)

    def _send_on(self, ps: PathSender, stream_id, gap) -> bool:
        """Send the next frame (:meth:`_next_frame`) on ``ps``; False if there is none."""
        frame = self._next_frame(stream_id, gap)
        if frame is None:
            return False
        sid, off, length, is_retx = frame
        if is_retx:
            ps.retransmissions += 1
        self._transmit(ps, sid, off, length, is_retx)
        return True

    def _transmit(self, ps: PathSender, sid, off, length, shared) -> None:
        """Send a packet of frame (``sid``, ``off``, ``length`` [bytes]) on ``ps``; ``shared``:
        the frame has had another copy (a retransmission: envs.sent)."""
        now = self.sim.now
        size = length + self.header_bytes
        pn = ps.next_pn
        ps.next_pn = pn + 1
        ps.sent.add(pn, now, size, sid, off, length, shared)
        ps.bytes_in_flight += size
        ps.packets_sent += 1
        ps.bytes_sent += size
        ps.time_of_last_ack_eliciting = now
        if self.paced:
            ps.pace_sent(now, size)
        if ps.cc_on_sent is not None:
            ps.cc_on_sent(now, size)
        path = ps.path
        arrival = path.send(now, size)
        sim = self.sim
        if arrival >= 0.0:   # else dropped or lost
            wire = self.data_wires[ps.index]
            wire.push(pn, sid, off, length, path.last_return_delay, arrival, sim.reserve())
            wire.queue_first(sim, self._data_event, ps.index)
        # the PTO deadline moves with every send; a timer event is queued only if none is (_arm)
        if ps.loss_time == INF:
            deadline = now + ps.pto_base * (1 << ps.pto_count)
            ps.timer_deadline = deadline
            if deadline < ps.timer_pending_at:
                ps.timer_pending_at = deadline
                sim.schedule(deadline, self._on_timer, ps)

    # ----------------------------------------------------------- timers
    def _arm(self, ps: PathSender, deadline: float) -> None:
        ps.timer_deadline = deadline
        if deadline < ps.timer_pending_at:
            ps.timer_pending_at = deadline
            self.sim.schedule(deadline, self._on_timer, ps)

    def _set_loss_detection_timer(self, ps: PathSender) -> None:
        if ps.loss_time < INF:
            self._arm(ps, ps.loss_time)
        elif ps.bytes_in_flight > 0:
            self._arm(ps, ps.time_of_last_ack_eliciting + ps.pto_period() * (1 << ps.pto_count))
        else:
            ps.timer_deadline = INF

    def _on_timer(self, ps: PathSender) -> None:
        now = self.sim.now
        if now != ps.timer_pending_at:
            return                      # superseded by an earlier event
        ps.timer_pending_at = INF
        if self.finished:
            return
        deadline = ps.timer_deadline
        if deadline == INF:
            return
        if deadline > now:              # the deadline moved: re-arm
            self._arm(ps, deadline)
            return
        ps.timer_deadline = INF
        if ps.loss_time <= now:
            self._detect_lost(ps, now)
        elif ps.bytes_in_flight > 0:
            self._on_pto(ps, now)
        self._set_loss_detection_timer(ps)
        self.try_send()

    def _on_pto(self, ps: PathSender, now: float) -> None:
        """Probe timeout: send one probe on this path, regardless of cwnd
        (RFC 9002 §6.2.4): new data if any, else the oldest in-flight frame."""
        ps.pto_count += 1
        ps.cc.on_pto(now)
        if not self._send_on(ps, None, 0) and ps.sent:
            oldest = ps.sent.first()
            _t_sent, _size, sid, off, length = ps.sent[oldest]
            ps.sent.mark_shared(oldest)      # two copies of its frame now
            ps.retransmissions += 1
            self._transmit(ps, sid, off, length, True)

    # ----------------------------------------------------------- ACK processing
    def _on_ack(self, pidx) -> None:
        """Event: the oldest ACK frame on path ``pidx``'s wire reaches the sender."""
        self._ack_frame(pidx)

    def _ack_frame(self, pidx) -> None:
        """Process the oldest ACK frame of path ``pidx`` (:class:`envs.wire.AckWire`)."""
        acks = self.ack_wires[pidx]
        r = acks.arrive(self.sim, self._ack_event, pidx)
        npn = acks.npn[r]
        if self.finished:
            acks.skip_pns(npn)
            return
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
                continue                         # not in flight (acknowledged or declared lost)
            i = pn & sent.mask
            t_sent = sent.t_sent[i]
            size = sent.size[i]
            length = sent.length[i]
            if copies == 1:
                self.bytes_acked += length       # its frame's only copy: acknowledged once
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

    def _prune_acked(self) -> None:
        """Forget the acknowledged frames nothing can ask about (:func:`envs.sent.live_frames`);
        runs when the set has doubled since the last prune."""
        self.acked_frames &= live_frames(self.paths, self.retx)
        n = 2 * len(self.acked_frames)
        self._prune_at = n if n > ACKED_PRUNE_MIN else ACKED_PRUNE_MIN

    def _detect_lost(self, ps: PathSender, now: float) -> None:
        """RFC 9002 §6.1: packet and time thresholds. Both are monotone in the packet number, so lost
        packets form a prefix of the in-flight ones and the scan stops at the first survivor."""
        ps.loss_time = INF
        largest = ps.largest_acked
        if largest < 0:
            return
        rtt = ps.latest_rtt if ps.latest_rtt > ps.srtt else ps.srtt
        loss_delay = K_TIME_THRESHOLD * rtt
        if loss_delay < K_GRANULARITY:
            loss_delay = K_GRANULARITY
        sent = ps.sent
        first = sent.lo
        pn = sent.survivor(largest, now, loss_delay, K_PACKET_THRESHOLD)   # lost: those in flight before pn
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
                self.retransmit_bytes += length
            cc.on_loss(now, size, t_sent)
            if feedback:
                self.scheduler.on_packet_lost(self, ps.index, size, t_sent)

    # ----------------------------------------------------------- summary
    @property
    def packets_sent(self) -> int:
        return sum(p.packets_sent for p in self.paths)
