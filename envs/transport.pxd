# C types of envs/transport.py for the compiled emulator core (setup.py, envs/_core.py).
# The connection's events reach it as numbers (envs/events.py) through handle, a C
# method; the event callbacks (_on_ack, _on_loss_timer, ...) are the .py core's, which
# call the typed methods handle calls (_data_arrival, _loss_timer, ...).
cimport cython
from envs.path_sender cimport PathSender, pace_wake_time
from envs.recovery cimport Recovery, pending_bytes_of, send_window_of
from envs.streams cimport SendStream, any_holes, wrr_pick
from envs.link cimport Path
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
    cpdef try_send(self)
    @cython.locals(active=list, st=SendStream, length=cython.longlong, off=cython.longlong)
    cpdef _send_new(self, PathSender ps)
    @cython.locals(t=cython.double)
    cpdef _arm_pace_wake(self, double now)
    @cython.locals(p=PathSender)
    cpdef _maybe_reask(self)
    @cython.locals(st=SendStream, credit=cython.longlong)
    cpdef _next_frame(self, object stream_id, object gap)
    cpdef bint _send_on(self, PathSender ps, object stream_id, object gap) except -1
    cpdef _pace_wake(self)
    cpdef _ask_again(self)
    @cython.locals(ps=PathSender, now=cython.double, deadline=cython.double)
    cpdef _loss_timer(self, long long pidx)
    cpdef _on_pto(self, PathSender ps, double now)
    cpdef handle(self, long long kind, long long arg)
    @cython.locals(now=cython.double, size=cython.longlong, pn=cython.longlong, deadline=cython.double,
                   path=Path, arrival=cython.double, wire=DataWire, sim=Simulator)
    cpdef _transmit(self, PathSender ps, long long sid, long long off, long long length, bint shared)
