# C types of envs/path_sender.py for the compiled emulator core (setup.py, envs/_core.py).
# Methods typed ``cpdef int ... except -1`` return 0 (a C status: envs/sim.py's docstring).
cimport cython
from envs.cc.base cimport CongestionController, RttEstimate
from envs.sim cimport Simulator
from envs.link cimport Path
from envs.sent cimport SentPackets

# module constants as C doubles (a Python float compared with a C double is boxed);
# K_GRANULARITY stays a Python float for importers, _GRANULARITY is its typed copy
cdef double INF, _GRANULARITY

@cython.final
cdef class PathSender(RttEstimate):
    cdef public long long index
    cdef public Path path
    cdef public CongestionController cc
    cdef public long long mss, payload
    cdef public double rttvar, min_srtt, max_srtt  # srtt, min_rtt, latest_rtt: RttEstimate's
    cdef public bint has_rtt_sample, is_open
    cdef public long long bytes_in_flight, next_pn, largest_acked, pto_count
    cdef public SentPackets sent
    cdef public double loss_time, time_of_last_ack_eliciting, timer_deadline, timer_pending_at
    cdef public long long packets_sent, packets_acked, packets_lost, bytes_sent, payload_bytes_acked, retransmissions
    cdef public double max_ack_delay, pto_base
    cdef public object cc_on_sent
    cdef public double ack_delay, open_time
    cdef public Simulator clock
    cdef public double pace_gain, pace_burst_bytes, pace_min_delay, pace_budget, pace_last

    cpdef int update_rtt(self, double latest, double ack_delay) except -1
    @cython.locals(rtt=cython.double)
    cpdef double rtt_sample(self, double sent_time, double now) except? -1.0
    cpdef double pto_period(self) except? -1.0
    cpdef bint may_send(self, double now) except? -1
    @cython.locals(r=cython.double)
    cpdef double pace_rate(self) except? -1.0
    @cython.locals(b=cython.double)
    cpdef bint pace_ok(self, double now) except? -1
    @cython.locals(d=cython.double)
    cpdef double pace_release(self) except? -1.0
    @cython.locals(rate=cython.double, burst=cython.double, b=cython.double)
    cpdef int pace_sent(self, double now, long long size) except -1

@cython.locals(p=PathSender, t=cython.double, r=cython.double)
cpdef double pace_wake_time(list paths, double now) except? -1.0
