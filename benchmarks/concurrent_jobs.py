"""Jobs started together in one folder: a new tracking store and a missing bank.

    python -m benchmarks.concurrent_jobs [--jobs 8] [--repeats 5] [--skip-bank] [--out FILE]

Reports (one JSON line per figure on stdout, a short table on stderr):

* ``store``: ``--jobs`` tracked ``python -m falcon.evaluate
  "agent_list=[minrtt]" runs=1 scenario=static_4g_wlan`` started at once in
  a new folder (so they share a new ``mlflow.db``), ``--repeats`` times, each
  time in a new folder: exit statuses, jobs whose stderr has an ``error:``
  line or a traceback, FINISHED runs in the store, runs holding every metric
  their job logs (the summary's metrics, ``falcon.report.flat_metrics``, and
  the job's three timings), and the wall time from start to the last exit.
* ``bank``: two FALCON evaluations (one path, a 27-cell bank of a few
  meta-iterations) started at once in a folder without the bank, and one
  alone in another: how many built the bank, how many waited for it, and
  whether all three give the same results and the same bank.

The development machine is shared: the run records the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
STORE_JOB = ["-m", "falcon.evaluate", "agent_list=[minrtt]", "runs=1", "scenario=static_4g_wlan"]
# FALCON on one path, with a bank of 27 cells (tests/test_concurrent_jobs.py)
FALCON_JOB = [
    "-m",
    "falcon.evaluate",
    "experiment=tiny",
    "scenario=single_path",
    "agent_list=[falcon]",
    "runs=1",
    "bank=quick",
    "bank.path=bank.h5",
    "bank.grid.n_paths=1",
    "bank.hidden=[8,8,8]",
    "bank.generalist=null",
    "bank.reptile.meta_iterations=8",
    "bank.reptile.decisions_per_task=24",
    "bank.reptile.inner_steps=2",
    "bank.reptile.task_size_bytes=60000",
    "progress=false",
]
#: the job's own metrics beside the summary's (falcon.experiment.run_pipeline)
JOB_METRICS = {"wall_time_s", "episodes_wall_s", "episodes"}


def together(args: list[list[str]], cwd: Path) -> tuple[list[subprocess.CompletedProcess], float]:
    """Run ``python ARGS`` for every ARGS at once in ``cwd``; the results and the wall time [s]."""
    env = {k: v for k, v in os.environ.items() if k not in ("MLFLOW_TRACKING_URI", "FALCON_DEBUG")}
    t0 = time.perf_counter()
    procs = [
        subprocess.Popen(
            [sys.executable, *a],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for a in args
    ]
    outs = [p.communicate() for p in procs]
    wall = time.perf_counter() - t0
    return [
        subprocess.CompletedProcess(a, p.returncode, o, e)
        for a, p, (o, e) in zip(args, procs, outs)
    ], wall


def failed_lines(res: subprocess.CompletedProcess) -> bool:
    return "Traceback" in res.stderr or any(
        line.startswith("error:") for line in res.stderr.splitlines()
    )


def store_repeat(jobs: int, folder: Path) -> dict:
    from mlflow.tracking import MlflowClient

    from falcon.report import flat_metrics

    done, wall = together([STORE_JOB] * jobs, folder)
    summaries = {}
    for path in folder.glob("results/evaluate/*/summary.json"):
        s = json.loads(path.read_text())
        summaries[s["mlflow_run_id"]] = s
    try:
        client = MlflowClient(tracking_uri=f"sqlite:///{folder / 'mlflow.db'}")
        exp = client.get_experiment_by_name("falcon")
        runs = client.search_runs([exp.experiment_id]) if exp is not None else []
        store_error = None
    except Exception as e:  # noqa: BLE001  (a broken store is a result here)
        runs, store_error = [], f"{type(e).__name__}: {str(e)[:200]}"
    complete = [
        r
        for r in runs
        if r.info.run_id in summaries
        and set(r.data.metrics) == set(flat_metrics(summaries[r.info.run_id])) | JOB_METRICS
    ]
    return {
        "figure": "store",
        "jobs": jobs,
        "exit_statuses": sorted(r.returncode for r in done),
        "jobs_with_errors": sum(failed_lines(r) for r in done),
        "finished_runs": sum(r.info.status == "FINISHED" for r in runs),
        "runs_with_every_metric": len(complete),
        "outputs": len(summaries),
        "store_error": store_error,
        "wall_s": round(wall, 1),
        "errors": [r.stderr.strip().splitlines()[-1] for r in done if r.returncode][:3],
    }


def bank_figure(folder: Path) -> dict:
    from metalearning.bank import MetaModelBank

    shared, alone = folder / "shared", folder / "alone"
    shared.mkdir(parents=True)
    alone.mkdir()
    done, wall = together([[*FALCON_JOB, "output=out1"], [*FALCON_JOB, "output=out2"]], shared)
    (ref,), wall_alone = together([[*FALCON_JOB, "output=out"]], alone)
    results = [
        json.loads((d / "summary.json").read_text())["results"]
        if (d / "summary.json").is_file()
        else None
        for d in (shared / "out1", shared / "out2", alone / "out")
    ]
    banks = [
        MetaModelBank.read(d / "bank.h5").params if (d / "bank.h5").is_file() else None
        for d in (shared, alone)
    ]
    same_bank = banks[0] is not None and banks[1] is not None and (banks[0] == banks[1]).all()
    return {
        "figure": "bank",
        "jobs": 2,
        "exit_statuses": [r.returncode for r in (*done, ref)],
        "built": sum("bank: building" in r.stderr for r in done),
        "waited": sum("waiting for it" in r.stderr for r in done),
        "reused": sum("bank: reusing" in r.stderr for r in done),
        "results_as_alone": results[0] == results[2]
        and results[1] == results[2]
        and results[2] is not None,
        "bank_as_alone": bool(same_bank),
        "wall_s": round(wall, 1),
        "wall_alone_s": round(wall_alone, 1),
        "errors": [r.stderr.strip().splitlines()[-1] for r in (*done, ref) if r.returncode],
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--skip-bank", action="store_true")
    ap.add_argument("--out", type=Path, help="also append the JSON lines to this file")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="concurrent-jobs-") as tmp:
        for i in range(args.repeats):
            folder = Path(tmp) / f"store-{i}"
            folder.mkdir()
            report(
                {**store_repeat(args.jobs, folder), "repeat": i, "load_average": os.getloadavg()},
                args.out,
            )
        if not args.skip_bank:
            report({**bank_figure(Path(tmp) / "bank"), "load_average": os.getloadavg()}, args.out)


def report(figure: dict, out: Path | None) -> None:
    """One JSON line on stdout (and appended to ``out``), a short line on stderr."""
    line = json.dumps(figure)
    print(line, flush=True)
    if out is not None:
        with open(out, "a") as fh:
            fh.write(line + "\n")
    keys = (
        "exit_statuses",
        "finished_runs",
        "runs_with_every_metric",
        "built",
        "waited",
        "results_as_alone",
        "wall_s",
    )
    print(
        f"{figure['figure']}: " + ", ".join(f"{k} {figure[k]}" for k in keys if k in figure),
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
