"""FALCON's online module: estimation, selection, change-triggered adaptation,
fine-tuning cost, offline updates, bounded memory (falcon/online/).

The banks here are crafted in-process (no built bank needed): every cell's
network ignores its input and prefers the path whose mean-RTT range is
lower (ties: path 1), so a cell "knows" which path is faster exactly when
it covers the actual conditions. All paths ACK every packet so that RTT
samples carry no delayed-ACK wait.
"""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest

from baselines.dqn.network import QNetSpec, init_params
from envs.errors import ConfigError
from falcon.online import FalconScheduler, FalconSScheduler
from falcon.online.estimator import ConditionEstimator, WindowConfig
from falcon.online.guard import bellman_error, split_held_out
from falcon.online.offline_update import OfflineUpdater
from metalearning.bank import MetaModelBank, split_row
from metalearning.grid import ConditionGrid, PathCondition

BULK = {"kind": "bulk", "size_bytes": 2_000_000}
SPEC = QNetSpec(8, 2, (64, 64, 64))
# path 0 fast (10 ms), path 1 slow (300 ms); cell (loss 0, rtt 0, dev 0) x (loss 0, rtt 2, dev 0)
TWO_PATHS = {
    "ack": {"every": 1},
    "max_duration_s": 30,
    "paths": [
        {"bandwidth_mbps": 50, "rtt_ms": 10, "rtt_std_ms": 1, "loss": 0.0},
        {"bandwidth_mbps": 50, "rtt_ms": 300, "rtt_std_ms": 30, "loss": 0.0},
    ],
}
TRUE = [PathCondition(0.0, 10.0, 1.0), PathCondition(0.0, 300.0, 30.0)]


def crafted_bank(grid: ConditionGrid | None = None) -> MetaModelBank:
    grid = grid or ConditionGrid(2)
    base = np.concatenate([p[0].reshape(-1).numpy() for p in init_params(SPEC, 1, 0)])
    params = np.empty((grid.n_cells, SPEC.n_parameters), np.float32)
    for c in range(grid.n_cells):
        row = base.copy()
        w = split_row(row, SPEC)
        w[-2][:] = 0.0  # output ignores the state
        r0, r1 = (grid.range_indices(pc)[1] for pc in grid.path_cells_of(c))
        w[-1][:] = (1.0, 0.0) if r0 < r1 else (0.0, 1.0)
        params[c] = row
    return MetaModelBank(grid, SPEC, params)


@pytest.fixture(scope="module")
def bank():
    return crafted_bank()


def falcon(bank, **kw) -> FalconScheduler:
    kw.setdefault("offline", None)
    kw.setdefault(
        "epsilon", 0.1
    )  # the crafted models send on one path: exploration feeds the other
    kw.setdefault(
        "continual", False
    )  # the crafted models are rules, not learned: keep them as built
    kw.setdefault("continual_between", False)
    return FalconScheduler(bank, **kw)


def start_event(s):
    return next(e for e in s.events if e.signal == "start")


# ------------------------------------------------------------------ estimation
def test_estimator_recovers_known_conditions():
    rng = np.random.default_rng(1)
    est = ConditionEstimator(
        2, WindowConfig(min_rtt_samples=30, min_loss_packets=100, rtt_memory=2000, loss_memory=4000)
    )
    truth = [(0.03, 80.0, 40.0), (0.002, 20.0, 2.0)]
    assert not est.ready()
    for p, (loss, mean, std) in enumerate(truth):
        k = (mean / std) ** 2
        for x in rng.gamma(k, mean / k, 2000):
            est.add_rtt(p, x / 1000.0)
        for lost in rng.random(4000) < loss:
            est.add_fate(p, bool(lost))
    assert est.ready()
    for p, cond in enumerate(est.estimate_all()):
        loss, mean, std = cond.loss, cond.rtt_ms, cond.rtt_std_ms
        tl, tm, ts = truth[p]
        assert mean == pytest.approx(tm, rel=0.03)
        assert std == pytest.approx(ts, rel=0.08)
        assert abs(loss - tl) < 4 * math.sqrt(tl * (1 - tl) / 4000) + 1e-3
    assert est.sources == [("window", "window")] * 2
    # a change restarts the path's window, keeping the newest samples only
    est.restart(0, keep=10)
    assert est.counts(0) == (10, 10) and not est.path_ready(0) and est.path_ready(1)
    n0 = est.nbytes()
    for _ in range(5000):
        est.add_rtt(0, 0.01)
    assert est.nbytes() == n0 and est.counts(0)[0] == 2000


