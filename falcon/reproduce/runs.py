"""Run one experiment of the reproduction, or reuse its finished run.

Each experiment is its own MLflow run (``reproduce/<scale>/<name>``) that
holds the command, its output folder as artifacts and its wall time. The
run's key (tag ``falcon.reproduce.key``) is a hash of the experiment's
command at the scale and of the code: the git commit plus the uncommitted
changes (``git diff HEAD`` and the untracked files' names). Started again,
the reproduction reuses an experiment whose key has a FINISHED run and whose
output folder (``<root>/<scale>/<name>-<key>``) still holds its results:
same config and same code, same numbers (every experiment is seeded). With
tracking off, the output folder alone decides.

The command runs in a child process (``python -m ...``), so that a crash in
one experiment is reported and the others still run; its output goes to
``<folder>.log``. Reproductions started together run an experiment once:
the first holds ``<folder>.lock`` (:mod:`falcon.locks`) while it runs it,
the others wait, saying so in one line, and reuse it.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from falcon.locks import lock_beside
from falcon.reproduce.catalog import Experiment

KEY_TAG = "falcon.reproduce.key"


@dataclass
class Outcome:
    """How one experiment went: ``status`` is ran, reused or failed."""

    name: str
    status: str
    output: Path
    run_id: str | None
    wall_s: float
    log: Path
    error: str = ""

    def results(self, exp: Experiment) -> dict | None:
        """The experiment's results JSON, or None when it failed or is missing."""
        path = self.output / exp.result
        if self.status == "failed" or not path.is_file():
            return None
        return json.loads(path.read_text())


def _git(*args: str) -> str:
    try:
        res = subprocess.run(
            ["git", *args],
            capture_output=True,
            text=True,
            timeout=30,
            cwd=Path(__file__).resolve().parents[2],
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return res.stdout if res.returncode == 0 else ""


def code_state() -> dict:
    """The commit and a hash of the uncommitted changes (empty outside a git checkout)."""
    diff = _git("diff", "HEAD") + _git("ls-files", "--others", "--exclude-standard")
    return {
        "commit": _git("rev-parse", "HEAD").strip() or "unknown",
        "changes": hashlib.sha256(diff.encode()).hexdigest()[:16] if diff else "",
    }


def run_key(exp: Experiment, scale: str, argv: list[str], state: dict) -> str:
    """The hash that names one experiment's run at one scale and code state."""
    text = json.dumps({"name": exp.name, "scale": scale, "argv": argv, **state}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _finished_run(tracking: dict, key: str) -> str | None:
    """The id of a FINISHED run with this key in the tracking store, if any."""
    if not tracking.get("enabled", True):
        return None
    from falcon.tracking import resolve_uri
    from falcon.tracking_store import open_client

    client = open_client(resolve_uri(tracking.get("uri")))
    exp = client.get_experiment_by_name(str(tracking.get("experiment") or "falcon"))
    if exp is None:
        return None
    runs = client.search_runs(
        [exp.experiment_id], filter_string=f"tags.`{KEY_TAG}` = '{key}'", max_results=20
    )
    done = [r for r in runs if r.info.status == "FINISHED"]
    return done[0].info.run_id if done else None


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def run_one(
    exp: Experiment,
    scale: str,
    root: Path,
    tracking: dict,
    bank_preset: str,
    state: dict,
    index: str = "",
    rerun: bool = False,
) -> Outcome:
    """Run ``exp`` at ``scale`` into ``root/<scale>/`` (or reuse it unless
    ``rerun``, or unless another process ran it while this one waited);
    never raises for the experiment's own failure: the outcome says ``failed``."""
    key = run_key(exp, scale, exp.command(scale, "OUT", bank_preset), state)
    out = (root / scale / f"{exp.name}-{key}").resolve()
    with lock_beside(
        out, waiting=f"{index} {exp.name}: another process is running it; waiting for it"
    ) as waited:
        return _run_or_reuse(
            exp, scale, key, out, tracking, bank_preset, state, index, rerun and not waited
        )


def _run_or_reuse(
    exp: Experiment,
    scale: str,
    key: str,
    out: Path,
    tracking: dict,
    bank_preset: str,
    state: dict,
    index: str,
    rerun: bool,
) -> Outcome:
    from falcon.tracking import tracked_run

    argv = exp.command(scale, str(out), bank_preset)
    log = out.with_name(out.name + ".log")
    if (out / exp.result).is_file() and not rerun:
        run_id = _finished_run(tracking, key)
        if run_id or not tracking.get("enabled", True):
            _say(
                f"{index} {exp.name}: reused {out}" + (f" (mlflow run {run_id})" if run_id else "")
            )
            return Outcome(exp.name, "reused", out, run_id, 0.0, log)
    if out.exists():
        shutil.rmtree(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    command = " ".join(["python", *argv])
    _say(f"{index} {exp.name}: {exp.what} ... (log: {log})")
    tags = {
        KEY_TAG: key,
        "falcon.reproduce.experiment": exp.name,
        "falcon.reproduce.scale": scale,
        "falcon.command": command,
    }
    t0 = time.perf_counter()
    try:
        with tracked_run(tracking, run_name=f"reproduce/{scale}/{exp.name}", tags=tags) as tracker:
            tracker.log_params(
                {
                    "experiment": exp.name,
                    "scale": scale,
                    "command": command,
                    "commit": state["commit"],
                    "uncommitted_changes": state["changes"] or "none",
                }
            )
            with open(log, "w") as fh:
                rc = subprocess.run(
                    [sys.executable, *argv], stdout=fh, stderr=subprocess.STDOUT
                ).returncode
            wall = time.perf_counter() - t0
            if rc != 0 or not (out / exp.result).is_file():
                raise RuntimeError(f"exit status {rc}" if rc else f"no {exp.result} in the output")
            tracker.log_metrics({"wall_s": wall})
            tracker.log_artifacts(out)
            run_id = tracker.run_id
    except RuntimeError as e:
        wall = time.perf_counter() - t0
        tail = log.read_text().strip().splitlines()[-1:] if log.is_file() else []
        error = f"{e}" + (f": {tail[0]}" if tail else "")
        _say(f"{index} {exp.name}: FAILED after {wall:.0f} s ({error}); see {log}")
        return Outcome(exp.name, "failed", out, None, wall, log, error)
    _say(f"{index} {exp.name}: done in {wall:.0f} s")
    return Outcome(exp.name, "ran", out, run_id, wall, log)


__all__ = ["Outcome", "run_one", "code_state", "run_key", "KEY_TAG"]
