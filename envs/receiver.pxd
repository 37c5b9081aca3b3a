# C types of envs/receiver.py for the compiled emulator core (setup.py, envs/_core.py).
# Methods typed ``cpdef int ... except -1`` return 0 (a C status: envs/sim.py's docstring).
cimport cython
from envs.sim cimport Simulator, Handler
from envs.streams cimport RecvStream
from envs.slab cimport zeroed_floats, zeroed_ints
from envs.wire cimport AckWire, DataWire
from envs.path_sender cimport PathSender

# module constants as C doubles (a Python float compared with a C double is boxed)
cdef double INF

cdef class RecvPathState:
    cdef public long long count, largest
    cdef public double largest_recv_time, return_delay, ack_deadline, timer_pending_at

# the connection's event numbers (envs/events.py) as C integers
cdef long long DATA_ARRIVAL, ACK_ARRIVAL, ACK_TIMER

cdef class Receiver(Handler):
    cdef public Simulator sim
    cdef public list rx_paths, paths, data_wires, ack_wires
    cdef public dict recv_streams, send_streams
    cdef double[::1] _oqs_t
    cdef long long[::1] _oqs_v
    cdef public long long oqs_cap, oqs_stride, oqs_seen, oqs_peak, oqs_kept
    cdef long long _oqs_next  # the next kept sample's number (_record_oqs)
    cdef public double oqs_sum, first_byte_time
    cdef public long long oqs, delivered, ack_every, ack_size, fc_window, fc_max_window, _rx_max_data, _epoch_start_offset
    cdef public double max_ack_delay, _epoch_start_time
    cdef public bint record_oqs, fc_autotune
    cdef public object app
    cdef long long _rs_sid
    cdef RecvStream _rs
    cdef public long long _hid  # the connection's number as an event handler (envs.sim.Simulator.register)

    @cython.locals(rp=RecvPathState, st=RecvStream, w=DataWire, acks=AckWire, r=Py_ssize_t, nxt=cython.longlong, pn=cython.longlong,
                   sid=cython.longlong, off=cython.longlong, seg=cython.longlong, length=cython.longlong, now=cython.double,
                   immediate=cython.bint)
    cpdef int _data_arrival(self, long long pidx) except -1
    @cython.locals(oqs=cython.longlong, n=Py_ssize_t, k=Py_ssize_t, j=Py_ssize_t)
    cpdef int _record_oqs(self, double now) except -1
    @cython.locals(rp=RecvPathState, ps=PathSender, acks=AckWire, arrival=cython.double)
    cpdef int _send_ack(self, long long pidx, double now) except -1
    @cython.locals(rp=RecvPathState, now=cython.double)
    cpdef int _ack_timer(self, long long pidx) except -1
