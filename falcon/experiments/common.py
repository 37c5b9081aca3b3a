"""Shared pieces of FALCON's online experiments.

* **Relative score** (FALCON paper Sec. VI-B): median download time of the
  DQN-Off reference / median download time of the scheduler under test
  (> 1: faster than DQN-Off). :func:`relative_score`. Where both ran the
  very same downloads (the stress test), :func:`paired_score` is the
  geometric mean of the per-download ratios. Both rank a download that did
  not finish after every finished one (:func:`ranked_median`).
* **Binning** by online packets: :func:`log_bin_edges` (a first bin
  ``[0, lo)`` then ``per_decade`` logarithmic bins per decade up to ``hi``),
  :func:`bin_of`, :func:`bin_centre`.
* **Schedulers** from the agent configs (``configs/agent/<name>.yaml`` plus
  per-experiment overrides): :func:`build_agent`, :func:`prepare`,
  :func:`download` (one download, the learner persisting across calls).
* **Reference**: :func:`train_reference` (a DQN-Off trained offline on
  experience logged on the examined conditions) and
  :func:`reference_times`.
* **Jobs**: :func:`run_tracked` (MLflow run + staged output folder),
  :func:`write_outputs` (results JSON + text table), :func:`plot_series`.

Units: times in seconds, sizes in bytes, online packets = packets sent
(``packets_sent`` of the episode metrics: every data packet a scheduler
placed, retransmissions included; the same count for every scheduler).
"""

from __future__ import annotations

import copy
import json
import math
import shlex
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np

from baselines.palette import color
from envs.errors import ConfigError
from falcon import report
from falcon.experiment import info

#: the reference scheduler of the relative score
REFERENCE = "dqn_off"


# ---------------------------------------------------------------- score and bins
def ranked_median(times: Sequence[float]) -> float:
    """Median download time [s] with an unfinished download (NaN, inf, None)
    ranked after every finished one, as :func:`falcon.report.describe` with
    ``unfinished="last"`` ranks it: ``inf`` when the median falls among the
    unfinished, NaN without a download. ``np.median`` of the times when every
    download finished (the same bits as before unfinished ones were ranked)."""
    t = np.asarray([math.nan if x is None else x for x in times], float)
    if not t.size:
        return math.nan
    return float(np.median(np.where(np.isfinite(t), t, np.inf)))


def relative_score(reference_times: Sequence[float], times: Sequence[float]) -> float:
    """median(reference) / median(times), an unfinished download (NaN) ranked
    after every finished one on both sides (:func:`ranked_median`): leaving it
    out would rank a scheduler that times out on its slowest downloads ahead
    of one that finishes them. 0 when the scheduler's median download did not
    finish and the reference's did; NaN when the reference's did not, or
    either side ran nothing."""
    ref, mine = ranked_median(list(reference_times)), ranked_median(list(times))
    if not math.isfinite(ref) or math.isnan(mine) or mine <= 0:
        return math.nan
    return ref / mine


def paired_score(reference: Mapping, mine: Mapping) -> tuple[float, int]:
    """Geometric mean over the downloads both ran (the keys common to both
    mappings, e.g. ``(seed, condition, download)`` -> download time [s]) of
    reference time / own time, and the number of pairs. NaN without a pair.
    The keys must be sortable (the sum runs in key order: reproducible bits).

    An unfinished download (a non-finite time) is slower than any finished
    one, as in :func:`relative_score`: a pair where only the scheduler's
    download did not finish makes the score 0, one where only the
    reference's did makes it ``inf`` (both kinds: NaN), and a pair where
    neither finished counts as a tie (ratio 1). Leaving such pairs out would
    score a scheduler by the downloads it managed to finish.

    A ratio of medians pools downloads of different conditions, so its value
    depends on which condition's downloads happen to sit at the median: on the
    stress test's 72 downloads at 8 s it put FALCON 5.5 % behind minRTT
    where the paired ratios say 1.8 %."""
    keys = sorted(reference.keys() & mine.keys())
    logs, own_unfinished, ref_unfinished = [], 0, 0
    for k in keys:
        r_done, m_done = _finished(reference[k]), _finished(mine[k])
        if r_done and m_done:
            logs.append(math.log(reference[k] / mine[k]))
        elif r_done:
            own_unfinished += 1
        elif m_done:
            ref_unfinished += 1
        else:
            logs.append(0.0)
    if not keys:
        return math.nan, 0
    if own_unfinished and ref_unfinished:
        return math.nan, len(keys)
    if own_unfinished:
        return 0.0, len(keys)
    if ref_unfinished:
        return math.inf, len(keys)
    return math.exp(sum(logs) / len(logs)), len(keys)


