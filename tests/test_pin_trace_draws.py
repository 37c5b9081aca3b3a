"""envs.emulation.pin_trace_draws: a seed's trace draws written into the scenario,
so that another seed changes only the network's delay and loss draws."""

from __future__ import annotations

import copy

from baselines import make_scheduler
from envs import run_episode
from envs.emulation import pin_trace_draws

TRACE = "mahimahi_cellular_lte/TMobile-LTE-short.down"
APP = {"kind": "bulk", "size_bytes": 300_000}


def _scenario(rtt_std_ms: float, loss: float) -> dict:
    return {
        "paths": [
            {"trace": TRACE, "trace_start_s": "random", "rtt_ms": 40, "rtt_std_ms": rtt_std_ms},
            {
                "synthetic": {
                    "kind": "gaussian_rate",
                    "mean_mbps": 8,
                    "std_mbps": 4,
                    "step_s": 0.1,
                    "duration_s": 20,
                },
                "trace_start_s": "random",
                "rtt_ms": 60,
                "loss": loss,
            },
        ]
    }


def _time(scenario: dict, seed: int) -> float:
    return run_episode(scenario, APP, make_scheduler("minrtt"), seed=seed).metrics[
        "download_time_s"
    ]


def test_the_pinned_scenario_is_the_very_run_of_its_seed_and_the_input_is_left_alone():
    scenario = _scenario(rtt_std_ms=8, loss=0.01)
    before = copy.deepcopy(scenario)
    pinned = pin_trace_draws(scenario, 7)
    assert scenario == before
    offsets = [p["trace_start_s"] for p in pinned["paths"]]
    assert all(isinstance(o, float) and o >= 0 for o in offsets)
    assert isinstance(pinned["paths"][1]["synthetic"]["seed"], int)
    assert _time(pinned, 7) == _time(scenario, 7)
    assert pin_trace_draws(scenario, 8)["paths"][0]["trace_start_s"] != offsets[0]


def test_another_seed_keeps_the_traces_and_changes_only_the_noise():
    # no delay noise and no loss: the traces are all a seed draws, so a pinned run is the same on any seed
    quiet = _scenario(rtt_std_ms=0, loss=0.0)
    assert _time(pin_trace_draws(quiet, 3), 1234) == _time(quiet, 3)
    assert _time(quiet, 1234) != _time(quiet, 3)
    # with noise, the pinned run on another seed differs from the seed's own run
    noisy = _scenario(rtt_std_ms=8, loss=0.01)
    assert _time(pin_trace_draws(noisy, 3), 1234) != _time(noisy, 3)
