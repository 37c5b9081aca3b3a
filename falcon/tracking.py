"""MLflow tracking of the entry points' runs.

The store is, in order: ``tracking.uri``, ``$MLFLOW_TRACKING_URI``, or the
SQLite file ``mlflow.db`` in ``$FALCON_HOME`` if set, else in the directory the
command was started from (:func:`falcon.paths.output_root`), with artifacts in
``mlartifacts/`` next to it, so that

    mlflow ui --backend-store-uri sqlite:///mlflow.db

shows every run with nothing else to set up. :func:`tracked_run` marks a run
FINISHED when its block completes, FAILED when it raises (KILLED on Ctrl-C),
so no run is left RUNNING. MLflow is imported only when a run starts. A new
store is made once however many jobs start together, and every failure of
the store is a one-line :class:`falcon.tracking_store.TrackingError`
(:mod:`falcon.tracking_store`).
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from falcon import tracking_worker
from falcon.paths import output_root
from falcon.tracking_store import TrackingError, open_client, reported, sqlite_file

DB_NAME = "mlflow.db"
ARTIFACT_DIR = "mlartifacts"
MAX_PARAMS_PER_BATCH = 100
MAX_METRICS_PER_BATCH = 1000
MAX_PARAM_LEN = 6000


def resolve_uri(uri: str | None, base_dir: str | Path | None = None) -> str:
    """The tracking URI to use (see the module docstring)."""
    if uri:
        return str(uri)
    env = os.environ.get("MLFLOW_TRACKING_URI")
    if env:
        return env
    base = Path(base_dir or output_root()).resolve()
    return f"sqlite:///{base / DB_NAME}"


def default_artifact_location(uri: str) -> str | None:
    """``mlartifacts/`` next to a SQLite store; the server's choice otherwise."""
    db = sqlite_file(uri)
    return None if db is None else (db.parent / ARTIFACT_DIR).resolve().as_uri()


def flatten(cfg: Mapping, prefix: str = "") -> dict[str, str]:
    """Dotted-key params of a nested config (lists of scalars as JSON, lists of mappings by index)."""
    out: dict[str, str] = {}
    for k, v in cfg.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping):
            if v:
                out.update(flatten(v, key + "."))
            else:
                out[key] = "{}"
        elif isinstance(v, list | tuple) and any(isinstance(x, Mapping) for x in v):
            for i, x in enumerate(v):
                if isinstance(x, Mapping):
                    out.update(flatten(x, f"{key}.{i}."))
                else:
                    out[f"{key}.{i}"] = str(x)
        elif isinstance(v, list | tuple):
            out[key] = json.dumps(list(v))
        else:
            out[key] = "null" if v is None else str(v)
    return {k: v[:MAX_PARAM_LEN] for k, v in out.items()}


def git_commit(cwd: str | Path | None = None) -> str | None:
    try:
        res = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=cwd or Path(__file__).parent,
            capture_output=True,
            text=True,
            timeout=5,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return res.stdout.strip() if res.returncode == 0 and res.stdout.strip() else None


class NullTracker:
    """Tracking switched off: every call does nothing."""

    run_id: str | None = None
    uri: str | None = None
    enabled = False

    def log_params(self, params: Mapping[str, Any]) -> None:
        pass

    def log_metrics(self, metrics: Mapping[str, float], step: int | None = None) -> None:
        pass

    def log_artifacts(self, local_dir: str | Path, artifact_path: str | None = None) -> None:
        pass

    def set_tags(self, tags: Mapping[str, Any]) -> None:
        pass


class RecordingTracker(NullTracker):
    """A tracker that keeps what it is given (``calls``: ``(metrics, step)``
    in order) instead of sending it anywhere: a training step run in a worker
    or a helper hands its metrics back to the caller this way."""

    def __init__(self) -> None:
        self.calls: list[tuple[dict, int | None]] = []

    def log_metrics(self, metrics: Mapping[str, float], step: int | None = None) -> None:
        self.calls.append(({k: float(v) for k, v in metrics.items()}, step))

    def final(self, prefix: str) -> dict[str, float]:
        """The metrics under ``prefix`` of the last call without a step (a
        training step's final metrics), the prefix removed."""
        out: dict[str, float] = {}
        for metrics, step in self.calls:
            if step is None:
                out = {k[len(prefix) :]: v for k, v in metrics.items() if k.startswith(prefix)}
        return out


