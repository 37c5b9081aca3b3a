"""Hybrid MPTCP model files (baselines/hybrid/export.py): HDF5 and ONNX, the
NumPy and onnxruntime readers against the torch actor, falcon.export's
dispatch, and one-line errors for corrupt or foreign files."""

from __future__ import annotations

import json

import h5py
import numpy as np
import pytest
import torch

from baselines.dqn.files import ModelFileError
from baselines.hybrid.agent import HybridMPTCP
from baselines.hybrid.export import (
    check_parity,
    numpy_actor,
    onnx_actor,
    random_states,
    read_weights,
    torch_actor,
    write_onnx,
)

torch.set_num_threads(1)

SMALL = {"network": {"lstm_hidden": 16, "hidden": [32, 32]}}


def _trained_like(seed=0, **kw):
    """An agent whose weights are not the initial ones (a few updates on random transitions)."""
    from baselines.gaps.ddpg import Replay

    a = HybridMPTCP(seed=seed, **kw)
    rep = Replay(64, 3, 6)
    x = random_states(a.net_config, 64, subflows=(3,))[0]
    m = np.ones(3, np.float32)
    rng = np.random.default_rng(seed)
    for i in range(64):
        rep.add(
            x[i],
            m,
            rng.uniform(-1, 1, 3).astype(np.float32),
            rng.normal(),
            x[(i + 1) % 64],
            m,
            False,
        )
    for _ in range(5):
        a.ddpg.update(rep.sample(a.rng, 16))
    return a


def test_numpy_and_onnx_readers_match_torch_for_any_subflow_count(tmp_path):
    import onnx

    a = _trained_like(1)
    a.save(tmp_path)
    h5 = tmp_path / "model.h5"
    onx = write_onnx(tmp_path / "actor.onnx", h5)
    res = check_parity(a, h5, onx)  # 1, 2, 3, 4, 8 subflows, 256 states each
    assert res["states"] == 5 * 256
    assert res["hdf5_max_abs_diff"] < 1e-5 and res["onnx_max_abs_diff"] < 1e-5
    x = random_states(a.net_config, 7, subflows=(5,))[0]
    out = onnx_actor(onx, x)
    assert out.shape == (7, 5) and np.all(np.abs(out) <= 1.0)
    np.testing.assert_allclose(numpy_actor(h5, x), torch_actor(a, x), atol=1e-5)
    model = onnx.load(onx)
    assert model.ir_version == 8 and model.opset_import[0].version == 17
    (inp,), (outp,) = model.graph.input, model.graph.output
    assert inp.name == "state" and outp.name == "window_exponent"
    dims = [d.dim_param or d.dim_value for d in inp.type.tensor_type.shape.dim]
    assert dims == ["batch", "subflows", 6]
    meta = {p.key: p.value for p in model.metadata_props}
    assert meta["kind"] == "hybrid" and json.loads(meta["inner_loop"]) is True
    # the torch actor's padding: a padded batch gives the unpadded rows' actions
    xp = np.concatenate([x[:, :3], np.zeros((7, 2, 6), np.float32)], axis=1)
    mask = np.array([[1, 1, 1, 0, 0]] * 7, np.float32)
    with torch.no_grad():
        padded = a.ddpg.actor(torch.from_numpy(xp), torch.from_numpy(mask)).numpy()
    np.testing.assert_allclose(padded[:, :3], torch_actor(a, x[:, :3]), atol=1e-6)
    assert np.all(padded[:, 3:] == 0.0)


def test_the_file_records_kind_network_and_inner_loop(tmp_path):
    a = HybridMPTCP(inner_loop=False, seed=2, **SMALL)
    a.save(tmp_path)
    with h5py.File(tmp_path / "model.h5", "r") as f:
        assert f.attrs["format"] == "falcon-hybrid" and f.attrs["kind"] == "hybrid"
        assert not f.attrs["inner_loop"]
        assert json.loads(f.attrs["network"]) == {
            "n_features": 6,
            "lstm_hidden": 16,
            "hidden": [32, 32],
        }
        assert list(f.attrs["feature_names"]) == [
            "send_rate",
            "throughput",
            "rtt",
            "window_change",
            "share",
            "rtt_excess",
        ]
        assert "lstm.weight_ih_l0" in f["actor"] and "lstm.weight_ih_l0" in f["critic"]
    cfg, weights, meta = read_weights(tmp_path / "model.h5")
    assert cfg == a.net_config and meta == {"inner_loop": False, "action": "scale"}


