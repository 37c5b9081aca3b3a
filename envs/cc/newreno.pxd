# C types of envs/cc/newreno.py for the compiled emulator core (see setup.py).
from envs.cc.base cimport CongestionController

cdef class NewReno(CongestionController):
    pass
