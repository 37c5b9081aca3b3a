"""The MDP module (envs/mdp.py): the completion MDP's prediction, actions and credit."""

from __future__ import annotations

import math
import pickle
from array import array

import numpy as np
import pytest

import envs
from baselines.dqn.dqn_off import DQNOff
from baselines.dqn.export import ModelFileError
from baselines.dqn.policy import DQNScheduler
from envs import mdp
from envs.credit import LOG_COLUMNS, CompletionCredit

SCENARIO = {
    "name": "fast_slow",
    "paths": [{"bandwidth_mbps": 50, "rtt_ms": 20}, {"bandwidth_mbps": 5, "rtt_ms": 200}],
}
APP = {"kind": "bulk", "size_bytes": 300_000}


def test_predicted_finish_single_path_is_latency_plus_transfer():
    f = mdp.predicted_finish(1.0, 1e6, [0.0], [False], [0.05], [1e7])
    assert f == pytest.approx(1.0 + 0.05 + 0.1)


def test_predicted_finish_water_fills_only_paths_that_finish_in_time():
    # both paths start in time: T = (R + r1 (now + d1) + r2 (now + d2)) / (r1 + r2)
    f = mdp.predicted_finish(0.0, 2e6, [0, 0], [False, False], [0.02, 0.04], [1e7, 1e7])
    assert f == pytest.approx((2e6 + 1e7 * 0.02 + 1e7 * 0.04) / 2e7)
    # a path whose first byte would arrive after the finish is not used
    f = mdp.predicted_finish(0.0, 1e5, [0, 0], [False, False], [0.02, 0.5], [1e7, 1e7])
    assert f == pytest.approx(0.02 + 0.01)


def test_predicted_finish_waits_for_data_in_flight():
    f = mdp.predicted_finish(0.0, 0.0, [0.1, 0.0], [True, False], [0.3, 0.02], [1e6, 1e7])
    assert f == pytest.approx(0.4)
    assert mdp.predicted_finish(2.0, 0.0, [0.1, 0.0], [True, False], [0.3, 0.02], [1e6, 1e7]) == 2.0


def test_input_sizes_and_names_of_both_mdps():
    assert mdp.n_inputs(2, "packet_rate") == 8 and mdp.n_inputs(2, "completion") == 19
    assert len(mdp.feature_names(3, "completion")) == mdp.n_inputs(3, "completion")
    assert (
        mdp.reward_of_inputs(19, 2) == "completion" and mdp.reward_of_inputs(8, 2) == "packet_rate"
    )
    assert mdp.reward_of_inputs(7, 2) is None
    with pytest.raises(envs.ConfigError, match="unknown reward 'nope'"):
        mdp.n_inputs(2, "nope")


class _FullSecond(DQNScheduler):
    """Always asks for path 1 (a completion agent waits while it is full)."""

    def _choose(self, state) -> int:
        return 1


def test_completion_action_on_a_full_path_waits_instead_of_committing():
    sched = _FullSecond(reward="completion", epsilon=0.0)
    m = envs.run_episode(SCENARIO, APP, sched, 0).metrics
    # path 0 only carries its one probe packet (mdp.probe_path)
    assert 0 < m["path0_bytes"] <= 1350 and m["path1_bytes"] > 0
    # the paper MDP commits the packet to the full path and is not asked again
    # until it left; the completion agent is asked again at every ACK meanwhile
    paper = _FullSecond(reward="packet_rate", epsilon=0.0)
    assert envs.run_episode(SCENARIO, APP, paper, 0).metrics["path0_bytes"] == 0

    class P:  # a path view: full when closed (not yet validated) or bytes_in_flight + mss > cwnd
        def __init__(self, inflight, is_open=True):
            self.bytes_in_flight, self.mss, self.cwnd, self.is_open = inflight, 1350, 13500, is_open

        @property
        def has_room(self):
            return self.is_open and self.bytes_in_flight + self.mss <= self.cwnd

    class V:
        paths = [P(0), P(13500), P(0, is_open=False)]

    assert (
        mdp.decode_action(V, 0) == 0
        and mdp.decode_action(V, 1) is None
        and mdp.decode_action(V, 2) is None
    )


