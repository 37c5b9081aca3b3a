"""Jobs started together on one tracking store and one bank: none fails, the
store is made once and whole, the bank is built once and reused by the
others; a store broken by an interrupted migration is one line that says
how to recover (falcon.tracking_store, falcon.locks, falcon.bank_job)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import mlflow_runs

from falcon.tracking_store import TrackingError, broken_store_advice, open_client

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
# one path: 27 cells, built in about a second (tests/test_bank_build.py)
TINY_BANK = {
    "name": "tiny",
    "seed": 3,
    "hidden": [8, 8, 8],
    "grid": {"n_paths": 1},
    "generalist": None,
    "reptile": {
        "meta_iterations": 4,
        "decisions_per_task": 24,
        "inner_steps": 2,
        "task_size_bytes": 60_000,
    },
    "chunk_size": 10,
    "checkpoint_every": 1,
}
# FALCON on one path with a bank of that size, through the command line
FALCON_EVALUATE = [
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


def _env() -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("FALCON_DEBUG", "MLFLOW_TRACKING_URI")}
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS), str(REPO), env.get("PYTHONPATH", "")])
    return env


def _start(commands: list[list[str]], cwd: Path) -> list[subprocess.Popen]:
    """Start every command at once in ``cwd``."""
    return [
        subprocess.Popen(
            c, cwd=cwd, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for c in commands
    ]


def _finish(
    procs: list[subprocess.Popen], timeout_s: float = 300
) -> list[subprocess.CompletedProcess]:
    done = []
    for p in procs:
        out, err = p.communicate(timeout=timeout_s)
        done.append(subprocess.CompletedProcess(p.args, p.returncode, out, err))
    return done


def _together(commands: list[list[str]], cwd: Path) -> list[subprocess.CompletedProcess]:
    return _finish(_start(commands, cwd))


def test_jobs_started_together_make_a_new_store_and_a_missing_bank_once(tmp_path):
    """Three jobs meet (tests/concurrent_job.py) to open a store that does
    not exist yet, then to ask for a bank that does not exist yet."""
    from metalearning.bank import MetaModelBank
    from metalearning.build import BankBuildSpec, build_bank

    n = 3
    meet = tmp_path / "meet"
    meet.mkdir()
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    bank = {**TINY_BANK, "path": str(tmp_path / "bank.h5")}
    job = [
        sys.executable,
        str(TESTS / "concurrent_job.py"),
        str(meet),
        str(n),
        uri,
        json.dumps(bank),
    ]
    jobs = _start([job] * n, tmp_path)
    # meanwhile (while one job makes the store, the others wait): the bank one job builds alone
    alone = build_bank(BankBuildSpec.from_config(TINY_BANK), tmp_path / "alone.h5", progress=False)
    import mlflow.tracking  # noqa: F401  (for mlflow_runs below, also meanwhile)

    done = _finish(jobs)
    assert [r.returncode for r in done] == [0] * n, [r.stderr[-2000:] for r in done]
    assert sorted(r.stdout.strip() for r in done) == ["built"] + ["reused"] * (n - 1)
    for r in done:
        assert "Traceback" not in r.stderr
        if "waiting for it" in r.stderr:  # it found the build under way: one line, then the reuse
            assert "built by another process meanwhile" in r.stderr

    _, runs = mlflow_runs(uri)
    assert len(runs) == n and {r.info.status for r in runs} == {"FINISHED"}
    n_metrics = 2 + 40  # built, bank_params_sum, m0..m39 (concurrent_job.N_METRICS)
    assert all(len(r.data.metrics) == n_metrics for r in runs)
    assert sum(r.data.metrics["built"] for r in runs) == 1
    assert len({r.data.metrics["bank_params_sum"] for r in runs}) == 1
    assert np.array_equal(MetaModelBank.read(tmp_path / "bank.h5").params, alone.params)
    # nothing half-made beside them: the store, the bank and their lock files
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "alone.h5",
        "bank.h5",
        "bank.h5.lock",
        "meet",
        "mlflow.db",
        "mlflow.db.lock",
    ]


def _interrupt_store_making(db: Path) -> None:
    """Make the store ``db`` as MLflow does, in place, and kill the process
    in the middle of a schema migration (after a batch migration's copy table)."""
    script = (
        "import os, signal, sys, sqlalchemy\n"
        "from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore\n"
        "def kill(conn, cursor, statement, *args):\n"
        "    if statement.lstrip().upper().startswith('CREATE TABLE _ALEMBIC_TMP_'):\n"
        "        os.kill(os.getpid(), signal.SIGKILL)\n"
        "sqlalchemy.event.listen(sqlalchemy.engine.Engine, 'after_cursor_execute', kill)\n"
        "SqlAlchemyStore(f'sqlite:///{sys.argv[1]}', sys.argv[2])\n"
    )
    res = subprocess.run(
        [sys.executable, "-c", script, str(db), (db.parent / "art").as_uri()],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == -9, res.stderr[-2000:]


def test_a_store_broken_by_an_interrupted_migration_is_one_line_that_says_how_to_recover(
    tmp_path, run_cli
):
    db = tmp_path / "mlflow.db"
    _interrupt_store_making(db)
    res = run_cli("evaluate", "experiment=tiny", "agent_list=[minrtt]", "runs=1", "progress=false")
    assert res.returncode == 2, res.stderr[-2000:]
    assert "Traceback" not in res.stderr
    assert res.stderr.strip().splitlines()[-1] == (
        f"error: tracking store sqlite:///{db.resolve()}: half-migrated by an interrupted schema migration "
        f"(leftover tables _alembic_tmp_metrics; no schema version); it holds no runs: delete {db} "
        f"and run again"
    )
    assert not list(tmp_path.glob("results/**/summary.json"))  # no output, as for any failed job
    db.unlink()  # what the line says
    assert open_client(f"sqlite:///{db}").search_experiments()


def _sqlite(path: Path, sql: str) -> Path:
    con = sqlite3.connect(path)
    con.executescript(sql)
    con.close()
    return path


def test_the_advice_keeps_a_store_that_holds_runs_and_leaves_other_files_alone(tmp_path):
    store = _sqlite(
        tmp_path / "mlflow.db",
        """
        CREATE TABLE experiments (experiment_id INTEGER); CREATE TABLE runs (run_uuid TEXT);
        CREATE TABLE alembic_version (version_num TEXT); INSERT INTO alembic_version VALUES ('abc123');
        CREATE TABLE _alembic_tmp_metrics (key TEXT); INSERT INTO runs VALUES ('r1'), ('r2');""",
    )
    assert broken_store_advice(store) == (
        "half-migrated by an interrupted schema migration (leftover tables _alembic_tmp_metrics; "
        f"schema version abc123); it holds 2 runs: restore {store} from a backup, or move it aside "
        "to start a new store there"
    )
    other = _sqlite(tmp_path / "other.db", "CREATE TABLE runs (run_uuid TEXT);")
    assert broken_store_advice(other) is None  # not MLflow's: no advice to delete it
    assert broken_store_advice(tmp_path / "missing.db") is None


def test_a_store_whose_making_fails_is_not_there(tmp_path, monkeypatch):
    import mlflow.store.db.utils

    def fail(engine):
        raise RuntimeError("disk full")

    monkeypatch.setattr(mlflow.store.db.utils, "_upgrade_db", fail)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    with pytest.raises(TrackingError, match=r"^tracking store .+: RuntimeError: disk full$"):
        open_client(uri)
    assert [p.name for p in tmp_path.iterdir()] == ["mlflow.db.lock"]  # no store, no temporary file


def _results(summary_file: Path) -> dict:
    return json.loads(summary_file.read_text())["results"]


@pytest.mark.slow  # ~30 s; test_jobs_started_together_make_a_new_store_and_a_missing_bank_once covers it
def test_two_falcon_evaluations_started_together_build_the_bank_once(tmp_path):
    shared, alone = tmp_path / "shared", tmp_path / "alone"
    shared.mkdir()
    alone.mkdir()
    evaluate = [sys.executable, "-m", "falcon.evaluate", *FALCON_EVALUATE]
    done = _together([evaluate + ["output=out1"], evaluate + ["output=out2"]], shared)
    assert [r.returncode for r in done] == [0, 0], [r.stderr[-2000:] for r in done]
    assert sum("bank: building" in r.stderr for r in done) == 1
    (ref,) = _together([evaluate + ["output=out"]], alone)
    assert ref.returncode == 0, ref.stderr[-2000:]
    expected = _results(alone / "out" / "summary.json")
    assert (
        _results(shared / "out1" / "summary.json")
        == expected
        == _results(shared / "out2" / "summary.json")
    )
    _, runs = mlflow_runs(f"sqlite:///{shared / 'mlflow.db'}")
    assert [r.info.status for r in runs] == ["FINISHED", "FINISHED"]


def test_a_reproduction_waits_for_an_experiment_another_one_runs_and_reuses_it(tmp_path, capfd):
    import threading
    import time

    from falcon.locks import lock_beside
    from falcon.reproduce import runs
    from falcon.reproduce.catalog import Experiment

    # a module that does not exist: running it instead of reusing it fails the outcome
    exp = Experiment("toy", "falcon.no_such_module", {"quick": ()}, result="toy.json", hydra=False)
    state = {"commit": "c", "changes": ""}
    key = runs.run_key(exp, "quick", exp.command("quick", "OUT", "quick"), state)
    out = (tmp_path / "quick" / f"toy-{key}").resolve()
    outcome = {}
    with lock_beside(out):  # another reproduction runs it
        waiter = threading.Thread(
            target=lambda: outcome.update(
                got=runs.run_one(
                    exp, "quick", tmp_path, {"enabled": False}, "quick", state, "[1/1]"
                )
            )
        )
        waiter.start()
        err, deadline = "", time.monotonic() + 30
        while "waiting for it" not in err and time.monotonic() < deadline:
            time.sleep(0.02)
            err += capfd.readouterr().err
        assert err.strip() == "[1/1] toy: another process is running it; waiting for it"
        out.mkdir(parents=True)
        (out / "toy.json").write_text("{}")  # ... and finishes it
    waiter.join(timeout=30)
    assert outcome["got"].status == "reused" and outcome["got"].output == out
