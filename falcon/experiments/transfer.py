"""What a choice learned on one condition list's files is worth on another's.

The learnability suite's references choose among the same candidates (the
rules, the fixed shares, the ``split_threshold`` family) with more and more
knowledge: per condition on the condition's own seeds (the cross-fitted
policy), per seed knowing its network (the trace-aware oracle). A learner
trained on the train split and deployed on the validation or test split
knows neither: what it can have learned is which candidate wins on the
train split's conditions. The lists apply the same pairing recipes to
different trace files (``configs/conditions/``: the same condition names),
so two references bound what such a learner can carry over:

* **twin policy**: on each target condition, the candidate with the lowest
  median on the source condition of the same name (its *twin*), run on the
  target's seeds. It recognises the recipe perfectly and holds the policy
  that won on the source files. A condition without a twin has none.
* **single policy**: on every target condition, the one candidate with the
  lowest suite score over the source list (the geometric mean of its median
  / the source condition's best rule median).

Both come from two results files of the suite (``learnability.json`` of
``python -m falcon.train experiment=learnability``, each run with
``learnability.oracle``, whose entry records every candidate's time per
seed), so nothing runs again::

    python -m falcon.experiments.transfer results/train/<run> results/train/<run2> -o OUT

writes ``OUT/transfer.json`` and ``OUT/transfer.txt`` (per condition and
suite scores beside the target's own references). The source may not be
the test split (its files are for reporting only) nor the target's split
(a choice made on the target's files is the cross-fitted policy's job),
and the two runs may share no trace file and no whole condition.

``transfer.json`` (times in s; null where undefined)::

    {"job": "transfer", "source": {"path", "sha256", "split", "seeds": [int]},
     "target": {"path", "sha256", "split", "seeds": [int]}, "within": float,
     "single": str,                                   # the single policy's candidate
     "single_source_score": float | null,             # its suite score on the source
     "target_best_rule": str | null,                  # the rule of the lowest suite score on the target
     "conditions": {<target condition>: {
         "best_rule_s": float, "best_known_s": float,
         "twin": {"candidate": str, "source_median_s": float, "median_s": float | null,
                  "ratio": float | null, "ratio_best_known": float | null, "within": bool} | null,
         "single": {the same but "source_median_s"}}},
     "suite": {"twin_policy" | "single_policy" | <target reference or rule>:
               {"score_best_rule": float | null, "score_best_known": float | null,
                "within_best_known": int, "conditions": int}}}

The target's own entries in ``suite`` (the best single rule over the list,
the best fixed split, the cross-fitted policy, the trace-aware oracle,
every scored scheduler) are scored over the same conditions (those with a
twin) so that the rows compare.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from envs.errors import ConfigError
from falcon import report
from falcon.experiments.learnability_report import geometric_mean
from falcon.experiments.learnability_settings import METRIC
from falcon.experiments.oracle import BEST_SINGLE, ORACLE

TWIN, SINGLE = "twin_policy", "single_policy"
#: the split whose files are for reporting only: never a source
REPORTING_SPLIT = "test"


def load_run(path: str | Path) -> tuple[dict, Path]:
    """A learnability results file (``learnability.json`` or its folder), checked
    to hold every candidate's times; ``(results, file)``."""
    p = Path(path)
    f = p / "learnability.json" if p.is_dir() else p
    if not f.is_file():
        raise ConfigError(f"transfer: {path}: no learnability.json there")
    try:
        run = json.loads(f.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"transfer: {f}: not a JSON file ({e})") from None
    if not isinstance(run, dict) or run.get("job") != "learnability":
        raise ConfigError(f"transfer: {f}: not a learnability results file")
    for name, res in run["results"].items():
        oracle = res["schedulers"].get(ORACLE)
        if oracle is None or "candidate_times_s" not in oracle:
            raise ConfigError(
                f"transfer: {f}: condition {name!r} has no candidate times (run the suite "
                f"with learnability.oracle set, on this version)"
            )
    return run, f


def _median(values: Sequence[float | None]) -> float:
    """The median, an unfinished run slower than every finished one (inf where
    the median is unfinished)."""
    m = report.describe(values, unfinished="last")["median"]
    return math.inf if m is None else float(m)


def _candidates(run: Mapping, condition: str) -> dict[str, list]:
    return run["results"][condition]["schedulers"][ORACLE]["candidate_times_s"]


def twin_choices(source: Mapping) -> dict[str, tuple[str, float]]:
    """Per source condition, ``(candidate, its median)``: the lowest median (first in order on ties)."""
    out = {}
    for name in source["results"]:
        medians = {k: _median(v) for k, v in _candidates(source, name).items()}
        best = min(medians, key=lambda k: medians[k])
        out[name] = (best, medians[best])
    return out


