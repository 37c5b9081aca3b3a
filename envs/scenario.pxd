# C build of envs/scenario.py: no C types; compiled for its Python overhead.
