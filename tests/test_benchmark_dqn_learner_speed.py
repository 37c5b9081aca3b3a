"""benchmarks/dqn_learner_speed.py: RLlib's env runner sampling through the
vector environment, and the command line's checks (fast: no Ray started)."""

from __future__ import annotations

import pytest

from benchmarks.dqn_learner_speed import main, rllib_sampling


def test_rllib_sampling_steps_the_instances_together():
    r = rllib_sampling(2, repeats=2, steps=100)
    assert r["envs"] == 2 and len(r["repeats"]) == 2
    assert r["steps_per_cpu_s"] > 0 and min(r["repeats"]) <= r["steps_per_cpu_s"]


@pytest.mark.parametrize("bad", ["0", "1,x", "-2"])
def test_bad_instance_counts_are_refused_before_timing(bad, capsys):
    with pytest.raises(SystemExit) as e:
        main(["--rllib-envs", bad])
    assert e.value.code == 2
    assert "--rllib-envs" in capsys.readouterr().err
