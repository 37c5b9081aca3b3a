# C types of envs/cc/base.py for the compiled emulator core (see setup.py).
cdef class CouplingGroup:
    cdef public list members

cdef class CongestionController:
    cdef public long long mss
    cdef public double cwnd, ssthresh, min_window, max_window, recovery_start, srtt, pacing_rate
    cdef public object group
