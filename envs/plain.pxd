# C build of envs/plain.py: no C types; compiled for its Python overhead.
