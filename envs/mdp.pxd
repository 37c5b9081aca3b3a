# C types of envs/mdp.py for the compiled emulator core (setup.py, envs/_core.py):
# the completion MDP's per-decision state, prediction and credit. A view's
# paths are the connection's PathSender objects.
cimport cython
from envs.path_sender cimport PathSender

@cython.locals(p=PathSender, pay=cython.longlong, best_srtt=cython.double, best_rate=cython.double, i=Py_ssize_t)
cpdef tuple path_estimates(view)

@cython.locals(rate_sum=cython.double, weighted=cython.double, t=cython.double, start=cython.double,
               r=cython.double, i=Py_ssize_t, k=Py_ssize_t)
cpdef double water_filled(double now, double unsent, double finish, double[::1] srtt, double[::1] rate,
                          long long[::1] order) except? -1.0

cpdef double _clip(double x, double lo, double hi)

@cython.locals(p=PathSender, k=Py_ssize_t, srtt=cython.double, cwnd=cython.double)
cpdef list _completion_features(view, double now, double finish, list vals)

cpdef object probe_path(view)

cpdef object decode_action(view, long long action)
