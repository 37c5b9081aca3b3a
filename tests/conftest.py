"""Fixtures shared by the entry-point, tracking and runtime tests."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
TESTS = Path(__file__).resolve().parent


@pytest.fixture(scope="session", autouse=True)
def _private_falcon_folders(tmp_path_factory):
    """The suite's banks go to a temporary cache, never the user's (``FALCON_CACHE_DIR``),
    and results to each job's working folder whatever ``FALCON_HOME`` says (falcon.paths)."""
    mp = pytest.MonkeyPatch()
    mp.setenv("FALCON_CACHE_DIR", str(tmp_path_factory.mktemp("falcon-cache")))
    mp.delenv("FALCON_HOME", raising=False)
    yield
    mp.undo()


@pytest.fixture(scope="session")
def _mlflow_template(tmp_path_factory) -> Path:
    """An initialised, empty MLflow SQLite store (creating the tables takes seconds: do it once)."""
    from mlflow.tracking import MlflowClient

    db = tmp_path_factory.mktemp("mlflow-template") / "mlflow.db"
    MlflowClient(tracking_uri=f"sqlite:///{db}").search_experiments()
    return db


@pytest.fixture
def mlflow_uri(tmp_path, _mlflow_template) -> str:
    """A private SQLite tracking URI for one test (a copy of the template store)."""
    db = tmp_path / "mlflow.db"
    shutil.copy(_mlflow_template, db)
    return f"sqlite:///{db}"


def mlflow_runs(uri: str, experiment: str = "falcon"):
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        return client, []
    return client, client.search_runs([exp.experiment_id], order_by=["attributes.start_time ASC"])


@pytest.fixture
def run_cli(tmp_path):
    """Run ``python -m falcon.<entry> ARGS`` in a subprocess (cwd: a temp dir)."""

    def run(entry: str, *args: str, cwd: Path | None = None, timeout: float = 240):
        env = {
            k: v for k, v in os.environ.items() if k not in ("FALCON_DEBUG", "MLFLOW_TRACKING_URI")
        }
        env["PYTHONPATH"] = os.pathsep.join([str(TESTS), str(REPO), env.get("PYTHONPATH", "")])
        return subprocess.run(
            [sys.executable, "-m", f"falcon.{entry}", *args],
            cwd=cwd or tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    return run


@pytest.fixture
def compose():
    """Compose a primary config of configs/ (no Hydra job running)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    from falcon.config import CONFIG_DIR

    def make(config_name: str = "evaluate", overrides: list[str] | None = None):
        with initialize_config_dir(str(CONFIG_DIR), version_base="1.3"):
            return hydra_compose(config_name=config_name, overrides=list(overrides or []))

    return make


#: why the relay's tests skip where loopback has no aliases
LOOPBACK_REASON = "the relay's clients need 127.0.0.2 and 127.0.0.3 on loopback"


def loopback_aliases() -> bool:
    """Whether 127.0.0.3 can be bound: Linux routes all of 127.0.0.0/8 to loopback; other systems may not."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.bind(("127.0.0.3", 0))
        return True
    except OSError:
        return False


def skip_unless_transport() -> None:
    """Skip the calling test module unless the transport is built and the relay can run."""
    from falcon.deploy.transport import BUILD_HINT, built

    if not built():
        pytest.skip(BUILD_HINT, allow_module_level=True)
    if not loopback_aliases():
        pytest.skip(LOOPBACK_REASON, allow_module_level=True)
