"""Speed benchmarks (not part of the installed package): run from the
repository root, ``python -m benchmarks.<name>`` or ``python benchmarks/<name>.py``."""
