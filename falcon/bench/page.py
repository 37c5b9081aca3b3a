"""The leaderboard's HTML page (:mod:`falcon.bench.leaderboard`): one file that
works offline (inline CSS, JavaScript and SVG; no font, script or image is
fetched).

Per split: a sortable table (a click on a column heading sorts by it, a
second click reverses; the address's hash ``#sort=<split>:<column>:<asc|desc>``
sorts on load, e.g. ``index.html#sort=validation:name:desc``; the table's
``data-sort-key`` and ``data-sort-dir`` say how it is sorted), the
per-condition plot of every benchmarked scheduler's ratio to the best rule
(inline SVG, one marker shape per scheduler, each scheduler at its own
horizontal offset so no marker covers another's) and the conditions'
references.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping
from html import escape

#: table columns: (key, heading, numeric)
COLUMNS = (
    ("rank", "#", True),
    ("name", "Scheduler", False),
    ("kind", "Kind", False),
    ("score_best_rule", "Score vs best rule", True),
    ("score_best_known", "Score vs best known", True),
    ("headroom_captured", "Headroom captured", True),
    ("conditions", "Conditions", True),
    ("source", "Results file", False),
    ("mlflow", "MLflow run", False),
)
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "p", "*", "h", "d", "8", "H")

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:2em;color:#222;max-width:1200px}
h1{font-size:1.5em}h2{margin-top:2em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:1em 0;font-size:.92em}
th,td{padding:.3em .7em;border-bottom:1px solid #e3e3e3;text-align:left}
td.num{text-align:right;font-variant-numeric:tabular-nums}
table.board th{cursor:pointer;user-select:none;background:#f4f4f4}
table.board th[aria-sort=ascending]::after{content:" \\25B2"}
table.board th[aria-sort=descending]::after{content:" \\25BC"}
tr.scheduler td{font-weight:600}tr.rule td,tr.reference td{color:#666}
code{font-size:.9em}.plot svg{max-width:100%;height:auto}.meta{color:#555;font-size:.9em}
"""

SCRIPT = """
(function(){
function cellValue(row, i, numeric){
  var v = row.cells[i].getAttribute('data-value');
  if (numeric) { return (v === null || v === '') ? null : parseFloat(v); }
  return (v === null ? row.cells[i].textContent : v).toLowerCase();
}
function sortTable(table, key, dir){
  var heads = table.tHead.rows[0].cells, idx = -1, numeric = false;
  for (var i = 0; i < heads.length; i++) {
    if (heads[i].getAttribute('data-key') === key) { idx = i; numeric = heads[i].getAttribute('data-type') === 'num'; }
    heads[i].removeAttribute('aria-sort');
  }
  if (idx < 0) { return false; }
  var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows), sign = dir === 'desc' ? -1 : 1;
  rows.sort(function(a, b){
    var x = cellValue(a, idx, numeric), y = cellValue(b, idx, numeric);
    if (x === null && y === null) { return 0; }
    if (x === null) { return 1; }   // missing values last, either way
    if (y === null) { return -1; }
    return x < y ? -sign : (x > y ? sign : 0);
  });
  rows.forEach(function(r){ body.appendChild(r); });
  heads[idx].setAttribute('aria-sort', dir === 'desc' ? 'descending' : 'ascending');
  table.setAttribute('data-sort-key', key);
  table.setAttribute('data-sort-dir', dir);
  return true;
}
function fromHash(){
  var m = /sort=([A-Za-z0-9_.-]+):([A-Za-z0-9_]+):(asc|desc)/.exec(window.location.hash);
  if (!m) { return; }
  var table = document.getElementById('board-' + m[1]);
  if (table) { sortTable(table, m[2], m[3]); }
}
var tables = document.querySelectorAll('table.board');
Array.prototype.forEach.call(tables, function(table){
  Array.prototype.forEach.call(table.tHead.rows[0].cells, function(th){
    th.addEventListener('click', function(){
      var key = th.getAttribute('data-key');
      var dir = (table.getAttribute('data-sort-key') === key && table.getAttribute('data-sort-dir') === 'asc') ? 'desc' : 'asc';
      sortTable(table, key, dir);
    });
  });
});
window.addEventListener('hashchange', fromHash);
fromHash();
})();
"""