def test_estimator_partial_window_falls_back_to_previous():
    est = ConditionEstimator(1, WindowConfig(min_partial_rtt=4))
    assert not est.usable()
    for x in (0.010, 0.012, 0.011, 0.013):
        est.add_rtt(0, x)
    assert est.usable()
    first = est.estimate(0)
    assert first.rtt_ms == pytest.approx(11.5) and est.sources[0] == ("partial", "none")
    est.restart(0)
    assert est.usable() and est.estimate(0) == first and est.sources[0] == ("previous", "previous")


def test_estimator_past_the_deadline_takes_the_few_samples_of_an_idle_path():
    est = ConditionEstimator(2, WindowConfig(min_partial_rtt=4))
    for x in (0.010, 0.012, 0.011, 0.013):
        est.add_rtt(0, x)
    est.add_rtt(1, 0.300)  # path 1: only its probe packet
    assert not est.usable() and est.usable(late=True)
    c = est.estimate_all()
    assert (
        c[1].rtt_ms == pytest.approx(300.0)
        and c[1].rtt_std_ms == 0.0
        and est.sources[1][0] == "few"
    )
    assert not ConditionEstimator(2).usable(late=True)  # no sample at all: nothing to estimate


def test_estimator_past_the_deadline_assumes_the_prior_for_a_path_sent_nothing():
    prior = [PathCondition(0.001, 29.2, 4.8), PathCondition(0.02, 80.0, 10.0)]
    est = ConditionEstimator(2, WindowConfig(min_partial_rtt=4), prior=prior)
    for x in (0.010, 0.012, 0.011, 0.013):
        est.add_rtt(0, x)
        est.add_fate(0, False)
    assert not est.usable() and est.usable(late=True)
    c = est.estimate_all()
    assert c[1] == prior[1] and est.sources[1] == ("prior", "prior")
    assert c[0].rtt_ms == pytest.approx(11.5) and est.sources[0][0] == "partial"
    with pytest.raises(ConfigError, match="prior"):
        ConditionEstimator(2, prior=prior[:1])


def test_falcon_selects_even_when_its_policy_leaves_a_path_unused(bank):
    """The prior model (Table I 4G + 5G: equal RTT ranges) sends everything on
    path 1 and, greedy, nothing on path 0: past the window's deadline path 0
    is assumed in the prior's conditions, so FALCON still selects (here the
    cell whose model moves to the 10 ms path 0). No connection setup: with
    it, path 1 is closed for its first RTT and path 0 gets the packets."""
    s = falcon(
        bank,
        detection="never",
        finetune_steps=0,
        continual=False,
        epsilon=0.0,
        deployed_epsilon=0.0,
    )
    m = s.run_episode({**TWO_PATHS, "setup": "none"}, BULK, seed=3)
    ev = start_event(s)
    assert (
        ev.action == "adapt" and ev.sources[0] == ("prior", "prior") and ev.sources[1][0] != "prior"
    )
    assert (
        s.bank.grid.range_indices(s.bank.grid.path_cells_of(ev.cell)[0])[1]
        < s.bank.grid.range_indices(s.bank.grid.path_cells_of(ev.cell)[1])[1]
    )
    assert m["download_time_s"] < 1.5  # then on the 10 ms path (all on the 300 ms one: 2.0 s)


