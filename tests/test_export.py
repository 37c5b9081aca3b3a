"""Model export: HDF5 and ONNX writers, their independent readers (h5py +
NumPy; onnxruntime), parity with the torch model, corrupt-file errors, and
the python -m falcon.export entry point (with falcon.train producing the
model it exports)."""

from __future__ import annotations

import json

import h5py
import numpy as np
import pytest
from conftest import mlflow_runs

import envs
from baselines.dqn.export import (
    INPUT_NAME,
    ONNX_IR_VERSION,
    ONNX_OPSET,
    OUTPUT_NAME,
    ModelRecord,
    check_parity,
    hdf5_forward,
    max_onnx_ir_version,
    onnx_q_values,
    random_states,
    read_hdf5,
    torch_q_values,
    write_hdf5,
    write_onnx,
)
from baselines.dqn.files import ModelFileError, atomic_path
from baselines.dqn.learner import BatchedDQN
from baselines.dqn.network import NumpyQNet, QNetSpec
from baselines.dqn.policy import DQNScheduler
from envs.gym_env import observe

SCENARIO = {"name": "static_4g_5g", "paths": [{"link": "4g"}, {"link": "5g"}]}


def trained_record(hidden, name="m", seed=0, steps=30) -> ModelRecord:
    """A model with non-trivial weights: a few DQN steps on random batches."""
    spec = QNetSpec(8, 2, tuple(hidden))
    learner = BatchedDQN(spec, 1, seed=seed)
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        learner.update(
            rng.uniform(0, 5, (1, 32, 8)).astype(np.float32),
            rng.integers(0, 2, (1, 32)),
            rng.uniform(0, 5, (1, 32)).astype(np.float32),
            rng.uniform(0, 5, (1, 32, 8)).astype(np.float32),
            np.zeros((1, 32), np.float32),
        )
    return ModelRecord(
        name, spec, learner.get_weights(0), {"note": "test", "cell": {"loss": [0, 1]}}
    )


def emulated_states(rec: ModelRecord, n_episodes: int = 1) -> np.ndarray:
    """Real states: those met while the model schedules (greedy) in the emulator."""
    net, states = NumpyQNet(rec.weights, rec.spec), []

    class Greedy(envs.Scheduler):
        def decide(self, view):
            s = observe(view)
            states.append(s)
            return int(net(s).argmax())

    for i in range(n_episodes):
        envs.run_episode(SCENARIO, {"kind": "bulk", "size_bytes": 300_000}, Greedy(), i)
    return np.asarray(states)


@pytest.mark.parametrize("hidden", [(16, 16, 16), (64, 64, 64), (128, 128, 128), (96, 48, 24)])
def test_roundtrip_parity_on_random_and_real_states(tmp_path, hidden):
    rec = trained_record(hidden)
    h5, onx = write_hdf5(tmp_path / "m.h5", [rec]), write_onnx(tmp_path / "m.onnx", rec)
    back = read_hdf5(h5)[0]
    assert back.spec == rec.spec and back.attrs["note"] == "test"
    assert all(np.array_equal(a, b) for a, b in zip(back.weights, rec.weights))
    real = emulated_states(rec)
    assert len(real) > 100
    for states in (random_states(8), real):
        res = check_parity(rec, h5, onx, states, tol=1e-5)
        assert res["hdf5_max_abs_diff"] < 1e-5 and res["onnx_max_abs_diff"] < 1e-5
        assert res["q_abs_max"] > 0.1  # non-trivial Q-values were compared


def test_parity_tolerance_scales_with_large_q_values(tmp_path):
    """Q-values of thousands (a completion-reward network late in training)
    differ by float32 rounding alone more than 1e-5; a wrong export still fails."""
    rec = trained_record((32, 32, 32))
    rec.weights[-2] = rec.weights[-2] * 5000.0
    rec.weights[-1] = rec.weights[-1] + 7000.0
    h5, onx = write_hdf5(tmp_path / "m.h5", [rec]), write_onnx(tmp_path / "m.onnx", rec)
    res = check_parity(rec, h5, onx, random_states(rec.spec.n_inputs, 64), tol=1e-5)
    assert res["q_abs_max"] > 5000
    bad = trained_record((32, 32, 32))
    bad.weights[-1] = bad.weights[-1] + 1e-3  # an export that is wrong by 1e-3 at Q ~ 1
    h5_bad = write_hdf5(tmp_path / "bad.h5", [bad])
    with pytest.raises(ModelFileError, match="differ from the torch model"):
        check_parity(
            trained_record((32, 32, 32)),
            h5_bad,
            None,
            random_states(rec.spec.n_inputs, 64),
            tol=1e-5,
        )


