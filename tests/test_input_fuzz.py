"""Fuzzing the other inputs: scenario and app configs (condition schedules
included) and model files. Generated inputs either work or raise the
documented error, :class:`envs.errors.FalconInputError` (``ConfigError``,
``TraceError``), with one line; nothing else may come out.

Default suite: 1 200 scenarios, 600 apps, 150 damaged files, seeded;
``FALCON_FUZZ_EXAMPLES`` scales the scenario count (the others follow).
"""

from __future__ import annotations

import math
import os
import shutil

import numpy as np
import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from envs.apps import make_app, normalise_app
from envs.errors import FalconInputError
from envs.scenario import Emulation, normalise_scenario

EXAMPLES = int(os.environ.get("FALCON_FUZZ_EXAMPLES", "800")) * 3 // 2

SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-5, 10**7), st.sampled_from(
    [0.0, -1.0, 0.5, 1.0, 2.0, 30.0, 1e9, math.nan, math.inf, "", "x", "4g", "wlan", "olia", "cubic", "random",
     "gilbert_elliott", "bernoulli", "google", "bulk", "web", "streams", "aydin_multipath_wifi_cellular/7_1_wifi.csv"]))
PATH_KEYS = ["link", "name", "bandwidth_mbps", "trace", "synthetic", "trace_start_s", "rtt_ms", "rtt_std_ms", "loss",
             "loss_model", "ge", "buffer_packets", "buffer_bytes", "buffer_bdp", "cc", "return_bandwidth_mbps",
             "shared_link", "schedule", "junk"]
SCENARIO_KEYS = ["name", "packet_size", "header_bytes", "initial_window_packets", "min_window_packets",
                 "max_duration_s", "ack", "flow_control", "cc", "junk"]
segment = st.dictionaries(st.sampled_from(["at_s", "rtt_ms", "rtt_std_ms", "loss", "bandwidth_mbps", "x"]),
                          st.one_of(SCALARS, st.floats(0, 5)), max_size=4)
schedule = st.one_of(st.lists(segment, max_size=4),
                     st.fixed_dictionaries({"segments": st.lists(segment, max_size=3)},
                                           optional={"period_s": st.one_of(SCALARS, st.floats(0, 10))}),
                     SCALARS)
value = st.one_of(SCALARS, st.dictionaries(st.sampled_from(["every", "max_delay_ms", "size_bytes", "p_gb", "p_bg",
                                                            "loss_good", "loss_bad", "kind", "file"]),
                                           SCALARS, max_size=3))
path = st.one_of(
    st.dictionaries(st.sampled_from(PATH_KEYS), value, max_size=6),
    st.fixed_dictionaries({"bandwidth_mbps": st.floats(0.1, 2000), "rtt_ms": st.floats(0.5, 500)},
                          optional={"loss": st.floats(0, 0.99), "rtt_std_ms": st.floats(0, 300), "schedule": schedule,
                                    "cc": st.sampled_from(["olia", "cubic", "bbr"])}),
    SCALARS)
scenario = st.fixed_dictionaries({"paths": st.one_of(st.lists(path, max_size=3), SCALARS)},
                                 optional={k: value for k in SCENARIO_KEYS})
app = st.one_of(st.dictionaries(st.sampled_from(["kind", "size_bytes", "page", "trace", "streams", "x"]),
                                st.one_of(SCALARS, st.lists(st.dictionaries(
                                    st.sampled_from(["release_s", "size_bytes", "priority"]), SCALARS), max_size=3))),
                SCALARS)


def one_line(e: Exception) -> None:
    assert "\n" not in str(e), str(e)


def settle(case_fn):
    return settings(max_examples=EXAMPLES, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck))(case_fn)


def test_generated_scenarios_normalise_and_build_or_raise_one_error():
    @seed(7)
    @settle
    @given(s=scenario)
    def run(s):
        try:
            norm = normalise_scenario(s)
        except FalconInputError as e:
            one_line(e)
            return
        from baselines import make_scheduler

        try:
            Emulation(0).connect(norm, make_scheduler("minrtt"))
        except FalconInputError as e:
            one_line(e)

    run()


def test_generated_apps_normalise_or_raise_one_error():
    @seed(8)
    @settings(max_examples=EXAMPLES // 2, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(a=app)
    def run(a):
        try:
            make_app(normalise_app(a), 0.01)
        except FalconInputError as e:
            one_line(e)

    run()


@pytest.fixture(scope="module")
def good_files(tmp_path_factory):
    """A real bank file and a real experience log to damage."""
    from baselines.dqn.dqn_off import DQNOff
    from baselines.dqn.experience import write_experience
    from baselines.dqn.network import QNetSpec
    from envs.mdp import n_inputs
    from metalearning.bank import MetaModelBank
    from metalearning.grid import ConditionGrid

    d = tmp_path_factory.mktemp("good")
    bank = MetaModelBank.initial(ConditionGrid(n_paths=1), QNetSpec(n_inputs(1, "completion"), 1, (4, 4, 4)), seed=1)
    bank.write(d / "bank.h5")
    off = DQNOff(seed=0, log_every=10**9)
    exp = off.collect({"paths": [{"link": "4g"}, {"link": "wlan"}]}, {"kind": "bulk", "size_bytes": 30_000}, 0, 1,
                      "rules", 0.3, progress=False)
    write_experience(d / "experience.h5", exp)
    return d


def test_damaged_model_files_raise_one_error(tmp_path, good_files):
    from baselines.dqn.experience import read_experience
    from metalearning.bank import MetaModelBank

    readers = {"bank.h5": MetaModelBank.read, "experience.h5": read_experience}
    rng = np.random.default_rng(9)
    for k in range(max(10, EXAMPLES // 8)):
        name = sorted(readers)[(k // 2) % 2]
        data = bytearray((good_files / name).read_bytes())
        # truncated, or garbage. Not flipped bytes inside a file: some make the
        # HDF5 C library itself loop (seen: an experience log with 20 random
        # bytes changed), which no Python-level check can stop; that needs a
        # checksum the readers verify first (an open item of the reliability issue)
        if k % 2 == 0:
            data = data[: int(rng.integers(0, len(data)))]
        else:
            data = bytearray(rng.integers(0, 256, int(rng.integers(0, 4096)), dtype=np.uint8).tobytes())
        target = tmp_path / f"{k}_{name}"
        target.write_bytes(bytes(data))
        try:
            readers[name](target)
        except FalconInputError as e:
            one_line(e)
    shutil.rmtree(tmp_path, ignore_errors=True)
