"""python -m falcon.deploy: real downloads through the relay beside the
emulator (a tiny run writes every output, bytes verified, with an emulator
column), and its one-line errors (exit status 2, no transport process left).
Skipped, as tests/test_transport.py, when the transport binaries are absent."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import skip_unless_transport

from baselines.dqn.export import ModelRecord, write_hdf5, write_onnx
from baselines.dqn.learner import BatchedDQN
from baselines.dqn.network import QNetSpec
from envs.mdp import COMPLETION, n_inputs

skip_unless_transport()

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = [
    "scenario=custom",
    "scenario.paths.0.bandwidth_mbps=20",
    "scenario.paths.0.rtt_ms=20",
    "scenario.paths.1.bandwidth_mbps=10",
    "scenario.paths.1.rtt_ms=40",
    "scenario.cc=cubic",
]
SIZE = 300_000


def _record(n_paths: int = 2, n_out: int | None = None, seed: int = 0) -> ModelRecord:
    spec = QNetSpec(n_inputs(n_paths, COMPLETION), n_out or n_paths, (64, 64, 64))
    rec = ModelRecord(
        "dqn_off", spec, BatchedDQN(spec, 1, seed=seed).get_weights(0), {"reward": COMPLETION}
    )
    return rec


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """A falcon.train-like output (models/dqn_off/model.h5), a bare ONNX file,
    a model for 3 paths and a file that is no model."""
    d = tmp_path_factory.mktemp("models")
    (d / "train" / "models" / "dqn_off").mkdir(parents=True)
    write_hdf5(d / "train" / "models" / "dqn_off" / "model.h5", [_record()])
    onnx = write_onnx(d / "bare.onnx", _record())
    three = write_onnx(d / "three.onnx", _record(3))
    garbage = d / "garbage.onnx"
    garbage.write_bytes(b"\x08\x07not an onnx model" * 10)
    return {"train": d / "train", "onnx": onnx, "three": three, "garbage": garbage}


def _transport_pids() -> set[str]:
    out = subprocess.run(["pgrep", "-f", "falcon-quic"], capture_output=True, text=True)
    return set(out.stdout.split())


def _deploy(args: list[str], env=None, timeout: int = 300) -> subprocess.CompletedProcess:
    before = _transport_pids()
    res = subprocess.run(
        [sys.executable, "-m", "falcon.deploy", "tracking=none", "progress=false", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
    left = _transport_pids() - before
    assert not left, f"transport processes left running: {left}"
    return res


def test_tiny_deploy_run(models, tmp_path):
    out = tmp_path / "out"
    res = _deploy(
        [
            *SCENARIO,
            "agent_list=[minrtt,rr,model]",
            f"model={models['train']}",
            "runs=2",
            f"app.size_bytes={SIZE}",
            "transport.warmup=0",
            f"output={out}",
        ]
    )
    assert res.returncode == 0, res.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["job"] == "deploy" and summary["runs"] == 2 and summary["size_bytes"] == SIZE
    assert (
        summary["bytes_verified"] == {"minrtt": 2, "rr": 2, "model": 2}
        and summary["all_bytes_verified"]
    )
    real = summary["results"]["custom"]["bulk"]
    for ag in ("minrtt", "rr", "model"):
        t = real[ag]["download_time_s"]
        # 300 kB over 20 + 10 Mbit/s: at least 80 ms
        assert t["n"] == 2 and 0.08 < t["median"] < 20 and t["p25"] <= t["median"] <= t["p75"]
        assert real[ag]["goodput_mbps"]["median"] > 0
    # the timed downloads run without the decision log; one more, logged, gives the cost
    assert (
        "decision_cost_us" not in real["model"] and summary["decision_cost_us_median"]["model"] > 0
    )
    # the model was written as ONNX into the output; its emulator column is DQN-Off with the HDF5
    assert summary["model"]["onnx_written_here"] and (out / "models" / "dqn_off.onnx").is_file()
    emu = summary["emulator"]
    assert (
        emu["schedulers"] == {"minrtt": "minrtt", "rr": "rr", "model": "dqn_off"}
        and not emu["unavailable"]
    )
    for ag in ("minrtt", "rr", "model"):
        assert emu["results"]["custom"]["bulk"][ag]["download_time_s"]["median"] > 0.08
        row = summary["real_vs_emulated"][ag]
        assert (
            row["real_over_emulated"] > 0
            and row["emulated_vs_minrtt"] > 0
            and row["real_vs_minrtt"] > 0
        )
    assert summary["real_vs_emulated"]["minrtt"]["real_vs_minrtt"] == 1.0
    assert summary["transport"]["cc"] == "cubic"
    table = (out / "table.txt").read_text()
    assert "real against emulated" in table and "model" in table
    assert list(out.glob("download_time_s__*.png"))
    assert (out / "config.yaml").is_file()
    assert not list(tmp_path.glob(".out.tmp-*"))


def test_onnx_only_model_has_no_emulator_column(models, tmp_path):
    out = tmp_path / "out"
    res = _deploy(
        [
            *SCENARIO,
            "agent=model",
            f"model={models['onnx']}",
            "runs=1",
            f"app.size_bytes={SIZE}",
            "transport.warmup=0",
            "transport.decision_log=all",
            f"output={out}",
        ]
    )
    assert res.returncode == 0, res.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["schedulers"] == ["model"] and summary["bytes_verified"] == {"model": 1}
    cost = summary["results"]["custom"]["bulk"]["model"]["decision_cost_us"]["median"]
    assert cost > 0 and summary["decision_cost_us_median"]["model"] == cost
    assert "only an ONNX file" in summary["emulator"]["unavailable"]["model"]
    assert "emulator column unavailable" in (out / "table.txt").read_text()


def _fails(res: subprocess.CompletedProcess, expect: str, out: Path | None = None):
    assert res.returncode == 2, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and expect in lines[0], res.stderr
    if out is not None:
        assert not out.exists() and not list(out.parent.glob(f".{out.name}.tmp-*"))


def test_errors(models, tmp_path):
    out = tmp_path / "out"
    common = [*SCENARIO, "runs=1", f"app.size_bytes={SIZE}", "transport.warmup=0", f"output={out}"]
    _fails(
        _deploy([*common, "agent=model", f"model={tmp_path / 'missing.onnx'}"]), "no such file", out
    )
    _fails(_deploy([*common, "agent=model", f"model={models['garbage']}"]), "cannot load it", out)
    _fails(_deploy([*common, "agent=model", f"model={models['three']}"]), "3 outputs", out)
    _fails(_deploy([*common, "agent=model"]), "needs model=", out)
    _fails(_deploy([*common, "agent=bbr"]), "the transport runs minrtt, rr, model", out)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as busy:
        busy.bind(("127.0.0.1", 0))
        port = busy.getsockname()[1]
        _fails(
            _deploy([*common, "agent=minrtt", f"relay.listen=127.0.0.1:{port}"]),
            f"cannot bind 127.0.0.1:{port}",
            out,
        )


def test_missing_binaries_without_cargo(tmp_path):
    """No binaries in the cache and no cargo on PATH: one line, exit 2."""
    empty = tmp_path / "bin"
    empty.mkdir()
    env = {**os.environ, "FALCON_TRANSPORT_CACHE": str(tmp_path / "cache"), "PATH": str(empty)}
    out = tmp_path / "out"
    _fails(
        _deploy([*SCENARIO, "agent=minrtt", "runs=1", f"output={out}"], env=env),
        "cargo is missing",
        out,
    )


def test_scenario_differences_and_cc():
    from envs.scenario import normalise_scenario
    from falcon.deploy.inputs import scenario_differences, transport_cc

    scen = normalise_scenario(
        {"name": "x", "cc": "olia", "paths": [{"link": "4g"}, {"link": "wlan"}]}
    )
    cc, note = transport_cc("scenario", scen)
    assert cc == "cubic" and "no tquic counterpart" in note
    diffs = scenario_differences(scen, cc)
    assert any(d.startswith("initial_window_packets: emulator 32, tquic 10") for d in diffs)
    assert any(d.startswith("cc: emulator olia, tquic cubic") for d in diffs)
    matched = normalise_scenario(
        {
            "name": "x",
            "cc": "cubic",
            "initial_window_packets": 10,
            "packet_size": 1500,
            "flow_control": {"initial_window_bytes": 10_485_760},
            "paths": [{"link": "4g"}, {"link": "wlan"}],
        }
    )
    assert (
        transport_cc("scenario", matched)[0] == "cubic"
        and scenario_differences(matched, "cubic") == []
    )
    # the model before #46 differs from what tquic runs, and says so (HyStart++ only where both run CUBIC)
    before = normalise_scenario(
        {**matched, "hystart": False, "setup": {**matched["setup"], "handshake_link": False}}
    )
    diffs = scenario_differences(before, "cubic")
    assert [d.split(":")[0] for d in diffs] == ["setup.handshake_link", "hystart"]
    assert [d.split(":")[0] for d in scenario_differences({**before, "cc": "bbr"}, "bbr")] == [
        "setup.handshake_link"
    ]
