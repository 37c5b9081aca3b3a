"""``python -m falcon.bench leaderboard RESULTS... -o DIR``: one static page from
results files of one benchmark.

The files (:mod:`falcon.bench.results`, from ``falcon.bench run`` on any
machine) merge into one board: every split any of them ran, with the
benchmarked schedulers of every file as rows beside the benchmark's rules
and references (taken from the first file that ran the split: with equal
benchmark ids they are the same numbers). Files of different benchmark ids
do not merge (one error line); neither do two files that both benchmark a
scheduler of the same name on the same split.

Writes ``DIR/index.html`` (:mod:`falcon.bench.page`: no server, no network,
inline CSS, JavaScript and SVG) and ``DIR/board.json`` (the merged rows the
page shows), each atomically.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from envs.errors import ConfigError
from falcon.bench import results as bres

#: row kinds: a benchmarked scheduler, a rule of the benchmark, one of its references
KINDS = ("scheduler", "rule", "reference")


def _row(name: str, kind: str, split: dict, source: str | None, mlflow: dict | None) -> dict:
    per = {}
    for cond, res in split["conditions"].items():
        e = res["schedulers"].get(name) if kind == "scheduler" else res["references"].get(name)
        per[cond] = {
            k: (e or {}).get(k) for k in ("median_s", "ratio_best_rule", "ratio_best_known")
        }
    suite = split["suite"].get(name, {})
    return {
        "name": name,
        "kind": kind,
        "source": source,
        "mlflow": mlflow if kind == "scheduler" else None,
        **{
            k: suite.get(k)
            for k in ("score_best_rule", "score_best_known", "headroom_captured", "conditions")
        },
        "per_condition": per,
    }


def merge(paths: Sequence[str | Path]) -> dict:
    """The board of the results files ``paths`` (checked; see the module docstring)."""
    if not paths:
        raise ConfigError("leaderboard: give at least one results file (bench.json)")
    files = [(Path(p), bres.load(p)) for p in paths]
    first_path, first = files[0]
    bid = first["benchmark"]["id"]
    for path, data in files[1:]:
        if data["benchmark"]["id"] != bid:
            raise ConfigError(
                f"{path}: benchmark {data['benchmark']['id']} is not {first_path}'s {bid} "
                f"(one leaderboard per benchmark id)"
            )
    splits: dict[str, dict] = {}
    owner: dict[tuple[str, str], Path] = {}
    for path, data in files:
        for split, s in data["splits"].items():
            if split not in splits:
                refs = next(iter(s["conditions"].values()))["references"]
                rules = set(data["benchmark"]["definition"].get("rules", []))
                splits[split] = {
                    "conditions": {
                        c: {
                            k: r[k] for k in ("best_rule", "best_known", "headroom", "has_headroom")
                        }
                        for c, r in s["conditions"].items()
                    },
                    "rows": [
                        _row(n, "rule" if n in rules else "reference", s, None, None) for n in refs
                    ],
                }
            for name in s["conditions"][next(iter(s["conditions"]))]["schedulers"]:
                if (split, name) in owner:
                    raise ConfigError(
                        f"{path}: scheduler {name!r} on split {split} is also in "
                        f"{owner[(split, name)]} (one row per name: rename one agent)"
                    )
                owner[(split, name)] = path
                splits[split]["rows"].append(_row(name, "scheduler", s, path.name, data["mlflow"]))
    for s in splits.values():  # best first against the best rule; unscored ones last
        s["rows"].sort(
            key=lambda r: (r["score_best_rule"] is None, r["score_best_rule"] or 0.0, r["name"])
        )
    order = [x for x in ("train", "validation", "test") if x in splits]
    return {
        "benchmark": first["benchmark"],
        "files": [str(p) for p, _ in files],
        "splits": {x: splits[x] for x in [*order, *(x for x in splits if x not in order)]},
    }


def build(paths: Sequence[str | Path], out_dir: str | Path, title: str | None = None) -> Path:
    """Merge ``paths`` and write ``out_dir/index.html`` and ``out_dir/board.json``;
    the page's path."""
    from falcon.bench.page import render

    board = merge(paths)
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"-o {out}: exists and is not a folder")
    bres.write(out / "board.json", board)
    page = out / "index.html"
    bres.write_text_atomic(page, render(board, title))
    return page


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        prog="python -m falcon.bench leaderboard",
        description="A static leaderboard page (DIR/index.html) from falcon.bench results files.",
    )
    ap.add_argument("results", nargs="+", help="bench.json files of one benchmark id")
    ap.add_argument("-o", "--output", required=True, help="the page's folder (created)")
    ap.add_argument("--title", default=None, help="the page's title")
    args = ap.parse_args(argv)
    try:
        page = build(args.results, args.output, args.title)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    board = json.loads((page.parent / "board.json").read_text())
    rows = sum(len(s["rows"]) for s in board["splits"].values())
    print(f"leaderboard: {page} ({len(board['splits'])} splits, {rows} rows)")


__all__ = ["KINDS", "merge", "build", "main"]