def test_zero_finetune_steps_deploy_the_selected_meta_model_at_once(bank):
    s = falcon(bank, detection="never", finetune_steps=0, continual=False)
    s.run_episode(TWO_PATHS, BULK, seed=3)
    ev = start_event(s)
    assert ev.action == "adapt" and ev.finetune_steps == 0 and ev.finetune_start is None
    assert ev.deploy_time == ev.select_time and s.deployments == 1 and s.deployed_cell == ev.cell
    assert np.array_equal(s._deployed_flat, s.bank.params[ev.cell])  # the meta-model as built
    with pytest.raises(ConfigError, match="finetune_steps"):
        falcon(bank, finetune_steps=-1)


def test_between_connections_the_deployed_model_learns_and_not_within_one(bank):
    """continual_between (continual off): within a connection the deployed
    meta-model stays as built; when the next connection starts it takes one
    DQN step per continual_train_interval of its transitions and acts with
    the result. Without it the meta-model stays."""
    for between in (True, False):
        s = falcon(
            bank,
            detection="never",
            finetune_steps=0,
            continual_between=between,
            continual_train_interval=4,
        )
        s.run_episode(TWO_PATHS, BULK, seed=3)
        cell = s.deployed_cell
        assert np.array_equal(
            s._deployed_flat, s.bank.params[cell]
        )  # no change within the connection
        collected = s._between_new
        assert collected > 100
        s.run_episode(TWO_PATHS, BULK, seed=4)
        assert s.deployed_cell == cell and s.kept == 1  # the second start keeps the model in use
        if between:
            assert s.between_steps == collected // 4
            assert not np.array_equal(s._deployed_flat, s.bank.params[cell])
            assert np.array_equal(s._deployed_flat, s.learner.flat_weights(0))
        else:
            assert s.between_steps == 0 and np.array_equal(s._deployed_flat, s.bank.params[cell])
    s = falcon(bank, detection="never", finetune_steps=0, continual_between=True, fallback="prior")
    for seed in (3, 4):
        s.run_episode(TWO_PATHS, BULK, seed=seed)
    assert s.between_steps == 0  # every connection starts from the prior cell: no steps wasted


def test_finetune_mix_deploys_a_share_of_the_k_step_move(bank):
    deployed = {}
    for mix in (0.0, 1.0):
        s = falcon(
            bank,
            detection="never",
            finetune_steps=16,
            finetune_mix=mix,
            continual=False,
            train_step_cost_s=0.0,
            deploy_guard=False,
        )
        s.run_episode(TWO_PATHS, BULK, seed=3)
        ev = start_event(s)
        assert ev.action == "adapt" and s.deployments == 1
        deployed[mix] = (s._deployed_flat.copy(), s.bank.row(ev.cell))
    assert np.array_equal(*deployed[0.0])  # mix 0: the meta-model as built
    assert not np.array_equal(*deployed[1.0])  # mix 1: the fine-tuned network
    with pytest.raises(ConfigError, match="finetune_mix"):
        falcon(bank, finetune_mix=1.5)


def test_guard_holds_out_every_nth_transition_and_scores_bellman_error():
    n = 20
    trans = (
        np.arange(n * 8, dtype=np.float32).reshape(n, 8),
        np.arange(n) % 2,
        np.ones(n, np.float32),
        np.zeros((n, 8), np.float32),
        np.zeros(n, np.float32),
    )
    training, held = split_held_out(trans, 2)
    assert list(held[1]) == [1] * 10 and len(training[0]) == 10 and held[0][0, 0] == 8.0
    assert split_held_out(trans, 4) is None  # 5 held out < MIN_HELD_OUT
    zero = split_row(
        np.zeros(SPEC.n_parameters, np.float32), SPEC
    )  # Q = 0 everywhere: the error is the reward's
    r = np.array([0.5, 3.0], np.float32)
    batch = (
        np.zeros((2, 8), np.float32),
        np.zeros(2, np.int64),
        r,
        np.zeros((2, 8), np.float32),
        np.zeros(2, np.float32),
    )
    assert bellman_error(zero, SPEC, batch, 0.9, "huber", 1.0) == pytest.approx((0.125 + 2.5) / 2)
    assert bellman_error(zero, SPEC, batch, 0.9, "mse") == pytest.approx(
        (0.125 + 4.5) / 2
    )  # half the square