def _finished(t) -> bool:
    """A download time [s] of a download that finished (finite and positive)."""
    return t is not None and math.isfinite(t) and t > 0


def log_bin_edges(lo: float, hi: float, per_decade: int) -> list[float]:
    """``[0, lo, lo*10**(1/per_decade), ..., hi]``: bin 0 is ``[0, lo)``, the
    others are logarithmic; a value >= hi falls in no bin."""
    lo, hi, per_decade = float(lo), float(hi), int(per_decade)
    if not (0 < lo < hi) or per_decade < 1:
        raise ConfigError(
            f"bins: need 0 < lo < hi and per_decade >= 1, got lo={lo}, hi={hi}, "
            f"per_decade={per_decade}"
        )
    n = int(round(math.log10(hi / lo) * per_decade))
    return [0.0] + [float(lo * 10 ** (i / per_decade)) for i in range(n + 1)]


def bin_of(x: float, edges: Sequence[float]) -> int | None:
    """Index of the bin ``[edges[i], edges[i+1])`` holding ``x``, None outside."""
    for i in range(len(edges) - 1):
        if edges[i] <= x < edges[i + 1]:
            return i
    return None


def bin_centre(edges: Sequence[float], i: int) -> float:
    """Geometric centre of bin ``i`` (bin ``[0, lo)``: one log step below ``lo``,
    so that it shows on a log axis)."""
    lo, hi = edges[i], edges[i + 1]
    if lo <= 0:
        step = edges[i + 2] / edges[i + 1] if i + 2 < len(edges) else 10.0
        return hi / math.sqrt(step)
    return math.sqrt(lo * hi)


# ---------------------------------------------------------------- scenarios
def with_conditions(scenario: Mapping, conditions) -> dict:
    """``scenario`` with per-path overrides: ``conditions`` is None (unchanged)
    or a list (one mapping or null per path) of path keys such as
    ``rtt_ms``, ``rtt_std_ms``, ``loss``, ``bandwidth_mbps``."""
    s = copy.deepcopy(dict(scenario))
    if conditions is None:
        return s
    if (
        isinstance(conditions, Mapping)
        or isinstance(conditions, str)
        or not isinstance(conditions, Sequence)
    ):
        raise ConfigError(f"conditions: expected a list of per-path mappings, got {conditions!r}")
    paths = [dict(p) for p in s.get("paths") or []]
    if len(conditions) > len(paths):
        raise ConfigError(
            f"conditions: {len(conditions)} paths given, the scenario has {len(paths)}"
        )
    for i, c in enumerate(conditions):
        if c is None:
            continue
        if not isinstance(c, Mapping):
            raise ConfigError(f"conditions[{i}]: expected a mapping of path keys, got {c!r}")
        paths[i].update(dict(c))
    s["paths"] = paths
    return s


# ---------------------------------------------------------------- schedulers
def _merge(base: dict, over: Mapping) -> dict:
    out = dict(base)
    for k, v in over.items():
        if isinstance(out.get(k), dict) and isinstance(v, Mapping):
            out[k] = _merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def agent_config(name: str, overrides: Mapping | None = None) -> dict:
    """``configs/agent/<name>.yaml`` with ``overrides`` merged in (plain dict)."""
    from falcon.config import load_group, to_plain

    cfg = to_plain(load_group("agent", name))
    return _merge(cfg, dict(overrides or {}))


