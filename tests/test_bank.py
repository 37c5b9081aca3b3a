"""The meta-model bank: HDF5 round trip, validation of damaged or mismatching files, layout."""

from __future__ import annotations

import json

import h5py
import numpy as np
import pytest

from baselines.dqn.export import hdf5_forward, read_hdf5, write_hdf5
from baselines.dqn.files import ModelFileError
from baselines.dqn.learner import BatchedDQN
from baselines.dqn.network import QNetSpec
from envs.errors import ConfigError
from metalearning import ConditionGrid, MetaModelBank, PathCondition, load_bank, read_bank_header

SMALL_GRID = ConditionGrid(n_paths=1)  # 27 cells: fast files for the error cases
SMALL_SPEC = QNetSpec(4, 1, hidden=(8, 8, 8))


def _bank(grid=SMALL_GRID, spec=SMALL_SPEC, seed=0, meta=None) -> MetaModelBank:
    params = (
        np.random.default_rng(seed)
        .standard_normal((grid.n_cells, spec.n_parameters))
        .astype(np.float32)
    )
    return MetaModelBank(grid, spec, params, meta)


META = {
    "hyperparameters": {"lr": 1e-3, "inner_steps": 16, "hidden": (64, 64, 64)},
    "meta_iterations": np.arange(27),
    "seed": 3,
    "build_time_s": 12.5,
    "note": "demo",
    "complete": True,
}
META_BACK = {
    "hyperparameters": {"lr": 1e-3, "inner_steps": 16, "hidden": [64, 64, 64]},
    "meta_iterations": list(range(27)),
    "seed": 3,
    "build_time_s": 12.5,
    "note": "demo",
    "complete": True,
}


@pytest.fixture(scope="module")
def small_file(tmp_path_factory):
    bank = _bank(meta=META)
    return bank, bank.write(tmp_path_factory.mktemp("bank") / "bank.h5")


def test_round_trip(small_file):
    bank, path = small_file
    back = MetaModelBank.read(
        path, grid=ConditionGrid(n_paths=1), spec=QNetSpec(4, 1, hidden=(8, 8, 8))
    )
    assert back.grid == bank.grid and back.spec == bank.spec
    assert back.params.dtype == np.float32 and np.array_equal(back.params, bank.params)
    assert back.meta == META_BACK
    assert type(back.meta["seed"]) is int and type(back.meta["build_time_s"]) is float
    assert np.array_equal(load_bank(path).params, bank.params)
    assert read_bank_header(path) == (bank.grid, META_BACK)


def test_file_layout_is_a_falcon_qnet_file(small_file):
    bank, path = small_file
    with h5py.File(path, "r") as f:
        assert f.attrs["format"] == "falcon-qnet" and f.attrs["bank_format"] == "falcon-bank"
        assert f.attrs["bank_format_version"] == 1
        assert ConditionGrid.from_dict(json.loads(f.attrs["grid"])) == bank.grid
        assert json.loads(f.attrs["hyperparameters"])["inner_steps"] == 16
        assert f.attrs["seed"] == 3 and "created" in f.attrs and "framework_version" in f.attrs
        assert list(f.attrs["model_names"]) == bank.grid.names()
        g = f["models/cell_26"]
        assert (
            g.attrs["cell"] == 26
            and list(g.attrs["path_cells"]) == [26]
            and g.attrs["meta_iterations"] == 26
        )
        assert json.loads(g.attrs["ranges"]) == [
            {"loss": [0.05, 1.0], "rtt_ms": [200.0, None], "dev_ratio": [0.8, None]}
        ]
    # every cell is an ordinary model (what falcon.export reads)
    (rec,) = read_hdf5(path, names=["cell_05"])
    assert rec.spec == bank.spec
    x = np.random.default_rng(0).uniform(0, 3, (5, 4)).astype(np.float32)
    assert np.allclose(hdf5_forward(path, x, "cell_05"), bank.qnet(5)(x), atol=1e-5)


def test_paper_bank_records():
    """What a 729-cell bank writes (without the seconds the file takes)."""
    bank = _bank(
        ConditionGrid(), QNetSpec(8, 2, hidden=(4, 4, 4)), meta={"meta_iterations": [5] * 729}
    )
    recs = bank.records()
    assert [r.name for r in recs] == [f"cell_{c:03d}" for c in range(729)]
    assert recs[728].attrs["cell"] == 728 and recs[728].attrs["path_cells"] == [26, 26]
    assert recs[30].attrs["path_cells"] == [1, 3] and recs[30].attrs["meta_iterations"] == 5
    assert json.loads(recs[30].attrs["ranges"])[1]["rtt_ms"] == [50.0, 200.0]
    attrs = bank.file_attrs()
    assert ConditionGrid.from_dict(json.loads(attrs["grid"])) == ConditionGrid()
    assert json.loads(attrs["meta_iterations"]) == [5] * 729


