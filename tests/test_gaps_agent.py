"""GAPS: the OQS feedback, the encoder's masking, the agent's decisions, training, files and export."""

from __future__ import annotations

import json

import h5py
import numpy as np
import pytest
import torch

from baselines.dqn.files import ModelFileError
from baselines.gaps.agent import GAPS
from baselines.gaps.export import check_parity, numpy_actor, onnx_actor, random_states, write_onnx
from baselines.gaps.features import N_FEATURES
from baselines.gaps.network import Actor, net_config
from envs.errors import ConfigError
from envs.runner import run_episode, setup_episode
from envs.scheduler import Decision, Scheduler

ASYM = {
    "name": "asym",
    "paths": [
        {"bandwidth_mbps": 50, "rtt_ms": 20, "loss": 1e-4},
        {"bandwidth_mbps": 50, "rtt_ms": 80, "loss": 1e-4},
    ],
}
SMALL_APP = {"kind": "bulk", "size_bytes": 400_000}
MID_APP = {
    "kind": "bulk",
    "size_bytes": 3_000_000,
}  # long enough for the 80 ms path to open and carry data
TINY = {"warmup": 32, "batch_size": 16, "replay_capacity": 4096}


class _PeerOqsProbe(Scheduler):
    """The slow path first, with a gap (so the receiver reorders), recording ``view.peer_oqs``."""

    wants_packet_feedback = True

    def __init__(self):
        self.seen = []

    def decide(self, view):
        self.seen.append((view.now, view.peer_oqs))
        for p in reversed(view.paths):
            if p.has_room:
                return p.index if p.index == 0 else Decision(p.index, gap=10 * view.payload)
        return None


def test_acks_carry_the_receivers_out_of_order_queue_to_the_sender():
    probe = _PeerOqsProbe()
    emu, conn, app, s = setup_episode(ASYM, MID_APP, probe, 1)
    emu.sim.run(s["max_duration_s"])
    reported = {v for _, v in probe.seen}
    assert max(reported) > 0
    assert reported <= set(conn.oqs_v) | {0}  # every report is a queue the receiver had
    first_queue = conn.oqs_t[next(i for i, v in enumerate(conn.oqs_v) if v > 0)]
    first_report = next(t for t, v in probe.seen if v > 0)
    assert first_report > first_queue  # it travels back with an ACK


def test_padding_and_the_fastest_token_get_no_action_and_padding_changes_nothing():
    torch.manual_seed(0)
    actor = Actor(net_config(N_FEATURES)).eval()
    x = torch.rand(1, 8, N_FEATURES)
    mask = torch.tensor([[1.0, 1.0, 1.0, 0, 0, 0, 0, 0]])
    out = actor(x, mask)
    assert out[0, 0] == 0 and torch.all(out[0, 3:] == 0)
    assert torch.all(out[0, 1:3] != 0)
    x2 = x.clone()
    x2[0, 3:] = torch.rand(5, N_FEATURES) * 100
    assert torch.allclose(actor(x2, mask), out, atol=1e-6)


def test_slow_paths_send_with_the_gap_kept_within_the_unsent_data():
    agent = GAPS(seed=0)
    decisions = []
    real_decide = GAPS.decide

    def decide(self, view):
        d = real_decide(self, view)
        decisions.append((d, view.payload))
        return d

    def epoch(self, view):  # a fixed GAP of 30 packets on the slow path
        self.gaps = [0.0, 30.0]

    agent._epoch = epoch.__get__(agent)
    agent.decide = decide.__get__(agent)
    r = run_episode(ASYM, MID_APP, agent, 2)
    gaps = [d.gap for d, _ in decisions if isinstance(d, Decision)]
    payload = decisions[0][1]
    assert gaps and max(gaps) == 30 * payload
    assert all(g % payload == 0 and 0 <= g <= 30 * payload for g in gaps)
    assert min(gaps) < 30 * payload  # the tail: gap_limit shrinks it
    assert r.metrics["timed_out"] == 0.0


