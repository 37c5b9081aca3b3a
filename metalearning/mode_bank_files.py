"""The mode bank's file (HDF5, format ``falcon-mode-bank`` version 1).

Attributes: ``format``, ``format_version``, ``framework_version``,
``created``, ``modes`` (JSON, as :mod:`baselines.modes.files`), ``spec`` and
``classifier_spec`` (JSON of :class:`baselines.dqn.network.QNetSpec`),
``cell_tasks`` (JSON: task indices per cell), ``tasks`` (JSON: the tasks'
``[scenario, app]``, what the bank was built from), ``members``. Datasets
(float32, ``W`` ``[in, out]``): ``cells/<c>/<member>/W0, b0, ...``,
``meta/<member>/...`` (``Theta``) and ``classifier/...``. Written to a
temporary file and renamed; read back with one-line errors
(:class:`baselines.dqn.files.ModelFileError`).
"""

from __future__ import annotations

import json
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
from baselines.modes.files import make_modes_from
from metalearning.mode_bank import ModeBank

FORMAT = "falcon-mode-bank"
FORMAT_VERSION = 1


def _name(k: int) -> str:
    return f"{'Wb'[k % 2]}{k // 2}"


def _write_net(f, group: str, weights) -> None:
    for k, w in enumerate(weights):
        f.create_dataset(
            f"{group}/{_name(k)}", data=np.asarray(w, np.float32), **dataset_options(w)
        )


def _read_net(f, group: str, spec: QNetSpec, p: Path) -> list[np.ndarray]:
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


def write_bank(path, bank: ModeBank, tasks=()) -> Path:
    """Write ``bank`` (and the ``tasks`` it was built from) to ``path``; returns it."""
    path = Path(path)
    with atomic_path(path) as tmp:
        with open_hdf5_for_writing(tmp) as f:
            write_header(f, FORMAT, FORMAT_VERSION)
            f.attrs["modes"] = json.dumps(
                [m if isinstance(m, str) else [float(m[0]), bool(m[1])] for m in bank.modes]
            )
            f.attrs["spec"] = json.dumps(bank.spec.to_dict())
            f.attrs["classifier_spec"] = json.dumps(bank.classifier_spec.to_dict())
            f.attrs["cell_tasks"] = json.dumps(bank.cell_tasks)
            f.attrs["tasks"] = json.dumps([list(t) for t in tasks], default=str)
            f.attrs["members"] = len(bank.meta)
            for c, members in enumerate(bank.cells):
                for m, w in enumerate(members):
                    _write_net(f, f"cells/{c}/{m}", w)
            for m, w in enumerate(bank.meta):
                _write_net(f, f"meta/{m}", w)
            _write_net(f, "classifier", bank.classifier)
    return path


def read_bank(path) -> ModeBank:
    """The bank :func:`write_bank` wrote (a folder: its ``bank.h5``); a missing,
    foreign or damaged file is a one-line :class:`ModelFileError`."""
    import h5py

    p = Path(path)
    if p.is_dir():
        p = p / "bank.h5"
    if not p.is_file():
        raise ModelFileError(f"{p}: no such mode bank file")
    try:
        with h5py.File(p, "r") as f:
            if f.attrs.get("format") != FORMAT:
                raise ModelFileError(f"{p}: not a {FORMAT} file (format {f.attrs.get('format')!r})")
            version = integer_attribute(f.attrs.get("format_version"), "format_version")
            if version != FORMAT_VERSION:
                raise ModelFileError(
                    f"{p}: {FORMAT} version {version}, this reader knows {FORMAT_VERSION}"
                )
            spec = QNetSpec(**json.loads(f.attrs["spec"]))
            cls_spec = QNetSpec(**json.loads(f.attrs["classifier_spec"]))
            modes = make_modes_from(json.loads(f.attrs["modes"]))
            cell_tasks = json.loads(f.attrs["cell_tasks"])
            members = integer_attribute(f.attrs.get("members"), "members")
            cells = [
                [_read_net(f, f"cells/{c}/{m}", spec, p) for m in range(members)]
                for c in range(len(cell_tasks))
            ]
            meta = [_read_net(f, f"meta/{m}", spec, p) for m in range(members)]
            classifier = _read_net(f, "classifier", cls_spec, p)
    except ModelFileError:
        raise
    except (OSError, KeyError, ValueError, TypeError) as e:
        raise ModelFileError(f"{p}: unreadable mode bank ({hdf5_error_line(e)})") from None
    if spec.n_actions != len(modes) or cls_spec.n_actions != len(cells) or not members:
        raise ModelFileError(
            f"{p}: {spec.n_actions} Q-values for {len(modes)} modes, {cls_spec.n_actions} "
            f"classifier outputs for {len(cells)} cells, {members} members: inconsistent"
        )
    return ModeBank(modes, spec, cells, meta, classifier, cls_spec, cell_tasks)


__all__ = ["FORMAT", "FORMAT_VERSION", "write_bank", "read_bank"]
