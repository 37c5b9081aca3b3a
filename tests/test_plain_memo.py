"""envs.plain.PlainMemo: the config normalisers' kept results (every episode's set-up
normalises the same scenario and app)."""

from __future__ import annotations

import numpy as np
import pytest

from envs.apps import normalise_app
from envs.errors import ConfigError
from envs.plain import PlainMemo, frozen_plain
from envs.scenario import normalise_scenario

SCENARIO = {"name": "static_4g_5g", "paths": [{"link": "4g"}, {"link": "5g"}]}


def test_frozen_keys_tell_apart_what_equality_would_not():
    keys = [frozen_plain(v) for v in (1, 1.0, True, 0.0, -0.0, "1", None, [1], (1,), {"a": 1})]
    assert len(set(keys)) == len(keys)
    assert frozen_plain({"a": [1, {"b": 2.5}]}) == frozen_plain({"a": [1, {"b": 2.5}]})
    assert frozen_plain({"a": 1, "b": 2}) != frozen_plain({"b": 2, "a": 1})  # key order counts
    for odd in (np.float64(1.0), object(), {"a": np.int64(3)}, [1, {2}]):
        assert frozen_plain(odd) is None


def test_a_kept_result_is_computed_once_and_each_caller_gets_its_own_copy():
    calls = []

    def f(cfg):
        calls.append(1)
        return {"x": [cfg["x"], 2], "nested": {"y": cfg["x"]}}

    memo = PlainMemo(f, size=2)
    a = memo({"x": 1})
    a["x"].append(99)
    a["nested"]["y"] = -1
    b = memo({"x": 1})
    assert b == {"x": [1, 2], "nested": {"y": 1}} and len(calls) == 1
    memo({"x": True})  # equal to 1, but another input
    assert len(calls) == 2
    memo({"x": 3})  # a third input: the oldest ({"x": 1}) goes
    memo({"x": 1})
    assert len(calls) == 4
    memo.clear()
    memo({"x": 3})
    assert len(calls) == 5


def test_inputs_that_are_not_plain_data_or_that_raise_are_never_kept():
    calls = []

    def f(cfg):
        calls.append(1)
        if cfg["x"] < 0:
            raise ConfigError("x: negative")
        return dict(cfg)

    memo = PlainMemo(f)
    for _ in range(2):
        memo({"x": np.int64(4)})
        with pytest.raises(ConfigError, match="x: negative"):
            memo({"x": -1})
    assert len(calls) == 4


def test_normalisers_return_fresh_copies_of_the_same_answer(monkeypatch):
    from envs import scenario

    calls = []
    real = scenario._NORMALISED.function
    monkeypatch.setattr(scenario._NORMALISED, "function", lambda c: calls.append(1) or real(c))
    scenario._NORMALISED.clear()
    first = normalise_scenario(SCENARIO)
    first["paths"][0]["rtt_ms"] = -5.0  # a caller may change its copy
    second = normalise_scenario({"name": "static_4g_5g", "paths": [{"link": "4g"}, {"link": "5g"}]})
    assert len(calls) == 1 and second["paths"][0]["rtt_ms"] > 0
    assert second == real(SCENARIO)
    app = normalise_app({"kind": "bulk", "size_bytes": 1000})
    app["size_bytes"] = 7
    assert normalise_app({"kind": "bulk", "size_bytes": 1000})["size_bytes"] == 1000
    with pytest.raises(ConfigError, match="size_bytes"):
        normalise_app({"kind": "bulk", "size_bytes": -1})
