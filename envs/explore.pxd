# C types of envs/explore.py for the compiled core (setup.py, envs/_core.py):
# the two draws of epsilon-greedy exploration through NumPy's bit-generator C
# interface (numpy/random/bitgen.h, the struct its capsule points to), with
# NumPy's own algorithms, so the stream is the Generator's.
from cpython.pycapsule cimport PyCapsule_GetPointer

cdef extern from *:
    """
    #include <stdint.h>
    typedef struct {
        void *state;
        uint64_t (*next_uint64)(void *st);
        uint32_t (*next_uint32)(void *st);
        double (*next_double)(void *st);
        uint64_t (*next_raw)(void *st);
    } falcon_bitgen_t;

    /* Generator.random(): random_standard_uniform = next_double */
    static double falcon_uniform(void *bg) {
        falcon_bitgen_t *b = (falcon_bitgen_t *)bg;
        return b->next_double(b->state);
    }

    /* Generator.integers(n), 1 <= n <= 2**32 - 1: random_bounded_uint64_fill
       with rng = n - 1 (no draw when rng == 0), Lemire's rejection method on
       32-bit draws (buffered_bounded_lemire_uint32) */
    static long long falcon_below(void *bg, unsigned long long n) {
        falcon_bitgen_t *b = (falcon_bitgen_t *)bg;
        uint32_t rng = (uint32_t)(n - 1), rng_excl = (uint32_t)n, leftover;
        uint64_t m;
        if (rng == 0) return 0;
        m = ((uint64_t)b->next_uint32(b->state)) * rng_excl;
        leftover = (uint32_t)(m & 0xFFFFFFFFUL);
        if (leftover < rng_excl) {
            const uint32_t threshold = (UINT32_MAX - rng) % rng_excl;
            while (leftover < threshold) {
                m = ((uint64_t)b->next_uint32(b->state)) * rng_excl;
                leftover = (uint32_t)(m & 0xFFFFFFFFUL);
            }
        }
        return (long long)(m >> 32);
    }
    """
    double falcon_uniform(void *bg)
    long long falcon_below(void *bg, unsigned long long n)

cdef bint COMPILED

cdef class EpsilonDraws:
    cdef public object rng
    cdef void *_bitgen

    cpdef long long explore(self, double epsilon, long long n) except? -2
