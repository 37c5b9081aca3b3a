# C types of envs/transport.py for the compiled emulator core (setup.py, envs/_core.py).
# Event callbacks (_on_ack, _on_timer, ...) stay Python methods: a bound method
# goes into the event heap, and a cpdef method taken as a value would not be one.
cimport cython
from envs.path_sender cimport PathSender
from envs.recovery cimport Recovery
from envs.streams cimport SendStream
from envs.link cimport Path
from envs.sent cimport SentPackets
from envs.wire cimport AckWire, DataWire
from envs.rules cimport native_decision
from envs.sim cimport Simulator

# module constants as C numbers (a Python float compared with a C double is boxed)
cdef double INF, REASK_DELAY

cdef class Connection(Recovery):
    cdef public object name, _blocked
    cdef public long long mss, payload, header_bytes
    cdef public list active
    cdef public long long fc_consumed, _pending_new
    cdef public bint _reask_pending, paced, reinjects
    cdef public long long reinjected_bytes, reinjected_packets
    cdef public list _reinject_from, _penalised_at
    cdef public double start_time, _pace_wake_at
    cdef public dict setup
    cdef public int native_rule

    cpdef bint _has_data(self)
    @cython.locals(ps=PathSender, p=PathSender, st=SendStream, iv=list, credit=cython.longlong,
                   length=cython.longlong, off=cython.longlong, now=cython.double, tail=cython.bint)
    cpdef try_send(self)
    @cython.locals(t=cython.double)
    cpdef _arm_pace_wake(self, double now)
    @cython.locals(now=cython.double, size=cython.longlong, pn=cython.longlong, deadline=cython.double,
                   path=Path, arrival=cython.double, wire=DataWire, sim=Simulator)
    cpdef _transmit(self, PathSender ps, long long sid, long long off, long long length, bint shared)
