"""Hybrid MPTCP and DRL-MPTCP (baselines/hybrid): the window action, the
schedule shares, the held window, the two timescales, the reward, training,
files and the registry/config route of falcon.train."""

from __future__ import annotations

import copy
import inspect
import math

import numpy as np
import pytest
import torch

from baselines import make_scheduler
from baselines.hybrid.agent import DRLMPTCP, HybridMPTCP
from baselines.hybrid.features import FEATURES, SlotMeter, schedule_shares, slot_reward
from envs.cc import CC_REGISTRY, HeldWindow, Lia, install_cc, make_cc
from envs.errors import ConfigError
from envs.runner import run_episode, setup_episode

torch.set_num_threads(1)

MSS = 1350
TWO = {
    "name": "two",
    "cc": "lia",
    "paths": [
        {"bandwidth_mbps": 20, "rtt_ms": 30, "loss": 0.005},
        {"bandwidth_mbps": 10, "rtt_ms": 80, "loss": 0.005},
    ],
}
ENDLESS = {"kind": "bulk", "size_bytes": 10**12}
#: a train: section that fits in a few seconds
QUICK = {"samples": 40, "episode_s": 2.0, "bandwidth_mbps": [4, 12], "rtt_ms": [10, 60]}
SMALL = {"warmup": 16, "batch_size": 16, "network": {"lstm_hidden": 16, "hidden": [32, 32]}}


def fixed_actions(agent, values):
    """Make the agent's actor answer ``values`` (one per subflow) whatever the state."""
    agent.ddpg.act = lambda x, m: np.asarray(values, np.float32)[: len(x)]
    return agent


def run_until(agent, t, scenario=TWO, seed=0):
    emu, conn, app, s = setup_episode(scenario, ENDLESS, agent, seed)
    emu.sim.run(until=t)
    return emu, conn


# ---------------------------------------------------------------- actions and shares


def test_window_action_is_applied_exactly_and_clamped():
    agent = fixed_actions(HybridMPTCP(inner_loop=False, max_window_packets=100), [0.5, -1.0])
    emu, conn = run_until(agent, 0.1)  # before the first slot ends
    w0 = [p.cwnd for p in conn.paths]
    assert w0 == [32 * MSS, 32 * MSS]  # held windows start at the initial window
    emu.sim.run(until=agent.meter.t0 + agent.slot_s + 1e-9)
    assert agent.slots == 1
    assert conn.paths[0].cwnd == w0[0] * 2**0.5 and conn.paths[1].cwnd == w0[1] / 2
    emu.sim.run(
        until=agent.meter.t0 + 4 * agent.slot_s + 1e-9
    )  # x2^0.5 per slot: capped at 100 packets
    assert agent.slots == 5
    assert conn.paths[0].cwnd == 100 * MSS
    assert conn.paths[1].cwnd == conn.paths[1].cc.min_window == 2 * MSS
    assert agent.actions == [0.5, -1.0]


def test_shares_follow_windows_over_srtt_and_decide_follows_them():
    agent = fixed_actions(HybridMPTCP(inner_loop=False), [0.3, -0.2])
    emu, conn = run_until(agent, 1.1)
    emu.sim.run(until=agent.meter.t0 + agent.slot_s)  # stop right at a slot's end
    assert emu.sim.now == agent.meter.t0
    rates = [p.cwnd / p.srtt for p in conn.paths]
    assert agent.shares == pytest.approx([r / sum(rates) for r in rates], rel=1e-12)
    assert schedule_shares(conn.paths) == agent.shares

    class P:  # a path that always has room
        def __init__(self, i):
            self.index = i

        def may_send(self, now):
            return True

    class View:
        now = 0.0
        paths = [P(0), P(1), P(2)]

    a = HybridMPTCP()
    a._armed = True
    a.shares, a._sent, a._total = [0.5, 0.3, 0.2], [0, 0, 0], 0
    picks = [a.decide(View) for _ in range(1000)]
    counts = np.bincount(picks, minlength=3)
    assert np.all(np.abs(counts - np.array([500, 300, 200])) <= 1)
    assert picks[:10].count(0) == 5  # interleaved, not in runs

    class Full(P):
        def may_send(self, now):
            return False

    View.paths = [P(0), Full(1), P(2)]  # a path without room is skipped, none -> WAIT
    assert 1 not in {a.decide(View) for _ in range(50)}
    View.paths = [Full(0), Full(1), Full(2)]
    assert a.decide(View) is None


