"""The learnability suite's scores and outputs (:mod:`falcon.experiments.learnability`):
per condition the ratios to the best rule, the suite score (geometric mean),
the MLflow metrics, the text table and the plot."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from baselines.palette import color
from falcon import report
from falcon.compare import compare_to_references
from falcon.experiments import common
from falcon.experiments.learnability_settings import BEST_FIXED, FIXED, METRIC, OVERHEAD
from falcon.experiments.oracle import (
    BEST_SINGLE,
    CROSSFIT,
    ORACLE,
    TRACE_ORACLE,
    captured,
    crossfit_best,
    label,
    per_seed_best,
)


# ---------------------------------------------------------------- scores
def _stats(runs: list[dict]) -> dict:
    """A scheduler's statistics on a condition: a download that did not finish
    ranks after every finished one (:func:`falcon.report.describe`, ``"last"``)."""
    return {
        METRIC: report.describe([r[METRIC] for r in runs], unfinished="last"),
        "timed_out": int(sum(r["timed_out"] > 0 for r in runs)),
        OVERHEAD: report.describe([r.get(OVERHEAD, 0.0) for r in runs])["median"],
    }


def _reference(values: list[float], overheads: list[float], chosen: list[str | None]) -> dict:
    """A per-seed reference's statistics (the oracle), with what it chose on each seed."""
    runs = [
        {METRIC: v, "timed_out": 0.0 if math.isfinite(v) else 1.0, OVERHEAD: o}
        for v, o in zip(values, overheads, strict=True)
    ]
    counts: dict[str, int] = {}
    for c in chosen:
        if c is not None:
            counts[c] = counts.get(c, 0) + 1
    return {
        **_stats(runs),
        "chosen": chosen,
        "chosen_counts": dict(sorted(counts.items(), key=lambda kv: -kv[1])),
    }


def _candidate_runs(out: dict[str, dict], sec: Mapping) -> dict:
    """``{label: runs}`` of every oracle candidate: the fixed split's shares, the
    family's other members and the rules."""
    runs = {label(s, None, False): r for s, r in out[FIXED]["shares"].items()}
    runs.update(out[ORACLE]["members"])
    runs.update({r: out[r]["runs"] for r in sec["rules"]})
    return runs


def oracle_choices(out: dict[str, dict], sec: Mapping) -> list[str | None]:
    """Per seed the label of the candidate the hindsight oracle takes (None: none finished)."""
    return per_seed_best({k: [x[METRIC] for x in r] for k, r in _candidate_runs(out, sec).items()})[
        1
    ]


def _oracle(out: dict[str, dict], sec: Mapping) -> dict[str, dict]:
    """The hindsight oracle, the cross-fitted policy and, where its runs are in
    ``out``, the trace-aware oracle (falcon.experiments.oracle) over the fixed
    split's shares, the family's other members and the rules."""
    runs = _candidate_runs(out, sec)
    times = {k: [x[METRIC] for x in r] for k, r in runs.items()}
    picks = {ORACLE: per_seed_best(times), CROSSFIT: crossfit_best(times)}
    refs = {}
    for name, (values, chosen) in picks.items():
        overheads = [
            runs[c][k].get(OVERHEAD, 0.0) if c is not None else 0.0 for k, c in enumerate(chosen)
        ]
        refs[name] = _reference(values, overheads, chosen)
    if TRACE_ORACLE in out:  # the oracle's choices, run again on fresh noise
        again = out[TRACE_ORACLE]["runs"]
        refs[TRACE_ORACLE] = _reference(
            [r[METRIC] for r in again],
            [r.get(OVERHEAD, 0.0) for r in again],
            refs[ORACLE]["chosen"],
        )
    for ref in refs.values():
        ref.update(wall_s=out[ORACLE]["wall_s"], candidates=len(runs))
    # every candidate's time per seed (null: did not finish), for references
    # chosen on another run's candidates (falcon.experiments.transfer)
    refs[ORACLE]["candidate_times_s"] = {
        k: report.describe(v, unfinished="last")["values"] for k, v in times.items()
    }
    return refs


def _ratio(median, best):
    return median / best if median is not None and best is not None and best > 0 else None


def geometric_mean(values: Sequence[float | None]) -> float | None:
    """exp(mean(log v)); None if any value is missing or not positive (or none is given)."""
    if not values or any(v is None or not v > 0 for v in values):
        return None
    return float(math.exp(sum(math.log(v) for v in values) / len(values)))


