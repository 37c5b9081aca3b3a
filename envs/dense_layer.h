/* One dense layer of envs/dense.py, for the compiled build: y = x W + b, then ReLU.
 *
 * The order is the module's (its docstring): y_j = x_0 w_0j + x_1 w_1j + ... summed
 * left to right, then + b_j, then 0 where y_j < 0 if `relu` (NaN and -0.0 pass). The
 * loops run over the outputs j innermost, so the compiler vectorises across outputs:
 * each lane is one output's sum, in the same order as a scalar loop, bit for bit
 * (setup.py compiles without fused multiply-add contraction).
 *
 * On x86-64 Linux (glibc) with GCC or Clang the function is compiled twice, for AVX2 and for
 * the baseline instruction set, and the loader picks the one the CPU runs
 * (target_clones): eight lanes instead of four where AVX2 is there, while a wheel
 * still runs on any x86-64. `x` and `y` are distinct halves of the scratch buffer,
 * `w` and `b` the parameters: no two of them overlap (restrict). */
#ifndef FALCON_DENSE_LAYER_H
#define FALCON_DENSE_LAYER_H

#include <stddef.h>

/* ifunc, which target_clones needs, is glibc's (Python.h, included first, defines __GLIBC__) */
#if defined(__x86_64__) && defined(__linux__) && defined(__GLIBC__) && defined(__GNUC__)
#define FALCON_DENSE_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define FALCON_DENSE_CLONES
#endif

FALCON_DENSE_CLONES static void falcon_dense_layer(const float *restrict x, Py_ssize_t n,
                                                   const float *restrict w, const float *restrict b,
                                                   Py_ssize_t m, float *restrict y, int relu) {
    Py_ssize_t i, j;
    float xi = x[0];
    for (j = 0; j < m; j++) y[j] = xi * w[j];
    for (i = 1; i < n; i++) {
        const float *restrict row = w + i * m;
        xi = x[i];
        for (j = 0; j < m; j++) y[j] = y[j] + xi * row[j];
    }
    for (j = 0; j < m; j++) {
        float v = y[j] + b[j];
        if (relu && v < 0.0f) v = 0.0f;
        y[j] = v;
    }
}

#endif
