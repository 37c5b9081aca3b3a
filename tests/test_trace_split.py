"""The trace split (data/traces/split.yaml, envs/traces/split.py) and the
guard that keeps its test files out of anything that learns
(envs/traces/guard.py): entered by falcon.train's training step, the bank
build, the task collector and the experiments' DQN-Off reference, and
effective in worker processes."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

import pytest

from envs.errors import ConfigError, TraceError
from envs.traces import list_traces, load_trace, traces_dir
from envs.traces.guard import GUARD_ENV, guarded, training_reads
from envs.traces.split import SPLITS, read_split, sha256_file, split_of, verify

TEST_FILE = "lumos5g_mmwave_runs/lumos_trace_7.log"  # small files of each split
TRAIN_FILE = "lumos5g_mmwave_runs/lumos_trace_1.log"
VALIDATION_FILE = "lumos5g_mmwave_runs/lumos_trace_3.log"


def _scenario(trace) -> dict:
    return {
        "paths": [{"trace": str(trace), "rtt_ms": 25, "trace_start_s": "random"}, {"link": "4g"}]
    }


# ---------------------------------------------------------------- the split file
def test_split_file_checksums_match_the_files_and_sha256sums():
    split = verify()
    sums = {
        path: h
        for h, path in (
            line.split() for line in (traces_dir() / "SHA256SUMS").read_text().splitlines()
        )
    }
    assert {p: e.sha256 for p, e in split.entries.items()} == {p: sums[p] for p in split.entries}


def test_every_shipped_trace_file_is_in_exactly_one_split():
    split = read_split()
    assert sorted(split.entries) == list_traces()
    text = (traces_dir() / "split.yaml").read_text()
    assert all(text.count(f"\n  {rel}:\n") == 1 for rel in list_traces())
    sets = {p.split("/")[0] for p in split.entries}
    assert len(sets) >= 6
    for s in sets:  # every set has files in every split
        assert {e.split for p, e in split.entries.items() if p.startswith(s + "/")} == set(
            SPLITS
        ), s


def test_split_of_finds_a_file_by_its_content(tmp_path):
    data = (traces_dir() / TEST_FILE).read_bytes()
    copy = tmp_path / "renamed.log"
    copy.write_bytes(data)
    assert (
        split_of(TEST_FILE)
        == split_of(data)
        == split_of(sha256_file(copy))
        == split_of(copy)
        == "test"
    )
    assert split_of(TRAIN_FILE) == "train" and split_of(VALIDATION_FILE) == "validation"
    other = tmp_path / "other.log"
    other.write_bytes(data + b"1 1\n")
    assert split_of(other) is None


def _data_dir(tmp_path, monkeypatch, files: str) -> None:
    """A data folder with two trace files and a split file of ``files`` (YAML lines)."""
    (tmp_path / "traces").mkdir()
    for name in ("a.log", "b.log"):
        shutil.copy(traces_dir() / TRAIN_FILE, tmp_path / "traces" / name)
    (tmp_path / "traces" / "b.log").write_text("1 2\n2 3\n")
    (tmp_path / "traces" / "split.yaml").write_text("files:\n" + files)
    monkeypatch.setenv("FALCON_DATA_DIR", str(tmp_path))


def _entry(name: str, split: str, sha: str) -> str:
    return f'  {name}:\n    split: {split}\n    sha256: {sha}\n    about: "a file"\n'


@pytest.mark.parametrize(
    "case, error, message",
    [
        (
            "split",
            ConfigError,
            "files.a.log.split: expected one of train, validation, test, got 'tset'",
        ),
        ("sha", TraceError, "a.log: SHA-256"),
        ("twice", ConfigError, "a.log listed twice"),
        ("same_bytes", ConfigError, "the same bytes as a.log (split train) but split test"),
        ("key", ConfigError, "unknown key(s) ['splt']"),
    ],
)
def test_a_bad_split_file_is_one_line(tmp_path, monkeypatch, case, error, message):
    good = sha256_file(traces_dir() / TRAIN_FILE)
    b = _entry("b.log", "test", hashlib.sha256(b"1 2\n2 3\n").hexdigest())
    files = {
        "split": _entry("a.log", "tset", good) + b,
        "sha": _entry("a.log", "train", "f" * 64) + b,
        "twice": _entry("a.log", "train", good) + _entry("a.log", "train", good) + b,
        "same_bytes": _entry("a.log", "train", good) + _entry("c.log", "test", good) + b,
        "key": _entry("a.log", "train", good).replace("split:", "splt:") + b,
    }[case]
    _data_dir(tmp_path, monkeypatch, files)
    if case == "same_bytes":
        shutil.copy(tmp_path / "traces" / "a.log", tmp_path / "traces" / "c.log")
    with pytest.raises(error) as e:
        verify()
    assert message in str(e.value) and "\n" not in str(e.value)


# ---------------------------------------------------------------- the guard
def test_the_guard_refuses_test_files_and_their_copies_only(tmp_path):
    copy = tmp_path / "x.log"
    shutil.copy(traces_dir() / TEST_FILE, copy)
    load_trace(TEST_FILE)  # no guard: reporting may read it
    assert guarded() is None
    with training_reads("training agent 'x' on scenario 'y'"):
        assert os.environ[GUARD_ENV] == "training agent 'x' on scenario 'y'"
        for f in (TEST_FILE, copy):
            with pytest.raises(TraceError) as e:
                load_trace(f)
            line = str(e.value)
            assert (
                "\n" not in line
                and "test-split file" in line
                and "training agent 'x' on scenario 'y'" in line
            )
            assert str(f) in line or "lumos_trace_7.log" in line
        assert (
            "the bytes of lumos5g_mmwave_runs/lumos_trace_7.log" in line
        )  # the copy says whose bytes
        load_trace(TRAIN_FILE)
        load_trace(VALIDATION_FILE)
        with training_reads("an inner step"):  # the outer step names the condition
            assert guarded() == "training agent 'x' on scenario 'y'"
    assert guarded() is None and GUARD_ENV not in os.environ
    with pytest.raises(RuntimeError), training_reads("a step that fails"):
        raise RuntimeError
    assert guarded() is None


def test_a_process_started_inside_the_guard_inherits_it():
    code = f"from envs.traces import load_trace; load_trace({TEST_FILE!r})"
    with training_reads("collecting experience in a subprocess"):
        res = subprocess.run(
            [sys.executable, "-W", "ignore", "-c", code],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert (
        res.returncode != 0
        and "test-split file read while collecting experience in a subprocess" in res.stderr
    )
    ok = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", code], capture_output=True, text=True, timeout=120
    )
    assert ok.returncode == 0, ok.stderr


# ---------------------------------------------------------------- where it is entered
def _train(trace, agent: str = "stub") -> str:
    """falcon.train's training step on a condition with ``trace``: 'ok' or the error line."""
    from falcon.config import Plan
    from falcon.tracking import NullTracker
    from falcon.train import train_agents

    cfg = {
        "stub": {"_target_": "learner_stub.StubLearner", "train": {"episodes": 1}},
        "dqn_on": {"_target_": "baselines.dqn.dqn_on.DQNOn", "train": {"episodes": 1}},
    }[agent]
    plan = Plan(
        [("cond", _scenario(trace))],
        [("bulk", {"kind": "bulk", "size_bytes": 100_000})],
        [(agent, cfg)],
        [0],
    )
    with tempfile.TemporaryDirectory() as tmp:
        try:
            train_agents(plan, Path(tmp), NullTracker(), 0, progress=False)
        except TraceError as e:
            return str(e)
    return "ok"


