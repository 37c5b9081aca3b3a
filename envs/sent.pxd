# C types of envs/sent.py for the compiled emulator core (setup.py, envs/_core.py):
# the columns are typed arrays that the connection indexes directly.
# Methods typed ``cpdef int ... except -1`` return 0 (a C status: envs/sim.py's docstring).
cimport cython
from envs.slab cimport zeroed_floats, zeroed_ints

@cython.final
cdef class SentPackets:
    cdef double[::1] t_sent
    cdef long long[::1] size, sid, off, length, state
    cdef public long long lo, hi, n, mask

    cpdef _carve(self, double[::1] floats, long long[::1] ints)
    @cython.locals(i=cython.longlong)
    cpdef int add(self, long long pn, double t_sent, long long size, long long sid, long long off,
              long long length, bint shared) except -1
    cpdef bint has(self, long long pn) except? -1
    cpdef double time_sent(self, long long pn) except? -1.0
    @cython.locals(copies=cython.longlong, mask=cython.longlong, lo=cython.longlong)
    cpdef Py_ssize_t take(self, long long pn) except? -1
    cpdef bint shared(self, long long pn) except? -1
    cpdef mark_shared(self, long long pn)
    cpdef Py_ssize_t first(self) except? -2
    @cython.locals(pn=cython.longlong, mask=cython.longlong)
    cpdef Py_ssize_t first_single(self, long long start) except? -2
    @cython.locals(end=cython.longlong, pn=cython.longlong, i=Py_ssize_t)
    cpdef Py_ssize_t survivor(self, long long largest, double now, double loss_delay, long long packet_threshold) except? -1
    cpdef _grow(self)
