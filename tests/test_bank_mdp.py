"""The MDP of the meta-model bank and of FALCON (envs/mdp.py): a bank is built
on the completion MDP (the presets' default) or on the paper's, its networks'
input width tells which, and FALCON acts in the MDP of its bank."""

from __future__ import annotations

import numpy as np
import pytest

from baselines.dqn.network import QNetSpec
from envs import mdp
from envs.errors import ConfigError
from falcon.online import FalconScheduler, FalconSScheduler
from metalearning.bank import MetaModelBank
from metalearning.build import BankBuildSpec
from metalearning.collect import TaskCollector
from metalearning.grid import ConditionGrid

TINY = {"name": "tiny", "hidden": [8, 8, 8], "grid": {"n_paths": 1}}
TWO = {
    "name": "two",
    "paths": [{"bandwidth_mbps": 50, "rtt_ms": 20}, {"bandwidth_mbps": 5, "rtt_ms": 200}],
}
SMALL = {"kind": "bulk", "size_bytes": 300_000}


def test_a_bank_build_names_its_mdp_and_it_is_part_of_the_fingerprint():
    completion = BankBuildSpec.from_config(TINY)
    paper = BankBuildSpec.from_config({**TINY, "reward": "packet_rate"})
    assert completion.reward == "completion"
    assert completion.qnet_spec.n_inputs == mdp.n_inputs(1, "completion") == 11
    assert paper.qnet_spec.n_inputs == 4
    assert completion.fingerprint() != paper.fingerprint()
    with pytest.raises(ConfigError, match="bank.reward: expected 'completion' or 'packet_rate'"):
        BankBuildSpec.from_config({**TINY, "reward": "goodput"})


def test_a_bank_knows_its_mdp_from_its_networks_and_keeps_it_on_disk(tmp_path):
    grid = ConditionGrid(2)
    bank = MetaModelBank.initial(grid, QNetSpec(19, 2, (8, 8, 8)), seed=1)
    assert bank.reward == "completion"
    back = MetaModelBank.read(bank.write(tmp_path / "bank.h5"))
    assert back.reward == "completion" and back.spec.n_inputs == 19
    assert MetaModelBank.initial(grid, QNetSpec(8, 2, (8, 8, 8))).reward == "packet_rate"
    with pytest.raises(ConfigError, match="7 inputs for 2 paths match no MDP"):
        MetaModelBank.initial(grid, QNetSpec(7, 2, (8, 8, 8)))


def test_a_task_of_a_completion_bank_collects_completion_transitions():
    col = TaskCollector(QNetSpec(19, 2, (8, 8, 8)), epsilon=0.3)
    assert col.reward_kind == "completion"
    exp = col.collect(TWO, None, seed=4, decisions=64, app=SMALL)
    assert 0 < exp.n <= 64 and exp.states.shape == (exp.n, 19) == exp.next_states.shape
    assert np.isfinite(exp.rewards).all() and set(np.unique(exp.actions)) <= {0, 1}
    # the completion reward prices time: over a task it sums to about minus the elapsed
    # predicted completion time, so it cannot be the paper's credit (always >= 0)
    assert exp.rewards.min() < 0


def test_falcon_acts_in_its_banks_mdp():
    bank = MetaModelBank.initial(ConditionGrid(2), QNetSpec(19, 2, (16, 16, 16)), seed=0)
    f = FalconScheduler(bank, offline=None, seed=2)
    assert f.reward_kind == "completion"
    m = f.run_episode(TWO, SMALL, seed=3)
    assert m["download_time_s"] > 0 and not m["timed_out"] and m["online_packets"] > 0
    states = f.replay.contents()[0]
    assert len(states) > 0 and states.shape[1] == 19
    with pytest.raises(ConfigError, match="built on the 'completion' MDP, got 'packet_rate'"):
        FalconScheduler(bank, offline=None, reward="packet_rate")


