# C types of envs/decision_agent.py for the compiled core (setup.py, envs/_core.py):
# the connection (envs/transport.pxd) calls an agent's decide through this class.
cdef class DecisionAgent:
    cdef public object action
    cdef public bint requested

    cpdef decide(self, view)
