"""The README and the documentation site's generated pages.

The README stays short (at most 250 lines), its quick start's commands work
(parsed from the README and run as cheap variants: the main job's target
with a seconds-long experiment, the test target on one test), its scheduler
example runs, its results block is the main job's JSON, and its links into
docs/ resolve. The generators of the site (scripts/docs_config.py,
scripts/docs_results.py) are checked on small inputs; ``make docs`` (CI)
builds the whole site with warnings as errors.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from scripts import docs_config, docs_results

ROOT = docs_results.ROOT
README = ROOT / "README.md"
MAX_README_LINES = 250


def section(text: str, title: str) -> str:
    """The body of the README's ``## title`` section (up to the next ``## ``)."""
    m = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    assert m, f"README.md has no section '## {title}'"
    return m.group(1)


def code_block(body: str, lang: str) -> str:
    m = re.search(rf"^```{lang}\n(.*?)^```", body, re.S | re.M)
    assert m, f"no ```{lang} block"
    return m.group(1)


def quick_start_commands(text: str) -> list[str]:
    """The commands of the quick start's bash block, comments stripped."""
    block = code_block(section(text, "Quick start"), "bash")
    return [c for c in (line.split("#")[0].strip() for line in block.splitlines()) if c]


def test_readme_has_at_most_250_lines():
    n = len(README.read_text().splitlines())
    assert n <= MAX_README_LINES, f"README.md has {n} lines (at most {MAX_README_LINES})"


def test_the_quick_start_is_make_run_and_make_test():
    assert quick_start_commands(README.read_text()) == ["make run", "make test"]
    assert quick_start_commands("## Quick start\n\n```bash\nmake run  # x\n```\n") == ["make run"]


