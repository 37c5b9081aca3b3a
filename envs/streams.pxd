# C types of envs/streams.py for the compiled emulator core (setup.py, envs/_core.py).
cimport cython

@cython.final
cdef class SendStream:
    cdef public object stream_id, weight, priority, release_time
    cdef public long long size, unsent_bytes, sent_offset, n_ranges
    # the unsent ranges [_lo[i], _hi[i]), i < n_ranges (envs/streams.py)
    cdef long long[::1] _lo, _hi
    cdef public double swrr_current

    @cython.locals(lo=cython.longlong[::1], hi=cython.longlong[::1], high=cython.longlong, k=Py_ssize_t,
                   j=Py_ssize_t, start=cython.longlong, end_k=cython.longlong, length=cython.longlong,
                   end=cython.longlong, used=cython.longlong)
    cpdef tuple take(self, long long max_len, object gap=*, object credit=*)
    @cython.locals(off=cython.longlong, length=cython.longlong, end=cython.longlong)
    cpdef Py_ssize_t take_front(self, long long max_len, long long credit) except? -1
    @cython.locals(n=Py_ssize_t, i=Py_ssize_t)
    cpdef _insert(self, Py_ssize_t k, long long lo, long long hi)
    @cython.locals(n=Py_ssize_t, i=Py_ssize_t)
    cpdef _remove(self, Py_ssize_t k)

cdef bint COMPILED

@cython.final
cdef class RecvStream:
    cdef public long long size, next_offset, ooo_count
    cdef public double complete_time
    cdef dict _ooo
    # the compiled core's out-of-order table (envs/streams.py)
    cdef long long[::1] _keys, _vals
    cdef Py_ssize_t _mask

    @cython.locals(mask=Py_ssize_t, i=Py_ssize_t)
    cpdef bint ooo_put(self, long long off, long long length) except -1
    @cython.locals(mask=Py_ssize_t, i=Py_ssize_t, j=Py_ssize_t, home=Py_ssize_t, length=cython.longlong)
    cpdef Py_ssize_t ooo_pop(self, long long off) except? -2
    @cython.locals(old_mask=Py_ssize_t, cap=Py_ssize_t, k=Py_ssize_t, i=Py_ssize_t, table=cython.longlong[:, ::1],
                   keys=cython.longlong[::1], old_keys=cython.longlong[::1], old_vals=cython.longlong[::1])
    cpdef _grow(self)

cdef Py_ssize_t _slot(long long off, Py_ssize_t mask) except? -1

@cython.locals(best=SendStream, st=SendStream, total=cython.double)
cpdef SendStream wrr_pick(list active)

@cython.locals(st=SendStream)
cpdef bint any_holes(list active) except? -1
