# C types of envs/cc/coupled.py for the compiled emulator core (setup.py): the
# coupled controllers are typed subclasses of NewReno, so that the per-ACK
# increase runs in C (their group members are read as typed controllers).
cimport cython
# C's fmod and floor for floor_div's math.fmod / math.floor (the .py imports Python's math)
from libc cimport math
from envs.cc.base cimport CongestionController, RttEstimate
from envs.cc.newreno cimport NewReno

cdef bint COMPILED

@cython.locals(div=cython.double, q=cython.double)
cpdef double floor_div(double a, double b) except? -1.0

cdef class _Coupled(NewReno):
    cdef public double l1, l2

    @cython.locals(cwnd=cython.double, srtt=cython.double, est=RttEstimate)
    cpdef on_ack(self, double now, double acked_bytes, double sent_time, object rtt)
    cpdef double _ca_increase(self, double acked_bytes, double cwnd) except? -1.0
    cpdef on_loss(self, double now, double lost_bytes, double sent_time)

cdef class Lia(_Coupled):
    @cython.locals(best=cython.double, rate_sum=cython.double, r=cython.double, w=cython.double,
                   v=cython.double, coupled=cython.double, uncoupled=cython.double, m=CongestionController)
    cpdef double _ca_increase(self, double acked_bytes, double cwnd) except? -1.0

cdef class Olia(_Coupled):
    cdef public double rate_sum
    @cython.locals(n=cython.longlong, max_w=cython.double, best=cython.double, rate_sum=cython.double,
                   mss=cython.double, r=cython.double, w=cython.double, l1=cython.double, l2=cython.double,
                   q=cython.double, n_m=cython.longlong, n_b_not_m=cython.longlong, self_in_b=cython.bint,
                   m=_Coupled)
    cpdef double _scan(self) except? -1.0
    @cython.locals(rate_sum=cython.double, a=cython.double, r=cython.double)
    cpdef double _ca_increase(self, double acked_bytes, double cwnd) except? -1.0

cdef class Balia(_Coupled):
    @cython.locals(best=cython.double, rate_sum=cython.double, r=cython.double, x=cython.double,
                   x_r=cython.double, a=cython.double, m=CongestionController)
    cpdef double _ca_increase(self, double acked_bytes, double cwnd) except? -1.0