def score_condition(out: dict[str, dict], sec: Mapping) -> dict:
    """One condition's results from its jobs' outputs (``{scheduler: run_unit output}``)."""
    rules, learners = sec["rules"], scored(sec)
    scheds: dict[str, dict] = {}
    for name in rules + learners:
        scheds[name] = {**_stats(out[name]["runs"]), "wall_s": out[name]["wall_s"]}
        if "train" in out[name]:
            scheds[name]["train"] = out[name]["train"]
    shares = {s: _stats(runs) for s, runs in out[FIXED]["shares"].items()}
    medians = {s: st[METRIC]["median"] for s, st in shares.items()}
    ranked = [s for s in shares if medians[s] is not None]
    best_share = min(ranked, key=lambda s: medians[s]) if ranked else None
    fixed = shares[best_share] if best_share is not None else _stats([])
    scheds[BEST_FIXED] = {
        **fixed,
        "share": best_share,
        "wall_s": out[FIXED]["wall_s"],
        "shares": {
            str(s): {k: st[METRIC][k] for k in ("median", "p25", "p75", "values")}
            for s, st in shares.items()
        },
    }
    singles = {
        s: shares[s][METRIC]["median"]
        for s in (0.0, 1.0)
        if s in shares and shares[s][METRIC]["median"] is not None
    }
    single = min(singles, key=singles.get) if singles else None
    scheds[BEST_SINGLE] = {
        **(shares[single] if single is not None else _stats([])),
        "path": None if single is None else (0 if single == 1.0 else 1),
    }
    references = [BEST_SINGLE, BEST_FIXED]
    if ORACLE in out:
        oracles = _oracle(out, sec)
        scheds.update(oracles)
        references += list(oracles)
    finished = [r for r in rules if scheds[r][METRIC]["median"] is not None]
    best = min(finished, key=lambda r: scheds[r][METRIC]["median"]) if finished else None
    best_median = scheds[best][METRIC]["median"] if best is not None else None
    known = {
        n: st[METRIC]["median"] for n, st in scheds.items() if st[METRIC]["median"] is not None
    }
    best_known = min(known, key=known.get) if known else None
    known_median = known[best_known] if best_known is not None else None
    headroom = _ratio(best_median, known_median)
    has_headroom = (
        None
        if headroom is None
        else bool(known_median <= (1.0 - sec["headroom_margin"]) * best_median)
    )
    for st in scheds.values():
        st["ratio"] = _ratio(st[METRIC]["median"], best_median)
        st["ratio_best_known"] = _ratio(st[METRIC]["median"], known_median)
        # only where there is headroom: a share of a sliver of headroom says nothing
        st["headroom_captured"] = (
            captured(best_median, known_median, st[METRIC]["median"]) if has_headroom else None
        )
    rule_values = {r: scheds[r][METRIC]["values"] for r in rules}
    for n in learners:  # the ratio's 95 % bootstrap interval over the seeds (falcon.compare)
        scheds[n]["vs_best_rule"] = (
            compare_to_references(scheds[n][METRIC]["values"], rule_values) or None
        )
    minrtt = scheds["minrtt"][METRIC]["median"] if "minrtt" in scheds else None
    bound = (1.0 - sec["beat_margin"]) * minrtt if minrtt is not None else None
    rule_beats = None if bound is None or best_median is None else bool(best_median <= bound)
    learner_beats = None
    if rule_beats:
        learner_beats = {
            n: scheds[n][METRIC]["median"] is not None
            and bool(scheds[n][METRIC]["median"] <= bound)
            for n in learners
        }
    order = [*rules, *references, *learners]
    return {
        "best_rule": {"name": best, "median_s": best_median},
        "best_known": {"name": best_known, "median_s": known_median},
        "headroom": headroom,
        "has_headroom": has_headroom,
        "schedulers": {n: scheds[n] for n in order},
        "rule_beats_minrtt": rule_beats,
        "learner_beats_minrtt": learner_beats,
    }


def scored(sec: Mapping) -> list[str]:
    """The schedulers judged against the rules: the learners, then the deployed ones."""
    return [*sec["learners"], *sec.get("deployed", [])]


