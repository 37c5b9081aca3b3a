"""falcon.bench: the learnability benchmark for schedulers from outside the project.

    python -m falcon.bench run 'agent_list=[my_scheduler]'          # bench.json in results/bench/<time>-<run id>/
    python -m falcon.bench leaderboard results/bench/*/bench.json -o board/   # board/index.html

:mod:`falcon.bench.definition` (the benchmark and its id),
:mod:`falcon.bench.run` (running it), :mod:`falcon.bench.results` (the results
file), :mod:`falcon.bench.leaderboard` and :mod:`falcon.bench.page` (the static
leaderboard page). User guide: docs/guide/benchmark.md.
"""