def _num(v, digits: int = 3) -> tuple[str, str]:
    """``(data-value, text)`` of a number cell."""
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "", "–"
    if isinstance(v, int):
        return str(v), str(v)
    return repr(float(v)), f"{v:.{digits}f}"


def _mlflow_cell(m: Mapping | None) -> str:
    if not m or not m.get("run_id"):
        return "<td data-value=''>–</td>"
    rid = escape(m["run_id"])
    title = escape(f"{m.get('tracking_uri')} · {m.get('artifact_uri')}")
    if m.get("run_url"):
        link = f"<a href='{escape(m['run_url'])}' title='{title}'>{rid[:8]}</a>"
    else:  # a local store: no address to link to; the run id and where to look
        link = f"<code title='{title}'>{rid[:8]}</code>"
    return f"<td data-value='{rid}'>{link}</td>"


def table_html(split: str, rows: list[dict]) -> str:
    head = "".join(
        f"<th data-key='{k}' data-type='{'num' if num else 'text'}'>{escape(h)}</th>"
        for k, h, num in COLUMNS
    )
    body = []
    for i, r in enumerate(rows, 1):
        cells = []
        for key, _, num in COLUMNS:
            if key == "mlflow":
                cells.append(_mlflow_cell(r["mlflow"]))
            elif num:
                value, text = _num(i if key == "rank" else r.get(key))
                cells.append(f"<td class='num' data-value='{value}'>{text}</td>")
            else:
                text = r.get(key) or ""
                cells.append(f"<td data-value='{escape(text)}'>{escape(text) or '–'}</td>")
        body.append(
            f"<tr class='{escape(r['kind'])}' data-scheduler='{escape(r['name'])}'>"
            + "".join(cells)
            + "</tr>"
        )
    return (
        f"<table class='board' id='board-{escape(split)}'><thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(body)}</tbody></table>"
    )


def plot_svg(split: str, conditions: Mapping, rows: list[dict]) -> str:
    """Inline SVG: per condition each benchmarked scheduler's ratio to the best rule (log
    scale) at its own offset and marker, the best known as a black bar, 1 = the best rule."""
    from baselines.mpl import use_agg
    from baselines.palette import color
    from falcon.report import new_figure

    use_agg()
    import matplotlib
    import matplotlib.ticker

    names = list(conditions)
    scheds = [r for r in rows if r["kind"] == "scheduler"]
    fig, ax = new_figure(figsize=(max(6.0, 0.9 * len(names) + 3.0), 4.2))
    width = min(0.8 / max(len(scheds), 1), 0.18)
    for k, r in enumerate(scheds):
        off = (k - (len(scheds) - 1) / 2) * width
        pts = [
            (i + off, r["per_condition"][c]["ratio_best_rule"])
            for i, c in enumerate(names)
            if r["per_condition"].get(c, {}).get("ratio_best_rule")
        ]
        ax.scatter(
            [p[0] for p in pts],
            [p[1] for p in pts],
            marker=MARKERS[k % len(MARKERS)],
            facecolors=color(r["name"]) if k < len(MARKERS) else "none",
            edgecolors=color(r["name"]) if k >= len(MARKERS) else "black",
            linewidths=0.6,
            s=42,
            zorder=3,
            label=r["name"],
        )
    known = [
        (i, c["best_known"]["median_s"] / c["best_rule"]["median_s"])
        for i, c in enumerate(conditions.values())
        if c["best_known"]["median_s"] and c["best_rule"]["median_s"]
    ]
    ax.hlines(
        [v for _, v in known],
        [i - 0.45 for i, _ in known],
        [i + 0.45 for i, _ in known],
        colors="black",
        linewidth=1.5,
        label="best known (references)",
        zorder=2,
    )
    ax.axhline(1.0, color="grey", linestyle="--", linewidth=1, zorder=1)
    ax.set_yscale("log")
    values = [1.0, *(v for _, v in known)] + [
        v
        for r in scheds
        for c in r["per_condition"].values()
        if (v := c.get("ratio_best_rule")) and v > 0
    ]
    ax.set_ylim(min(values) / 1.15, max(values) * 1.15)  # the data's range, not decades
    ratio = matplotlib.ticker.FormatStrFormatter("%.2g")  # 0.9, not 9 x 10^-1
    ax.yaxis.set_major_formatter(ratio)
    ax.yaxis.set_minor_formatter(ratio)
    ax.tick_params(axis="y", which="minor", labelsize=7)
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names, rotation=35, ha="right", fontsize=8)
    ax.set_xlim(-0.6, len(names) - 0.4)
    ax.set_ylabel("median download time / best rule's")
    ax.set_title(f"{split}: ratio to the best rule per condition (1 = best rule)", fontsize=10)
    ax.grid(axis="y", alpha=0.3, which="both")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.tight_layout()
    buf = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": "falcon.bench", "svg.fonttype": "none"}):
        fig.savefig(buf, format="svg", metadata={"Date": None})
    svg = buf.getvalue()
    return svg[svg.index("<svg") :]


