"""Condition memory of the mode MDP: what each path did over the last downloads.

The mode state (:mod:`baselines.modes.features`) describes the last epoch.
At a download's start it says nothing about the paths, and the value of a
mode that hedges with copies (``redundant``) depends on whether a path has
outages, which a fresh state cannot show. A client that downloads again over
the same paths has seen them: these entries carry that across downloads.

Per path, over the epochs of the last ``downloads`` downloads and of this
one so far, counting an epoch where the path had data in flight (its
``ack_age`` above 0):

======================  ====================================================
``hist_silent``         the share of those epochs in which the path went
                        :data:`SILENT_AGE` smoothed RTTs or more without
                        newly acknowledged payload (silent / (epochs + 1):
                        0 when none)
``hist_max_age``        the largest ``ack_age`` of them, in [0, 20]
``hist_delivery_mean``  the mean of their ``log_delivery`` (0 when none)
``hist_delivery_std``   its standard deviation: a path whose delivery
                        collapses now and then spreads it (0 when none)
======================  ====================================================

and ``hist_epochs``: ``log(1 + epochs)`` over every path's epochs of the
history, which tells "no history" (0) from "paths seen and sound".

Both sides compute them with the same arithmetic: online,
:class:`DownloadHistory` keeps one :class:`Summary` per past download and
appends the entries to every state; offline, :func:`with_history` gives each
logged episode the summary of up to ``downloads`` other episodes of its task
(so the learner sees states with no history and states with some) and
computes the same entries epoch by epoch.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from baselines.modes.experience import Episode
from baselines.modes.features import PATH_FEATURES, RANGES
from envs.errors import ConfigError, is_whole_number

#: an epoch's ``ack_age`` (in smoothed RTTs) at or above which the path counts as silent in it
SILENT_AGE = 4.0
HISTORY_PATH_FEATURES = ("hist_silent", "hist_max_age", "hist_delivery_mean", "hist_delivery_std")
HISTORY_GLOBAL_FEATURES = ("hist_epochs",)
_AGE = PATH_FEATURES.index("ack_age")
_DELIVERY = PATH_FEATURES.index("log_delivery")
_N_PATH = len(PATH_FEATURES)
_AGE_MAX = RANGES["ack_age"][1]


def n_history_inputs(n_paths: int) -> int:
    """How many entries the history appends to a state of ``n_paths`` paths."""
    return len(HISTORY_PATH_FEATURES) * n_paths + len(HISTORY_GLOBAL_FEATURES)


def history_feature_names(n_paths: int) -> list[str]:
    return [f"path{i}_{f}" for i in range(n_paths) for f in HISTORY_PATH_FEATURES] + list(
        HISTORY_GLOBAL_FEATURES
    )


def check_downloads(downloads) -> int:
    """``downloads`` as an int >= 0, else a one-line error."""
    if not is_whole_number(downloads, 0):
        raise ConfigError(f"history_downloads: expected a whole number >= 0, got {downloads!r}")
    return int(downloads)


@dataclass
class Summary:
    """Per path, over the epochs with data in flight: their number, the silent
    ones, the largest ACK age, the sum and the sum of squares of ``log_delivery``."""

    epochs: np.ndarray = field(default_factory=lambda: np.zeros(2))
    silent: np.ndarray = field(default_factory=lambda: np.zeros(2))
    max_age: np.ndarray = field(default_factory=lambda: np.zeros(2))
    delivery: np.ndarray = field(default_factory=lambda: np.zeros(2))
    delivery_sq: np.ndarray = field(default_factory=lambda: np.zeros(2))

    def __add__(self, other: Summary) -> Summary:
        return Summary(
            self.epochs + other.epochs,
            self.silent + other.silent,
            np.maximum(self.max_age, other.max_age),
            self.delivery + other.delivery,
            self.delivery_sq + other.delivery_sq,
        )


def empty_summary(n_paths: int = 2) -> Summary:
    return Summary(*(np.zeros(n_paths) for _ in range(5)))


def _columns(states: np.ndarray, feature: int, n_paths: int) -> np.ndarray:
    states = np.atleast_2d(states)
    return states[:, [i * _N_PATH + feature for i in range(n_paths)]].astype(np.float64)


def _per_epoch(states: np.ndarray, n_paths: int) -> tuple[np.ndarray, ...]:
    """Per epoch and path: in flight (0/1), silent (0/1), ACK age, delivery and its square
    (the last two 0 where nothing was in flight)."""
    ages = _columns(states, _AGE, n_paths)
    seen = (ages > 0).astype(np.float64)
    delivery = _columns(states, _DELIVERY, n_paths) * seen
    return seen, (ages >= SILENT_AGE).astype(np.float64), ages, delivery, delivery * delivery


def summarise(states: np.ndarray, n_paths: int = 2) -> Summary:
    """The :class:`Summary` of one download's mode states."""
    seen, silent, ages, d, d2 = _per_epoch(states, n_paths)
    return Summary(seen.sum(0), silent.sum(0), ages.max(0, initial=0.0), d.sum(0), d2.sum(0))