@pytest.mark.slow
def test_paper_bank_round_trip(tmp_path):
    """729 cells of 64x3 networks (a few seconds each way)."""
    bank = _bank(
        ConditionGrid(), QNetSpec(8, 2), meta={"meta_iterations": np.arange(729), "seed": 1}
    )
    back = MetaModelBank.read(
        bank.write(tmp_path / "bank.h5"), grid=ConditionGrid(), spec=QNetSpec(8, 2)
    )
    assert np.array_equal(back.params, bank.params)
    assert back.meta == {"meta_iterations": list(range(729)), "seed": 1}


def test_weights_follow_the_batched_learner_layout():
    grid, spec = SMALL_GRID, QNetSpec(4, 1, hidden=(16, 16, 16))
    learner = BatchedDQN(spec, n_models=grid.n_cells, seed=4)
    params = np.stack([learner.flat_weights(m) for m in range(grid.n_cells)])
    bank = MetaModelBank(grid, spec, params)
    assert np.array_equal(MetaModelBank.initial(grid, spec, seed=4).params, params)
    states = np.random.default_rng(1).uniform(0, 3, (grid.n_cells, 6, 4)).astype(np.float32)
    q = learner.q(states).numpy()
    for m in (0, 13, 26):
        assert all(np.array_equal(a, b) for a, b in zip(bank.weights(m), learner.get_weights(m)))
        assert all(
            np.array_equal(a, b) for a, b in zip(bank.weights(m), learner.split_flat(params[m]))
        )
        assert np.allclose(bank.qnet(m)(states[m]), q[m], atol=1e-6)
    # the deployed network does not change with the bank's parameters
    net = bank.qnet(3)
    before = net(states[3]).copy()
    bank.params[3] += 1.0
    assert np.array_equal(net(states[3]), before)


def test_copy_on_write_bank_never_touches_the_shared_one(tmp_path):
    base = _bank()
    shared = base.params.copy()
    own = base.private_copy()
    assert own.written_cells == [] and np.array_equal(own.params, shared)
    new = shared[4] + 1.0
    own.set_row(4, new)
    assert np.array_equal(base.params, shared)  # the shared bank as it was
    assert np.array_equal(own.row(4), new) and np.array_equal(own.row(5), shared[5])
    assert np.array_equal(np.concatenate([w.reshape(-1) for w in own.weights(4)]), new)
    assert own.written_cells == [4] and np.array_equal(own.params[4], new)
    again = own.private_copy()  # a copy of a copy keeps the written rows
    again.set_row(5, shared[5] * 2)
    assert np.array_equal(again.row(4), new) and np.array_equal(own.row(5), shared[5])
    back = MetaModelBank.read(own.write(tmp_path / "own.h5"))
    assert np.array_equal(back.params, own.params)
    with pytest.raises(ConfigError, match="bank row"):
        own.set_row(0, np.full(3, 1.0))
    with pytest.raises(ConfigError, match="bank row"):
        own.set_row(0, np.full_like(new, np.nan))


def test_select():
    bank = _bank(ConditionGrid(), QNetSpec(8, 2, hidden=(4, 4, 4)))
    conds = [PathCondition(0.02, 120.0, 10.0), PathCondition(0.0, 10.0, 9.0)]
    assert bank.select(conds) == bank.grid.cell_index(conds) == (12 * 27 + 2)


def test_constructor_errors():
    with pytest.raises(ConfigError, match="shape"):
        MetaModelBank(SMALL_GRID, SMALL_SPEC, np.zeros((26, SMALL_SPEC.n_parameters)))
    with pytest.raises(ConfigError, match="actions"):
        MetaModelBank(SMALL_GRID, QNetSpec(8, 2), np.zeros((27, QNetSpec(8, 2).n_parameters)))
    params = np.zeros((27, SMALL_SPEC.n_parameters))
    params[4, 0] = np.nan
    with pytest.raises(ConfigError, match="cell 4"):
        MetaModelBank(SMALL_GRID, SMALL_SPEC, params)
    for meta in ({"grid": 1}, {"format": "x"}, {"": 1}):
        with pytest.raises(ConfigError, match="meta"):
            _bank(meta=meta)
    with pytest.raises(ConfigError, match="meta_iterations"):
        _bank(meta={"meta_iterations": [1, 2]})


def _assert_error(path, match, **kw):
    with pytest.raises(ModelFileError, match=match) as e:
        MetaModelBank.read(path, **kw)
    msg = str(e.value)
    assert str(path) in msg and "\n" not in msg
    return msg


