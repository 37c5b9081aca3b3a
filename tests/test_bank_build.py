"""The bank-building job: chunks, checkpoints and resume, runtimes, the CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest

import metalearning.build as build_mod
from envs.errors import ConfigError
from metalearning.bank import MetaModelBank
from metalearning.build import BankBuildSpec, bank_matches, build_bank, checkpoint_dir

# one path: 27 cells, so a whole bank builds in seconds
TINY = {
    "name": "tiny",
    "seed": 3,
    "hidden": [8, 8, 8],
    "grid": {"n_paths": 1},
    "reptile": {
        "meta_iterations": 4,
        "decisions_per_task": 24,
        "inner_steps": 2,
        "task_size_bytes": 60_000,
    },
    "chunk_size": 10,
    "checkpoint_every": 1,
}


def tiny_spec(**over) -> BankBuildSpec:
    return BankBuildSpec.from_config({**TINY, **over})


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """An uninterrupted build of the tiny bank."""
    path = tmp_path_factory.mktemp("ref") / "bank.h5"
    return build_bank(tiny_spec(), path, progress=False), path


def test_bank_complete_and_distinct(reference):
    bank, path = reference
    assert bank.params.shape[0] == 27
    assert len({row.tobytes() for row in bank.params}) == 27  # every cell its own model
    back = MetaModelBank.read(path)
    assert np.array_equal(back.params, bank.params)
    assert back.meta["fingerprint"] == tiny_spec().fingerprint()
    assert len(back.meta["loss_curve"]) == 4
    assert not checkpoint_dir(path).exists()  # checkpoints removed when done


def test_resume_after_kill_gives_the_same_bank(tmp_path, monkeypatch, reference):
    ref, _ = reference
    path = tmp_path / "bank.h5"
    real_save = build_mod.save_chunk_checkpoint
    calls = {"n": 0}

    def dying_save(*args, **kw):
        real_save(*args, **kw)
        calls["n"] += 1
        if calls["n"] == 6:  # chunk 1 is done, chunk 2 has written a checkpoint
            raise KeyboardInterrupt

    monkeypatch.setattr(build_mod, "save_chunk_checkpoint", dying_save)
    with pytest.raises(KeyboardInterrupt):
        build_bank(tiny_spec(), path, progress=False)
    assert not path.exists()  # no half-written bank
    assert len(list(checkpoint_dir(path).glob("chunk_*.npz"))) == 2
    monkeypatch.setattr(build_mod, "save_chunk_checkpoint", real_save)

    resumed_from = []
    real_chunk = build_mod.build_chunk

    def spy(job):
        out = real_chunk(job)
        resumed_from.append(out["resumed_from"])
        return out

    bank = build_bank(
        tiny_spec(), path, progress=False, run_jobs=lambda jobs, w: [spy(j) for j in jobs]
    )
    # chunk 1 finished, chunk 2 resumed midway, chunk 3 started fresh
    assert resumed_from[0] == 4 and 0 < resumed_from[1] < 4 and resumed_from[2] == 0
    assert np.array_equal(bank.params, ref.params)


def test_checkpoints_of_other_settings_are_ignored(tmp_path, reference):
    ref, _ = reference
    path = tmp_path / "bank.h5"
    other = tiny_spec(seed=4)
    ckpt = checkpoint_dir(path)
    ckpt.mkdir()
    build_mod.save_chunk_checkpoint(
        ckpt / "chunk_0000.npz",
        other.checkpoint_fingerprint(),
        list(range(10)),
        np.zeros((10, ref.params.shape[1])),
        4,
        [],
    )
    bank = build_bank(tiny_spec(), path, progress=False)
    assert np.array_equal(bank.params, ref.params)


def test_process_pool_equals_inline(tmp_path, reference):
    from falcon.runtime import run_jobs

    ref, _ = reference
    bank = build_bank(
        tiny_spec(),
        tmp_path / "bank.h5",
        progress=False,
        run_jobs=lambda jobs, w: run_jobs(jobs, w, {"name": "local", "workers": 2}, progress=False),
    )
    assert np.array_equal(bank.params, ref.params)


def test_chunking_does_not_change_the_bank(tmp_path, reference):
    ref, _ = reference
    bank = build_bank(tiny_spec(chunk_size=27), tmp_path / "bank.h5", progress=False)
    assert np.array_equal(bank.params, ref.params)


def test_bank_matches(tmp_path, reference):
    _, path = reference
    assert bank_matches(path, tiny_spec())
    assert bank_matches(path, tiny_spec(chunk_size=5))  # chunking does not change weights
    assert not bank_matches(path, tiny_spec(seed=4))
    assert not bank_matches(tmp_path / "missing.h5", tiny_spec())
    bad = tmp_path / "bad.h5"
    bad.write_bytes(b"not hdf5")
    assert not bank_matches(bad, tiny_spec())


@pytest.mark.parametrize(
    "over, msg",
    [
        ({"bogus": 1}, "unknown key"),
        ({"chunk_size": 0}, "chunk_size"),
        ({"hidden": "wide"}, "hidden"),
        ({"reptile": {"meta_iterations": 0}}, "meta_iterations"),
        ({"dqn": {"lr": -1}}, "lr"),
    ],
)
def test_bad_build_config(over, msg):
    with pytest.raises(ConfigError, match=msg):
        BankBuildSpec.from_config({**TINY, **over})


def test_cli_builds_then_reuses(run_cli, tmp_path):
    args = [
        "experiment=build_bank",
        "bank.path=bank.h5",
        "bank.grid.n_paths=1",
        "bank.hidden=[8,8,8]",
        "bank.reptile.meta_iterations=2",
        "bank.reptile.decisions_per_task=16",
        "bank.reptile.inner_steps=2",
        "bank.reptile.task_size_bytes=50000",
        "tracking.enabled=false",
    ]
    first = run_cli("train", *args, "output=out1")
    assert first.returncode == 0, first.stderr
    assert (tmp_path / "bank.h5").exists()
    s1 = json.loads((tmp_path / "out1" / "bank_summary.json").read_text())
    assert s1["built"] is True and s1["cells"] == 27
    assert (tmp_path / "out1" / "bank_convergence.png").exists()
    second = run_cli("train", *args, "output=out2")
    assert second.returncode == 0, second.stderr
    assert json.loads((tmp_path / "out2" / "bank_summary.json").read_text())["built"] is False
    assert "reusing" in second.stderr
    bad = run_cli("train", "experiment=build_bank", "bank.chunk_size=0", "tracking.enabled=false")
    assert bad.returncode == 2 and bad.stderr.strip().splitlines()[-1].startswith(
        "error: bank.chunk_size"
    )


def test_full_grid_bank_has_729_distinct_cells(tmp_path):
    """The real two-path grid end to end at a minimal budget: every one of the
    729 cells gets its own meta-model, stored under its name with its ranges."""
    spec = BankBuildSpec.from_config(
        {
            "name": "smoke",
            "seed": 0,
            "hidden": [16, 16, 16],
            "reptile": {
                "meta_iterations": 1,
                "decisions_per_task": 16,
                "inner_steps": 2,
                "task_size_bytes": 200_000,
                "task_max_duration_s": 30.0,
            },
            "chunk_size": 243,
        }
    )
    bank = build_bank(spec, tmp_path / "bank.h5", progress=False)
    assert bank.params.shape[0] == 729 == spec.grid.n_cells
    assert len({row.tobytes() for row in bank.params}) == 729
    back = MetaModelBank.read(tmp_path / "bank.h5", grid=spec.grid, spec=spec.qnet_spec)
    assert np.array_equal(back.params, bank.params)
    names = (
        spec.grid.names()
        if hasattr(spec.grid, "names")
        else [spec.grid.name(c) for c in range(729)]
    )
    assert names[0] == "cell_000" and names[-1] == "cell_728" and len(set(names)) == 729
