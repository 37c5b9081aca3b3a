"""The mode bank's file (HDF5, format ``falcon-mode-bank`` version 1).

Attributes: ``format``, ``format_version``, ``framework_version``,
``created``, ``modes`` (JSON, as :mod:`baselines.modes.files`), ``spec`` and
``classifier_spec`` (JSON of :class:`baselines.dqn.network.QNetSpec`),
``cell_tasks`` (JSON: task indices per cell), ``tasks`` (JSON: the tasks'
``[scenario, app]``, what the bank was built from), ``members``,
``history_downloads`` (:mod:`baselines.modes.history`; absent in a bank
written before it: 0). Datasets
(float32, ``W`` ``[in, out]``): ``cells/<c>/<member>/W0, b0, ...``,
``meta/<member>/...`` (``Theta``) and ``classifier/...``. Written to a
temporary file and renamed; read back with one-line errors
(:class:`baselines.dqn.files.ModelFileError`).
"""

from __future__ import annotations

import json
from pathlib import Path

from baselines.dqn.files import (
    ModelFileError,
    atomic_path,
    hdf5_error_line,
    integer_attribute,
    open_hdf5_for_writing,
    write_header,
)
from baselines.dqn.network import QNetSpec
from baselines.modes.features import n_inputs
from baselines.modes.files import (
    check_header,
    make_modes_from,
    model_file,
    modes_attribute,
    read_net,
    write_net,
)
from baselines.modes.history import n_history_inputs
from metalearning.mode_bank import ModeBank

FORMAT = "falcon-mode-bank"
FORMAT_VERSION = 1


def write_bank(path, bank: ModeBank, tasks=()) -> Path:
    """Write ``bank`` (and the ``tasks`` it was built from) to ``path``; returns it."""
    path = Path(path)
    with atomic_path(path) as tmp:
        with open_hdf5_for_writing(tmp) as f:
            write_header(f, FORMAT, FORMAT_VERSION)
            f.attrs["modes"] = modes_attribute(bank.modes)
            f.attrs["spec"] = json.dumps(bank.spec.to_dict())
            f.attrs["classifier_spec"] = json.dumps(bank.classifier_spec.to_dict())
            f.attrs["cell_tasks"] = json.dumps(bank.cell_tasks)
            f.attrs["tasks"] = json.dumps([list(t) for t in tasks], default=str)
            f.attrs["members"] = len(bank.meta)
            f.attrs["history_downloads"] = int(bank.history_downloads)
            for c, members in enumerate(bank.cells):
                for m, w in enumerate(members):
                    write_net(f, f"cells/{c}/{m}", w)
            for m, w in enumerate(bank.meta):
                write_net(f, f"meta/{m}", w)
            write_net(f, "classifier", bank.classifier)
    return path


def read_bank(path) -> ModeBank:
    """The bank :func:`write_bank` wrote (a folder: its ``bank.h5``); a missing,
    foreign or damaged file is a one-line :class:`ModelFileError`."""
    import h5py

    p = model_file(path, "bank.h5", "mode bank")
    try:
        with h5py.File(p, "r") as f:
            check_header(f, p, FORMAT, FORMAT_VERSION)
            spec = QNetSpec(**json.loads(f.attrs["spec"]))
            cls_spec = QNetSpec(**json.loads(f.attrs["classifier_spec"]))
            modes = make_modes_from(json.loads(f.attrs["modes"]))
            cell_tasks = json.loads(f.attrs["cell_tasks"])
            members = integer_attribute(f.attrs.get("members"), "members")
            history = integer_attribute(f.attrs.get("history_downloads", 0), "history_downloads")
            if history < 0:
                raise ValueError(f"history_downloads is {history}, below 0")
            cells = [
                [read_net(f, f"cells/{c}/{m}", spec, p) for m in range(members)]
                for c in range(len(cell_tasks))
            ]
            meta = [read_net(f, f"meta/{m}", spec, p) for m in range(members)]
            classifier = read_net(f, "classifier", cls_spec, p)
    except ModelFileError:
        raise
    except (OSError, KeyError, ValueError, TypeError) as e:
        raise ModelFileError(f"{p}: unreadable mode bank ({hdf5_error_line(e)})") from None
    if spec.n_actions != len(modes) or cls_spec.n_actions != len(cells) or not members:
        raise ModelFileError(
            f"{p}: {spec.n_actions} Q-values for {len(modes)} modes, {cls_spec.n_actions} "
            f"classifier outputs for {len(cells)} cells, {members} members: inconsistent"
        )
    expected = n_inputs(2) + (n_history_inputs(2) if history else 0)
    if spec.n_inputs != expected:
        raise ModelFileError(
            f"{p}: {spec.n_inputs} inputs, but {expected} for two paths with "
            f"history_downloads {history}: inconsistent"
        )
    return ModeBank(modes, spec, cells, meta, classifier, cls_spec, cell_tasks, history)


__all__ = ["FORMAT", "FORMAT_VERSION", "write_bank", "read_bank"]
