"""python -m falcon.train: train the agent(s) named by the config, then evaluate them.

    python -m falcon.train                       # the main job (configs/experiment/main.yaml)
    python -m falcon.train agent=dqn scenario=mobile_5g_5g seed=3
    python -m falcon.train -m agent=minrtt,blest runs=5

An agent whose config has a ``train:`` section is trainable: its scheduler
(an :class:`envs.scheduler.Trainable`) is instantiated and
``scheduler.fit(scenario=..., app=..., seed=train_seed, log=..., **train)``
is called on the run's first scenario and app (training seeds are
``train_seed``, apart from the evaluation seeds). ``log(metrics, step)``
takes the learning curve; ``fit`` returns final training metrics; if the
scheduler has ``save(directory)`` the model files go to
``models/<agent>/`` of the output and to MLflow. The trained scheduler is then
evaluated like every other agent. Rule-based agents have nothing to train:
the command says so and evaluates them.

``job:`` selects another job of the same entry point: ``build_bank``
(``experiment=build_bank``: build the meta-model bank, :mod:`falcon.bank_job`),
``meta_evidence`` (``experiment=meta_evidence``: does meta-learning help,
:mod:`falcon.evidence_job`), FALCON's online experiments (``convergence``,
``stress``, ``k_impact``, ``overhead``) or the learnability suite (``learnability``:
rules, best fixed split and learners trained per condition,
:mod:`falcon.experiments.learnability`), how much of the per-download best
mode the transport's view predicts (``predictability``,
:mod:`falcon.experiments.predictability`) or the GAPS out-of-order queue
experiment (``gaps``, :mod:`falcon.experiments.gaps`), HOP's deadline blocks
(``hop``) or the hybrid MPTCP's distributed edge learning (``hybrid``), each
``falcon/experiments/<job>.py``.
"""

from __future__ import annotations

from falcon import tracking_worker

if __name__ == "__main__":  # before the imports below: MLflow's import runs beside them
    tracking_worker.prewarm()

from collections.abc import Mapping

import hydra
from omegaconf import DictConfig

from envs.errors import ConfigError
from envs.scheduler import Trainable
from envs.traces.guard import training_reads
from falcon import cli
from falcon.config import CONFIG_DIR, Plan
from falcon.experiment import info
from falcon.jobs import instantiate_agent, seed_globals

#: jobs of falcon/experiments/<job>.py (each has run_job(cfg)): FALCON's online experiments
ONLINE_EXPERIMENTS = ("convergence", "stress", "k_impact", "overhead", "real_world")
#: every job of falcon/experiments/<job>.py: the online experiments and the learnability suite
EXPERIMENTS = (
    *ONLINE_EXPERIMENTS,
    "learnability",
    "predictability",
    "gaps",
    "hop",
    "hybrid",
    "srpt_toys",
)


def is_trainable(agent_cfg) -> bool:
    return isinstance(agent_cfg, Mapping) and agent_cfg.get("train") is not None


def train_agents(plan: Plan, staging, tracker, train_seed: int, progress: bool = True) -> Plan:
    """Train every trainable agent of the plan (a ``train:`` section in its
    config, a :class:`envs.scheduler.Trainable` scheduler); the plan with
    the trained schedulers. ``progress`` goes to every ``fit``. A ``fit``
    that reads a test trace file of ``data/traces/split.yaml`` fails
    (:func:`envs.traces.guard.training_reads`, entered here: in the worker
    when the training step runs in one)."""
    agents = []
    scenario_name, scenario = plan.scenarios[0]
    app_name, app = plan.apps[0]
    for name, agent_cfg in plan.agents:
        if not is_trainable(agent_cfg):
            if isinstance(agent_cfg, Mapping) and "bank" in agent_cfg:
                info(
                    f"agent {name!r} is deployed from the meta-model bank and adapts online: no training step"
                )
            else:
                info(
                    f"agent {name!r} has nothing to train (no train: section): it is evaluated only"
                )
            agents.append((name, agent_cfg))
            continue
        train_kw = dict(agent_cfg["train"])
        if not isinstance(train_kw, dict):
            raise ConfigError(f"agent {name!r}: train: must be a mapping of fit() arguments")
        scheduler = instantiate_agent(name, agent_cfg)
        if not isinstance(scheduler, Trainable):
            raise ConfigError(
                f"agent {name!r}: has a train: section but {type(scheduler).__name__} has no "
                f"training step (not an envs.scheduler.Trainable)"
            )
        on = f"scenario {scenario_name!r}, app {app_name!r}"
        if "conditions" in train_kw:  # a generalist: trained on a whole condition list
            from falcon.experiments.condition_lists import generalist_tasks

            train_kw["tasks"], on = generalist_tasks(train_kw, train_seed, f"agent {name!r}: train")
            for key in ("conditions", "recombined", "in_sample"):
                train_kw.pop(key, None)
        info(f"training agent {name!r} on {on}, seed {train_seed}")
        train_kw["log"] = lambda metrics, step=None, _n=name: tracker.log_metrics(
            {f"train/{_n}/{k}": v for k, v in metrics.items()}, step
        )
        train_kw.setdefault("progress", progress)
        seed_globals(train_seed)
        with training_reads(f"training agent {name!r} on {on}"):  # no test trace file
            final = scheduler.fit(scenario=scenario, app=app, seed=train_seed, **train_kw)
        if isinstance(final, Mapping):
            tracker.log_metrics({f"train/{name}/{k}": float(v) for k, v in final.items()})
        if callable(getattr(scheduler, "save", None)):
            model_dir = staging / "models" / name
            model_dir.mkdir(parents=True)
            scheduler.save(model_dir)
        agents.append((name, scheduler))
    plan.agents = agents
    return plan


def run_train_job(cfg) -> dict | None:
    """Run the job ``cfg.job`` names (default ``train``: train the trainable
    agents, then evaluate every agent) with a composed config; returns its
    results (the summary of the train job, the results dict of an
    experiment) where the job has one."""
    from falcon.config import check_int, check_runtime, to_plain
    from falcon.experiment import run_pipeline

    job = cfg.get("job") or "train"
    if job == "build_bank":
        from falcon.bank_job import run_build_job

        return run_build_job(cfg)
    if job == "meta_evidence":
        from falcon.evidence_job import run_evidence_job

        return run_evidence_job(cfg)
    if job in EXPERIMENTS:
        import importlib

        return importlib.import_module(f"falcon.experiments.{job}").run_job(cfg)
    if job != "train":
        known = ", ".join(["train", "build_bank", "meta_evidence", *EXPERIMENTS])
        raise ConfigError(f"job: unknown job {job!r} (known: {known})")
    train_seed = check_int(cfg, "train_seed", 0)
    bank, runtime = to_plain(cfg.get("bank")), check_runtime(cfg.get("runtime"))
    from falcon.bank_job import resolve_agent_banks

    def prepare(plan, staging, tracker):
        plan = resolve_agent_banks(plan, bank, runtime, progress=bool(cfg.get("progress", True)))
        return train_agents(plan, staging, tracker, train_seed)

    return run_pipeline(cfg, "train", prepare=prepare)


@hydra.main(config_path=str(CONFIG_DIR), config_name="train", version_base="1.3")
@cli.guard
def _hydra_main(cfg: DictConfig) -> dict | None:
    return run_train_job(cfg)


def main() -> None:
    cli.main(_hydra_main)


if __name__ == "__main__":
    main()