#: a cheap variant of each quick-start command: the same target, smaller work
CHEAP = {
    "make run": lambda tmp: [
        "RUN_ARGS=experiment=tiny tracking=none progress=false output=" + str(tmp / "run")
    ],
    "make test": lambda tmp: [
        "TEST_ARGS=tests/test_docs.py::test_readme_has_at_most_250_lines -p no:cacheprovider"
    ],
}


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_the_quick_start_commands_work(tmp_path):
    """Every command of the README's quick start runs (a cheap variant of it:
    `make run` on the seconds-long experiment, `make test` on one test); a
    command this test cannot run cheaply fails it, so the README and the
    test change together."""
    for command in quick_start_commands(README.read_text()):
        assert command in CHEAP, f"README quick start: no cheap variant of {command!r}"
        argv = [*command.split(), *CHEAP[command](tmp_path)]
        done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, (
            f"{argv}: exit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        )
        if command == "make run":
            summary = json.loads((tmp_path / "run" / "summary.json").read_text())
            assert summary["job"] == "train" and summary["schedulers"] == ["minrtt", "rr"]
        else:
            assert "1 passed" in done.stdout


def test_the_readme_scheduler_example_runs():
    """The README's scheduler example is at most 15 non-blank lines and runs as is."""
    code = code_block(section(README.read_text(), "Your own scheduler"), "python")
    assert len([line for line in code.splitlines() if line.strip()]) <= 15
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert re.fullmatch(r"download time \d+\.\d{3} s\n", done.stdout), done.stdout


def test_the_api_pages_job_example_runs_and_places_the_override(tmp_path):
    """docs/reference/api.md's example of a job run from Python, as written."""
    api = (ROOT / "docs" / "reference" / "api.md").read_text()
    code = code_block(section(api, "Running a job from Python"), "python")
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "FALCON_HOME": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    output = Path(done.stdout.strip().splitlines()[-1])
    assert output.is_relative_to(tmp_path)
    assert "lambda_init: 1.1" in (output / "plan.yaml").read_text()


def test_the_readme_results_block_is_the_main_jobs_json():
    """The README's table is what scripts/docs_results.py makes of docs/main/summary.json."""
    block = docs_results.readme_block(docs_results.load(docs_results.MAIN_JSON))
    assert block in README.read_text(), (
        "README results block is stale: python scripts/docs_results.py --readme README.md"
    )


def test_rewriting_the_readme_block(tmp_path):
    summary = docs_results.load(docs_results.MAIN_JSON)
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\n{docs_results.BEGIN}\nold\n{docs_results.END}\n\nafter\n")
    docs_results.rewrite_readme(readme, summary)
    text = readme.read_text()
    assert "old" not in text and text.endswith("\n\nafter\n")
    assert "| static 4G + 5G | " in text and "FALCON / best other" in text
    readme.write_text("no block\n")
    with pytest.raises(SystemExit, match="needs exactly one"):
        docs_results.rewrite_readme(readme, summary)


def test_the_readme_links_into_docs_resolve():
    links = re.findall(r"\]\(((?:docs|\.)/[^)#\s]+)", README.read_text())
    assert links, "README.md links into docs/"
    missing = [link for link in links if not (ROOT / link).exists()]
    assert not missing, f"README.md links to missing files: {missing}"


def test_the_main_results_page_comes_from_the_json():
    summary = docs_results.load(docs_results.MAIN_JSON)
    page = docs_results.main_page(summary)
    assert page.startswith("# The main job\n") and "docs/main/summary.json" in page
    for sc in summary["scenarios"]:
        med = summary["results"][sc]["bulk"]["falcon"]["download_time_s"]["median"]
        assert f"| FALCON | {med:.4g} [" in page


def test_an_unreadable_results_json_is_a_one_line_error(tmp_path):
    bad = tmp_path / "summary.json"
    bad.write_text("{not json")
    with pytest.raises(SystemExit, match=r"summary.json: cannot read results JSON"):
        docs_results.load(bad)


def test_a_json_git_does_not_know_is_dated_by_its_file(tmp_path, monkeypatch):
    monkeypatch.setattr(docs_results, "ROOT", tmp_path)
    f = tmp_path / "x.json"
    f.write_text("{}")
    assert re.fullmatch(
        r"Generated from `x.json` \(not committed; modified \d{4}-\d\d-\d\d\)",
        docs_results.provenance(f),
    )


def test_the_config_page_parses_values_nesting_and_comments(tmp_path):
    f = tmp_path / "opt.yaml"
    f.write_text(
        "# An option.\n# Second line.\ndefaults:\n  - /base/x@_here_\n  - _self_\n\n"
        "size: 3            # bytes [B]\n"
        "# above the key\nwindow:\n  min_s: 0.5   # seconds\n"
        'paths:\n  - link: 4g  # not a key of its own\nname: "a # b"\n'
    )
    header, rows = docs_config.parse(f)
    assert header == "An option. Second line. Includes: `/base/x@_here_`"
    assert rows == [
        ("size", "3", "bytes [B]"),
        ("window", "", "above the key"),
        ("window.min_s", "0.5", "seconds"),
        ("paths", '[{"link": "4g"}]', ""),
        ("name", '"a # b"', ""),
    ]


def test_the_literal_docstring_directive_shows_a_docstring_as_it_reads():
    """docs/_ext/literal_docstring.py: a module's docstring as one literal
    block; a module that cannot be imported is an error naming it."""
    pytest.importorskip("sphinx", reason="the docs extra is not installed (make docs installs it)")
    from docutils.core import publish_doctree
    from docutils.parsers.rst import directives

    sys.path.insert(0, str(ROOT / "docs" / "_ext"))
    try:
        from literal_docstring import LiteralDocstring
    finally:
        sys.path.remove(str(ROOT / "docs" / "_ext"))
    directives.register_directive("literal-docstring", LiteralDocstring)
    tree = publish_doctree(".. literal-docstring:: scripts.docs_config\n")
    [block] = [n for n in tree.findall() if n.tagname == "literal_block"]
    assert block.astext() == docs_config.__doc__.strip()
    bad = publish_doctree(
        ".. literal-docstring:: no_such_module_x\n", settings_overrides={"report_level": 5}
    )
    assert "cannot import no_such_module_x" in bad.astext()


def test_the_adaptation_page_is_made_from_the_runs_json(tmp_path, monkeypatch):
    """``--take`` keeps a run's scores and drops its records; the page's rows are them."""
    conv = {
        "job": "convergence",
        "settings": {"target_score": 0.9},
        "reference": {"policy": "redundant", "median_time_s": 1.5, "times": [1.0, 2.0]},
        "start_scores": {"a": 0.5},
        "curves": {
            "a": [{"lo": 0, "hi": 100, "n": 3, "score": 0.5}, {"lo": 100, "hi": 1000, "n": 0}],
            "b": [{"lo": 0, "hi": 100, "n": 3, "score": 0.95}, {"lo": 100, "hi": 1000, "n": 0}],
        },
        "packets_to_target": {"a": float("nan"), "b": 0.0},
        "records": [{"download_time_s": 1.0}],
    }
    run = tmp_path / "convergence.json"
    run.write_text(json.dumps(conv))
    monkeypatch.setitem(docs_results.ADAPTATION, "convergence", tmp_path / "docs" / "conv.json")
    kept = json.loads(docs_results.take(run).read_text())
    assert "records" not in kept and "times" not in kept["reference"]
    page = docs_results.adaptation_page(kept, None)
    assert "| a | 0.500 | not reached |" in page and "| b | 0.950 | 0 |" in page
    assert "[100, 1000)" not in page  # an empty bin has no column
    with pytest.raises(SystemExit, match="not a convergence or stress result"):
        other = tmp_path / "x.json"
        other.write_text(json.dumps({"job": "main"}))
        docs_results.take(other)


def test_the_speed_page_shows_the_benchmarks_targets_workloads_and_scaling(tmp_path):
    """The page's rows are the report's figures: targets met or not (an unmet one in
    bold), per workload both cores' medians with the speed-up's range, the columns of the
    revision it was timed against, and the scaling rows."""
    entry = {
        "median_packets_per_cpu_s": {
            "compiled": 1_500_000,
            "python": 50_000,
            "previous": 1_400_000,
        },
        "speedup_median": 30.0,
        "speedups": [28.0, 30.0, 31.5],
        "identical_results": True,
        "vs_previous_median": 1.07,
        "vs_previous": [1.01, 1.07, 1.2],
    }
    report = {
        "tree": {"commit": "a" * 40, "changes": ""},
        "previous": {"revision": "HEAD~1", "commit": "b" * 40},
        "repeats": 3,
        "episodes": 40,
        "size_bytes": 2_000_000,
        "machine": {"cpu": "Some CPU", "cpus": 2},
        "load_average": [0.5, 0.6, 0.7],
        "results": {"minrtt": entry},
        "scaling": {
            "paths": {
                "from": "paths_2",
                "to": "paths_8",
                "cost_growth": {"compiled": 1.2, "python": 1.3},
                "events_per_packet": [1.5, 1.4],
            },
            "same_share": {
                "from": "connections_1",
                "to": "same_share_64",
                "cost_growth": {"compiled": 1.3, "python": 1.1},
                "cost_growths": {"compiled": [1.25, 1.3, 1.42], "python": [1.1, 1.1, 1.2]},
                "events_per_packet": [1.5, 1.45],
                "retransmissions_per_packet": [0.0, 0.0],
            },
        },
        "targets": [
            {"target": "minRTT", "bound": ">= 2,000,000", "measured": 1_500_000, "met": False},
            {"target": "growth", "bound": "<= 1.5", "measured": 1.2, "met": True},
        ],
    }
    path = tmp_path / "speed.json"
    path.write_text(json.dumps(report))
    page = docs_results.speed_page(docs_results.load(path), path)
    assert page.startswith("# Speed: the emulator benchmark\n")
    assert "at commit aaaaaaaaaaaa, 3 repeats, 40 episodes of 2,000,000 bytes" in page
    assert "Some CPU (2 CPUs)" in page
    report["machine"].update(cpu_id="family 26 model 2 stepping 1", caches="L1d 48K, L2 1024K")
    path.write_text(json.dumps(report))
    detailed = docs_results.speed_page(docs_results.load(path), path)
    assert "Some CPU (family 26 model 2 stepping 1; L1d 48K, L2 1024K; 2 CPUs)" in detailed
    assert "| minRTT | 1,500,000 | >= 2,000,000 | **no** |" in page
    assert "| growth | 1.2 | <= 1.5 | yes |" in page
    assert "| bbbbbbbbbbbb | this tree / it |" in page
    assert (
        "| `minrtt` | packets | 1,500,000 | 50,000 | 30.00x [28.00-31.50] | yes "
        "| 1,400,000 | 1.07x [1.01-1.20] |"
    ) in page
    assert "| `paths_2` | `paths_8` | 1.20x | 1.30x | 1.500 -> 1.400 | - |" in page
    assert (
        "| `connections_1` | `same_share_64` | 1.30x [1.25-1.42] | 1.10x [1.10-1.20] "
        "| 1.500 -> 1.450 | 0.0000 -> 0.0000 |"
    ) in page
    del report["targets"]
    path.write_text(json.dumps(report))
    with pytest.raises(SystemExit, match=r"speed.json: no targets"):
        docs_results.speed_page(docs_results.load(path), path)


def test_the_speed_page_comes_from_the_kept_report():
    """docs/speed/emulator_speed.json is a whole benchmark run: every target of the
    benchmark appears on its page with that run's figure."""
    from benchmarks.emulator_speed import TARGETS

    report = docs_results.load(docs_results.SPEED_JSON)
    page = docs_results.speed_page(report)
    assert {r["target"] for r in report["targets"]} >= {t.what for t in TARGETS}
    for row in report["targets"]:
        assert f"| {row['target']} | " in page
