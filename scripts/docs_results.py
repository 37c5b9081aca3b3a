"""The results pages of the documentation site, and the README's results block,
from the jobs' JSON (no figure is typed by hand).

- ``docs/results/main.md``: the main job (``make run``) from
  ``docs/main/summary.json``, a copy of that job's ``summary.json``;
- ``docs/results/reproduction.md``: the reproduction report from
  ``docs/reproduction/report.json`` (``falcon.reproduce.render``);
- ``docs/results/fidelity.md``: the replay-fidelity table from
  ``docs/fidelity/fidelity.json`` (``falcon.deploy.fidelity_table``);
- ``docs/results/adaptation.md``: the convergence and stress experiments from
  ``docs/adaptation/convergence.json`` and ``stress.json``, their results
  without the per-download records (``--take`` makes them from a run's);
- ``docs/results/speed.md``: the emulator benchmark's report kept in
  ``docs/speed/emulator_speed.json`` (``python -m benchmarks.emulator_speed
  --out docs/speed/emulator_speed.json``): its targets, every workload on both
  cores, and the scaling rows.

Each page names its JSON and the commit and date git last recorded for it.
The README's block between ``<!-- results:main begin -->`` and
``<!-- results:main end -->`` is the main job's table of medians::

    python scripts/docs_results.py docs/results       # the pages (make docs)
    python scripts/docs_results.py --readme README.md # rewrite the README's block
    python scripts/docs_results.py --take results/convergence/<run>/convergence.json results/stress/<run>/stress.json
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a plain script from a checkout (benchmarks/)
    sys.path.insert(0, str(ROOT))
MAIN_JSON = ROOT / "docs/main/summary.json"
REPORT_JSON = ROOT / "docs/reproduction/report.json"
FIDELITY_JSON = ROOT / "docs/fidelity/fidelity.json"
ADAPTATION = {job: ROOT / f"docs/adaptation/{job}.json" for job in ("convergence", "stress")}
SPEED_JSON = ROOT / "docs/speed/emulator_speed.json"
#: what an adaptation JSON keeps of a run's results (the records are left out)
KEEP = {
    "convergence": ("job", "settings", "reference", "start_scores", "curves", "packets_to_target"),
    "stress": ("job", "settings", "reference", "scores"),
}
BEGIN, END = "<!-- results:main begin -->", "<!-- results:main end -->"
#: display names of the main job's schedulers and scenarios
NAMES = {"falcon": "FALCON", "minrtt": "minRTT", "blest": "BLEST", "ecf": "ECF", "rr": "RR"}
SCENARIOS = {
    "static_4g_5g": "static 4G + 5G",
    "static_4g_wlan": "static 4G + WLAN",
    "static_5g_wlan": "static 5G + WLAN",
    "mobile_5g_5g": "mobile 5G + 5G",
}


def provenance(path: Path) -> str:
    """Where a JSON comes from: its last commit and date, or its file date."""
    rel = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    try:
        log = subprocess.run(
            ["git", "log", "-1", "--format=%h %cs", "--", str(rel)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        log = ""
    if log:
        commit, date = log.split()
        return f"Generated from `{rel}`, last committed in {commit} on {date}"
    mtime = datetime.fromtimestamp(path.stat().st_mtime, UTC).strftime("%Y-%m-%d")
    return f"Generated from `{rel}` (not committed; modified {mtime})"


def load(path: Path) -> dict:
    """A results JSON, with a one-line error naming the file when it is unusable."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise SystemExit(f"error: {path}: cannot read results JSON ({e})") from None


def _name(s: str) -> str:
    return NAMES.get(s, s)


