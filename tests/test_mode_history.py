"""The mode MDP's condition memory (baselines/modes/history.py): what the
paths did over the last downloads, the same online and offline (FALCON on
the mode MDP carrying it across downloads: tests/test_falcon_modes.py)."""

from __future__ import annotations

import numpy as np
import pytest

from baselines.modes.experience import Episode
from baselines.modes.features import PATH_FEATURES, n_inputs
from baselines.modes.history import (
    SILENT_AGE,
    DownloadHistory,
    history_entries,
    history_feature_names,
    n_history_inputs,
    summarise,
    with_history,
)
from envs.errors import ConfigError

AGE = PATH_FEATURES.index("ack_age")
DELIVERY = PATH_FEATURES.index("log_delivery")
N = len(PATH_FEATURES)


def states(ages0, ages1) -> np.ndarray:
    """Mode states whose only non-zero entries are the two paths' ACK ages."""
    s = np.zeros((len(ages0), n_inputs(2)), np.float32)
    s[:, AGE], s[:, N + AGE] = ages0, ages1
    return s


def episode(s: np.ndarray) -> Episode:
    n = len(s)
    return Episode(s, np.zeros(n, np.int64), np.arange(n) * 0.1, np.ones(n), n * 0.1, n * 0.1)


def test_the_entries_summarise_silences_and_delivery_per_path():
    assert history_feature_names(2) == [
        f"path{i}_{f}"
        for i in range(2)
        for f in ("hist_silent", "hist_max_age", "hist_delivery_mean", "hist_delivery_std")
    ] + ["hist_epochs"]
    s = states([1.0, SILENT_AGE, 25.0, 0.5], [0.0, 0.0, 0.0, 0.0])
    s[:, DELIVERY] = [2.0, 0.0, 0.0, 2.0]
    s[:, N + DELIVERY] = 5.0  # delivered while nothing was in flight: not counted
    e = history_entries(summarise(s[:0]), s)
    assert e.shape == (4, n_history_inputs(2))
    # path 0: 2 silent epochs of 4 with data in flight; its longest silence clipped at 20;
    # its delivery 2, 0, 0, 2: mean 1, standard deviation 1
    assert e[-1, 0] == pytest.approx(2 / 5) and e[-1, 1] == 20.0
    assert e[-1, 2] == pytest.approx(1.0) and e[-1, 3] == pytest.approx(1.0)
    assert e[1, 0] == pytest.approx(1 / 3) and e[1, 1] == SILENT_AGE  # up to the second epoch
    assert e[0, 2] == pytest.approx(2.0) and e[0, 3] == 0.0
    # path 1 never had data in flight: nothing seen
    assert e[-1, 4:8].tolist() == [0.0, 0.0, 0.0, 0.0]
    assert e[-1, 8] == pytest.approx(np.log1p(4))
    # the past counts as if its epochs came first
    past = summarise(states([30.0, 30.0], [1.0, 1.0]))
    e2 = history_entries(past, s)
    assert e2[0, 0] == pytest.approx(2 / 4) and e2[0, 1] == 20.0 and e2[0, 4] == 0.0
    assert e2[0, 2] == pytest.approx(2 / 3)  # deliveries 0, 0 (the past), 2
    assert e2[0, 8] == pytest.approx(np.log1p(5))


def test_online_entries_equal_offline_ones_and_only_the_last_downloads_count():
    rng = np.random.default_rng(3)
    downloads = [states(rng.uniform(0, 8, n), rng.uniform(0, 8, n)) for n in (5, 9, 4, 6)]
    h = DownloadHistory(2)
    for k, d in enumerate(downloads):
        h.start()
        online = np.stack([h.augment(s) for s in d])
        assert np.array_equal(online[:, : n_inputs(2)], d)
        past = summarise(np.concatenate(downloads[max(0, k - 2) : k] or [d[:0]]))
        assert np.allclose(online[:, n_inputs(2) :], history_entries(past, d), atol=1e-6)
    assert len(h.past) == 2
    # no memory: every download starts with none
    h0 = DownloadHistory(0)
    for d in downloads[:2]:
        h0.start()
        last = [h0.augment(s) for s in d][-1]
    assert last[-1] == pytest.approx(np.log1p(summarise(downloads[1]).epochs.sum()))
    with pytest.raises(ConfigError, match="history_downloads: expected a whole number >= 0"):
        DownloadHistory(-1)


def test_each_logged_episode_is_seen_with_no_past_and_with_other_episodes_as_its_past():
    rng = np.random.default_rng(0)
    logs = [
        [episode(states(rng.uniform(0, 8, n), rng.uniform(0, 8, n))) for n in (5, 7, 3)],
        [episode(states(rng.uniform(0, 8, n), rng.uniform(0, 8, n))) for n in (4, 6)],
    ]
    out = with_history(logs, 2, seed=1)
    assert [len(t) for t in out] == [6, 4]
    width = n_inputs(2) + n_history_inputs(2)
    for task, log in zip(out, logs, strict=True):
        for j, e in enumerate(log):
            fresh, with_past = task[2 * j], task[2 * j + 1]
            assert fresh.states.shape == with_past.states.shape == (len(e.modes), width)
            assert np.array_equal(fresh.states[:, : n_inputs(2)], e.states)
            empty = summarise(e.states[:0])
            assert np.allclose(fresh.states[:, n_inputs(2) :], history_entries(empty, e.states))
            # the past is other episodes of the same task: more epochs seen than its own
            assert with_past.states[0, -1] > fresh.states[0, -1]
            assert with_past.end_s == e.end_s and np.array_equal(with_past.modes, e.modes)
    again = with_history(logs, 2, seed=1)
    assert all(
        np.array_equal(a.states, b.states)
        for ta, tb in zip(out, again, strict=True)
        for a, b in zip(ta, tb, strict=True)
    )
    assert [len(t) for t in with_history(logs, 0, seed=1)] == [3, 2]  # no past: once each