def single_choice(source: Mapping) -> tuple[str, float]:
    """``(candidate, suite score)``: the candidate of the lowest geometric mean,
    over the source's conditions, of its median / the condition's best rule
    median (first in order on ties; inf where it did not finish a median)."""
    logs: dict[str, float] = {}
    for name, res in source["results"].items():
        best_rule = res["best_rule"]["median_s"]
        for k, v in _candidates(source, name).items():
            m = _median(v)
            term = math.log(m / best_rule) if math.isfinite(m) and best_rule else math.inf
            logs[k] = logs.get(k, 0.0) + term
    n = len(source["results"])
    best = min(logs, key=lambda k: logs[k])
    return best, math.exp(logs[best] / n) if math.isfinite(logs[best]) else math.inf


def _scored(m: float | None, best_rule: float, best_known: float, within: float) -> dict:
    """A median [s] (None: unfinished) against a target condition's best rule and best known."""
    return {
        "median_s": m,
        "ratio": None if m is None else m / best_rule,
        "ratio_best_known": None if m is None else m / best_known,
        "within": m is not None and m <= within * best_known,
    }


def _candidate_scored(res: Mapping, pick: str, within: float) -> dict:
    """The candidate ``pick`` on a target condition's results ``res``."""
    values = res["schedulers"][ORACLE]["candidate_times_s"][pick]
    m = report.describe(values, unfinished="last")["median"]
    scored = _scored(m, res["best_rule"]["median_s"], res["best_known"]["median_s"], within)
    return {"candidate": pick, **scored}


def _suite_row(entries: Sequence[dict]) -> dict:
    return {
        "score_best_rule": geometric_mean([e["ratio"] for e in entries]),
        "score_best_known": geometric_mean([e["ratio_best_known"] for e in entries]),
        "within_best_known": int(sum(bool(e["within"]) for e in entries)),
        "conditions": len(entries),
    }


def _side(run: Mapping, path: Path) -> dict:
    """What ``transfer.json`` records of one input run."""
    return {
        "path": str(path),
        "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "split": run["settings"].get("split"),
        "seeds": run["settings"].get("seeds"),
    }


def _shared_networks(source: Mapping, target: Mapping) -> list[str]:
    """The trace files both runs' conditions use, and the target's conditions run
    in the source too (the same name, scenario and app)."""
    from falcon.experiments.condition_lists import trace_files

    def files(run):
        return {f for c in run["conditions"] for _, f in trace_files(c["scenario"])}

    same = {c["name"]: (c["scenario"], c["app"]) for c in source["conditions"]}
    repeated = [
        f"condition {c['name']}"
        for c in target["conditions"]
        if same.get(c["name"]) == (c["scenario"], c["app"])
    ]
    return sorted(files(source) & files(target)) + repeated


def _check_pair(source: Mapping, target: Mapping, src: Path, tgt: Path) -> None:
    s_split, t_split = source["settings"].get("split"), target["settings"].get("split")
    if s_split == REPORTING_SPLIT:
        raise ConfigError(
            f"transfer: the source {src} ran the {REPORTING_SPLIT} list, whose files are for "
            "reporting only; choose on the train (or validation) list"
        )
    if s_split is not None and s_split == t_split:
        raise ConfigError(
            f"transfer: source and target both ran the {s_split} list; a choice made on the "
            "target's own files is the cross-fitted policy (learnability.json's crossfit_policy)"
        )
    shared = _shared_networks(source, target)
    if shared:
        raise ConfigError(
            f"transfer: {tgt} shares {shared[:3]} with the source {src}; a choice made on "
            "the target's own networks is not a transfer"
        )
    first = next(iter(source["results"]))
    labels = set(_candidates(source, first))
    for run, path in ((source, src), (target, tgt)):
        for name in run["results"]:
            other = set(_candidates(run, name))
            if other != labels:
                diff = sorted(labels.symmetric_difference(other))
                raise ConfigError(
                    f"transfer: {path}, condition {name!r}: its candidates differ from the "
                    f"source's first condition's by {diff[:4]} (run both with the same rules, "
                    "fixed_split_shares and oracle settings)"
                )


