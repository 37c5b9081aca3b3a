# C types of envs/transport.py for the compiled emulator core (setup.py, envs/_core.py).
# Event callbacks (_on_ack, _on_timer, ...) stay Python methods: a bound method
# goes into the event heap, and a cpdef method taken as a value would not be one.
cimport cython
from envs.path_sender cimport PathSender
from envs.receiver cimport Receiver
from envs.streams cimport SendStream
from envs.link cimport Path
from envs.sent cimport SentPackets
from envs.wire cimport AckWire, DataWire
from envs.rules cimport native_decision
from envs.sim cimport Simulator

# module constants as C numbers (a Python float compared with a C double is boxed)
cdef double INF, K_TIME_THRESHOLD, K_GRANULARITY, REASK_DELAY
cdef long long K_PACKET_THRESHOLD

cdef class Connection(Receiver):
    cdef public object name, scheduler, retx, acked_frames, _blocked
    cdef public long long mss, payload, header_bytes
    cdef public list active
    cdef public long long retransmit_bytes, fc_consumed, bytes_acked, _pending_new, max_data, peer_oqs
    cdef public bint _reask_pending, feedback, finished, paced, reinjects
    cdef public long long reinjected_bytes, reinjected_packets
    cdef public list _reinject_from, _penalised_at
    cdef public double start_time, _pace_wake_at
    cdef public dict setup
    cdef public Py_ssize_t _prune_at
    cdef public int native_rule

    cpdef bint _has_data(self)
    @cython.locals(ps=PathSender, p=PathSender, st=SendStream, iv=list, credit=cython.longlong,
                   length=cython.longlong, off=cython.longlong, now=cython.double, rule=cython.int,
                   tail=cython.bint)
    cpdef try_send(self)
    @cython.locals(t=cython.double)
    cpdef _arm_pace_wake(self, double now)
    @cython.locals(now=cython.double, size=cython.longlong, pn=cython.longlong, deadline=cython.double,
                   path=Path, arrival=cython.double, wire=DataWire, sim=Simulator)
    cpdef _transmit(self, PathSender ps, long long sid, long long off, long long length, bint shared)
    cpdef _arm(self, PathSender ps, double deadline)
    cpdef _set_loss_detection_timer(self, PathSender ps)
    @cython.locals(ps=PathSender, acks=AckWire, sent=SentPackets, r=Py_ssize_t, i=Py_ssize_t,
                   npn=cython.longlong, _k=cython.longlong, pn=cython.longlong, acked_bytes=cython.longlong,
                   n_acked=cython.longlong, largest_sent_time=cython.double, last_sent_time=cython.double,
                   t_sent=cython.double, size=cython.longlong, length=cython.longlong, now=cython.double,
                   largest=cython.longlong, max_data=cython.longlong, ack_delay=cython.double,
                   feedback=cython.bint, copies=cython.longlong)
    cpdef _ack_frame(self, long long pidx)
    @cython.locals(largest=cython.longlong, rtt=cython.double, loss_delay=cython.double, t_sent=cython.double,
                   size=cython.longlong, sent=SentPackets, first=cython.longlong,
                   pn=cython.longlong, lost=cython.longlong, i=Py_ssize_t, sid=cython.longlong,
                   off=cython.longlong, length=cython.longlong, copies=cython.longlong, feedback=cython.bint)
    cpdef _detect_lost(self, PathSender ps, double now)
    cpdef _prune_acked(self)