# ---------------------------------------------------------------- the held window and the inner loop


class _Rtt:
    srtt = 0.05


def test_held_window_ignores_acks_and_losses():
    cc = make_cc("held", MSS, 10)
    assert isinstance(cc, HeldWindow) and "held" not in CC_REGISTRY  # not a congestion control
    assert cc.cwnd == 10 * MSS and not cc.in_slow_start
    for k in range(50):
        cc.on_ack(0.01 * k, 3 * MSS, 0.01 * k - 0.05, _Rtt)
        cc.on_loss(0.01 * k, MSS, 0.01 * k - 0.05)
        cc.on_pto(0.01 * k)
    assert cc.cwnd == 10 * MSS and cc.srtt == 0.05
    cc.cwnd = 7 * MSS  # set from outside: kept
    cc.on_loss(1.0, MSS, 0.99)
    assert cc.cwnd == 7 * MSS


def test_install_cc_replaces_the_controller_and_its_cached_hook():
    from baselines.rule_based import MinRTT
    from envs.cc import BBR

    emu, conn, app, s = setup_episode(TWO, ENDLESS, MinRTT(), 0)
    p = conn.paths[0]
    bbr = BBR(MSS, 32)
    old = install_cc(p, bbr)
    assert isinstance(old, Lia) and p.cc is bbr and p.cc_on_sent == bbr.on_packet_sent
    held = HeldWindow(MSS, 20)
    assert install_cc(p, held) is bbr and p.cc is held and p.cc_on_sent is None
    emu.sim.run(until=2.0)
    assert p.cc.cwnd == 20 * MSS and p.packets_acked > 0


@pytest.mark.parametrize("inner_loop", [True, False])
def test_only_the_inner_loop_moves_windows_between_slots(inner_loop):
    agent = fixed_actions(HybridMPTCP(inner_loop=inner_loop), [0.0, 0.0])
    emu, conn = run_until(agent, 0.5)
    assert all(isinstance(p.cc, Lia if inner_loop else HeldWindow) for p in conn.paths)
    seen = []
    t = emu.sim.now
    while t < 6.0:
        t += 0.013
        emu.sim.run(until=t)
        seen.append(tuple(p.cwnd for p in conn.paths))
    changes = sum(a != b for a, b in zip(seen, seen[1:]))
    assert sum(p.packets_lost for p in conn.paths) > 0
    if inner_loop:
        assert changes > 50  # LIA moves the windows on every ACK and loss
    else:
        assert changes == 0 and seen[-1] == (
            32 * MSS,
            32 * MSS,
        )  # a = 0 and nothing else moves them


def test_scaled_window_is_the_inner_window_times_the_gain():
    from envs.cc.scaled import ScaledWindow

    inner = make_cc("newreno", MSS, 10)
    cc = ScaledWindow(inner, 4.0)
    assert cc.cwnd == 40 * MSS and cc.min_window == inner.min_window
    cc.on_ack(0.1, 8 * MSS, 0.05, _Rtt)  # slow start: the inner flow acked its share, 2 MSS
    assert inner.cwnd == 12 * MSS and cc.cwnd == 48 * MSS
    cc.on_loss(0.2, MSS, 0.15)  # a loss halves the path's window through the inner one
    assert inner.cwnd == 6 * MSS and cc.cwnd == 24 * MSS and cc.ssthresh == 4 * inner.ssthresh
    cc.set_gain(0.5)
    assert cc.cwnd == 3 * MSS
    cc.set_gain(1e-3)
    assert cc.cwnd == cc.min_window  # clamped, the inner window untouched
    assert inner.cwnd == 6 * MSS
    with pytest.raises(ValueError):
        cc.set_gain(0.0)
    from envs.cc import BBR

    with pytest.raises(
        ValueError, match="per-packet hook"
    ):  # BBR paces per packet: not a window to scale
        ScaledWindow(BBR(MSS, 10))


