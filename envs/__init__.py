"""Trace-driven, packet-level multipath transport emulator.

Main entry: :func:`run_episode` (scenario dict + app dict + scheduler + seed).
Lower level: :class:`envs.emulation.Emulation` builds several connections over
shared links; :mod:`envs.transport` is the MPQUIC-like connection;
:mod:`envs.scheduler` is the scheduler hook.

The emulator core runs compiled when it was built (``envs._core``:
:func:`core_kind`; ``FALCON_PURE_PYTHON=1`` runs the ``.py`` reference).
"""

# first: importing envs._core decides which core the modules below load from
from envs._core import core_kind
from envs.emulation import Emulation
from envs.errors import ConfigError, FalconInputError, TraceError
from envs.runner import EpisodeResult, run_episode, setup_episode
from envs.scenario import LINKS, normalise_scenario
from envs.scheduler import WAIT, Decision, Scheduler

__all__ = [
    "run_episode",
    "setup_episode",
    "EpisodeResult",
    "Emulation",
    "normalise_scenario",
    "LINKS",
    "Scheduler",
    "core_kind",
    "Decision",
    "WAIT",
    "ConfigError",
    "TraceError",
    "FalconInputError",
]
