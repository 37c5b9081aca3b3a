"""Seeded results stay bit-identical unless a change means to alter them.

The main job (two runs per scheduler), every experiment's quick variant and
falcon.evaluate's named experiments (stream-aware, web pages) run
in-process on a small untrained bank; every number a run measures in
emulated time (download times, scores, packets, ...; not wall-clock time,
CPU or memory) is collected from its results and hashed, float by float
(``float.hex``), and compared with ``tests/golden/results.json``. The bank
presets' fingerprints are checked the same way.

After a change that is *meant* to alter results (say why in the commit)::

    FALCON_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_golden.py

Runs that train a network with torch (the bank build, DQN-Off and DQN-On in
the experiments) round differently on some processors: the same code and
seeds gave other digests on an AVX-512 Sapphire Rapids Xeon than on the
machine the digests were recorded on, with torch 2.13 to 2.15 alike and
whatever CPU capability, MKL or OpenBLAS setting was forced. Such an entry
also accepts the digests of ``also`` (the other machines'), each recorded on
its machine from a commit whose results were unchanged on the first. An
update keeps an entry whose digest it accepts and replaces one it does not
(a changed result: the other machines' digests are then stale).

A failing check prints the digest it got, so another machine's digest can be
read from its log (CI's included). Until a changed result is recorded on the
first machine, a job may pin the setting that changed it to its earlier value
(:func:`pinned`: FALCON's tail copies in the jobs that also train with torch).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path

import pytest

from baselines.dqn.network import QNetSpec
from falcon.experiments import common
from metalearning.bank import MetaModelBank
from metalearning.grid import ConditionGrid

GOLDEN = Path(__file__).parent / "golden" / "results.json"
UPDATE = os.environ.get("FALCON_UPDATE_GOLDEN") == "1"
#: a number whose key (or an enclosing key) contains one of these is a
#: measurement of the machine, not of the emulation, or an identifier
MACHINE = (
    "wall",
    "cpu",
    "memory",
    "rss",
    "mlflow",
    "output",
    "created",
    "_ms",
    "elapsed_wall",
    "seconds_per",
    "per_s",
    "rate_hz",
    "selection_s",
)
#: summaries computed only from numbers the digest already covers (counts of
#: conditions whose hashed ratio is within a bound): they cannot change unless
#: a hashed number does, so leaving them out loses nothing, and a summary
#: added later does not void the digests recorded on other machines (``also``)
DERIVED = ("within_best_known",)
#: numbers of no trained network hashed as an entry of their own, ``<job>/<key>``:
#: the oracle's candidates' times per seed (rules and split policies only), so
#: that a job whose other numbers round differently on other machines (``also``)
#: keeps its recorded digests when these are added
SEPARATE = ("candidate_times_s",)


def pinned(section: str, *agents: str) -> list[str]:
    """Overrides that keep ``agents`` of the job ``section`` without FALCON's tail
    copies (``tail_reinject``, on by default since its digests were recorded):
    the job also trains torch networks, so its digests were recorded on two
    machines (``also``), and a changed result can only be recorded on the first
    one (module docstring). Drop the pin when that is done."""
    return [f"+{section}.agent_overrides.{a}.tail_reinject=false" for a in agents]


JOBS = {
    "main": ["experiment=main", "runs=2", "scenario_list=[static_4g_5g,mobile_5g_5g]"],
    "convergence": ["experiment=convergence", "quick=true"],
    "stress": ["experiment=stress_paper", "quick=true", *pinned("stress", "falcon")],
    "stress_alternate": ["experiment=stress", "quick=true"],
    "k_impact": ["experiment=k_impact", "quick=true", *pinned("k_impact", "falcon")],
    "overhead": ["experiment=overhead", "quick=true"],
    "real_world": [
        "experiment=real_world",
        "quick=true",
        "~real_world.settings.static_5g_wlan",
        *pinned("real_world", "falcon", "falcon_n"),
    ],
    "learnability": ["experiment=learnability", "quick=true", "runtime.workers=1"],
    "meta_evidence": [
        "experiment=meta_evidence",
        "bank.reptile.meta_iterations=2",
        "bank.reptile.decisions_per_task=48",
        "evidence.n_cells=2",
        "evidence.tasks_per_cell=1",
        "evidence.eval_seeds=1",
        "evidence.finetune_decisions=48",
        "evidence.eval_size_bytes=200000",
        "evidence.max_duration_s=30",
        "+bank.generalist.tasks=2",
        "+bank.generalist.gradient_steps=20",
        "+bank.generalist.models=2",
        "+bank.generalist.checkpoints=1",
        "+bank.generalist.validation_tasks=1",
        "+bank.generalist.validation_episodes=2",
    ],
}
#: falcon.evaluate's named experiments (the same check)
EVALUATE_JOBS = {
    "stream_aware": ["experiment=stream_aware", "runs=2"],
    "web_pages": [
        "experiment=web_pages",
        "runs=1",
        "scenario_list=[static_4g_wlan,mobile_5g_5g]",
        "app_list=[web_github]",
    ],
}
#: a one-path bank (27 cells) with a generalist start: builds in seconds
TINY_BANK = {
    "name": "tiny",
    "seed": 3,
    "hidden": [8, 8, 8],
    "grid": {"n_paths": 1, "bandwidth_mbps": [1, 1200]},
    "generalist": {
        "tasks": 2,
        "gradient_steps": 20,
        "models": 2,
        "checkpoints": 1,
        "validation_tasks": 1,
        "validation_episodes": 2,
    },
    "reptile": {
        "meta_iterations": 3,
        "decisions_per_task": 24,
        "inner_steps": 2,
        "task_size_bytes": 60_000,
    },
    "chunk_size": 10,
    "checkpoint_every": 1,
}


def numbers(obj, path: str = "") -> list[tuple[str, str]]:
    """``(key path, float.hex)`` of every number in ``obj`` outside :data:`MACHINE` and
    :data:`DERIVED` keys, in order."""
    if isinstance(obj, dict):
        return [
            x
            for k, v in obj.items()
            if not any(m in str(k).lower() for m in MACHINE)
            and k not in DERIVED
            and k not in SEPARATE
            for x in numbers(v, f"{path}/{k}")
        ]
    if isinstance(obj, (list, tuple)):
        return [x for i, v in enumerate(obj) for x in numbers(v, f"{path}[{i}]")]
    if isinstance(obj, bool) or not isinstance(obj, (int, float)):
        return []
    v = float(obj)
    return [(path, "nan" if math.isnan(v) else v.hex())]


def separate(obj, key: str) -> list:
    """Every value of ``key`` in ``obj``, in order (the numbers :data:`SEPARATE` hashes apart)."""
    if isinstance(obj, dict):
        return [v for k, v in obj.items() if k == key] + [
            x for k, v in obj.items() if k != key for x in separate(v, key)
        ]
    if isinstance(obj, (list, tuple)):
        return [x for v in obj for x in separate(v, key)]
    return []


def digest(obj) -> dict:
    nums = sorted(numbers(obj))  # by key path: the order of a mapping's keys is not a result
    h = hashlib.sha256(json.dumps(nums).encode()).hexdigest()
    return {"numbers": len(nums), "sha256": h}


def accepted(entry: dict) -> list[dict]:
    """The digests a golden entry accepts: its own and its ``also`` (module docstring)."""
    return [{"numbers": entry["numbers"], "sha256": entry["sha256"]}, *entry.get("also", [])]


def check(name: str, obj) -> None:
    for key in SEPARATE:
        found = separate(obj, key)
        if found:
            check(f"{name}/{key}", found)
    golden = json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}
    got = digest(obj)
    if UPDATE:
        if name not in golden or got not in accepted(golden[name]):
            golden[name] = got  # a changed result: the other machines' digests are stale
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(json.dumps(dict(sorted(golden.items())), indent=1) + "\n")
        return
    assert name in golden, f"no golden digest for {name}: run with FALCON_UPDATE_GOLDEN=1"
    assert got in accepted(golden[name]), (
        f"{name}: seeded results changed ({got['numbers']} numbers, sha256 {got['sha256']}; "
        f"golden {golden[name]['numbers']}); if meant, FALCON_UPDATE_GOLDEN=1 (module docstring)"
    )


#: jobs run on a bank of the completion MDP (19 inputs over two paths), so that
#: FALCON's default path is checked too: its waits, skipped dominated waits and
#: tail copies (the paper-MDP bank of the other jobs commits every packet)
COMPLETION_JOBS = {
    "main_completion": [
        "experiment=main",
        "runs=3",
        "scenario_list=[static_5g_wlan,mobile_5g_5g]",
        "agent_list=[falcon]",
    ],
}


@pytest.fixture(scope="module")
def small_bank():
    return MetaModelBank.initial(ConditionGrid(), QNetSpec(8, 2, (16, 16, 16)), seed=3)


@pytest.fixture(scope="module")
def completion_bank():
    from envs.mdp import COMPLETION, n_inputs

    spec = QNetSpec(n_inputs(2, COMPLETION), 2, (16, 16, 16))
    return MetaModelBank.initial(ConditionGrid(), spec, seed=3)


@pytest.mark.parametrize("job", [*JOBS, *COMPLETION_JOBS])
def test_seeded_results_are_unchanged(job, compose, tmp_path, monkeypatch, request):
    from falcon import bank_job
    from falcon.train import run_train_job

    bank = request.getfixturevalue("completion_bank" if job in COMPLETION_JOBS else "small_bank")
    bank_file = tmp_path / "bank.h5"
    bank.write(bank_file)
    monkeypatch.setattr(common, "experiment_bank", lambda cfg, progress=True: bank)
    monkeypatch.setattr(bank_job, "ensure_bank", lambda cfg, runtime=None, progress=True: None)
    cfg = compose(
        "train",
        [
            *{**JOBS, **COMPLETION_JOBS}[job],
            "tracking=none",
            "progress=false",
            f"output={tmp_path / 'out'}",
            f"bank.path={bank_file}",
        ],
    )
    res = run_train_job(cfg)
    if job.startswith(
        "main"
    ):  # the summary: per scenario, app and scheduler, every metric's statistics
        res = {k: v for k, v in res.items() if k not in ("schedulers_info",)}
    check(job, res)


@pytest.mark.parametrize("job", list(EVALUATE_JOBS))
def test_seeded_evaluations_are_unchanged(job, compose, tmp_path, monkeypatch, small_bank):
    from falcon import bank_job
    from falcon.evaluate import run_evaluate_job

    bank_file = tmp_path / "bank.h5"
    small_bank.write(bank_file)
    monkeypatch.setattr(bank_job, "ensure_bank", lambda cfg, runtime=None, progress=True: None)
    cfg = compose(
        "evaluate",
        [
            *EVALUATE_JOBS[job],
            "tracking=none",
            "progress=false",
            f"output={tmp_path / 'out'}",
            f"bank.path={bank_file}",
        ],
    )
    check(job, run_evaluate_job(cfg))


def test_bank_build_is_unchanged(tmp_path):
    from metalearning.build import BankBuildSpec, build_bank

    bank = build_bank(BankBuildSpec.from_config(TINY_BANK), tmp_path / "bank.h5", progress=False)
    check("bank_build", bank.params.astype(float).tolist())


def test_bank_fingerprints_are_unchanged():
    from falcon.bank_job import bank_config
    from metalearning.build import BankBuildSpec

    check(
        "bank_fingerprints",
        {
            name: int(BankBuildSpec.from_config(bank_config(name)).fingerprint()[:12], 16)
            for name in ("quick", "paper")
        },
    )
