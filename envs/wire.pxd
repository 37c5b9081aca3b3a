# C types of envs/wire.py for the compiled emulator core (setup.py, envs/_core.py):
# the columns are typed arrays that the connection and receiver index directly.
cimport cython

cdef bint COMPILED

@cython.final
cdef class DataWire:
    cdef long long[::1] pn, sid, off, length
    cdef double[::1] return_delay
    cdef public Py_ssize_t head, count, mask

    @cython.locals(r=Py_ssize_t)
    cpdef push(self, long long pn, long long sid, long long off, long long length, double return_delay)
    @cython.locals(r=Py_ssize_t)
    cpdef Py_ssize_t pop(self)
    cpdef _grow(self)

@cython.final
cdef class AckWire:
    cdef long long[::1] largest, max_data, oqs, npn, pns
    cdef double[::1] ack_delay
    cdef public Py_ssize_t head, count, mask, pn_head, pn_count, pn_mask

    cpdef add_pn(self, long long pn)
    cpdef skip_pns(self, Py_ssize_t n)
    @cython.locals(h=Py_ssize_t)
    cpdef long long pop_pn(self)
    @cython.locals(r=Py_ssize_t)
    cpdef push(self, long long largest, double ack_delay, long long max_data, long long oqs, long long npn)
    @cython.locals(r=Py_ssize_t)
    cpdef Py_ssize_t pop(self)
    cpdef _grow(self)
