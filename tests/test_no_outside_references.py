"""The repository refers to no document that is not in it.

Design notes kept beside a checkout (files named like "SPEC" + "-<topic>.md",
the architecture note) and the papers' plain-text copies (numbered files,
referred to as "seed" + " 000" .. " 004") are not shipped, so a reader of the
repository cannot follow a reference to them: cite a paper by authors,
title, venue and year, and point at the project's own text (a module
docstring, README.md, docs/, docs/reference/formats/scenario_schema.md) for a decision.

Every file that git tracks is read (binary files, those with a NUL byte near
the start as git itself judges, are skipped); each hit is reported with its
file and line. The patterns are built from pieces so that this file does
not match itself.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: case-sensitive; built from pieces so that this file is clean itself
PATTERNS = ("SPEC" + "-", "ARCHITECTURE" + ".md", "seed" + " 00")
#: bytes read to tell a binary file (git's heuristic: a NUL among the first 8000)
BINARY_PROBE = 8000


def tracked_files() -> list[str]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    out = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout
    return [p for p in out.decode("utf-8", "surrogateescape").split("\0") if p]


def hits_in(rel: str, root: Path = ROOT) -> list[str]:
    """``"file:line: pattern: text"`` of every hit in one tracked file."""
    path = root / rel
    if path.is_symlink() or not path.is_file():  # a link, a submodule, or deleted in the work tree
        return []
    data = path.read_bytes()
    if b"\0" in data[:BINARY_PROBE]:
        return []
    needles = [p.encode() for p in PATTERNS]
    if not any(n in data for n in needles):
        return []
    found = []
    for no, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
        for pat in PATTERNS:
            if pat in line:
                found.append(f"{rel}:{no}: {pat!r}: {line.strip()[:160]}")
    return found


def test_no_reference_to_documents_outside_the_repository():
    files = tracked_files()
    assert files, "git ls-files listed nothing"
    hits = [h for rel in files for h in hits_in(rel)]
    assert not hits, (
        f"{len(hits)} reference(s) to documents that are not in the repository (cite the "
        "paper by authors, title, venue and year, or point at the project's own text):\n"
        + "\n".join(hits)
    )


def test_the_check_finds_a_planted_reference(tmp_path):
    (tmp_path / "a.md").write_text("fine\nsee " + "SPEC" + "-x.md\n")
    (tmp_path / "b.bin").write_bytes(b"\0" + ("seed" + " 001").encode())
    assert hits_in("a.md", tmp_path) == [
        "a.md:2: " + repr("SPEC" + "-") + ": see " + "SPEC" + "-x.md"
    ]
    assert hits_in("b.bin", tmp_path) == [] and hits_in("missing.txt", tmp_path) == []
