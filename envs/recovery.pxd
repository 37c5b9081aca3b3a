# C types of envs/recovery.py for the compiled emulator core (setup.py, envs/_core.py).
# Methods typed ``cpdef int ... except -1`` return 0 (a C status: envs/sim.py's docstring).
cimport cython
from envs.path_sender cimport PathSender
from envs.receiver cimport Receiver
from envs.sent cimport SentPackets
from envs.wire cimport AckWire

# module constants as C numbers (a Python float compared with a C double is boxed)
cdef double INF, K_TIME_THRESHOLD, K_GRANULARITY
cdef long long K_PACKET_THRESHOLD
# the connection's event numbers (envs/events.py) as C integers
cdef long long LOSS_TIMER

cdef class Recovery(Receiver):
    cdef public object scheduler, retx, acked_frames
    cdef public long long retransmit_bytes, retx_frames, bytes_acked, max_data, peer_oqs
    # set by the connection (envs/transport.py), declared here so that the completion
    # MDP (envs/mdp.py, envs/credit.py) reads a connection's payload, data not yet sent
    # and flow-control credit through C: this module is below theirs
    cdef public long long payload, _pending_new, fc_consumed
    cdef public bint feedback, finished
    cdef public Py_ssize_t _prune_at

    cpdef int try_send(self) except -1
    cpdef int _arm(self, PathSender ps, double deadline) except -1
    cpdef int _set_loss_detection_timer(self, PathSender ps) except -1
    @cython.locals(ps=PathSender, acks=AckWire, sent=SentPackets, r=Py_ssize_t, i=Py_ssize_t,
                   npn=cython.longlong, _k=cython.longlong, pn=cython.longlong, acked_bytes=cython.longlong,
                   n_acked=cython.longlong, largest_sent_time=cython.double, last_sent_time=cython.double,
                   t_sent=cython.double, size=cython.longlong, length=cython.longlong, now=cython.double,
                   largest=cython.longlong, max_data=cython.longlong, ack_delay=cython.double,
                   feedback=cython.bint, copies=cython.longlong)
    cpdef int _ack_frame(self, long long pidx) except -1
    @cython.locals(largest=cython.longlong, rtt=cython.double, loss_delay=cython.double, t_sent=cython.double,
                   size=cython.longlong, sent=SentPackets, first=cython.longlong,
                   pn=cython.longlong, lost=cython.longlong, i=Py_ssize_t, sid=cython.longlong,
                   off=cython.longlong, length=cython.longlong, copies=cython.longlong, feedback=cython.bint)
    cpdef int _detect_lost(self, PathSender ps, double now) except -1
    cpdef _prune_acked(self)

cpdef long long send_window_of(Recovery c) except? -1
cpdef long long pending_bytes_of(Recovery c) except? -1
