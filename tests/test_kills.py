"""Killed jobs: a bank build, a falcon.train with a learner and a learnability
run, each SIGKILLed at seeded random instants and started again. Between
kills, every file under a final name is complete (a reader sees the old file
or nothing, never half of one); after the last restart the outputs equal an
uninterrupted run's. The default suite kills each job once, at a seeded
instant; the slow run (``make test-all``) kills it five times before letting
it finish, and requires at least four of the five to hit the running job
(``FALCON_KILLS=N`` sets the default suite's count).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
KILLS = int(os.environ.get("FALCON_KILLS", "1"))
#: kills per job: the default suite's, and 5 in the slow run
KILL_COUNTS = [
    pytest.param(KILLS, id=f"{KILLS}kill"),
    pytest.param(5, id="5kills", marks=pytest.mark.slow),
]

BANK = [
    "experiment=build_bank",
    "bank=quick",
    "bank.grid.n_paths=1",
    "bank.hidden=[8,8,8]",
    "bank.reptile.meta_iterations=6",
    "bank.reptile.decisions_per_task=24",
    "bank.reptile.inner_steps=2",
    "bank.reptile.task_size_bytes=60000",
    "bank.chunk_size=3",
    "bank.checkpoint_every=1",
    "bank.generalist=null",
    "runtime.workers=1",
    "tracking=none",
]
TRAIN = [
    "experiment=tiny",
    "agent=dqn_off",
    "agent_list=[dqn_off]",
    "runs=2",
    "tracking=none",
    "agent.train.collect_episodes=2",
    "agent.train.gradient_steps=300",
    "agent.train.models=2",
    "agent.train.checkpoints=2",
    "agent.train.validation_episodes=4",
]
LEARNABILITY = [
    "experiment=learnability",
    "quick=true",
    "learnability.learners=[dqn_off]",
    "tracking=none",
    "runtime.workers=1",
]


def command(args: list[str]) -> list[str]:
    return [sys.executable, "-m", "falcon.train", *args]


def env() -> dict:
    e = {k: v for k, v in os.environ.items() if k not in ("FALCON_DEBUG", "MLFLOW_TRACKING_URI")}
    e["PYTHONPATH"] = os.pathsep.join([str(REPO / "tests"), str(REPO), e.get("PYTHONPATH", "")])
    return e


def run(args: list[str], cwd: Path) -> float:
    """Run to completion; its wall time [s]."""
    t0 = time.monotonic()
    res = subprocess.run(
        command(args), cwd=cwd, env=env(), capture_output=True, text=True, timeout=600
    )
    assert res.returncode == 0, res.stderr[-2000:]
    return time.monotonic() - t0


def run_and_kill(args: list[str], cwd: Path, after_s: float) -> bool:
    """Start the job and SIGKILL its process group after ``after_s``; True if it was still running."""
    proc = subprocess.Popen(
        command(args),
        cwd=cwd,
        env=env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        proc.wait(after_s)
        return False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
        return True


def complete_files(root: Path) -> None:
    """Every file under a final name (no temporary name) is whole."""
    import h5py

    for f in root.rglob("*"):
        if not f.is_file() or any(part.startswith(".") for part in f.relative_to(root).parts):
            continue  # temporary names: hidden staging folders and files
        if f.suffix == ".json":
            json.loads(f.read_text())
        elif f.suffix in (".h5", ".hdf5"):
            with h5py.File(f, "r") as h:
                assert len(h.keys()) > 0, f
        elif f.suffix == ".npz":
            with np.load(f) as z:
                assert len(z.files) > 0, f


def killed_then_finished(
    args: list[str], cwd: Path, reference_s: float, seed: int, kills: int
) -> int:
    """Kill the job ``kills`` times at seeded instants, checking the files after each
    kill, then let it finish; the number of kills that hit a running job."""
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(kills):
        hits += run_and_kill(args, cwd, float(rng.uniform(0.3, 0.9)) * reference_s)
        complete_files(cwd)
    run(args, cwd)
    complete_files(cwd)
    print(f"{hits} of {kills} kills hit the running job", file=sys.stderr)  # shown with pytest -s
    return hits


def enough_hits(hits: int, kills: int) -> bool:
    """One kill must hit; of several, all but one (a seeded instant can fall after a fast finish)."""
    return hits >= max(1, kills - 1)


@pytest.mark.parametrize("kills", KILL_COUNTS)
def test_a_killed_bank_build_resumes_to_the_same_bank(tmp_path, kills):
    from metalearning.bank import MetaModelBank

    ref = tmp_path / "ref"
    ref.mkdir()
    t_ref = run([*BANK, f"bank.path={ref / 'bank.h5'}"], ref)
    work = tmp_path / "work"
    work.mkdir()
    hits = killed_then_finished(
        [*BANK, f"bank.path={work / 'bank.h5'}"], work, t_ref, seed=1, kills=kills
    )
    assert enough_hits(hits, kills)
    a, b = MetaModelBank.read(ref / "bank.h5"), MetaModelBank.read(work / "bank.h5")
    assert np.array_equal(a.params, b.params)
    assert not (work / "bank.h5.partial").exists()  # checkpoints removed once the bank is written


@pytest.mark.parametrize("kills", KILL_COUNTS)
@pytest.mark.parametrize("job, args", [("train", TRAIN), ("learnability", LEARNABILITY)])
def test_a_killed_job_restarted_gives_the_same_output(tmp_path, job, args, kills):
    ref = tmp_path / "ref"
    ref.mkdir()
    t_ref = run([*args, "output=out"], ref)
    work = tmp_path / "work"
    work.mkdir()
    hits = killed_then_finished([*args, "output=out"], work, t_ref, seed=2, kills=kills)
    assert enough_hits(hits, kills)
    name = "learnability.json" if job == "learnability" else "summary.json"
    a, b = (
        json.loads((ref / "out" / name).read_text()),
        json.loads((work / "out" / name).read_text()),
    )
    assert without_timings(a["results"]) == without_timings(b["results"])


#: keys of measured wall-clock times (they differ between any two runs)
TIMINGS = ("wall_s", "selection_s", "fit_s")


def without_timings(obj):
    if isinstance(obj, dict):
        return {k: without_timings(v) for k, v in obj.items() if k not in TIMINGS}
    if isinstance(obj, list):
        return [without_timings(v) for v in obj]
    return obj