def transfer(source_path: str | Path, target_path: str | Path) -> dict:
    """The transfer references of the source run on the target run (module docstring)."""
    source, src = load_run(source_path)
    target, tgt = load_run(target_path)
    _check_pair(source, target, src, tgt)
    within = float(target["settings"]["within"])
    twins = twin_choices(source)
    single, single_score = single_choice(source)
    conditions: dict[str, dict] = {}
    for name, res in target["results"].items():
        entry: dict = {
            "best_rule_s": res["best_rule"]["median_s"],
            "best_known_s": res["best_known"]["median_s"],
            "twin": None,
        }
        if name in twins:
            pick, source_median = twins[name]
            entry["twin"] = {
                **_candidate_scored(res, pick, within),
                "source_median_s": source_median if math.isfinite(source_median) else None,
            }
        entry["single"] = _candidate_scored(res, single, within)
        conditions[name] = entry
    paired = [n for n, e in conditions.items() if e["twin"] is not None]
    suite = {
        TWIN: _suite_row([conditions[n]["twin"] for n in paired]),
        SINGLE: _suite_row([conditions[n]["single"] for n in paired]),
    }
    best_rule_name = _best_single_rule(target)
    for name in _target_rows(target, best_rule_name):
        results = [target["results"][n] for n in paired]
        suite[name] = _suite_row(
            [
                _scored(
                    r["schedulers"][name][METRIC]["median"],
                    r["best_rule"]["median_s"],
                    r["best_known"]["median_s"],
                    within,
                )
                for r in results
            ]
        )
    return {
        "job": "transfer",
        "source": _side(source, src),
        "target": _side(target, tgt),
        "within": within,
        "single": single,
        "single_source_score": single_score if math.isfinite(single_score) else None,
        "target_best_rule": best_rule_name,
        "conditions": conditions,
        "suite": suite,
    }


def _target_rows(target: Mapping, best_rule: str | None) -> list[str]:
    """The target's rows beside the transfer references: ``best_rule`` (the rule of
    the lowest suite score over its list), then its references (not the best single
    path) and scored schedulers present on every condition, in its order."""
    rules = target["settings"]["rules"]
    others = [
        n
        for n in target["schedulers"]
        if n not in rules
        and n != BEST_SINGLE
        and all(n in r["schedulers"] for r in target["results"].values())
    ]
    return ([best_rule] if best_rule else []) + others


def _best_single_rule(target: Mapping) -> str | None:
    """The rule of the lowest suite score over the target's list (its row in ``suite``)."""
    scores = {r: target["suite_score"].get(r) for r in target["settings"]["rules"]}
    ranked = [r for r, s in scores.items() if s is not None]
    return min(ranked, key=lambda r: scores[r]) if ranked else None


def table(result: Mapping) -> str:
    """``transfer.txt``: per condition the two choices, then the suite rows."""
    f = lambda x: "-" if x is None else f"{x:.3f}"  # noqa: E731
    lines = [
        f"source: {result['source']['path']} ({result['source']['split']})",
        f"target: {result['target']['path']} ({result['target']['split']})",
        f"single policy: {result['single']}",
        "",
        f"{'condition':28s} {'twin candidate':44s} {'x best rule':>11s} {'x best known':>12s}"
        f" {'single':>8s}",
    ]
    for name, e in result["conditions"].items():
        t = e["twin"]
        lines.append(
            f"{name:28s} {(t['candidate'] if t else '(no twin)'):44s} "
            f"{f(t['ratio'] if t else None):>11s} {f(t['ratio_best_known'] if t else None):>12s}"
            f" {f(e['single']['ratio']):>8s}"
        )
    lines += [
        "",
        f"{'over the conditions with a twin':36s} {'x best rule':>11s} "
        f"{'x best known':>12s} {'within':>7s}",
    ]
    for name, row in result["suite"].items():
        if name == result["target_best_rule"]:
            name = f"{name} (best rule over the list)"
        lines.append(
            f"{name:36s} {f(row['score_best_rule']):>11s} {f(row['score_best_known']):>12s}"
            f" {row['within_best_known']:>3d} / {row['conditions']}"
        )
    return "\n".join(lines) + "\n"


def write(result: Mapping, out_dir: str | Path) -> Path:
    """``out_dir/transfer.json`` and ``transfer.txt``, each written whole or not at all."""
    from baselines.dqn.files import atomic_path

    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"transfer: -o {out}: exists and is not a folder")
    out.mkdir(parents=True, exist_ok=True)
    for name, text in (
        ("transfer.json", json.dumps(result, indent=1, allow_nan=False) + "\n"),
        ("transfer.txt", table(result)),
    ):
        with atomic_path(out / name) as tmp:
            Path(tmp).write_text(text)
    return out / "transfer.json"


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        prog="python -m falcon.experiments.transfer",
        description="What a choice made on one learnability run's list is worth on another's.",
    )
    ap.add_argument("source", help="learnability.json (or its folder) the choices are made on")
    ap.add_argument("target", help="learnability.json (or its folder) they are scored on")
    ap.add_argument(
        "-o", "--output", required=True, help="folder of transfer.json and transfer.txt"
    )
    args = ap.parse_args(argv)
    try:
        path = write(transfer(args.source, args.target), args.output)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    print(path.with_name("transfer.txt").read_text(), end="")
    print(f"transfer: {path}")


if __name__ == "__main__":
    main()


__all__ = [
    "TWIN",
    "SINGLE",
    "REPORTING_SPLIT",
    "load_run",
    "twin_choices",
    "single_choice",
    "transfer",
    "table",
    "write",
    "main",
]
