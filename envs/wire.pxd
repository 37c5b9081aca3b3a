# C types of envs/wire.py for the compiled emulator core (setup.py, envs/_core.py):
# the columns are typed arrays that the connection and receiver index directly.
# Methods typed ``cpdef int ... except -1`` return 0 (a C status: envs/sim.py's docstring).
cimport cython
from envs.sim cimport Simulator
from envs.slab cimport zeroed_floats, zeroed_ints

cdef bint COMPILED

@cython.locals(m_src=Py_ssize_t, m_dst=Py_ssize_t, k=Py_ssize_t)
cpdef void _copy_rows(long long[::1] src, long long[::1] dst, Py_ssize_t first, Py_ssize_t end, Py_ssize_t to)

cdef class _Wire:
    cdef double[::1] due
    cdef long long[::1] seq
    cdef public Py_ssize_t head, count, mask
    cdef Simulator sim
    cdef long long handler, kind, pidx

    cpdef _init_ring(self, double[::1] due, long long[::1] seq)
    cpdef _target(self, Simulator sim, long long handler, long long kind, long long pidx)
    cpdef int queue_first(self) except -1
    @cython.locals(r=Py_ssize_t)
    cpdef Py_ssize_t arrive(self) except? -1
    @cython.locals(r=Py_ssize_t)
    cpdef Py_ssize_t pop(self) except? -1
    cpdef _grow_ring(self)

@cython.final
cdef class DataWire(_Wire):
    cdef long long[::1] pn, sid, off, length
    cdef double[::1] return_delay

    cpdef _carve(self, double[::1] floats, long long[::1] ints)
    @cython.locals(r=Py_ssize_t)
    cpdef int push(self, long long pn, long long sid, long long off, long long length, double return_delay,
                   double due, long long seq) except -1
    cpdef _grow(self)

@cython.final
cdef class AckWire(_Wire):
    cdef long long[::1] largest, max_data, oqs, npn, pns
    cdef double[::1] ack_delay
    cdef public Py_ssize_t pn_head, pn_count, pn_mask

    cpdef _carve(self, double[::1] floats, long long[::1] ints)
    cpdef int add_pn(self, long long pn) except -1
    cpdef skip_pns(self, Py_ssize_t n)
    @cython.locals(h=Py_ssize_t)
    cpdef Py_ssize_t pop_pn(self) except? -1
    @cython.locals(r=Py_ssize_t)
    cpdef int push(self, long long largest, double ack_delay, long long max_data, long long oqs, long long npn,
               double due, long long seq) except -1
    cpdef _grow(self)
