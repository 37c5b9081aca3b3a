# C types of envs/traces/base.py for the compiled emulator core (setup.py, envs/_core.py):
# a trace-driven link asks its capacity trace for cum_bytes and time_at on every
# packet, and its delay and loss series for value_at; compiled, these are C calls
# on typed columns (const: a parsed trace's arrays may be read-only).
cimport cython
# C's fmod, floor and copysign for _floor_div's and _mod's math.* (the .py imports Python's math)
from libc cimport math

cdef bint COMPILED

@cython.locals(mod=cython.double, div=cython.double, q=cython.double)
cpdef double _floor_div(double x, double y) except? -1.0
@cython.locals(mod=cython.double)
cpdef double _mod(double x, double y) except? -1.0
@cython.locals(lo=Py_ssize_t, hi=Py_ssize_t, mid=Py_ssize_t)
cpdef Py_ssize_t _bisect_right(const double[::1] a, double x) except? -1
@cython.locals(lo=Py_ssize_t, hi=Py_ssize_t, mid=Py_ssize_t)
cpdef Py_ssize_t _bisect_left(const double[::1] a, double x) except? -1

cdef class CapacityTrace:
    cdef public object times, rates, name, constant_rate
    cdef public double period, total
    cdef public bint is_constant
    cdef const double[::1] _t, _r, _cum

    cpdef _set_columns(self, cum)
    @cython.locals(loops=cython.double, tt=cython.double, i=Py_ssize_t)
    cpdef double cum_bytes(self, double t) except? -1.0
    @cython.locals(loops=cython.double, cc=cython.double, i=Py_ssize_t)
    cpdef double time_at(self, double c) except? -1.0

cdef class StepSeries:
    cdef public object times, values
    cdef public double period
    cdef public bint is_constant
    cdef const double[::1] _t, _v

    cpdef double value_at(self, double t) except? -1.0