def test_deploy_guard_keeps_the_meta_model_when_fine_tuning_explains_the_change_worse(bank):
    runs = {}
    for name, kw in (
        ("guarded", {"lr": 0.5}),
        ("unguarded", {"lr": 0.5, "deploy_guard": False}),
        ("sane", {}),
    ):
        s = falcon(bank, detection="never", finetune_steps=16, train_step_cost_s=0.0, **kw)
        s.run_episode(TWO_PATHS, BULK, seed=3)
        runs[name] = (s, start_event(s))
    s, ev = runs["guarded"]  # lr 0.5 wrecks the network: the meta-model is deployed instead
    assert ev.guard == "meta-model" and ev.guard_errors[0] > ev.guard_errors[1] and s.guarded == 1
    assert np.array_equal(s._deployed_flat, s.bank.row(ev.cell))
    s, ev = runs["unguarded"]  # the paper's: the wrecked network is deployed
    assert (
        ev.guard is None
        and s.guarded == 0
        and not np.array_equal(s._deployed_flat, s.bank.row(ev.cell))
    )
    s, ev = runs["sane"]  # a fine-tuning that lowers the held-out error is deployed
    assert ev.guard == "fine-tuned" and ev.guard_errors[0] <= ev.guard_errors[1]
    assert not np.array_equal(s._deployed_flat, s.bank.row(ev.cell))
    with pytest.raises(ConfigError, match="guard_every"):
        falcon(bank, guard_every=1)


def test_the_selected_meta_model_acts_while_its_fine_tuning_is_prepared(bank):
    acting = {}
    for act in (True, False):  # K steps that cost 16 x 10 s never end within the download
        s = falcon(
            bank, detection="never", finetune_steps=16, train_step_cost_s=10.0, act_on_selection=act
        )
        s.run_episode(TWO_PATHS, BULK, seed=3)
        ev = start_event(s)
        assert ev.action == "adapt" and ev.cell != s.prior_cell and ev.deploy_time is None
        acting[act] = (s._deployed_flat.copy(), s.bank.row(ev.cell), s.bank.row(s.prior_cell))
    assert np.array_equal(acting[True][0], acting[True][1])  # the selected cell's meta-model
    assert np.array_equal(
        acting[False][0], acting[False][2]
    )  # the paper's: the prior's until deployment


def test_emulated_estimate_selects_the_covering_cell(bank):
    s = falcon(bank, detection="never")
    s.run_episode(TWO_PATHS, BULK, seed=3)
    ev = start_event(s)
    c0, c1 = ev.conditions
    assert c0.rtt_ms == pytest.approx(10.0, rel=0.25) and c0.dev_ratio < 0.4
    assert c1.rtt_ms == pytest.approx(300.0, rel=0.3) and c1.dev_ratio < 0.4
    assert c0.loss < 0.01 and c1.loss < 0.01
    assert ev.cell == bank.grid.cell_index(TRUE) == bank.select(ev.conditions)


# ------------------------------------------------------------------ selection
def test_selection_from_the_bank_beats_a_random_cell(bank):
    """Fails if the covering cell is not the one selected (selection: random)."""
    times = {"bank": [], "random": []}
    for sel in times:
        for seed in range(5):
            s = falcon(bank, selection=sel, detection="never", seed=seed)
            m = s.run_episode(TWO_PATHS, BULK, seed=seed)
            times[sel].append(m["download_time_s"])
            if sel == "bank":
                assert start_event(s).cell == bank.grid.cell_index(TRUE)
    assert np.median(times["bank"]) < 0.75 * np.median(times["random"])
    assert np.mean(times["bank"]) < np.mean(times["random"])


