"""experiment=hybrid (falcon/experiments/hybrid.py): the quick variant end to
end, its outputs, the phase bookkeeping, and one-line errors for bad
settings. Checks structure, not the outcome."""

from __future__ import annotations

import json
import math

import pytest

from envs.errors import ConfigError
from falcon.experiments import hybrid, hybrid_report


@pytest.fixture
def job_cfg(compose, tmp_path):
    def make(*extra, quick=True):
        return compose(
            "train",
            [
                "experiment=hybrid",
                f"quick={str(quick).lower()}",
                "tracking=none",
                f"output={tmp_path / 'hybrid'}",
                "progress=false",
                *extra,
            ],
        )

    return make


def test_quick_variant_end_to_end(job_cfg, tmp_path):
    res = hybrid.run_job(job_cfg())
    out = tmp_path / "hybrid"
    for name in (
        "hybrid.json",
        "hybrid.txt",
        "hybrid.png",
        "hybrid_throughput.png",
        "hybrid_training.png",
        "config.json",
        "models/hybrid/session0/model.h5",
        "models/hybrid_paper/session0/model.h5",
        "models/drl_mptcp/session0/model.h5",
    ):
        assert (out / name).is_file(), name
    data = json.loads((out / "hybrid.json").read_text())
    names = ["hybrid", "hybrid_paper", "drl_mptcp", "lia", "cubic"]
    s = data["summary"]["settings"]
    assert list(s) == ["exp1", "exp23", "exp6"]
    assert list(s["exp23"]) == ["bsp_20mbps", "ssp_20mbps"] and list(s["exp6"]) == [
        "stragglers_0",
        "stragglers_1",
    ]
    for per in (p for e in s.values() for p in e.values()):
        assert list(per) == names
        for c in per.values():
            assert c["runs"] == 1 and c["throughput_mean_mbps"] > 0
    phases = s["exp1"]["time_varying"]["lia"]["phases"]
    assert [(p["start_s"], p["end_s"], p["capacity_mbps"]) for p in phases] == [
        (0, 1, 16),
        (1, 3, 10),
        (3, 4, 24),
    ]
    assert all(0 < p["utilisation"] < 1.05 for p in phases)
    assert (
        "series" in s["exp23"]["ssp_20mbps"]["hybrid"]
        and "series" in s["exp1"]["time_varying"]["cubic"]
    )
    for learner in ("hybrid", "hybrid_paper", "drl_mptcp"):
        t = data["summary"]["training"][learner]
        assert (
            math.isfinite(t["learning_score"])
            and t["sessions"] == 1
            and t["cpu_seconds_per_slot"] > 0
        )
        assert s["exp23"]["bsp_20mbps"][learner]["cpu_seconds_per_slot"] > 0
    assert len(data["records"]) == 5 * 5
    assert set(data["claims"]) >= {
        "iteration_vs_lia",
        "iteration_vs_drl",
        "fairness",
        "smoothness",
        "learning_score",
        "cpu",
        "stragglers",
    }
    assert data["paper"] == hybrid_report.PAPER and res["wall_s"] > 0
    assert "the paper's claims beside ours" in (out / "hybrid.txt").read_text()


def test_single_path_cubic_uses_only_the_first_path():
    u = hybrid.Unit(
        "exp23",
        "bsp_20mbps",
        "cubic",
        0,
        0,
        hybrid._two_paths({"rtt_ms": 20, "buffer_packets": 100, "loss": 0.0}, 10.0),
        {"workers": 1, "model_bytes": 200_000, "duration_s": 3, "directions": ["upload"]},
    )
    rec = hybrid.run_unit(u)
    # one 10 Mbit/s path: the worker cannot get more than one path's worth
    assert 0 < rec["throughput_mean_mbps"] < 10.0


@pytest.mark.parametrize(
    "override, match",
    [
        ("hybrid.schedulers=[hybrid,nosuch]", "unknown scheduler 'nosuch'"),
        ("hybrid.sessions=0", "sessions"),
        ("hybrid.experiments=[exp1,exp9]", "experiments"),
        ("hybrid.exp23.bandwidth_mbps=[20,-1]", "exp23.bandwidth_mbps"),
        ("hybrid.exp23.modes=[bsp,async]", "exp23.modes"),
        ("hybrid.exp6.stragglers=[0,9]", "exp6.stragglers"),
        ("+hybrid.exp23.workload.nope=1", "exp23.workload: unknown key"),
    ],
)
def test_config_errors(job_cfg, override, match):
    with pytest.raises(ConfigError, match=match) as e:
        hybrid.settings(job_cfg(override, quick=False))
    assert "\n" not in str(e.value)
