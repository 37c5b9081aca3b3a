"""A corpus of episodes that exercises every part of the emulator core, and
their digests: ``tests/test_core.py`` runs it on the compiled core in-process
and on the pure-Python core in a subprocess (``FALCON_PURE_PYTHON=1 python
tests/core_corpus.py`` prints the digests as JSON) and asks for equality.

Cases: every congestion controller, Bernoulli / Gilbert-Elliott / trace loss,
constant / synthetic / trace capacity (every shipped trace family), a
condition schedule, random jitter, a return-direction bottleneck, flow
control without auto-tuning, the three app kinds, every rule-based scheduler
(minRTT, RR, BLEST, ECF, DAPS, STMS: gaps and waits), stream-aware ones,
a DQN policy on the completion MDP, and two connections sharing a bottleneck.
"""

from __future__ import annotations

import hashlib
import json
import sys

import numpy as np

FOUR_G_5G = [{"link": "4g"}, {"link": "5g"}]
SIZE = 400_000


def _bulk(size: int = SIZE) -> dict:
    return {"kind": "bulk", "size_bytes": size}


def cases() -> list[tuple[str, dict, dict, str]]:
    """``(name, scenario, app, scheduler)`` of every corpus episode."""
    out = []
    for cc in ("newreno", "cubic", "lia", "olia", "balia"):
        out.append(
            (
                f"cc_{cc}",
                {
                    "cc": cc,
                    "initial_window_packets": 10,
                    "paths": [{"link": "4g", "loss": 0.01}, {"link": "wlan", "loss": 0.002}],
                },
                _bulk(2_000_000),
                "minrtt",
            )
        )
    for name in ("minrtt", "rr", "blest", "ecf", "daps", "stms"):
        out.append(
            (
                f"sched_{name}",
                {
                    "initial_window_packets": 10,
                    "paths": [
                        {"bandwidth_mbps": 20, "rtt_ms": 10, "rtt_std_ms": 3},
                        {"bandwidth_mbps": 10, "rtt_ms": 80, "loss": 0.005},
                    ],
                },
                _bulk(1_000_000),
                name,
            )
        )
    # re-injection (envs.scheduler): flow control that blocks (minRTT's opportunistic retransmission) and
    # a lossy slow path (tail re-injection, redundancy)
    for name in ("minrtt_or", "minrtt_xlink", "redundant"):
        out.append(
            (
                f"reinject_{name}",
                {
                    "flow_control": {"initial_window_bytes": 80000, "autotune": False},
                    "paths": [{"link": "5g"}, {"link": "wlan", "loss": 0.01}],
                },
                _bulk(1_000_000),
                name,
            )
        )
    out += [
        (
            "gilbert_elliott",
            {
                "paths": [
                    {
                        "bandwidth_mbps": 40,
                        "rtt_ms": 30,
                        "loss_model": "gilbert_elliott",
                        "ge": {"p_gb": 0.01, "p_bg": 0.3, "loss_good": 0.001, "loss_bad": 0.3},
                    },
                    {"link": "wlan"},
                ]
            },
            _bulk(),
            "blest",
        ),
        (
            "aydin_traces",
            {
                "paths": [
                    {"trace": "aydin_multipath_wifi_cellular/7_1_wifi.csv", "rtt_ms": 30},
                    {
                        "trace": "aydin_multipath_wifi_cellular/7_1_cellular.csv",
                        "rtt_ms": 60,
                        "trace_start_s": "random",
                    },
                ]
            },
            _bulk(),
            "ecf",
        ),
        (
            "mahimahi_lumos",
            {
                "paths": [
                    {"trace": "mahimahi_cellular_lte/ATT-LTE-driving-2016.down"},
                    {"trace": "lumos5g_mmwave_runs/lumos_trace_1.log", "rtt_ms": 20},
                ]
            },
            _bulk(),
            "minrtt",
        ),
        (
            "raca_5gophers",
            {
                "paths": [
                    {"trace": "raca_4g_lte_2018/car/A_2017.12.11_13.53.01.csv"},
                    {"trace": "5gophers_2020/user_mobility/walking-trace.csv"},
                ]
            },
            _bulk(),
            "rr",
        ),
        (
            "synthetic",
            {
                "paths": [
                    {
                        "synthetic": {
                            "kind": "mmwave_blockage",
                            "los_mbps": 400,
                            "nlos_mbps": 20,
                            "mean_los_s": 0.2,
                            "mean_blockage_s": 0.05,
                            "step_s": 0.01,
                            "duration_s": 5,
                        }
                    },
                    {
                        "synthetic": {
                            "kind": "gaussian_rate",
                            "mean_mbps": 60,
                            "std_mbps": 20,
                            "step_s": 0.01,
                            "duration_s": 5,
                        }
                    },
                ]
            },
            _bulk(),
            "minrtt",
        ),
        (
            "schedule",
            {
                "paths": [
                    {
                        "bandwidth_mbps": 80,
                        "rtt_ms": 20,
                        "schedule": [
                            {"at_s": 0.0, "rtt_ms": 20},
                            {"at_s": 0.05, "rtt_ms": 90, "loss": 0.02, "bandwidth_mbps": 10},
                        ],
                    },
                    {
                        "link": "4g",
                        "schedule": {
                            "segments": [{"at_s": 0.02, "rtt_std_ms": 15}],
                            "period_s": 0.07,
                        },
                    },
                ]
            },
            _bulk(),
            "ecf",
        ),
        (
            "return_link_no_autotune",
            {
                "flow_control": {"initial_window_bytes": 60000, "autotune": False},
                "paths": [{"link": "5g", "return_bandwidth_mbps": 1}, {"link": "wlan"}],
            },
            _bulk(),
            "minrtt",
        ),
        ("web_page", {"paths": FOUR_G_5G}, {"kind": "web", "page": "github"}, "srpt_ecf"),
        (
            "streams",
            {"paths": [{"link": "wlan"}, {"link": "4g"}]},
            {
                "kind": "streams",
                "streams": [
                    {"release_s": 0.0, "size_bytes": 150000, "priority": 1},
                    {"release_s": 0.01, "size_bytes": 30000, "priority": 0},
                    {"release_s": 0.03, "size_bytes": 90000, "priority": 2},
                ],
            },
            "sa_ecf",
        ),
        (
            "dqn_completion",
            {"paths": [{"link": "4g"}, {"link": "wlan", "loss": 0.02}]},
            _bulk(),
            "dqn",
        ),
        (
            "unpaced_no_setup_samples",
            {
                "pacing": False,
                "setup": {"rtt_samples": False},
                "paths": [{"link": "4g", "buffer_packets": 20}, {"link": "wlan"}],
            },
            _bulk(),
            "blest",
        ),
        (
            "paced_gain_2_small_buffer",
            {
                "pacing": {"gain": 2.0, "burst_packets": 4, "min_delay_ms": 0.5},
                "paths": [
                    {"bandwidth_mbps": 60, "rtt_ms": 50, "buffer_packets": 12},
                    {"bandwidth_mbps": 15, "rtt_ms": 20},
                ],
            },
            _bulk(),
            "ecf",
        ),
    ]
    return out