# ------------------------------------------------------------------ change detection
CHANGING = {
    **TWO_PATHS,
    "paths": [
        {**TWO_PATHS["paths"][0], "schedule": [{"at_s": 0.8, "rtt_ms": 400, "rtt_std_ms": 40}]},
        {**TWO_PATHS["paths"][1], "rtt_ms": 100, "rtt_std_ms": 10},
    ],
}


def test_detected_change_reselects_a_new_cell(bank):
    """Fails if change detection never fires (detection: never)."""
    before = bank.grid.cell_index([TRUE[0], PathCondition(0.0, 100, 10)])
    after = bank.grid.cell_index([PathCondition(0.0, 400, 40), PathCondition(0.0, 100, 10)])
    for detection in ("bocpd", "never"):
        s = falcon(bank, detection=detection, seed=1)
        s.run_episode(CHANGING, {"kind": "bulk", "size_bytes": 8_000_000}, seed=1)
        selected = [(e.time, e.cell) for e in s.events if e.cell is not None]
        assert selected[0][1] == before
        late = [c for t, c in selected if t > 0.8]
        if detection == "bocpd":
            assert s.changes >= 1 and after in late, selected
        else:
            assert late == [] and s.changes == 0 and len(s.events) == 1


# ------------------------------------------------------------------ fine-tuning cost
class Recording(FalconScheduler):
    def _choose(self, state):
        self.trace.append(
            (self._view.sim.now, self.qnet)
        )  # the object: ids of freed networks get reused
        return super()._choose(state)


def test_finetuning_costs_emulated_time_while_the_old_policy_acts(bank):
    cost = 0.03  # 16 steps = 0.48 s: the old policy (blocked on the 300 ms path) decides meanwhile
    s = Recording(
        bank,
        detection="never",
        train_step_cost_s=cost,
        finetune_steps=16,
        offline=None,
        epsilon=0.1,
        act_on_selection=False,
    )  # the paper's reading: the old policy acts until deployment
    s.trace = []
    s.run_episode(TWO_PATHS, BULK, seed=2)
    ev = start_event(s)
    assert ev.action == "adapt" and ev.finetune_steps == 16
    assert ev.finetune_cost_s == pytest.approx(16 * cost)
    assert ev.deploy_time - ev.finetune_start == pytest.approx(16 * cost, abs=1e-9)
    assert ev.select_time <= ev.finetune_start
    during = {id(q) for t, q in s.trace if ev.finetune_start <= t < ev.deploy_time}
    before = {id(q) for t, q in s.trace if t < ev.finetune_start}
    after = {id(q) for t, q in s.trace if t >= ev.deploy_time}
    assert ev.old_policy_decisions > 0 and during and during <= before
    assert after and not (after & before)
    # synchronous learning: deployed at the decision that started the job
    s0 = falcon(bank, detection="never", train_step_cost_s=0.0, finetune_steps=16)
    s0.run_episode(TWO_PATHS, BULK, seed=2)
    ev0 = start_event(s0)
    assert ev0.deploy_time == ev0.finetune_start and ev0.old_policy_decisions == 0


# ------------------------------------------------------------------ offline update
def test_offline_update_moves_only_the_touched_cells():
    bank = crafted_bank()
    before = bank.params.copy()
    up = OfflineUpdater(bank, interval_episodes=1, meta_lr=0.5, inner_steps=4, min_transitions=8)
    rng = np.random.default_rng(0)
    n = 40
    batch = (
        rng.random((n, 8), dtype=np.float32),
        rng.integers(0, 2, n),
        rng.random(n, dtype=np.float32),
        rng.random((n, 8), dtype=np.float32),
        np.zeros(n, np.float32),
    )
    up.extend(5, *batch)
    up.extend(700, *batch)
    up.extend(9, *(x[:3] for x in batch))  # too little experience: untouched
    rec = up.update()
    assert rec["cells"] == [5, 700] and rec["transitions"] == 2 * n
    moved = np.flatnonzero((bank.params != before).any(axis=1))
    assert moved.tolist() == [5, 700]
    assert up.pending() == {}
    # Theta moved a meta_lr fraction of the way toward the fine-tuned W
    up2 = OfflineUpdater(
        crafted_bank(), interval_s=1.0, meta_lr=1.0, inner_steps=4, min_transitions=8
    )
    up2.extend(5, *batch)
    up2.update()
    full = up2.bank.params[5] - before[5]
    np.testing.assert_allclose(bank.params[5] - before[5], 0.5 * full, rtol=1e-4, atol=1e-7)


