"""Test trace files stay out of anything that learns.

    with training_reads("training agent 'dqn_off' on scenario 'x'"):
        scheduler.fit(...)       # a test file read here raises TraceError

While :func:`training_reads` is active in a process,
:func:`~envs.traces.loaders.load_trace` (every trace a scenario loads goes
through it) refuses a file whose bytes are those of a *test* file of
``data/traces/split.yaml`` (:mod:`envs.traces.split`): one line naming the
file, its split and what was being done. The file is recognised by its
SHA-256, so a renamed copy is refused too.

The state is the environment variable :data:`GUARD_ENV` (its value says
what is being done), so processes started inside the block (a local pool,
subprocesses) inherit it. Workers that were running before (a Ray cluster,
a pool started earlier) do not: the functions that learn enter the guard
themselves, on the worker's side (falcon.train's training step, the bank
build's chunk jobs, the task collector). Without a split file nothing is
refused.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from envs.errors import TraceError

#: the environment variable that holds the guard's state: what is being done
GUARD_ENV = "FALCON_TRAINING_READS"


@contextmanager
def training_reads(what: str) -> Iterator[None]:
    """Refuse test trace files while the block runs (this process and the
    processes it starts); ``what`` (e.g. ``"training agent 'dqn_on' on
    scenario 'x'"``) goes into the error. A block inside another keeps the
    outer one's ``what`` (the outer step knows the condition)."""
    if not isinstance(what, str) or not what.strip():
        raise ValueError("training_reads: say what is being done (a non-empty string)")
    if guarded() is not None:
        yield
        return
    os.environ[GUARD_ENV] = " ".join(what.split())
    try:
        yield
    finally:
        os.environ.pop(GUARD_ENV, None)


def guarded() -> str | None:
    """What the active guard says is being done; None when no guard is active."""
    return os.environ.get(GUARD_ENV) or None


def check_read(path: Path) -> None:
    """Raise :class:`TraceError` if a guard is active and ``path`` holds a
    test file's bytes (called by the trace loader before it parses)."""
    what = guarded()
    if what is None:
        return
    from envs.traces.split import read_split, sha256_file, split_file

    if not split_file().is_file():
        return
    split = read_split()
    entry = split.by_hash.get(sha256_file(path))
    if entry is not None and entry.split == "test":
        copy = (
            ""
            if Path(path).resolve() == (split.source.parent / entry.path).resolve()
            else f" (the bytes of {entry.path})"
        )
        raise TraceError(
            path,
            f"a test-split file{copy} read while {what}; test files of "
            f"{split.source.name} are for reporting only",
        )


__all__ = ["GUARD_ENV", "training_reads", "guarded", "check_read"]
