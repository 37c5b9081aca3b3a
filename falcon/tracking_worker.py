"""MLflow tracking in a second process, overlapping the job.

Importing MLflow and opening its SQLite store take about 2.5-3 s of CPU
time (``mlflow`` itself with its GenAI, data and artifact modules, then
SQLAlchemy's mappers), longer than a short job. A job's command line
(:func:`falcon.cli.main`) therefore starts this module as a child process
first (:func:`prewarm`), which imports MLflow on the other core while the
parent composes its config and runs; :func:`falcon.tracking.tracked_run`
then drives the run through it (:class:`BackgroundTracker`).

Protocol: one JSON object per line on the child's stdin; the child answers
``start`` (``{"run_id": ...}``), ``sync`` and ``end`` with one JSON line on
its stdout, ``{"error": "..."}`` (the cause, one line) if that or an earlier
request failed; the parent raises it as a
:class:`falcon.tracking_store.TrackingError` of the run's store. The
parent waits only where it must: for the run id, for artifacts (their files
must still exist when the child copies them) and at the end of the run. The
child exits when its stdin closes (the parent ended, or died).
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from falcon.tracking_store import TrackingError, cause_of

#: set to 0 to keep tracking in the job's own process
PREWARM_ENV = "FALCON_TRACKING_PROCESS"
_prewarmed: list[subprocess.Popen] = []


def tracking_disabled_in(argv: list[str]) -> bool:
    """The command line turns tracking off (``tracking=none``, ``tracking.enabled=false``)."""
    return any(
        a.replace(" ", "").lower()
        in ("tracking=none", "tracking.enabled=false", "tracking.enabled=0")
        for a in argv
    )


def prewarm(argv: list[str] | None = None) -> None:
    """Start the tracking process now, unless the command line turns tracking
    off or ``FALCON_TRACKING_PROCESS=0``; :func:`take` hands it to the run."""
    argv = sys.argv[1:] if argv is None else argv
    if os.environ.get(PREWARM_ENV, "1") == "0" or tracking_disabled_in(argv) or _prewarmed:
        return
    proc = subprocess.Popen(
        [sys.executable, "-m", "falcon.tracking_worker"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        bufsize=1,
    )
    _prewarmed.append(proc)
    atexit.register(_discard, proc)


def take() -> subprocess.Popen | None:
    """The prewarmed tracking process, if one is running (once)."""
    while _prewarmed:
        proc = _prewarmed.pop()
        if proc.poll() is None:
            return proc
    return None


def _discard(proc: subprocess.Popen) -> None:
    """At exit: close an unused (or finished) child's stdin so it exits; kill it if it does not."""
    if proc.poll() is not None:
        return
    try:
        proc.stdin.close()
        proc.wait(timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        proc.kill()


class BackgroundTracker:
    """One MLflow run driven through the tracking process (module docstring);
    the interface of :class:`falcon.tracking.Tracker`."""

    enabled = True

    def __init__(self, proc: subprocess.Popen, uri: str, start: Mapping[str, Any]):
        self._proc = proc
        self.uri = uri
        self._run_id: str | None = None
        self._start_error: TrackingError | None = None
        self._send({"op": "start", **start})

    @property
    def run_id(self) -> str:
        """The run's id (waits for the process to create the run; raises if it could not)."""
        if self._start_error is not None:
            raise self._start_error
        if self._run_id is None:
            try:
                self._run_id = self._reply()["run_id"]
            except TrackingError as e:
                self._start_error = e
                raise
        return self._run_id

    def log_params(self, params: Mapping[str, Any]) -> None:
        self._send({"op": "params", "params": {str(k): str(v) for k, v in params.items()}})

    def log_metrics(self, metrics: Mapping[str, float], step: int | None = None) -> None:
        self._send(
            {
                "op": "metrics",
                "metrics": {str(k): float(v) for k, v in metrics.items()},
                "step": step,
            }
        )

    def log_artifacts(self, local_dir: str | Path, artifact_path: str | None = None) -> None:
        self._send(
            {"op": "artifacts", "dir": str(Path(local_dir).absolute()), "path": artifact_path}
        )
        self.sync()

    def set_tags(self, tags: Mapping[str, Any]) -> None:
        self._send({"op": "tags", "tags": {str(k): str(v) for k, v in tags.items()}})

    def sync(self) -> None:
        """Wait until every request so far is done; raise the first error."""
        _ = self.run_id
        self._send({"op": "sync"})
        self._reply()

    def end(self, status: str) -> None:
        """End the run (FINISHED, FAILED, KILLED) and let the process exit."""
        try:
            _ = self.run_id
            self._send({"op": "end", "status": status})
            self._reply()
        finally:
            _discard(self._proc)

    def _send(self, msg: dict) -> None:
        try:
            self._proc.stdin.write(json.dumps(msg) + "\n")
            self._proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise TrackingError(
                self.uri, "the MLflow tracking process ended unexpectedly"
            ) from None

    def _reply(self) -> dict:
        line = self._proc.stdout.readline()
        if not line:
            raise TrackingError(self.uri, "the MLflow tracking process ended unexpectedly")
        out = json.loads(line)
        if "error" in out:
            raise TrackingError(self.uri, out["error"])
        return out


# ---------------------------------------------------------------- the child
def _default_store_client():
    """``(uri, client)`` of the default store (``falcon.tracking.resolve_uri``) opened
    ahead of the job when it is an existing SQLite file (opening one costs about 1 s:
    SQLAlchemy's engine and mappers); ``(None, None)`` otherwise, so nothing is created
    (a file there is complete: :mod:`falcon.tracking_store` makes a store beside it)."""
    from falcon.tracking import resolve_uri
    from falcon.tracking_store import open_client, sqlite_file, store_made

    uri = resolve_uri(None)
    db = sqlite_file(uri)
    if db is None or not store_made(db):
        return None, None
    return uri, open_client(uri)


def _start(msg: dict, opened: dict):
    from falcon.tracking import start_run
    from falcon.tracking_store import open_client

    client = opened.get(msg["uri"]) or open_client(msg["uri"])
    return start_run(
        client,
        msg["uri"],
        msg["experiment"],
        msg["artifact_location"],
        msg["run_name"],
        msg["tags"],
    )


def serve(lines, write, opened: dict | None = None) -> None:
    """Answer the requests of ``lines`` (module docstring); ``write(dict)`` replies;
    ``opened``: ``{uri: MlflowClient}`` of stores already open."""
    tracker, error, opened = None, None, opened or {}
    for line in lines:
        msg = json.loads(line)
        op = msg["op"]
        try:
            if op == "start":
                tracker = _start(msg, opened)
                write({"run_id": tracker.run_id})
                continue
            if error is None and tracker is not None:
                if op == "params":
                    tracker.log_params(msg["params"])
                elif op == "metrics":
                    tracker.log_metrics(msg["metrics"], msg["step"])
                elif op == "artifacts":
                    tracker.log_artifacts(msg["dir"], msg["path"])
                elif op == "tags":
                    tracker.set_tags(msg["tags"])
                elif op == "end":
                    tracker.end(msg["status"])
        except Exception as e:  # reported to the parent at its next wait
            error = error or cause_of(e)
            if op == "start":
                write({"error": error})
                continue
        if op in ("sync", "end"):
            write({"error": error} if error else {"ok": True})
            if op == "end":
                return


def main() -> None:
    # Ctrl-C reaches the whole process group: the parent ends the run (KILLED) through us
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # replies keep the stdout pipe to themselves; whatever MLflow prints goes to stderr
    replies = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    # the point of this process: MLflow's import and the default store, ahead of the job
    import mlflow.store.tracking.sqlalchemy_store  # noqa: F401
    import mlflow.tracking  # noqa: F401

    from falcon.tracking import quiet_mlflow

    quiet_mlflow()
    opened = {}
    try:
        uri, client = _default_store_client()
        if client is not None:
            opened[uri] = client
    except Exception:  # noqa: BLE001  (a guess only: the run's own store is opened on "start")
        pass

    def write(obj: dict) -> None:
        replies.write(json.dumps(obj) + "\n")
        replies.flush()

    serve(sys.stdin, write, opened)


if __name__ == "__main__":
    main()