def test_falcon_folds_its_experience_into_the_selected_cells():
    bank = crafted_bank()
    before = bank.params.copy()
    s = FalconScheduler(
        bank,
        detection="never",
        seed=4,
        epsilon=0.1,
        offline={"interval_episodes": 1, "inner_steps": 4, "meta_lr": 0.1},
    )
    for ep in range(2):
        s.run_episode(TWO_PATHS, BULK, seed=ep)
    moved = set(np.flatnonzero((bank.params != before).any(axis=1)).tolist())
    cells = {e.cell for e in s.events if e.cell is not None}
    assert s.offline.updates == 1 and moved and moved <= cells
    n = FalconScheduler(
        crafted_bank(), detection="never", seed=4, offline=None, epsilon=0.1
    )  # FALCON-N
    for ep in range(2):
        n.run_episode(TWO_PATHS, BULK, seed=ep)
    np.testing.assert_array_equal(n.bank.params, before)


# ------------------------------------------------------------------ memory
def test_memory_stays_flat_over_a_long_run():
    """Everything the scheduler holds (its pickled state: bank, learner,
    replay, detector, estimator, events, offline store) stops growing."""
    s = falcon(
        crafted_bank(),
        seed=5,
        max_events=4,
        continual=True,
        continual_train_interval=4,
        deployed_epsilon=0.1,
        finetune_steps=16,
        offline={"interval_s": 0.5, "capacity_per_cell": 200, "max_cells": 2, "inner_steps": 2},
        window={"max_window_s": 0.05},
    )
    sc = {
        **CHANGING,
        "paths": [
            {
                **CHANGING["paths"][0],
                "schedule": {
                    "segments": [{"at_s": 0.25, "rtt_ms": 400}, {"at_s": 0.75, "rtt_ms": 10}],
                    "period_s": 1.0,
                },
            },
            CHANGING["paths"][1],
        ],
    }
    app = {"kind": "bulk", "size_bytes": 1_000_000}
    sizes = []
    for seed in range(6):
        s.run_episode(sc, app, seed=seed)
        sizes.append(len(pickle.dumps(s)))
    assert s.changes > 6 and len(s.events) == 4 and s.offline.updates > 3
    assert len(s.detector.events) <= 1 and len(s.detector.detections) <= 1
    assert len(s.finetuner.losses) <= 1 and len(s.trainer.losses) <= 1
    assert all(n <= 200 for n in s.offline.pending().values()) and len(s.offline.pending()) <= 2
    assert max(sizes[2:]) - min(sizes[2:]) < 64 * 1024, sizes


# ------------------------------------------------------------------ FALCON-S, configs
def test_falcon_s_state_splits_cwnd_and_send_window_by_stream_weights(bank):
    s = FalconSScheduler(bank, detection="never", offline=None, epsilon=0.1)
    m = s.run_episode(
        {
            **TWO_PATHS,
            "paths": [
                dict(TWO_PATHS["paths"][0], rtt_ms=20),
                dict(TWO_PATHS["paths"][1], rtt_ms=30, rtt_std_ms=3),
            ],
        },
        {"kind": "web", "page": "google"},
        seed=0,
    )
    assert m["timed_out"] == 0 and s.decisions > 100

    class P:  # a path view
        srtt, mss, cwnd, packets_in_flight = 0.05, 1350, 13500.0, 4

    class St:
        def __init__(self, w, rem, cur):
            self.weight, self.remaining, self.swrr_current = w, rem, cur

    class View:
        paths = [P()]
        send_window = 100_000
        payload = 1290

        def streams_pending(self):
            return [St(1.0, 50_000, 0.0), St(3.0, 5_000, 0.0)]

    s._vals = [0.0] * 4
    f = FalconSScheduler._observe(s, View())
    c = 1.0 / (0.5 * 1000.0)
    # next WRR pick: the weight-3 stream (share 3/4); its send window min(5000, 75000) bytes
    assert f[0] == pytest.approx(10 * 0.75 * c) and f[1] == pytest.approx(4 * c)
    assert f[2] == pytest.approx(5000 / 1290 * c) and f[3] == pytest.approx(0.5)


