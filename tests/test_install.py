"""An install that works from any folder (falcon/paths.py, setup.py's SHIPPED):
configs and data found in a checkout and in a built package, banks in one
user cache keyed by fingerprint, results and the MLflow store under
``FALCON_HOME``. The wheel itself is built, installed into a fresh venv and
run from an empty folder by .ci/run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from envs.errors import ConfigError
from envs.traces import catalog
from falcon import paths
from falcon.bank_job import bank_config, ensure_bank

REPO = Path(__file__).resolve().parent.parent

# one path: 27 cells, one meta-iteration: built in about a second (tests/test_bank_build.py)
TINY_BANK = {
    "name": "tiny",
    "seed": 3,
    "hidden": [8, 8, 8],
    "grid": {"n_paths": 1},
    "generalist": None,
    "reptile": {
        "meta_iterations": 1,
        "decisions_per_task": 24,
        "inner_steps": 2,
        "task_size_bytes": 60_000,
    },
    "chunk_size": 27,
    "checkpoint_every": 1,
}


def test_a_checkout_reads_its_own_configs_and_data(monkeypatch):
    monkeypatch.delenv(catalog.DATA_DIR_ENV, raising=False)
    assert paths.config_dir() == REPO / "configs"
    assert catalog.data_dir() == REPO / "data"


def test_package_data_comes_first(tmp_path, monkeypatch):
    """An installed wheel's falcon/_configs/ and envs/_data/ are used when there."""
    (tmp_path / paths.PACKAGED_CONFIGS).mkdir()
    (tmp_path / catalog.PACKAGED_DATA).mkdir()
    monkeypatch.setattr(paths.resources, "files", lambda package: tmp_path)
    monkeypatch.delenv(catalog.DATA_DIR_ENV, raising=False)
    # the installed data folder is found once per process: this one is a new install
    catalog._installed_data_dir.cache_clear()
    try:
        assert paths.config_dir() == tmp_path / paths.PACKAGED_CONFIGS
        assert catalog.data_dir() == tmp_path / catalog.PACKAGED_DATA
        monkeypatch.setenv(catalog.DATA_DIR_ENV, str(tmp_path / "mine"))
        assert catalog.data_dir() == tmp_path / "mine"
    finally:
        catalog._installed_data_dir.cache_clear()


def test_missing_configs_are_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(paths.resources, "files", lambda package: tmp_path)
    monkeypatch.setattr(paths, "checkout_configs", lambda: tmp_path / "configs")
    with pytest.raises(ConfigError, match="configs: found neither") as e:
        paths.config_dir()
    assert "\n" not in str(e.value)


