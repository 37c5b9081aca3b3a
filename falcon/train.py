"""python -m falcon.train: train the agent(s) named by the config, then evaluate them.

    python -m falcon.train                       # the main job (configs/experiment/main.yaml)
    python -m falcon.train agent=dqn scenario=mobile_5g_5g seed=3
    python -m falcon.train -m agent=minrtt,blest runs=5

An agent whose config has a ``train:`` section is trainable: its scheduler is
instantiated and ``scheduler.fit(scenario=..., app=..., seed=train_seed,
**train)`` is called on the run's first scenario and app (training seeds are
``train_seed``, apart from the evaluation seeds). ``fit`` may accept a
``log(metrics, step)`` callback for learning curves and return final training
metrics; if the scheduler has ``save(directory)`` the model files go to
``models/<agent>/`` of the output and to MLflow. The trained scheduler is then
evaluated like every other agent. Rule-based agents have nothing to train:
the command says so and evaluates them.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping

import hydra
from omegaconf import DictConfig

from envs.errors import ConfigError
from falcon import cli
from falcon.config import Plan
from falcon.experiment import info
from falcon.jobs import instantiate_agent, seed_globals


def is_trainable(agent_cfg) -> bool:
    return isinstance(agent_cfg, Mapping) and agent_cfg.get("train") is not None


def train_agents(plan: Plan, staging, tracker, train_seed: int) -> Plan:
    """Train every trainable agent of the plan; the plan with the trained schedulers."""
    agents = []
    scenario_name, scenario = plan.scenarios[0]
    app_name, app = plan.apps[0]
    for name, agent_cfg in plan.agents:
        if not is_trainable(agent_cfg):
            info(f"agent {name!r} is rule-based: nothing to train; it is evaluated only")
            agents.append((name, agent_cfg))
            continue
        train_kw = dict(agent_cfg["train"])
        if not isinstance(train_kw, dict):
            raise ConfigError(f"agent {name!r}: train: must be a mapping of fit() arguments")
        scheduler = instantiate_agent(name, agent_cfg)
        fit = getattr(scheduler, "fit", None)
        if not callable(fit):
            raise ConfigError(f"agent {name!r}: has a train: section but {type(scheduler).__name__} has no fit()")
        info(f"training agent {name!r} on scenario {scenario_name!r}, app {app_name!r}, seed {train_seed}")
        if "log" in inspect.signature(fit).parameters:
            train_kw["log"] = lambda metrics, step=None, _n=name: tracker.log_metrics(
                {f"train/{_n}/{k}": v for k, v in metrics.items()}, step)
        seed_globals(train_seed)
        final = fit(scenario=scenario, app=app, seed=train_seed, **train_kw)
        if isinstance(final, Mapping):
            tracker.log_metrics({f"train/{name}/{k}": float(v) for k, v in final.items()})
        if callable(getattr(scheduler, "save", None)):
            model_dir = staging / "models" / name
            model_dir.mkdir(parents=True)
            scheduler.save(model_dir)
        agents.append((name, scheduler))
    plan.agents = agents
    return plan


@hydra.main(config_path="../configs", config_name="train", version_base="1.3")
@cli.guard
def _hydra_main(cfg: DictConfig) -> None:
    from falcon.config import check_int
    from falcon.experiment import run_pipeline

    train_seed = check_int(cfg, "train_seed", 0)
    run_pipeline(cfg, "train", prepare=lambda plan, staging, tracker: train_agents(
        plan, staging, tracker, train_seed))


def main() -> None:
    cli.main(_hydra_main)


if __name__ == "__main__":
    main()
