"""``envs/mdp.py`` as plain Python, for data that is not the emulator's.

The emulator core compiles ``envs.mdp`` (Cython, typed by ``envs/mdp.pxd``),
and the compiled functions accept only the emulator's own path objects. The
transport's decision logs carry the same quantities in plain records, so the
experience converter and the tests evaluate the very source of
``envs/mdp.py`` (:func:`reference_mdp`), uncompiled, on them.
"""

from __future__ import annotations

import importlib.util
import sys
from functools import cache
from pathlib import Path
from types import ModuleType

import envs


@cache
def reference_mdp() -> ModuleType:
    """The module ``envs/mdp.py`` loaded from its source, not the compiled core."""
    source = Path(envs.__file__).with_name("mdp.py")
    spec = importlib.util.spec_from_file_location("falcon.deploy._envs_mdp_source", source)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
