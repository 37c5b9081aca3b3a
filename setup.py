"""Build hooks: the compiled emulator core and the folders a wheel ships (the rest: pyproject.toml).

The modules of :data:`COMPILED` (those with a ``.pxd``) are plain Python, and stay the reference
implementation; Cython compiles them a second time into C extension modules
with the C types of the ``.pxd`` file beside each (cdef classes with typed
attributes, typed locals in the per-packet methods). Python imports an
extension module in preference to the ``.py`` of the same name, so an
installed build runs the compiled core; ``FALCON_PURE_PYTHON=1`` selects the
``.py`` sources at run time (``envs/_core.py``), and ``tests/test_core.py``
checks that both give bit-identical episodes.

``python -m build --wheel`` makes a wheel with the compiled core and, as
package data, the folders of :data:`SHIPPED` (``docs/guide/install.md``).

Compiling is optional: without Cython or a C compiler, or with
``FALCON_PURE_PYTHON=1`` at install time, the package installs without the
extensions and ``envs`` warns once, at import, that it runs the pure-Python
core.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

#: the modules compiled into the core: every module of envs/ with a .pxd beside it
COMPILED = sorted(str(p.with_suffix(".py")) for p in Path("envs").rglob("*.pxd"))

#: Cython directives: annotations are documentation (the .pxd files give the C
#: types); everything else keeps Python's semantics (division by zero raises,
#: negative indices wrap), so the results stay bit-identical to the .py core.
#: ``initializedcheck`` off: a typed array attribute is not tested for being set
#: at each index (each is set before it is read; the test cost 4 % of a
#: minRTT episode's instructions)
DIRECTIVES = {
    "language_level": 3,
    "annotation_typing": False,
    "binding": False,
    "initializedcheck": False,
}

#: no fused multiply-add contraction: a*b+c must round twice, as in Python
CFLAGS = ["-O2", "-ffp-contract=off"]

#: modules whose loops the compiler should vectorise (-O3 versions them
#: against aliasing); vectorising independent lanes keeps every lane's order
VECTORISED = {"envs/dense.py": ["-O3", "-ffp-contract=off"]}

#: modules that draw through NumPy's random C API (numpy/random/distributions.h, included
#: by envs/link_draws.h) and link the npyrandom library NumPy ships for compiled extensions
NUMPY_RANDOM = {"envs/link.py"}


def numpy_options(path: str) -> dict:
    """NumPy's headers for every module (the modules that cimport ``envs.link`` include its
    header), and the npyrandom library for the modules of :data:`NUMPY_RANDOM`."""
    import numpy as np

    options: dict = {"include_dirs": [np.get_include()]}
    if path in NUMPY_RANDOM:
        options["library_dirs"] = [str(Path(np.__file__).parent / "random" / "lib")]
        options["libraries"] = ["npyrandom"]
    return options


def extensions() -> list:
    if os.environ.get("FALCON_PURE_PYTHON") == "1":
        return []
    try:
        from Cython.Build import cythonize
    except ImportError:
        print(
            "falcon-mpsched: Cython is not installed; installing the pure-Python emulator core",
            file=sys.stderr,
        )
        return []
    exts = [
        Extension(
            path[:-3].replace("/", "."),
            [path],
            extra_compile_args=VECTORISED.get(path, CFLAGS),
            # a module's C helpers (envs/dense.py: dense_layer.h) rebuild it when they change
            depends=[str(h) for h in Path(path).parent.glob(Path(path).stem + "_*.h")],
            optional=True,
            **numpy_options(path),
        )
        for path in COMPILED
    ]
    try:
        return cythonize(exts, compiler_directives=DIRECTIVES, quiet=True)
    except Exception as e:  # a Cython error must not block the install: the .py core still works
        print(
            f"falcon-mpsched: could not compile the emulator core ({e}); installing the pure-Python core",
            file=sys.stderr,
        )
        return []


class ParallelBuildExt(build_ext):
    """Compiles the modules in parallel (one job per core) unless ``-j`` says otherwise."""

    def finalize_options(self):
        super().finalize_options()
        if not self.parallel:
            self.parallel = os.cpu_count() or 1


#: folders of the checkout that a wheel ships as package data (package -> folder),
#: so that an installed package runs from any folder without the checkout: the
#: Hydra configs (configs/ -> falcon/_configs/, found by falcon.paths.config_dir)
#: and the traces, page and stream models the jobs read (data/ -> envs/_data/,
#: found by envs.traces.catalog.data_dir). An editable install reads the
#: checkout's folders themselves; neither folder moves.
SHIPPED = {"falcon._configs": "configs", "envs._data": "data"}


class BuildPyShipped(build_py):
    """build_py that also maps each folder of :data:`SHIPPED` into the built packages."""

    def finalize_options(self):
        super().finalize_options()
        if getattr(self, "editable_mode", False):
            return
        # own copies: the distribution's package list stays as pyproject.toml
        # finds it (an editable install's strategy reads it)
        self.packages = [*self.packages, *(p for p in SHIPPED if p not in self.packages)]
        self.package_data = {**self.package_data, **{p: ["**/*"] for p in SHIPPED}}
        self.package_dir.update(SHIPPED)


setup(
    ext_modules=extensions(),
    cmdclass={"build_ext": ParallelBuildExt, "build_py": BuildPyShipped},
)
