# C types of envs/reinject.py for the compiled emulator core (setup.py, envs/_core.py).
cimport cython
from envs.path_sender cimport PathSender
from envs.sent cimport SentPackets
from envs.transport cimport Connection

@cython.locals(best_t=cython.double, cursor=list, q=PathSender, i=cython.longlong,
               pn=cython.longlong, t=cython.double)
cpdef object candidate(Connection conn, long long path)
cpdef object source(Connection conn, long long path)
cpdef object sent_time(Connection conn, long long path)
@cython.locals(p=PathSender)
cpdef bint possible(Connection conn) except -1
@cython.locals(sent=SentPackets, length=cython.longlong)
cpdef bint send_copy(Connection conn, PathSender ps) except -1
@cython.locals(ps=PathSender, now=cython.double)
cpdef bint penalise(Connection conn, long long path) except -1
