"""python -m falcon.reproduce [scale=quick|paper] [only=[...]] [rerun=true]

Runs the experiments of :mod:`falcon.reproduce.catalog` in order (the bank
first when one needs it), each as its own MLflow run, reusing finished runs
with the same command and code (:mod:`falcon.reproduce.runs`); then reads
every run's JSON, judges each claim of ``data/seed_claims.yaml``
(:mod:`falcon.reproduce.claims`) and writes ``report.md``, ``report.html``
and ``report.json`` (the model both are rendered from) with the plots in
``figures/``, in ``<output>/<scale>/``. Exits 1 when an experiment failed
(the report is still written, saying which).
"""

from __future__ import annotations

import json
import shlex
import sys
import time
from pathlib import Path

import hydra
from omegaconf import DictConfig

from envs.errors import ConfigError
from falcon import cli
from falcon.config import CONFIG_DIR


def reproduce(cfg) -> dict:
    """Run (or reuse) the experiments and write the report; returns the report's model."""
    from falcon import seeds
    from falcon.config import to_plain
    from falcon.reproduce import catalog, claims, render
    from falcon.reproduce.runs import code_state, run_one

    scale = str(cfg.get("scale"))
    if scale not in catalog.SCALES:
        raise ConfigError(f"scale: expected one of {', '.join(catalog.SCALES)}, got {scale!r}")
    doc = seeds.load()
    selected = catalog.select(to_plain(cfg.get("only")))
    tracking = to_plain(cfg.get("tracking")) or {"enabled": False}
    root = Path(str(cfg.get("output") or "results/reproduce")).expanduser()
    bank = str(cfg.get("bank") or catalog.BANK_PRESET[scale])
    state = code_state()
    t0 = time.perf_counter()
    outcomes = {}
    for i, exp in enumerate(selected, 1):
        outcomes[exp.name] = run_one(
            exp,
            scale,
            root,
            tracking,
            bank,
            state,
            index=f"[{i}/{len(selected)}]",
            rerun=bool(cfg.get("rerun")),
        )
    exp_id, uri = _mlflow_experiment(tracking)
    figures = []
    for fig in doc["figures"]:
        exp = catalog.BY_NAME.get(fig["experiment"])
        if exp is None:
            raise ConfigError(
                f"seed claims: figure {fig['id']!r} names unknown experiment {fig['experiment']!r}"
            )
        if exp.name not in outcomes:
            continue
        outcome = outcomes[exp.name]
        res = outcome.results(exp)
        why = (
            f"the experiment failed ({outcome.error})"
            if outcome.status == "failed"
            else "no results"
        )
        figures.append(
            {
                "fig": fig,
                "experiment": exp,
                "outcome": outcome,
                "experiment_id": exp_id,
                "verdicts": claims.verdicts(fig, res, why),
            }
        )
    out_dir = root / scale
    command = " ".join(["python -m falcon.reproduce", *map(shlex.quote, sys.argv[1:])])
    model = render.build(
        doc, figures, scale=scale, state=state, command=command, out_dir=out_dir, tracking_uri=uri
    )
    model["wall_s"] = time.perf_counter() - t0
    model["failed"] = [n for n, o in outcomes.items() if o.status == "failed"]
    model["experiments"] = {
        n: {
            "status": o.status,
            "output": str(o.output),
            "run_id": o.run_id,
            "wall_s": o.wall_s,
            "log": str(o.log),
        }
        for n, o in outcomes.items()
    }
    _write(out_dir / "report.md", render.markdown(model))
    _write(out_dir / "report.html", render.html(model))
    _write(out_dir / "report.json", json.dumps(model, indent=2, default=str) + "\n")
    t = model["totals"]
    print(
        f"report: {out_dir / 'report.md'} ({out_dir / 'report.html'}); claims: {t['reproduced']} reproduced, "
        f"{t['not reproduced']} not reproduced, {t['not assessed']} not assessed; {model['wall_s']:.0f} s",
        file=sys.stderr,
        flush=True,
    )
    return model


def _write(path: Path, text: str) -> None:
    """Never a half-written report: through a temporary file renamed onto ``path``."""
    from baselines.dqn.files import atomic_path

    with atomic_path(path) as tmp:
        tmp.write_text(text)


def _mlflow_experiment(tracking: dict) -> tuple[str | None, str | None]:
    """The tracking store's URI and the id of its experiment (for the run links)."""
    if not tracking.get("enabled", True):
        return None, None
    from falcon.tracking import resolve_uri
    from falcon.tracking_store import open_client

    uri = resolve_uri(tracking.get("uri"))
    exp = open_client(uri).get_experiment_by_name(str(tracking.get("experiment") or "falcon"))
    return (exp.experiment_id if exp else None), uri


@hydra.main(config_path=str(CONFIG_DIR), config_name="reproduce", version_base="1.3")
@cli.guard
def _hydra_main(cfg: DictConfig) -> dict:
    model = reproduce(cfg)
    if model["failed"]:
        print(
            f"failed: {', '.join(model['failed'])} (their logs are named in the report)",
            file=sys.stderr,
        )
        sys.exit(1)
    return model


def main() -> None:
    cli.main(_hydra_main)


if __name__ == "__main__":
    main()
