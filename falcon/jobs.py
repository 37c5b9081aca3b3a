"""One episode as a self-contained job, and the worker that runs it.

A :class:`Job` holds plain data only (dicts, a seed, or a picklable prepared
scheduler), so it runs the same in this process, in a local process pool and
on a Ray worker. :func:`run_episode_job` builds a fresh scheduler per episode and
seeds every global RNG from the job's seed, so a job's metrics do not depend
on where or after which other job it ran.
"""

from __future__ import annotations

import copy
import random
import sys
from dataclasses import dataclass
from typing import Any

from envs.errors import ConfigError
from falcon.config import AGENT_META_KEYS


@dataclass(frozen=True)
class Job:
    index: int
    scenario_name: str
    app_name: str
    agent_name: str
    seed: int
    scenario: dict
    app: dict
    agent: Any  # an agent config dict (with _target_) or a prepared (e.g. trained) scheduler


def instantiate_agent(name: str, agent_cfg: dict, **objects):
    """A new scheduler from an agent config (``_target_`` + constructor
    arguments; the ``train:`` section is not one); ``objects``: constructor
    arguments that are objects, not config (e.g. a loaded bank)."""
    from hydra.errors import InstantiationException
    from hydra.utils import instantiate

    kwargs = {k: v for k, v in agent_cfg.items() if k not in AGENT_META_KEYS}
    try:
        return instantiate(kwargs, _convert_="all", **objects)
    except InstantiationException as e:
        cause = e.__cause__ or e
        msg = " ".join(str(cause).split()) or type(cause).__name__
        raise ConfigError(f"agent {name!r} ({agent_cfg.get('_target_')}): {msg}") from None


def job_scheduler(job: Job):
    if isinstance(job.agent, dict):
        return instantiate_agent(job.agent_name, job.agent)
    return copy.deepcopy(job.agent)


def seed_globals(seed: int) -> None:
    """Seed Python's, NumPy's and (if loaded) torch's global RNGs."""
    import numpy as np

    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.manual_seed(seed)


def run_episode_job(job: Job) -> dict:
    """Run one episode; returns ``{"metrics": flat dict of floats}`` plus, for
    apps of several objects (web pages, stream traces), ``"objects":
    {"release": [...], "completion": [...]}`` (per object [s])."""
    import envs

    seed_globals(job.seed)
    scheduler = job_scheduler(job)
    result = envs.run_episode(job.scenario, job.app, scheduler, job.seed)
    out = {"metrics": {k: float(v) for k, v in result.metrics.items()}}
    if len(result.object_times) > 1:
        out["objects"] = {
            "release": [float(x) for x in result.object_release_times],
            "completion": [float(x) for x in result.object_times],
        }
    return out


__all__ = ["Job", "run_episode_job", "instantiate_agent", "job_scheduler", "seed_globals"]
