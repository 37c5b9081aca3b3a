"""python -m falcon.deploy: the transport's schedulers on a scenario, real and emulated.

    python -m falcon.deploy scenario=static_4g_wlan scenario.paths.0.bandwidth_mbps=20 runs=10
    python -m falcon.deploy 'agent_list=[minrtt,rr,model]' model=results/train/<run> scenario.cc=cubic
    python -m falcon.deploy agent=model model=dqn_off.onnx scenario=custom \\
        scenario.paths.0.bandwidth_mbps=10 scenario.paths.0.rtt_ms=20 \\
        scenario.paths.1.bandwidth_mbps=5 scenario.paths.1.rtt_ms=80

Downloads ``app.size_bytes`` ``runs`` times per scheduler with the multipath
QUIC transport of ``transports/`` through the link relay running the
scenario (bytes checked), runs the same scenario, app and seeds in the
emulator, and writes summary.json, table.txt, a download-time plot and an
MLflow run (:mod:`falcon.deploy.job`, ``configs/deploy.yaml``). ``agent=NAME``
is short for ``agent_list=[NAME]``: the transport's schedulers (minrtt, rr,
model) are no configs/agent/ names. Bad input: one line, exit status 2.
"""

from __future__ import annotations

import re
import sys

import hydra
from omegaconf import DictConfig

from falcon import cli
from falcon.config import CONFIG_DIR

_AGENT = re.compile(r"^agent=(.*)$")


def rewrite_argv(argv: list[str]) -> list[str]:
    """``agent=NAME`` -> ``agent_list=[NAME]`` (``agent`` is a config group
    of configs/, which Hydra would look up); both given: one error line."""
    picked = [a for a in argv if _AGENT.match(a)]
    if not picked:
        return argv
    if len(picked) > 1 or any(
        a.startswith(("agent_list=", "+agent_list=", "++agent_list=")) for a in argv
    ):
        cli.fail("give agent=NAME or agent_list=[...], once")
    name = _AGENT.match(picked[0]).group(1)
    return [f"agent_list=[{name}]" if a is picked[0] else a for a in argv]


@hydra.main(config_path=str(CONFIG_DIR), config_name="deploy", version_base="1.3")
@cli.guard
def _hydra_main(cfg: DictConfig) -> dict:
    from falcon.deploy.job import run_deploy_job

    return run_deploy_job(cfg)


def main() -> None:
    sys.argv[1:] = rewrite_argv(sys.argv[1:])
    cli.main(_hydra_main)


if __name__ == "__main__":
    main()
