"""The compiled emulator core: built, loaded, and bit-identical to the .py core."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import envs
from envs import _core

TESTS = Path(__file__).parent
PURE = os.environ.get(_core.PURE_ENV) == "1"


@pytest.mark.skipif(PURE, reason="this run asked for the pure-Python core")
def test_the_compiled_core_is_built_and_loaded():
    """`make setup` compiles the core (setup.py); a missing or stale extension
    would silently cost the speed, so the suite says so."""
    for name in _core.core_modules():  # every one, whatever other tests imported before
        importlib.import_module(name)

    assert envs.core_kind() == "compiled", "the compiled core is not built: run `make core`"
    files = _core.loaded_from()
    assert set(files) == set(_core.core_modules())
    assert all(not f.endswith(".py") for f in files.values()), files


def test_the_core_modules_are_the_ones_with_a_pxd():
    mods = _core.core_modules()
    assert {
        "envs.sim",
        "envs.link",
        "envs.path_sender",
        "envs.transport",
        "envs.receiver",
        "envs.streams",
        "envs.cc.base",
        "envs.cc.newreno",
        "envs.dense",
    } <= set(mods)
    assert all(p.suffix == ".py" and p.exists() for p in mods.values())


def test_compiled_and_pure_python_cores_give_bit_identical_episodes():
    """Every CC, loss model, trace family, schedule, app kind and scheduler kind
    of the corpus (tests/core_corpus.py), two seeds each, on both cores."""
    sys.path.insert(0, str(TESTS))
    try:
        import core_corpus
    finally:
        sys.path.remove(str(TESTS))
    here = core_corpus.digests()
    env = {**os.environ, _core.PURE_ENV: "1"}
    out = subprocess.run(
        [sys.executable, str(TESTS / "core_corpus.py")],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=TESTS.parent,
    )
    pure = json.loads(out.stdout)
    assert pure["core"] == "python"
    assert len(here) == len(pure["digests"]) >= 40
    differ = sorted(k for k in here if here[k] != pure["digests"][k])
    assert not differ, f"compiled ({envs.core_kind()}) and pure-Python cores differ on {differ}"


def test_a_stale_extension_is_replaced_by_its_source(tmp_path):
    """An edited .py that was not rebuilt must run as edited: the core runs
    from the sources (all of them: the extensions share C types), with a
    warning naming the stale module."""
    code = (
        "import warnings\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    warnings.simplefilter('always')\n"
        "    import envs, envs.sim, envs.transport\n"
        "print(envs.core_kind(), envs.sim.__file__, envs.transport.__file__, "
        "'|'.join(str(x.message) for x in w))\n"
    )
    sim = Path(envs.__file__).parent / "sim.py"
    ext = _core._extension(sim)
    if ext is None:
        pytest.skip("the compiled core is not built")
    st = sim.stat()
    try:
        os.utime(sim, (st.st_atime, ext.stat().st_mtime + 10))
        res = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            cwd=TESTS.parent,
            env={k: v for k, v in os.environ.items() if k != _core.PURE_ENV},
        )
    finally:
        os.utime(sim, (st.st_atime, st.st_mtime))
    kind, sim_file, transport_file, message = res.stdout.strip().split(" ", 3)
    assert (
        kind == "python" and sim_file.endswith("sim.py") and transport_file.endswith("transport.py")
    )
    assert "envs.sim" in message and "make core" in message


def test_pure_python_env_selects_the_sources():
    res = subprocess.run(
        [
            sys.executable,
            "-c",
            "import envs, envs.transport as t; print(envs.core_kind(), t.__file__)",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=TESTS.parent,
        env={**os.environ, _core.PURE_ENV: "1"},
    )
    kind, path = res.stdout.split()
    assert kind == "python" and path.endswith("transport.py")


def test_the_py_core_runs_without_cython_installed():
    """The ``.py`` sources import Cython only for its directives
    (``@cython.boundscheck``); an install without Cython gets no-op stand-ins
    (``envs/_cython_stub.py``) and emulates the same steps as the compiled core."""
    episode = (
        "from envs.gym_env import MultipathSchedulingEnv\n"
        "e = MultipathSchedulingEnv()\n"
        "o, _ = e.reset(seed=1)\n"
        "total = 0.0\n"
        "for t in range(60):\n"
        "    o, r, *_ = e.step(t % 2)\n"
        "    total += r + float(o.sum())\n"
        "import envs, envs.mdp\n"
        "stand_in = getattr(getattr(envs.mdp, 'cython', None), '__module__', '-')\n"
        "print(envs.core_kind(), stand_in, repr(total))\n"
    )
    runs = {}
    for pure in (True, False):
        blocked = "import sys; sys.modules['cython'] = None\n" if pure else ""
        env = {k: v for k, v in os.environ.items() if k != _core.PURE_ENV}
        if pure:
            env[_core.PURE_ENV] = "1"
        res = subprocess.run(
            [sys.executable, "-c", blocked + episode],
            capture_output=True,
            text=True,
            check=True,
            cwd=TESTS.parent,
            env=env,
        )
        runs[pure] = res.stdout.split()
    assert runs[True][:2] == ["python", "envs._cython_stub"]
    assert runs[False][0] == "compiled"
    assert runs[True][2] == runs[False][2]
