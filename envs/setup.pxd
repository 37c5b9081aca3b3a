# C types of envs/setup.py for the compiled emulator core (setup.py, envs/_core.py): the
# set-up's round trips draw from the paths' delay models and read their links by C calls.
cimport cython
from envs.link cimport DelayModel, Link, Path
from envs.path_sender cimport PathSender
from envs.traces.base cimport CapacityTrace

@cython.locals(link=Link, cap=CapacityTrace, off=cython.double)
cpdef double crossed(Path path, double t_send, long long size=*) except? -1.0
@cython.locals(t_srv=cython.double)
cpdef double _round_trip(Path path, double t, double rtt, bint on_link) except? -1.0
@cython.locals(d0=DelayModel, p=Path, t=cython.double, t_up=cython.double, k=Py_ssize_t,
               on_link=cython.bint, t_hs=cython.double, server=cython.double)
cpdef tuple setup_timeline(list paths, dict setup, double t0)
@cython.locals(ps=PathSender, now=cython.double, t=cython.double)
cpdef double establish(object conn) except? -1.0
