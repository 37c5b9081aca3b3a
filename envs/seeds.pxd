# C types of envs/seeds.py for the compiled emulator core (setup.py, envs/_core.py):
# the 32-bit arithmetic in 64-bit unsigned locals (the .py masks reduce it modulo 2**32).
cimport cython

cdef unsigned long long MASK32, INIT_A, MULT_A, INIT_B, MULT_B, MIX_MULT_L, MIX_MULT_R, XSHIFT
cdef Py_ssize_t POOL_SIZE

cdef class ChildSeed:
    cdef readonly object entropy
    cdef readonly tuple spawn_key
    cdef list _pool

    @cython.locals(words=list, wide=cython.bint)
    cpdef generate_state(self, object n_words, object dtype=*)
    @cython.locals(words=list, out=list, i=Py_ssize_t, lo=cython.ulonglong, hi=cython.ulonglong)
    cpdef list words64(self, Py_ssize_t n_words)
    @cython.locals(i=Py_ssize_t, h=cython.ulonglong, v=cython.ulonglong, p=cython.ulonglong, words=list)
    cpdef list _words32(self, Py_ssize_t n)

@cython.locals(words=list)
cpdef list _words(object n)
@cython.locals(h=cython.ulonglong, v=cython.ulonglong, i=Py_ssize_t, i_src=Py_ssize_t, i_dst=Py_ssize_t,
               mixer="unsigned long long[4]")
cpdef list _mixed(list entropy)
@cython.locals(v=cython.ulonglong, r=cython.ulonglong)
cpdef unsigned long long _mix_in(unsigned long long x, unsigned long long value, unsigned long long h)

@cython.locals(child=ChildSeed)
cpdef list state_words(object seed, Py_ssize_t n_words)
