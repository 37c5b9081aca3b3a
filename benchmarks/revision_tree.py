"""A git revision's source tree with its compiled core built, for benchmarks that time
the working tree against an earlier commit (``python -m benchmarks.emulator_speed
--against REV``).

The tree is the revision's tracked files (``git archive``, nothing of the working
tree's own changes or untracked files), unpacked under the FALCON cache
(:func:`falcon.paths.cache_dir`, ``revision-trees/<commit>``) and compiled in place
with this interpreter (``setup.py build_ext --inplace``), once per commit: a later
run reuses it. It is unpacked and built in a temporary folder beside and renamed into
place when finished, so a failed or interrupted build leaves nothing a later run
would take for a built tree. ``FALCON_PURE_PYTHON=1`` in the environment builds no
extension (``setup.py``), and the revision then runs its pure-Python core.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

#: the repository this module belongs to
ROOT = Path(__file__).resolve().parent.parent
#: the file in a finished tree that says what was built
MARKER = ".falcon-revision-tree.json"


class RevisionTreeError(RuntimeError):
    """A revision that cannot be resolved, unpacked or built (a one-line message)."""


def _git(root: Path, *args: str) -> str:
    try:
        res = subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, check=False
        )
    except FileNotFoundError:
        raise RevisionTreeError("git is not installed: a revision's tree needs it") from None
    if res.returncode != 0:
        last = (res.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise RevisionTreeError(f"git {' '.join(args)}: {last}")
    return res.stdout.strip()


def resolve(rev: str, root: Path = ROOT) -> str:
    """The full commit hash ``rev`` (a hash, branch, tag or ``HEAD~1``) names in ``root``."""
    if not rev or rev.startswith("-"):
        raise RevisionTreeError(f"revision: expected a git revision, got {rev!r}")
    try:
        return _git(root, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    except RevisionTreeError:
        _git(root, "rev-parse", "--git-dir")  # not a checkout: git's own message
        raise RevisionTreeError(f"revision {rev!r}: no such commit in {root}") from None


def build_command() -> list[str]:
    """The command that compiles a tree's core in place (run in the tree)."""
    jobs = str(max(1, os.cpu_count() or 1))
    return [sys.executable, "setup.py", "-q", "build_ext", "--inplace", "-j", jobs]


def prepared_tree(
    rev: str,
    root: Path = ROOT,
    cache: Path | None = None,
    build: list[str] | None = None,
    log=None,
) -> tuple[Path, str]:
    """The folder of revision ``rev``'s tree with its core built, and its commit hash.

    ``cache``: the folder that keeps the trees (default: ``revision-trees`` of the
    FALCON cache); ``build``: the command that compiles a tree in place (default
    :func:`build_command`); progress lines go to ``log`` (default: standard error). Raises
    :class:`RevisionTreeError` with one line when ``rev`` is not a commit of ``root``
    or its tree cannot be unpacked or built; nothing is left behind then."""
    commit = resolve(rev, root)
    if cache is None:
        from falcon.paths import cache_dir

        cache = cache_dir() / "revision-trees"
    tree = cache / commit
    if (tree / MARKER).is_file():
        return tree, commit
    if tree.exists():
        raise RevisionTreeError(
            f"{tree} exists but holds no finished build of {commit[:12]}; remove it"
        )
    cache.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{commit[:12]}-", dir=cache))
    try:
        print(
            f"revision {rev} ({commit[:12]}): unpacking and building its compiled core in "
            f"{tree} (once; later runs reuse it)",
            file=log or sys.stderr,
            flush=True,
        )
        tracked = _unpack(root, commit, tmp)
        cmd = build or build_command()
        res = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, check=False)
        if res.returncode != 0:
            out = (res.stderr + res.stdout).strip().splitlines() or ["(no output)"]
            raise RevisionTreeError(
                f"revision {rev} ({commit[:12]}): building its core failed: {out[-1]}"
            )
        _drop_build_files(tmp, tracked)
        compiled = sorted(str(p.relative_to(tmp)) for p in tmp.rglob("*.so"))
        (tmp / MARKER).write_text(
            json.dumps({"commit": commit, "python": sys.version.split()[0], "compiled": compiled})
        )
        try:
            os.replace(tmp, tree)
        except OSError:  # another run finished the same tree first: use that one
            if not (tree / MARKER).is_file():
                raise
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return tree, commit


def _drop_build_files(tree: Path, tracked: set[str]) -> None:
    """Remove what only the build needed: ``build/`` (object files and copies of the
    modules) and the C files Cython generated (those ``git archive`` did not write). The
    extension modules stay beside their sources; a tree of this repository keeps 48 MB
    of the 174 MB the build left."""
    if "build" not in {name.split("/", 1)[0] for name in tracked}:
        shutil.rmtree(tree / "build", ignore_errors=True)
    for c in tree.rglob("*.c"):
        if c.relative_to(tree).as_posix() not in tracked:
            c.unlink()


def _unpack(root: Path, commit: str, dest: Path) -> set[str]:
    """The tracked files of ``commit`` into ``dest`` (``git archive``, streamed); their
    paths, relative to ``dest``."""
    proc = subprocess.Popen(
        ["git", "-C", str(root), "archive", "--format=tar", commit],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    try:
        with tarfile.open(fileobj=proc.stdout, mode="r|") as tar:
            names = set()
            for member in tar:
                names.add(member.name.rstrip("/"))
                tar.extract(member, dest, filter="data")
    finally:
        proc.stdout.close()
        err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        rc = proc.wait()
    if rc != 0:
        last = (err.strip().splitlines() or ["(no message)"])[-1]
        raise RevisionTreeError(f"git archive {commit[:12]}: {last}")
    return names


__all__ = ["MARKER", "RevisionTreeError", "prepared_tree", "resolve"]
