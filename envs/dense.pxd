# C types of envs/dense.py for the compiled core (setup.py, envs/_core.py):
# the layers run as float32 C loops over the flat parameter buffer.
cimport cython

# one layer's loops (envs/dense_layer.h)
cdef extern from "dense_layer.h":
    void falcon_dense_layer(const float *x, Py_ssize_t n, const float *w, const float *b,
                            Py_ssize_t m, float *y, int relu) nogil

cdef class DenseForward:
    cdef public Py_ssize_t n_layers, n_in, n_out
    cdef public list _ref_pairs
    cdef public bint normalises
    cdef public object offset, inv_scale, _scratch
    cdef float[::1] _params, _buf
    cdef int[::1] _sizes
    cdef Py_ssize_t _width

    cpdef q_values(self, x)
    cpdef long long argmax(self, x) except? -1
    cpdef long long argmax_row(self, const float[::1] x) except? -1
    cpdef _input(self, x)
    @cython.locals(p=cython.float[::1], sizes=cython.int[::1], buf=cython.float[::1], off=cython.float[::1], inv=cython.float[::1],
                   width=Py_ssize_t, n=Py_ssize_t, m=Py_ssize_t, i=Py_ssize_t,
                   j=Py_ssize_t, k=Py_ssize_t, src=Py_ssize_t, dst=Py_ssize_t,
                   layer=Py_ssize_t, last=Py_ssize_t)
    cpdef Py_ssize_t _forward(self, const float[::1] x) except? -1
    @cython.locals(buf=cython.float[::1], best=Py_ssize_t, j=Py_ssize_t, v=cython.float)
    cpdef long long _argmax_at(self, Py_ssize_t start) except? -1