def main_table(summary: Mapping) -> list[str]:
    """The README's table: median download time [s] per scenario and
    scheduler, and the first scheduler's median over the best other's."""
    metric = summary["comparison_metric"]
    app = summary["apps"][0]
    scheds = summary["schedulers"]
    head = ["scenario", *(_name(s) for s in scheds), f"{_name(scheds[0])} / best other"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for sc in summary["scenarios"]:
        res = summary["results"][sc][app]
        cmp = summary["comparison"][sc][app][scheds[0]]
        cells = [f"{res[s][metric]['median']:.4g}" for s in scheds]
        ratio = f"{cmp['ratio']:.3f}"
        out.append(f"| {SCENARIOS.get(sc, sc)} | {' | '.join(cells)} | {ratio} |")
    return out


def readme_block(summary: Mapping) -> str:
    """The README's results block, markers included."""
    intro = (
        f"Median `{summary['comparison_metric']}` over {summary['runs']} seeds, "
        f"app `{summary['apps'][0]}` (the main job's `summary.json`, copied to "
        "`docs/main/summary.json`; `python scripts/docs_results.py --readme README.md` "
        "rewrites this table):"
    )
    return "\n".join([BEGIN, intro, "", *main_table(summary), END])


def rewrite_readme(readme: Path, summary: Mapping) -> None:
    """Replace the README's results block with the one of ``summary``."""
    text = readme.read_text()
    if text.count(BEGIN) != 1 or text.count(END) != 1:
        raise SystemExit(f"error: {readme}: needs exactly one {BEGIN} ... {END} block")
    head, rest = text.split(BEGIN)
    _, tail = rest.split(END)
    write(readme, head + readme_block(summary) + tail)


def main_page(summary: Mapping) -> str:
    """The main job's page: per scenario, every scheduler's statistics and
    its comparison with the best other one (95 % bootstrap intervals)."""
    metric = summary["comparison_metric"]
    out = [
        "# The main job",
        "",
        f"{provenance(MAIN_JSON)}; job `{summary['job']}`, {summary['runs']} seeds "
        f"({summary['seeds'][0]}..{summary['seeds'][-1]}), episodes' wall time "
        f"{summary['episodes_wall_s']:.1f} s. Produced by `make run` (`python -m falcon.train`; "
        "copy its `summary.json` here and run `python scripts/docs_results.py --readme "
        "README.md` to refresh). The columns: [summary.json](../reference/formats/summary_json.md).",
        "",
    ]
    for sc in summary["scenarios"]:
        for app in summary["apps"]:
            out += [
                f"## {SCENARIOS.get(sc, sc)}, app `{app}`",
                "",
                f"| scheduler | {metric} median [p25, p75] | goodput_mbps median "
                "| median / best other's [95 % CI] | paired [95 % CI] |",
                "|---|---|---|---|---|",
            ]
            for s in summary["schedulers"]:
                r = summary["results"][sc][app][s]
                c = summary["comparison"][sc][app][s]
                m, g = r[metric], r["goodput_mbps"]
                out.append(
                    f"| {_name(s)} | {m['median']:.4g} [{m['p25']:.4g}, {m['p75']:.4g}] "
                    f"| {g['median']:.4g} | {c['ratio']:.3f} [{c['ratio_ci'][0]:.3f}, "
                    f"{c['ratio_ci'][1]:.3f}] vs {_name(c['best_other'])} "
                    f"| {c['paired']:.3f} [{c['paired_ci'][0]:.3f}, {c['paired_ci'][1]:.3f}] |"
                )
            out.append("")
    return "\n".join(out)


def reproduction_page(report: Mapping) -> str:
    """The reproduction report rendered by the project's own renderer; its
    figures are the committed ones beside ``report.json``."""
    from falcon.reproduce.render import markdown

    text = markdown(report).replace("](figures/", "](../reproduction/figures/")
    title, _, body = text.partition("\n")
    return f"{title}\n\n{provenance(REPORT_JSON)}.\n{body}"


def fidelity_page(result: Mapping) -> str:
    """The replay-fidelity table rendered by ``falcon.deploy.fidelity_table``."""
    from falcon.deploy.fidelity_table import render

    title, _, body = render(result).partition("\n")
    return f"{title}\n\n{provenance(FIDELITY_JSON)}.\n{body}"


def take(path: Path) -> Path:
    """Copy what :data:`KEEP` names of a convergence or stress run's JSON to
    ``docs/adaptation/<job>.json`` (the reference's per-download times left out too)."""
    res = load(path)
    job = res.get("job")
    if job not in KEEP:
        raise SystemExit(f"error: {path}: not a convergence or stress result (job {job!r})")
    out = {k: res[k] for k in KEEP[job] if k in res}
    out["reference"] = {k: v for k, v in out.get("reference", {}).items() if k != "times"}
    write(ADAPTATION[job], json.dumps(out, indent=1))
    return ADAPTATION[job]


def _score(x) -> str:
    return "-" if x is None or x != x else f"{x:.3f}"


def adaptation_page(conv: Mapping | None, stress: Mapping | None) -> str:
    """Convergence (score per bin of online packets on B, packets to the target)
    and stress (score per change interval), each against its reference."""
    lines = ["# Adaptation: convergence and stress", ""]
    if conv is not None:
        ref = conv["reference"]
        curves = conv["curves"]
        bins = [r for r in next(iter(curves.values())) if r["n"]]
        head = [f"[{r['lo']:.0f}, {r['hi']:.0f})" for r in bins]
        lines += [
            "## Convergence after a change",
            "",
            f"{provenance(ADAPTATION['convergence'])}. Score = the reference's median on B "
            f"({ref.get('policy')}, {ref.get('median_time_s', float('nan')):.3f} s) / the "
            "scheduler's median in each bin of online packets on B; the last column: the packets "
            f"after which it stays at {conv['settings']['target_score']:g} or more.",
            "",
            "| scheduler | " + " | ".join(head) + " | packets to target |",
            "|---" * (len(head) + 2) + "|",
        ]
        for name, rows in curves.items():
            by = {(r["lo"], r["hi"]): r for r in rows}
            cells = [_score(by[(b["lo"], b["hi"])]["score"]) for b in bins]
            to = conv["packets_to_target"].get(name)
            reached = "not reached" if to is None or to != to else f"{to:.0f}"
            lines.append(f"| {name} | " + " | ".join(cells) + f" | {reached} |")
        lines.append("")
    if stress is not None:
        ivs = stress["settings"]["intervals_s"]
        lines += [
            "## Stress: changes every interval",
            "",
            f"{provenance(ADAPTATION['stress'])}. Score = the reference's median / the "
            f"scheduler's median per change interval (reference: {stress['reference']['kind']}; "
            f"changes: {stress['settings'].get('changes', 'random')}).",
            "",
            "| scheduler | " + " | ".join(f"{iv:g} s" for iv in ivs) + " |",
            "|---" * (len(ivs) + 1) + "|",
        ]
        for name, rows in stress["scores"].items():
            lines.append(f"| {name} | " + " | ".join(_score(r["score"]) for r in rows) + " |")
        lines.append("")
    return "\n".join(lines)


def _range(values: list) -> str:
    return f"{min(values):.2f}-{max(values):.2f}"


def speed_page(report: Mapping, path: Path = SPEED_JSON) -> str:
    """The emulator benchmark's report (read from ``path``): its targets, each workload's
    medians on both cores (and on the revision it was timed against, if any), and the
    per-packet cost growth."""
    from benchmarks.emulator_speed import per_cpu_s_key, shown

    if "targets" not in report:
        raise SystemExit(
            f"error: {path}: no targets (a report of an older benchmark: run it again with --out)"
        )
    tree = report["tree"]
    changes = f", uncommitted changes {tree['changes']}" if tree.get("changes") else ""
    m = report.get("machine", {})
    load = ", ".join(f"{x:.2f}" for x in report["load_average"])
    detail = "; ".join(m[k] for k in ("cpu_id", "caches") if m.get(k))
    cpu = f"{m.get('cpu', 'an unrecorded CPU')} ({detail + '; ' if detail else ''}{m.get('cpus', '?')} CPUs)"
    previous = report.get("previous")
    lines = [
        "# Speed: the emulator benchmark",
        "",
        f"{provenance(path)}: `python -m benchmarks.emulator_speed` at commit "
        f"{tree['commit'][:12]}{changes}, {report.get('repeats', '?')} repeats, "
        f"{report['episodes']} episodes of {report['size_bytes']:,} bytes a repeat; "
        f"{cpu}, load average "
        f"{load} at the start. Every repeat runs each workload in fresh interpreters, the "
        "cores in turn; the figures are medians of the repeats, a speed-up is the median "
        "of the per-repeat ratios [lowest-highest]. Each workload is described in the "
        "benchmark's module docstring; what each change of the core gained, measured when "
        "it was made, is [the speed log](../explanation/speed.md).",
        "",
        "## Targets",
        "",
        "| target | this run | bound | met |",
        "|---|---|---|---|",
    ]
    for row in report["targets"]:
        met = "yes" if row["met"] else "**no**"
        lines.append(f"| {row['target']} | {shown(row['measured'])} | {row['bound']} | {met} |")
    head = "| workload | unit per CPU-s | compiled | pure Python | speed-up | same results |"
    rule = "|---|---|---|---|---|---|"
    if previous:
        head += f" {previous['commit'][:12]} | this tree / it |"
        rule += "---|---|"
    lines += ["", "## Workloads", "", head, rule]
    for name, e in report["results"].items():
        key = per_cpu_s_key(e)
        med = e[key]
        unit = key[len("median_") : -len("_per_cpu_s")]
        row = (
            f"| `{name}` | {unit} | {med['compiled']:,} | {med['python']:,} "
            f"| {e['speedup_median']:.2f}x [{_range(e['speedups'])}] "
            f"| {'yes' if e['identical_results'] else '**no**'} |"
        )
        if previous:
            if "previous" in med:
                row += (
                    f" {med['previous']:,} | {e['vs_previous_median']:.2f}x "
                    f"[{_range(e['vs_previous'])}] |"
                )
            else:
                row += " - | - |"
        lines.append(row)
    if report.get("scaling"):
        lines += [
            "",
            "## Per-packet cost growth",
            "",
            "Per-packet CPU cost of the larger workload over the smaller: the median of the "
            "per-repeat ratios [lowest-highest], both workloads run in turn in each repeat; "
            "the events per packet of both tell whether a growth comes from more emulated events per packet "
            "or from a higher cost per event, their retransmissions per packet whether the "
            "larger one's packets carry loss recovery that the smaller one's do not.",
            "",
            "| from | to | compiled | pure Python | events per packet "
            "| retransmissions per packet |",
            "|---|---|---|---|---|---|",
        ]
        for row in report["scaling"].values():
            g = row["cost_growth"]
            ev = row.get("events_per_packet")
            events = "-" if ev is None else f"{ev[0]:.3f} -> {ev[1]:.3f}"
            rt = row.get("retransmissions_per_packet")
            retx = "-" if rt is None else f"{rt[0]:.4f} -> {rt[1]:.4f}"
            spread = row.get("cost_growths", {})
            shown_growth = {
                c: f"{g[c]:.2f}x" + (f" [{_range(spread[c])}]" if spread.get(c) else "")
                for c in ("compiled", "python")
            }
            lines.append(
                f"| `{row['from']}` | `{row['to']}` | {shown_growth['compiled']} "
                f"| {shown_growth['python']} | {events} | {retx} |"
            )
    return "\n".join(lines) + "\n"


def write(path: Path, text: str) -> None:
    """Write ``text`` atomically (a temporary file beside ``path``, then rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text if text.endswith("\n") else text + "\n")
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) == 2 and argv[0] == "--readme":
        rewrite_readme(Path(argv[1]), load(MAIN_JSON))
        return 0
    if len(argv) >= 2 and argv[0] == "--take":
        for p in argv[1:]:
            print(take(Path(p)))
        return 0
    if len(argv) != 1 or argv[0].startswith("-"):
        print(
            "usage: python scripts/docs_results.py OUT_DIR | --readme README.md | --take JSON...",
            file=sys.stderr,
        )
        return 2
    out = Path(argv[0])
    write(out / "main.md", main_page(load(MAIN_JSON)))
    write(out / "reproduction.md", reproduction_page(load(REPORT_JSON)))
    write(out / "fidelity.md", fidelity_page(load(FIDELITY_JSON)))
    conv, stress = (load(p) if p.is_file() else None for p in ADAPTATION.values())
    write(out / "adaptation.md", adaptation_page(conv, stress))
    write(out / "speed.md", speed_page(load(SPEED_JSON)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
