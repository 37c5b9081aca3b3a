"""How much of the per-download best mode can the transport's view predict?

The references of the learnability suite choose a policy per download: the
hindsight oracle knows the download's outcome under every policy, the
trace-aware oracle knows the download's network (its trace segments). A
scheduler knows neither: it sees what the transport measured so far. This
module measures how much of the per-download choice that view supports, on
one condition, for the modes of the mode MDP (:mod:`baselines.modes`):

1. **Branches.** For each of ``seeds`` downloads, the mode ``prefix`` runs
   for ``epochs`` decision epochs, then every mode is held to the end, each
   in its own download from the same seed (:class:`Branch`). The emulation is
   deterministic given the seed and the decisions, so every branch of a seed
   leaves the prefix in the very same state: the outcome matrix ``times[seed,
   mode]`` is what each mode would have given from that state, and
   ``states[seed]`` is what the transport saw there (the mode state,
   :mod:`baselines.modes.features`).
2. **Three choices per download**, scored by the median download time over
   the seeds:

   * *best held*: the one mode with the lowest median (what a policy that
     knows the condition, but not the download, holds);
   * *per-download best*: each seed's fastest mode (hindsight: it also knows
     the download's delay and loss draws);
   * *predicted*: each seed's mode with the lowest predicted log download
     time, the predictor fitted on the other seeds only (leave one out):
     ridge regression of the log times on the standardised state
     (``ridge``: its penalty) and the mean of the ``neighbours`` nearest
     seeds in the standardised state.

The share of the gap (best held - per-download best) that a prediction
captures, ``(best held - predicted) / (best held - per-download best)``,
is what the view at that epoch can give a learner that has as many
downloads of the condition as the study: a Q-network fitted to behaviour
data (:class:`baselines.modes.DQNModes`) estimates the same function of the
same state.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from baselines.modes.experience import Branch, log_episode
from baselines.modes.probe import knn_log_times, standardisation
from envs.errors import ConfigError

#: a gap (best held - per-download best) below this share of the best held
#: median has no share captured (a ratio of two tiny differences)
MIN_GAP = 0.005


def branch_outcomes(
    scenario, app, modes: Sequence, prefix: int, epochs: int, seeds: Sequence[int]
) -> dict:
    """``{"times": [n_seeds, n_modes] download times [s], "states": [n_seeds,
    n_inputs], "ended_in_prefix": int}`` (module docstring, step 1). A
    download that ends within the prefix has one outcome for every mode; its
    state is its last one. A download cut at the scenario's time limit
    counts the limit (a lower bound)."""
    if not 0 <= int(prefix) < len(modes):
        raise ConfigError(f"information: prefix mode {prefix} out of range (0..{len(modes) - 1})")
    if int(epochs) < 1:
        raise ConfigError(f"information: epochs: expected a whole number >= 1, got {epochs!r}")
    times = np.zeros((len(seeds), len(modes)))
    states, ended = [], 0
    for i, seed in enumerate(seeds):
        for m in range(len(modes)):
            e = log_episode(scenario, app, modes, Branch(int(prefix), int(epochs), m), int(seed))
            times[i, m] = e.download_time_s
            if m == 0:
                if len(e.states) <= int(epochs):
                    ended += 1
                states.append(e.states[min(int(epochs), len(e.states) - 1)])
    return {"times": times, "states": np.stack(states).astype(np.float64), "ended_in_prefix": ended}


def predicted_choices(
    states: np.ndarray, times: np.ndarray, method: str, ridge: float = 3.0, neighbours: int = 10
) -> np.ndarray:
    """Per seed, the mode with the lowest log download time predicted from
    its state by ``method`` (``"ridge"`` | ``"knn"``) fitted on the other
    seeds only (module docstring); returns the mode indices."""
    n = len(times)
    if n < 3:
        raise ConfigError(f"information: needs at least 3 seeds to leave one out, got {n}")
    logs = np.log(np.maximum(times, 1e-9))
    out = np.zeros(n, dtype=np.int64)
    for i in range(n):
        rest = np.array([j for j in range(n) if j != i])
        mean, scale = standardisation(states[rest])
        z_rest = (states[rest] - mean) / scale
        z_i = (states[i] - mean) / scale
        if method == "ridge":
            x = np.c_[z_rest, np.ones(len(rest))]
            penalty = float(ridge) * np.eye(x.shape[1])
            penalty[-1, -1] = 0.0  # the intercept is not shrunk
            w = np.linalg.solve(x.T @ x + penalty, x.T @ logs[rest])
            pred = np.r_[z_i, 1.0] @ w
        elif method == "knn":
            pred = knn_log_times(z_rest, logs[rest], z_i, neighbours)
        else:
            raise ConfigError(f"information: unknown predictor {method!r} (known: ridge, knn)")
        out[i] = int(np.argmin(pred))
    return out


def summarise(
    times: np.ndarray, states: np.ndarray, ridge: float = 3.0, neighbours: int = 10
) -> dict:
    """Medians [s] of the three choices (module docstring, step 2), per mode
    the median held time, and per predictor the share of the gap captured
    (None where the gap is below :data:`MIN_GAP` of the best held median)."""
    held = np.median(times, axis=0)
    best_mode = int(np.argmin(held))
    best_held = float(held[best_mode])
    per_download = float(np.median(times.min(axis=1)))
    rows = np.arange(len(times))
    out = {
        "seeds": int(len(times)),
        "mode_medians_s": [float(h) for h in held],
        "best_held": {"mode": best_mode, "median_s": best_held},
        "per_download_best": {"median_s": per_download},
        "predicted": {},
    }
    gap = best_held - per_download
    has_gap = math.isfinite(gap) and gap > MIN_GAP * best_held
    for method in ("ridge", "knn"):
        chosen = predicted_choices(states, times, method, ridge, neighbours)
        median = float(np.median(times[rows, chosen]))
        out["predicted"][method] = {
            "median_s": median,
            "captured": (best_held - median) / gap if has_gap else None,
            "modes": [int(c) for c in chosen],
        }
    return out


__all__ = ["MIN_GAP", "branch_outcomes", "predicted_choices", "summarise"]