def test_training_is_seeded_and_learns_something(tmp_path):
    def train(seed):
        a = GAPS(seed=seed, epoch="ack", **TINY)  # many epochs in a short download
        out = a.fit(
            ASYM, SMALL_APP, seed=3, progress=False, episodes=2, rtt_ranges_ms=[[20, 40], [60, 90]]
        )
        return a, out

    a, out = train(0)
    b, _ = train(0)
    assert out["updates"] > 0 and np.isfinite(out["critic_loss"])
    for pa, pb in zip(a.ddpg.actor.parameters(), b.ddpg.actor.parameters()):
        assert torch.equal(pa, pb)
    assert not a.learning and a.replay is None
    a.save(tmp_path / "m")
    c = GAPS(seed=5, model=str(tmp_path / "m"))
    x, m = random_states(a.net_config, 16)
    assert np.array_equal(c.ddpg.act(x[0], m[0]), a.ddpg.act(x[0], m[0]))
    assert json.loads((tmp_path / "m" / "agent.json").read_text())["agent"] == "gaps"


def test_exports_match_the_torch_actor(tmp_path):
    a = GAPS(seed=1)
    for p in a.ddpg.actor.parameters():  # away from the initial values
        p.data += 0.05 * torch.randn_like(p)
    a.save(tmp_path)
    onnx_path = write_onnx(tmp_path / "actor.onnx", tmp_path / "model.h5")
    res = check_parity(a, tmp_path / "model.h5", onnx_path, tolerance=1e-5)
    assert res["hdf5_max_abs_diff"] <= 1e-5 and res["onnx_max_abs_diff"] <= 1e-5
    x, m = random_states(a.net_config, 8, seed=3)
    assert np.abs(onnx_actor(onnx_path, x, m)).max() > 1e-3  # not a constant graph
    assert numpy_actor(tmp_path / "model.h5", x, m).shape == (8, 8)


def test_falcon_export_writes_and_checks_a_gaps_model(tmp_path):
    from falcon.export import run_export

    a = GAPS(seed=2)
    a.save(tmp_path / "run" / "models" / "gaps")
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
                "random_states": 64,
                "real_states": {"gaps_app_bytes": 3_000_000},
            },
        }
    )
    e = summary["exports"]["gaps"]
    assert sorted(e["files"]) == ["gaps.h5", "gaps.onnx"]
    assert e["parity"]["actor"]["real"]["states"] >= 5
    assert (out / "gaps.onnx").is_file()


def test_bad_model_files_and_settings_are_one_line_errors(tmp_path):
    bad = tmp_path / "bad.h5"
    bad.write_bytes(b"not hdf5 at all")
    with pytest.raises(ModelFileError, match="cannot read it"):
        GAPS(model=str(bad))
    other = tmp_path / "other.h5"
    with h5py.File(other, "w") as f:
        f.attrs["format"] = "falcon-qnet"
    with pytest.raises(ModelFileError, match="not a GAPS model file"):
        GAPS(model=str(other))
    from baselines.dqn.export import ModelRecord
    from baselines.dqn.export import write_onnx as write_qnet_onnx
    from baselines.dqn.learner import BatchedDQN
    from baselines.dqn.network import QNetSpec

    spec = QNetSpec(8, 2, (4,))
    qnet = write_qnet_onnx(
        tmp_path / "q.onnx", ModelRecord("q", spec, BatchedDQN(spec, 1, seed=0).get_weights(0))
    )
    with pytest.raises(ModelFileError, match=r"expected input \['state', 'mask'\]"):
        onnx_actor(qnet, *random_states(GAPS().net_config, 2))
    small = GAPS(seed=0, network={"d_model": 16})
    small.save(tmp_path / "s")
    with pytest.raises(ModelFileError, match="differs from the agent"):
        GAPS(model=str(tmp_path / "s"))
    for kw, key in (
        ({"max_gap_packets": -1}, "max_gap_packets"),
        ({"max_step_packets": 0}, "max_step_packets"),
        ({"size": "huge"}, "size"),
        ({"network": {"heads": 3}}, "multiple of heads"),
        ({"gamma": 1.0}, "gamma"),
    ):
        with pytest.raises(ConfigError, match=key):
            GAPS(**kw)
    nine = {"name": "nine", "paths": [{"bandwidth_mbps": 10, "rtt_ms": 20 + i} for i in range(9)]}
    with pytest.raises(ConfigError, match="at most 8 subflows"):
        run_episode(nine, SMALL_APP, GAPS(), 0)
    with pytest.raises(ConfigError, match="rtt_ranges_ms"):
        GAPS().fit(ASYM, SMALL_APP, episodes=1, rtt_ranges_ms=[[20, 10], [50, 60]], progress=False)
    with pytest.raises(ConfigError, match="unknown key"):
        GAPS().fit(ASYM, SMALL_APP, episodes=1, epochs=3, progress=False)


