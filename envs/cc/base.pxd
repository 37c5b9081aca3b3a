# C types of envs/cc/base.py for the compiled emulator core (see setup.py).
cdef class RttEstimate:
    cdef public double srtt, min_rtt, latest_rtt

cdef class CouplingGroup:
    cdef public list members

cdef class CongestionController:
    cdef public long long mss
    cdef public double cwnd, ssthresh, min_window, max_window, recovery_start, srtt, pacing_rate
    cdef public CouplingGroup group

    # the per-ACK and per-loss calls of the connection go through C (a Python
    # subclass that overrides them is still called: cpdef dispatch)
    cpdef on_ack(self, double now, double acked_bytes, double sent_time, object rtt)
    cpdef on_loss(self, double now, double lost_bytes, double sent_time)
