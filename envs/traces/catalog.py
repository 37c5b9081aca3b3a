"""Where the shipped trace files live, and name -> path resolution.

The project ships a curated set of real traces under ``<repo>/data/traces/``
(see ``data/PROVENANCE.md``); an installed wheel ships the same folder as
``envs/_data/``. ``FALCON_DATA_DIR`` overrides the ``data/`` folder (e.g. for
a larger private trace set).
"""

from __future__ import annotations

import functools
import os
from importlib import resources
from pathlib import Path

from envs.errors import TraceError

DATA_DIR_ENV = "FALCON_DATA_DIR"
#: the folder of the ``envs`` package that holds ``data/`` in an installed wheel
PACKAGED_DATA = "_data"
#: the train / validation / test split of the files in ``data/traces/`` (:mod:`envs.traces.split`)
SPLIT_FILE = "split.yaml"


def data_dir() -> Path:
    """The project's ``data/`` folder: ``$FALCON_DATA_DIR`` if set; else the copy
    an installed wheel ships as package data (``envs/_data/``, ``setup.py``'s
    ``SHIPPED``); else ``data/`` of the checkout."""
    env = os.environ.get(DATA_DIR_ENV)
    if env:
        return Path(env).expanduser()
    return _installed_data_dir()


@functools.cache
def _installed_data_dir() -> Path:
    """:func:`data_dir` without ``$FALCON_DATA_DIR``: where the package's data
    is does not change while a process runs, and finding it costs about 0.2 ms,
    which every trace path of every episode paid."""
    packaged = resources.files("envs") / PACKAGED_DATA
    if isinstance(packaged, Path) and packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / "data"


def traces_dir() -> Path:
    """``data_dir() / "traces"``."""
    return data_dir() / "traces"


def resolve_trace_path(name_or_path) -> Path:
    """An existing trace file for ``name_or_path``.

    Tried in order: the path as given (absolute, or relative to the working
    directory), then relative to ``data/traces/``, then to ``data/``.
    Raises :class:`TraceError` if none is a file.
    """
    p = Path(name_or_path).expanduser()
    candidates = [p] if p.is_absolute() else [p, traces_dir() / p, data_dir() / p]
    for c in candidates:
        if c.is_file():
            return c
    if any(c.is_dir() for c in candidates):
        raise TraceError(name_or_path, "is a directory, not a trace file")
    where = "" if p.is_absolute() else f" (also looked under {traces_dir()})"
    raise TraceError(name_or_path, f"no such file{where}")


def list_traces(pattern: str = "**/*") -> list[str]:
    """Shipped trace files matching ``pattern``, relative to ``data/traces/``.

    Licence texts, READMEs, ``*.md``, the checksum file and the split file
    are left out.
    """
    root = traces_dir()
    skip = ("LICENSE", "README", "SHA256SUMS")
    return sorted(
        str(p.relative_to(root))
        for p in root.glob(pattern)
        if p.is_file()
        and not p.name.startswith(skip)
        and p.suffix != ".md"
        and p.name != SPLIT_FILE
    )
