"""python -m falcon.evaluate: compare schedulers on the same scenarios, apps and seeds.

    python -m falcon.evaluate agent_list=[minrtt,blest,ecf,rr] scenario=static_4g_5g runs=20
    python -m falcon.evaluate agent_list=[minrtt,ecf] scenario=custom \\
        scenario.paths.0.bandwidth_mbps=50 scenario.paths.1.trace=mahimahi_cellular_lte/TMobile-LTE-short.down
    python -m falcon.evaluate -m scenario=static_4g_5g,static_4g_wlan runtime=ray

Prints the comparison table, writes summary.json, table.txt, plots and the
configs to ``output=`` (default ``results/evaluate/<time>-<run id>``) and logs
everything to MLflow. See configs/evaluate.yaml and docs/tutorials/first_run.md.
"""

from __future__ import annotations

from falcon import tracking_worker

if __name__ == "__main__":  # before the imports below: MLflow's import runs beside them
    tracking_worker.prewarm()

import hydra
from omegaconf import DictConfig

from falcon import cli
from falcon.config import CONFIG_DIR


def run_evaluate_job(cfg) -> dict:
    """Evaluate the configured agents with a composed ``evaluate`` config
    (FALCON's bank resolved, built when missing); the summary dict."""
    from falcon.bank_job import resolve_agent_banks
    from falcon.config import check_runtime, to_plain
    from falcon.experiment import run_pipeline

    return run_pipeline(
        cfg,
        "evaluate",
        prepare=lambda plan, staging, tracker: resolve_agent_banks(
            plan,
            to_plain(cfg.get("bank")),
            check_runtime(cfg.get("runtime")),
            progress=bool(cfg.get("progress", True)),
        ),
    )


@hydra.main(config_path=str(CONFIG_DIR), config_name="evaluate", version_base="1.3")
@cli.guard
def _hydra_main(cfg: DictConfig) -> dict:
    return run_evaluate_job(cfg)


def main() -> None:
    cli.main(_hydra_main)


if __name__ == "__main__":
    main()
