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
test list (its files are for reporting only). The convergence and stress
experiments train theirs the same way (their conditions are no list: only
the test list is refused there).
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

from envs.errors import ConfigError
from falcon.experiment import info

JOB = "learnability"


def listed_conditions(cfg: Mapping) -> str | None:
    """The condition list an agent config trains on (``train.conditions``), or None."""
    train = cfg.get("train") if isinstance(cfg, Mapping) else None
    return train.get("conditions") if isinstance(train, Mapping) else None


def train_generalists(
    agents: dict[str, dict], sec: Mapping, folder: Path, progress: bool = True, job: str = JOB
) -> tuple[dict[str, dict], dict[str, dict]]:
    """``(agents, records)``: every deployed agent that names a condition list
    trained on it through falcon.train's training step
    (:func:`falcon.train.train_agents`, seed ``sec["train_seed"]``; it reads
    the list and keeps test files out), saved under
    ``folder/<name>/`` and replaced by its config with ``model`` set to
    that file and no ``train`` section; ``records[name]``: the list, its
    number of conditions, the fit metrics, the wall time [s]. ``sec``:
    ``deployed`` (the names), ``split`` (the list the run scores, or None)
    and ``train_seed``; ``job`` names the experiment in messages."""
    from falcon.config import Plan
    from falcon.tracking import RecordingTracker
    from falcon.train import train_agents

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
        rec = RecordingTracker()
        plan = Plan([(listed, None)], [(listed, None)], [(name, agents[name])], [])
        with tempfile.TemporaryDirectory(prefix="generalist-") as staging:
            train_agents(plan, Path(staging), rec, sec["train_seed"], progress=progress)
            folder.mkdir(parents=True, exist_ok=True)
            shutil.move(Path(staging) / "models" / name, folder / name)
        metrics = rec.final(f"train/{name}/")
        out[name] = {
            **{k: v for k, v in agents[name].items() if k != "train"},
            "model": str(
                folder / name
            ),  # its folder: the model file is the scheduler's own (model.h5, bank.h5)
        }
        records[name] = {
            "conditions": listed,
            "tasks": int(metrics.get("tasks", 0)),
            "metrics": metrics,
            "wall_s": time.perf_counter() - t0,
        }
        if progress:
            info(f"{job}: {name} trained in {records[name]['wall_s']:.0f} s")
    return out, records


__all__ = ["listed_conditions", "train_generalists"]
