# C types of envs/sim.py for the compiled emulator core (setup.py, envs/_core.py).
cimport cython

cdef class Simulator:
    cdef public double now
    cdef public list heap
    cdef public object seq
    cdef public bint stopped
    cdef public long long events_processed

    @cython.locals(n=cython.longlong, t=cython.double, collecting=cython.bint)
    cpdef double run(self, double until=*)