def test_gain_action_holds_a_gain_on_lia_between_slots():
    from envs.cc.scaled import ScaledWindow

    agent = fixed_actions(HybridMPTCP(action="gain", gain_bits=2.0), [1.0, -0.5])
    emu, conn = run_until(agent, 0.5)
    assert all(isinstance(p.cc, ScaledWindow) and isinstance(p.cc.inner, Lia) for p in conn.paths)
    assert all(p.cc_on_sent is None for p in conn.paths)  # nothing added per packet
    assert [p.cc.gain for p in conn.paths] == [4.0, 0.5]
    t = emu.sim.now
    seen = []
    while t < 4.0:
        t += 0.013
        emu.sim.run(until=t)
        for p in conn.paths:  # the path sends with gain x LIA's own window
            assert p.cwnd == pytest.approx(
                min(max(p.cc.gain * p.cc.inner.cwnd, p.cc.min_window), p.cc.max_window)
            )
        seen.append(conn.paths[0].cc.inner.cwnd)
    assert sum(a != b for a, b in zip(seen, seen[1:])) > 20  # LIA keeps moving its window
    for kw in ({"action": "gain", "inner_loop": False}, {"action": "nudge"}, {"gain_bits": 0}):
        with pytest.raises(ConfigError):
            HybridMPTCP(**kw)


# ---------------------------------------------------------------- the state and the reward


class _Path:
    def __init__(self, sent, acked, cwnd, srtt, min_rtt):
        self.bytes_sent, self.payload_bytes_acked = sent, acked
        self.cc = type("CC", (), {"cwnd": cwnd})()
        self.srtt, self.min_rtt, self.has_rtt_sample = srtt, min_rtt, True


def test_features_and_reward_of_a_hand_made_slot():
    paths = [_Path(0, 0, 10_000.0, 0.05, 0.04), _Path(0, 0, 20_000.0, 0.1, 0.08)]
    m = SlotMeter()
    m.start(paths, 1.0)
    paths[0].bytes_sent, paths[0].payload_bytes_acked = (
        1_000_000,
        500_000,
    )  # 40 / 20 Mbit/s over 0.2 s
    paths[1].bytes_sent, paths[1].payload_bytes_acked = 25_000, 0  # 1 Mbit/s sent, nothing acked
    paths[0].cc.cwnd = 40_000.0
    paths[1].cc.cwnd = 10_000.0
    x, thr = m.measure(paths, 1.2, [0.7, 0.3])
    assert thr == pytest.approx([20.0, 0.0])
    assert x.shape == (2, len(FEATURES)) and x.dtype == np.float32
    np.testing.assert_allclose(
        x, [[0.4, 0.2, 0.5, 2.0, 0.7, 0.1], [0.01, 0.0, 1.0, -1.0, 0.3, 0.6]], rtol=1e-6, atol=1e-7
    )
    assert slot_reward(thr, 0.1) == pytest.approx(math.log(20.0) + math.log(0.1))
    assert slot_reward([2.0, 3.0], 0.1) == pytest.approx(math.log(6.0))


# ---------------------------------------------------------------- training and files


def _weights(agent):
    return [p.detach().clone() for p in agent.ddpg.actor.parameters()] + [
        p.detach().clone() for p in agent.ddpg.critic.parameters()
    ]


