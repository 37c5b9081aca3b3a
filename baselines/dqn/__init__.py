"""DQN learner and the DQN baselines of the FALCON paper (DQN-On, DQN-Off).

* :mod:`~baselines.dqn.network`: the Q-network, functional stacked parameters;
* :mod:`~baselines.dqn.learner`: the DQN update batched over many models;
* :mod:`~baselines.dqn.replay`: replay memory;
* :mod:`~baselines.dqn.policy`: the scheduler adapter (a Q-network in the emulator);
* :mod:`~baselines.dqn.async_trainer`: asynchronous learning in emulated time;
* :mod:`~baselines.dqn.dqn_on` / :mod:`~baselines.dqn.dqn_off`: the baselines;
* :mod:`~baselines.dqn.experience`, :mod:`~baselines.dqn.export`: file formats
  (``docs/reference/formats/model_formats.md``);
* :mod:`~baselines.dqn.rllib_backend`: Ray RLlib as a training backend;
* ``python -m benchmarks.dqn_learner_speed`` / ``python -m falcon.experiments.dqn_evidence``.

Names are imported lazily (``baselines.dqn.DQNOn``), so that importing the
package does not import torch.
"""

from __future__ import annotations

import importlib

_LAZY = {
    "DQNOn": "baselines.dqn.dqn_on",
    "DQNOff": "baselines.dqn.dqn_off",
    "DQNScheduler": "baselines.dqn.policy",
    "BatchedDQN": "baselines.dqn.learner",
    "DQNConfig": "baselines.dqn.learner",
    "QNetSpec": "baselines.dqn.network",
    "ReplayMemory": "baselines.dqn.replay",
    "AsyncTrainer": "baselines.dqn.async_trainer",
    "deviate_scenario": "baselines.dqn.conditions",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'baselines.dqn' has no attribute {name!r}")