def test_completion_credit_closes_every_recorded_decision_once():
    seen = []

    class Spy(DQNScheduler):
        def on_transition(self, state, action, reward, next_state, done, time):
            seen.append((state, action, reward, next_state, done, time))

    sched = Spy(reward="completion", epsilon=1.0, seed=3)
    sched.recording = True
    res = envs.run_episode(SCENARIO, APP, sched, 0)
    sched.end_episode(True)
    assert len(seen) == sched.decisions
    assert seen[-1][4] is True and not any(t[4] for t in seen[:-1])
    times = [t[5] for t in seen]
    assert times == sorted(times)
    assert all(math.isfinite(t[2]) for t in seen)
    assert all(len(t[0]) == 19 and len(t[3]) == 19 for t in seen)
    assert res.metrics["download_time_s"] > 0


def test_the_credit_predicts_with_path_estimates_and_predicted_finish_bit_for_bit():
    """The typed forms the credit uses (estimates written into arrays, the
    finish of its raw record) agree exactly with the public list functions
    at every decision of lossy three-path episodes (ties, probing, data in
    flight), and its states are the features as float32."""
    checked = []

    class Check(DQNScheduler):
        def _decide_completion(self, view):
            credit, now, n = self._credit, view.sim.now, len(view.paths)
            srtt, rate = array("d", [0.0] * n), array("d", [0.0] * n)
            largest = mdp.estimates_into(view, srtt, rate)
            srtts, rates = mdp.path_estimates(view)
            assert list(srtt) == srtts and list(rate) == rates and largest == max(srtts)
            raw = credit._raw_row_of(credit._raw(view, now))
            want = mdp.predicted_finish(
                now,
                view.pending_bytes,
                list(credit.last_send),
                [p.bytes_in_flight > 0 for p in view.paths],
                srtts,
                rates,
            )
            assert mdp.raw_finish(raw, srtt, rate, array("q", [0] * n)) == want
            state = credit.observe(view, now, False)
            vals = mdp.completion_features_into(view, now, want, [0.0] * len(state))
            assert state.dtype == np.float32 and np.array_equal(state, np.array(vals, np.float32))
            checked.append(now)
            return super()._decide_completion(view)

    three = {
        "paths": [
            {"bandwidth_mbps": 20, "rtt_ms": 30, "loss": 0.02},
            {"bandwidth_mbps": 20, "rtt_ms": 30, "rtt_std_ms": 3},
            {"bandwidth_mbps": 4, "rtt_ms": 150},
        ]
    }
    for seed in (0, 1):
        envs.run_episode(three, APP, Check(reward="completion", epsilon=0.5, seed=seed), seed)
    assert len(checked) > 200


def test_the_credit_copies_its_latest_state_and_pickles_its_open_decisions():
    """``state_into`` writes the state ``observe`` returned last (zeros before the
    first); a credit copied mid-episode, open decisions included, closes them
    exactly as the original does."""
    import pickle

    from envs.gym_env import MultipathSchedulingEnv

    row = np.full(19, 7.0, np.float32)
    CompletionCredit(2).state_into(row)
    assert not row.any()
    env = MultipathSchedulingEnv(SCENARIO, APP)
    obs, _ = env.reset(seed=4)
    for t in range(40):
        obs, *_ = env.step(t % 2)
    credit = env._sched._credit
    credit.state_into(row)
    np.testing.assert_array_equal(row, obs)
    np.testing.assert_array_equal(row, credit.latest_state())
    twin = pickle.loads(pickle.dumps(credit))
    n_open = len(credit.open_decisions())
    assert n_open > 1 and len(twin.open_decisions()) == n_open
    now = env._sim.now
    mine, theirs = (c.finish(env.connection, now, False) for c in (credit, twin))
    assert len(mine) == len(theirs) == n_open
    for a, b in zip(mine, theirs):
        np.testing.assert_array_equal(a[0], b[0])
        np.testing.assert_array_equal(a[3], b[3])
        assert a[1:3] + a[4:] == b[1:3] + b[4:]
    twin.state_into(row)  # finish wrote a state row of its own, not an observed one
    np.testing.assert_array_equal(row, obs)