def record_train_seed(cfg, sec: dict) -> None:
    """``sec["train_seed"]`` (falcon.train's key) when one of ``sec["schedulers"]``
    (with ``sec["agent_overrides"]``) trains on a condition list first
    (:func:`falcon.experiments.generalists.train_generalists`); otherwise nothing
    is recorded, as nothing reads it."""
    from falcon.config import check_int
    from falcon.experiments.generalists import listed_conditions

    overrides = dict(sec.get("agent_overrides") or {})
    names = [n for n in sec["schedulers"] if n != REFERENCE]
    if any(listed_conditions(agent_config(n, overrides.get(n))) for n in names):
        sec["train_seed"] = check_int(cfg, "train_seed", 0)


def offline_enabled(cfg: Mapping) -> bool:
    off = cfg.get("offline")
    return isinstance(off, Mapping) and bool(off.get("enabled", True))


def build_agent(name: str, cfg: Mapping, seed: int, bank=None):
    """A new scheduler from agent config ``cfg`` with its ``seed`` key set to
    ``seed`` (when it has one). A FALCON config (a ``bank`` key) gets
    ``bank``; with the offline loop on, a private copy of its parameters (the
    loop updates them; runs must not share them)."""
    from falcon.jobs import instantiate_agent

    kw = dict(cfg)
    if "seed" in kw:
        kw["seed"] = int(seed)
    extra = {}
    if "bank" in kw:
        if bank is None:
            raise ConfigError(f"{name}: needs a meta-model bank")
        kw.pop("bank")
        if offline_enabled(cfg):
            bank = bank.private_copy()  # copy on write: the offline loop's cells only
        extra["bank"] = bank
    return instantiate_agent(name, kw, **extra)


def prepare(scheduler, scenario, app, seed: int) -> None:
    """What a scheduler needs before going online: DQN-On(N)/(W) buffer their
    nearby conditions of ``scenario`` and pre-train on them (``fit`` with no
    online episode)."""
    if getattr(scheduler, "buffer", None) is not None and not getattr(scheduler, "buffered", True):
        scheduler.fit(scenario=scenario, app=app, seed=seed, episodes=0, progress=False)


def download(scheduler, scenario, app, seed: int) -> dict[str, float]:
    """One download; the episode metrics. Learning schedulers keep learning
    (their own ``run_episode``); the others run through :func:`envs.run_episode`."""
    from falcon.jobs import seed_globals

    seed_globals(seed)
    run = getattr(scheduler, "run_episode", None)
    if callable(run):
        m = run(scenario, app, seed)
    else:
        import envs

        m = envs.run_episode(scenario, app, scheduler, seed).metrics
    return {k: float(v) for k, v in m.items()}


# ---------------------------------------------------------------- reference
def train_reference(
    scenarios: Sequence[Mapping], app, seed: int, ref_cfg: Mapping, progress: bool = True
):
    """DQN-Off trained offline on experience logged on ``scenarios`` (one
    logged download per scenario, cycling until ``collect_episodes``) by one
    persistent DQN-On behaviour policy (exploration ``behaviour_epsilon``,
    learning from scratch as it logs, as :meth:`DQNOff.collect`), then
    ``gradient_steps`` offline DQN steps; no test trace file may be read
    (:func:`envs.traces.guard.training_reads`). Returns ``(scheduler, info)``."""
    from envs.traces.guard import training_reads

    with training_reads(f"training the {REFERENCE} reference"):
        return _train_reference(scenarios, app, seed, ref_cfg, progress)


