"""What the command-line entry points share: bad input -> one error line, exit 2.

:func:`main` runs a ``@hydra.main`` function so that Hydra's own errors
(unknown config name, override syntax, a key that does not exist) come out as
one ``error: ...`` line on stderr with exit status 2 instead of Hydra's
multi-line report; :func:`guard` does the same for errors raised inside the
job (``FalconInputError`` from the emulator, OmegaConf errors, missing files,
and any failure of the tracking store: ``TrackingError``).
Set ``FALCON_DEBUG=1`` to get the full traceback instead. Errors that are not
about the input (bugs) keep their traceback. SIGTERM ends a job as Ctrl-C
(SIGINT) does, by an exception in the main thread (:class:`Terminated`, exit
143), so that temporaries are removed on the way out; a second signal during
that clean-up is ignored.

:func:`staged_output` writes an output folder next to its final place and
moves it there only when complete, so a failed run leaves nothing half
written.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import signal
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from envs.errors import ConfigError, FalconInputError
from falcon import tracking_worker
from falcon.tracking_store import TrackingError

EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 128 + signal.SIGTERM
OUTPUT_MARKER = "summary.json"

_NOISE = (
    re.compile(r"^\s*full_key:"),
    re.compile(r"^\s*object_type="),
    re.compile(r"^\s*\^\s*$"),
    re.compile(r"^Set the environment variable HYDRA_FULL_ERROR"),
    re.compile(r"^See https://hydra"),
    re.compile(r"^Config search path:"),
    re.compile(r"^\s*provider="),
)


def _input_errors() -> tuple[type[BaseException], ...]:
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    return (
        FalconInputError,
        TrackingError,
        HydraException,
        OmegaConfBaseException,
        FileNotFoundError,
        IsADirectoryError,
        NotADirectoryError,
    )


def _is_plugin(name: str) -> bool:
    """Whether an installed distribution registers ``name`` as a scheduler
    plug-in (docs/guide/plugins.md)."""
    from baselines.registry import scheduler_names

    return scheduler_names().get(name) == "plugin"


def one_line(exc: BaseException) -> str:
    """A one-line message for an input error (Hydra's multi-line reports folded)."""
    from hydra.errors import OverrideParseException

    if isinstance(exc, TrackingError):  # one line already, with its cause summarised
        return str(exc)
    if isinstance(exc, OverrideParseException):
        hint = (
            " (list items are addressed as key.0.field=value)"
            if "[" in exc.override.split("=")[0]
            else ""
        )
        return f"cannot parse override {exc.override!r}{hint}"
    msg = str(exc).strip() or type(exc).__name__
    m = re.search(r"Could not find '([^']+)/([^'/]+)'", msg)
    if m and "Available options" in msg:
        group, name = m.groups()
        opts = re.findall(r"^\t(\S+)$", msg.split("Available options", 1)[1], flags=re.M)
        if group == "agent" and _is_plugin(name):
            return (
                f"agent {name!r} is a scheduler plug-in, not a config: name it in "
                f"agent_list (agent_list=[{name}]); agent= selects configs"
            )
        return f"unknown {group} {name!r} (known: {', '.join(opts)})"
    m = re.search(r"Could not override '([^']+)'", msg)
    if m and re.search(
        r"Key '[^']+' (is )?not in", f"{msg} {exc.__cause__}"
    ):  # Hydra's "+key" hint would add a key nothing reads
        key = m.group(1)
        full = re.search(r"full_key: (\S+)", str(exc.__cause__))
        if full and full.group(1).startswith(key + "."):  # the key exists; the new mapping adds one
            nested = full.group(1)[len(key) + 1 :]
            return (
                f"cannot add {nested!r} to {key!r} by replacing the whole mapping (its keys are "
                f"fixed); add it on its own: ++{key}.{nested}=VALUE"
            )
        return (
            f"unknown config key {key!r}: Could not override {key!r} (no such key; the keys and "
            f"their meaning are in configs/ and docs/reference/formats/scenario_schema.md, --cfg job prints the composed config)"
        )
    lines = []
    for line in msg.splitlines():
        if not line.strip() or any(p.search(line) for p in _NOISE):
            continue
        lines.append(" ".join(line.split()))
    cause = exc.__cause__
    if cause is not None and str(cause).strip():
        first = " ".join(str(cause).strip().splitlines()[0].split())
        if first and first not in " ".join(lines):
            lines.append(first)
    text = "; ".join(lines).replace(".;", ";").replace(":;", ":")
    if isinstance(exc, FileNotFoundError) and exc.filename and exc.filename not in text:
        text = f"{text}: {exc.filename}"
    return text


def fail(message: str, code: int = EXIT_BAD_INPUT):
    print(f"error: {message}", file=sys.stderr, flush=True)
    raise SystemExit(code)


def _debug() -> bool:
    return os.environ.get("FALCON_DEBUG", "") not in ("", "0")


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread (a KeyboardInterrupt, so that it
    unwinds as Ctrl-C does: staged outputs removed, the MLflow run KILLED)."""


def _on_signal(signum: int, frame) -> None:
    """SIGINT -> KeyboardInterrupt, SIGTERM -> :class:`Terminated`; the clean-up
    on the way out is not interrupted by a second one."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    raise Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()


def handle_signals() -> None:
    """Install :func:`_on_signal` for SIGINT and SIGTERM (main thread only),
    except where the signal is ignored (``nohup``, a shell's background job)."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        if signal.getsignal(sig) is not signal.SIG_IGN:
            signal.signal(sig, _on_signal)


def _exit_interrupted(exc: KeyboardInterrupt):
    if isinstance(exc, Terminated):
        print("terminated", file=sys.stderr)
        raise SystemExit(EXIT_TERMINATED) from None
    print("interrupted", file=sys.stderr)
    raise SystemExit(EXIT_INTERRUPTED) from None


def guard(fn: Callable) -> Callable:
    """Decorator for the body of a Hydra job: input errors -> one line, exit 2."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except KeyboardInterrupt as e:
            _exit_interrupted(e)
        except _input_errors() as e:
            if _debug():
                raise
            fail(one_line(e))

    return wrapper


def main(hydra_main: Callable[[], object]) -> None:
    """Run a ``@hydra.main`` function with Hydra's errors reported as one line."""
    # Hydra prints its own multi-line report and exits 1 unless HYDRA_FULL_ERROR=1,
    # in which case it lets the exception through to us.
    os.environ["HYDRA_FULL_ERROR"] = "1"
    tracking_worker.prewarm()  # MLflow's import on the other core while the job starts
    handle_signals()
    try:
        hydra_main()
    except KeyboardInterrupt as e:
        _exit_interrupted(e)
    except _input_errors() as e:
        if _debug():
            raise
        fail(one_line(e))


def _replaceable(path: Path) -> bool:
    """An existing output may be replaced if it is an empty folder or an earlier output."""
    if not path.exists():
        return True
    return path.is_dir() and (not any(path.iterdir()) or (path / OUTPUT_MARKER).is_file())


@contextmanager
def staged_output(final: str | Path) -> Iterator[Path]:
    """Yield a temporary folder; on success it becomes ``final`` (replacing an earlier output)."""
    final = _checked_output(final)
    with _staged(final.parent, f".{final.name}.tmp-") as tmp:
        yield tmp
    _commit(tmp, final)


class NamedLater:
    """A staged output whose final folder is named when the job succeeds
    (:func:`staged_output_named`): ``tmp`` while it runs, then ``final``."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.final: Path | None = None


@contextmanager
def staged_output_named(
    name: Callable[[], str | Path] | str | Path, parent: str | Path
) -> Iterator[NamedLater]:
    """:func:`staged_output` in ``parent``, the final folder ``name()`` asked on
    success (e.g. a name with the MLflow run id, known only by then); a
    ``name`` that is a path is checked at once, as :func:`staged_output` does."""
    known = None if callable(name) else _checked_output(name)
    parent = Path(parent).expanduser().absolute()
    parent.mkdir(parents=True, exist_ok=True)
    with _staged(parent, ".output.tmp-") as tmp:
        staged = NamedLater(tmp)
        yield staged
    staged.final = known or _checked_output(name())
    _commit(tmp, staged.final)


def _checked_output(final: str | Path) -> Path:
    final = Path(final).expanduser().absolute()
    if not _replaceable(final):
        raise ConfigError(
            f"output {final} exists and is not an earlier output folder "
            f"(no {OUTPUT_MARKER}); choose another output="
        )
    final.parent.mkdir(parents=True, exist_ok=True)
    return final


@contextmanager
def _staged(parent: Path, prefix: str) -> Iterator[Path]:
    """A temporary folder in ``parent``, removed if the block raises."""
    tmp = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    umask = os.umask(0)
    os.umask(umask)
    tmp.chmod(0o777 & ~umask)  # mkdtemp makes it private
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _commit(tmp: Path, final: Path) -> None:
    """``tmp`` becomes ``final``, replacing an earlier output."""
    old = None
    if final.exists():
        old = final.parent / f".{final.name}.old-{os.getpid()}"
        os.replace(final, old)
    try:
        os.replace(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


__all__ = [
    "main",
    "guard",
    "fail",
    "one_line",
    "staged_output",
    "staged_output_named",
    "EXIT_BAD_INPUT",
]
