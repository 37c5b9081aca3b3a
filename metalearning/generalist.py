"""A generalist start for the meta-models: one DQN-Off over tasks of the whole grid.

Reptile from random weights gives every cell a network that has seen a few
hundred of its own decisions: measured on the learnability suite, FALCON
deployed from the quick bank built that way (completion MDP, 4
meta-iterations per cell) scores 1.88, far behind every rule. A single
network trained as DQN-Off is trained, but on tasks drawn from *every* cell
of the grid, already schedules well almost everywhere: the same suite,
zero-shot, scores 1.13 (7 of 15 conditions within 5 % of the best rule;
96 tasks, 12 000 steps, about a minute on one core). So the bank can start
every cell from it and let Reptile specialise (``generalist:`` in
``configs/bank/*.yaml``; null keeps the paper's random start).

:func:`train_generalist`: ``tasks`` scenarios, each from a uniformly drawn
cell (:meth:`ConditionGrid.sample_task`), are downloaded once by the rules
DQN-Off logs (minRTT, RR, BLEST, ECF and each single path in turn, every
decision random with probability ``behaviour_epsilon``); ``models`` networks
train ``gradient_steps`` DQN steps on the log side by side with the bank's
DQN hyperparameters, ``checkpoints`` snapshots each; :meth:`DQNOff.select
<baselines.dqn.dqn_off.DQNOff.select>` (successive halving) on
``validation_episodes`` downloads of ``validation_tasks`` further tasks
chooses one. Every draw comes from the
build seed, so the start is a function of the bank settings.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass

import numpy as np

from baselines.dqn.learner import DQNConfig
from baselines.dqn.network import QNetSpec
from envs.errors import ConfigError
from envs.mdp import COMPLETION_UNIT, reward_of_inputs
from metalearning.checks import numbers_in, positive_ints


@dataclass(frozen=True)
class GeneralistConfig:
    """Settings of the generalist start (module docstring); keys of ``generalist:``."""

    tasks: int = 96  # logged task downloads (one per task)
    gradient_steps: int = 12000  # DQN steps per network
    models: int = 8  # networks trained side by side
    checkpoints: int = 6  # snapshots per network (candidates: models x checkpoints)
    validation_tasks: int = 40  # further tasks the candidates are validated on
    validation_episodes: int = 200  # validation downloads in all (successive halving)
    behaviour_epsilon: float = 0.3  # random decisions of the logging rules
    task_max_duration_s: float = 60.0  # cap of one task's emulated time [s]

    def __post_init__(self):
        positive_ints(
            self,
            "generalist",
            "tasks",
            "gradient_steps",
            "models",
            "checkpoints",
            "validation_tasks",
            "validation_episodes",
        )
        numbers_in(
            self,
            "generalist",
            ("behaviour_epsilon", 0.0, 1.0, False),
            ("task_max_duration_s", 0.0, math.inf, True),
        )

    @classmethod
    def from_mapping(cls, cfg: Mapping | None) -> GeneralistConfig | None:
        if cfg is None:
            return None
        if not isinstance(cfg, Mapping):
            raise ConfigError(
                f"bank.generalist: expected a mapping of settings or null, got {cfg!r}"
            )
        try:
            return cls(**dict(cfg))
        except TypeError as e:
            raise ConfigError(f"bank.generalist: {e}") from None

    def to_dict(self) -> dict:
        return asdict(self)


def train_generalist(
    grid,
    spec: QNetSpec,
    dqn: DQNConfig,
    cfg: GeneralistConfig,
    seed: int,
    task_base: Mapping,
    task_size_bytes: int,
    progress: bool = True,
    reward_unit: str = COMPLETION_UNIT,
) -> tuple[np.ndarray, dict]:
    """The generalist's flat parameters ``[P]`` (the layout of a bank row) and a record
    (``reward_unit``: of the completion reward, :data:`envs.mdp.COMPLETION_UNITS`)."""
    from baselines.dqn.dqn_off import DQNOff
    from baselines.dqn.experience import concatenate

    reward = reward_of_inputs(spec.n_inputs, spec.n_actions)
    if reward is None:
        raise ConfigError(f"generalist: a network of {spec.n_inputs} inputs matches no MDP")
    t0 = time.perf_counter()
    rng = np.random.default_rng(np.random.SeedSequence((int(seed), 17)))
    base = {**dict(task_base), "max_duration_s": cfg.task_max_duration_s}

    def draw(n: int) -> list[dict]:
        return [grid.sample_task(int(rng.integers(grid.n_cells)), rng, base) for _ in range(n)]

    tasks, val = draw(cfg.tasks), draw(cfg.validation_tasks)
    app = {"kind": "bulk", "size_bytes": int(task_size_bytes)}
    learn = {
        k: v
        for k, v in dqn.to_dict().items()
        if k in ("gamma", "lr", "batch_size", "tau", "loss", "huber_delta", "double_q", "grad_clip")
    }
    off = DQNOff(
        hidden=spec.hidden,
        seed=int(seed),
        reward=reward,
        log_every=10**9,
        reward_unit=reward_unit,
        **learn,
    )
    exps = [
        off.collect(
            t,
            app,
            int(seed) * 1000 + k,
            1,
            behaviour="rules",
            behaviour_epsilon=cfg.behaviour_epsilon,
            progress=False,
            first_behaviour=k,
        )
        for k, t in enumerate(tasks)
    ]
    exp = concatenate(exps)
    if progress:
        print(
            f"bank generalist: logged {cfg.tasks} tasks ({len(exp)} transitions) "
            f"[{time.perf_counter() - t0:.1f} s]",
            file=sys.stderr,
            flush=True,
        )
    off.train_offline(
        exp, cfg.gradient_steps, progress=False, models=cfg.models, checkpoints=cfg.checkpoints
    )
    n = len(off.candidates)
    chosen = off.select(val, app, int(seed) * 1000, max(cfg.validation_episodes, n), progress=False)
    row = off.learner.flat_weights(0)
    step, model = int(chosen["selected_gradient_steps"]), int(chosen["selected_model"])
    rec = {
        "transitions": len(exp),
        "selected_gradient_steps": step,
        "selected_model": model,
        "wall_s": time.perf_counter() - t0,
    }
    if progress:
        print(
            f"bank generalist: network {model} at step {step} of {n} candidates "
            f"[{rec['wall_s']:.1f} s]",
            file=sys.stderr,
            flush=True,
        )
    return np.asarray(row, np.float32).copy(), rec


__all__ = ["GeneralistConfig", "train_generalist"]
