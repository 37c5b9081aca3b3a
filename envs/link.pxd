# C types of envs/link.py for the compiled emulator core (setup.py, envs/_core.py).
cimport cython
from cpython.pycapsule cimport PyCapsule_GetPointer
from libc.stdint cimport uint64_t
from envs.traces.base cimport CapacityTrace, StepSeries
from envs.slab cimport zeroed_floats, zeroed_ints

# one random draw at a time from a Generator's bit generator, with NumPy's algorithms
# (envs/link_draws.h; setup.py links NumPy's npyrandom library)
cdef extern from "link_draws.h":
    ctypedef struct falcon_stream_t:
        pass
    void *falcon_stream_seed(falcon_stream_t *s, uint64_t w0, uint64_t w1, uint64_t w2, uint64_t w3)
    double falcon_gamma(void *bg, double shape, double scale) nogil
    double falcon_next_double(void *bg) nogil

cdef bint COMPILED
# module constants as C doubles (a Python float compared with a C double is boxed)
cdef double INF

@cython.final
cdef class Link:
    cdef public CapacityTrace capacity
    cdef public object _buffer_packets, _buffer_bytes, name
    cdef public double _limit_packets, _limit_bytes
    cdef double[::1] _dep
    cdef long long[::1] _size
    cdef public Py_ssize_t _head, _n, _mask
    cdef public long long _queued_bytes
    cdef public double _last_departure, _pos, _rate
    cdef public long long drops, packets_served, bytes_served
    cdef public double offset

    cpdef _drain(self, double now)
    @cython.locals(departure=cython.double, start=cython.double, rate=cython.double, r=Py_ssize_t,
                   c_now=cython.double, pos=cython.double, cap=CapacityTrace)
    cpdef double admit(self, double now, long long size) except? -1.0

cdef class RandomDraws:
    # readonly: _bitgen points into this Generator's bit generator (or into _stream, _rng None)
    cdef readonly object _rng
    cdef void *_bitgen
    cdef falcon_stream_t _stream
    @cython.locals(w=list)
    cpdef _draw_from(self, object rng)

@cython.final
cdef class DelayModel(RandomDraws):
    cdef public double mean_rtt, cv, offset
    cdef public StepSeries one_way_series
    cdef double[::1] _buf
    cdef public Py_ssize_t _i, _left
    @cython.locals(i=Py_ssize_t, mean=cython.double, k=cython.double)
    cpdef double sample_rtt(self, double now) except? -1.0
    cpdef _draw_part(self)
    cpdef _gamma(self, Py_ssize_t n)

@cython.final
cdef class LossModel(RandomDraws):
    cdef public double p, offset
    cdef public StepSeries series
    cdef public object ge
    cdef public bint _bad
    cdef double[::1] _buf
    cdef public Py_ssize_t _i
    @cython.locals(i=Py_ssize_t)
    cpdef double _uniform(self) except? -1.0
    @cython.locals(u=cython.double, p=cython.double)
    cpdef bint lost(self, double now) except? -1

cdef class Path:
    cdef public object name
    cdef public Link link, return_link
    cdef public DelayModel delay
    cdef public LossModel loss
    cdef public double _last_arrival, _last_ack_arrival
    cdef public long long packets_lost_random
    cdef public bint _loss_on
    cdef public double last_return_delay
    @cython.locals(departure=cython.double, half=cython.double, arrival=cython.double)
    cpdef double send(self, double now, long long size) except? -1.0
    @cython.locals(arrival=cython.double)
    cpdef transmit(self, double now, long long size)
    @cython.locals(start=cython.double, dep=cython.double, arrival=cython.double)
    cpdef double ack_arrival(self, double now, double return_delay, long long size) except? -1.0

cdef class ScheduledPath(Path):
    cdef public list _times, _states
    cdef public object _period
    cdef public Py_ssize_t _k
    cdef public long long _cycle
    cdef public double _next