def test_the_credit_rings_grow_with_the_open_decisions_and_keep_their_records():
    """A hindsight horizon longer than the episode keeps every decision open: the
    credit's rings of open decisions and raw records grow past their first size
    (1 024), and the transitions that ``finish`` closes are still rewarded from the
    raw records the decisions were observed with (copied here at each decision)."""
    from envs.credit import RING
    from envs.gym_env import MultipathSchedulingEnv

    env = MultipathSchedulingEnv(
        SCENARIO, {"kind": "bulk", "size_bytes": 3_000_000}, hindsight_rtts=1e6, max_steps=2_600
    )
    env.reset(seed=5)
    credit = env._sched._credit
    raws = []
    for t in range(2_500):
        raws.append(np.array(credit._raw_row_of(credit._pending_raw)))
        env.step(t % 2)
    opened = credit.open_decisions()
    assert len(opened) > RING and credit._mask + 1 > RING and credit._raw_mask + 1 > RING
    for rec, raw in zip(opened, raws):
        np.testing.assert_array_equal(np.asarray(rec.raw), raw)
    now = env._sim.now
    out = credit.finish(env.connection, now, False)
    assert len(out) == len(opened)
    n = env.n_paths
    srtt, rate = array("d", [0.0] * n), array("d", [0.0] * n)
    mdp.estimates_into(env.connection, srtt, rate)
    order = array("q", [0] * n)
    unit = credit._unit_s(env.connection)
    for k, t in enumerate(out[:-1]):
        want = (
            mdp.raw_finish(raws[k], srtt, rate, order)
            - mdp.raw_finish(raws[k + 1], srtt, rate, order)
        ) / unit
        assert t[2] == want and t[5] == raws[k][0]