def test_falcon_s_sees_the_next_streams_share_on_a_completion_bank():
    bank = MetaModelBank.initial(ConditionGrid(2), QNetSpec(19, 2, (16, 16, 16)), seed=0)
    s = FalconSScheduler(bank, offline=None, seed=2)
    states = []
    real = s._completion_features

    def spy(view, now, finish, vals):
        out = real(view, now, finish, vals)
        plain = mdp.completion_features_into(view, now, finish, [0.0] * len(vals))
        states.append((list(out), plain, len(view.streams_pending())))
        return out

    s._completion_features = spy
    s._credit = None
    m = s.run_episode(TWO, {"kind": "web", "page": "github"}, seed=1)
    assert m["download_time_s"] > 0 and states
    # with several concurrent streams the stream's unsent bytes are fewer than the connection's
    multi = [(a, b) for a, b, n in states if n > 1]
    assert (
        multi
        and all(a[17] <= b[17] + 1e-12 for a, b in multi)
        and any(a[17] < b[17] for a, b in multi)
    )
    assert all(len(a) == 19 for a, _, _ in states)


GENERALIST_TINY = {
    "name": "tiny",
    "seed": 3,
    "hidden": [8, 8, 8],
    "grid": {"n_paths": 1},
    "reptile": {
        "meta_iterations": 1,
        "decisions_per_task": 24,
        "inner_steps": 2,
        "task_size_bytes": 60_000,
    },
    "generalist": {
        "tasks": 4,
        "gradient_steps": 30,
        "models": 2,
        "checkpoints": 1,
        "validation_tasks": 2,
        "validation_episodes": 2,
    },
    "chunk_size": 27,
    "checkpoint_every": 1,
}


def test_a_generalist_start_is_trained_once_and_every_cell_starts_from_it(tmp_path, monkeypatch):
    import metalearning.build as build_mod
    from metalearning.build import build_bank
    from metalearning.generalist import GeneralistConfig

    spec = BankBuildSpec.from_config(GENERALIST_TINY)
    assert spec.generalist == GeneralistConfig(
        tasks=4,
        gradient_steps=30,
        models=2,
        checkpoints=1,
        validation_tasks=2,
        validation_episodes=2,
    )
    assert (
        spec.fingerprint()
        != BankBuildSpec.from_config({**GENERALIST_TINY, "generalist": None}).fingerprint()
    )
    starts = []
    real = build_mod.reptile_cells

    def spy(cells, *a, init=None, **kw):
        starts.append(np.array(init))
        return real(cells, *a, init=init, **kw)

    monkeypatch.setattr(build_mod, "reptile_cells", spy)
    bank = build_bank(spec, tmp_path / "bank.h5", progress=False)
    (init,) = starts  # one chunk of 27 cells
    assert init.shape == (27, spec.qnet_spec.n_parameters)
    assert (init == init[0]).all()  # every cell starts from the one generalist
    assert bank.meta["generalist"]["transitions"] > 0
    # the same settings give the same start (and bank): everything is seeded by the build seed
    again = build_bank(spec, tmp_path / "again.h5", progress=False)
    assert np.array_equal(starts[1], init) and np.array_equal(again.params, bank.params)
    # without it, Reptile draws each cell's random start itself (the paper's)
    build_bank(
        BankBuildSpec.from_config({**GENERALIST_TINY, "generalist": None}),
        tmp_path / "r.h5",
        progress=False,
    )
    assert starts[2].ndim == 0 and starts[2].item() is None


def test_generalist_settings_are_checked():
    with pytest.raises(ConfigError, match="generalist.tasks"):
        BankBuildSpec.from_config({**GENERALIST_TINY, "generalist": {"tasks": 0}})
    with pytest.raises(ConfigError, match="bank.generalist"):
        BankBuildSpec.from_config({**GENERALIST_TINY, "generalist": {"taskz": 3}})


def test_the_bank_presets_and_the_build_spec_agree_on_the_default_mdp():
    """``reward:`` is spelled in the presets (Hydra's struct mode needs the key
    for ``bank.reward=packet_rate``) and as BankBuildSpec's default: one value."""
    from dataclasses import fields

    from falcon.bank_job import bank_config

    default = {f.name: f.default for f in fields(BankBuildSpec)}["reward"]
    for preset in ("quick", "paper"):
        cfg = bank_config(preset)  # composed: the preset on configs/base/bank.yaml
        assert cfg["reward"] == default == BankBuildSpec.from_config({**cfg, "path": None}).reward
        assert cfg["generalist"] == {}  # the generalist's settings live in GeneralistConfig only
