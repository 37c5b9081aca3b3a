# C types of envs/mdp.py for the compiled emulator core (setup.py, envs/_core.py):
# the completion MDP's per-decision state, prediction and credit. A view's
# paths are the connection's PathSender objects.
cimport cython
from envs.path_sender cimport PathSender

@cython.locals(p=PathSender, pay=cython.longlong, best_srtt=cython.double, best_rate=cython.double, i=Py_ssize_t)
cpdef tuple path_estimates(view)

@cython.locals(finish=cython.double, f=cython.double, rate_sum=cython.double, weighted=cython.double,
               t=cython.double, start=cython.double, d=cython.double, r=cython.double, i=Py_ssize_t)
cpdef double predicted_finish(double now, double unsent, last_send, in_flight, srtts, rates)

cpdef double _clip(double x, double lo, double hi)

@cython.locals(p=PathSender, k=Py_ssize_t, srtt=cython.double, cwnd=cython.double)
cpdef list _completion_features(view, double now, double finish, list vals)

cpdef object probe_path(view)

cpdef object decode_action(view, long long action)

cdef class CompletionCredit:
    cdef public object features
    cdef public double hindsight_rtts
    cdef public bint per_packet
    cdef public Py_ssize_t n_paths
    cdef public list last_send, _vals
    cdef public object _open, _last, _pending_raw
    cdef public double _pending_due

    cpdef tuple _raw(self, view, double now)
    @cython.locals(finish=cython.double)
    cpdef list observe(self, view, double now, bint record=*)
    cpdef tuple act(self, view, state, long long action, double now, bint record=*)
    cpdef acted(self, state, long long action, bint sent, double now, bint record=*)
    @cython.locals(total=cython.double, r=cython.double)
    cpdef double _unit_s(self, view, rates)
    @cython.locals(r=cython.double, unit=cython.double)
    cpdef list ready(self, view, double now, bint final=*)
