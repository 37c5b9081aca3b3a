# C types of envs/streams.py for the compiled emulator core (setup.py, envs/_core.py).
cimport cython

cdef class SendStream:
    cdef public object stream_id, weight, priority, release_time
    cdef public long long size, unsent_bytes, sent_offset
    cdef public list unsent
    cdef public double swrr_current

cdef class RecvStream:
    cdef public long long size, next_offset
    cdef public dict ooo
    cdef public double complete_time

@cython.locals(best=SendStream, st=SendStream, total=cython.double)
cpdef SendStream wrr_pick(list active)

@cython.locals(st=SendStream)
cpdef bint any_holes(list active)
