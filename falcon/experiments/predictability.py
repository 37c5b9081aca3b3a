"""Predictability: how much of the per-download best mode does the transport's view predict?

    python -m falcon.train experiment=predictability                      # lte_lte_carriers, lte_wifi of the validation list
    python -m falcon.train experiment=predictability 'predictability.names=[5g_wifi]' predictability.epochs=3

On conditions of the train or validation list (``predictability.list``;
the test list's files are for reporting only: refused), for the modes of an
agent config of the mode MDP (``predictability.agent``, default
``dqn_modes``: its ``shares``, ``reinject`` and ``rules``), on
``predictability.seeds`` downloads (seeds ``seed + SEED_OFFSET + k``): the
mode ``prefix`` for ``epochs`` decision epochs, then every mode held to the
end from the very same state, and three choices scored by their median
download time (:mod:`baselines.modes.information`): the best held mode,
the per-download best (hindsight) and the mode predicted from the state
after the prefix by ridge regression and by nearest neighbours fitted on
the other downloads (leave one out). One job per condition
(``runtime.workers``).

Outputs: ``predictability.json``::

    {"job": "predictability", "settings": {...}, "modes": [str],
     "conditions": {<name>: {"seeds", "ended_in_prefix", "mode_medians_s": [s per mode],
                             "best_held": {"mode", "median_s"}, "per_download_best": {"median_s"},
                             "predicted": {"ridge" | "knn": {"median_s", "captured", "modes"}},
                             "wall_s"}},
     "wall_s"}

``predictability.txt`` (a row per condition) and ``predictability.png``
(per condition the three choices' medians over the best held mode's).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path

from envs.errors import ConfigError
from falcon.experiments.common import format_table, job_config, publish, run_tracked

JOB = "predictability"
#: the downloads' seeds: ``seed + SEED_OFFSET + k`` (apart from evaluation and training seeds)
SEED_OFFSET = 900_000
#: the condition lists the study may read (the test list's files are for reporting only)
LISTS = ("train", "validation")


def _conditions(sec: Mapping) -> list[dict]:
    """The named conditions of ``sec["list"]``, in the list's order, checked."""
    from falcon.experiments.condition_lists import list_conditions

    name = sec.get("list")
    if name not in LISTS:
        raise ConfigError(
            f"{JOB}.list: expected one of {', '.join(LISTS)}, got {name!r} "
            "(the test list's files are for reporting only)"
        )
    conditions = list_conditions(name, f"{JOB}.list")
    names = sec.get("names")
    if names is None:
        return conditions
    known = [c["name"] for c in conditions]
    missing = [n for n in names if n not in known]
    if missing:
        raise ConfigError(
            f"{JOB}.names: {missing} not in the {name} list (its conditions: {', '.join(known)})"
        )
    return [c for c in conditions if c["name"] in set(names)]


def _modes(sec: Mapping) -> list:
    """The modes of the agent config ``sec["agent"]``: those the agent itself makes."""
    from falcon.config import load_group, to_plain
    from falcon.jobs import instantiate_agent

    name = str(sec["agent"])
    modes = getattr(instantiate_agent(name, to_plain(load_group("agent", name))), "modes", None)
    if modes is None:
        raise ConfigError(f"{JOB}.agent: {name!r} is not an agent of the mode MDP")
    return list(modes)


def _condition_job(job: tuple) -> dict:
    """One condition's study (a worker of :func:`falcon.runtime.run_jobs`)."""
    from baselines.modes.information import branch_outcomes, summarise

    cond, modes, prefix, epochs, seeds, ridge, neighbours = job
    t0 = time.perf_counter()
    out = branch_outcomes(cond["scenario"], cond["app"], modes, prefix, epochs, seeds)
    res = summarise(out["times"], out["states"], ridge, neighbours)
    res["ended_in_prefix"] = out["ended_in_prefix"]
    res["wall_s"] = time.perf_counter() - t0
    return res