def test_onnx_io_names_dynamic_batch_and_versions(tmp_path):
    import onnx

    rec = trained_record((32, 32, 32))
    path = write_onnx(tmp_path / "m.onnx", rec)
    model = onnx.load(path)
    assert model.ir_version == ONNX_IR_VERSION <= max_onnx_ir_version()
    assert [(o.domain, o.version) for o in model.opset_import] == [("", ONNX_OPSET)]
    assert [i.name for i in model.graph.input] == [INPUT_NAME]
    assert [o.name for o in model.graph.output] == [OUTPUT_NAME]
    assert model.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    meta = {p.key: p.value for p in model.metadata_props}
    assert json.loads(meta["feature_names"])[3] == "path0_rtt"
    for b in (1, 37):
        x = random_states(8, b)
        np.testing.assert_allclose(onnx_q_values(path, x), torch_q_values(rec, x), atol=1e-5)


def test_input_normalisation_travels_with_the_model(tmp_path):
    spec = QNetSpec(
        8, 2, (16, 16, 16), input_offset=[0.5] * 8, input_scale=[2.0, 1, 1, 1, 3, 1, 1, 4]
    )
    rec = ModelRecord("norm", spec, trained_record((16, 16, 16)).weights)
    h5, onx = write_hdf5(tmp_path / "n.h5", [rec]), write_onnx(tmp_path / "n.onnx", rec)
    assert read_hdf5(h5)[0].spec == spec
    with h5py.File(h5) as f:
        g = f["models/norm/normalisation"]
        assert g.attrs["formula"] == "(x - offset) / scale" and g.attrs["rtt_scale_s"] == 0.1
        assert list(g["scale"][()]) == [2, 1, 1, 1, 3, 1, 1, 4]
    check_parity(rec, h5, onx)


def test_bank_of_models_in_one_file(tmp_path):
    recs = [trained_record((16, 16, 16), name=f"cell_{i:03d}", seed=i, steps=3) for i in range(3)]
    h5 = write_hdf5(tmp_path / "bank.h5", recs, file_attrs={"grid": "paper", "n_cells": 3})
    with h5py.File(h5) as f:
        assert f.attrs["n_models"] == 3 and list(f.attrs["model_names"]) == [r.name for r in recs]
        assert list(f["models/cell_001"].attrs["layer_order"]) == [
            "dense_0",
            "dense_1",
            "dense_2",
            "dense_3",
        ]
        assert list(f["models/cell_001"].attrs["activations"]) == ["relu", "relu", "relu", "linear"]
        assert f["models/cell_001/dense_0/kernel"].shape == (8, 16)
    assert [r.name for r in read_hdf5(h5, names=["cell_002"])] == ["cell_002"]
    x = random_states(8, 20)
    for r in recs:
        np.testing.assert_allclose(hdf5_forward(h5, x, r.name), torch_q_values(r, x), atol=1e-5)


def _one_line(exc: BaseException) -> str:
    msg = str(exc)
    assert "\n" not in msg and msg
    return msg


