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
on the wire: :mod:`envs.wire`; ACKs, loss detection and its timer: :mod:`envs.recovery`;
re-injection: :mod:`envs.reinject`.
"""

from __future__ import annotations

import math
from collections import deque

try:  # the compiled build's directives
    import cython
except ImportError:  # pragma: no cover - the .py build installed without Cython
    from envs._cython_stub import cython  # type: ignore[assignment]

from envs import reinject
from envs.decision_agent import DecisionAgent
from envs.events import ACK_ARRIVAL, ACK_TIMER, DATA_ARRIVAL, LOSS_TIMER, PACE_WAKE, REASK
from envs.path_sender import PathSender, pace_wake_time
from envs.recovery import ACKED_PRUNE_MIN, Recovery, pending_bytes_of, send_window_of
from envs.rule_codes import MINRTT
from envs.rules import minrtt_pick, native_decision, rule_code
from envs.scheduler import Scheduler
from envs.setup import SETUP_NONE
from envs.streams import RecvStream, SendStream, any_holes, wrr_pick

REASK_DELAY = 0.001  # s; see Connection._maybe_reask
#: minRTT's native pick (envs.rules.minrtt_pick) is a path with room at the time it
#: is asked, and none only when no path has room: try_send asks no path for room itself
PICKS_WITH_ROOM = MINRTT
OQS_SERIES_CAP = (
    2**18
)  # OQS samples kept (Receiver._record_oqs); an episode sends far fewer packets
INF = math.inf


class Connection(Recovery):
    """One multipath connection between a server (sender) and a client.

    ``app`` drives it: ``open_stream`` releases data, ``on_stream_complete``
    is called back when a stream is fully delivered in order to the client.
    """

    def __init__(
        self,
        sim,
        paths,
        ccs,
        scheduler: Scheduler,
        *,
        packet_size=1350,
        header_bytes=60,
        ack_every=2,
        max_ack_delay=0.025,
        ack_size=50,
        fc_initial_window=786432,
        fc_max_window=15728640,
        fc_autotune=True,
        record_oqs=True,
        oqs_series_cap=OQS_SERIES_CAP,
        setup=None,
        pacing=None,
        name="conn",
    ):
        self.sim = sim
        self.name = name
        self.scheduler = scheduler
        self.native_rule = rule_code(scheduler)  # envs.rules: decisions without a Python call
        # a Gymnasium agent's decide is a C call (envs.decision_agent); found once, as the rule
        self._agent = scheduler if isinstance(scheduler, DecisionAgent) else None
        # the per-packet events and timers go to this connection as numbers (envs.events)
        self._hid = sim.register(self)
        self.mss = packet_size
        self.payload = packet_size - header_bytes
        if self.payload <= 0:
            raise ValueError("packet_size must exceed header_bytes")
        self.header_bytes = header_bytes
        self.paths = [
            PathSender(i, p, cc, packet_size, self.payload, max_ack_delay, sim, pacing)
            for i, (p, cc) in enumerate(zip(paths, ccs))
        ]
        self.paced, self._pace_wake_at = (
            self.paths[0].pace_gain > 0.0,
            INF,
        )  # pacer on; its next wake-up [s]
        # streams
        self.send_streams: dict[int, SendStream] = {}
        self.active: list[SendStream] = []  # released, with unsent data
        self.recv_streams: dict[int, RecvStream] = {}
        self.retx: deque = deque()  # (stream_id, offset, length) to resend
        # frames in retx: the per-decision tests read this C integer instead of
        # asking the deque for its length through Python's truth protocol
        self.retx_frames = 0
        self.retransmit_bytes = 0
        #: (stream, offset) of the acknowledged frames that had several copies (pruned): only
        #: those can be acknowledged twice or acknowledged and lost (envs.sent: shared records)
        self.acked_frames: set = set()
        self._prune_at = ACKED_PRUNE_MIN
        self.fc_consumed = 0  # sum of streams' highest offsets sent (flow control)
        self.bytes_acked = 0
        self._pending_new = 0  # released, not yet sent
        self._blocked: tuple | None = None  # decision committed to a path without room
        self._reask_pending = False
        self.max_data = fc_initial_window  # receiver's limit as known to the sender
        self.peer_oqs = 0  # the receiver's OQS as the latest ACK reported it [bytes]
        self._init_receiver(
            ack_every,
            max_ack_delay,
            ack_size,
            fc_initial_window,
            fc_max_window,
            fc_autotune,
            record_oqs,
            oqs_series_cap,
        )
        self.app = None
        self.feedback = scheduler.wants_packet_feedback
        # re-injection (envs.reinject): copies sent [bytes, packets], per path the candidate search's start
        # and the last penalise() [s]
        self.reinjects = bool(
            getattr(scheduler, "reinjects", False)
        )  # asked also when no new data can go
        self.reinjected_bytes = self.reinjected_packets = 0
        self._reinject_from, self._penalised_at = [0] * len(self.paths), [-INF] * len(self.paths)
        self.start_time = sim.now
        self.finished = False
        #: the connection setup (envs.setup; a normalised ``setup:`` block); None: none
        self.setup = dict(SETUP_NONE) if setup is None else dict(setup)

    def close(self) -> None:
        """Drop what ties a finished connection into reference cycles (its
        application and scheduler, which may hold it), so that reference counting
        frees it (``envs.scenario.Emulation.close``; the simulator's
        :meth:`envs.sim.Simulator.clear` forgets the connection as an event handler), and
        the coupling of its paths' controllers (a group lists its members, each member
        names its group): left to the cyclic collector, a few objects per episode made
        it traverse every live object of the process again and again in long runs."""
        self.app = self.scheduler = self._agent = None
        for ps in self.paths:
            group = ps.cc.group
            if group is not None:
                group.members.clear()

    # ----------------------------------------------------------- views
    @property
    def now(self) -> float:
        return self.sim.now

    @property
    def send_window(self) -> int:
        """Connection flow-control credit left at the sender [bytes]."""
        return send_window_of(self)

    @property
    def pending_bytes(self) -> int:
        """Data released and not yet sent, retransmissions included [bytes]."""
        return pending_bytes_of(self)

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
        return (
            self._pending_new > 0
            and self.max_data <= self.fc_consumed
            and not any_holes(self.active)
        )

    # the re-injection view and calls (envs.scheduler; bodies in envs.reinject)
    def reinject_source(self, path: int):
        return reinject.source(self, path)

    def reinject_sent_time(self, path: int):
        return reinject.sent_time(self, path)

    def penalise(self, path: int) -> bool:
        return reinject.penalise(self, path)

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

    def open_stream(
        self, stream_id: int, size: int, weight: float = 1.0, priority: int = 0, send: bool = True
    ) -> None:
        """Release ``size`` bytes on a new stream now (the server has them).
        ``send=False`` defers the scheduling decision, so that an app opening
        several streams at one instant lets the scheduler see all of them."""
        if size <= 0:
            raise ValueError(f"stream {stream_id}: size must be positive")
        st = SendStream(stream_id, size, weight, priority, self.sim.now)
        self.send_streams[stream_id] = st
        self.recv_streams[stream_id] = RecvStream(size)
        self._rs_sid = -1  # the receiver's cached stream may be one this replaces
        self.active.append(st)
        self._pending_new += size
        if send:
            self.try_send()

    # ----------------------------------------------------------- sending
    def _has_data(self) -> bool:
        if self.retx_frames > 0:
            return True
        return self._pending_new > 0 and (
            self.max_data > self.fc_consumed or any_holes(self.active)
        )

    def try_send(self) -> int:
        """Ask the scheduler for decisions while there is data and a path to take it."""
        paths = self.paths
        now = self.sim.now
        roomy = self.native_rule == PICKS_WITH_ROOM  # its pick tells whether any path has room
        while True:
            if self._blocked is not None:  # (a local read first took a reference to None)
                blocked = self._blocked
                ps = paths[blocked[0]]
                if not ps.may_send(now):
                    self._arm_pace_wake(now)
                    return 0
                self._blocked = None
                if not self._has_data():
                    return 0
                self._send_on(ps, blocked[1], blocked[2])
                continue
            # tail: nothing new can be sent; only a re-injection may go (envs.reinject)
            tail = self.retx_frames == 0 and (
                self._pending_new <= 0
                or (self.max_data <= self.fc_consumed and not any_holes(self.active))
            )
            if tail and (not self.reinjects or not reinject.possible(self)):
                return 0
            if roomy:  # minRTT's native pick as a C index (native_decision's, unboxed)
                k = minrtt_pick(paths, now)
                if k < 0:  # no path has room
                    self._arm_pace_wake(now)
                    return 0
                if tail:
                    return 0  # no copy asked for, and nothing else can go
                self._send_new(paths[k])
                continue
            for p in paths:  # a packet can be sent only if some path has room
                if p.may_send(now):
                    break
            else:
                self._arm_pace_wake(now)
                return 0
            if self.native_rule == 0:
                agent = self._agent
                if agent is not None:  # a Gymnasium agent: a C call
                    d = agent.decide(self)
                else:
                    d = self.scheduler.decide(self)
            else:
                d = native_decision(self.native_rule, paths, self.scheduler, self, now, tail)
            if d is None:
                self._maybe_reask()
                if (
                    not self.sim.stopped
                ):  # else an outside agent decides and calls again (envs.gym_env)
                    self._arm_pace_wake(now)
                return 0
            if tail and (type(d) is int or not d.reinject):
                return 0  # no copy asked for, and nothing else can go
            if type(d) is int:
                k = d  # (compiled: a C index, read from the list directly)
                ps = paths[k]
                sid = None
                gap = 0
            elif d.reinject:
                if self._reinject_decision(d, tail, now):
                    continue
                return 0
            else:
                ps = paths[d.path]
                sid = d.stream_id
                gap = d.gap
            if not ps.may_send(now):
                self._blocked = (ps.index, sid, gap)
                self._arm_pace_wake(now)
                return 0
            if sid is None and not gap:
                self._send_new(ps)
            else:
                self._send_on(ps, sid, gap)
        return 0

    @cython.boundscheck(False)  # index 0 of a list of one, of ranges when n_ranges > 0
    @cython.wraparound(False)
    def _send_new(self, ps: PathSender) -> int:
        """Send on ``ps`` (which has room) what the connection sends next, with no stream or
        gap asked for: a retransmission first, else new data."""
        active = self.active
        if self.retx_frames == 0 and len(active) == 1:
            st = active[0]
            if st.n_ranges > 0 and st._lo[0] == st.sent_offset:
                # inlined common case: the only stream's next in-order data, credit > 0
                # (try_send's tail test)
                length = st.unsent_bytes
                off = st.take_front(self.payload, self.max_data - self.fc_consumed)
                length -= st.unsent_bytes
                if st.unsent_bytes <= 0:
                    active.pop()
                self._pending_new -= length
                self.fc_consumed += length
                self._transmit(ps, st.stream_id, off, length, False)
                return 0
        self._send_on(ps, None, 0)
        return 0

    def _reinject_decision(self, d, tail: bool, now: float) -> bool:
        """Carry out a :class:`envs.scheduler.Decision` that asks for a re-injection (``tail``:
        nothing new can be sent); True: something may have been sent, ask again."""
        ps = self.paths[d.path]
        if not ps.may_send(now):  # a copy goes only on a path with room: a wait
            self._arm_pace_wake(now)
            return False
        if reinject.send_copy(self, ps):
            return True
        if not tail:  # nothing to copy: the next data as usual
            self._send_on(ps, d.stream_id, d.gap)
        return not tail

    def _next_frame(self, stream_id, gap):
        """Pick the data of the next packet: retransmissions first, then new data."""
        retx = self.retx
        while retx:
            sid, off, length = retx.popleft()
            self.retx_frames -= 1
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
            st = None
            for x in active:
                if x.hole_bytes > 0:
                    st = x
                    break
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
        if self._reask_pending or self.finished:
            return
        for p in self.paths:
            if p.bytes_in_flight > 0:
                return
        if not self.scheduler.reask_when_idle:  # (a lookup by name: last)
            return
        self._reask_pending = True
        self.sim.schedule_event(self.sim.now + REASK_DELAY, self._hid, REASK, 0)

    def _reask(self, _arg) -> None:
        """Event: ask the scheduler again (:meth:`_maybe_reask`)."""
        self._ask_again()

    def _ask_again(self) -> int:
        """:meth:`_reask`'s body (:meth:`handle` calls it as a C method)."""
        self._reask_pending = False
        if not self.finished:
            self.try_send()
        return 0

    def _arm_pace_wake(self, now: float) -> int:
        """Ask again when the first path held back only by its pacer may send."""
        if not self.paced:
            return 0
        t = pace_wake_time(self.paths, now)
        if t < self._pace_wake_at:
            self._pace_wake_at = t
            self.sim.schedule_event(t, self._hid, PACE_WAKE, 0)
        return 0

    def _on_pace_wake(self, _arg) -> None:
        self._pace_wake()

    def _pace_wake(self) -> int:
        if self.sim.now == self._pace_wake_at:  # else superseded by an earlier one
            self._pace_wake_at = INF
            if not self.finished:  # _reask_at's body: a Python method call per wake saved
                self.try_send()
        return 0

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

    @cython.boundscheck(False)  # ps.index is a path's: in range
    @cython.wraparound(False)
    def _transmit(self, ps: PathSender, sid, off, length, shared) -> int:
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
        arrival = ps.path.send(now, size)
        if arrival >= 0.0:  # else dropped or lost
            wire = self.data_wires[ps.index]
            wire.push(pn, sid, off, length, ps.path.last_return_delay, arrival, self.sim.reserve())
            wire.queue_first()
        # the PTO deadline moves with every send; a timer event is queued only if none is (_arm)
        if ps.loss_time == INF:
            deadline = now + ps.pto_base * (1 << ps.pto_count)
            ps.timer_deadline = deadline
            if deadline < ps.timer_pending_at:
                ps.timer_pending_at = deadline
                self.sim.schedule_event(deadline, self._hid, LOSS_TIMER, ps.index)
        return 0

    # ----------------------------------------------------------- events
    def event_callbacks(self) -> tuple:
        """The callback of each event number of :mod:`envs.events` (:class:`envs.sim.Handler`)."""
        callbacks: list = [None] * (REASK + 1)
        callbacks[DATA_ARRIVAL] = self._on_data_arrival
        callbacks[ACK_ARRIVAL] = self._on_ack
        callbacks[ACK_TIMER] = self._on_ack_timer
        callbacks[LOSS_TIMER] = self._on_loss_timer
        callbacks[PACE_WAKE] = self._on_pace_wake
        callbacks[REASK] = self._reask
        return tuple(callbacks)

    def handle(self, kind: int, arg: int) -> int:
        """Run event ``kind`` of :mod:`envs.events` with ``arg`` (what
        :meth:`event_callbacks` gives for it does the same, through Python calls)."""
        if kind == DATA_ARRIVAL:
            self._data_arrival(arg)
        elif kind == ACK_ARRIVAL:
            self._ack_frame(arg)
        elif kind == PACE_WAKE:
            self._pace_wake()
        elif kind == ACK_TIMER:
            self._ack_timer(arg)
        elif kind == LOSS_TIMER:
            self._loss_timer(arg)
        elif kind == REASK:
            self._ask_again()
        else:
            raise ValueError(f"unknown connection event {kind}")
        return 0

    def _on_loss_timer(self, pidx) -> None:
        """Event: path ``pidx``'s loss-detection timer."""
        self._loss_timer(pidx)

    def _loss_timer(self, pidx: int) -> int:
        """:meth:`_on_loss_timer`'s body (:meth:`handle` calls it as a C method)."""
        ps = self.paths[pidx]
        now = self.sim.now
        if now != ps.timer_pending_at:
            return 0  # superseded by an earlier event
        ps.timer_pending_at = INF
        if self.finished:
            return 0
        deadline = ps.timer_deadline
        if deadline == INF:
            return 0
        if deadline > now:  # the deadline moved: re-arm
            self._arm(ps, deadline)
            return 0
        ps.timer_deadline = INF
        if ps.loss_time <= now:
            self._detect_lost(ps, now)
        elif ps.bytes_in_flight > 0:
            self._on_pto(ps, now)
        self._set_loss_detection_timer(ps)
        self.try_send()
        return 0

    def _on_pto(self, ps: PathSender, now: float) -> None:
        """Probe timeout: send one probe on this path, regardless of cwnd
        (RFC 9002 §6.2.4): new data if any, else the oldest in-flight frame."""
        ps.pto_count += 1
        ps.cc.on_pto(now)
        if not self._send_on(ps, None, 0) and ps.sent:
            oldest = ps.sent.first()
            _t_sent, _size, sid, off, length = ps.sent[oldest]
            ps.sent.mark_shared(oldest)  # two copies of its frame now
            ps.retransmissions += 1
            self._transmit(ps, sid, off, length, True)

    # ----------------------------------------------------------- summary
    @property
    def packets_sent(self) -> int:
        return sum(p.packets_sent for p in self.paths)
