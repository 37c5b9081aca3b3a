"""Rule-based schedulers decided in the compiled core (envs.rules): the same
episodes, bit for bit, as their Python ``decide``."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from baselines import make_scheduler
from baselines.rule_based.fixed_split import FixedSplit
from baselines.rule_based.policy_family import SplitThreshold
from envs.rule_codes import (
    COMPLETION_DQN,
    FIXED_SPLIT,
    MINRTT,
    MINRTT_UNLESS_SLOWER,
    MINRTT_UNTIL_TAIL,
    MODES,
    ROUND_ROBIN,
    RULES,
    SPLIT_THRESHOLD,
)
from envs.rules import rule_code
from envs.runner import run_episode, setup_episode
from envs.scheduler import FirstWithRoom, Scheduler

sys.path.insert(0, str(Path(__file__).parent))
from core_corpus import _digest  # noqa: E402

SCENARIOS = {
    "table1_4g_5g": {"paths": [{"link": "4g"}, {"link": "5g"}]},
    "three_paths_lossy": {
        "paths": [
            {"bandwidth_mbps": 20, "rtt_ms": 30, "rtt_std_ms": 6, "loss": 0.01},
            {"bandwidth_mbps": 8, "rtt_ms": 90, "rtt_std_ms": 20},
            {"bandwidth_mbps": 40, "rtt_ms": 15, "loss": 0.002},
        ]
    },
    "trace_pair": {
        "paths": [
            {"trace": "mahimahi_cellular_lte/ATT-LTE-driving-2016.down", "rtt_ms": 60},
            {"link": "wlan"},
        ]
    },
    "small_window": {
        "paths": [{"bandwidth_mbps": 50, "rtt_ms": 20}, {"bandwidth_mbps": 5, "rtt_ms": 200}],
        "flow_control": {"initial_window_bytes": 65536, "autotune": False},
        "pacing": {"enabled": False},
    },
    "no_setup_probing": {
        "paths": [
            {"bandwidth_mbps": 30, "rtt_ms": 40},
            {"bandwidth_mbps": 30, "rtt_ms": 20},
            {"bandwidth_mbps": 10, "rtt_ms": 10},
        ],
        "setup": "none",
    },
}
NATIVE = {
    "minrtt": MINRTT,
    "rr": ROUND_ROBIN,
    "blest": MINRTT_UNLESS_SLOWER,
    "ecf": MINRTT_UNLESS_SLOWER,
    "minrtt_or": MINRTT_UNTIL_TAIL,
    "minrtt_xlink": MINRTT_UNTIL_TAIL,
}


def python_twin(scheduler: str | type, **kwargs) -> Scheduler:
    """The scheduler (a registry name, or a class built with ``kwargs``) with its
    own ``decide`` called for every decision (no native rule)."""
    base = scheduler if isinstance(scheduler, type) else type(make_scheduler(scheduler))
    twin = type(
        f"Python{base.__name__}", (base,), {"decide": lambda self, view: base.decide(self, view)}
    )
    return twin(**kwargs)


def digest(scenario: dict, scheduler: Scheduler, seed: int) -> str:
    r = run_episode(
        {"max_duration_s": 20.0, **scenario},
        {"kind": "bulk", "size_bytes": 1_500_000},
        scheduler,
        seed,
    )
    keys = sorted(r.metrics)
    return _digest(
        [r.metrics[k] for k in keys],
        r.object_times,
        r.timeseries["oqs_t"],
        r.timeseries["oqs_bytes"],
    )


@pytest.mark.parametrize("name", sorted(NATIVE))
@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_native_rules_give_the_episodes_of_the_python_decide(name, scenario):
    for seed in (0, 1):
        native, twin = make_scheduler(name), python_twin(name)
        assert rule_code(native) == NATIVE[name] and rule_code(twin) == 0
        assert digest(SCENARIOS[scenario], native, seed) == digest(SCENARIOS[scenario], twin, seed)


#: the fixed splits and the oracle family's members (share, threshold, reinject)
SPLITS = {
    "fixed_0.3": (FixedSplit, {"share": 0.3}),
    "fixed_1": (FixedSplit, {"share": 1.0}),
    "exit_reinject": (SplitThreshold, {"share": 0.2, "threshold": 1.5, "reinject": True}),
    "split_reinject": (SplitThreshold, {"share": 0.7, "threshold": None, "reinject": True}),
    "exit_only": (SplitThreshold, {"share": 0.5, "threshold": 1.5}),
    "exit_from_one_path": (SplitThreshold, {"share": 0.0, "threshold": 1.5}),
}


@pytest.mark.parametrize("split", sorted(SPLITS))
@pytest.mark.parametrize("scenario", ["table1_4g_5g", "trace_pair", "small_window"])
def test_the_splits_decided_natively_give_the_episodes_of_their_python_decide(split, scenario):
    cls, kwargs = SPLITS[split]
    want = FIXED_SPLIT if cls is FixedSplit else SPLIT_THRESHOLD
    for seed in (0, 1):
        native, twin = cls(**kwargs), python_twin(cls, **kwargs)
        assert rule_code(native) == want and rule_code(twin) == 0
        assert digest(SCENARIOS[scenario], native, seed) == digest(SCENARIOS[scenario], twin, seed)


def test_the_connection_takes_the_native_rule_and_round_robin_keeps_its_cursor():
    sched = make_scheduler("rr")
    emu, conn, _app, s = setup_episode(
        SCENARIOS["table1_4g_5g"], {"kind": "bulk", "size_bytes": 200_000}, sched
    )
    assert conn.native_rule == ROUND_ROBIN
    emu.sim.run(until=s["max_duration_s"])
    assert conn.finished
    sent = [p.packets_sent for p in conn.paths]
    # the cursor points past the last path chosen, as RoundRobin.decide leaves it
    assert sched._next in (1, 2) and min(sent) > 0


def test_minrtts_native_pick_is_always_a_path_with_room():
    """The connection does not test minRTT's native pick for room again
    (envs.transport.PICKS_WITH_ROOM): in every state of an episode the pick is
    a path with room, or none when no path has room."""
    from envs.rules import minrtt_pick

    emu, conn, _app, s = setup_episode(
        SCENARIOS["table1_4g_5g"], {"kind": "bulk", "size_bytes": 300_000}, make_scheduler("minrtt")
    )
    t, picked, none = 0.0, 0, 0
    while not conn.finished and t < s["max_duration_s"]:
        t += 0.0005
        emu.sim.run(until=t)
        now = conn.sim.now
        i = minrtt_pick(conn.paths, now)
        if i < 0:
            none += 1
            assert not any(p.may_send(now) for p in conn.paths)
        else:
            picked += 1
            assert conn.paths[i].may_send(now)
    assert conn.finished and picked > 10 and none > 10


def test_an_unknown_native_rule_is_named_and_an_overriding_subclass_is_not_native():
    class Odd(Scheduler):
        native_rule = "fastest_ever"

        def decide(self, view):
            return 0

    with pytest.raises(ValueError, match="fastest_ever"):
        rule_code(Odd())
    assert set(RULES) == {
        "minrtt",
        "rr",
        "minrtt_unless_slower",
        "minrtt_until_tail",
        "fixed_split",
        "split_threshold",
        "modes",
        "completion_dqn",
    }
    from baselines.gaps.gap_rules import BlestGap, EcfGap

    assert rule_code(BlestGap()) == 0 and rule_code(EcfGap()) == 0
    opted_out = type("OptedOut", (type(make_scheduler("minrtt")),), {"native_rule": None})
    # the base class declares native_rule = None (it is abstract: a minimal subclass)
    assert rule_code(opted_out()) == 0 and rule_code(FirstWithRoom()) == 0


#: every kind of mode: shares with and without tail re-injection, and rules
#: decided natively (minRTT, round robin, BLEST / ECF, the re-injecting ones) or not (redundant)
MODE_RULES = ("ecf", "blest", "minrtt", "rr", "minrtt_xlink", "minrtt_or", "redundant")


def cycling_chooser(n_modes: int, step: int):
    """A chooser that walks the modes, ``step`` at a time: every mode in force at some epoch."""
    k = [0]

    def choose(state) -> int:
        k[0] += 1
        return ((k[0] - 1) * step) % n_modes

    return choose


@pytest.mark.parametrize("scenario", ["table1_4g_5g", "trace_pair", "small_window"])
@pytest.mark.parametrize("step", [1, 5, 7])  # with the three scenarios: every mode in force
def test_the_mode_scheduler_decided_natively_gives_the_episodes_and_states_of_its_decide(
    scenario, step
):
    from baselines.modes.scheduler import ModeScheduler, make_modes

    modes = make_modes(rules=MODE_RULES)
    for seed in (0, 1):
        native = ModeScheduler(modes, cycling_chooser(len(modes), step))
        twin = python_twin(ModeScheduler, modes=modes, chooser=cycling_chooser(len(modes), step))
        assert rule_code(native) == MODES and rule_code(twin) == 0
        assert digest(SCENARIOS[scenario], native, seed) == digest(SCENARIOS[scenario], twin, seed)
        # the epochs' states: the observer tracked the same acknowledgements at the same times
        assert len(native.trace) == len(twin.trace) >= 3
        for (s1, m1, t1, u1), (s2, m2, t2, u2) in zip(native.trace, twin.trace):
            assert s1.tobytes() == s2.tobytes() and (m1, t1, u1) == (m2, t2, u2)


@pytest.mark.parametrize("scenario", ["table1_4g_5g", "trace_pair", "small_window"])
def test_a_held_share_mode_copies_the_tail_natively_as_its_decide_does(scenario):
    """The whole download in one share mode with tail re-injection: many copies, each
    on the path the Python ``tail_decision`` would pick."""
    from baselines.modes.scheduler import ModeScheduler, make_modes

    modes = make_modes()
    for mode in [(0.0, True), (0.5, True), (0.75, True)]:
        held = modes.index(mode)
        native = ModeScheduler(modes, lambda state, held=held: held)
        twin = python_twin(ModeScheduler, modes=modes, chooser=lambda state, held=held: held)
        assert digest(SCENARIOS[scenario], native, 0) == digest(SCENARIOS[scenario], twin, 0)


def test_the_mode_learners_decide_through_their_mode_scheduler_natively():
    from baselines.modes.learner import DQNModes
    from baselines.modes.scheduler import ModeScheduler
    from falcon.online.modes import FalconModes

    assert rule_code(FalconModes()) == MODES
    agent = DQNModes()
    assert rule_code(agent) == MODES
    # its policy replaced by the cycling chooser: the episode of a mode scheduler alone
    agent.policy = lambda: cycling_chooser(len(agent.modes), 3)
    for scenario in ("table1_4g_5g", "trace_pair"):
        alone = ModeScheduler(agent.modes, cycling_chooser(len(agent.modes), 3))
        assert digest(SCENARIOS[scenario], agent, 0) == digest(SCENARIOS[scenario], alone, 0)
        assert agent.mode_scheduler.trace[-1][1] == alone.trace[-1][1]


def _collector(cls=None, epsilon: float = 0.3):
    from baselines.dqn.network import QNetSpec
    from envs.mdp import COMPLETION, n_inputs
    from metalearning.collect import TaskCollector

    spec = QNetSpec(n_inputs(2, COMPLETION), 2, (16, 16))
    return (cls or TaskCollector)(spec, epsilon)


@pytest.mark.parametrize("scenario", ["table1_4g_5g", "trace_pair", "small_window"])
@pytest.mark.parametrize("decisions", [64, 5000])  # the budget ends the log / the download does
def test_a_completion_dqn_decided_natively_logs_the_experience_of_its_python_decide(
    scenario, decisions
):
    """The bank's task collector (a DQNScheduler on the completion MDP): the same
    transitions, bit for bit, exploration draws and Q-network choices included."""
    from metalearning.collect import TaskCollector

    native = _collector()
    twin = python_twin(TaskCollector, spec=native.spec, epsilon=0.3)
    assert rule_code(native) == COMPLETION_DQN and rule_code(twin) == 0
    sc = {"max_duration_s": 20.0, **SCENARIOS[scenario]}
    for seed in (0, 1):
        a = native.collect(sc, None, seed, decisions)
        b = twin.collect(sc, None, seed, decisions)
        assert native._native_completion
        assert a.n == b.n > 0 and all(x.tobytes() == y.tobytes() for x, y in zip(a, b))
        assert native.last_info["decisions"] == twin.last_info["decisions"]


def test_a_dqn_subclass_that_changes_the_choice_keeps_its_python_decision():
    from metalearning.collect import TaskCollector

    class Stubborn(TaskCollector):
        def _choose(self, state) -> int:
            return 1

    sched = _collector(Stubborn, epsilon=0.0)
    exp = sched.collect({"max_duration_s": 20.0, **SCENARIOS["table1_4g_5g"]}, None, 0, 64)
    assert rule_code(sched) == COMPLETION_DQN and not sched._native_completion
    # every decision but the probe of path 0 (never used yet) is its own path 1
    assert (exp.actions[1:] == 1).all()
