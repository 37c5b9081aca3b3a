"""Batched Reptile over DQN parameters (metalearning.collect, metalearning.reptile)."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import metalearning.reptile as reptile_mod
from baselines.dqn.learner import BatchedDQN, DQNConfig
from baselines.dqn.network import QNetSpec
from benchmarks.bank_build_speed import extrapolate, spread
from envs.errors import ConfigError
from metalearning.collect import TaskCollector, bulk_app, collect_task_experience
from metalearning.grid import ConditionGrid, PathCondition
from metalearning.reptile import (
    ReptileConfig,
    initial_params,
    joint_train,
    reptile_cells,
    split_params,
)

GRID = ConditionGrid()
SPEC = QNetSpec(8, 2)
#: loss < 1 %, RTT 50-200 ms, deviation < 40 % on both paths
CALM = GRID.cell_index([PathCondition(0.001, 100.0, 10.0)] * 2)
#: loss >= 5 %, RTT < 50 ms, deviation 40-80 % on path 0; calm path 1
MIXED = GRID.cell_index([PathCondition(0.08, 20.0, 12.0), PathCondition(0.001, 100.0, 10.0)])
CELLS = [CALM, MIXED, 400, 728, 13]
#: tiny budgets: 64 decisions per task, 300 kB files, 4 meta-iterations
TINY = dict(meta_iterations=4, decisions_per_task=64, task_size_bytes=300_000, inner_steps=4)


def tiny(**kw) -> ReptileConfig:
    return ReptileConfig(**{**TINY, **kw})


def task(cell=CALM, seed=0):
    return GRID.sample_task(cell, np.random.default_rng(seed), base={"cc": "olia"})


# ---------------------------------------------------------------- collection


def test_collected_experience_shapes_rewards_and_actions():
    exp = collect_task_experience(
        task(), None, SPEC, 0.3, seed=3, decisions=64, app=bulk_app(300_000)
    )
    s, a, r, s2, d = exp  # a plain 5-tuple
    assert exp.n == 64
    assert s.shape == s2.shape == (64, 8) and s.dtype == s2.dtype == np.float32
    assert a.shape == r.shape == d.shape == (64,) and a.dtype == np.int64
    assert np.isfinite(s).all() and np.isfinite(s2).all() and np.isfinite(r).all()
    # per-packet credit RTT_SCALE_S / time-to-ACK: 0.1 s over 50-200 ms RTTs
    assert (r >= 0).all() and 0.1 < np.median(r) < 2.0
    assert set(np.unique(a)) == {0, 1}  # eps 0.3 explores both paths
    assert set(np.unique(d)) <= {0.0, 1.0}


def test_collection_is_reproducible_and_the_collector_reusable():
    weights = split_params(SPEC, initial_params(SPEC, 5))
    one = collect_task_experience(
        task(MIXED, 1), weights, SPEC, 0.3, seed=9, decisions=64, app=bulk_app(300_000)
    )
    col = TaskCollector(SPEC, 0.3)
    col.collect(task(CALM, 2), None, 4, 32, app=bulk_app(300_000))  # another task first
    again = col.collect(task(MIXED, 1), weights, 9, 64, app=bulk_app(300_000))
    for x, y in zip(one, again):
        np.testing.assert_array_equal(x, y)
    assert col.last_info["transitions"] == 64 and col.last_info["cpu_s"] > 0


def test_a_normalised_task_is_collected_as_given_and_left_unchanged():
    """``normalised=True`` (how the Reptile loop hands over sample_task's
    scenario) skips the second normalisation: the same experience, and the
    caller's scenario keeps its own ``max_duration_s``."""
    scenario = task(MIXED, 4)
    before = copy.deepcopy(scenario)
    col = TaskCollector(SPEC, 0.3)
    a = col.collect(scenario, None, 2, 64, app=bulk_app(300_000), max_duration_s=1.0)
    b = col.collect(
        scenario, None, 2, 64, app=bulk_app(300_000), max_duration_s=1.0, normalised=True
    )
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    assert col.last_info["emulated_s"] <= 1.0 + 1e-9  # the cap applied to the copy
    assert scenario == before


def test_a_short_episode_returns_what_it_completed():
    col = TaskCollector(SPEC, 0.3)
    exp = col.collect(task(), None, 0, 512, app=bulk_app(20_000))  # 15 packets
    assert 0 < exp.n < 512 and col.last_info["completed"] == 1.0
    exp = col.collect(task(), None, 0, 512, app=bulk_app(2_000_000), max_duration_s=0.3)
    assert exp.n < 512 and col.last_info["emulated_s"] <= 0.3 + 1e-9


