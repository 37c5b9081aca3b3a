"""The mode MDP and its learners: a traffic-split mode (share of packets on
path 0, tail re-injection) chosen once per epoch from what each path
delivered, learned offline per condition (:class:`DQNModes`) or online
(:class:`baselines.modes.online.DQNModesOn`).

Modules: :mod:`~baselines.modes.features` (the state),
:mod:`~baselines.modes.scheduler` (modes executed packet by packet),
:mod:`~baselines.modes.experience` (behaviour data, rewards),
:mod:`~baselines.modes.learner` (training and selection),
:mod:`~baselines.modes.files` (the model file),
:mod:`~baselines.modes.gym_env` (the MDP as a Gymnasium environment),
:mod:`~baselines.modes.online_dqn` (online DQN on it),
:mod:`~baselines.modes.online` (DQN-On, torch or RLlib),
:mod:`~baselines.modes.information` (how much of the per-download best mode
the state predicts), :mod:`~baselines.modes.probe` (the probe candidate:
a prefix, then the mode of the nearest probed states).
"""

from baselines.modes.learner import DQNModes
from baselines.modes.scheduler import ModeScheduler, make_modes

__all__ = ["DQNModes", "ModeScheduler", "make_modes"]
