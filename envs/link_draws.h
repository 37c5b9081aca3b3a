/* The path models' random draws for the compiled build of envs/link.py: one draw at a
 * time through the C interface NumPy publishes for compiled extensions (the bitgen_t
 * struct a BitGenerator's capsule points to, numpy/random/bitgen.h) with NumPy's own
 * algorithms (numpy/random/distributions.h, the npyrandom library NumPy ships for this),
 * so the stream is the Generator's: Generator.gamma(shape, scale, n) is n calls of
 * random_gamma, Generator.random(n) n calls of next_double, in order.
 *
 * falcon_stream_t is a PCG64 bit generator of its own, with NumPy's algorithm and
 * seeding (numpy/random/src/pcg64: PCG XSL-RR 128/64, state and increment from a seed
 * sequence's four 64-bit state words), behind the same bitgen_t interface: a path model
 * seeded from a seed sequence draws the numbers numpy.random.Generator(PCG64(seq)) would,
 * without building the PCG64 and Generator objects at every episode's set-up (Python-level
 * work: 2.8 % of a 2 MB minRTT episode's CPU time, perf). tests/test_draws.py compares
 * the streams. */
#ifndef FALCON_LINK_DRAWS_H
#define FALCON_LINK_DRAWS_H

#include <stdint.h>
#include "numpy/random/distributions.h"

#ifndef __SIZEOF_INT128__
#error "envs/link_draws.h needs a compiler with 128-bit integers (GCC or Clang on a 64-bit target)"
#endif

typedef __uint128_t falcon_u128;

typedef struct {
    falcon_u128 state, inc;
    int has_uint32;
    uint32_t uinteger;
} falcon_pcg64_t;

typedef struct {
    falcon_pcg64_t pcg;
    bitgen_t bitgen;
} falcon_stream_t;

/* PCG_DEFAULT_MULTIPLIER_128 */
#define FALCON_PCG_MULT (((falcon_u128)2549297995355413924ULL << 64) | 4865540595714422341ULL)

static inline void falcon_pcg64_step(falcon_pcg64_t *r) {
    r->state = r->state * FALCON_PCG_MULT + r->inc;
}

/* pcg_setseq_128_xsl_rr_64_random_r: step, then the XSL-RR output of the new state */
static inline uint64_t falcon_pcg64_next64(void *st) {
    falcon_pcg64_t *r = (falcon_pcg64_t *)st;
    uint64_t x, rot;
    falcon_pcg64_step(r);
    x = (uint64_t)(r->state >> 64) ^ (uint64_t)r->state;
    rot = (uint64_t)(r->state >> 122);
    return (x >> rot) | (x << ((-rot) & 63));
}

/* pcg64_next32: the two halves of one 64-bit draw, low half first */
static inline uint32_t falcon_pcg64_next32(void *st) {
    falcon_pcg64_t *r = (falcon_pcg64_t *)st;
    uint64_t next;
    if (r->has_uint32) {
        r->has_uint32 = 0;
        return r->uinteger;
    }
    next = falcon_pcg64_next64(st);
    r->has_uint32 = 1;
    r->uinteger = (uint32_t)(next >> 32);
    return (uint32_t)(next & 0xffffffffULL);
}

static inline double falcon_pcg64_next_double(void *st) {
    return (double)(falcon_pcg64_next64(st) >> 11) * (1.0 / 9007199254740992.0);
}

/* PCG64(seq): pcg64_set_seed with seed = w0 w1 and increment = w2 w3 (the first word the
 * high half), i.e. pcg_setseq_128_srandom_r; the bitgen_t's state is the PCG state */
static inline void *falcon_stream_seed(falcon_stream_t *s, uint64_t w0, uint64_t w1,
                                       uint64_t w2, uint64_t w3) {
    falcon_pcg64_t *r = &s->pcg;
    r->state = 0;
    r->inc = ((((falcon_u128)w2 << 64) | w3) << 1) | 1;
    falcon_pcg64_step(r);
    r->state += ((falcon_u128)w0 << 64) | w1;
    falcon_pcg64_step(r);
    r->has_uint32 = 0;
    r->uinteger = 0;
    s->bitgen.state = r;
    s->bitgen.next_uint64 = falcon_pcg64_next64;
    s->bitgen.next_uint32 = falcon_pcg64_next32;
    s->bitgen.next_double = falcon_pcg64_next_double;
    s->bitgen.next_raw = falcon_pcg64_next64;
    return &s->bitgen;
}

/* Generator.gamma(shape, scale): one draw */
static inline double falcon_gamma(void *bg, double shape, double scale) {
    return random_gamma((bitgen_t *)bg, shape, scale);
}

/* Generator.random(): random_standard_uniform = next_double */
static inline double falcon_next_double(void *bg) {
    bitgen_t *b = (bitgen_t *)bg;
    return b->next_double(b->state);
}

#endif
