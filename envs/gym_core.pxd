# C types of envs/gym_core.py for the compiled core (setup.py, envs/_core.py):
# the completion agent's decision and the environment's step between two decisions.
cimport cython
from envs.credit cimport CompletionCredit
from envs.sim cimport Simulator
from envs.transport cimport Connection
from envs.decision_agent cimport DecisionAgent

cdef class CompletionCore(DecisionAgent):
    cdef public double hindsight_rtts
    cdef public object reward_unit, state
    cdef public Py_ssize_t _credited
    cdef public Simulator sim
    cdef public list credits
    cdef public double step_credit
    cdef public CompletionCredit _credit

    cpdef reset(self, view)
    @cython.locals(credit=CompletionCredit, now=cython.double, first=Py_ssize_t, k=Py_ssize_t, i=Py_ssize_t)
    cpdef decide(self, view)
    @cython.locals(c=cython.double)
    cpdef _take(self, transitions)

cpdef hand_over(DecisionAgent agent, Connection conn, Simulator sim, long long action, double until)
cpdef advance(DecisionAgent agent, Connection conn, Simulator sim, double until)

cdef class EpisodeRun:
    cdef public DecisionAgent agent
    cdef public CompletionCore _core
    cdef public Connection conn
    cdef public Simulator sim
    cdef public double until, reward
    cdef public long long max_steps, steps

    @cython.locals(agent=CompletionCore)
    cpdef int step(self, long long action) except -1
    cpdef int count(self, bint requested) except -1

@cython.locals(i=Py_ssize_t)
cpdef Py_ssize_t first_bad_action(long long[::1] actions, long long n) except -2

@cython.locals(i=Py_ssize_t, run=EpisodeRun, outcome=cython.int, agent=CompletionCore, ended=Py_ssize_t)
cpdef Py_ssize_t step_runs(list runs, long long[::1] actions, float[:, ::1] obs, double[::1] rewards,
                signed char[::1] outcomes) except -1
