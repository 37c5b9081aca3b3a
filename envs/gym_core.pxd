# C types of envs/gym_core.py for the compiled core (setup.py, envs/_core.py):
# the completion agent's decision and the environment's step between two decisions.
cimport cython
from envs.credit cimport CompletionCredit
from envs.sim cimport Simulator
from envs.transport cimport Connection

cdef class CompletionCore:
    cdef public double hindsight_rtts
    cdef public object reward_unit, action, state, _steps
    cdef public bint requested
    cdef public Simulator sim
    cdef public list credits
    cdef public double step_credit
    cdef public CompletionCredit _credit

    cpdef reset(self, view)
    @cython.locals(credit=CompletionCredit, now=cython.double)
    cpdef decide(self, view)
    @cython.locals(i=Py_ssize_t, c=cython.double)
    cpdef _take(self, transitions)

cpdef hand_over(object agent, Connection conn, object app, Simulator sim,
                long long action, double until)
cpdef advance(object agent, object app, Simulator sim, double until)
