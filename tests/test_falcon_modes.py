"""FALCON on the mode MDP (falcon/online/modes.py, metalearning/mode_bank.py):
learned cells, the cell classifier, evidence across downloads, few-shot
adaptation between downloads, the bank file."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

from baselines.dqn.files import ModelFileError
from baselines.modes.features import n_inputs
from baselines.modes.history import n_history_inputs, summarise
from envs.errors import ConfigError
from falcon.online.modes import FalconModes
from metalearning.mode_bank import kmeans
from metalearning.mode_bank_files import read_bank, write_bank

APP = {"kind": "bulk", "size_bytes": 1_000_000}
GOOD, BAD = {"bandwidth_mbps": 30, "rtt_ms": 20}, {"bandwidth_mbps": 2, "rtt_ms": 60}
TASKS = [({"paths": [GOOD, BAD]}, APP), ({"paths": [BAD, GOOD]}, APP)]
SMALL = dict(shares=[0.0, 1.0], reinject=[False], rules=["minrtt", "redundant"], hidden=[16])
FIT = dict(
    tasks=TASKS,
    seeds_per_mode=2,
    switching_episodes=2,
    meta_iterations=30,
    cell_iterations=30,
    classifier_steps=150,
    progress=False,
)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    f = FalconModes(cells=2, **SMALL)
    metrics = f.fit(None, None, seed=0, **FIT)
    path = f.save(tmp_path_factory.mktemp("bank"))
    return f, metrics, path


def test_kmeans_finds_separated_groups_and_is_seeded():
    pts = np.array([[0.0, 0.0], [0.1, 0.0], [5.0, 5.0], [5.1, 4.9], [0.0, 0.2]])
    labels = kmeans(pts, 2, seed=1)
    assert labels.tolist() == [0, 0, 1, 1, 0]
    assert kmeans(pts, 2, seed=1).tolist() == labels.tolist()
    assert kmeans(pts, 9, seed=0).max() <= 4  # never more clusters than points


def test_tasks_where_different_modes_win_get_their_own_cells(built):
    f, metrics, _ = built
    assert metrics["cells"] == 2.0 and sorted(map(sorted, f.bank.cell_tasks)) == [[0], [1]]
    # the classifier tells the two conditions apart from the states logged on them
    assert metrics["classifier_accuracy"] >= 0.8


def test_the_cell_estimate_follows_the_condition_and_persists_across_downloads(built):
    f0, _, path = built
    for task in (0, 1):
        f = FalconModes(cells=2, selection="bank", model=str(path), **SMALL)
        want = next(c for c, ts in enumerate(f.bank.cell_tasks) if task in ts)
        for seed in range(2):
            f.run_episode(*TASKS[task], seed=seed)
        assert f.cells_used == [want, want]
        n = len(f._evidence)
        f.run_episode(*TASKS[task], seed=5)
        assert len(f._evidence) > n  # the evidence of earlier downloads is kept


def test_the_first_epoch_holds_the_first_mode(built):
    _, _, path = built
    f = FalconModes(cells=2, first_mode="redundant", selection="bank", model=str(path), **SMALL)
    f.run_episode(*TASKS[0], seed=0)
    assert f.mode_scheduler.trace[0][1] == f.modes.index("redundant")
    assert len(f._evidence) == len(f.mode_scheduler.trace) - 1  # the held epoch adds no evidence
    with pytest.raises(ConfigError, match="first_mode 'blest' is not one of its modes"):
        FalconModes(first_mode="blest", **SMALL)


def test_few_shot_adaptation_moves_the_cells_model_between_downloads(built):
    _, _, path = built
    f = FalconModes(
        cells=2,
        first_mode="redundant",
        selection="bank",
        finetune_steps=8,
        model=str(path),
        **SMALL,
    )
    f.run_episode(*TASKS[0], seed=0)
    cell = f.cells_used[0]
    assert f.finetunes == 1 and cell in f._tuned
    tuned = f._tuned[cell].nets[0].weights[0]
    assert not np.allclose(tuned, f.bank.q(cell).nets[0].weights[0])
    # no steps: the meta-models act as built
    g = FalconModes(cells=2, model=str(path), **SMALL)
    g.run_episode(*TASKS[0], seed=0)
    assert g.finetunes == 0 and g._tuned == {}


def test_runs_are_reproducible_and_the_global_ablation_ignores_the_cells(built):
    _, _, path = built

    def times(selection="bank"):
        f = FalconModes(cells=2, selection=selection, model=str(path), **SMALL)
        return [f.run_episode(*TASKS[1], seed=s)["download_time_s"] for s in range(3)], f

    a, _ = times()
    b, _ = times()
    assert a == b
    _, g = times(selection="global")
    assert g.cells_used == [None, None, None] and not g._evidence


def test_the_bank_file_round_trips_and_bad_files_are_one_line_errors(built, tmp_path):
    f, _, path = built
    bank = read_bank(path)
    assert bank.cell_tasks == f.bank.cell_tasks and bank.modes == f.bank.modes
    state = np.linspace(0, 1, bank.spec.n_inputs).astype(np.float32)
    assert np.allclose(bank.q(0)(state), f.bank.q(0)(state))
    assert np.allclose(bank.cell_log_probs(state), f.bank.cell_log_probs(state))
    with h5py.File(path, "r") as src:
        assert len(eval(src.attrs["tasks"].replace("true", "True").replace("false", "False"))) == 2
    broken = tmp_path / "broken.h5"
    broken.write_bytes(path.read_bytes()[:2000])
    with pytest.raises(ModelFileError, match="unreadable mode bank"):
        read_bank(broken)
    with pytest.raises(ModelFileError, match="no such mode bank file"):
        read_bank(tmp_path / "none.h5")
    other = write_bank(tmp_path / "b.h5", bank)
    with h5py.File(other, "a") as h:
        h.attrs["format"] = "something-else"
    with pytest.raises(ModelFileError, match="not a falcon-mode-bank file"):
        read_bank(other)
    with pytest.raises(ConfigError, match="the bank .* has the modes"):
        FalconModes(
            shares=[0.0, 0.5, 1.0], reinject=[False], rules=["minrtt", "redundant"], model=str(path)
        )


def test_switch_agreement_holds_the_mode_unless_every_member_prefers_the_new_one():
    from baselines.modes.learner import Ensemble

    # two member networks: on state 0 both prefer mode 0; on state 1 their
    # mean prefers mode 1 by 0.75, but the second member still prefers mode 0
    tables = [
        {0: [1.0, 0.0, 0.0, 0.0], 1: [0.0, 2.0, 0.0, 0.0]},
        {0: [1.0, 0.0, 0.0, 0.0], 1: [0.5, 0.0, 0.0, 0.0]},
    ]
    nets = [lambda s, t=t: np.asarray(t[int(s[0])], np.float32) for t in tables]

    def picks(agreement: bool) -> list[int]:
        f = FalconModes(switch_agreement=agreement, switch_margin=0.1, **SMALL)
        f._model = lambda cell: Ensemble(nets)
        choose = f._chooser()
        return [choose(np.array([x], np.float32)) for x in (0, 1, 1)]

    assert picks(False) == [0, 1, 1]
    assert picks(True) == [0, 0, 0]
    with pytest.raises(ConfigError, match="switch_agreement: expected true or false"):
        FalconModes(switch_agreement="yes", **SMALL)


@pytest.mark.parametrize(
    "kw, msg",
    [
        ({"selection": "nearest"}, "selection: unknown 'nearest'"),
        ({"evidence_epochs": 0}, "evidence_epochs: expected a whole number >= 1"),
        ({"finetune_steps": -1}, "finetune_steps: expected a whole number >= 0"),
        ({"switch_margin": -0.1}, "switch_margin: expected a number >= 0"),
    ],
)
def test_bad_settings_are_one_line_errors(kw, msg):
    with pytest.raises(ConfigError, match=msg):
        FalconModes(**{**SMALL, **kw})


def test_a_scheduler_without_a_bank_says_so():
    from envs import run_episode

    with pytest.raises(ConfigError, match="no bank"):
        run_episode(*TASKS[0], FalconModes(**SMALL), seed=0)


def test_grid_tasks_keep_to_low_loss_and_rtt_and_are_seeded():
    from falcon.online.modes import grid_task_list

    tasks = grid_task_list(12, seed=4)
    assert tasks == grid_task_list(12, seed=4) and tasks != grid_task_list(12, seed=5)
    for scen, app in tasks:
        assert app["size_bytes"] == 2_000_000 and len(scen["paths"]) == 2
        for p in scen["paths"]:
            assert p["loss"] < 0.01 and p["rtt_ms"] < 200
    for bad in (-1, 2.5, True):
        with pytest.raises(ConfigError, match="grid_tasks: expected a whole number"):
            grid_task_list(bad, seed=0)


def test_joint_and_reptile_meta_models_differ_and_unknown_training_is_an_error(built):
    from baselines.modes.experience import collect
    from metalearning.mode_bank import build_mode_bank

    f, _, _ = built
    logs = [collect(s, a, f.modes, 10 * i, 1, 1, 0.3, once=True) for i, (s, a) in enumerate(TASKS)]
    kw = dict(
        cells=2, members=1, hidden=[8], meta_iterations=5, cell_iterations=5, classifier_steps=5
    )
    joint, _ = build_mode_bank(logs, f.modes, training="joint", **kw)
    reptile, _ = build_mode_bank(logs, f.modes, training="reptile", **kw)
    assert not np.allclose(joint.meta[0][0], reptile.meta[0][0])
    again, _ = build_mode_bank(logs, f.modes, training="joint", **kw)
    assert all(np.array_equal(a, b) for a, b in zip(joint.meta[0], again.meta[0], strict=True))
    with pytest.raises(ConfigError, match="training: unknown 'maml'"):
        build_mode_bank(logs, f.modes, training="maml", **kw)


def test_the_mixture_weights_every_cells_values_by_the_evidence(built):
    _, _, path = built
    f = FalconModes(cells=2, selection="mixture", model=str(path), **SMALL)
    f.run_episode(*TASKS[0], seed=0)
    state = f.mode_scheduler.trace[-1][0]
    z = np.mean(f._evidence, axis=0)
    w = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
    want = sum(w[c] * f.bank.q(c)(state) for c in range(2) if w[c] > 1e-3)
    assert np.allclose(f._q(state), want)
    assert len(f._evidence) == len(f.mode_scheduler.trace)  # no first mode: every epoch is evidence


# ---------------------------------------------------------------- condition memory
@pytest.fixture(scope="module")
def bank_path(tmp_path_factory):
    """A bank built with the memory of baselines/modes/history.py (3 downloads)."""
    f = FalconModes(cells=2, history_downloads=3, **SMALL)
    f.fit(None, None, seed=0, **FIT)
    return f.save(tmp_path_factory.mktemp("history_bank"))


def test_falcon_modes_carries_the_memory_across_downloads_and_the_bank_records_it(bank_path):
    bank = read_bank(bank_path)
    assert bank.history_downloads == 3
    assert bank.spec.n_inputs == n_inputs(2) + n_history_inputs(2)
    f = FalconModes(cells=2, history_downloads=3, model=str(bank_path), **SMALL)
    f.run_episode(*TASKS[0], seed=0)
    first = [s for s, *_ in f.mode_scheduler.trace]
    f.run_episode(*TASKS[0], seed=1)
    second = [s for s, *_ in f.mode_scheduler.trace]
    assert first[0].shape == (bank.spec.n_inputs,)
    # the first download starts with no past; the second with the first's epochs
    assert first[0][-1] == pytest.approx(np.log1p(summarise(first[0][None, :18]).epochs.sum()))
    past = summarise(np.stack(first)[:, : n_inputs(2)])
    assert second[0][-1] == pytest.approx(
        np.log1p(past.epochs.sum() + summarise(second[0][None, :18]).epochs.sum())
    )
    # a bank and a config that disagree on the memory are an error, both ways
    with pytest.raises(ConfigError, match="built with history_downloads 3, the config has 0"):
        FalconModes(cells=2, model=str(bank_path), **SMALL)


def test_a_bank_whose_inputs_do_not_match_its_memory_is_a_one_line_error(bank_path, tmp_path):
    bad = tmp_path / "bank.h5"
    bad.write_bytes(bank_path.read_bytes())
    with h5py.File(bad, "a") as h:
        h.attrs["history_downloads"] = 0
    with pytest.raises(ModelFileError, match="27 inputs, but 18 for two paths"):
        read_bank(bad)
    with h5py.File(bad, "a") as h:
        h.attrs["history_downloads"] = -2
    with pytest.raises(ModelFileError, match="history_downloads is -2"):
        read_bank(bad)