def _train_reference(
    scenarios: Sequence[Mapping], app, seed: int, ref_cfg: Mapping, progress: bool
):
    from baselines.dqn.dqn_on import DQNOn
    from baselines.dqn.experience import ExperienceRecorder
    from envs.scenario import normalise_scenario

    cfg = agent_config(ref_cfg.get("agent", REFERENCE), ref_cfg.get("agent_overrides"))
    off = build_agent(REFERENCE, cfg, seed)
    episodes = int(ref_cfg.get("collect_episodes", 8))
    steps = int(ref_cfg.get("gradient_steps", 2000))
    if episodes < 1 or steps < 1 or not scenarios:
        raise ConfigError("reference: collect_episodes and gradient_steps must be >= 1")
    scen = [normalise_scenario(s) for s in scenarios]
    learn = {
        k: v
        for k, v in off.learner_config.to_dict().items()
        if k in ("gamma", "lr", "batch_size", "tau", "loss", "huber_delta", "double_q")
    }
    behaviour = DQNOn(
        hidden=off.hidden,
        epsilon=float(ref_cfg.get("behaviour_epsilon", 0.3)),
        seed=seed + 101,
        reward=off.reward_kind,
        hindsight_rtts=off.hindsight_rtts,
        reward_unit=off.reward_unit,
        **learn,
    )
    behaviour.build(len(scen[0]["paths"]))
    rec = behaviour.recorder = ExperienceRecorder(
        len(scen[0]["paths"]), off.reward_kind, off.reward_unit
    )
    t0 = time.perf_counter()
    for ep in range(episodes):
        s = scen[ep % len(scen)]
        rec.begin_episode(s, seed + ep)
        download(behaviour, s, app, seed + ep)
    exp = rec.to_experience()
    if progress:
        info(
            f"reference: logged {episodes} episodes ({len(exp)} transitions) "
            f"[{time.perf_counter() - t0:.1f} s]; training DQN-Off {steps} steps"
        )
    out = off.train_offline(exp, steps, progress=False)
    out.update({"logged_episodes": float(episodes), "wall_s": time.perf_counter() - t0})
    return off, out


def reference_times(scheduler, scenario, app, seeds: Sequence[int]) -> list[float]:
    """Download times of ``scheduler`` on ``scenario`` for ``seeds``."""
    return [download(scheduler, scenario, app, s)["download_time_s"] for s in seeds]


# ---------------------------------------------------------------- bank
def bank_for(cfg, names, progress: bool = True):
    """The run's bank (:func:`experiment_bank`) when one of the agents
    ``names`` needs one (a FALCON config: a ``bank`` key), else None."""
    needs = any("bank" in agent_config(n) for n in names if n != REFERENCE)
    return experiment_bank(cfg, progress) if needs else None


def experiment_bank(cfg, progress: bool = True):
    """The run's meta-model bank (``bank=`` preset, default quick), built when missing."""
    from falcon.bank_job import ensure_bank
    from falcon.config import check_runtime, to_plain

    bank, _ = ensure_bank(
        to_plain(cfg.get("bank")) or "quick", check_runtime(cfg.get("runtime")), progress=progress
    )
    return bank


# ---------------------------------------------------------------- outputs
def format_table(header: Sequence[str], rows: Sequence[Sequence]) -> str:
    """A fixed-width text table (floats with 3 decimals, NaN as '-')."""

    def cell(v):
        if isinstance(v, float):
            return "-" if not math.isfinite(v) else f"{v:.3f}"
        return str(v)

    body = [[cell(v) for v in r] for r in rows]
    widths = [
        max(len(str(h)), *(len(r[i]) for r in body)) if body else len(str(h))
        for i, h in enumerate(header)
    ]
    lines = [
        "  ".join(str(h).rjust(w) for h, w in zip(header, widths)),
        "  ".join("-" * w for w in widths),
    ]
    lines += ["  ".join(v.rjust(w) for v, w in zip(r, widths)) for r in body]
    return "\n".join(lines) + "\n"


def _json_default(v):
    if isinstance(v, (np.floating, np.integer)):
        return v.item()
    if isinstance(v, np.ndarray):
        return v.tolist()
    return str(v)


def write_outputs(
    folder: Path, name: str, results: Mapping, table: str, table_file: str | None = None
) -> None:
    """``<name>.json`` (results) and the table (``table_file``, default
    ``<name>.txt``) in ``folder`` (the staged output folder: it appears whole
    or not at all)."""
    (folder / f"{name}.json").write_text(
        json.dumps(results, indent=2, default=_json_default, allow_nan=True) + "\n"
    )
    (folder / (table_file or f"{name}.txt")).write_text(table)


