# C types of envs/rules.py for the compiled emulator core (setup.py, envs/_core.py).
cimport cython
from envs.path_sender cimport PathSender
from envs.credit cimport CompletionCredit
from envs.explore cimport EpsilonDraws
from envs.dense cimport DenseForward

# module constants as C doubles (a Python float compared with a C double is boxed)
cdef double INF
# the rule codes (envs/rule_codes.py) as C integers
cdef int MINRTT, ROUND_ROBIN, MINRTT_UNLESS_SLOWER, FIXED_SPLIT, SPLIT_THRESHOLD, MINRTT_UNTIL_TAIL, MODES, COMPLETION_DQN

@cython.locals(best=cython.longlong, best_srtt=cython.double, probe=cython.longlong,
               probe_sent=cython.longlong, i=cython.longlong, p=PathSender)
cpdef long long minrtt_pick(list paths, double now) except? -3
@cython.locals(best=cython.longlong, best_srtt=cython.double, i=cython.longlong, p=PathSender)
cpdef long long fastest_index(list paths) except? -3
@cython.locals(c=cython.longlong, p=PathSender)
cpdef long long minrtt_unless_slower(list paths, double now) except? -3
@cython.locals(n=cython.longlong, i=cython.longlong, k=cython.longlong, p=PathSender)
cpdef long long round_robin_pick(list paths, double now, long long start) except? -3
cpdef double predicted_delivery(PathSender p) except? -1.0
@cython.locals(p0=PathSender, p1=PathSender, t=PathSender, o=PathSender, sent0=cython.longlong)
cpdef long long split_pick(list paths, double now, double share, double threshold) except? -3
@cython.locals(p0=PathSender, p1=PathSender, a=PathSender, b=PathSender)
cpdef object tail_copy(list paths, object view, double now)
@cython.locals(end=cython.double, i=cython.longlong, m=cython.longlong, code=cython.int,
               c0=cython.longlong, c1=cython.longlong, a=cython.longlong, t=cython.longlong,
               share=cython.double, reinject=cython.double, p=PathSender, snapshot=list, last_ack=list, counts=list)
cpdef mode_decision(list paths, object scheduler, object view, double now, bint tail)
@cython.locals(p=PathSender)
cpdef long long probe_index(list paths, double now) except? -3
cdef class DQNFields:
    cdef public bint native, recording, has_budget
    cdef public object behaviour, qnet
    cdef public long long budget, decisions
    cdef public double epsilon
    cdef public CompletionCredit credit
    cdef public EpsilonDraws draws
    cdef public DenseForward dense

@cython.locals(f=DQNFields, record=cython.bint, has_budget=cython.bint, budget=cython.longlong,
               credit=CompletionCredit, draws=EpsilonDraws, dense=DenseForward, a=cython.longlong, ready=list)
cpdef completion_decision(list paths, object scheduler, object view, double now)
@cython.locals(i=cython.longlong)
cpdef native_decision(int rule, list paths, object scheduler, object view, double now, bint tail)
