/* The path models' random draws for the compiled build of envs/link.py: one draw at a
 * time through the C interface NumPy publishes for compiled extensions (the struct a
 * BitGenerator's capsule points to, numpy/random/bitgen.h) with NumPy's own algorithms
 * (numpy/random/distributions.h, the npyrandom library NumPy ships for this), so the
 * stream is the Generator's: Generator.gamma(shape, scale, n) is n calls of random_gamma,
 * Generator.random(n) n calls of next_double, in order. */
#ifndef FALCON_LINK_DRAWS_H
#define FALCON_LINK_DRAWS_H

#include "numpy/random/distributions.h"

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