def test_collector_rejects_a_mismatched_network_or_budget():
    with pytest.raises(ConfigError, match="paths"):
        TaskCollector(QNetSpec(12, 3), 0.3).collect(task(), None, 0, 16)
    with pytest.raises(ConfigError, match="weights"):
        TaskCollector(SPEC, 0.3).collect(task(), [np.zeros((8, 64), np.float32)], 0, 16)
    with pytest.raises(ConfigError, match="decisions_per_task"):
        TaskCollector(SPEC, 0.3).collect(task(), None, 0, 0)


# ---------------------------------------------------------------- config


@pytest.mark.parametrize(
    "key, value",
    [
        ("meta_iterations", 0),
        ("inner_steps", -1),
        ("inner_steps", 2.5),
        ("batch_size", 0),
        ("epsilon", 1.5),
        ("meta_lr", 0.0),
        ("meta_lr", 1.2),
        ("meta_lr_final", -0.1),
        ("decisions_per_task", True),
        ("task_size_bytes", 0),
        ("task_max_duration_s", 0),
        ("task_max_duration_s", float("nan")),
        ("task_base", {"bogus": 1}),
        ("task_base", "olia"),
        ("technique", "magic"),
    ],
)
def test_bad_config_values_raise_a_one_line_config_error(key, value):
    with pytest.raises(ConfigError, match=f"reptile.{key}") as e:
        ReptileConfig(**{key: value})
    assert "\n" not in str(e.value)


def test_config_dict_round_trip_and_unknown_keys():
    cfg = tiny(meta_lr_final=0.01, task_base={"cc": "lia"})
    assert ReptileConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(ConfigError, match="unknown key"):
        ReptileConfig.from_dict({"inner_step": 3})
    assert ReptileConfig().mini_batch(DQNConfig()) == 32
    assert ReptileConfig(batch_size=8).mini_batch(DQNConfig()) == 8


def test_lambda_anneals_linearly_from_meta_lr_towards_the_final_value():
    cfg = ReptileConfig(meta_iterations=10, meta_lr=0.1, meta_lr_final=0.0)
    lams = np.array([cfg.meta_lr_at(i) for i in range(10)])
    assert lams[0] == pytest.approx(0.1) and lams[5] == pytest.approx(0.05)
    assert lams[-1] == pytest.approx(0.01) and (lams > 0).all()  # the last step still moves
    np.testing.assert_allclose(np.diff(lams), -0.01)
    cfg = ReptileConfig(meta_iterations=4, meta_lr=0.2, meta_lr_final=0.1)
    assert [cfg.meta_lr_at(i) for i in range(4)] == pytest.approx([0.2, 0.175, 0.15, 0.125])


# ---------------------------------------------------------------- the Reptile step


def test_theta_moves_by_lambda_towards_the_inner_loop_result(monkeypatch):
    seen = []
    real = reptile_mod.inner_loop

    def spy(learner, thetas, batches):
        w, loss = real(learner, thetas, batches)
        seen.append((thetas.copy(), w.copy()))
        return w, loss

    monkeypatch.setattr(reptile_mod, "inner_loop", spy)
    cfg = tiny(meta_iterations=2)
    out = reptile_cells(CELLS[:2], GRID, SPEC, None, cfg, seed=1)
    (th0, w0), (th1, w1) = seen
    np.testing.assert_array_equal(th0, np.tile(initial_params(SPEC, 1), (2, 1)))
    lam0, lam1 = np.float32(cfg.meta_lr_at(0)), np.float32(cfg.meta_lr_at(1))
    np.testing.assert_array_equal(th1, th0 + lam0 * (w0 - th0))
    np.testing.assert_array_equal(out, th1 + lam1 * (w1 - th1))
    assert not np.array_equal(w0, th0)  # the inner loop learnt something
    assert (np.linalg.norm(th1 - w0, axis=1) < np.linalg.norm(th0 - w0, axis=1)).all()


def test_reptile_step_with_a_fake_inner_loop(monkeypatch):
    monkeypatch.setattr(
        reptile_mod,
        "inner_loop",
        lambda learner, thetas, batches: (thetas + 1.0, np.zeros(len(thetas))),
    )
    cfg = tiny(meta_iterations=3, meta_lr=0.3, meta_lr_final=0.0)
    init = np.zeros((1, SPEC.n_parameters), np.float32)
    out = reptile_cells([CALM], GRID, SPEC, None, cfg, seed=0, init=init)
    np.testing.assert_allclose(out, 0.3 + 0.2 + 0.1, rtol=1e-6)