def conditions_html(conditions: Mapping) -> str:
    rows = []
    for name, c in conditions.items():
        br, bk = c["best_rule"], c["best_known"]
        rows.append(
            f"<tr><td>{escape(name)}</td><td>{escape(str(br['name']))}</td>"
            f"<td class='num'>{_num(br['median_s'])[1]}</td><td>{escape(str(bk['name']))}</td>"
            f"<td class='num'>{_num(bk['median_s'])[1]}</td><td class='num'>{_num(c['headroom'])[1]}</td>"
            f"<td>{'yes' if c['has_headroom'] else 'no'}</td></tr>"
        )
    head = "".join(
        f"<th>{h}</th>"
        for h in (
            "Condition",
            "Best rule",
            "Median [s]",
            "Best known",
            "Median [s]",
            "Headroom",
            "Has headroom",
        )
    )
    return f"<table class='conditions'><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def render(board: Mapping, title: str | None = None) -> str:
    """The page of a merged board (:func:`falcon.bench.leaderboard.merge`)."""
    bench = board["benchmark"]
    defn = bench["definition"]
    title = title or f"FALCON benchmark leaderboard: {bench['id']}"
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>{escape(title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{escape(title)}</h1>",
        f"<p class='meta'>Benchmark <code>{escape(bench['id'])}</code>; seeds "
        f"{defn['seeds'][0]}..{defn['seeds'][-1]} ({len(defn['seeds'])} runs per scheduler and "
        f"condition); emulator build {escape(str(defn['build'].get('emulator_build')))}; from "
        f"{len(board['files'])} results file(s). Scores are geometric means over the conditions "
        f"of the median download time divided by the best rule's (or the best known's: the "
        f"lowest median of the rules and references); lower is better. Headroom captured: "
        f"(best rule − median) / (best rule − best known), averaged over the conditions with "
        f"headroom. Click a heading to sort.</p>",
    ]
    for split, s in board["splits"].items():
        parts += [
            f"<h2 id='split-{escape(split)}'>{escape(split)} "
            f"({len(s['conditions'])} conditions)</h2>",
            table_html(split, s["rows"]),
            f"<div class='plot'>{plot_svg(split, s['conditions'], s['rows'])}</div>",
            conditions_html(s["conditions"]),
        ]
    parts.append(f"<script>{SCRIPT}</script></body></html>\n")
    return "\n".join(parts)


__all__ = ["COLUMNS", "MARKERS", "render", "table_html", "plot_svg", "conditions_html"]