def test_missing_bank_file_is_a_one_line_config_error(tmp_path):
    with pytest.raises(ConfigError, match="build_bank"):
        FalconScheduler(str(tmp_path / "none.h5"))


def test_agent_configs_instantiate_with_a_bank_file(tmp_path):
    from hydra.utils import instantiate

    from falcon.config import AGENT_META_KEYS
    from falcon.experiments.common import agent_config

    grid = ConditionGrid(1)  # 27 cells: quick to write and read
    spec = QNetSpec(4, 1, (8, 8, 8))
    params = np.zeros((grid.n_cells, spec.n_parameters), np.float32)
    path = MetaModelBank(grid, spec, params).write(tmp_path / "bank.h5")
    for name in ("falcon", "falcon_n", "falcon_s"):
        cfg = {
            k: v for k, v in agent_config(name).items() if k not in AGENT_META_KEYS
        }  # composed by Hydra
        cfg["bank"] = str(path)
        sched = instantiate(cfg, _convert_="all")
        assert isinstance(sched, FalconScheduler)
        assert (sched.offline is None) == (name == "falcon_n")
        assert isinstance(sched, FalconSScheduler) == (name == "falcon_s")
    # the file is read once per process: FALCON-N shares it, FALCON's offline loop gets a copy
    a, b = (FalconScheduler(str(path), offline=None) for _ in range(2))
    c = FalconScheduler(str(path), offline={"interval_episodes": 1})
    assert a.bank is b.bank and c.bank is not a.bank
    np.testing.assert_array_equal(c.bank.params, a.bank.params)


def test_the_agent_config_and_the_constructor_declare_the_same_defaults():
    """configs/agent/falcon.yaml (composed: with configs/base/dqn.yaml) spells
    out every constructor argument; the values must be the constructor's,
    except the bank (it comes from the run)."""
    import inspect

    from baselines.dqn.policy import DQNScheduler
    from falcon.experiments.common import agent_config

    cfg = agent_config("falcon")
    defaults = {
        k: p.default
        for cls in (DQNScheduler, FalconScheduler)
        for k, p in inspect.signature(cls.__init__).parameters.items()
    }
    assert {"gamma", "lr", "batch_size", "technique"} <= set(cfg)
    differ = {
        k: (v, defaults[k])
        for k, v in cfg.items()
        if k in defaults and not isinstance(v, dict) and v != defaults[k]
    }
    assert differ.pop("bank") == (None, inspect.Parameter.empty)
    assert differ == {}


def test_falcon_fine_tunes_in_the_reward_unit_of_its_bank():
    grid = ConditionGrid(2)
    old = MetaModelBank(grid, SPEC, crafted_bank(grid).params, {"settings": {"reptile": {}}})
    assert falcon(old).reward_unit == "time"
    assert falcon(crafted_bank()).reward_unit == "packet"
    with pytest.raises(
        ConfigError, match="reward_unit: the bank's meta-models learned rewards in 'time'"
    ):
        falcon(old, reward_unit="packet")


