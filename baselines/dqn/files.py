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
        tmp.chmod(0o666 & ~umask)   # mkstemp makes it private
        os.replace(tmp, final)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def framework_version() -> str:
    try:
        from importlib.metadata import version
        return version("falcon-mpsched")
    except Exception:  # not installed (source tree on sys.path)
        return "unknown"


def write_header(h5file, file_format: str, format_version: int) -> None:
    """The attributes every HDF5 file of ours starts with: format name and
    version, framework version, creation time (UTC, ISO 8601)."""
    from datetime import UTC, datetime

    h5file.attrs["format"] = file_format
    h5file.attrs["format_version"] = format_version
    h5file.attrs["framework_version"] = framework_version()
    h5file.attrs["created"] = datetime.now(UTC).isoformat(timespec="seconds")


__all__ = ["DQNFileError", "ModelFileError", "ExperienceFileError", "atomic_path", "framework_version",
           "write_header"]
