"""FALCON's online experiments (paper Sec. VI-VIII), one job each, run as
``python -m falcon.train experiment=<name>``:

* :mod:`falcon.experiments.convergence`: relative score vs online packets
  after a change (Fig. 3, Fig. 4);
* :mod:`falcon.experiments.stress`: relative score per change interval
  (Fig. 5);
* :mod:`falcon.experiments.k_impact`: relative score vs the fine-tuning
  steps K, and the minimum K per number of sub-ranges (Fig. 8, Fig. 9);

and, the same way, the learnability suite
(:mod:`falcon.experiments.learnability`): on a fixed list of two-path conditions, the rule-based schedulers, the best fixed
traffic split and learners trained per condition, scored against the best
rule of each condition.

Shared pieces (relative score, binning, schedulers, the DQN-Off reference,
tracking and plots) are in :mod:`falcon.experiments.common`.
"""
