# C types of envs/credit.py for the compiled core (setup.py, envs/_core.py):
# the completion credit's per-path estimates, predictions and state rows.
cimport cython
from envs.path_sender cimport PathSender
from envs.mdp cimport (probe_path, decode_action, estimates_into, raw_finish, _completion_features,
                       _paths, _payload, _pending_bytes)

cdef extern from "Python.h":
    void PyObject_GC_UnTrack(void *op)

cdef bint COMPILED
cdef Py_ssize_t STATE_ROWS

@cython.final
cdef class Decision:
    cdef public object state, next_state
    cdef public list raw, raw_next
    cdef public long long action
    cdef public double due

cdef class CompletionCredit:
    cdef public object features
    cdef public double hindsight_rtts
    cdef public bint per_packet, keep_states
    cdef public Py_ssize_t n_paths
    cdef public list last_send, _vals
    cdef public object _open, _pending_raw, _block, _state_block
    cdef public Decision _last
    cdef public double _pending_due
    cdef double[::1] _srtt, _rate, _dvals
    cdef long long[::1] _order
    cdef float[:, ::1] _rows, _state_rows
    cdef Py_ssize_t _row, _state_at

    @cython.locals(p=PathSender)
    cpdef list _raw(self, view, double now)
    @cython.locals(r=Py_ssize_t, k=Py_ssize_t, j=Py_ssize_t, rows=cython.float[:, ::1], vals=cython.double[::1])
    cpdef _state_row(self)
    @cython.locals(j=Py_ssize_t, out=cython.double[::1])
    cpdef _features(self, view, double now, double finish)
    cpdef const float[::1] latest_state(self)
    @cython.locals(rows=cython.float[:, ::1], r=Py_ssize_t, k=Py_ssize_t, j=Py_ssize_t)
    cpdef state_into(self, float[::1] row)
    @cython.locals(largest=cython.double, finish=cython.double, last=Decision)
    cpdef observe(self, view, double now, bint record=*)
    cpdef tuple act(self, view, state, long long action, double now, bint record=*)
    @cython.locals(rec=Decision)
    cpdef acted(self, state, long long action, bint sent, double now, bint record=*)
    @cython.locals(total=cython.double, i=Py_ssize_t)
    cpdef double _unit_s(self, view)
    cpdef _set_state(self, tuple state)
    @cython.locals(r=cython.double, unit=cython.double, srtt=cython.double[::1], rate=cython.double[::1],
                   order=cython.longlong[::1], rec=Decision, raw=list)
    cpdef list ready(self, view, double now, bint final=*)

cdef void _untrack(object obj)