def test_inner_loop_starts_target_at_theta_and_resets_adam():
    from metalearning.reptile import inner_loop

    learner = BatchedDQN(SPEC, 2, seed=0, threads=1)
    thetas = np.tile(initial_params(SPEC, 4), (2, 1))
    rng = np.random.default_rng(0)
    batches = (
        rng.uniform(0, 2, (3, 2, 8, 8)).astype(np.float32),
        rng.integers(0, 2, (3, 2, 8)),
        rng.uniform(0, 2, (3, 2, 8)).astype(np.float32),
        rng.uniform(0, 2, (3, 2, 8, 8)).astype(np.float32),
        np.zeros((3, 2, 8), np.float32),
    )
    w1, loss1 = inner_loop(learner, thetas, batches)
    w2, loss2 = inner_loop(learner, thetas, batches)  # no state leaks from the first loop
    np.testing.assert_array_equal(w1, w2)
    np.testing.assert_array_equal(loss1, loss2)
    assert learner.steps == 3 and w1.shape == thetas.shape and loss1.shape == (2,)


# ---------------------------------------------------------------- reproducibility


def test_a_cell_does_not_depend_on_its_batch_of_5_nor_on_resuming():
    cfg = tiny()
    batch = reptile_cells(CELLS, GRID, SPEC, None, cfg, seed=11)
    alone = reptile_cells([MIXED], GRID, SPEC, None, cfg, seed=11)
    np.testing.assert_array_equal(batch[1], alone[0])
    saved = {}
    infos = []
    first = reptile_cells(
        [400, MIXED],
        GRID,
        SPEC,
        None,
        cfg,
        seed=11,
        checkpoint_every=2,
        checkpoint=lambda th, nxt: saved.setdefault(nxt, th),
        progress=lambda it, info: infos.append((it, info)),
    )
    assert sorted(saved) == [2, 4]
    np.testing.assert_array_equal(first, saved[4])
    resumed = reptile_cells(
        [400, MIXED], GRID, SPEC, None, cfg, seed=11, init=saved[2], start_iteration=2
    )
    np.testing.assert_array_equal(resumed, first)
    np.testing.assert_array_equal(resumed[1], alone[0])
    np.testing.assert_array_equal(resumed[0], batch[2])
    assert batch.shape == (5, SPEC.n_parameters) and len({row.tobytes() for row in batch}) == 5
    assert [it for it, _ in infos] == [0, 1, 2, 3]
    info = infos[-1][1]
    assert info["cells"] == 2 and info["decisions"] == 128 and np.isfinite(info["loss"])
    assert (
        np.isfinite(info["reward"])
        and info["wall_s"] > 0
        and info["lambda"] == pytest.approx(0.025)
    )
    other = reptile_cells([MIXED], GRID, SPEC, None, cfg, seed=12)
    assert not np.array_equal(other, alone)


def test_reptile_cells_rejects_bad_arguments():
    cfg = tiny()
    with pytest.raises(ConfigError, match="cells"):
        reptile_cells([GRID.n_cells], GRID, SPEC, None, cfg, seed=0)
    with pytest.raises(ConfigError, match="twice"):
        reptile_cells([1, 1], GRID, SPEC, None, cfg, seed=0)
    with pytest.raises(ConfigError, match="init"):
        reptile_cells([1, 2], GRID, SPEC, None, cfg, seed=0, init=np.zeros((1, SPEC.n_parameters)))
    with pytest.raises(ConfigError, match="start_iteration"):
        reptile_cells([1], GRID, SPEC, None, cfg, seed=0, start_iteration=5)
    with pytest.raises(ConfigError, match="spec"):
        reptile_cells([1], GRID, QNetSpec(12, 3), None, cfg, seed=0)
    done = np.ones((1, SPEC.n_parameters), np.float32)
    np.testing.assert_array_equal(
        reptile_cells([1], GRID, SPEC, None, cfg, 0, init=done, start_iteration=4), done
    )


# ---------------------------------------------------------------- joint training


def test_joint_training_uses_as_many_steps_as_reptile(monkeypatch):
    calls = []
    real = BatchedDQN.update

    def counting(self, *batch):
        calls.append(np.asarray(batch[0]).shape)
        return real(self, *batch)

    monkeypatch.setattr(BatchedDQN, "update", counting)
    cfg = tiny(meta_iterations=2)
    theta = joint_train(CELLS[:2], GRID, SPEC, None, cfg, seed=2)
    assert len(calls) == 2 * 2 * cfg.inner_steps and calls[0] == (1, 32, 8)
    assert theta.shape == (SPEC.n_parameters,) and theta.dtype == np.float32
    assert not np.array_equal(theta, initial_params(SPEC, 2))
    np.testing.assert_array_equal(theta, joint_train(CELLS[:2], GRID, SPEC, None, cfg, seed=2))


# ---------------------------------------------------------------- benchmark helpers


def test_benchmark_helpers():
    cells = spread(729, 81)
    assert len(cells) == 81 and cells[0] == 0 and max(cells) < 729
    assert spread(729, 81, offset=5) != cells
    ex = extrapolate(36.45, 72.9)
    assert ex["workers_1_s"] == pytest.approx(2000.0) and ex["workers_2_s"] == pytest.approx(1000.0)
