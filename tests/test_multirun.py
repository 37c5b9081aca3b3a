"""The sweep summary's callback (falcon/multirun.py) on its own: a failed
job is listed with its error, the others with their medians."""

from __future__ import annotations

import json

from omegaconf import OmegaConf

from falcon.multirun import SUMMARY_FILE, TABLE_FILE, MultirunSummary


class _Return:
    def __init__(self, overrides, value=None, error=None):
        self.overrides, self._value, self._error = overrides, value, error

    @property
    def return_value(self):  # as hydra's JobReturn: a failed job's exception re-raised
        if self._error is not None:
            raise self._error
        return self._value


def _cfg(num, tmp_path):
    return OmegaConf.create(
        {
            "output": str(tmp_path),
            "hydra": {
                "mode": "RunMode.MULTIRUN",
                "job": {"num": num},
                "sweep": {"dir": str(tmp_path)},
            },
        }
    )


def test_a_failed_job_is_listed_with_its_error(tmp_path):
    cb = MultirunSummary()
    cb.on_multirun_start(None)
    ok = {
        "output": str(tmp_path / "0"),
        "mlflow_run_id": None,
        "scenarios": ["s"],
        "results": {"s": {"bulk": {"minrtt": {"download_time_s": {"median": 0.25}}}}},
    }
    cb.on_job_end(_cfg(0, tmp_path), _Return(["runs=1"], value=ok))
    cb.on_job_end(_cfg(1, tmp_path), _Return(["runs=2"], error=ValueError("bad seed")))
    cb.on_multirun_end(_cfg(1, tmp_path))
    jobs = json.loads((tmp_path / SUMMARY_FILE).read_text())["jobs"]
    assert jobs[0]["medians"]["s"]["bulk"]["minrtt"]["download_time_s"] == 0.25
    assert jobs[1] == {"num": 1, "overrides": ["runs=2"], "error": "ValueError: bad seed"}
    lines = (tmp_path / TABLE_FILE).read_text().splitlines()
    assert "0.2500" in lines[1] and "failed: ValueError: bad seed" in lines[2]
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]  # written whole