def test_a_credit_without_states_gives_the_same_rewards_and_no_row_objects():
    """The Gymnasium environment's credit keeps no states (``states=False``: its
    observation comes from ``state_into``); one that keeps them, stepped alike,
    gives the same rewards and observations, and its transitions carry the rows."""
    from envs.gym_env import MultipathSchedulingEnv

    envs = [MultipathSchedulingEnv(SCENARIO, APP) for _ in range(2)]
    for env in envs:
        env.reset(seed=11)
    lean, full = (env._sched._credit for env in envs)
    assert not lean.keep_states
    full.keep_states = True
    for t in range(60):
        a, b = (env.step((t // 3) % 2) for env in envs)
        np.testing.assert_array_equal(a[0], b[0])
        assert a[1:4] == b[1:4]
    assert envs[0]._sched.state is None
    assert envs[1]._sched.state.shape == (19,)
    now = envs[0]._sim.now
    mine, theirs = (c.finish(env.connection, now, False) for c, env in zip((lean, full), envs))
    assert len(mine) == len(theirs) > 1
    for a, b in zip(mine, theirs):
        assert a[0] is None and a[3] is None
        assert b[0].shape == b[3].shape == (19,)
        assert a[1:3] + a[4:] == b[1:3] + b[4:]


def test_a_state_log_numbers_the_states_that_rows_would_carry():
    """``states="log"`` (bank task collection's credit): the transitions carry row
    numbers of ``state_log()`` where a credit with rows carries the rows, over a
    whole episode (several blocks of rows) and otherwise the same transitions;
    a credit without a log refuses ``state_log``, and an unknown mode is refused."""
    runs = {}
    for mode in (True, "log"):
        seen = []

        class Spy(DQNScheduler):
            credit_states = mode

            def on_transition(self, state, action, reward, next_state, done, time, seen=seen):
                seen.append((state, action, reward, next_state, done, time))

        sched = Spy(reward="completion", epsilon=0.5, seed=3)
        sched.recording = True
        envs.run_episode(SCENARIO, APP, sched, 0)
        sched.end_episode(True)
        runs[mode] = (seen, sched._credit)
    (rows, _), (numbered, credit) = runs[True], runs["log"]
    log = credit.state_log()
    assert len(rows) == len(numbered) > 256 and len(log) > 256
    for a, b in zip(rows, numbered):
        np.testing.assert_array_equal(log[b[0]], a[0])
        np.testing.assert_array_equal(log[b[3]], a[3])
        assert a[1:3] + a[4:] == b[1:3] + b[4:]
    with pytest.raises(RuntimeError, match="state_log"):
        runs[True][1].state_log()
    with pytest.raises(envs.ConfigError, match="states: expected True, False or 'log'"):
        CompletionCredit(2, states="rows")


def test_a_transition_log_keeps_the_transitions_on_transition_would_get():
    """``log_transitions`` (bank task collection's credit): the closed transitions go
    into the credit's transition log, the same ones, in the same order, that a credit
    without it hands to ``on_transition`` (the episode's last, ``done``, included;
    more than the log's first capacity); ``ready`` and ``finish`` then return none, a
    copy of the credit carries its log, and the log needs ``states="log"``."""
    runs = {}
    for logged in (False, True):
        seen = []

        class Spy(DQNScheduler):
            credit_states = "log"
            credit_log_transitions = logged

            def on_transition(self, state, action, reward, next_state, done, time, seen=seen):
                seen.append((state, action, reward, next_state, done, time))

        sched = Spy(reward="completion", epsilon=0.5, seed=3)
        sched.recording = True
        envs.run_episode(SCENARIO, {"kind": "bulk", "size_bytes": 2_000_000}, sched, 0)
        sched.end_episode(True)
        runs[logged] = (seen, sched._credit)
    (handed, plain), (none, credit) = runs[False], runs[True]
    assert none == [] and len(handed) > 1024
    log = credit.transition_log()
    assert list(log) == list(LOG_COLUMNS)
    columns = [log[name].tolist() for name in LOG_COLUMNS]
    assert list(zip(*columns)) == handed
    assert log["dones"].dtype == np.bool_ and log["dones"][-1] and not log["dones"][:-1].any()
    np.testing.assert_array_equal(credit.state_log(), plain.state_log())
    copied = pickle.loads(pickle.dumps(credit)).transition_log()
    for name in LOG_COLUMNS:
        np.testing.assert_array_equal(copied[name], log[name])
        assert copied[name].dtype == log[name].dtype
    with pytest.raises(RuntimeError, match="transition_log"):
        plain.transition_log()
    with pytest.raises(envs.ConfigError, match="log_transitions: the transition log needs"):
        CompletionCredit(2, states=True, log_transitions=True)


def test_a_dqn_schedulers_decision_fields_are_its_attributes():
    """The fields the compiled decision reads (envs.rules.DQNFields) are the scheduler's
    attributes: an assignment is what the next decisions use (epsilon set after
    construction gives the episode of a scheduler constructed with it), the record
    budget maps None to no budget, a new network is the one acted with, and a
    scheduler without one refuses to act."""
    sched = DQNScheduler(reward="completion", epsilon=0.0, seed=4)
    f = sched._fields
    sched.record_budget = 7
    assert (sched.record_budget, f.has_budget, f.budget) == (7, True, 7)
    sched.record_budget = None
    assert sched.record_budget is None and not f.has_budget
    sched.epsilon = 0.5
    assert f.epsilon == 0.5
    made = DQNScheduler(reward="completion", epsilon=0.5, seed=4)
    a = envs.run_episode(SCENARIO, APP, sched, 1).metrics
    b = envs.run_episode(SCENARIO, APP, made, 1).metrics
    assert a == b and sched.decisions == made.decisions > 0
    sched.qnet = made.qnet
    assert f.qnet is made.qnet and f.dense is made.qnet._dense
    sched.qnet = None
    assert f.dense is None
    sched.epsilon = 0.0
    with pytest.raises(ValueError, match="no Q-network to act with"):
        envs.run_episode(SCENARIO, APP, sched, 1)


def test_sending_late_on_the_slow_path_costs_more_than_waiting():
    """The credit's core: with estimates fixed, a packet that would finish after
    the fast path could finish everything is charged the difference."""
    now, unsent = 0.0, 20 * 1290
    srtts, rates = [0.02, 0.4], [6e6, 6e5]
    before = mdp.predicted_finish(now, unsent, [0, 0], [True, False], srtts, rates)
    slow = mdp.predicted_finish(now, unsent - 1290, [0, now], [True, True], srtts, rates)
    fast = mdp.predicted_finish(now, unsent - 1290, [now, 0], [True, False], srtts, rates)
    assert before - slow < -0.3 < 0 < before - fast


def test_a_completion_model_does_not_load_into_a_paper_agent(tmp_path):
    agent = DQNOff(reward="completion")
    agent.build(2)
    agent.trained = True
    agent.save(tmp_path)
    with pytest.raises(ModelFileError, match="takes 19 inputs"):
        DQNOff(reward="packet_rate", model=str(tmp_path))
    again = DQNOff(reward="completion", model=str(tmp_path))
    x = np.ones((1, 19), np.float32)
    assert np.array_equal(again.q_values(x), agent.q_values(x))


def test_dqn_off_learns_from_rule_logs_on_the_completion_mdp():
    agent = DQNOff(reward="completion", seed=1)
    out = agent.fit(
        SCENARIO,
        APP,
        seed=100,
        collect_episodes=6,
        behaviour="rules",
        gradient_steps=300,
        models=2,
        checkpoints=2,
        validation_episodes=8,
        progress=False,
    )
    assert out["logged_episodes"] == 6 and out["transitions"] > 100
    m = envs.run_episode(SCENARIO, APP, agent, 0).metrics
    assert not m["timed_out"] and m["download_time_s"] < 5.0


def test_gymnasium_env_offers_the_completion_mdp():
    from gymnasium.utils.env_checker import check_env

    from envs.gym_env import DECISION_REWARDS_KEY, MultipathSchedulingEnv

    env = MultipathSchedulingEnv(SCENARIO, APP, reward="completion")
    check_env(env, skip_render_check=True)
    assert env.observation_space.shape == (19,)
    obs, _ = env.reset(seed=2)
    rng = np.random.default_rng(0)
    total, steps = 0.0, 0
    while True:
        obs, r, term, trunc, info = env.step(int(rng.integers(2)))
        assert env.observation_space.contains(obs)
        total += r
        steps += 1
        if term or trunc:
            break
    credits = info[DECISION_REWARDS_KEY]
    # one credit per decision, attributed; the step rewards add up to the same return
    assert term and len(credits) == steps and np.isfinite(credits).all()
    assert total == pytest.approx(float(credits.sum()), rel=1e-4, abs=1e-3)


def test_rllib_trains_on_the_agents_mdp_by_default():
    from baselines.dqn.dqn_on import DQNOn
    from baselines.dqn.rllib_backend import (
        attribute_decision_rewards,
        build_config,
        extract_weights,
    )
    from envs.gym_env import MultipathSchedulingEnv

    agent = DQNOn(backend="rllib", hidden=[16, 16, 16], rllib={"iterations": 1})
    agent.build(2)
    cfg = build_config(agent, SCENARIO, APP, seed=0, options=agent.rllib_options)
    assert cfg.env_config["reward"] == "completion" and cfg.batch_mode == "complete_episodes"
    assert cfg.callbacks_on_episode_end is attribute_decision_rewards
    module = cfg.get_rl_module_spec(
        env=MultipathSchedulingEnv(SCENARIO, APP, reward="completion")
    ).build()
    weights = extract_weights(module, agent.spec)
    assert [w.shape for w in weights][0] == (19, 16)
    with pytest.raises(envs.ConfigError, match="differs from the agent's reward"):
        DQNOn(backend="rllib", rllib={"env_reward": "packet_rate"}).fit(SCENARIO, APP)


def test_logged_rewards_follow_the_agents_hindsight():
    """DQN-Off's logs are rewarded with its own hindsight horizon (not the default)."""
    logs = [
        DQNOff(reward="completion", hindsight_rtts=h).collect(
            SCENARIO, APP, 5, 1, "rules", 0.0, progress=False
        )
        for h in (0.0, 1.0, 1.0)
    ]
    assert np.array_equal(logs[1].reward_values, logs[2].reward_values)
    assert len(logs[0]) == len(logs[1])
    assert not np.array_equal(logs[0].reward_values, logs[1].reward_values)


def _logged_rewards(bandwidth_mbps: float, unit: str) -> np.ndarray:
    """The rewards of one minRTT-logged 300 kB download over one path."""
    one = {
        "name": "one",
        "setup": "none",
        "paths": [{"bandwidth_mbps": bandwidth_mbps, "rtt_ms": 20}],
    }
    off = DQNOff(reward="completion", reward_unit=unit)
    return off.collect(one, APP, 5, 1, "rules", 0.0, progress=False).reward_values


def test_the_packet_unit_makes_the_reward_bandwidth_invariant():
    """A good decision earns about one packet time whatever the rate: the
    median reward of the same download at 10 and 1 000 Mbit/s is within 2x
    in packet units, and over 5x apart in 10 ms units (the ``time`` ablation; a
    300 kB download at 1 Gbit/s ends in slow start, so not 100x)."""
    pkt = [float(np.median(_logged_rewards(b, "packet"))) for b in (10, 1000)]
    tim = [float(np.median(_logged_rewards(b, "time"))) for b in (10, 1000)]
    assert 0.5 < pkt[0] / pkt[1] < 2.0
    assert tim[0] / tim[1] > 5.0
    assert 0.2 < pkt[0] < 5.0


def test_the_reward_units_differ_by_the_aggregate_packet_time_only():
    """Same decisions under both units (epsilon 0, the same log): the packet
    unit's reward is the time unit's times 10 ms over the packet time, a
    positive factor, so every reward keeps its sign."""
    a, b = _logged_rewards(50, "packet"), _logged_rewards(50, "time")
    assert len(a) == len(b)
    nz = np.abs(b) > 1e-6
    assert np.array_equal(np.sign(a[nz]), np.sign(b[nz]))
    assert not np.allclose(a, b)


def test_an_unknown_reward_unit_is_a_one_line_error():
    with pytest.raises(envs.ConfigError, match="reward_unit: expected one of"):
        DQNScheduler(reward="completion", reward_unit="bytes")
    with pytest.raises(envs.ConfigError, match="reward_unit: expected one of"):
        CompletionCredit(2, unit="seconds")


def test_experience_logs_carry_their_reward_unit(tmp_path):
    """The unit is written with the log and read back; a log without it (written
    before the unit existed) reads as 10 ms units; DQN-Off refuses a log in
    another unit than its own, and logs of two units do not join."""
    import h5py

    from baselines.dqn.experience import (
        ExperienceFileError,
        concatenate,
        read_experience,
        write_experience,
    )

    exp = DQNOff(reward="completion", reward_unit="time").collect(
        SCENARIO, APP, 5, 1, "rules", 0.0, progress=False
    )
    assert exp.reward_unit == "time"
    path = write_experience(tmp_path / "log.h5", exp)
    assert read_experience(path).reward_unit == "time"
    with h5py.File(path, "r+") as f:
        assert f.attrs["reward_unit"] == "time"
        del f.attrs["reward_unit"]
    back = read_experience(path)
    assert back.reward_unit == "time"
    with pytest.raises(
        envs.ConfigError, match="rewards are in 'time' units, the agent's reward_unit is 'packet'"
    ):
        DQNOff(reward="completion").fit(SCENARIO, APP, seed=0, experience=str(path), progress=False)
    pkt = DQNOff(reward="completion").collect(SCENARIO, APP, 5, 1, "rules", 0.0, progress=False)
    with pytest.raises(ExperienceFileError, match="rewarded in 'packet' and in 'time' units"):
        concatenate([pkt, back])


def test_the_per_decision_functions_refuse_arrays_of_the_wrong_length():
    """The compiled core indexes these arrays unchecked, so each function checks
    the lengths first: a wrong one is a ValueError in both cores, never a read
    or write outside the array."""
    srtt, rate, order = array("d", [0.02, 0.2]), array("d", [1e7, 1e6]), array("q", [0, 0])
    with pytest.raises(ValueError, match="raw_finish"):
        mdp.raw_finish(array("d", [0.0, 1e5, 0.0, 0.0, 1.0]), srtt, rate, order)  # one short
    with pytest.raises(ValueError, match="raw_finish"):
        mdp.raw_finish(array("d", [0.0, 1e5, 0.0, 0.0, 1.0, 0.0]), srtt, rate, array("q", [0]))
    from envs.gym_env import MultipathSchedulingEnv

    env = MultipathSchedulingEnv(SCENARIO, APP)
    env.reset(seed=3)
    conn = env.connection
    with pytest.raises(ValueError, match="estimates_into"):
        mdp.estimates_into(conn, array("d", [0.0]), array("d", [0.0, 0.0]))
    with pytest.raises(ValueError, match="completion features"):
        mdp.completion_features_into(conn, 0.0, 1.0, [0.0] * 18)
    with pytest.raises(ValueError):
        env._sched._credit.state_into(np.zeros(18, np.float32))


def test_the_mdp_reads_a_connection_and_a_duck_typed_view_alike():
    """The completion MDP reads the core's connection through C (its fields are
    declared on Recovery) and anything else through its attributes: both give
    the connection's own values."""
    from types import SimpleNamespace

    from envs.gym_env import MultipathSchedulingEnv

    env = MultipathSchedulingEnv(SCENARIO, APP)
    env.reset(seed=5)
    for t in range(30):
        env.step(t % 2)
    conn = env.connection
    view = SimpleNamespace(
        paths=conn.paths,
        payload=conn.payload,
        pending_bytes=conn.pending_bytes,
        send_window=conn.send_window,
    )
    assert conn.pending_bytes > 0 and conn.send_window > 0
    assert mdp._paths(conn) is conn.paths and mdp._paths(view) is conn.paths
    assert mdp._payload(conn) == mdp._payload(view) == conn.payload
    assert mdp._pending_bytes(conn) == mdp._pending_bytes(view) == conn.pending_bytes
    now = env._sim.now
    a, b = ([0.0] * 19 for _ in range(2))
    assert mdp.completion_features_into(conn, now, now + 0.5, a) == mdp.completion_features_into(
        view, now, now + 0.5, b
    )