def test_the_paper_sized_encoder_acts_and_learns_a_few_steps():
    a = GAPS(size="paper", warmup=8, batch_size=8, replay_capacity=64, seed=0)
    cfg = a.net_config
    assert (cfg.d_model, cfg.layers, cfg.heads, cfg.ff) == (512, 6, 8, 2048)
    n_params = sum(p.numel() for p in a.ddpg.actor.parameters())
    assert n_params > 6 * 3_000_000
    from baselines.gaps.ddpg import Replay

    rep = Replay(64, 8, N_FEATURES)
    x, m = random_states(cfg, 16)
    for i in range(16):
        rep.add(x[i], m[i], np.zeros(8, np.float32), -0.1, x[(i + 1) % 16], m[(i + 1) % 16], False)
    before = [p.clone() for p in a.ddpg.actor.parameters()]
    for _ in range(2):
        losses = a.ddpg.update(rep.sample(a.rng, 8))
    assert np.isfinite(losses["critic_loss"])
    assert any(not torch.equal(p, q) for p, q in zip(before, a.ddpg.actor.parameters()))
    assert a.ddpg.act(x[0], m[0]).shape == (8,)


def test_design_variants_sparse_epochs_and_the_model_base():
    """``epoch: srtt`` decides at most once per sRTT of the fastest subflow;
    ``gap_base: model`` with ``action: scale`` keeps the GAP within x0.25..x4 of the model GAP."""
    from baselines.gaps.features import model_gaps

    times = []
    paper = GAPS(seed=0, epoch="ack", reward="oqs", gap_base="zero", action="delta")
    ours = GAPS(seed=0)
    seen = {}
    real_epoch = GAPS._epoch

    def epoch(self, view):
        times.append((self is ours, view.now, min(p.srtt for p in view.paths)))
        real_epoch(self, view)
        if self is ours and any(p.has_rtt_sample for p in view.paths[1:]):
            seen["model"] = model_gaps(view.paths)[1]
            seen["gap"] = self.gaps[1]

    GAPS._epoch = epoch
    try:
        run_episode(ASYM, MID_APP, paper, 1)
        run_episode(ASYM, MID_APP, ours, 1)
    finally:
        GAPS._epoch = real_epoch
    mine = [(t, r) for o, t, r in times if o]
    assert len(mine) * 20 < len(times) - len(mine)
    assert all(
        b[0] - a[0] >= b[1] * 0.999 for a, b in zip(mine, mine[1:])
    )  # checked with the srtt at b
    assert seen["model"] > 10 and 0.25 * seen["model"] - 1 <= seen["gap"] <= 4 * seen["model"] + 1
    with pytest.raises(ConfigError, match="gaps.epoch"):
        GAPS(epoch="rtt")
    with pytest.raises(ConfigError, match="needs gap_base: model"):
        GAPS(gap_base="zero")
