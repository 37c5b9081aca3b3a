"""Errors raised on bad user input.

Every error here carries one line that names the problem (file and line for
traces, key for configs), so command-line entry points can print it as is.
"""


class FalconInputError(ValueError):
    """Base class: bad user input (config, trace, model file)."""


class ConfigError(FalconInputError):
    """An impossible or malformed scenario / app / agent configuration."""


class TraceError(FalconInputError):
    """A malformed, empty or unknown-format trace file."""

    def __init__(self, path, message, line=None):
        where = f"{path}:{line}" if line is not None else f"{path}"
        super().__init__(f"trace {where}: {message}")
        self.path = str(path)
        self.line = line
        self.detail = message

    def __reduce__(self):  # picklable across process-pool and Ray workers
        return (type(self), (self.path, self.detail, self.line))


def is_whole_number(value, lo: int) -> bool:
    """``value`` is an ``int`` (not a ``bool``) of at least ``lo``: the check
    behind a config key that counts something (episodes, steps, candidates)."""
    return not isinstance(value, bool) and isinstance(value, int) and value >= lo


def check_flag(value, key: str) -> bool:
    """``value`` if it is a ``bool``, else :class:`ConfigError` naming ``key``:
    the check behind a config key that switches something on or off (no
    ``"yes"`` or ``1`` taken for true)."""
    if not isinstance(value, bool):
        raise ConfigError(f"{key}: expected true or false, got {value!r}")
    return value