def test_a_short_fit_fills_the_replay_learns_and_is_reproducible():
    curves = []
    agents = []
    for _ in range(2):
        a = HybridMPTCP(seed=5, **SMALL)
        before = _weights(a)
        logged = []
        res = a.fit(
            TWO,
            None,
            seed=3,
            log=lambda m, step=None, _l=logged: _l.append((step, m)),
            progress=False,
            **QUICK,
        )
        assert a.samples == 40 and res["samples"] == 40.0
        assert a.ddpg.updates >= 40 - 16 + 1  # one per slot from the 16th transition on
        assert any(not torch.equal(p, q) for p, q in zip(before, _weights(a)))
        assert [s for s, _ in logged] == list(range(len(logged))) and len(logged) >= 4
        assert all(np.isfinite(m["score"]) for _, m in logged)
        assert res["cpu_seconds_per_slot"] > 0 and a.replay is None and not a.learning
        curves.append([m["score"] for _, m in logged])
        agents.append(a)
    assert curves[0] == curves[1]
    assert all(torch.equal(p, q) for p, q in zip(_weights(agents[0]), _weights(agents[1])))
    other = HybridMPTCP(seed=6, **SMALL)
    other.fit(TWO, None, seed=3, progress=False, **QUICK)
    assert any(not torch.equal(p, q) for p, q in zip(_weights(agents[0]), _weights(other)))
    # greedy afterwards: the same state, the same action
    x = np.random.default_rng(0).uniform(0, 1, (2, 6)).astype(np.float32)
    assert np.array_equal(agents[0].act(x), agents[0].act(x))


def test_fit_cross_flows_share_a_bottleneck_and_drl_mptcp_trains():
    a = DRLMPTCP(seed=1, **SMALL)
    rows = []
    a.fit(
        TWO,
        None,
        seed=0,
        log=lambda m, step=None: rows.append(m),
        progress=False,
        **{**QUICK, "samples": 30, "cross_flows": 2},
    )
    assert {r["cross_flows"] for r in rows} <= {0.0, 1.0, 2.0} and max(
        r["cross_flows"] for r in rows
    ) > 0
    assert a.samples == 30
    with pytest.raises(ConfigError, match="unknown key"):
        a.fit(TWO, None, episodes=3, progress=False)
    for bad, key in (
        ({"rtt_ms": [50, 10]}, "rtt_ms"),
        ({"samples": 0}, "samples"),
        ({"episode_s": 0.1}, "episode_s"),
        ({"cc": "nope"}, "congestion control"),
    ):
        with pytest.raises(ConfigError, match=key):
            a.fit(TWO, None, progress=False, **{**QUICK, **bad})


def test_save_then_load_gives_the_same_actions(tmp_path):
    a = HybridMPTCP(seed=4, **SMALL)
    a.fit(TWO, None, seed=0, progress=False, **{**QUICK, "samples": 20})
    a.save(tmp_path / "m")
    assert (tmp_path / "m" / "model.h5").is_file() and (tmp_path / "m" / "agent.json").is_file()
    b = HybridMPTCP(network=SMALL["network"], model=str(tmp_path / "m"))
    rng = np.random.default_rng(1)
    for s in (1, 2, 5):
        x = rng.uniform(0, 1, (s, 6)).astype(np.float32)
        np.testing.assert_array_equal(a.act(x), b.act(x))
    ra = run_episode(TWO, {"kind": "bulk", "size_bytes": 3_000_000}, a, 2)
    rb = run_episode(TWO, {"kind": "bulk", "size_bytes": 3_000_000}, b, 2)
    rc = run_episode(
        TWO, {"kind": "bulk", "size_bytes": 3_000_000}, copy.deepcopy(b), 2
    )  # as falcon.jobs copies
    assert (
        ra.metrics["download_time_s"]
        == rb.metrics["download_time_s"]
        == rc.metrics["download_time_s"]
    )


