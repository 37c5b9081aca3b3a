# C types of envs/transport.py for the compiled emulator core (setup.py, envs/_core.py).
# The connection's events reach it as numbers (envs/events.py) through handle, a C
# method; the event callbacks (_on_ack, _on_loss_timer, ...) are the .py core's, which
# call the typed methods handle calls (_data_arrival, _loss_timer, ...).
# Methods typed ``cpdef int ... except -1`` return 0 (a C status: envs/sim.py's docstring).
cimport cython
from envs.path_sender cimport PathSender, pace_wake_time
from envs.recovery cimport Recovery, pending_bytes_of, send_window_of
from envs.streams cimport SendStream, any_holes, wrr_pick
from envs.sent cimport SentPackets
from envs.wire cimport AckWire, DataWire
from envs.rules cimport minrtt_pick, native_decision
from envs.sim cimport Simulator
from envs.decision_agent cimport DecisionAgent

# module constants as C numbers (a Python float compared with a C double is boxed)
cdef double INF, REASK_DELAY
# the connection's event numbers (envs/events.py) as C integers
cdef long long ACK_ARRIVAL, ACK_TIMER, DATA_ARRIVAL, LOSS_TIMER, PACE_WAKE, REASK
# the native rule whose pick always has room (envs/rule_codes.py) as a C integer
cdef int PICKS_WITH_ROOM

cdef class Connection(Recovery):
    cdef public object name, _blocked
    cdef public long long mss, header_bytes
    cdef public list active
    cdef public bint _reask_pending, paced, reinjects
    cdef public long long reinjected_bytes, reinjected_packets
    cdef public list _reinject_from, _penalised_at
    cdef public double start_time, _pace_wake_at
    cdef public dict setup
    cdef public int native_rule
    cdef public DecisionAgent _agent

    cpdef bint _has_data(self) except? -1
    @cython.locals(ps=PathSender, p=PathSender, now=cython.double, tail=cython.bint,
                   agent=DecisionAgent, k=Py_ssize_t, roomy=cython.bint)
    cpdef int try_send(self) except -1
    @cython.locals(active=list, st=SendStream, length=cython.longlong, off=cython.longlong)
    cpdef int _send_new(self, PathSender ps) except -1
    @cython.locals(t=cython.double)
    cpdef int _arm_pace_wake(self, double now) except -1
    @cython.locals(p=PathSender)
    cpdef _maybe_reask(self)
    @cython.locals(st=SendStream, credit=cython.longlong)
    cpdef _next_frame(self, object stream_id, object gap)
    cpdef bint _send_on(self, PathSender ps, object stream_id, object gap) except -1
    cpdef int _pace_wake(self) except -1
    cpdef int _ask_again(self) except -1
    @cython.locals(ps=PathSender, now=cython.double, deadline=cython.double)
    cpdef int _loss_timer(self, long long pidx) except -1
    cpdef _on_pto(self, PathSender ps, double now)
    cpdef int handle(self, long long kind, long long arg) except -1
    @cython.locals(now=cython.double, size=cython.longlong, pn=cython.longlong, deadline=cython.double,
                   arrival=cython.double, wire=DataWire)
    cpdef int _transmit(self, PathSender ps, long long sid, long long off, long long length, bint shared) except -1