def references(sec: Mapping) -> list[str]:
    """The reference columns: the best single path, the best fixed split, the oracles (if run)."""
    oracle = sec.get("oracle") or {}
    return [
        BEST_SINGLE,
        BEST_FIXED,
        *([ORACLE, CROSSFIT] if oracle else []),
        *([TRACE_ORACLE] if oracle.get("resample") else []),
    ]


def _within(results: dict[str, dict], name: str, ratio: str, bound: float) -> dict:
    """The conditions where scheduler ``name``'s ``ratio`` (``ratio`` or
    ``ratio_best_known``) is at most ``bound``: their count, of how many, names."""
    ok = [
        c
        for c, res in results.items()
        if (r := res["schedulers"][name][ratio]) is not None and r <= bound
    ]
    return {"count": len(ok), "of": len(results), "conditions": ok}


def suite_summary(results: dict[str, dict], sec: Mapping) -> dict:
    """Suite scores (against the best rule and the best known), within-``within`` counts,
    the headroom summary and the beats-minRTT summary."""
    names = [*sec["rules"], *references(sec), *scored(sec)]
    conds = list(results)
    score = {
        n: geometric_mean([results[c]["schedulers"][n]["ratio"] for c in conds]) for n in names
    }
    score_known = {
        n: geometric_mean([results[c]["schedulers"][n]["ratio_best_known"] for c in conds])
        for n in names
    }
    room = [c for c in conds if results[c]["has_headroom"]]
    capture = {}
    for n in names:
        per = {c: results[c]["schedulers"][n]["headroom_captured"] for c in room}
        vals = [v for v in per.values() if v is not None]
        capture[n] = {
            "mean": float(np.mean(vals)) if vals and len(vals) == len(per) else None,
            "conditions": per,
        }
    within = {n: _within(results, n, "ratio", sec["within"]) for n in scored(sec)}
    behind = {}
    for n in scored(sec):
        # resolvably more than `within` behind: the interval's lower end is above it
        out = [
            c
            for c in conds
            if (v := results[c]["schedulers"][n].get("vs_best_rule"))
            and v["ratio_ci"][0] > sec["within"]
        ]
        behind[n] = {"count": len(out), "of": len(conds), "conditions": out}
    # the reach of the best known: the causal references next to the scored ones. The
    # best known is mostly the hindsight oracle, whose lead over the trace-aware
    # oracle is luck; how often the trace-aware oracle (which knows each seed's
    # network) and the cross-fitted policy get within `within` of it says what
    # a count of the scored schedulers can be
    reach = [n for n in (CROSSFIT, TRACE_ORACLE) if n in references(sec)]
    within_known = {
        n: _within(results, n, "ratio_best_known", sec["within"]) for n in [*scored(sec), *reach]
    }
    rule_conds = [c for c in conds if results[c]["rule_beats_minrtt"]]
    beats = {}
    for n in scored(sec):
        ok = [c for c in rule_conds if results[c]["learner_beats_minrtt"][n]]
        beats[n] = {"count": len(ok), "of": len(rule_conds), "conditions": ok}
    return {
        "suite_score": score,
        "suite_score_best_known": score_known,
        "headroom": {
            "margin": sec["headroom_margin"],
            "count": len(room),
            "of": len(conds),
            "conditions": room,
            "geometric_mean": geometric_mean([results[c]["headroom"] for c in conds]),
        },
        "headroom_captured": capture,
        "within_best_rule": within,
        "within_best_known": within_known,
        "resolvably_behind": behind,
        "beats_minrtt": {"rule_conditions": rule_conds, "learners": beats},
    }


def flat_metrics(results: dict) -> dict[str, float]:
    """MLflow metrics: suite scores, per-condition medians and ratios, within counts."""
    out = {f"suite_score/{n}": v for n, v in results["suite_score"].items() if v is not None}
    out.update(
        {
            f"suite_score_best_known/{n}": v
            for n, v in results["suite_score_best_known"].items()
            if v is not None
        }
    )
    out["headroom_conditions"] = float(results["headroom"]["count"])
    for c, res in results["results"].items():
        if res["headroom"] is not None:
            out[f"{c}/headroom"] = res["headroom"]
        for n, st in res["schedulers"].items():
            if st[METRIC]["median"] is not None:
                out[f"{c}/{n}/median"] = st[METRIC]["median"]
            if st["ratio"] is not None:
                out[f"{c}/{n}/ratio"] = st["ratio"]
    out.update({f"within/{n}": float(w["count"]) for n, w in results["within_best_rule"].items()})
    out.update(
        {
            f"within_best_known/{n}": float(w["count"])
            for n, w in results.get("within_best_known", {}).items()
        }
    )
    out.update(
        {
            f"resolvably_behind/{n}": float(b["count"])
            for n, b in results.get("resolvably_behind", {}).items()
        }
    )
    return out