def test_corrupt_and_mismatching_files_give_one_line_errors(tmp_path):
    rec = trained_record((16, 16, 16))
    good = write_hdf5(tmp_path / "good.h5", [rec])
    (tmp_path / "junk.h5").write_bytes(b"\x89HDF\r\n junk")
    truncated = tmp_path / "trunc.h5"
    truncated.write_bytes(good.read_bytes()[:1500])
    with h5py.File(tmp_path / "foreign.h5", "w") as f:
        f.create_dataset("x", data=[1])
    cases = {
        "junk.h5": "not a readable HDF5",
        "trunc.h5": "not a readable HDF5",
        "foreign.h5": "not a FALCON Q-network",
        "missing.h5": "no such file",
    }
    for name, message in cases.items():
        with pytest.raises(ModelFileError, match=message) as e:
            read_hdf5(tmp_path / name)
        _one_line(e.value)

    # a layer whose shape does not chain, a missing layer, non-finite weights
    def wrong_shape(f):
        del f["models/m/dense_1/kernel"]
        f.create_dataset("models/m/dense_1/kernel", data=np.zeros((5, 16), np.float32))

    def missing_layer(f):
        del f["models/m/dense_2"]

    def nan_bias(f):
        f["models/m/dense_0/bias"][0] = np.nan

    for mutate, message in (
        (wrong_shape, "do not chain"),
        (missing_layer, "missing"),
        (nan_bias, "non-finite"),
    ):
        bad = tmp_path / "bad.h5"
        bad.write_bytes(good.read_bytes())
        with h5py.File(bad, "a") as f:
            mutate(f)
        with pytest.raises(ModelFileError, match=message) as e:
            read_hdf5(bad)
        _one_line(e.value)
    with pytest.raises(ModelFileError, match="no model"):
        read_hdf5(good, names=["other"])
    # ONNX: garbage bytes, and a graph with other I/O names
    (tmp_path / "junk.onnx").write_bytes(b"garbage")
    with pytest.raises(ModelFileError, match="onnxruntime cannot load") as e:
        onnx_q_values(tmp_path / "junk.onnx", random_states(8, 2))
    _one_line(e.value)
    import onnx
    from onnx import TensorProto, helper

    g = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["b", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["b", 8])],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, tmp_path / "other.onnx")
    with pytest.raises(ModelFileError, match="expected input 'state'"):
        onnx_q_values(tmp_path / "other.onnx", random_states(8, 2))
    with pytest.raises(ModelFileError, match="width 8"):
        onnx_q_values(write_onnx(tmp_path / "m.onnx", rec), np.zeros((2, 5), np.float32))
    # a mismatch between an export and the torch model is caught by the parity check
    other = trained_record((16, 16, 16), seed=5)
    with pytest.raises(ModelFileError, match="differ from the torch model"):
        check_parity(other, good, None)


def test_writes_are_atomic(tmp_path):
    target = tmp_path / "m.h5"
    write_hdf5(target, [trained_record((8, 8, 8))])
    before = target.read_bytes()
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            tmp.write_bytes(b"partial")
            raise RuntimeError("crash while writing")
    assert target.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["m.h5"]


# ------------------------------------------------------------------ entry points
def test_export_entry_point_in_process(tmp_path, compose, capsys):
    from falcon import cli
    from falcon.export import run_export

    sched = DQNScheduler(reward="packet_rate", seed=1, hidden=[24, 24, 24])
    envs.run_episode(SCENARIO, {"kind": "bulk", "size_bytes": 100_000}, sched, 0)  # builds the net
    sched.save(tmp_path / "models" / "dqn")
    out = tmp_path / "export"
    summary = run_export(
        compose(
            "export", [f"model={tmp_path}", f"output={out}", "check.real_states.app_bytes=200000"]
        )
    )
    files = sorted(p.name for p in out.iterdir())
    assert files == ["dqn.h5", "dqn.onnx", "summary.json"]
    parity = summary["exports"]["dqn"]["parity"]["dqn"]
    assert parity["random"]["onnx_max_abs_diff"] < 1e-5 and parity["real"]["states"] > 50
    assert json.loads((out / "summary.json").read_text())["onnx_ir_version"] == 8
    x = random_states(8, 10)
    np.testing.assert_allclose(onnx_q_values(out / "dqn.onnx", x), sched.q_values(x), atol=1e-5)

    # bad input: one "error:" line and exit status 2 (falcon.cli.guard, as the other entry points)
    (tmp_path / "broken.h5").write_bytes(b"nope")
    capsys.readouterr()
    with pytest.raises(SystemExit) as e:
        cli.guard(run_export)(
            compose("export", [f"model={tmp_path / 'broken.h5'}", f"output={tmp_path / 'x'}"])
        )
    err = capsys.readouterr().err.strip().splitlines()
    assert e.value.code == 2 and len(err) == 1 and err[0].startswith("error: model file")
    assert not (tmp_path / "x").exists()
    with pytest.raises(SystemExit):
        cli.guard(run_export)(compose("export", [f"model={tmp_path / 'none'}", "formats=[pdf]"]))