def publish(
    tracker,
    folder: Path,
    name: str,
    results: Mapping,
    table_fn,
    plot_fn,
    table_file: str | None = None,
) -> Mapping:
    """The end every experiment shares: its wall time (and the reference's
    median, when it has one) to MLflow, the results JSON and text table
    (``table_file``, default ``<name>.txt``), the plot ``<name>.png`` in
    ``folder``, the table on stdout."""
    metrics = {"wall_s": results["wall_s"]}
    ref = results.get("reference")
    if isinstance(ref, Mapping) and "median_time_s" in ref:
        metrics["reference/median_time_s"] = ref["median_time_s"]
    tracker.log_metrics(metrics)
    text = table_fn(results)
    write_outputs(folder, name, results, text, table_file)
    plot_fn(results, folder / f"{name}.png")
    print(text, end="")
    return results


def plot_series(
    path: Path,
    series: Mapping[str, tuple[Sequence[float], Sequence[float]]],
    *,
    xlabel: str,
    ylabel: str,
    title: str,
    logx: bool = False,
    ref_line: float | None = 1.0,
    xticks: Sequence | None = None,
    schedulers: bool = True,
) -> Path:
    """One line per series (NaN points dropped), a dashed reference line.
    ``schedulers``: the labels are scheduler names, drawn in their
    :mod:`baselines.palette` colours (else matplotlib's colour cycle)."""
    from baselines.mpl import use_agg

    use_agg()
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for label, (xs, ys) in series.items():
        pts = [(x, y) for x, y in zip(xs, ys) if y is not None and math.isfinite(y)]
        if pts:
            ax.plot(
                [p[0] for p in pts],
                [p[1] for p in pts],
                marker="o",
                label=label,
                color=color(label) if schedulers else None,
            )
    if ref_line is not None:
        ax.axhline(ref_line, color="grey", linestyle="--", linewidth=1)
    if logx:
        ax.set_xscale("log")
    if xticks is not None:
        ax.set_xticks(list(xticks))
        ax.set_xticklabels([str(x) for x in xticks])
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    report.save_figure(fig, path)
    return path


def run_scheduler_job(
    cfg, job: str, sec: Mapping, app: Mapping, run: Callable, table_fn, plot_fn
) -> dict:
    """The tracked job of an experiment over the agents ``sec["schedulers"]``:
    the run's bank when one of them needs it (:func:`bank_for`), the results
    of ``run(bank, progress, log)``, published (:func:`publish`) inside
    :func:`run_tracked` with the job's section, app and bank as parameters."""
    from falcon.config import to_plain

    progress = bool(cfg.get("progress", True))

    def body(tracker, folder):
        bank = bank_for(cfg, sec["schedulers"], progress)
        return publish(
            tracker, folder, job, run(bank, progress, tracker.log_metrics), table_fn, plot_fn
        )

    return run_tracked(cfg, job, {job: sec, "app": app, "bank": to_plain(cfg.get("bank"))}, body)


def run_tracked(cfg, job: str, params: Mapping, body: Callable) -> dict:
    """Run ``body(tracker, folder)`` inside an MLflow run (``tracking=``) with
    ``params`` logged, writing into a staged output folder (``output=``, else
    ``results/<job>/<time>-<run id>``) that is logged as the run's artifacts.
    ``body`` returns the results dict; it gets ``output`` and ``mlflow_run_id``."""
    from falcon.cli import OUTPUT_MARKER, staged_output
    from falcon.config import to_plain
    from falcon.experiment import output_dir
    from falcon.tracking import flatten, tracked_run

    tracking = to_plain(cfg.get("tracking")) or {"enabled": False}
    run_name = tracking.get("run_name") or job
    tags = {
        "falcon.job": job,
        "falcon.command": shlex.join(["python -m falcon.train", *sys.argv[1:]]),
    }
    with tracked_run(tracking, run_name=run_name, tags=tags) as tracker:
        tracker.log_params(flatten(dict(params)))
        out = output_dir(cfg, job, tracker.run_id)
        with staged_output(out) as tmp:
            results = body(tracker, tmp)
            results["mlflow_run_id"] = tracker.run_id
            (tmp / "config.json").write_text(
                json.dumps(dict(params), indent=2, default=_json_default) + "\n"
            )
            summary = {
                "job": job,
                "mlflow_run_id": tracker.run_id,
                "wall_s": results.get("wall_s"),
                "results": f"{job}.json",
            }
            (tmp / OUTPUT_MARKER).write_text(
                json.dumps(summary, indent=2, default=_json_default) + "\n"
            )
        tracker.log_artifacts(out)
    results["output"] = str(out)
    info(f"{job}: results in {out}")
    return results