def _entries(total: Summary) -> np.ndarray:
    """The history entries from per-path totals ``[..., n_paths]`` (both sides' arithmetic)."""
    n_paths = total.epochs.shape[-1]
    out = np.empty((*total.epochs.shape[:-1], n_history_inputs(n_paths)), np.float32)
    k = len(HISTORY_PATH_FEATURES)
    n = np.maximum(total.epochs, 1.0)
    mean = total.delivery / n
    out[..., 0 : k * n_paths : k] = total.silent / (total.epochs + 1.0)
    out[..., 1 : k * n_paths : k] = np.minimum(total.max_age, _AGE_MAX)
    out[..., 2 : k * n_paths : k] = mean
    out[..., 3 : k * n_paths : k] = np.sqrt(np.maximum(total.delivery_sq / n - mean * mean, 0.0))
    out[..., -1] = np.log1p(total.epochs.sum(-1))
    return out


def history_entries(prior: Summary, states: np.ndarray, n_paths: int = 2) -> np.ndarray:
    """The history entries ``[epochs, n_history_inputs]`` at each of a download's
    epochs: ``prior`` (the past downloads) plus its epochs up to and including that one."""
    seen, silent, ages, d, d2 = _per_epoch(states, n_paths)
    return _entries(
        Summary(
            prior.epochs + np.cumsum(seen, axis=0),
            prior.silent + np.cumsum(silent, axis=0),
            np.maximum(prior.max_age, np.maximum.accumulate(ages, axis=0)),
            prior.delivery + np.cumsum(d, axis=0),
            prior.delivery_sq + np.cumsum(d2, axis=0),
        )
    )


class DownloadHistory:
    """Online: the summaries of the last ``downloads`` downloads and the
    running one of this download; :meth:`augment` appends the entries to a state."""

    def __init__(self, downloads: int, n_paths: int = 2) -> None:
        self.n_paths = n_paths
        self.past: deque[Summary] = deque(maxlen=check_downloads(downloads))
        self.current = self._prior = empty_summary(n_paths)
        self._seen = False

    def start(self) -> None:
        """A new download starts: the one before joins the past (if it decided anything)."""
        if self._seen and self.past.maxlen:
            self.past.append(self.current)
        self.current, self._seen = empty_summary(self.n_paths), False
        self._prior = sum(self.past, empty_summary(self.n_paths))

    def augment(self, state: np.ndarray) -> np.ndarray:
        """``state`` with the history entries appended (this state counts as seen)."""
        state = np.asarray(state, np.float32)
        self.current = self.current + summarise(state, self.n_paths)
        self._seen = True
        return np.concatenate([state, _entries(self._prior + self.current)])


def with_history(
    logs: Sequence[Sequence[Episode]], downloads: int, seed: int, n_paths: int = 2
) -> list[list[Episode]]:
    """Every task's episodes twice, their states with the history entries
    appended: once with no past downloads (a fresh deployment), once with
    the summaries of ``1 .. downloads`` other episodes of the task (drawn
    from a generator seeded by ``seed`` and the task's index) as the past."""
    downloads = check_downloads(downloads)
    out = []
    for t, episodes in enumerate(logs):
        rng = np.random.default_rng([seed, t])
        sums = [summarise(e.states, n_paths) for e in episodes]
        empty = empty_summary(n_paths)
        task = []
        for j, e in enumerate(episodes):
            priors = [empty]
            others = [k for k in range(len(episodes)) if k != j]
            if downloads and others:
                n = int(rng.integers(1, min(downloads, len(others)) + 1))
                prior = empty
                for k in rng.choice(others, size=n, replace=False):
                    prior = prior + sums[int(k)]
                priors.append(prior)
            for prior in priors:
                extra = history_entries(prior, e.states, n_paths)
                task.append(replace(e, states=np.concatenate([e.states, extra], axis=1)))
        out.append(task)
    return out


__all__ = [
    "SILENT_AGE",
    "HISTORY_PATH_FEATURES",
    "HISTORY_GLOBAL_FEATURES",
    "n_history_inputs",
    "history_feature_names",
    "check_downloads",
    "Summary",
    "empty_summary",
    "summarise",
    "history_entries",
    "DownloadHistory",
    "with_history",
]
