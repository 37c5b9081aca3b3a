"""FALCON: learning-based multipath scheduling, and the framework's entry points.

``python -m falcon.train`` trains the configured agent(s) and evaluates them;
``python -m falcon.evaluate`` compares schedulers on the same scenarios,
apps and seeds. Both are configured with Hydra (``configs/``) and tracked
with MLflow.
"""

__version__ = "0.1.0"