# ---------------------------------------------------------------- outputs
def _val(x) -> float:
    return math.nan if x is None else float(x)


def _fmt(x) -> str:
    return "-" if x is None else f"{x:.3f}"


def _known_cell(st: dict) -> str:
    cell = _fmt(st["ratio_best_known"])
    if st["headroom_captured"] is not None:
        cell += f" [{st['headroom_captured']:.2f}]"
    if st.get(OVERHEAD):
        cell += f" {{{st[OVERHEAD]:.2f}}}"
    return cell


def _legend(s: Mapping) -> str:
    """The first table's legend: what a ratio is, the rules and the references of the run ``s`` (settings)."""
    split = f" ({s['split']} list)" if s.get("split") else ""
    return (
        f"ratio = median download time / the best rule's median on the condition{split} ({len(s['seeds'])} "
        f"runs, seeds {s['seeds'][0]}..{s['seeds'][-1]}); best s = that median [s]; suite score = geometric "
        "mean of the ratios over the conditions; rules: "
        + ", ".join(s["rules"])
        + "; references (not "
        f"rules): {BEST_SINGLE}, {BEST_FIXED} (the best of {len(s['fixed_split_shares'])} fixed shares on "
        "path 0)"
        + (
            f", {ORACLE} (per seed the fastest of a policy family run on that seed), {CROSSFIT} (per "
            "seed the member with the lowest median on the other half of the seeds)"
            if s.get("oracle")
            else ""
        )
        + (
            f", {TRACE_ORACLE} (per seed the {ORACLE}'s choice run again on the seed's trace segments "
            "with fresh delay and loss draws)"
            if (s.get("oracle") or {}).get("resample")
            else ""
        )
        + "; best known = the lowest median of all; headroom = "
        "best rule / best known\n"
    )


def table(results: dict) -> str:
    names = results["schedulers"]
    s = results["settings"]
    head = [
        "condition",
        "best rule",
        "best s",
        *names,
        "split share",
        "best known",
        "known s",
        "headroom",
    ]
    rows = []
    for c, res in results["results"].items():
        st = res["schedulers"]
        share = st[BEST_FIXED]["share"]
        rows.append(
            [
                c,
                res["best_rule"]["name"] or "-",
                _val(res["best_rule"]["median_s"]),
                *(_val(st[n]["ratio"]) for n in names),
                "-" if share is None else f"{share:g}",
                res["best_known"]["name"] or "-",
                _val(res["best_known"]["median_s"]),
                _val(res["headroom"]),
            ]
        )
    rows.append(
        [
            "suite score",
            "",
            "",
            *(_val(results["suite_score"][n]) for n in names),
            "",
            "",
            "",
            _val(results["headroom"]["geometric_mean"]),
        ]
    )
    text = _legend(s)
    text += common.format_table(head, rows)
    # against the best known: ratio, share of the headroom captured, redundancy overhead
    head2 = ["condition", *names]
    rows2 = [
        [c, *(_known_cell(res["schedulers"][n]) for n in names)]
        for c, res in results["results"].items()
    ]
    rows2.append(["suite score", *(_fmt(results["suite_score_best_known"][n]) for n in names)])
    cap = results["headroom_captured"]
    rows2.append(["captured", *(_fmt(cap[n]["mean"]) for n in names)])
    text += (
        "\nagainst the best known: ratio [share of the headroom captured] {redundancy overhead: re-injected "
        "bytes / file size, median}; captured = mean share over the conditions with headroom\n"
    )
    text += common.format_table(head2, rows2)
    h = results["headroom"]
    lines = [
        f"headroom: the best known is at least {h['margin'] * 100:g} % below the best rule on {h['count']}/"
        f"{h['of']} conditions" + (f" ({', '.join(h['conditions'])})" if h["conditions"] else "")
    ]
    margin = f"{s['beat_margin'] * 100:g} %"
    lines += [
        f"{n}: within {(s['within'] - 1) * 100:g} % of the best rule on {w['count']}/{w['of']} conditions"
        + (f" ({', '.join(w['conditions'])})" if w["conditions"] else "")
        for n, w in results["within_best_rule"].items()
    ]
    lines += [
        f"{n}: within {(s['within'] - 1) * 100:g} % of the best known on {w['count']}/{w['of']} conditions"
        + (f" ({', '.join(w['conditions'])})" if w["conditions"] else "")
        for n, w in results.get("within_best_known", {}).items()
    ]
    for n, b in results.get("resolvably_behind", {}).items():
        lines.append(
            f"{n}: the 95 % interval of its ratio lies above {s['within']:g} on {b['count']}/{b['of']} "
            "conditions" + (f" ({', '.join(b['conditions'])})" if b["conditions"] else "")
        )
    rc = results["beats_minrtt"]["rule_conditions"]
    lines.append(
        f"a rule beats minRTT by >= {margin} on {len(rc)} conditions"
        + (f": {', '.join(rc)}" if rc else "")
    )
    for n, b in results["beats_minrtt"]["learners"].items():
        lines.append(
            f"  {n} beats minRTT by >= {margin} on {b['count']}/{b['of']} of them"
            + (f" ({', '.join(b['conditions'])})" if b["conditions"] else "")
        )
    return text + "\n" + "\n".join(lines) + "\n"


