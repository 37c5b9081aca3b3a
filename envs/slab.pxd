# C types of envs/slab.py for the compiled emulator core (setup.py, envs/_core.py).
cimport cython

cdef bint COMPILED

# the current slabs and the next free word of each
cdef double[::1] _floats
cdef long long[::1] _ints
cdef Py_ssize_t _floats_at, _ints_at, _pad
@cython.locals(at=Py_ssize_t)
cpdef double[::1] zeroed_floats(Py_ssize_t n)
@cython.locals(at=Py_ssize_t)
cpdef long long[::1] zeroed_ints(Py_ssize_t n)