def _scheduler(name: str):
    if name == "dqn":
        from baselines.dqn.network import QNetSpec
        from baselines.dqn.policy import greedy_scheduler
        from envs.mdp import n_inputs
        from metalearning.reptile import initial_params, split_params

        spec = QNetSpec(n_inputs(2, "completion"), 2, (16, 16))
        return greedy_scheduler(split_params(spec, initial_params(spec, 3)), spec)
    from baselines import make_scheduler

    return make_scheduler(name)


def _digest(*parts) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(np.ascontiguousarray(np.asarray(p, dtype=np.float64)).tobytes())
    return h.hexdigest()[:16]


def episode_digest(scenario: dict, app: dict, scheduler: str, seed: int) -> str:
    from envs.runner import run_episode

    r = run_episode({"max_duration_s": 20.0, **scenario}, app, _scheduler(scheduler), seed)
    keys = sorted(r.metrics)
    return _digest(
        [r.metrics[k] for k in keys],
        r.object_times,
        r.object_release_times,
        r.timeseries["oqs_t"],
        r.timeseries["oqs_bytes"],
    )


def shared_bottleneck_digest(seed: int) -> str:
    """Two connections (minRTT, RR) over one shared link plus a private path each."""
    from baselines import make_scheduler
    from envs.apps import make_app
    from envs.emulation import Emulation

    emu = Emulation(seed)
    conns = []
    for k, name in enumerate(("minrtt", "rr")):
        sc = {
            "paths": [
                {"bandwidth_mbps": 30, "rtt_ms": 20, "shared_link": "bottleneck"},
                {"bandwidth_mbps": 10 + 10 * k, "rtt_ms": 40, "rtt_std_ms": 5},
            ]
        }
        sched = make_scheduler(name)
        conn = emu.connect(sc, sched)
        app = make_app(_bulk(300_000), 0.01)
        sched.reset(conn)
        app.start(conn)
        conns.append((conn, app))
    end = emu.sim.run(20.0)
    parts = [[end, emu.sim.events_processed]]
    for conn, app in conns:
        parts.append(
            [
                conn.delivered,
                conn.bytes_acked,
                conn.oqs,
                *[p.packets_sent for p in conn.paths],
                *[p.srtt for p in conn.paths],
                *[p.cwnd for p in conn.paths],
                *app.object_times(),
            ]
        )
    return _digest(*parts)


def gym_digest(reward: str, seed: int) -> str:
    """Three instances of the Gymnasium environment stepped as one vector
    environment (:mod:`envs.vector_env`, next-step autoreset) by a policy of
    the state: every observation, reward and end."""
    from envs.vector_env import MultipathVectorEnv

    venv = MultipathVectorEnv(
        3, {"paths": [{"link": "4g"}, {"link": "5g"}]}, _bulk(60_000), reward=reward
    )
    obs, _ = venv.reset(seed=seed)
    parts = [obs]
    for _ in range(150):
        obs, rew, term, trunc, _ = venv.step((obs[:, 0] > obs[:, obs.shape[1] // 2]).astype(int))
        parts += [obs, rew, term, trunc]
    venv.close()
    return _digest(*parts)


def digests(seeds=(0, 1)) -> dict[str, str]:
    out = {
        f"{name}/{seed}": episode_digest(sc, app, sched, seed)
        for name, sc, app, sched in cases()
        for seed in seeds
    }
    out.update({f"shared_bottleneck/{seed}": shared_bottleneck_digest(seed) for seed in seeds})
    out.update(
        {
            f"gym_{reward}/{seed}": gym_digest(reward, seed)
            for reward in ("completion", "goodput")
            for seed in seeds
        }
    )
    return out


if __name__ == "__main__":
    import envs

    json.dump({"core": envs.core_kind(), "digests": digests()}, sys.stdout)
