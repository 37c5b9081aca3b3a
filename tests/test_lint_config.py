"""The lint and format checks stay wired in: the pre-commit hooks
(.pre-commit-config.yaml), CI (.ci/run) and `make lint` each run both
`ruff check` and `ruff format --check`, with the ruff the dev extra pins
(docs/guide/lint.md)."""

from __future__ import annotations

import re
import shlex
import subprocess
import tomllib
from importlib.metadata import version
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def hooks() -> dict[str, dict]:
    """The hooks of .pre-commit-config.yaml by id."""
    doc = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
    return {h["id"]: h | {"repo": r["repo"]} for r in doc["repos"] for h in r["hooks"]}


def code(text: str) -> list[str]:
    """The lines of a shell script or Makefile, comments and blank lines dropped."""
    return [s for s in (line.split("#")[0].strip() for line in text.splitlines()) if s]


def test_pre_commit_hooks_run_ruff_check_and_format_check_locally():
    h = hooks()
    assert set(h) >= {"ruff-check", "ruff-format"}
    for hook in h.values():  # no hook repository to fetch at commit time
        assert (hook["repo"], hook["language"]) == ("local", "system")
    assert h["ruff-check"]["entry"].endswith("ruff check --force-exclude")
    assert h["ruff-format"]["entry"].endswith("ruff format --check --force-exclude")


def test_the_format_hook_fails_on_unformatted_code_and_passes_formatted(tmp_path):
    entry = shlex.split(hooks()["ruff-format"]["entry"])
    bad, good = tmp_path / "bad.py", tmp_path / "good.py"
    bad.write_text("x=1\n")
    good.write_text("x = 1\n")
    run = [subprocess.run([*entry, str(f)], cwd=ROOT, capture_output=True) for f in (bad, good)]
    assert [r.returncode for r in run] == [1, 0], run[0].stdout


def test_ci_runs_ruff_check_and_format_check_after_setup():
    lines = code((ROOT / ".ci" / "run").read_text())
    assert "set -euo pipefail" in lines  # a failing check fails CI
    setup = next(i for i, s in enumerate(lines) if s.startswith("make setup"))
    for check in (".venv/bin/ruff check .", ".venv/bin/ruff format --check ."):
        assert check in lines[setup:], check  # a line of its own: no `|| true` after it


def test_make_lint_runs_ruff_check_and_format_check():
    text = (ROOT / "Makefile").read_text()
    recipe = re.search(r"^lint:.*\n((?:\t.*\n)+)", text, re.M)
    assert recipe is not None
    assert code(recipe.group(1)) == ["$(BIN)/ruff check .", "$(BIN)/ruff format --check ."]


def test_the_dev_extra_pins_the_installed_ruff():
    dev = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"][
        "dev"
    ]
    pins = [d.split("==", 1)[1] for d in dev if d.startswith("ruff==")]
    assert pins == [version("ruff")]