def run_study(
    sec: Mapping, seed: int, runtime: Mapping | None = None, progress: bool = True
) -> dict:
    """The study (module docstring) as its results dict."""
    from baselines.modes.probe import check_probe_settings
    from falcon.runtime import run_jobs

    ridge = sec.get("ridge")
    if isinstance(ridge, bool) or not isinstance(ridge, int | float) or not ridge >= 0:
        raise ConfigError(f"{JOB}.ridge: expected a number >= 0, got {ridge!r}")
    conditions = _conditions(sec)
    modes = _modes(sec)
    probe = check_probe_settings(sec, modes, JOB)  # the probe's prefix, epochs, seeds, neighbours
    seeds = [int(seed) + SEED_OFFSET + k for k in range(probe["seeds"])]
    jobs = [
        (c, modes, probe["prefix"], probe["epochs"], seeds, float(ridge), probe["neighbours"])
        for c in conditions
    ]
    t0 = time.perf_counter()
    results = run_jobs(
        jobs, _condition_job, dict(runtime or {}), progress=progress, desc="conditions"
    )
    return {
        "job": JOB,
        "settings": {**dict(sec), "seed": int(seed), "seed_offset": SEED_OFFSET},
        "modes": [str(m) for m in modes],
        "prefix_mode": str(modes[probe["prefix"]]),
        "conditions": {c["name"]: r for c, r in zip(conditions, results)},
        "wall_s": time.perf_counter() - t0,
    }


def table(res: Mapping) -> str:
    rows = []
    for name, r in res["conditions"].items():
        held = r["best_held"]
        rows.append(
            [
                name,
                f"{res['modes'][held['mode']]}",
                f"{held['median_s']:.3f}",
                f"{r['per_download_best']['median_s']:.3f}",
                *(
                    f"{r['predicted'][m]['median_s']:.3f}"
                    + (
                        ""
                        if r["predicted"][m]["captured"] is None
                        else f" [{r['predicted'][m]['captured']:.2f}]"
                    )
                    for m in ("ridge", "knn")
                ),
            ]
        )
    head = (
        f"median download time [s] over {res['settings']['seeds']} downloads, mode "
        f"{res['prefix_mode']} for the first {res['settings']['epochs']} epochs; "
        "[share of the gap best held - per-download best captured]\n"
    )
    return (
        head
        + format_table(
            ["condition", "best held mode", "best held", "per-download best", "ridge", "knn"], rows
        )
        + "\n"
    )


def plot(res: Mapping, path: Path) -> Path:
    """Per condition: the per-download best and the two predictions, over the best held mode."""
    from baselines.mpl import use_agg

    use_agg()
    import matplotlib.pyplot as plt

    from falcon import report

    names = list(res["conditions"])
    fig, ax = plt.subplots(figsize=(max(4.0, 1.4 * len(names) + 1.5), 3.2))
    kinds = [("per-download best", None), ("ridge", "ridge"), ("knn", "knn")]
    width = 0.8 / len(kinds)
    for j, (label, key) in enumerate(kinds):
        vals = []
        for n in names:
            r = res["conditions"][n]
            m = (
                r["per_download_best"]["median_s"]
                if key is None
                else r["predicted"][key]["median_s"]
            )
            vals.append(m / r["best_held"]["median_s"])
        ax.bar([i + (j - 1) * width for i in range(len(names))], vals, width, label=label)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names, rotation=20, ha="right", fontsize=8)
    ax.set_ylabel("median / best held mode's")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return report.save_figure(fig, path, tight=False)


def run_job(cfg) -> dict:
    from falcon.config import check_runtime

    cfg, sec = job_config(cfg, JOB)
    runtime = check_runtime(cfg.get("runtime"))
    progress = bool(cfg.get("progress", True))

    def body(tracker, folder):
        return publish(
            tracker,
            folder,
            JOB,
            run_study(sec, int(cfg.get("seed", 0)), runtime, progress),
            table,
            plot,
        )

    return run_tracked(cfg, JOB, {JOB: sec}, body)


__all__ = ["run_study", "run_job", "table", "plot", "SEED_OFFSET", "LISTS"]
