# C build of envs/emulation.py: no C types; compiled for its Python overhead.