@pytest.mark.parametrize("keep", [0.5, 0.9, 200])
def test_truncated_file(tmp_path, keep):
    path = _bank().write(tmp_path / "bank.h5")
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep) if keep < 1 else keep])
    _assert_error(path, "bank")


def test_not_a_bank(tmp_path):
    bank = _bank()
    plain = write_hdf5(tmp_path / "plain.h5", bank.records()[:1])
    _assert_error(plain, "not a meta-model bank")
    with pytest.raises(ModelFileError, match="not a meta-model bank"):
        read_bank_header(plain)
    text = tmp_path / "notes.h5"
    text.write_text("hello\n")
    _assert_error(text, "not a readable HDF5")
    _assert_error(tmp_path / "missing.h5", "no such file")
    with h5py.File(tmp_path / "other.h5", "w") as f:
        f.attrs["format"] = "falcon-experience"
    _assert_error(tmp_path / "other.h5", "not a FALCON model file")


def test_version_and_grid_attributes(tmp_path):
    path = _bank().write(tmp_path / "bank.h5")
    with h5py.File(path, "r+") as f:
        f.attrs["bank_format_version"] = 2
    _assert_error(path, "version 2")
    path = _bank().write(tmp_path / "bank.h5")
    with h5py.File(path, "r+") as f:
        f.attrs["grid"] = "{not json"
    _assert_error(path, "grid")


def test_missing_cell(tmp_path):
    bank = _bank()
    recs = bank.records()
    del recs[5]
    write_hdf5(tmp_path / "bank.h5", recs, bank.file_attrs())
    _assert_error(tmp_path / "bank.h5", "26 models for 27 cells.*missing cell_05")
    # a group removed behind the file's back
    path = bank.write(tmp_path / "bank2.h5")
    with h5py.File(path, "r+") as f:
        del f["models/cell_07"]
    _assert_error(path, "cell_07")


def test_cell_attributes_must_match_the_grid(tmp_path):
    path = _bank().write(tmp_path / "bank.h5")
    with h5py.File(path, "r+") as f:
        f["models/cell_03"].attrs["ranges"] = json.dumps([{"loss": [0, 0.02]}])
    _assert_error(path, "cell_03 has ranges")
    path = _bank().write(tmp_path / "bank.h5")
    with h5py.File(path, "r+") as f:
        f["models/cell_03"].attrs["cell"] = 4
    _assert_error(path, "cell_03 has cell attribute 4")


def test_wrong_grid_or_spec(tmp_path):
    path = _bank().write(tmp_path / "bank.h5")
    _assert_error(path, "grid", grid=ConditionGrid(n_paths=1, subranges=(2, 1, 1)))
    _assert_error(path, "grid", grid=ConditionGrid(n_paths=1, caps={"loss": 0.3}))
    _assert_error(path, "expected 4->16x16x16->1", spec=QNetSpec(4, 1, hidden=(16, 16, 16)))
    assert MetaModelBank.read(path, grid=SMALL_GRID, spec=SMALL_SPEC).grid == SMALL_GRID


def test_inconsistent_spec_across_cells(tmp_path):
    bank = _bank()
    other = _bank(spec=QNetSpec(4, 1, hidden=(8, 8)))
    recs = bank.records()
    recs[9] = other.records()[9]
    write_hdf5(tmp_path / "bank.h5", recs, bank.file_attrs())
    _assert_error(tmp_path / "bank.h5", "cell_09 is 4->8x8->1")


def test_failed_write_leaves_no_partial_file(tmp_path):
    good = _bank()
    path = good.write(tmp_path / "bank.h5")
    before = path.read_bytes()
    bad = _bank(seed=1, meta={"note": "embedded\x00null"})  # HDF5 strings cannot hold NUL
    with pytest.raises(ModelFileError, match="cannot write"):
        bad.write(path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bank.h5"]
    with pytest.raises(ModelFileError, match="cannot write"):
        bad.write(tmp_path / "new.h5")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bank.h5"]


def test_reward_unit_comes_from_the_build_settings():
    """A bank says which unit of the completion reward its meta-models
    learned: the build's ``reptile: reward_unit``; a bank whose settings
    predate the key learned the 10 ms unit."""
    assert _bank(meta={"settings": {"reptile": {"reward_unit": "packet"}}}).reward_unit == "packet"
    assert _bank(meta={"settings": {"reptile": {"reward_unit": "time"}}}).reward_unit == "time"
    assert _bank(meta={"settings": {"reptile": {"inner_steps": 16}}}).reward_unit == "time"
    assert _bank().reward_unit == "packet"
    with pytest.raises(ConfigError, match="unknown reward_unit 'bytes'"):
        _ = _bank(meta={"settings": {"reptile": {"reward_unit": "bytes"}}}).reward_unit
