# C types of envs/sim.py for the compiled emulator core (setup.py, envs/_core.py).
# Methods typed ``cpdef int ... except -1`` return 0 (a C status: envs/sim.py's docstring).
cimport cython

cdef bint COMPILED

cdef class Handler:
    cpdef int handle(self, long long kind, long long arg) except -1

@cython.final
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
    # numbered events (envs/sim.py's module docstring)
    cdef long long[::1] _kind, _hid, _iarg
    cdef list _handlers, _event_callbacks

    @cython.locals(n=cython.longlong, collecting=cython.bint)
    cpdef double run(self, double until=*) except? -1.0
    cpdef stop(self)
    @cython.locals(i=Py_ssize_t, s=Py_ssize_t)
    cpdef clear(self)
    cpdef Py_ssize_t queued(self) except? -1
    cpdef schedule(self, double time, object callback, object arg=*)
    cpdef Py_ssize_t reserve(self) except? -1
    cpdef schedule_reserved(self, double time, long long seq, object callback, object arg=*)
    cpdef Py_ssize_t _take_slot(self) except -1
    @cython.locals(s=Py_ssize_t)
    cpdef _push(self, double time, long long seq, object callback, object arg)
    cpdef _carve(self, double[::1] times, long long[:, ::1] ints, long long[::1] free)
    cpdef Py_ssize_t register(self, Handler handler) except -1
    cpdef int schedule_event(self, double time, long long handler, long long kind, long long arg) except -1
    cpdef int schedule_event_reserved(self, double time, long long seq, long long handler, long long kind, long long arg) except -1
    @cython.locals(s=Py_ssize_t)
    cpdef int _push_event(self, double time, long long seq, long long handler, long long kind, long long arg) except -1
    @cython.locals(i=Py_ssize_t, parent=Py_ssize_t, pt=cython.double)
    cpdef int _sift_up(self, double time, long long seq, Py_ssize_t s) except -1
    @cython.locals(s=Py_ssize_t, n=Py_ssize_t, i=Py_ssize_t, c=Py_ssize_t, lt=cython.double, ct=cython.double,
                   t2=cython.double, lo=cython.longlong, ls=Py_ssize_t, kind=cython.longlong, h=Py_ssize_t,
                   end=Py_ssize_t, j=Py_ssize_t, b=Py_ssize_t,
                   iarg=cython.longlong, handler=Handler)
    cdef int _pop_and_call(self) except -1
