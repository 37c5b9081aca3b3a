"""The mode MDP and its learner: a traffic-split mode (share of packets on
path 0, tail re-injection) chosen once per epoch from what each path
delivered, learned offline per condition (:class:`DQNModes`).

Modules: :mod:`~baselines.modes.features` (the state),
:mod:`~baselines.modes.scheduler` (modes executed packet by packet),
:mod:`~baselines.modes.experience` (behaviour data, rewards),
:mod:`~baselines.modes.learner` (training and selection),
:mod:`~baselines.modes.files` (the model file).
"""

from baselines.modes.learner import DQNModes
from baselines.modes.scheduler import ModeScheduler, make_modes

__all__ = ["DQNModes", "ModeScheduler", "make_modes"]
