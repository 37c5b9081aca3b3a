"""Bandit schedulers: Peekaboo (as released) and M-Peekaboo (a reconstruction),
built on an exact disjoint LinUCB and a swappable change detector.

The registry (``baselines.SCHEDULERS``) names them lazily as
``"peekaboo"`` and ``"mpeekaboo"``.
"""

from baselines.bandit.change import ChangeDetector, NoChange, TwoWindowDetector, make_detector
from baselines.bandit.linucb import LinUCB, StateFileError, load_state, save_state
from baselines.bandit.mpeekaboo import MPeekaboo
from baselines.bandit.peekaboo import Peekaboo

__all__ = [
    "LinUCB",
    "StateFileError",
    "load_state",
    "save_state",
    "Peekaboo",
    "MPeekaboo",
    "ChangeDetector",
    "NoChange",
    "TwoWindowDetector",
    "make_detector",
]