def job_config(cfg, job: str):
    """``(cfg, section)``: the run's config, with its ``quick_variant``
    merged in when ``quick=true`` (the seconds-long variant of the job; it
    may add keys, e.g. per-agent overrides to an empty mapping), except
    what the command line set (``quick=true learnability.max_conditions=1``
    runs one condition), and the job's own section ``cfg.<job>`` as a plain dict."""
    from omegaconf import OmegaConf, open_dict

    from falcon.config import hydra_context, to_plain

    if cfg.get("quick"):
        variant = cfg.get("quick_variant")
        if variant is None:
            raise ConfigError(f"quick=true: the {job} config has no quick_variant")
        variant = without_keys(to_plain(variant), hydra_context()[1])
        with open_dict(cfg):
            cfg = OmegaConf.merge(cfg, variant)
    section = to_plain(cfg.get(job))
    if not isinstance(section, Mapping):
        raise ConfigError(
            f"{job}: the job's settings ({job}: ...) are missing; use experiment={job}"
        )
    return cfg, dict(section)


def without_keys(tree: Mapping, keys) -> dict:
    """A copy of the nested mapping ``tree`` without the node at each dotted
    path of ``keys`` (``a.b.c``: ``tree["a"]["b"]["c"]`` and all under it)."""
    out = copy.deepcopy(dict(tree))
    for key in keys:
        *parents, last = str(key).split(".")
        node = out
        for part in parents:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node.pop(last, None)
    return out


def check_schedulers(sec: Mapping, job: str) -> list[str]:
    """``sec["schedulers"]``: a non-empty list of distinct agent names."""
    names = sec.get("schedulers")
    if not isinstance(names, list) or not names or len(set(map(str, names))) != len(names):
        raise ConfigError(
            f"{job}.schedulers: expected a non-empty list of distinct agent names, got {names!r}"
        )
    return [str(n) for n in names]


def check_positive_int(cfg: Mapping, key: str, default: int | None = None, lo: int = 1) -> int:
    v = cfg.get(key, default)
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
        raise ConfigError(f"{key}: expected an integer >= {lo}, got {v!r}")
    return int(v)


def settings_record(sec: Mapping) -> dict:
    """An experiment's validated section as its results record it: a copy,
    with the runtime by name."""
    out = {k: copy.deepcopy(v) for k, v in sec.items() if k != "runtime"}
    out["runtime"] = sec["runtime"]["name"]
    return out


def mean_ci(values) -> tuple[float, float]:
    """Mean and the 95 % t-interval's half width (NaN with one value)."""
    v = np.asarray([x for x in values if x is not None and math.isfinite(x)], float)
    if not len(v):
        return math.nan, math.nan
    if len(v) < 2:
        return float(v.mean()), math.nan
    from scipy import stats

    return float(v.mean()), float(
        stats.t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / math.sqrt(len(v))
    )


__all__ = [
    "REFERENCE",
    "ranked_median",
    "relative_score",
    "paired_score",
    "log_bin_edges",
    "bin_of",
    "bin_centre",
    "with_conditions",
    "agent_config",
    "build_agent",
    "prepare",
    "download",
    "train_reference",
    "reference_times",
    "experiment_bank",
    "format_table",
    "write_outputs",
    "plot_series",
    "run_tracked",
    "check_positive_int",
    "check_schedulers",
    "offline_enabled",
    "job_config",
    "mean_ci",
    "settings_record",
]