def test_tail_reinjection_copies_the_tail_and_never_finishes_later(bank):
    """``tail_reinject``: once all data is sent, the path with room re-sends what
    the other path still holds (counted as re-injected bytes); on the 5G + WLAN
    pair no seed of 8 finishes later than FALCON without it, which copies nothing."""
    from envs.runner import run_episode

    pair = {"paths": [{"link": "5g"}, {"link": "wlan"}]}

    def runs(tail: bool) -> list[dict]:
        return [
            run_episode(pair, BULK, falcon(bank, tail_reinject=tail), seed).metrics
            for seed in range(8)
        ]

    with_copies, without = runs(True), runs(False)
    assert all(m["reinjected_bytes"] > 0 for m in with_copies)
    assert all("reinjected_bytes" not in m for m in without)
    pairs = [(a["download_time_s"], b["download_time_s"]) for a, b in zip(with_copies, without)]
    assert all(a <= b for a, b in pairs) and any(a < b for a, b in pairs)


def test_tail_reinject_must_be_a_boolean(bank):
    with pytest.raises(ConfigError, match="tail_reinject"):
        falcon(bank, tail_reinject="yes")


def completion_bank_on_path(path: int) -> MetaModelBank:
    """A completion-MDP bank whose every model always chooses ``path`` (a
    full one means wait), whatever the state."""
    from envs.mdp import COMPLETION, n_inputs

    grid = ConditionGrid(2)
    spec = QNetSpec(n_inputs(2, COMPLETION), 2, (8, 8, 8))
    base = np.concatenate([p[0].reshape(-1).numpy() for p in init_params(spec, 1, 0)])
    w = split_row(base, spec)
    w[-2][:] = 0.0
    w[-1][:] = (1.0, 0.0) if path == 0 else (0.0, 1.0)
    return MetaModelBank(grid, spec, np.tile(base, (grid.n_cells, 1)))


def test_skip_dominated_waits_sends_where_the_wait_is_dominated():
    """A model that always waits for the slow (300 ms) path: with
    ``skip_dominated_waits`` no decision waits for it while the 10 ms path has
    room, and every seed finishes sooner; the paper MDP's FALCON is unchanged."""
    from baselines.dqn.policy import undominated_action
    from envs.runner import run_episode

    slow = completion_bank_on_path(1)

    def runs(skip: bool) -> tuple[list[float], int]:
        dominated, times = 0, []
        for seed in range(3):
            sched = falcon(slow, epsilon=0.0, skip_dominated_waits=skip)
            decide = sched.decide

            def watched(view, decide=decide):
                nonlocal dominated
                before = [(p.has_room, p.has_rtt_sample, p.srtt) for p in view.paths]
                d = decide(view)
                if d is None and not before[1][0] and before[0][0] and before[0][1]:
                    dominated += before[0][2] <= before[1][2]
                return d

            sched.decide = watched
            times.append(run_episode(TWO_PATHS, BULK, sched, seed).metrics["download_time_s"])
        return times, dominated

    (with_skip, none), (without, waits) = runs(True), runs(False)
    assert none == 0 and waits > 0
    assert all(a < b for a, b in zip(with_skip, without))

    class Path:
        def __init__(self, index, room, srtt, sampled=True):
            self.index, self.has_room, self.srtt, self.has_rtt_sample = index, room, srtt, sampled

    class View:
        def __init__(self, *paths):
            self.paths = paths

    assert undominated_action(View(Path(0, True, 0.01), Path(1, False, 0.3)), 1) == 0
    assert undominated_action(View(Path(0, True, 0.3), Path(1, False, 0.3)), 1) == 0  # a tie
    assert undominated_action(View(Path(0, True, 0.3), Path(1, False, 0.01)), 1) == 1  # faster
    assert undominated_action(View(Path(0, True, 0.01, False), Path(1, False, 0.3)), 1) == 1
    assert undominated_action(View(Path(0, False, 0.01), Path(1, True, 0.3)), 1) == 1  # room


def test_skip_dominated_waits_must_be_a_boolean(bank):
    with pytest.raises(ConfigError, match="skip_dominated_waits"):
        falcon(bank, skip_dominated_waits=1)
