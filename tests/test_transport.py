"""The multipath QUIC transport (transports/, built by `make transport`):
downloads through the link relay with tquic's minRTT and round robin and the
ONNX-model scheduler, bytes verified; the model's Q-values and state
features in the transport against the Python reference on its logged
states; its decision cost; decision logs converted to experience logs; and
the one-line errors of bad model files. Skipped when the binaries are absent."""

from __future__ import annotations

import json
import os
import subprocess
from types import SimpleNamespace

import numpy as np
import pytest
from conftest import skip_unless_transport

from baselines.dqn.experience import read_experience
from baselines.dqn.export import ModelRecord, onnx_q_values, write_onnx
from baselines.dqn.learner import BatchedDQN
from baselines.dqn.network import QNetSpec
from envs.mdp import COMPLETION, PACKET_RATE, n_inputs
from falcon.deploy.experience import convert, read_decision_log
from falcon.deploy.reference import reference_mdp
from falcon.deploy.transport import binary, download, pattern, server_command

skip_unless_transport()

SIZE = 2_000_000
SCENARIO = {
    "name": "transport_test",
    "paths": [
        {"bandwidth_mbps": 20.0, "rtt_ms": 20.0, "rtt_std_ms": 0.0, "loss": 0.0},
        {"bandwidth_mbps": 10.0, "rtt_ms": 40.0, "rtt_std_ms": 0.0, "loss": 0.0},
    ],
}


def fresh_model(path, n_in: int, n_out: int = 2, seed: int = 0):
    """A freshly initialised 3 x 64 Q-network with a non-trivial input
    normalisation, exported to ONNX."""
    rng = np.random.default_rng(seed)
    spec = QNetSpec(
        n_in,
        n_out,
        (64, 64, 64),
        input_offset=tuple(rng.uniform(-1, 1, n_in)),
        input_scale=tuple(rng.uniform(0.5, 2, n_in)),
    )
    return write_onnx(
        path, ModelRecord("fresh", spec, BatchedDQN(spec, 1, seed=seed).get_weights(0))
    )


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("models")
    return {
        COMPLETION: fresh_model(d / "completion.onnx", n_inputs(2, COMPLETION)),
        PACKET_RATE: fresh_model(d / "paper.onnx", n_inputs(2, PACKET_RATE)),
    }


@pytest.fixture(scope="module")
def model_runs(models, tmp_path_factory):
    """One logged download per MDP with the model scheduler."""
    d = tmp_path_factory.mktemp("runs")
    runs = {}
    for reward, model in models.items():
        log = d / f"{reward}.jsonl"
        rep = download(
            SCENARIO, SIZE, "falcon", model=model, decision_log=log, output=d / f"{reward}.bin"
        )
        runs[reward] = SimpleNamespace(report=rep, log=log, output=d / f"{reward}.bin", model=model)
    return runs


def _check(rep: dict, output=None):
    assert rep["server_rc"] == 0 and rep["client_rc"] == 0, rep["stderr"]
    assert rep["verified"] and rep["bytes"] == SIZE
    assert len(rep["path_recv_bytes"]) == 2 and all(b > 0 for b in rep["path_recv_bytes"].values())
    if output is not None:
        assert np.array_equal(np.fromfile(output, np.uint8), pattern(SIZE))


@pytest.mark.parametrize("scheduler", ["minrtt", "roundrobin"])
def test_download_tquic_schedulers(scheduler, tmp_path):
    rep = download(SCENARIO, SIZE, scheduler, output=tmp_path / "out.bin")
    _check(rep, tmp_path / "out.bin")
    # 2 MB over 20 + 10 Mbit/s takes at least 0.53 s
    assert 0.5 < rep["seconds"] < 20


@pytest.mark.parametrize("reward", [COMPLETION, PACKET_RATE])
def test_download_model_scheduler(model_runs, reward):
    run = model_runs[reward]
    _check(run.report, run.output)
    (ep,) = read_decision_log(run.log)
    assert ep.reward == reward and ep.n_paths == 2 and ep.end is not None
    assert len(ep.decisions) > 100 and ep.end["decisions"] == len(ep.decisions)
    # a path that never sent data was probed first (path 0 sent before path 1
    # came up, with minRTT); most sending decisions got their packet's fate
    probes = [d for d in ep.decisions if d["probe"]]
    assert [d["action"] for d in probes] == [1]
    assert probes[0]["raw"]["paths"][1]["packets_sent"] == 0
    assert all(p["packets_sent"] > 0 for p in ep.decisions[-1]["raw"]["paths"])
    sent = [d["i"] for d in ep.decisions if d["sent"]]
    assert sum(i in ep.fates for i in sent) > 0.5 * len(sent)


