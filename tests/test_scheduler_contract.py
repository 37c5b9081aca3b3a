"""The typed scheduler contract (envs.scheduler, envs.views; docs/guide/scheduler_contract.md):
``decide`` is abstract, the emulator's real views satisfy the view protocols, learners
are Trainable, every scheduler's ``decide`` is annotated with them, and the type check
flags a plug-in that returns what the connection cannot take."""

from __future__ import annotations

import inspect
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import envs
from baselines import SCHEDULERS, scheduler_class
from baselines.rule_based.minrtt import MinRTT
from envs.scheduler import Decision, Scheduler, Trainable
from envs.views import ConnectionView, EventClock, PathView, StreamView

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = {"paths": [{"rtt_ms": 20, "bandwidth_mbps": 10}, {"rtt_ms": 40, "bandwidth_mbps": 5}]}


def test_a_scheduler_without_decide_cannot_be_instantiated():
    class NoDecide(Scheduler):
        name = "no_decide"

    with pytest.raises(TypeError, match="abstract method decide"):
        NoDecide()


def test_the_emulators_views_satisfy_the_protocols():
    """An emulated episode's view (compiled or pure-Python core) is a ConnectionView, its
    paths PathViews, its pending streams StreamViews and its clock an EventClock."""
    seen: dict[str, bool] = {}

    class Spy(MinRTT):
        def decide(self, view: ConnectionView) -> int | Decision | None:
            if not seen:
                seen["connection"] = isinstance(view, ConnectionView)
                seen["paths"] = len(view.paths) == 2 and all(
                    isinstance(p, PathView) for p in view.paths
                )
                streams = view.streams_pending()
                seen["streams"] = bool(streams) and all(isinstance(s, StreamView) for s in streams)
                seen["clock"] = isinstance(view.sim, EventClock)
            return super().decide(view)

    res = envs.run_episode(SCENARIO, {"kind": "bulk", "size_bytes": 100_000}, Spy(), seed=0)
    assert res.metrics["download_time_s"] > 0
    assert seen == {"connection": True, "paths": True, "streams": True, "clock": True}


def test_an_object_missing_a_view_member_is_not_a_view():
    class Partial:
        now = 0.0
        paths: list = []

    assert not isinstance(Partial(), ConnectionView)
    assert not isinstance(Partial(), PathView)


def test_learners_are_trainable_and_rules_are_not():
    assert isinstance(scheduler_class("peekaboo")(), Trainable)
    assert issubclass(scheduler_class("dqn_off"), Trainable)
    assert not isinstance(MinRTT(), Trainable)


@pytest.mark.parametrize("name", sorted(SCHEDULERS))
def test_every_registered_schedulers_decide_is_typed(name):
    """decide (wherever the class inherits it from) takes a ConnectionView and returns
    what the connection takes, so the type check covers its body."""
    cls = scheduler_class(name)
    ann = inspect.get_annotations(cls.decide)
    assert ann.get("view") == "ConnectionView", (
        f"{cls.__name__}.decide: view is {ann.get('view')!r}"
    )
    assert ann.get("return") in ("int | Decision | None", "int | None"), ann.get("return")


GOOD_PLUGIN = """
from envs.scheduler import ConnectionView, Decision, Scheduler


class Fastest(Scheduler):
    name = "fastest"

    def decide(self, view: ConnectionView) -> int | Decision | None:
        open_paths = [p for p in view.paths if p.has_room]
        if not open_paths:
            return None
        return min(open_paths, key=lambda p: p.srtt).index
"""

BAD_PLUGIN = """
from envs.scheduler import ConnectionView, Decision, Scheduler


class Named(Scheduler):
    name = "named"

    def decide(self, view: ConnectionView) -> int | Decision | None:
        return "path-0"
"""


def test_the_type_check_flags_a_plugin_with_a_wrong_return_type(tmp_path):
    """mypy with the project's configuration: the well-typed plug-in passes, the one whose
    decide returns a str is flagged on that line (a few seconds with a fresh cache)."""
    (tmp_path / "good_plugin.py").write_text(textwrap.dedent(GOOD_PLUGIN))
    (tmp_path / "bad_plugin.py").write_text(textwrap.dedent(BAD_PLUGIN))
    cmd = [
        sys.executable,
        "-m",
        "mypy",
        "--config-file",
        str(ROOT / "pyproject.toml"),
        "--cache-dir",
        str(tmp_path / "cache"),
        str(tmp_path / "good_plugin.py"),
        str(tmp_path / "bad_plugin.py"),
    ]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    lines = [ln for ln in out.stdout.splitlines() if ": error:" in ln]
    assert out.returncode == 1, out.stdout + out.stderr
    assert len(lines) == 1, out.stdout
    assert "bad_plugin.py:9: error: Incompatible return value type" in lines[0], lines[0]
    assert "[return-value]" in lines[0]