class Tracker(NullTracker):
    """One MLflow run, driven through ``MlflowClient`` (no global active run);
    a failure of the store raises :class:`TrackingError`."""

    enabled = True

    def __init__(self, client, run_id: str, uri: str):
        self.client = client
        self.run_id = run_id
        self.uri = uri

    def log_params(self, params: Mapping[str, Any]) -> None:
        from mlflow.entities import Param

        items = [Param(str(k)[:250], str(v)[:MAX_PARAM_LEN]) for k, v in params.items()]
        with reported(self.uri):
            for i in range(0, len(items), MAX_PARAMS_PER_BATCH):
                self.client.log_batch(self.run_id, params=items[i : i + MAX_PARAMS_PER_BATCH])

    def log_metrics(self, metrics: Mapping[str, float], step: int | None = None) -> None:
        import time

        from mlflow.entities import Metric

        ts = int(time.time() * 1000)
        items = [Metric(k, float(v), ts, int(step or 0)) for k, v in metrics.items()]
        with reported(self.uri):
            for i in range(0, len(items), MAX_METRICS_PER_BATCH):
                self.client.log_batch(self.run_id, metrics=items[i : i + MAX_METRICS_PER_BATCH])

    def log_artifacts(self, local_dir: str | Path, artifact_path: str | None = None) -> None:
        with reported(self.uri):
            self.client.log_artifacts(self.run_id, str(local_dir), artifact_path)

    def set_tags(self, tags: Mapping[str, Any]) -> None:
        with reported(self.uri):
            for k, v in tags.items():
                self.client.set_tag(self.run_id, str(k), str(v))

    def end(self, status: str) -> None:
        """End the run (FINISHED, FAILED, KILLED)."""
        with reported(self.uri):
            self.client.set_terminated(self.run_id, status)


def quiet_mlflow() -> None:
    for name in ("mlflow", "alembic", "sqlalchemy", "urllib3"):
        logging.getLogger(name).setLevel(logging.WARNING)
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")


@contextmanager
def tracked_run(
    tracking: Mapping | None,
    *,
    run_name: str,
    tags: Mapping[str, Any] | None = None,
    base_dir: str | Path | None = None,
) -> Iterator[NullTracker]:
    """A tracked MLflow run around a block (a :class:`NullTracker` when disabled).

    The run ends FINISHED if the block completes, KILLED on KeyboardInterrupt,
    FAILED on any other exception (which is re-raised). A failure of the
    store raises :class:`TrackingError`.
    """
    tracking = dict(tracking or {})
    if not tracking.get("enabled", True):
        yield NullTracker()
        return
    uri = resolve_uri(tracking.get("uri"), base_dir)
    exp_name = str(tracking.get("experiment") or "falcon")
    location = tracking.get("artifact_location") or default_artifact_location(uri)
    all_tags = {"falcon.commit": git_commit()} | dict(tracking.get("tags") or {}) | dict(tags or {})
    all_tags = {k: str(v) for k, v in all_tags.items() if v is not None}
    proc = (
        tracking_worker.take()
    )  # the command line's tracking process (falcon.tracking_worker), if any
    if proc is not None:
        tracker = tracking_worker.BackgroundTracker(
            proc,
            uri,
            {
                "uri": uri,
                "experiment": exp_name,
                "artifact_location": location,
                "run_name": run_name,
                "tags": all_tags,
            },
        )
    else:
        import mlflow.tracking  # noqa: F401

        quiet_mlflow()  # after the import: importing mlflow configures its loggers
        tracker = start_run(open_client(uri), uri, exp_name, location, run_name, all_tags)
    try:
        yield tracker
    except KeyboardInterrupt:
        _end_quietly(tracker.end, "KILLED")
        raise
    except TrackingError:
        # the store failed: ending the run would fail the same way, and the error says so once
        _end_quietly(tracker.end, "FAILED", warn=False)
        raise
    except BaseException:
        _end_quietly(tracker.end, "FAILED")
        raise
    tracker.end("FINISHED")


def start_run(
    client,
    uri: str,
    experiment: str,
    artifact_location: str | None,
    run_name: str,
    tags: Mapping[str, str],
) -> Tracker:
    """A new run of ``experiment`` (created, with ``artifact_location``, if missing) in
    ``client``'s store; a failure of the store raises :class:`TrackingError`."""
    with reported(uri):
        exp_id = _experiment_id(client, experiment, artifact_location)
        run = client.create_run(exp_id, run_name=run_name, tags=dict(tags))
    return Tracker(client, run.info.run_id, uri)


def _experiment_id(client, experiment: str, artifact_location: str | None) -> str:
    exp = client.get_experiment_by_name(experiment)
    if exp is not None:
        return exp.experiment_id
    try:
        return client.create_experiment(experiment, artifact_location=artifact_location)
    except Exception:
        # jobs started together: another one may have created it since we looked
        exp = client.get_experiment_by_name(experiment)
        if exp is None:
            raise
        return exp.experiment_id


def _end_quietly(end: Callable[[str], None], status: str, warn: bool = True) -> None:
    """End a run whose block raised; a tracking failure then must not hide the block's error."""
    try:
        end(status)
    except Exception as e:  # noqa: BLE001
        if warn:
            logging.getLogger(__name__).warning("could not mark the MLflow run %s: %s", status, e)


__all__ = [
    "tracked_run",
    "start_run",
    "Tracker",
    "NullTracker",
    "RecordingTracker",
    "TrackingError",
    "resolve_uri",
    "flatten",
    "default_artifact_location",
]
