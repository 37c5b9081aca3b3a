"""JUMP, LEAP and FLIP: block schedules from per-path lateness probabilities
(Chiariotti et al., IEEE/ACM ToN 2021, §IV). Pure functions of NumPy arrays.

``lam[i][j - 1]`` is ``lambda_i(j)``: the probability that the ``j``-th packet
of the burst on path ``i`` misses the deadline; non-decreasing in ``j``
(FIFO), ``lambda_i(0) = 0``.

The failure probability of a schedule ``s`` is exact: per-path delivery is
FIFO, so path ``i`` delivers ``d`` packets on time with probability
``lambda_i(d + 1) - lambda_i(d)`` for ``d < s_i`` and ``1 - lambda_i(s_i)``
for ``d = s_i``; paths are independent, so the distribution of the total is
the convolution, and ``P_e = P(sum d_i < k)``. (The paper's printed eq. 5
multiplies ``1 - lambda(d)`` by ``lambda(d + 1)``, which does not sum to 1.)

JUMP's greedy order (add the packet with the smallest next lateness, a near
tie going to the least-used path) does not depend on ``P_e``, and ``P_e`` only
falls as packets are added, so the smallest schedule meeting the target is
found by a binary search along that order: ``O(log N)`` convolutions instead
of one per added packet, the same schedule.
"""

from __future__ import annotations

import math

import numpy as np


def delivered_distribution(lam: np.ndarray, s: int) -> np.ndarray:
    """P(d packets of ``s`` arrive on time), d = 0..s."""
    if s <= 0:
        return np.ones(1)
    lam_s = np.concatenate(([0.0], np.asarray(lam[:s], dtype=float)))
    p = np.empty(s + 1)
    p[:s] = np.diff(lam_s)
    p[s] = 1.0 - lam_s[s]
    return np.clip(p, 0.0, 1.0)


def failure_probability(lams, counts, k: int) -> float:
    """P_e(s, k): probability that fewer than ``k`` packets arrive on time."""
    if k <= 0:
        return 0.0
    if sum(counts) < k:
        return 1.0
    total = np.ones(1)
    for lam, s in zip(lams, counts):
        total = np.convolve(total, delivered_distribution(lam, s))
    return float(min(1.0, max(0.0, total[:k].sum())))


def greedy_order(lams, caps, start, eps: float = 1e-3) -> list[tuple[int, ...]]:
    """The schedules JUMP visits from ``start``: element ``n`` is the schedule
    after ``n`` additions. Each addition goes to the path with the smallest
    ``lambda_i(s_i + 1)`` among those below their cap; a difference under
    ``eps`` goes to the least-used path (then the lower index)."""
    s = list(start)
    out = [tuple(s)]
    while True:
        best = -1
        for i, lam in enumerate(lams):
            if s[i] >= caps[i]:
                continue
            if best < 0:
                best = i
                continue
            li, lb = lam[s[i]], lams[best][s[best]]
            if li < lb - eps or (abs(li - lb) < eps and s[i] < s[best]):
                best = i
        if best < 0:
            return out
        s[best] += 1
        out.append(tuple(s))


def jump(lams, k: int, p_thr: float, caps, min_per_path: int = 10, eps: float = 1e-3):
    """The smallest schedule with ``P_e <= 1 - p_thr`` (JUMP).

    ``caps[i]``: the most packets path ``i`` may take (at most ``k``: the
    first ``k`` on one path already decode the block). Every path starts
    with ``min(min_per_path, cap)`` packets (keeps its estimator fed).
    Returns ``(counts, P_e, feasible)``; infeasible: the maximal schedule.
    """
    target = 1.0 - p_thr
    caps = [max(0, min(int(c), k)) for c in caps]
    start = [min(min_per_path, c) for c in caps]
    order = greedy_order(lams, caps, start, eps)
    last = order[-1]
    pe_last = failure_probability(lams, last, k)
    if pe_last > target:
        return last, pe_last, False
    lo, hi = 0, len(order) - 1  # P_e(order[hi]) <= target
    pe_hi = pe_last
    while lo < hi:
        mid = (lo + hi) // 2
        pe = failure_probability(lams, order[mid], k)
        if pe <= target:
            hi, pe_hi = mid, pe
        else:
            lo = mid + 1
    return order[hi], pe_hi, True


def leap(lams, p_thr: float, caps, k_max: int, min_per_path: int = 10, eps: float = 1e-3):
    """The largest block ``k <= k_max`` JUMP can serve (LEAP: binary search,
    ``P_e`` being monotone in ``k``). Returns ``(k, counts, P_e)``; ``k = 0``
    if no block can be served (the counts are then the probing minimum)."""
    lo, hi = 0, max(0, int(k_max))
    best = None
    while lo < hi:
        mid = (lo + hi + 1) // 2
        counts, pe, ok = jump(lams, mid, p_thr, caps, min_per_path, eps)
        if ok:
            lo, best = mid, (counts, pe)
        else:
            hi = mid - 1
    if best is None:
        return 0, tuple(min(min_per_path, int(c)) for c in caps), 1.0
    return lo, best[0], best[1]


def flip(
    lams_at,
    k: int,
    p_thr: float,
    caps_at,
    t_max: float = 0.2,
    quantum: float = 0.001,
    min_per_path: int = 10,
    eps: float = 1e-3,
):
    """The shortest deadline ``T <= t_max`` [s] (on a ``quantum`` grid) JUMP
    can meet for ``k`` packets (FLIP: binary search, lateness falling with
    ``T``). ``lams_at(T)`` and ``caps_at(T)`` give the lateness vectors and
    caps for deadline ``T``. Returns ``(T, counts, P_e, feasible)``."""
    n = max(1, int(round(t_max / quantum)))
    lo, hi = 1, n
    counts, pe, ok = jump(lams_at(hi * quantum), k, p_thr, caps_at(hi * quantum), min_per_path, eps)
    if not ok:
        return t_max, counts, pe, False
    best = (hi * quantum, counts, pe)
    while lo < hi:
        mid = (lo + hi) // 2
        T = mid * quantum
        c, p, good = jump(lams_at(T), k, p_thr, caps_at(T), min_per_path, eps)
        if good:
            hi, best = mid, (T, c, p)
        else:
            lo = mid + 1
    return best[0], best[1], best[2], True


def path_cap(rate: float, deadline_s: float, one_way_s: float, packet_bytes: int) -> int:
    """``S_i = mu_i (T - tau_min,i / 2) / L`` packets: what the path can serve
    before the deadline at its mean rate (the one-way form, ours: the paper's
    printed ``T - tau_min`` contradicts its own results)."""
    w = deadline_s - one_way_s
    if w <= 0.0 or rate <= 0.0:
        return 0
    return int(math.floor(rate * w / packet_bytes))


__all__ = [
    "delivered_distribution",
    "failure_probability",
    "flip",
    "greedy_order",
    "jump",
    "leap",
    "path_cap",
]
