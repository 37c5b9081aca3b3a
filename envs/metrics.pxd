# C build of envs/metrics.py: no C types; compiled for its Python overhead.