def test_falcon_export_writes_and_checks_a_hybrid_model(tmp_path):
    from falcon.export import run_export

    a = _trained_like(3, inner_loop=False, **SMALL)
    a.save(tmp_path / "run" / "models" / "drl_mptcp")
    out = tmp_path / "out"
    summary = run_export(
        {
            "model": str(tmp_path / "run"),
            "formats": ["hdf5", "onnx"],
            "output": str(out),
            "onnx": {"opset": 17, "ir_version": 8},
            "check": {
                "enabled": True,
                "tolerance": 1e-5,
                "random_states": 32,
                "real_states": {"hybrid_app_bytes": 8_000_000},
            },
        }
    )
    e = summary["exports"]["drl_mptcp"]
    assert sorted(e["files"]) == ["drl_mptcp.h5", "drl_mptcp.onnx"]
    parity = e["parity"]["actor"]
    assert parity["random"]["states"] == 5 * 32 and parity["real"]["states"] >= 5
    assert parity["real"]["onnx_max_abs_diff"] < 1e-5
    x = random_states(a.net_config, 4, subflows=(2,))[0]
    np.testing.assert_allclose(onnx_actor(out / "drl_mptcp.onnx", x), torch_actor(a, x), atol=1e-5)


def _one_line(exc_info) -> str:
    msg = str(exc_info.value)
    assert "\n" not in msg
    return msg


def test_corrupt_and_foreign_files_are_one_line_errors(tmp_path, compose, capsys):
    from baselines.gaps.agent import GAPS
    from falcon import cli
    from falcon.export import run_export

    bad = tmp_path / "bad.h5"
    bad.write_bytes(b"not hdf5 at all")
    with pytest.raises(ModelFileError, match="cannot read it") as e:
        HybridMPTCP(model=str(bad))
    _one_line(e)
    GAPS(seed=0).save(tmp_path / "gaps")
    with pytest.raises(ModelFileError, match="not a Hybrid MPTCP model file") as e:
        HybridMPTCP(model=str(tmp_path / "gaps"))
    _one_line(e)
    a = HybridMPTCP(seed=0, **SMALL)
    a.save(tmp_path / "ok")
    with pytest.raises(ModelFileError, match="differs from the agent"):
        HybridMPTCP(model=str(tmp_path / "ok"))  # default network: 64/128
    for name, damage, match in (
        ("nan", lambda f: f["actor/head.0.bias"].__setitem__(0, np.nan), "NaN"),
        (
            "shape",
            lambda f: (
                f["actor"].__delitem__("head.2.bias"),
                f["actor"].create_dataset("head.2.bias", data=np.zeros(3, np.float32)),
            ),
            "has shape",
        ),
        ("missing", lambda f: f.__delitem__("critic"), "missing group /critic"),
        ("network", lambda f: f.attrs.__setitem__("network", "{not json"), "bad network"),
        ("version", lambda f: f.attrs.__setitem__("format_version", 9), "format_version"),
    ):
        p = tmp_path / f"{name}.h5"
        p.write_bytes((tmp_path / "ok" / "model.h5").read_bytes())
        with h5py.File(p, "r+") as f:
            damage(f)
        with pytest.raises(ModelFileError, match=match) as e:
            read_weights(p)
        _one_line(e)
    # the command: a damaged Hybrid file is one "error:" line, exit status 2, nothing written
    capsys.readouterr()
    with pytest.raises(SystemExit) as e:
        cli.guard(run_export)(
            compose("export", [f"model={tmp_path / 'nan.h5'}", f"output={tmp_path / 'x'}"])
        )
    err = capsys.readouterr().err.strip().splitlines()
    assert e.value.code == 2 and len(err) == 1 and err[0].startswith("error:") and "NaN" in err[0]
    assert not (tmp_path / "x").exists()
    # an ONNX file of another model is refused by name
    from baselines.gaps.export import write_onnx as write_gaps_onnx

    g = write_gaps_onnx(tmp_path / "g.onnx", tmp_path / "gaps" / "model.h5")
    with pytest.raises(ModelFileError, match="expected input 'state'") as e:
        onnx_actor(g, random_states(a.net_config, 2, subflows=(2,))[0])
    _one_line(e)