@pytest.mark.parametrize("reward", [COMPLETION, PACKET_RATE])
def test_q_value_parity_on_logged_states(model_runs, reward):
    run = model_runs[reward]
    (ep,) = read_decision_log(run.log)
    ds = [d for d in ep.decisions if not d["probe"]]
    states = np.asarray([d["state"] for d in ds], np.float32)
    q_rust = np.asarray([d["q"] for d in ds], np.float32)
    q_ref = onnx_q_values(run.model, states)
    assert np.max(np.abs(q_rust - q_ref)) <= 1e-5
    # the action is the argmax (lowest index on ties)
    assert [d["action"] for d in ds] == list(np.argmax(q_rust, axis=1))


def _view(d: dict):
    raw = d["raw"]
    paths = []
    for p in raw["paths"]:
        p = SimpleNamespace(**p)
        p.packets_in_flight = p.bytes_in_flight / p.mss
        p.may_send = lambda now, room=p.has_room: room
        paths.append(p)
    return SimpleNamespace(
        paths=paths,
        payload=raw["payload"],
        send_window=raw["send_window"],
        pending_bytes=raw["pending_bytes"],
    )


def _worst_feature_error(ep) -> float:
    """Largest difference (relative above 1) between the logged states and
    envs.mdp's features of the logged estimates."""
    mdp, reward = reference_mdp(), ep.reward
    n_in = n_inputs(2, reward)
    worst = 0.0
    for d in ep.decisions:
        view, now = _view(d), d["t"]
        if reward == COMPLETION:
            srtts, rates = mdp.path_estimates(view)
            raw = d["raw"]
            finish = mdp.predicted_finish(
                now,
                raw["pending_bytes"],
                [p.last_send for p in view.paths],
                [p.bytes_in_flight > 0 for p in view.paths],
                srtts,
                rates,
            )
            assert finish == pytest.approx(raw["finish"], rel=1e-12, abs=1e-12)
            ref = mdp.completion_features_into(view, now, finish, [0.0] * n_in)
        else:
            ref = mdp.observe_into(view, [0.0] * n_in)
        diff = np.abs(np.asarray(ref, np.float32) - np.asarray(d["state"], np.float32))
        worst = max(worst, float(np.max(diff / np.maximum(1.0, np.abs(ref)))))
    return worst


@pytest.mark.parametrize("reward", [COMPLETION, PACKET_RATE])
def test_state_features_match_envs_mdp(model_runs, reward):
    """The transport's states are envs.mdp's features of its logged estimates."""
    (ep,) = read_decision_log(model_runs[reward].log)
    assert _worst_feature_error(ep) <= 1e-6


def test_lossy_download_model_scheduler(models, tmp_path):
    """With random loss: lost packets are logged, retransmitted data counts as
    unsent, the download completes and the states still match envs.mdp."""
    lossy = {
        "name": "lossy",
        "paths": [dict(SCENARIO["paths"][0], loss=0.02), dict(SCENARIO["paths"][1], loss=0.02)],
    }
    log = tmp_path / "lossy.jsonl"
    rep = download(
        lossy,
        SIZE,
        "falcon",
        model=models[COMPLETION],
        decision_log=log,
        output=tmp_path / "out.bin",
    )
    _check(rep, tmp_path / "out.bin")
    (ep,) = read_decision_log(log)
    assert sum(not f["acked"] for f in ep.fates.values()) > 0
    assert any(p["packets_lost"] > 0 for p in ep.decisions[-1]["raw"]["paths"])
    assert _worst_feature_error(ep) <= 1e-6
    _, n = convert([log], tmp_path / "exp.h5", lossy)
    assert len(read_experience(tmp_path / "exp.h5")) == n > 50


def _first_stream_times(server_log) -> tuple[float, dict[str, float]]:
    """From the server's tquic log: when it received its first packet, and
    per remote address when it sent its first STREAM frame [s]."""
    t0, first = None, {}
    for line in server_log.read_text().splitlines():
        if t0 is None and " recv packet " in line:
            t0 = float(line.split()[0])
        if " sent packet " in line and "frames=[STREAM" in line:
            remote = line.rsplit("remote=", 1)[1].split()[0]
            first.setdefault(remote, float(line.split()[0]))
    return t0, first


