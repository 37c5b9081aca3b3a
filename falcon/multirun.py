"""One summary for a whole sweep (``python -m falcon.train -m key=a,b ...``).

Hydra runs each combination as its own job with its own output folder
(``<sweep>/<n>/``, or ``<output>/<n>/`` with ``output=``) and MLflow run.
:class:`MultirunSummary`, a Hydra callback registered by ``configs/train.yaml``
and ``configs/evaluate.yaml``, collects what each job returned and, when the
sweep ends, writes beside the job folders:

* ``multirun_summary.json``: per job its number, overrides, output folder,
  MLflow run id and, for an evaluation (a ``results`` tree of
  ``scenario -> app -> scheduler -> metric``), the median of every metric;
* ``multirun_table.txt``: one line per job, scenario, app and scheduler with
  the median download time (the metric every job has).

A failed job is listed with its error. The sweep folder is
``results/<job>/<time>-multirun/`` (the single-run naming plus a suffix).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback

from baselines.dqn.files import atomic_path

SUMMARY_FILE = "multirun_summary.json"
TABLE_FILE = "multirun_table.txt"


def _medians(results: dict) -> dict:
    """``scenario -> app -> scheduler -> metric -> median`` of an evaluation's results tree."""
    return {
        s: {
            a: {
                n: {m: v.get("median") for m, v in metrics.items() if isinstance(v, dict)}
                for n, metrics in per_sched.items()
            }
            for a, per_sched in per_app.items()
        }
        for s, per_app in results.items()
    }


def job_record(num: int, overrides, returned: Any, error: BaseException | None = None) -> dict:
    """What the combined summary keeps of one job."""
    rec = {"num": int(num), "overrides": list(overrides or [])}
    if error is not None:
        rec["error"] = f"{type(error).__name__}: {error}"
        return rec
    if isinstance(returned, dict):
        rec["output"] = returned.get("output")
        rec["mlflow_run_id"] = returned.get("mlflow_run_id")
        if isinstance(returned.get("results"), dict) and returned.get("scenarios") is not None:
            rec["medians"] = _medians(returned["results"])
    return rec


def table(records: list[dict]) -> str:
    """One line per job, scenario, app and scheduler: its median download time
    [s], the job named by its overrides that differ from the other jobs'."""
    shared = set.intersection(*(set(r["overrides"]) for r in records)) if records else set()
    lines = [
        f"{'job':>3}  {'swept':<40}  {'scenario':<16}  {'app':<10}  {'scheduler':<14}  download_time_s"
    ]
    for r in records:
        ov = " ".join(o for o in r["overrides"] if o not in shared) or "-"
        if "error" in r:
            lines.append(f"{r['num']:>3}  {ov:<40}  failed: {r['error']}")
            continue
        med = r.get("medians")
        if not med:
            lines.append(f"{r['num']:>3}  {ov:<40}  (no evaluation table: see {r.get('output')})")
            continue
        for s, per_app in med.items():
            for a, per_sched in per_app.items():
                for n, metrics in per_sched.items():
                    t = metrics.get("download_time_s")
                    t = "-" if t is None or not math.isfinite(t) else f"{t:.4f}"
                    lines.append(f"{r['num']:>3}  {ov:<40}  {s:<16}  {a:<10}  {n:<14}  {t}")
    return "\n".join(lines) + "\n"


def write(folder: Path, records: list[dict]) -> Path:
    """``multirun_summary.json`` and ``multirun_table.txt`` in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    records = sorted(records, key=lambda r: r["num"])
    for name, text in (
        (SUMMARY_FILE, json.dumps({"jobs": records}, indent=2, default=str) + "\n"),
        (TABLE_FILE, table(records)),
    ):
        with atomic_path(folder / name) as tmp:
            tmp.write_text(text)
    return folder / SUMMARY_FILE


class MultirunSummary(Callback):
    """The Hydra callback (module docstring)."""

    def __init__(self) -> None:
        self.records: list[dict] = []

    def on_multirun_start(self, config, **kwargs) -> None:
        self.records = []

    def on_job_end(self, config, job_return, **kwargs) -> None:
        if config.hydra.mode is None or str(config.hydra.mode) != "RunMode.MULTIRUN":
            return
        try:
            ret, err = job_return.return_value, None  # re-raises a failed job's exception
        except Exception as e:  # noqa: BLE001 (any failure of a job is recorded, not raised)
            ret, err = None, e
        self.records.append(job_record(config.hydra.job.num, job_return.overrides, ret, err))

    def on_multirun_end(self, config, **kwargs) -> None:
        folder = (
            Path(str(config.output)) if config.get("output") else Path(str(config.hydra.sweep.dir))
        )
        path = write(folder, self.records)
        print(f"sweep of {len(self.records)} jobs: {path}", flush=True)


__all__ = ["MultirunSummary", "job_record", "table", "write"]
