"""Which emulator core runs: the compiled one (C extensions) or the ``.py`` sources.

The modules of ``envs`` that have a ``.pxd`` beside them form the emulator
core (simulator, links, streams, congestion control, sender, receiver,
connection). ``setup.py`` compiles each with Cython into an extension module
next to its source; Python's import system prefers the extension. The
sources stay the reference implementation, and both give bit-identical
episodes (``tests/test_core.py``).

:func:`install` (run when this module is imported, which ``envs/__init__.py``
does first) makes a module load from its ``.py`` source instead when:

* ``FALCON_PURE_PYTHON=1`` is set (the reference core, e.g. to compare);
* some extension is missing (no compiler at install time): one warning;
* some extension is older than its ``.py`` or ``.pxd`` (an edited source
  that was not rebuilt, ``make core``): one warning naming the modules, so
  that an edit is never silently ignored.

It is all or nothing: the compiled modules use each other's C types, so one
stale module sends every core module to its source.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
import warnings
from pathlib import Path

#: environment variable that selects the pure-Python core
PURE_ENV = "FALCON_PURE_PYTHON"

#: a source counts as edited after the build only if it is this much newer
#: than its extension [s] (a wheel unpacks files in any order, at one time)
STALE_TOLERANCE_S = 2.0

_ROOT = Path(__file__).resolve().parent
_source_modules: set[str] = set()
_state: dict = {}


def core_modules() -> dict[str, Path]:
    """``{module name: .py path}`` of the modules that make up the core."""
    out = {}
    for pxd in sorted(_ROOT.rglob("*.pxd")):
        rel = pxd.relative_to(_ROOT.parent).with_suffix("")
        out[".".join(rel.parts)] = pxd.with_suffix(".py")
    return out


def _extension(py: Path) -> Path | None:
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        candidate = py.with_suffix(suffix)
        if candidate.exists():
            return candidate
    return None


class _SourceFinder:
    """A meta-path finder that loads the listed core modules from their ``.py``."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if name not in _source_modules:
            return None
        py = core_modules()[name]
        return importlib.util.spec_from_file_location(name, py)


def install() -> str:
    """Decide, once per process, which core runs: ``"compiled"`` or ``"python"`` (the sources)."""
    if "kind" in _state:
        return _state["kind"]
    modules = core_modules()
    if os.environ.get(PURE_ENV) == "1":
        _source_modules.update(modules)
        kind = "python"
    else:
        missing, stale = [], []
        for name, py in modules.items():
            ext = _extension(py)
            if ext is None:
                missing.append(name)
            elif ext.stat().st_mtime + STALE_TOLERANCE_S < max(
                py.stat().st_mtime, py.with_suffix(".pxd").stat().st_mtime
            ):
                stale.append(name)
        if missing:
            warnings.warn(
                f"envs: the compiled emulator core is not built ({len(missing)} of {len(modules)} "
                f"modules missing); running the pure-Python core. `make core` builds it "
                f"({PURE_ENV}=1 silences this).",
                RuntimeWarning,
                stacklevel=2,
            )
        elif stale:
            warnings.warn(
                f"envs: compiled module(s) older than their source: {', '.join(stale)}; running "
                f"the pure-Python core (`make core` rebuilds the compiled one)",
                RuntimeWarning,
                stacklevel=2,
            )
        # all or nothing: compiled modules cimport each other's C types
        if missing or stale:
            _source_modules.update(modules)
        kind = "python" if _source_modules else "compiled"
    if _source_modules and _SourceFinder not in sys.meta_path:
        sys.meta_path.insert(0, _SourceFinder)
    _state["kind"] = kind
    return kind


def core_kind() -> str:
    """``"compiled"`` or ``"python"``: the emulator core this process runs."""
    return install()


def loaded_from() -> dict[str, str]:
    """``{module name: file}`` of the core modules imported so far."""
    return {
        name: getattr(sys.modules[name], "__file__", "?")
        for name in core_modules()
        if name in sys.modules
    }


install()  # on import: envs/__init__.py imports this module before any core module

__all__ = ["PURE_ENV", "core_kind", "core_modules", "install", "loaded_from"]
