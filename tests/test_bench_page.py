"""The leaderboard page in a real headless browser (Debian's Chromium): it
renders (a screenshot of some size), its table has a row for every scheduler
of the results files, and its sort script runs (the address's
``#sort=<split>:<column>:<dir>`` sorts the table on load; the dumped DOM is
the page after its script ran). Skips when Chromium is not installed
(.ci/run installs it)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from bench_tiny import run_tiny

from falcon.bench import leaderboard

CHROMIUM = shutil.which("chromium") or (
    "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None
)
pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="chromium not installed (apt-get install -y chromium; .ci/run installs it)",
)


def _browse(url: str, tmp: Path) -> tuple[str, Path]:
    """``(DOM after the page's scripts ran, screenshot)`` of ``url``."""
    shot = tmp / "shot.png"
    r = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={tmp / 'profile'}",
            "--virtual-time-budget=3000",
            "--window-size=1280,1600",
            f"--screenshot={shot}",
            "--dump-dom",
            url,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout, shot


def _rows(dom: str, split: str) -> tuple[dict, list[str]]:
    """(the board table's attributes, its rows' scheduler names in DOM order)."""
    m = re.search(rf'<table class="board" id="board-{split}"([^>]*)>(.*?)</table>', dom, re.S)
    assert m, f"no board table for {split}"
    attrs = dict(re.findall(r'([\w-]+)="([^"]*)"', m.group(1)))
    return attrs, re.findall(r'<tr class="[^"]*" data-scheduler="([^"]*)"', m.group(2))


def test_page_in_headless_chromium(compose, tmp_path):
    first = run_tiny(compose, tmp_path / "a", "[blest,ecf]")
    # a second file of the same benchmark: the same runs under other names
    data = json.loads(first.read_text())
    rename = {"blest": "blest_variant", "ecf": "ecf_variant"}
    data["schedulers"] = [rename[n] for n in data["schedulers"]]
    for c in data["splits"]["validation"]["conditions"].values():
        c["schedulers"] = {rename[n]: e for n, e in c["schedulers"].items()}
    suite = data["splits"]["validation"]["suite"]
    for old, new in rename.items():
        suite[new] = suite.pop(old)
    second = tmp_path / "b" / "bench.json"
    second.parent.mkdir()
    second.write_text(json.dumps(data))

    page = leaderboard.build([first, second], tmp_path / "board")
    wanted = {"blest", "ecf", "blest_variant", "ecf_variant"}
    refs = set(
        json.loads(first.read_text())["splits"]["validation"]["conditions"]["fast_slow"][
            "references"
        ]
    )

    dom, shot = _browse(page.resolve().as_uri() + "#sort=validation:name:desc", tmp_path)
    assert shot.is_file() and shot.stat().st_size > 20_000  # a rendered page, not a blank one
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    attrs, names = _rows(dom, "validation")
    assert set(names) == wanted | refs and len(names) == len(wanted | refs)
    # the script sorted the table by name, descending (the file has it by score)
    assert attrs.get("data-sort-key") == "name" and attrs.get("data-sort-dir") == "desc"
    assert names == sorted(names, key=str.lower, reverse=True)
    assert "<svg" in dom  # the plot is inline

    dom, _ = _browse(page.resolve().as_uri() + "#sort=validation:score_best_known:asc", tmp_path)
    attrs, names = _rows(dom, "validation")
    board = json.loads((tmp_path / "board" / "board.json").read_text())
    score = {r["name"]: r["score_best_known"] for r in board["splits"]["validation"]["rows"]}
    values = [score[n] for n in names]
    assert attrs.get("data-sort-key") == "score_best_known" and values == sorted(values)
