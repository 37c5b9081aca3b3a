# C build of envs/plain.py: no C types; compiled for its Python overhead
# (copy_plain a C function, so that its recursion makes C calls).

cpdef object copy_plain(object value)
