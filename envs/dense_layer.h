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
#include <string.h>

/* ifunc, which target_clones needs, is glibc's (Python.h, included first, defines __GLIBC__) */
#if defined(__x86_64__) && defined(__linux__) && defined(__GLIBC__) && defined(__GNUC__)
#define FALCON_DENSE_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define FALCON_DENSE_CLONES
#endif

/* Outputs j0 <= j < m, loop by loop: the sums in y, in memory between inputs. */
static inline void falcon_dense_span(const float *restrict x, Py_ssize_t n,
                                     const float *restrict w, const float *restrict b,
                                     Py_ssize_t m, Py_ssize_t j0, float *restrict y, int relu) {
    Py_ssize_t i, j;
    float xi = x[0];
    for (j = j0; j < m; j++) y[j] = xi * w[j];
    for (i = 1; i < n; i++) {
        const float *restrict row = w + i * m;
        xi = x[i];
        for (j = j0; j < m; j++) y[j] = y[j] + xi * row[j];
    }
    for (j = j0; j < m; j++) {
        float v = y[j] + b[j];
        if (relu && v < 0.0f) v = 0.0f;
        y[j] = v;
    }
}

#if defined(__GNUC__)
/* Blocks of 64 outputs whose sums stay in eight 8-lane registers across all the inputs
 * (the loop above stores and reloads every sum at each input), then blocks of 8, then two
 * outputs in two scalar registers: the same operations on each output, in the same order. A scalar times a vector multiplies every lane by it
 * (GCC's and Clang's vector extensions), no arithmetic makes the broadcast (-0.0 stays). */
typedef float falcon_v8f __attribute__((vector_size(32)));
typedef int falcon_v8i __attribute__((vector_size(32)));

/* (macros, not functions: a function taking or returning a vector changes its ABI with AVX) */
#define FALCON_LOAD8(v, p) memcpy(&(v), (p), sizeof(falcon_v8f))
/* y[0:8] = v + bias, then +0.0 where it is below zero if relu (NaN and -0.0 pass) */
#define FALCON_STORE8(p, v, bias, relu)                                                  \
    ((v) = (v) + (bias),                                                                 \
     (v) = (relu) ? (falcon_v8f)((falcon_v8i)(v) & ~(falcon_v8i)((v) < (falcon_v8f){0})) : (v), \
     memcpy((p), &(v), sizeof(falcon_v8f)))

/* the sums of outputs j + 8k ... j + 8k + 7: the first input's products, then each next one's added */
#define FALCON_FIRST8(k) (FALCON_LOAD8(r, row + 8 * (k)), s##k = xi * r)
#define FALCON_NEXT8(k) (FALCON_LOAD8(r, row + 8 * (k)), s##k = s##k + xi * r)
#define FALCON_OUT8(k) (FALCON_LOAD8(r, b + j + 8 * (k)), FALCON_STORE8(y + j + 8 * (k), s##k, r, relu))

FALCON_DENSE_CLONES static void falcon_dense_layer(const float *restrict x, Py_ssize_t n,
                                                   const float *restrict w, const float *restrict b,
                                                   Py_ssize_t m, float *restrict y, int relu) {
    Py_ssize_t i, j = 0;
    const float *restrict row;
    float xi;
    falcon_v8f r, s0, s1, s2, s3, s4, s5, s6, s7;
    for (; j + 64 <= m; j += 64) {  /* eight registers of sums: the inputs read once per 64 outputs */
        row = w + j;
        xi = x[0];
        FALCON_FIRST8(0), FALCON_FIRST8(1), FALCON_FIRST8(2), FALCON_FIRST8(3);
        FALCON_FIRST8(4), FALCON_FIRST8(5), FALCON_FIRST8(6), FALCON_FIRST8(7);
        for (i = 1; i < n; i++) {
            row = w + i * m + j;
            xi = x[i];
            FALCON_NEXT8(0), FALCON_NEXT8(1), FALCON_NEXT8(2), FALCON_NEXT8(3);
            FALCON_NEXT8(4), FALCON_NEXT8(5), FALCON_NEXT8(6), FALCON_NEXT8(7);
        }
        FALCON_OUT8(0), FALCON_OUT8(1), FALCON_OUT8(2), FALCON_OUT8(3);
        FALCON_OUT8(4), FALCON_OUT8(5), FALCON_OUT8(6), FALCON_OUT8(7);
    }
    for (; j + 8 <= m; j += 8) {  /* then one register at a time */
        row = w + j;
        xi = x[0];
        FALCON_FIRST8(0);
        for (i = 1; i < n; i++) {
            row = w + i * m + j;
            xi = x[i];
            FALCON_NEXT8(0);
        }
        FALCON_OUT8(0);
    }
    if (m - j == 2) {  /* two outputs (two paths' Q-values): both sums in registers */
        float t0 = x[0] * w[j], t1 = x[0] * w[j + 1], v0, v1;
        for (i = 1; i < n; i++) {
            row = w + i * m + j;
            t0 = t0 + x[i] * row[0];
            t1 = t1 + x[i] * row[1];
        }
        v0 = t0 + b[j];
        v1 = t1 + b[j + 1];
        if (relu && v0 < 0.0f) v0 = 0.0f;
        if (relu && v1 < 0.0f) v1 = 0.0f;
        y[j] = v0;
        y[j + 1] = v1;
    } else if (j < m) {
        falcon_dense_span(x, n, w, b, m, j, y, relu);
    }
}
#else
static void falcon_dense_layer(const float *restrict x, Py_ssize_t n,
                               const float *restrict w, const float *restrict b,
                               Py_ssize_t m, float *restrict y, int relu) {
    falcon_dense_span(x, n, w, b, m, 0, y, relu);
}
#endif

#endif