MARKERS = ("o", "s", "^", "v", "D", "P", "X", "*", "<", ">", "h", "p", "d", "8")


def plot(results: dict, path) -> Path:
    """Ratio to the best rule per condition (log scale), one marker style per scheduler."""
    from baselines.mpl import use_agg

    use_agg()
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    conds = list(results["results"])
    names = results["schedulers"]
    fig, ax = plt.subplots(figsize=(max(6.4, 0.75 * len(conds) + 3.0), 4.8))
    x = np.arange(len(conds), dtype=float)
    spread = 0.6 / max(1, len(names) - 1)
    for j, n in enumerate(names):
        ys = [_val(results["results"][c]["schedulers"][n]["ratio"]) for c in conds]
        pts = [
            (xi + (j - (len(names) - 1) / 2) * spread, y)
            for xi, y in zip(x, ys)
            if math.isfinite(y)
        ]
        if pts:
            score = results["suite_score"][n]
            label = f"{n} (score {score:.3f})" if score is not None else n
            ax.plot(
                [p[0] for p in pts],
                [p[1] for p in pts],
                linestyle="none",
                marker=MARKERS[j % len(MARKERS)],
                markersize=6,
                label=label,
                color=color(n),
                fillstyle="none" if n in results["settings"]["rules"] else "full",
            )
    known = [(xi, 1.0 / h) for xi, c in zip(x, conds) if (h := results["results"][c]["headroom"])]
    if known:  # the best known median on the same scale: 1 / headroom
        ax.plot(
            [k[0] for k in known],
            [k[1] for k in known],
            linestyle="none",
            marker="_",
            markersize=22,
            markeredgewidth=2,
            color="black",
            label="best known",
        )
    ax.axhline(1.0, color="grey", linestyle="-", linewidth=1)
    ax.axhline(results["settings"]["within"], color="grey", linestyle="--", linewidth=1)
    margin = results["settings"].get("headroom_margin")
    if margin:
        ax.axhline(1.0 - margin, color="grey", linestyle=":", linewidth=1)
    ax.set_yscale("log")
    lo, hi = ax.get_ylim()
    grid = (
        (0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0)
        if hi / lo < 4
        else (0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0)
    )
    ticks = [t for t in grid if lo <= t <= hi]
    ax.set_yticks(ticks)
    ax.yaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
    ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xticks(x)
    ax.set_xticklabels(conds, rotation=45, ha="right", fontsize=8)
    ax.set_ylabel("median download time / best rule's median")
    split = results["settings"].get("split")
    ax.set_title(
        "Learnability: ratio to the best rule per condition" + (f" ({split} list)" if split else "")
    )
    ax.grid(alpha=0.3, axis="y", which="both")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    report.save_figure(fig, path)
    return Path(path)


__all__ = [
    "geometric_mean",
    "score_condition",
    "scored",
    "references",
    "suite_summary",
    "flat_metrics",
    "table",
    "plot",
]