def test_a_built_package_finds_its_configs_and_data_anywhere(tmp_path):
    """setup.py's build_py copies configs/ and data/ into the built packages; a
    process that imports them from there, in another folder, composes the
    entry points' configs and reads a shipped trace without the checkout."""
    lib, elsewhere = tmp_path / "lib", tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k != catalog.DATA_DIR_ENV}
    env["FALCON_PURE_PYTHON"] = "1"  # build_py only: nothing is compiled
    res = subprocess.run(
        [sys.executable, "setup.py", "-q", "build_py", "-d", str(lib)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    assert (lib / "falcon" / "_configs" / "evaluate.yaml").is_file()
    assert (lib / "envs" / "_data" / "traces" / "split.yaml").is_file()
    # the compiled core's declarations and C helpers ship too (a build from the package)
    assert (lib / "envs" / "dense.pxd").is_file() and (lib / "envs" / "dense_layer.h").is_file()
    code = (
        "import falcon, envs\n"
        "from hydra import compose, initialize_config_dir\n"
        "from falcon.config import CONFIG_DIR\n"
        "from envs.traces.catalog import data_dir, resolve_trace_path\n"
        "with initialize_config_dir(str(CONFIG_DIR), version_base='1.3'):\n"
        "    cfg = compose('evaluate', ['experiment=tiny', 'scenario=mobile_5g_5g'])\n"
        "trace = cfg.scenario.paths[0].trace.file\n"
        "print(falcon.__file__, CONFIG_DIR, data_dir(), resolve_trace_path(trace), sep='\\n')\n"
    )
    env["PYTHONPATH"] = str(lib)
    res = subprocess.run(
        [sys.executable, "-c", code], cwd=elsewhere, env=env, capture_output=True, text=True
    )
    assert res.returncode == 0, res.stderr[-2000:]
    module, configs, data, trace = res.stdout.strip().splitlines()[-4:]
    assert Path(module).is_relative_to(lib)
    assert Path(configs) == lib / "falcon" / "_configs"
    assert Path(data) == lib / "envs" / "_data"
    assert Path(trace).is_relative_to(lib / "envs" / "_data" / "traces")


def test_cache_dir_settings(tmp_path, monkeypatch):
    monkeypatch.delenv(paths.CACHE_ENV, raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert paths.cache_dir() == tmp_path / "home" / ".cache" / "falcon"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert paths.cache_dir() == tmp_path / "xdg" / "falcon"
    monkeypatch.setenv(paths.CACHE_ENV, str(tmp_path / "own"))
    assert paths.cache_dir() == tmp_path / "own"


def test_a_preset_bank_has_one_place_from_every_folder(tmp_path, monkeypatch):
    """bank.path null (the presets): the user cache's file of the build's fingerprint."""
    from metalearning.build import BankBuildSpec

    monkeypatch.setenv(paths.CACHE_ENV, str(tmp_path / "cache"))
    got = []
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        monkeypatch.chdir(tmp_path / folder)
        got.append(bank_config("quick")["path"])
    fp = BankBuildSpec.from_config(bank_config("quick")).fingerprint()
    assert got[0] == got[1] == str(tmp_path / "cache" / "banks" / f"quick-{fp}.h5")
    other = bank_config({**bank_config("quick"), "path": None, "seed": 1})["path"]
    assert other != got[0] and other.startswith(str(tmp_path / "cache" / "banks" / "quick-"))
    assert bank_config({**TINY_BANK, "path": "mine.h5"})["path"] == "mine.h5"  # as given


def test_two_folders_build_the_bank_once(tmp_path, monkeypatch):
    monkeypatch.setenv(paths.CACHE_ENV, str(tmp_path / "cache"))
    built = []
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        monkeypatch.chdir(tmp_path / folder)
        bank, was_built = ensure_bank(dict(TINY_BANK), progress=False)
        built.append(was_built)
        assert bank.grid.n_cells == 27
    assert built == [True, False]
    assert [p.parent.name for p in (tmp_path / "cache").rglob("*.h5")] == ["banks"]
    assert not list((tmp_path / "a").iterdir()) and not list((tmp_path / "b").iterdir())


def test_results_and_tracking_store_follow_falcon_home(tmp_path, monkeypatch):
    from falcon.experiment import output_dir
    from falcon.tracking import resolve_uri

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(paths.HOME_ENV, raising=False)
    cfg = OmegaConf.create({"output": None})
    assert output_dir(cfg, "evaluate", "abcdef1234").parent == Path("results") / "evaluate"
    assert resolve_uri(None) == f"sqlite:///{tmp_path / 'mlflow.db'}"
    home = tmp_path / "home"
    monkeypatch.setenv(paths.HOME_ENV, str(home))
    assert output_dir(cfg, "evaluate", "abcdef1234").parent == home / "results" / "evaluate"
    assert resolve_uri(None) == f"sqlite:///{home / 'mlflow.db'}"
    sweep = OmegaConf.create({"dir": "${falcon_results:}/evaluate"})
    assert sweep.dir == f"{home}/results/evaluate"  # the multirun folder of train/evaluate.yaml
    out = tmp_path / "given"
    assert output_dir(OmegaConf.create({"output": str(out)}), "evaluate", None) == out


def test_an_evaluation_from_an_empty_folder_writes_under_falcon_home(tmp_path, mlflow_uri):
    """falcon.evaluate run in an empty folder: the output folder and the MLflow
    run go to FALCON_HOME (here already holding a store, ``mlflow_uri``), nothing
    to the working folder."""
    from conftest import mlflow_runs

    empty, home = tmp_path / "empty", tmp_path
    empty.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("FALCON_DEBUG", "MLFLOW_TRACKING_URI")}
    env[paths.HOME_ENV] = str(home)
    res = subprocess.run(
        [sys.executable, "-m", "falcon.evaluate", "experiment=tiny", "runs=1", "progress=false"],
        cwd=empty,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    assert mlflow_uri == f"sqlite:///{home / 'mlflow.db'}"
    assert len(mlflow_runs(mlflow_uri)[1]) == 1
    assert len(list((home / "results" / "evaluate").glob("*/summary.json"))) == 1
    assert not list(empty.iterdir())
