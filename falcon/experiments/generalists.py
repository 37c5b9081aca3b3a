"""Deployed schedulers trained once on a whole condition list (generalists).

A deployed scheduler of the learnability suite is never trained on the
condition it is scored on. A *generalist* is one whose agent config names a
condition list to train on (``train: {conditions: train}``, e.g.
``configs/agent/dqn_modes_general.yaml``): it is trained once, on every
condition of that list (:func:`falcon.experiments.condition_lists.training_tasks`),
before the suite's jobs, then deployed on every condition of the suite from
its saved model, exactly as a scheduler given ``model=PATH`` (one given
``model`` is deployed as is, not retrained). Training on the
list the suite scores is refused (that would be in-sample), and so is the
test list (its files are for reporting only). The one exception is asked
for by name: ``train.in_sample: dev`` adds the development conditions (train
files only) to its tasks, so that on the dev list it is scored in sample,
as DQN-Off trained per condition is; the run's record says so. The convergence and stress
experiments train theirs the same way (their conditions are no list: only
the test list is refused there). A trained generalist is kept in the user
cache under a fingerprint of what it depends on (:func:`fingerprint`), so
the next run with the same config, tasks, seed and code deploys it without
training it again.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

from envs.errors import ConfigError
from falcon.experiment import info

JOB = "learnability"
#: a trained generalist's fit metrics, beside its model in the cache
TRAIN_RECORD = "train.json"


def listed_conditions(cfg: Mapping) -> str | None:
    """The condition list an agent config trains on (``train.conditions``), or None."""
    train = cfg.get("train") if isinstance(cfg, Mapping) else None
    return train.get("conditions") if isinstance(train, Mapping) else None


def fingerprint(name: str, cfg: Mapping, train_seed: int) -> str:
    """What a generalist's model depends on, hashed (16 hex digits): its agent
    config (without ``model``), the training seed, the tasks of its list as the
    list resolves them (file names, windows, RTTs; the files' bytes are the split
    file's SHA-256, checked when read) and the sources of the four packages, so
    that any change of code, config or data trains it again."""
    from envs.traces.split import sha256_file, split_file
    from falcon.experiments.condition_lists import generalist_tasks
    from falcon.plugins import source_digest

    blob = json.dumps(
        {
            "name": name,
            "agent": {k: v for k, v in cfg.items() if k != "model"},
            "train_seed": int(train_seed),
            "tasks": generalist_tasks(cfg["train"], train_seed, f"agent {name!r}: train")[0],
            "split": sha256_file(split_file()) if split_file().is_file() else None,
            "code": [source_digest(m)[0] for m in ("envs", "baselines", "metalearning", "falcon")],
        },
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def cache_path(name: str, key: str) -> Path:
    """``<cache_dir>/generalists/<name>-<fingerprint>/`` (:func:`falcon.paths.cache_dir`)."""
    from falcon.paths import cache_dir

    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name) or "agent"
    return cache_dir() / "generalists" / f"{safe}-{key}"


def _train_into(target: Path, name: str, cfg: Mapping, listed: str, seed: int, progress: bool):
    """Train ``name`` through falcon.train's training step into ``target`` (a new
    folder, made whole by one rename) with its fit metrics in ``train.json``."""
    from falcon.config import Plan
    from falcon.tracking import RecordingTracker
    from falcon.train import train_agents

    rec = RecordingTracker()
    plan = Plan([(listed, None)], [(listed, None)], [(name, cfg)], [])
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{target.name}.tmp-", dir=target.parent) as staging:
        train_agents(plan, Path(staging), rec, seed, progress=progress)
        model = Path(staging) / "models" / name
        (model / TRAIN_RECORD).write_text(json.dumps(rec.final(f"train/{name}/")) + "\n")
        os.replace(model, target)


def _in_sample(train: Mapping, split: str | None) -> bool:
    """Whether a generalist with this ``train`` section is scored in sample on
    the list ``split`` (it names that list in ``train.in_sample``)."""
    own = train.get("in_sample")
    return own is not None and own == split


def train_generalists(
    agents: dict[str, dict],
    sec: Mapping,
    folder: Path | None = None,
    progress: bool = True,
    job: str = JOB,
) -> tuple[dict[str, dict], dict[str, dict]]:
    """``(agents, records)``: every deployed agent that names a condition list
    trained on it through falcon.train's training step
    (:func:`falcon.train.train_agents`, seed ``sec["train_seed"]``; it reads
    the list and keeps test files out), or taken from the user cache where the
    same config, tasks, seed and code trained it before (:func:`fingerprint`;
    one process trains, another waits for it), copied to ``folder/<name>/``
    when a folder is given (the run's own record), and replaced by its config
    with ``model`` set to that copy, else to the cache folder, and no
    ``train`` section; ``records[name]``: the list, its number of conditions,
    the fit metrics, the cache folder, whether it was reused, the wall time
    [s]. ``sec``: ``deployed`` (the names), ``split`` (the list the run
    scores, or None) and ``train_seed``; ``job`` names the experiment in messages."""
    from falcon.locks import lock_beside

    out, records = dict(agents), {}
    for name in sec["deployed"]:
        listed = listed_conditions(agents[name])
        if listed is None or agents[name].get("model"):  # a given model is deployed as is
            continue
        if listed == sec.get("split"):
            raise ConfigError(
                f"{job}.deployed: {name} trains on the {listed} list, which this run scores: "
                "a deployed scheduler never sees the conditions it is scored on"
            )
        t0 = time.perf_counter()
        target = cache_path(name, fingerprint(name, agents[name], sec["train_seed"]))
        with lock_beside(target, waiting=f"{job}: another process is training {name}; waiting"):
            reused = (target / TRAIN_RECORD).is_file()
            if not reused:
                _train_into(target, name, agents[name], listed, sec["train_seed"], progress)
        deployed = target
        if folder is not None:
            folder.mkdir(parents=True, exist_ok=True)
            deployed = Path(shutil.copytree(target, folder / name))
        metrics = json.loads((target / TRAIN_RECORD).read_text())
        out[name] = {
            **{k: v for k, v in agents[name].items() if k != "train"},
            "model": str(deployed),  # the folder: its file is the scheduler's own
        }
        records[name] = {
            "conditions": listed,
            "in_sample": _in_sample(agents[name]["train"], sec.get("split")),
            "tasks": int(metrics.get("tasks", 0)),
            "metrics": metrics,
            "cache": str(target),
            "reused": reused,
            "wall_s": time.perf_counter() - t0,
        }
        if progress:
            how = (
                f"reused from {target}" if reused else f"trained in {records[name]['wall_s']:.0f} s"
            )
            info(f"{job}: {name} {how}")
    return out, records


__all__ = ["listed_conditions", "train_generalists", "fingerprint", "cache_path"]