class RecordingTracker:
    """Stands in for falcon.tracking's MLflow tracker (same methods); the
    slow command-line test below checks the real MLflow store."""

    def __init__(self):
        self.metrics: list[tuple[dict, int | None]] = []

    def log_metrics(self, metrics, step=None):
        self.metrics.append((dict(metrics), step))

    def history(self, key):
        return [(step, m[key]) for m, step in self.metrics if key in m]


def test_train_logs_the_learning_curve_and_exports(tmp_path, compose, capsys):
    """falcon.train's training step, in process: DQN-On trains (progress on
    stderr, learning curve per episode through the tracker falcon.train
    gives it, model saved), then falcon.export writes and checks its HDF5
    and ONNX."""
    from falcon.config import make_plan
    from falcon.export import run_export
    from falcon.train import train_agents

    cfg = compose(
        "train",
        [
            "experiment=tiny",
            "agent=dqn_on",
            "agent.train.episodes=3",
            "agent.log_every=1",
            "agent.hidden=[16,16,16]",
            "runs=1",
        ],
    )
    plan = make_plan(
        cfg,
        choices={"scenario": "static_4g_5g", "app": "bulk", "agent": "dqn_on"},
        cli_keys={"agent"},
    )
    staging = tmp_path / "train"
    staging.mkdir()
    tracker = RecordingTracker()
    plan = train_agents(plan, staging, tracker, train_seed=7)
    assert "dqn_on: episode 3/3" in capsys.readouterr().err  # progress lines
    ((name, trained),) = plan.agents
    assert name == "dqn_on" and trained.episodes_run == 3
    assert (staging / "models" / "dqn_on" / "model.h5").is_file()
    curve = tracker.history("train/dqn_on/download_time_s")
    assert [step for step, _ in curve] == [0, 1, 2] and all(v > 0 for _, v in curve)
    assert len(tracker.history("train/dqn_on/loss")) == 3
    assert tracker.history("train/dqn_on/final_download_time_s")

    out = tmp_path / "export"
    run_export(compose("export", [f"model={staging}", f"output={out}"]))
    assert sorted(p.name for p in out.iterdir()) == ["dqn_on.h5", "dqn_on.onnx", "summary.json"]
    x = random_states(trained.spec.n_inputs, 10)  # the default (completion) MDP: 19 inputs
    np.testing.assert_allclose(
        onnx_q_values(out / "dqn_on.onnx", x), trained.q_values(x), atol=1e-5
    )


@pytest.mark.slow
def test_train_then_export_command_lines(run_cli, tmp_path, mlflow_uri):
    """The same through the command lines, with the real MLflow store
    (subprocesses: ~30 s)."""
    out = tmp_path / "train"
    res = run_cli(
        "train",
        "experiment=tiny",
        "agent=dqn_on",
        "agent.train.episodes=3",
        "agent.log_every=1",
        "agent.hidden=[16,16,16]",
        "runs=1",
        f"output={out}",
        f"tracking.uri={mlflow_uri}",
    )
    assert res.returncode == 0, res.stderr
    assert "dqn_on: episode 3/3" in res.stderr
    client, runs = mlflow_runs(mlflow_uri)
    history = client.get_metric_history(runs[-1].info.run_id, "train/dqn_on/download_time_s")
    assert [m.step for m in history] == [0, 1, 2]
    exp = tmp_path / "export"
    res = run_cli("export", f"model={out}", f"output={exp}")
    assert res.returncode == 0, res.stderr
    assert sorted(p.name for p in exp.iterdir()) == ["dqn_on.h5", "dqn_on.onnx", "summary.json"]
    assert "exports match the torch model" in res.stderr
    res = run_cli("export", f"model={tmp_path / 'nothing-here'}", timeout=120)
    assert res.returncode == 2 and res.stderr.strip().startswith("error:")
    assert len(res.stderr.strip().splitlines()) == 1
