"""``python -m falcon.reproduce``: every seed figure beside ours, in one report.

* :mod:`falcon.reproduce.catalog`: the experiments and their commands per scale;
* :mod:`falcon.reproduce.runs`: run one as its own MLflow run, or reuse it;
* :mod:`falcon.reproduce.claims` (with ``claims_srpt``, ``claims_other`` and
  the :class:`~falcon.reproduce.verdict.Verdict` of ``verdict``): our numbers from each
  run's JSON, the verdict and its reason for each claim of
  ``data/seed_claims.yaml`` (the paper's numbers, :mod:`falcon.seeds`);
* :mod:`falcon.reproduce.render`: ``report.md`` and ``report.html``;
* :mod:`falcon.reproduce.__main__`: the command.
"""
