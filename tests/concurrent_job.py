"""One of several jobs started together by tests/test_concurrent_jobs.py.

    python tests/concurrent_job.py FOLDER N URI BANK_JSON

After its imports the job waits until all N jobs are there (files in
FOLDER), so that all open the tracking store ``URI`` at the same moment; it
starts a tracked run, waits for the others again and asks for the bank of
the build config ``BANK_JSON`` at the same moment; then it logs what it got.
Prints ``built`` or ``reused``.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

N_METRICS = 40


def barrier(folder: Path, name: str, n: int, timeout_s: float = 60.0) -> None:
    """Return when ``n`` processes have reached ``name``."""
    (folder / f"{name}.{os.getpid()}").touch()
    deadline = time.monotonic() + timeout_s
    while len(list(folder.glob(f"{name}.*"))) < n:
        if time.monotonic() > deadline:
            raise SystemExit(
                f"barrier {name}: only {len(list(folder.glob(f'{name}.*')))} of {n} jobs came"
            )
        time.sleep(0.01)


def main() -> None:
    folder, n, uri, bank = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3], json.loads(sys.argv[4])
    import mlflow.tracking  # noqa: F401  (imported before the barrier: the jobs then meet the store together)

    import metalearning.build  # noqa: F401
    from falcon.bank_job import ensure_bank
    from falcon.tracking import tracked_run

    barrier(folder, "store", n)
    with tracked_run({"uri": uri}, run_name=f"job-{os.getpid()}") as tracker:
        tracker.log_params({"pid": os.getpid()})
        barrier(folder, "bank", n)
        got, built = ensure_bank(bank, progress=False)
        tracker.log_metrics(
            {
                "built": float(built),
                "bank_params_sum": float(got.params.sum()),
                **{f"m{i}": float(i) for i in range(N_METRICS)},
            }
        )
    print("built" if built else "reused")


if __name__ == "__main__":
    main()