def test_second_path_validated_at_80ms_rtt_with_jitter(tmp_path, monkeypatch):
    """The mobile pair's stall (docs/tutorials/real_transport.md, "The mobile pair's tail"): at 80 ms
    RTT with 18 ms std, seed 3 timed tquic's 25 ms PATH_CHALLENGEs out before
    their responses came back, the probes filled the new path's window and
    the client stopped acknowledging path 0: 3.0-4.4 s in 8 of 8 downloads,
    the second path carrying data 2.5 s after the connection started. With
    patches/0002 the second path carries data within a few RTTs."""
    jitter = {
        "name": "jitter80",
        "cc": "cubic",
        "initial_window_packets": 10,
        "packet_size": 1500,
        "flow_control": {"initial_window_bytes": 10485760},
        "paths": [
            {"bandwidth_mbps": b, "rtt_ms": 80.0, "rtt_std_ms": 18.0, "loss": 0.0} for b in (15, 10)
        ],
    }
    monkeypatch.setenv("FALCON_QUIC_LOG", "debug")
    monkeypatch.setenv("FALCON_QUIC_LOG_FILE", str(tmp_path / "{role}.log"))
    rep = download(jitter, SIZE, "minrtt", seed=3, cc="cubic", output=tmp_path / "out.bin")
    _check(rep, tmp_path / "out.bin")
    t0, first = _first_stream_times(tmp_path / "server.log")
    assert (tmp_path / "client.log").stat().st_size > 0 and t0 is not None and len(first) == 2, (
        first
    )
    opened = sorted(first.values())[1] - t0
    print(
        f"download {rep['seconds']:.3f} s, second path carries data {opened:.3f} s after the first packet"
    )
    assert opened < 0.8, opened  # 0.22-0.27 s; 2.5 s with the stall
    assert rep["seconds"] < 2.5  # 1.1-1.3 s; 3.0-4.4 s with the stall


def test_decision_cost(models):
    """Median cost of one decision (features + tract inference) of a 3 x 64 MLP."""
    out = subprocess.run(
        [
            str(binary("falcon-sched-tool")),
            "bench",
            "--model",
            str(models[COMPLETION]),
            "--iterations",
            "20000",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout)
    print(
        f"decision cost: median {res['median_ns'] / 1000:.2f} us, p99 {res['p99_ns'] / 1000:.2f} us"
    )
    assert res["median_ns"] < 50_000  # goal 10 us; a loaded CI machine gets slack


def test_tool_q_values_match_onnxruntime(models):
    states = (
        np.random.default_rng(3).uniform(0, 5, (64, n_inputs(2, PACKET_RATE))).astype(np.float32)
    )
    text = "\n".join(",".join(repr(float(x)) for x in s) for s in states)
    out = subprocess.run(
        [str(binary("falcon-sched-tool")), "q", "--model", str(models[PACKET_RATE])],
        input=text,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    q = np.asarray([[float(x) for x in ln.split(",")] for ln in out.stdout.split()], np.float32)
    assert np.max(np.abs(q - onnx_q_values(models[PACKET_RATE], states))) <= 1e-5


@pytest.mark.parametrize("reward", [COMPLETION, PACKET_RATE])
def test_experience_from_decision_log(model_runs, reward, tmp_path):
    out, n = convert([model_runs[reward].log], tmp_path / "exp.h5", SCENARIO, seed=0)
    exp = read_experience(out)
    assert exp.reward == reward and exp.n_paths == 2 and len(exp) == n > 50
    assert exp.state.shape == (n, n_inputs(2, reward)) and exp.n_episodes == 1
    assert np.all(np.isfinite(exp.reward_values)) and exp.done.sum() == 1
    if reward == PACKET_RATE:
        # 0.1 s / time to ACK: between 0 (lost) and 0.1 s / 20 ms
        assert np.all(exp.reward_values >= 0) and np.all(exp.reward_values <= 5.01)


def _server_fails(args: list[str], expect: str, env=None):
    proc = subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    try:
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
            pytest.fail("the server kept running after a bad model")
    assert proc.returncode == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: model ") and expect in lines[0], err


def test_bad_model_files(tmp_path):
    missing = tmp_path / "missing.onnx"
    _server_fails(server_command("falcon", 0, model=missing), "no such file")
    _server_fails(
        server_command("falcon", 0),
        "no such file",
        env={**os.environ, "FALCON_MODEL": str(missing)},
    )
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"\x08\x07not an onnx model at all" * 10)
    _server_fails(server_command("falcon", 0, model=garbage), "not a readable ONNX model")
    four = fresh_model(tmp_path / "four.onnx", n_inputs(4, PACKET_RATE), 4)
    _server_fails(server_command("falcon", 0, model=four), "16 inputs fit neither MDP for 2 paths")
    three_out = fresh_model(tmp_path / "three.onnx", n_inputs(2, COMPLETION), 3)
    _server_fails(server_command("falcon", 0, model=three_out), "3 outputs")
