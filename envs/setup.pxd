# C build of envs/setup.py: no C types; compiled for its Python overhead.
