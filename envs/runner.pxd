# C build of envs/runner.py: no C types; compiled for its Python overhead.
