# C types of envs/mdp.py for the compiled emulator core (setup.py, envs/_core.py):
# the completion MDP's per-decision state, prediction and credit. A view's
# paths are the connection's PathSender objects.
cimport cython
# math.log1p as a C call (the libm function Python's math.log1p calls)
from libc cimport math
from envs.path_sender cimport PathSender
from envs.recovery cimport Recovery, pending_bytes_of, send_window_of

cdef double INF, _HIGH

cpdef tuple path_estimates(view)

@cython.locals(p=PathSender, paths=list, pay=cython.longlong, n=Py_ssize_t, i=Py_ssize_t, probed=Py_ssize_t,
               d=cython.double, r=cython.double, best_srtt=cython.double, best_rate=cython.double,
               largest=cython.double)
cpdef double estimates_into(view, double[::1] srtt, double[::1] rate) except? -1.0

@cython.locals(n=Py_ssize_t, i=Py_ssize_t, j=Py_ssize_t, k=Py_ssize_t, now=cython.double, unsent=cython.double,
               finish=cython.double, f=cython.double, rate_sum=cython.double, weighted=cython.double,
               t=cython.double, start=cython.double, r=cython.double)
cpdef double raw_finish(const double[::1] raw, double[::1] srtt, double[::1] rate, long long[::1] order) except? -1.0

cpdef double _clip(double x, double lo, double hi) except? -1.0

@cython.locals(p=PathSender, k=Py_ssize_t, srtt=cython.double, cwnd=cython.double)
cpdef int _completion_features(view, double now, double finish, double[::1] out) except -1

cpdef object probe_path(view)

cpdef object decode_action(view, long long action)

@cython.locals(ps=PathSender)
cdef double _window(object p) except? -1.0
@cython.locals(ps=PathSender)
cdef bint _has_room(object p) except -1
@cython.locals(ps=PathSender)
cdef double _packets_sent(object p) except? -1.0
cdef bint COMPILED
cdef object _RECOVERY_TYPE
cdef bint _is_core(object view) except -1
cdef inline Recovery _core(object view)
@cython.locals(c=Recovery)
cpdef list _paths(object view)
@cython.locals(c=Recovery)
cpdef long long _payload(object view) except? -1
# doubles: a duck-typed view's numbers are read as Python would
cpdef double _pending_bytes(object view) except? -1.0
cdef double _send_window(object view) except? -1.0
