"""Choosing one network among trained candidates by validation episodes.

DQN training is unstable in a way that matters for a scheduler: two networks
trained on the same log from different initial weights, or one network a
thousand gradient steps apart, can differ by 30 % in download time, because
the greedy policy follows the *sign* of small Q-value differences (send now
or wait) that the TD updates keep moving. Measured on the learnability
suite's 50 Mbit/s 10 ms + 5 Mbit/s 150 ms pair: 48 candidates (8 networks x 6
checkpoints) of one DQN-Off training range from 0.70x to 5.2x the best rule's
download time. Rather than deploy whichever network training happened to end
on, :func:`successive_halving` validates the candidates on episodes of the
training conditions and keeps the best (successive halving, Jamieson &
Talwalkar 2016): in each round every surviving candidate runs the same next
validation episodes (common random numbers: candidates are compared on the
same draws of loss, RTT noise and trace offsets) and the best third
survives, until one is left. Each round spends an equal share of the
episode budget, so the last few candidates are compared on many episodes
while the clearly poor ones cost one each. The validation seeds are disjoint from the logging
seeds; the candidates never learn from these episodes.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable

from envs.errors import ConfigError

#: the fraction of candidates kept after each round is 1 / ETA
ETA = 3
#: what ranks the candidates: their mean cost, their median cost, or their
#: interquartile mean (the mean of the middle half, :func:`interquartile_mean`)
STATISTICS = ("mean", "median", "iqm")


def interquartile_mean(values) -> float:
    """The mean of the middle half of ``values``: ``floor(n / 4)`` dropped at
    each end of the sorted values (the mean below 4 values). A median-like
    rank that averages half the episodes rather than reading one or two, so
    it moves less with which few seeds hit a rare event (Agarwal et al.,
    "Deep Reinforcement Learning at the Edge of the Statistical Precipice",
    NeurIPS 2021, recommend it for the same reason)."""
    xs = sorted(float(v) for v in values)
    if not xs:
        raise ConfigError("interquartile_mean: no values")
    cut = len(xs) // 4
    middle = xs[cut : len(xs) - cut]
    return sum(middle) / len(middle)


def download_cost(metrics) -> float:
    """Validation cost of one episode: the log of its download time [s]; an
    episode cut at its time limit (download time NaN) counts with its
    completion time extrapolated at its goodput, ``elapsed x size /
    delivered``, so that a candidate that stalls a slow task is not ranked
    by a NaN (which orders arbitrarily) and a faster one still wins."""
    t = float(metrics["download_time_s"])
    if not math.isfinite(t):
        elapsed = float(metrics["elapsed_s"])
        delivered = float(metrics["goodput_mbps"]) * elapsed * 1e6 / 8.0
        t = elapsed * float(metrics["app_bytes"]) / max(delivered, 1.0)
    return math.log(max(t, 1e-9))


def halving_rounds(n_candidates: int, eta: int = ETA) -> int:
    """Rounds until one of ``n_candidates`` is left when a ``1/eta`` share survives each."""
    rounds, n = 0, int(n_candidates)
    while n > 1:
        n = math.ceil(n / eta)
        rounds += 1
    return rounds


def successive_halving(
    n_candidates: int,
    evaluate: Callable[[int, int], float],
    budget: int,
    eta: int = ETA,
    progress: Callable[[str], None] | None = None,
    statistic: str = "mean",
) -> tuple[int, list[dict]]:
    """The best candidate by its mean (median, interquartile mean) cost on validation episodes.

    Args:
        n_candidates: candidates ``0 .. n-1``.
        evaluate: ``evaluate(candidate, k)`` -> the cost (e.g. log download
            time) of the ``k``-th validation episode; the same ``k`` means the
            same episode (seed, scenario) for every candidate: common random numbers.
        budget: validation episodes in all, spent in equal shares over the
            rounds; within a round every surviving candidate runs the same
            next episodes, so the survivors of later rounds are compared on
            ever more episodes (the share of ``eta`` more candidates).
        eta: keep the best ``ceil(n / eta)`` after each round.
        progress: called with one line per round.
        statistic: :data:`STATISTICS`: what ranks the candidates, the mean
            of their costs, their median (the median ranks as a suite that
            reports median download times does; the mean also weighs the
            tail) or their interquartile mean (between the two).

    Returns ``(index, record)``: per candidate ``{"candidate", "episodes",
    "mean_cost", "cost"}`` over the episodes it ran (``cost``: the ranking
    ``statistic``). Ties go to the higher index (the
    later checkpoint when candidates are listed in training order).
    """
    n = int(n_candidates)
    if n < 1:
        raise ConfigError("selection: no candidate to choose from")
    if statistic not in STATISTICS:
        raise ConfigError(f"selection: unknown statistic {statistic!r}; known: {list(STATISTICS)}")
    if int(eta) < 2:
        raise ConfigError(f"selection: eta must be >= 2, got {eta!r}")
    rounds = halving_rounds(n, eta)
    if rounds and int(budget) < n:
        raise ConfigError(
            f"validation_episodes: {budget!r} cannot run each of the {n} candidates "
            f"once (models x checkpoints); give at least {n}"
        )
    costs: list[list[float]] = [[] for _ in range(n)]
    alive = list(range(n))

    def mean(i: int) -> float:
        return sum(costs[i]) / len(costs[i]) if costs[i] else math.inf

    def rank(i: int) -> float:
        if statistic == "mean" or not costs[i]:
            return mean(i)
        if statistic == "iqm":
            return interquartile_mean(costs[i])
        return statistics.median(costs[i])

    left = int(budget)
    for r in range(rounds):
        share = left // (rounds - r)
        per = max(1, share // len(alive))
        done = len(costs[alive[0]])
        for i in alive:
            costs[i].extend(float(evaluate(i, done + k)) for k in range(per))
        left -= per * len(alive)
        alive.sort(key=lambda i: (rank(i), -i))
        if progress is not None:
            progress(
                f"round {r + 1}/{rounds}: {len(alive)} candidates x {per} episode(s), "
                f"{done + per} each so far; best {statistic} cost {rank(alive[0]):.4g}"
            )
        alive = alive[: max(1, math.ceil(len(alive) / eta))]
    best = alive[0]
    record = [
        {
            "candidate": i,
            "episodes": len(costs[i]),
            "mean_cost": mean(i) if costs[i] else None,
            "cost": rank(i) if costs[i] else None,
        }
        for i in range(n)
    ]
    return best, record


__all__ = ["successive_halving", "halving_rounds", "interquartile_mean", "ETA", "STATISTICS"]
