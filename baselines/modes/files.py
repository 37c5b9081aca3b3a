"""The mode scheduler's model file (HDF5, format ``falcon-modes-model``
version 2; version 1 files, which have no probe, are read too): attributes ``format``, ``format_version``, ``framework_version``,
``created``, ``modes`` (JSON ``[[share, reinject], ..., "rule", ...]``), ``spec`` (JSON of
:class:`baselines.dqn.network.QNetSpec`), ``switch_margin`` (JSON number, or
null for infinity), ``constant_mode`` (JSON mode index held instead of the
Q-values, or null), ``members`` (the ensemble's size); datasets
``weights/<member>/W0, b0, ...`` (float32, ``W`` ``[in, out]``); ``probe``
(JSON ``{"prefix": mode index, "epochs", "neighbours"}`` of the selected
probe candidate, :mod:`baselines.modes.probe`, or null) with the datasets
``probe/states`` ``[downloads, inputs]`` and ``probe/log_times``
``[downloads, modes]`` (float64, log s). Written to a temporary file and renamed;
read back with one-line errors (:class:`baselines.dqn.files.ModelFileError`).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from baselines.dqn.files import (
    ModelFileError,
    atomic_path,
    dataset_options,
    hdf5_error_line,
    integer_attribute,
    open_hdf5_for_writing,
    write_header,
)
from baselines.dqn.network import QNetSpec
from baselines.modes.probe import ProbeModel
from baselines.modes.scheduler import make_modes, mode_lists

FORMAT = "falcon-modes-model"
FORMAT_VERSION = 2
#: the versions this reader knows (1: no probe)
READ_VERSIONS = (1, 2)


def _name(k: int) -> str:
    """Dataset name of a network's ``k``-th weight array: W0, b0, W1, ..."""
    return f"{'Wb'[k % 2]}{k // 2}"


def write_net(f, group: str, weights) -> None:
    """One network's weight list ``[W0, b0, ...]`` as the datasets of ``group``."""
    for k, w in enumerate(weights):
        f.create_dataset(
            f"{group}/{_name(k)}", data=np.asarray(w, np.float32), **dataset_options(w)
        )


def read_net(f, group: str, spec: QNetSpec, p: Path) -> list[np.ndarray]:
    """The weight list of ``group``, checked against ``spec`` (file ``p``, for errors)."""
    out = [
        np.asarray(f[f"{group}/{_name(k)}"][()], np.float32)
        for k in range(2 * len(spec.layer_sizes))
    ]
    for (i, o), w, b in zip(spec.layer_sizes, out[::2], out[1::2], strict=True):
        if w.shape != (i, o) or b.shape != (o,):
            raise ModelFileError(
                f"{p}: {group}: weights of shape {w.shape}/{b.shape}, the spec says ({i}, {o})"
            )
    return out


def model_file(path, default_name: str, what: str) -> Path:
    """``path``, or ``path/default_name`` for a folder; a missing file is a one-line error."""
    p = Path(path)
    if p.is_dir():
        p = p / default_name
    if not p.is_file():
        raise ModelFileError(f"{p}: no such {what} file")
    return p


def check_header(f, p: Path, file_format: str, format_version: int | tuple[int, ...]) -> int:
    """The ``format`` and ``format_version`` attributes of an open file are ours
    (``format_version``: the version, or the versions, this reader knows); returns the version."""
    if f.attrs.get("format") != file_format:
        raise ModelFileError(f"{p}: not a {file_format} file (format {f.attrs.get('format')!r})")
    version = integer_attribute(f.attrs.get("format_version"), "format_version")
    known = format_version if isinstance(format_version, tuple) else (format_version,)
    if version not in known:
        raise ModelFileError(
            f"{p}: {file_format} version {version}, this reader knows "
            + ", ".join(str(v) for v in known)
        )
    return version


def write_model(
    path,
    members,
    spec: QNetSpec,
    modes,
    switch_margin: float,
    constant_mode: int | None = None,
    probe: ProbeModel | None = None,
) -> Path:
    """Write a trained mode scheduler (``members``: each network's weight list;
    ``probe``: the selected probe candidate, or None) to ``path``; returns it."""
    path = Path(path)
    with atomic_path(path) as tmp:
        with open_hdf5_for_writing(tmp) as f:
            write_header(f, FORMAT, FORMAT_VERSION)
            f.attrs["modes"] = modes_attribute(modes)
            f.attrs["spec"] = json.dumps(spec.to_dict())
            f.attrs["switch_margin"] = json.dumps(
                switch_margin if math.isfinite(switch_margin) else None
            )
            f.attrs["constant_mode"] = json.dumps(constant_mode)
            f.attrs["members"] = len(members)
            for i, weights in enumerate(members):
                write_net(f, f"weights/{i}", weights)
            f.attrs["probe"] = json.dumps(
                None
                if probe is None
                else {
                    "prefix": probe.prefix,
                    "epochs": probe.epochs,
                    "neighbours": probe.neighbours,
                }
            )
            if probe is not None:
                f.create_dataset("probe/states", data=np.asarray(probe.states, np.float64))
                f.create_dataset("probe/log_times", data=np.asarray(probe.log_times, np.float64))
    return path