def test_idle_connection_stops_the_timer_and_a_decision_restarts_it():
    far = {
        "cc": "lia",
        "paths": [{"bandwidth_mbps": 10, "rtt_ms": 300}, {"bandwidth_mbps": 10, "rtt_ms": 300}],
    }
    agent = HybridMPTCP()
    emu, conn, app, s = setup_episode(far, ENDLESS, agent, 0)
    emu.sim.run(until=0.3)  # the handshake (1.5 RTT) outlasts the first slot: idle, no timer
    assert agent.slots == 1 and not agent._armed and conn.bytes_acked == 0
    emu.sim.run(until=1.2)  # the first decision restarts the slots
    assert agent._armed and 0.3 < agent.meter.t0 and agent.slots >= 2
    r = run_episode(TWO, {"kind": "bulk", "size_bytes": 200_000}, agent, 0)
    assert r.metrics["download_time_s"] > 0 and agent.cpu_seconds_per_slot > 0.0
    for bad, key in (
        ({"slot_s": 0}, "slot_s"),
        ({"gamma": 1.0}, "gamma"),
        ({"inner_loop": "yes"}, "inner_loop"),
        ({"network": {"hidden": []}}, "hidden"),
        ({"network": {"depth": 3}}, "network"),
        ({"batch_size": 0}, "batch_size"),
    ):
        with pytest.raises(ConfigError, match=key):
            HybridMPTCP(**bad)


# ---------------------------------------------------------------- registry and configs


def test_registry_and_agent_configs_instantiate():
    from falcon.experiments.common import agent_config
    from falcon.jobs import instantiate_agent

    assert isinstance(make_scheduler("hybrid"), HybridMPTCP) and make_scheduler("hybrid").inner_loop
    assert (
        make_scheduler("drl_mptcp").inner_loop is False
        and make_scheduler("drl_mptcp").name == "drl_mptcp"
    )
    defaults = {k: p.default for k, p in inspect.signature(HybridMPTCP.__init__).parameters.items()}
    from baselines.hybrid.training import fit

    train_defaults = {k: p.default for k, p in inspect.signature(fit).parameters.items()}
    assert (
        agent_config("hybrid")["action"] == "gain"
        and agent_config("hybrid_paper")["action"] == "scale"
    )
    for name in ("hybrid", "hybrid_paper", "drl_mptcp"):
        cfg = agent_config(name)
        agent = instantiate_agent(name, cfg)
        assert isinstance(agent, HybridMPTCP) and agent.inner_loop is (name != "drl_mptcp")
        assert set(cfg) - {"_target_", "train"} <= set(defaults)
        for k, v in cfg.items():  # one value: the yaml states the constructor's defaults
            if k in defaults and not isinstance(v, dict) and k not in ("inner_loop", "action"):
                assert v == defaults[k], (name, k)
        for k, v in cfg["train"].items():  # and fit's
            assert (tuple(v) if isinstance(v, list) else v) == train_defaults[k], (name, k)


def test_falcon_train_trains_and_saves_a_hybrid_agent(tmp_path, compose, capsys):
    from falcon.config import make_plan
    from falcon.train import train_agents

    class Tracker:
        def __init__(self):
            self.rows = []

        def log_metrics(self, metrics, step=None):
            self.rows.append((dict(metrics), step))

    overrides = [f"agent.train.{k}={v}".replace(" ", "") for k, v in QUICK.items()]
    cfg = compose(
        "train",
        [
            "experiment=tiny",
            "agent=hybrid",
            "runs=1",
            "agent.warmup=16",
            "agent.batch_size=16",
            "+agent.network.lstm_hidden=16",
            "+agent.network.hidden=[32,32]",
            *overrides,
        ],
    )
    plan = make_plan(
        cfg,
        choices={"scenario": "static_4g_5g", "app": "bulk", "agent": "hybrid"},
        cli_keys={"agent"},
    )
    staging = tmp_path / "train"
    staging.mkdir()
    tracker = Tracker()
    plan = train_agents(plan, staging, tracker, train_seed=1)
    ((name, trained),) = plan.agents
    assert name == "hybrid" and isinstance(trained, HybridMPTCP) and trained.samples == 40
    assert "hybrid: episode 1:" in capsys.readouterr().out
    assert (staging / "models" / "hybrid" / "model.h5").is_file()
    assert any("train/hybrid/score" in m for m, step in tracker.rows if step is not None)
