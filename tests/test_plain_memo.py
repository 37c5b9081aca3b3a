"""envs.plain.PlainMemo: the config normalisers' kept results (every episode's set-up
normalises the same scenario and app)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from envs.apps import normalise_app
from envs.errors import ConfigError
from envs.plain import PlainMemo
from envs.scenario import normalise_scenario

SCENARIO = {"name": "static_4g_5g", "paths": [{"link": "4g"}, {"link": "5g"}]}


def _counted(f):
    calls = []
    return calls, (lambda cfg: calls.append(1) or f(cfg))


def test_a_result_is_kept_from_an_inputs_second_sight_and_each_caller_gets_a_copy():
    calls, f = _counted(lambda cfg: {"x": [cfg["x"], 2], "nested": {"y": cfg["x"]}})
    memo = PlainMemo(f, size=2)
    for _ in range(2):  # first sight: remembered by key only; second: kept
        memo({"x": 1})
    a = memo({"x": 1})
    a["x"].append(99)
    a["nested"]["y"] = -1
    assert memo({"x": 1}) == {"x": [1, 2], "nested": {"y": 1}} and len(calls) == 2
    memo({"x": 3})
    memo({"x": 4})  # a third input: the oldest ({"x": 1}) goes
    memo({"x": 1})
    assert len(calls) == 5
    memo.clear()
    memo({"x": 4})
    assert len(calls) == 6


def test_inputs_equal_but_of_other_types_or_signs_are_other_inputs():
    calls, f = _counted(
        lambda cfg: {"type": type(cfg["x"]).__name__, "sign": math.copysign(1, cfg["x"])}
    )
    memo = PlainMemo(f)
    for x, want in ((1, "int"), (True, "bool"), (1.0, "float"), (np.float64(1.0), "float64")):
        for _ in range(3):
            assert memo({"x": x})["type"] == want
    for x, sign in ((0.0, 1.0), (-0.0, -1.0)):
        for _ in range(3):
            assert memo({"x": x})["sign"] == sign
    assert len(calls) == 12  # twice per distinct input (then kept)


def test_inputs_that_cannot_be_keyed_or_that_raise_are_never_kept():
    def checked(cfg):
        if cfg["x"] < 0:
            raise ConfigError("x: negative")
        return dict(cfg)

    calls, f = _counted(checked)
    memo = PlainMemo(f)
    for _ in range(3):
        memo({"x": 0, "f": lambda: 0})  # not picklable
        with pytest.raises(ConfigError, match="x: negative"):
            memo({"x": -1})
    assert len(calls) == 6


def test_normalisers_return_fresh_copies_of_the_same_answer(monkeypatch):
    from envs import scenario

    calls, f = _counted(scenario._NORMALISED.function)
    monkeypatch.setattr(scenario._NORMALISED, "function", f)
    scenario._NORMALISED.clear()
    first = normalise_scenario(SCENARIO)
    first["paths"][0]["rtt_ms"] = -5.0  # a caller may change its copy
    for _ in range(3):
        again = normalise_scenario(
            {"name": "static_4g_5g", "paths": [{"link": "4g"}, {"link": "5g"}]}
        )
        again["paths"][1]["rtt_ms"] = -7.0
    assert len(calls) == 2
    assert normalise_scenario(SCENARIO) == scenario._normalised(SCENARIO)
    for _ in range(3):
        app = normalise_app({"kind": "bulk", "size_bytes": 1000})
        app["size_bytes"] = 7
    assert normalise_app({"kind": "bulk", "size_bytes": 1000})["size_bytes"] == 1000
    with pytest.raises(ConfigError, match="size_bytes"):
        normalise_app({"kind": "bulk", "size_bytes": -1})


def test_a_scenario_normalised_without_keeping_is_neither_looked_up_nor_remembered():
    from envs import scenario

    scenario._NORMALISED.clear()
    for _ in range(3):
        assert normalise_scenario(SCENARIO, keep=False) == scenario._normalised(SCENARIO)
    assert not scenario._NORMALISED._kept
    normalise_scenario(SCENARIO)
    assert len(scenario._NORMALISED._kept) == 1