def read_model(path):
    """``(members, spec, modes, switch_margin, constant_mode, probe)`` of a file
    :func:`write_model` wrote (``probe``: a :class:`ProbeModel` or None); a
    missing, foreign or damaged file is a one-line :class:`ModelFileError`."""
    import h5py

    p = model_file(path, "model.h5", "mode-scheduler model")
    try:
        with h5py.File(p, "r") as f:
            version = check_header(f, p, FORMAT, READ_VERSIONS)
            spec = QNetSpec(**json.loads(f.attrs["spec"]))
            modes = make_modes_from(json.loads(f.attrs["modes"]))
            margin = json.loads(f.attrs["switch_margin"])
            margin = math.inf if margin is None else float(margin)
            constant = json.loads(f.attrs["constant_mode"])
            n = integer_attribute(f.attrs.get("members"), "members")
            members = [read_net(f, f"weights/{i}", spec, p) for i in range(n)]
            probe = _read_probe(f, p, spec, len(modes)) if version >= 2 else None
    except ModelFileError:
        raise
    except (OSError, KeyError, ValueError, TypeError) as e:
        raise ModelFileError(
            f"{p}: unreadable mode-scheduler model ({hdf5_error_line(e)})"
        ) from None
    if not members or not margin >= 0:
        raise ModelFileError(
            f"{p}: {len(members)} networks, switch margin {margin}: not a trained model"
        )
    if spec.n_actions != len(modes):
        raise ModelFileError(f"{p}: {spec.n_actions} Q-values for {len(modes)} modes")
    if constant is not None and (not isinstance(constant, int) or not 0 <= constant < len(modes)):
        raise ModelFileError(
            f"{p}: constant_mode {constant!r} is not one of the {len(modes)} modes"
        )
    return members, spec, modes, margin, constant, probe


def _read_probe(f, p: Path, spec: QNetSpec, n_modes: int) -> ProbeModel | None:
    """The ``probe`` attribute and datasets of an open file, checked."""
    settings = json.loads(f.attrs["probe"])
    if settings is None:
        return None
    if not isinstance(settings, dict) or set(settings) != {"prefix", "epochs", "neighbours"}:
        raise ModelFileError(f"{p}: probe {settings!r}: expected prefix, epochs and neighbours")
    states = np.asarray(f["probe/states"][()], np.float64)
    logs = np.asarray(f["probe/log_times"][()], np.float64)
    prefix, epochs, k = settings["prefix"], settings["epochs"], settings["neighbours"]
    if (
        not all(isinstance(v, int) and not isinstance(v, bool) for v in (prefix, epochs, k))
        or not 0 <= prefix < n_modes
        or epochs < 1
        or k < 1
    ):
        raise ModelFileError(
            f"{p}: probe {settings!r}: not a mode index, epochs >= 1, neighbours >= 1"
        )
    n = len(states)
    if n < 1 or states.shape != (n, spec.n_inputs) or logs.shape != (n, n_modes):
        raise ModelFileError(
            f"{p}: probe data of shapes {states.shape} and {logs.shape}: expected "
            f"[downloads, {spec.n_inputs}] and [downloads, {n_modes}]"
        )
    if not (np.isfinite(states).all() and np.isfinite(logs).all()):
        raise ModelFileError(f"{p}: probe data: not finite")
    return ProbeModel(prefix, epochs, k, states, logs)


def modes_attribute(modes) -> str:
    """The ``modes`` attribute of a mode list (:func:`make_modes_from` reads it back)."""
    return json.dumps([m if isinstance(m, str) else [float(m[0]), bool(m[1])] for m in modes])


def make_modes_from(entries) -> list:
    """The mode list of a file's ``modes`` attribute, checked."""
    if not isinstance(entries, list) or not all(
        isinstance(x, str) or (isinstance(x, list) and len(x) == 2) for x in entries
    ):
        raise ValueError(
            f"modes attribute: expected [[share, reinject], ..., rule, ...], got {entries!r}"
        )
    listed = [x if isinstance(x, str) else (float(x[0]), bool(x[1])) for x in entries]
    shares, reinject, rules = mode_lists(listed)
    modes = make_modes(shares, reinject, rules)
    if modes != [x for x in listed if not isinstance(x, str)] + rules:
        raise ValueError("modes attribute: not a shares x reinject grid followed by rules")
    return modes


__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "READ_VERSIONS",
    "write_model",
    "read_model",
    "modes_attribute",
    "write_net",
    "read_net",
    "model_file",
    "check_header",
]
