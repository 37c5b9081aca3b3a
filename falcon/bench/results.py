"""The benchmark's results file (``bench.json``): its schema version, an
atomic writer and a checked reader.

Schema (``schema_version`` 1; times in s; null where undefined)::

    {"kind": "falcon.bench.results", "schema_version": 1,
     "benchmark": {"id": str, "definition": {...falcon.bench.definition.definition}},
     "schedulers": [str],                  # the benchmarked ones (agent_list), in order
     "agents": {name: agent config},       # as they ran
     "plugins": {name: provenance},        # schedulers from outside the project (falcon.plugins)
     "splits_run": [str], "runtime": str, "wall_s": float,
     "mlflow": {"run_id", "tracking_uri", "experiment", "experiment_id", "run_url", "artifact_uri"} | null,
     "splits": {<split>: {
         "conditions": {<condition>: {
             "best_rule": {"name", "median_s"},
             "best_known": {"name", "median_s"},     # the lowest median of the rules and references
             "headroom": float | null,               # best rule / best known
             "has_headroom": bool | null,            # best known <= (1 - headroom_margin) x best rule
             "references": {<rule or reference>: ENTRY},   # rules, best_single_path, best_fixed_split,
                                                           # oracle, crossfit_policy (and
                                                           # trace_aware_oracle with oracle.resample)
             "schedulers": {<scheduler>: ENTRY}}},
         "suite": {<scheduler, rule or reference>: {
             "score_best_rule": float | null,        # geometric mean of ratio_best_rule over the conditions
             "score_best_known": float | null,       # geometric mean of ratio_best_known
             "headroom_captured": float | null,      # mean over the conditions with headroom
             "conditions": int}}}}}                  # conditions with a finished run

    ENTRY = {"median_s", "p25_s", "p75_s", "n", "runs": [download time per seed | null],
             "timed_out": int, "ratio_best_rule", "ratio_best_known",
             "headroom_captured": float | null, ("share": best_fixed_split's share),
             ("path": best_single_path's path), ("vs_best_rule": bootstrap interval, schedulers)}

The best known is taken over the rules and references only, never over the
benchmarked schedulers, so that every results file of one benchmark has the
same denominators and a scheduler may score below 1 against it (headroom
captured above 1).
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

from envs.errors import ConfigError

KIND = "falcon.bench.results"
SCHEMA_VERSION = 1
FILE = "bench.json"
TOP_KEYS = ("kind", "schema_version", "benchmark", "schedulers", "splits")


def _plain(v):
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if hasattr(v, "item"):  # NumPy scalars
        return _plain(v.item())
    if isinstance(v, Mapping):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_plain(x) for x in v]
    return v


def write_text_atomic(path: str | Path, text: str) -> Path:
    """Write ``text`` to ``path`` through a temporary file in the same folder renamed
    onto it: a reader sees the old file or the whole new one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes it private
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write(path: str | Path, results: Mapping) -> Path:
    """``results`` as JSON (non-finite numbers as null), written atomically."""
    return write_text_atomic(path, json.dumps(_plain(results), indent=1, allow_nan=False) + "\n")


def load(path: str | Path) -> dict:
    """A results file, checked: one line naming the file and the problem otherwise."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: no such results file")
    try:
        data = json.loads(path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ConfigError(f"{path}: not a JSON file ({e})") from None
    if not isinstance(data, dict) or data.get("kind") != KIND:
        raise ConfigError(f"{path}: not a falcon.bench results file (kind != {KIND!r})")
    if data.get("schema_version") != SCHEMA_VERSION:
        raise ConfigError(
            f"{path}: schema_version {data.get('schema_version')!r}; this version reads "
            f"{SCHEMA_VERSION} (rerun the benchmark with this version)"
        )
    missing = [k for k in TOP_KEYS if k not in data]
    bench = data.get("benchmark")
    if not missing and not (isinstance(bench, dict) and isinstance(bench.get("id"), str)):
        missing = ["benchmark.id"]
    if not missing and not isinstance(data["splits"], dict):
        missing = ["splits"]
    if missing:
        raise ConfigError(f"{path}: missing or malformed key(s) {missing}")
    return data


__all__ = ["KIND", "SCHEMA_VERSION", "FILE", "write", "write_text_atomic", "load"]
