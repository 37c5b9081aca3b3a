"""The reproduction report: ``report.md`` and ``report.html`` from one model.

:func:`build` turns the seed-claims file, the experiments' outcomes and the
verdicts into a plain model (sections, figures, claim rows); :func:`markdown`
and :func:`html` render it. Every number in it comes from a run's JSON
(ours) or from ``data/seed_claims.yaml`` (the paper's); the plots are copied
from the runs' output folders into ``figures/`` beside the report, so the
folder can be moved or published whole.
"""

from __future__ import annotations

import html as _html
import math
import shutil
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path


def fmt(v) -> str:
    """A number to 4 significant digits (integers whole), lists joined, None as -."""
    if v is None:
        return "-"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            return "n/a"
        return f"{v:.0f}" if abs(v) >= 1e4 or v.is_integer() else f"{v:.4g}"
    if isinstance(v, list | tuple):
        return ", ".join(fmt(x) for x in v)
    if isinstance(v, Mapping):
        return "; ".join(f"{k}: {fmt(x)}" for k, x in v.items())
    return str(v)


def _shown(path: Path) -> str:
    """A path relative to the working directory when it is below it (reports are read from the checkout)."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def run_link(tracking_uri: str | None, experiment_id: str | None, run_id: str | None) -> str | None:
    """The MLflow UI address of a run (``mlflow ui`` on its default port for a
    local store; the server's own address otherwise)."""
    if not run_id or not experiment_id:
        return None
    base = (
        tracking_uri
        if tracking_uri and tracking_uri.startswith("http")
        else "http://127.0.0.1:5000"
    )
    return f"{base.rstrip('/')}/#/experiments/{experiment_id}/runs/{run_id}"


def build(
    doc: Mapping,
    figures: Sequence[Mapping],
    *,
    scale: str,
    state: Mapping,
    command: str,
    out_dir: Path,
    tracking_uri: str | None,
) -> dict:
    """The report's model. ``figures``: per seed figure ``{"fig", "experiment",
    "outcome", "verdicts", "experiment_id"}`` (outcome/experiment_id may be None)."""
    fig_dir = out_dir / "figures"
    fig_dir.mkdir(parents=True, exist_ok=True)
    sections: dict[str, dict] = {}
    totals = {"reproduced": 0, "not reproduced": 0, "not assessed": 0}
    for item in figures:
        fig, exp, outcome = item["fig"], item["experiment"], item["outcome"]
        seed = doc["seeds"][fig["seed"]]
        sec = sections.setdefault(fig["seed"], {"id": fig["seed"], "seed": seed, "figures": []})
        plots = []
        if outcome is not None and outcome.status != "failed":
            for pattern in exp.plots:
                for png in sorted(outcome.output.glob(pattern)):
                    dest = fig_dir / f"{exp.name}-{png.name}"
                    shutil.copyfile(png, dest)
                    plots.append(f"figures/{dest.name}")
        claims = {c["id"]: c for c in fig["claims"]}
        rows = []
        for v in item["verdicts"]:
            c = claims[v.claim_id]
            totals[v.label] += 1
            rows.append(
                {
                    "where": c["where"],
                    "text": c["text"],
                    "paper": fmt(c["values"]) if c["values"] else "qualitative",
                    "ours": v.ours,
                    "verdict": v.label,
                    "rule": v.rule,
                    "reason": v.reason,
                }
            )
        sec["figures"].append(
            {
                "id": fig["id"],
                "where": fig["where"],
                "title": fig["title"],
                "experiment": exp.name,
                "what": exp.what,
                "status": outcome.status if outcome else "not run",
                "error": outcome.error if outcome else "",
                "output": _shown(outcome.output) if outcome else None,
                "run_id": outcome.run_id if outcome else None,
                "run_link": run_link(
                    tracking_uri, item.get("experiment_id"), outcome.run_id if outcome else None
                ),
                "wall_s": outcome.wall_s if outcome else None,
                "plots": plots,
                "rows": rows,
            }
        )
    return {
        "scale": scale,
        "state": dict(state),
        "command": command,
        "tracking_uri": tracking_uri,
        "generated": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "totals": totals,
        "sections": list(sections.values()),
    }


def _ours_text(ours: Mapping) -> list[str]:
    return [f"{k}: {fmt(v)}" for k, v in ours.items()]


def markdown(model: Mapping) -> str:
    st = model["state"]
    t = model["totals"]
    lines = [
        f"# Reproduction report: the seed papers' figures beside ours (scale={model['scale']})",
        "",
        f"Generated {model['generated']} by `{model['command']}` at commit `{st['commit'][:12]}`"
        + (f" with uncommitted changes `{st['changes']}`" if st.get("changes") else "")
        + ".",
        f"Claims: **{t['reproduced']} reproduced**, **{t['not reproduced']} not reproduced**, "
        f"{t['not assessed']} not assessed at this scale.",
        "",
        "The paper's numbers come from `data/seed_claims.yaml` (paper and figure of each); ours are read "
        "from each experiment's results JSON. Each experiment is an MLflow run "
        + (f"in `{model['tracking_uri']}` " if model["tracking_uri"] else "")
        + "(`mlflow ui --backend-store-uri <store>` opens the links). "
        "`scale=quick` runs every experiment small: the numbers are noisy, the verdicts indicative; "
        "`scale=paper` runs the full protocols.",
        "",
    ]
    lines += ["| figure | experiment | run | reproduced |", "|---|---|---|---|"]
    for sec in model["sections"]:
        for f in sec["figures"]:
            n_ok = sum(r["verdict"] == "reproduced" for r in f["rows"])
            run = f"[{f['run_id'][:8]}]({f['run_link']})" if f["run_link"] else (f["status"])
            lines.append(
                f"| {sec['id']} {f['where']}: {f['title']} | `{f['experiment']}` | {run} | "
                f"{n_ok}/{len(f['rows'])} |"
            )
    for sec in model["sections"]:
        lines += ["", f"## {sec['seed']['paper']}", "", f"{sec['seed']['cite']}."]
        for f in sec["figures"]:
            lines += [
                "",
                f"### {f['where']}: {f['title']}",
                "",
                f"Experiment `{f['experiment']}` ({f['what']}): {f['status']}"
                + (f" in {f['wall_s']:.0f} s" if f["wall_s"] else "")
                + (f", MLflow run [{f['run_id']}]({f['run_link']})" if f["run_link"] else "")
                + (f"; output `{f['output']}`" if f["output"] else "")
                + ".",
            ]
            if f["error"]:
                lines.append(f"\n**Failed:** {f['error']}")
            for p in f["plots"]:
                lines += ["", f"![{f['title']}]({p})"]
            lines += [
                "",
                "| claim (paper) | paper's numbers | ours | verdict |",
                "|---|---|---|---|",
            ]
            for r in f["rows"]:
                ours = "<br>".join(_ours_text(r["ours"])) or "-"
                lines.append(
                    f"| {r['text']} ({r['where']}) | {r['paper']} | {ours} | **{r['verdict']}** |"
                )
            lines.append("")
            for r in f["rows"]:
                lines.append(
                    f"- *{r['where']}*, {r['verdict']}: {r['reason']}"
                    + (f" (rule: {r['rule']})" if r["rule"] else "")
                )
    return "\n".join(lines) + "\n"


def html(model: Mapping) -> str:
    e = _html.escape
    st, t = model["state"], model["totals"]
    out = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>Reproduction report ({e(model['scale'])})</title>",
        "<style>body{font-family:sans-serif;max-width:70em;margin:auto;padding:1em}"
        "table{border-collapse:collapse;margin:0.5em 0}td,th{border:1px solid #ccc;padding:0.3em;"
        "vertical-align:top;font-size:0.9em}img{max-width:100%}.reproduced{color:#2a7a2a}"
        ".not.reproduced{color:#b02020}.not.assessed{color:#777}</style></head><body>",
        f"<h1>Reproduction report: the seed papers' figures beside ours (scale={e(model['scale'])})</h1>",
        f"<p>Generated {e(model['generated'])} by <code>{e(model['command'])}</code> at commit "
        f"<code>{e(st['commit'][:12])}</code>"
        + (
            f" with uncommitted changes <code>{e(st['changes'])}</code>"
            if st.get("changes")
            else ""
        )
        + ".</p>",
        f"<p>Claims: <b>{t['reproduced']} reproduced</b>, <b>{t['not reproduced']} not reproduced</b>, "
        f"{t['not assessed']} not assessed at this scale. The paper's numbers come from "
        "<code>data/seed_claims.yaml</code>; ours from each experiment's results JSON.</p>",
    ]
    for sec in model["sections"]:
        out.append(f"<h2>{e(sec['seed']['paper'])}</h2><p>{e(sec['seed']['cite'])}.</p>")
        for f in sec["figures"]:
            run = (
                f" MLflow run <a href='{e(f['run_link'])}'>{e(f['run_id'])}</a>."
                if f["run_link"]
                else ""
            )
            out.append(
                f"<h3>{e(f['where'])}: {e(f['title'])}</h3><p>Experiment <code>{e(f['experiment'])}</code> "
                f"({e(f['what'])}): {e(f['status'])}.{run}</p>"
            )
            if f["error"]:
                out.append(f"<p><b>Failed:</b> {e(f['error'])}</p>")
            out += [f"<p><img src='{e(p)}' alt='{e(f['title'])}'></p>" for p in f["plots"]]
            out.append(
                "<table><tr><th>claim (paper)</th><th>paper's numbers</th><th>ours</th><th>verdict</th>"
                "<th>reason</th></tr>"
            )
            for r in f["rows"]:
                ours = "<br>".join(e(x) for x in _ours_text(r["ours"])) or "-"
                out.append(
                    f"<tr><td>{e(r['text'])} ({e(r['where'])})</td><td>{e(r['paper'])}</td><td>{ours}</td>"
                    f"<td class='{e(r['verdict'])}'><b>{e(r['verdict'])}</b></td><td>{e(r['reason'])}"
                    + (f"<br><i>rule: {e(r['rule'])}</i>" if r["rule"] else "")
                    + "</td></tr>"
                )
            out.append("</table>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"


__all__ = ["build", "markdown", "html", "fmt", "run_link"]
