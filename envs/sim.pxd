# C types of envs/sim.py for the compiled emulator core (setup.py, envs/_core.py).
cimport cython

cdef bint COMPILED

cdef class Simulator:
    cdef public double now
    cdef public list heap
    cdef public object seq
    cdef public bint stopped
    cdef public long long events_processed
    # the compiled event queue (envs/sim.py's module docstring)
    cdef Py_ssize_t _n, _nfree
    cdef long long _next_seq
    cdef double[::1] _time
    cdef long long[::1] _order, _slot, _free
    cdef list _cb, _arg

    @cython.locals(n=cython.longlong, collecting=cython.bint)
    cpdef double run(self, double until=*)
    cpdef schedule(self, double time, object callback, object arg=*)
    cpdef long long reserve(self)
    cpdef schedule_reserved(self, double time, long long seq, object callback, object arg=*)
    @cython.locals(s=Py_ssize_t, i=Py_ssize_t, parent=Py_ssize_t, pt=cython.double)
    cpdef _push(self, double time, long long seq, object callback, object arg)
    @cython.locals(s=Py_ssize_t, n=Py_ssize_t, i=Py_ssize_t, c=Py_ssize_t, lt=cython.double, ct=cython.double,
                   t2=cython.double, lo=cython.longlong, ls=Py_ssize_t)
    cdef _pop_and_call(self)
