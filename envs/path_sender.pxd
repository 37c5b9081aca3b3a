# C types of envs/path_sender.py for the compiled emulator core (setup.py, envs/_core.py).
cimport cython
from envs.cc.base cimport CongestionController

cdef class PathSender:
    cdef public long long index
    cdef public object path
    cdef public CongestionController cc
    cdef public long long mss, payload
    cdef public double srtt, rttvar, min_rtt, latest_rtt, min_srtt, max_srtt
    cdef public bint has_rtt_sample, is_open
    cdef public long long bytes_in_flight, next_pn, largest_acked, pto_count
    cdef public dict sent
    cdef public double loss_time, time_of_last_ack_eliciting, timer_deadline, timer_pending_at
    cdef public long long packets_sent, packets_acked, packets_lost, bytes_sent, payload_bytes_acked, retransmissions
    cdef public double max_ack_delay, pto_base
    cdef public object cc_on_sent
    cdef public double ack_delay, open_time

    cpdef update_rtt(self, double latest, double ack_delay)
    @cython.locals(rtt=cython.double)
    cpdef double rtt_sample(self, double sent_time, double now)
    cpdef double pto_period(self)
