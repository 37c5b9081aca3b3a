"""python -m falcon.bench run [key=value ...] | leaderboard RESULTS... -o DIR

``run`` takes Hydra overrides of configs/bench.yaml, like falcon.evaluate
(``agent_list=[...]``, ``runtime=ray``, ``tracking=none``, ``output=DIR``,
``bench.splits=[validation]``); ``leaderboard`` builds the static page
(:mod:`falcon.bench.leaderboard`). Bad input: one ``error:`` line, exit 2.
"""

from __future__ import annotations

import sys

USAGE = (
    "usage: python -m falcon.bench run [key=value ...]\n"
    "       python -m falcon.bench leaderboard RESULTS.json [RESULTS.json ...] -o DIR"
)


def _run(argv: list[str]) -> None:
    import hydra
    from omegaconf import DictConfig

    from falcon import cli
    from falcon.config import CONFIG_DIR

    @hydra.main(config_path=str(CONFIG_DIR), config_name="bench", version_base="1.3")
    @cli.guard
    def _hydra_main(cfg: DictConfig) -> dict:
        from falcon.bench.run import run_job

        return run_job(cfg)

    sys.argv = [f"{sys.argv[0]} run", *argv]
    cli.main(_hydra_main)


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        raise SystemExit(0 if argv else 2)
    command, rest = argv[0], argv[1:]
    if command == "run":
        _run(rest)
    elif command == "leaderboard":
        from falcon.bench.leaderboard import main as leaderboard_main

        leaderboard_main(rest)
    else:
        print(f"error: unknown command {command!r} (run | leaderboard)\n{USAGE}", file=sys.stderr)
        raise SystemExit(2)


if __name__ == "__main__":
    main()
