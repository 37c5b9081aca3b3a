"""What the DQN file formats share: one-line errors and atomic writes."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from envs.errors import FalconInputError


class DQNFileError(FalconInputError):
    """A model or experience file that cannot be used (one line: file and problem)."""


class ModelFileError(DQNFileError):
    """A corrupt, incomplete or mismatching model file (HDF5 or ONNX)."""


class ExperienceFileError(DQNFileError):
    """A corrupt or incomplete experience log."""


@contextmanager
def atomic_path(final: str | Path) -> Iterator[Path]:
    """Yield a temporary path next to ``final``; on success it is renamed
    onto ``final`` (``os.replace``, atomic on POSIX), on failure removed. A
    reader never sees a half-written file."""
    final = Path(final).expanduser()
    final.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent)
    os.close(fd)
    tmp = Path(tmp)
    try:
        yield tmp
        umask = os.umask(0)
        os.umask(umask)
        tmp.chmod(0o666 & ~umask)  # mkstemp makes it private
        os.replace(tmp, final)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


#: HDF5 file-format bounds of every file we write: the 1.10 format (readable
#: by HDF5 1.10 and newer, 2016) puts a checksum on every metadata structure,
#: and :func:`dataset_options` a Fletcher-32 checksum on every dataset's data.
#: A damaged file then fails to open or read with a checksum error. In the
#: 1.8 default format, measured with 300 byte-flipped files, 3 made the HDF5
#: C library itself loop (no Python-level check can stop that) and a fifth
#: of them read "fine" with changed weights.
HDF5_LIBVER = ("v110", "v110")


def open_hdf5_for_writing(path):
    """A new HDF5 file at ``path`` in the checksummed format (``HDF5_LIBVER``)."""
    import h5py

    return h5py.File(path, "w", libver=HDF5_LIBVER)


def dataset_options(data, **kw) -> dict:
    """``create_dataset`` keywords for ``data``: ``kw`` plus a Fletcher-32
    checksum where HDF5 can keep one (a non-empty array of fixed-size
    elements; variable-length strings cannot have one)."""
    import numpy as np

    arr = np.asarray(data)
    if arr.ndim > 0 and arr.size > 0 and arr.dtype.kind in "biufc":
        return {**kw, "fletcher32": True}
    return dict(kw)


def integer_attribute(value, what: str) -> int:
    """An HDF5 attribute that must hold an integer (a NumPy or Python
    integer, or an integral real number), as ``int``; else ``ValueError``
    naming ``what`` (the readers turn it into their one-line error)."""
    import numpy as np

    if isinstance(value, np.ndarray) and value.shape == ():
        value = value[()]
    if isinstance(value, bool | np.bool_):
        raise ValueError(f"{what} is {value!r}, not an integer")
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating) and np.isfinite(value) and float(value).is_integer():
        return int(value)
    raise ValueError(f"{what} is {value!r}, not an integer")


def hdf5_error_line(e: BaseException) -> str:
    """One line for an exception h5py raised while reading a damaged file."""
    msg = " ".join(str(e).split())[:200]
    return f"{type(e).__name__}: {msg}"


def framework_version() -> str:
    try:
        from importlib.metadata import version

        return version("falcon-mpsched")
    except Exception:  # not installed (source tree on sys.path)
        return "unknown"


def has_format(path, file_format: str) -> bool:
    """Whether ``path`` is an HDF5 file whose ``format`` attribute is
    ``file_format`` (a cheap look; not HDF5 or unreadable: False, for the
    reader that owns the file to report)."""
    import h5py

    try:
        with h5py.File(path, "r") as f:
            return f.attrs.get("format") == file_format
    except Exception:
        return False


def write_weight_groups(h5file, nets: dict) -> None:
    """One HDF5 group per network (``{group name: torch module}``), one
    float32 dataset per ``state_dict`` entry (the actor-critic files of
    GAPS and Hybrid MPTCP)."""
    import numpy as np

    for part, net in nets.items():
        g = h5file.create_group(part)
        for name, t in net.state_dict().items():
            arr = t.detach().cpu().numpy().astype(np.float32)
            g.create_dataset(name, data=arr, **dataset_options(arr))


def read_weight_groups(h5file, parts, what: str) -> dict:
    """``{group: {dataset name: float32 array}}`` of the groups ``parts`` of an
    open HDF5 file; a missing group is a :class:`ModelFileError` naming ``what``."""
    import h5py
    import numpy as np

    weights = {}
    for part in parts:
        if part not in h5file:
            raise ModelFileError(f"{what}: missing group /{part}")
        weights[part] = {}
        h5file[part].visititems(
            lambda name, obj, d=weights[part]: (
                d.__setitem__(name, np.asarray(obj[()], np.float32))
                if isinstance(obj, h5py.Dataset)
                else None
            )
        )
    return weights


def load_weight_groups(ddpg, weights: dict, what: str) -> None:
    """Load ``weights`` (:func:`read_weight_groups` of ``actor`` and ``critic``)
    into a DDPG's networks and their targets; another parameter set or shape
    is a :class:`ModelFileError` naming ``what``."""
    import torch

    for part, net, target in (
        ("actor", ddpg.actor, ddpg.actor_target),
        ("critic", ddpg.critic, ddpg.critic_target),
    ):
        state = net.state_dict()
        if set(state) != set(weights[part]):
            raise ModelFileError(f"{what}: /{part} holds other parameters than the network")
        for name, t in state.items():
            if tuple(t.shape) != weights[part][name].shape:
                raise ModelFileError(
                    f"{what}: /{part}/{name} has shape "
                    f"{weights[part][name].shape}, expected {tuple(t.shape)}"
                )
        net.load_state_dict({k: torch.from_numpy(v) for k, v in weights[part].items()})
        target.load_state_dict(net.state_dict())


def write_header(h5file, file_format: str, format_version: int) -> None:
    """The attributes every HDF5 file of ours starts with: format name and
    version, framework version, creation time (UTC, ISO 8601)."""
    from datetime import UTC, datetime

    h5file.attrs["format"] = file_format
    h5file.attrs["format_version"] = format_version
    h5file.attrs["framework_version"] = framework_version()
    h5file.attrs["created"] = datetime.now(UTC).isoformat(timespec="seconds")


__all__ = [
    "DQNFileError",
    "ModelFileError",
    "ExperienceFileError",
    "atomic_path",
    "framework_version",
    "has_format",
    "write_weight_groups",
    "read_weight_groups",
    "load_weight_groups",
    "write_header",
    "HDF5_LIBVER",
    "open_hdf5_for_writing",
    "dataset_options",
    "hdf5_error_line",
    "integer_attribute",
]