@pytest.mark.parametrize("agent", ["stub", "dqn_on"])
def test_training_on_a_test_file_fails_and_on_a_train_file_succeeds(tmp_path, agent):
    copy = tmp_path / "renamed.log"
    shutil.copy(traces_dir() / TEST_FILE, copy)
    for trace in (TEST_FILE, copy):
        line = _train(trace, agent)
        assert (
            "test-split file" in line
            and f"read while training agent '{agent}' on scenario 'cond'" in line
        )
    if agent == "stub":
        assert _train(TRAIN_FILE, agent) == "ok"


def test_the_training_step_refuses_a_test_file_in_a_worker_process(tmp_path):
    with ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn")) as pool:
        bad, good = (
            pool.submit(_train, TEST_FILE).result(),
            pool.submit(_train, TRAIN_FILE).result(),
        )
    assert "test-split file read while training agent 'stub'" in bad and good == "ok"


def test_collecting_bank_experience_on_a_test_file_fails():
    from baselines.dqn.network import QNetSpec
    from envs.mdp import COMPLETION, n_inputs
    from metalearning.collect import collect_task_experience

    spec = QNetSpec(n_inputs(2, COMPLETION), 2, (8,))
    exp = collect_task_experience(_scenario(TRAIN_FILE), None, spec, 0.3, seed=0, decisions=16)
    assert exp.n > 0
    with pytest.raises(TraceError, match="test-split file read while collecting experience"):
        collect_task_experience(_scenario(TEST_FILE), None, spec, 0.3, seed=0, decisions=16)


def test_a_bank_chunk_job_enters_the_guard_in_its_worker(tmp_path, monkeypatch):
    from falcon.bank_job import bank_config
    from metalearning import build

    def reads_a_test_file(*args, **kw):
        load_trace(TEST_FILE)

    monkeypatch.setattr(build, "reptile_cells", reads_a_test_file)
    spec = build.BankBuildSpec.from_config(bank_config("quick"))
    job = build.ChunkJob(0, 1, (0, 1), spec, str(tmp_path), verbose=False)
    with pytest.raises(
        TraceError, match=r"read while building the meta-model bank \(bank chunk 1/1"
    ):
        build.build_chunk(job)


def test_the_experiments_dqn_off_reference_refuses_a_test_file():
    from falcon.experiments import common

    with pytest.raises(TraceError, match="read while training the dqn_off reference"):
        common.train_reference(
            [_scenario(TEST_FILE)],
            {"kind": "bulk", "size_bytes": 100_000},
            0,
            {"collect_episodes": 1, "gradient_steps": 1},
            progress=False,
        )
