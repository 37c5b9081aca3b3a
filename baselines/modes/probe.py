"""Probe, then commit: a mode chosen per download from what a probing prefix showed.

The modes held to the end that :class:`baselines.modes.DQNModes` can deploy
are chosen per condition; the best mode differs from download to download
(the trace segment, the outages ahead), and the Q-values, fitted to modes
held from states those modes led to, rarely change course on it. A probe
asks one question at one state, with data gathered for it:

* **Data** (:func:`fit_probe`): on ``seeds`` downloads of the training
  condition, the mode ``prefix`` for ``epochs`` decision epochs, then every
  mode held to the end from that very state
  (:func:`baselines.modes.information.branch_outcomes`): per download the
  state after the prefix and the log download time of every mode.
* **Policy** (:class:`ProbeChooser`): the prefix for ``epochs`` epochs; then
  the mode with the lowest mean log download time over the ``neighbours``
  downloads of the data nearest to the current state (entries standardised
  by the data's mean and spread), held to the end.

This is the nearest-neighbour predictor of the predictability study
(:mod:`baselines.modes.information`), which showed that on some real-trace
conditions the state after two ECF epochs tells which mode will be fastest
(``docs/explanation/mdps.md``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from envs.errors import ConfigError, is_whole_number

#: the probe's keys (``probe:`` of a mode agent config; their values are
#: configs/agent/dqn_modes.yaml's)
KEYS = ("prefix", "epochs", "seeds", "neighbours")


def check_probe(value, modes: Sequence, owner: str) -> dict | None:
    """``probe:`` (null, or a mapping of exactly :data:`KEYS`) checked, with
    ``prefix`` resolved to a mode index; None when off."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ConfigError(f"{owner}.probe: expected null or a mapping of {list(KEYS)}")
    unknown = sorted(set(value) - set(KEYS))
    if unknown:
        raise ConfigError(f"{owner}.probe: unknown keys {unknown} (known: {list(KEYS)})")
    return check_probe_settings(value, modes, f"{owner}.probe")


def check_probe_settings(settings: Mapping, modes: Sequence, where: str) -> dict:
    """:data:`KEYS` of ``settings``, each given, checked (``seeds`` at least 3:
    the predictability study leaves one out of each fit), with ``prefix``
    resolved to a mode index; errors name ``where``."""
    missing = [key for key in KEYS if key not in settings]
    if missing:
        raise ConfigError(f"{where}: missing keys {missing} (needs {list(KEYS)})")
    out = {key: settings[key] for key in KEYS}
    for key, lo in (("epochs", 1), ("seeds", 3), ("neighbours", 1)):
        if not is_whole_number(out[key], lo):
            raise ConfigError(
                f"{where}.{key}: expected a whole number, at least {lo}, got {out[key]!r}"
            )
    out["prefix"] = mode_position(modes, out["prefix"], f"{where}.prefix")
    return out


def mode_position(modes: Sequence, value, where: str) -> int:
    """The index of ``value`` (a rule name, or a ``[share, reinject]`` pair) among ``modes``;
    one that is not a mode is an error naming ``where`` and the modes."""
    key = tuple(value) if isinstance(value, list | tuple) else value
    if isinstance(key, tuple) and len(key) == 2:
        key = (float(key[0]), bool(key[1]))
    if key not in list(modes):
        raise ConfigError(f"{where}: {value!r} is not one of the modes {list(modes)}")
    return list(modes).index(key)


def standardisation(states: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(mean, scale)`` per entry of ``states`` [rows, entries] (scale at least 1e-6)."""
    return states.mean(0), np.maximum(states.std(0), 1e-6)


def knn_log_times(data_z: np.ndarray, logs: np.ndarray, z: np.ndarray, k: int) -> np.ndarray:
    """Per mode, the mean of ``logs`` over the ``k`` rows of ``data_z`` nearest
    to ``z`` (Euclidean; ties: the lower row)."""
    d = np.linalg.norm(data_z - z, axis=1)
    near = np.argsort(d, kind="stable")[: max(1, int(k))]
    return logs[near].mean(0)


@dataclass
class ProbeModel:
    """A fitted probe: ``states`` [downloads, n_inputs] after the prefix and
    ``log_times`` [downloads, n_modes] (log s) of every mode held from there."""

    prefix: int
    epochs: int
    neighbours: int
    states: np.ndarray
    log_times: np.ndarray

    def __post_init__(self) -> None:
        self.states = np.asarray(self.states, np.float64)
        self.log_times = np.asarray(self.log_times, np.float64)
        self.mean, self.scale = standardisation(self.states)
        self._z = (self.states - self.mean) / self.scale

    def choose(self, state: np.ndarray) -> int:
        """The mode with the lowest predicted log download time from ``state``."""
        z = (np.asarray(state, np.float64) - self.mean) / self.scale
        return int(np.argmin(knn_log_times(self._z, self.log_times, z, self.neighbours)))

    def chooser(self) -> ProbeChooser:
        return ProbeChooser(self)


class ProbeChooser:
    """One download's chooser (module docstring): the prefix, then the committed mode."""

    def __init__(self, model: ProbeModel):
        self.model, self.epoch = model, 0
        self.choice: int | None = None

    def __call__(self, state) -> int:
        epoch = self.epoch
        self.epoch += 1
        if epoch < self.model.epochs:
            return self.model.prefix
        if self.choice is None:
            self.choice = self.model.choose(state)
        return int(self.choice)


def fit_probe(scenario, app, modes: Sequence, probe: Mapping, seeds: Sequence[int]) -> ProbeModel:
    """The probe's data on ``seeds`` downloads of the condition (module docstring)."""
    from baselines.modes.information import branch_outcomes

    out = branch_outcomes(scenario, app, modes, probe["prefix"], probe["epochs"], seeds)
    return ProbeModel(
        probe["prefix"],
        probe["epochs"],
        probe["neighbours"],
        out["states"],
        np.log(np.maximum(out["times"], 1e-9)),
    )


__all__ = [
    "KEYS",
    "check_probe",
    "check_probe_settings",
    "mode_position",
    "standardisation",
    "knn_log_times",
    "ProbeModel",
    "ProbeChooser",
    "fit_probe",
]
