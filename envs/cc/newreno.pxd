# C types of envs/cc/newreno.py for the compiled emulator core (see setup.py).
cimport cython
from envs.cc.base cimport CongestionController

cdef class NewReno(CongestionController):
    @cython.locals(cwnd=cython.double)
    cpdef on_ack(self, double now, double acked_bytes, double sent_time, object rtt)
    cpdef on_loss(self, double now, double lost_bytes, double sent_time)
    @cython.locals(ssthresh=cython.double)
    cpdef _reduce(self, double now)
