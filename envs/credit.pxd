# C types of envs/credit.py for the compiled core (setup.py, envs/_core.py):
# the completion credit's per-path estimates, predictions and state rows.
cimport cython
from envs.path_sender cimport PathSender
from envs.mdp cimport (probe_path, decode_action, estimates_into, raw_finish, _completion_features,
                       _paths, _payload, _pending_bytes)

cdef bint COMPILED
cdef Py_ssize_t STATE_ROWS

cpdef object _zeroed(str kind, Py_ssize_t n)

cdef class CompletionCredit:
    cdef public object features
    cdef public double hindsight_rtts
    cdef public bint per_packet, keep_states, log_states
    cdef public object states
    cdef public list _blocks
    cdef public Py_ssize_t n_paths
    cdef public double[::1] last_send
    cdef public list _vals
    cdef public object _block, _state_block, _raw_block
    cdef public double _pending_due
    cdef double[::1] _srtt, _rate, _dvals
    cdef long long[::1] _order
    cdef float[:, ::1] _rows, _state_rows
    cdef Py_ssize_t _row, _state_at
    # the raw ring and the open decisions' columns (envs/credit.py)
    cdef double[:, ::1] _raw_rows
    cdef public long long _raw_mask, _n_raw, _first, _end, _mask, _last, _pending_raw
    cdef long long[::1] _act, _rawi, _nexti
    cdef double[::1] _due
    cdef public list _dstate, _dnext
    # the transition log (log_transitions)
    cdef public bint log_transitions
    cdef public Py_ssize_t _n_logged
    cdef long long[::1] _lstate, _laction, _lnext
    cdef double[::1] _lreward, _ltime
    cdef signed char[::1] _ldone

    @cython.locals(p=PathSender, paths=list, n=Py_ssize_t, r=Py_ssize_t, i=Py_ssize_t, j=cython.longlong,
                   rows=cython.double[:, ::1], last_send=cython.double[::1])
    cpdef long long _raw(self, view, double now) except -1
    @cython.locals(r=Py_ssize_t, k=Py_ssize_t, j=Py_ssize_t, rows=cython.float[:, ::1], vals=cython.double[::1])
    cpdef _state_row(self)
    @cython.locals(j=Py_ssize_t, out=cython.double[::1])
    cpdef _features(self, view, double now, double finish)
    cpdef const float[::1] latest_state(self)
    @cython.locals(rows=cython.float[:, ::1], r=Py_ssize_t, k=Py_ssize_t, j=Py_ssize_t)
    cpdef state_into(self, float[::1] row)
    @cython.locals(largest=cython.double, finish=cython.double, raw=cython.longlong, k=Py_ssize_t)
    cpdef observe(self, view, double now, bint record=*)
    cpdef act(self, view, state, long long action, double now, bint record=*)
    cpdef acted(self, state, long long action, bint sent, double now, bint record=*)
    @cython.locals(total=cython.double, i=Py_ssize_t)
    cpdef double _unit_s(self, view) except? -1.0
    cpdef _set_state(self, tuple state)
    @cython.locals(d=cython.longlong, k=Py_ssize_t)
    cpdef list open_decisions(self)
    cpdef _raw_row_of(self, long long j)
    @cython.locals(j=cython.longlong)
    cpdef long long _put_raw(self, values) except -1
    cdef long long _oldest_raw(self) except? -1
    @cython.locals(j=cython.longlong, i=Py_ssize_t, old=cython.double[:, ::1], rows=cython.double[:, ::1])
    cpdef _ring_raws(self, long long size)
    @cython.locals(j=cython.longlong)
    cdef long long _new_raw(self) except -1
    @cython.locals(k=Py_ssize_t)
    cdef _record(self, object state, long long action, long long raw, double due)
    @cython.locals(d=cython.longlong, k=Py_ssize_t, m=Py_ssize_t, dstate=list, dnext=list,
                   act=cython.longlong[::1], rawi=cython.longlong[::1], nexti=cython.longlong[::1],
                   due=cython.double[::1])
    cpdef _ring_decisions(self, long long size)
    @cython.locals(r=cython.double, unit=cython.double, k=Py_ssize_t, t=cython.double)
    cpdef list ready(self, view, double now, bint final=*, bint observed=*)
    @cython.locals(unit=cython.double, k=Py_ssize_t, n=Py_ssize_t)
    cpdef Py_ssize_t ready_rewards(self, view, double now, list rewards, Py_ssize_t first) except -1
    @cython.locals(i=Py_ssize_t, state=cython.longlong[::1], action=cython.longlong[::1], nxt=cython.longlong[::1],
                   reward=cython.double[::1], t=cython.double[::1], done=cython.schar[::1])
    cpdef _new_log(self, Py_ssize_t size)
    @cython.locals(i=Py_ssize_t)
    cdef _log(self, long long state, long long action, double reward, long long next_state, bint done, double t)
    @cython.locals(k=Py_ssize_t)
    cdef bint _closable(self, double now, bint final) except? -1
    cdef double _estimate(self, view, bint observed) except? -1.0
    cdef _pop(self, Py_ssize_t k)
    @cython.locals(before=cython.double, after=cython.double)
    cdef double _reward(self, Py_ssize_t k, double unit) except? -1.0
    @cython.locals(last=cython.longlong, k=Py_ssize_t, alone=cython.bint, raw=cython.double[::1], r=cython.double,
                   d=cython.longlong)
    cpdef list finish(self, view, double now, bint done)

