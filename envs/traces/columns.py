"""Units named in a trace file's column headers, and the ``csv`` format that
reads columns by name (:mod:`envs.traces.loaders`).

A column name carries its unit as a last word after ``_``, ``-`` or a space,
or in brackets: ``rate_kbps``, ``bandwidth_Mbps``, ``throughput_mbit_s``,
``Throughput (Mbit/s)``, ``tput[MB/s]``, ``BytesPerSecond``, ``time_ms``,
``t (s)``, ``timeInSeconds``, ``delay_ms``, ``loss_pct``.

* rate units: every unit :func:`envs.traces.units.rate_unit` knows
  (``b`` bits, ``B`` bytes: ``rate_MBps`` is megabytes per second), also
  spelled ``<unit>_s`` / ``<unit>_sec`` for ``<unit>/s`` and
  ``<bits|bytes>PerSecond`` / ``<bits|bytes>_per_second``;
* time units: ``s``, ``sec``, ``secs``, ``seconds``, ``ms``, ``msec``,
  ``milliseconds``, ``us``, ``usec``, ``microseconds`` (any case; also
  ``InSeconds``-style camel case);
* loss: ``%``, ``pct``, ``percent`` (percent) or ``prob``/``probability``/
  ``fraction`` (a probability).

:func:`column_scales` turns a header into one unit conversion per column for a
format's column roles: a unit the name carries is honoured; a column without
one takes the format's own unit; a unit of the wrong kind is a one-line
:class:`~envs.errors.TraceError`.

``csv`` (:func:`named_csv`)
    A CSV with a header (or columns separated by whitespace): the rate column (``rate_column``, else the one column
    whose name carries a rate unit) in ``unit`` (else the unit its name
    carries), and the time column (``time_column``, else the one column whose
    name carries a time unit) in ``time_unit`` (else its name's unit), or,
    without a time column, rows ``period_s`` seconds apart. Each rate holds
    until the next row. Column names match case-insensitively. A unit that
    is neither given nor named, or a given one that contradicts the name,
    is a one-line error.
"""

from __future__ import annotations

import re
from typing import NamedTuple

import numpy as np

from envs.errors import TraceError
from envs.traces._parse import (
    _check_nonneg,
    _check_time,
    _csv,
    _Header,
    _hold,
    _num,
    _Parsed,
    _Series,
)
from envs.traces.units import _positive, rate_unit

#: time units per second, by lower-case spelling
TIME_WORDS = {
    "s": 1.0,
    "sec": 1.0,
    "secs": 1.0,
    "second": 1.0,
    "seconds": 1.0,
    "ms": 1e3,
    "msec": 1e3,
    "millisecond": 1e3,
    "milliseconds": 1e3,
    "us": 1e6,
    "usec": 1e6,
    "microsecond": 1e6,
    "microseconds": 1e6,
}
#: loss units per unit of probability, by lower-case spelling
LOSS_WORDS = {
    "%": 100.0,
    "pct": 100.0,
    "percent": 100.0,
    "prob": 1.0,
    "probability": 1.0,
    "fraction": 1.0,
}
_BRACKETED = re.compile(r".*?[\(\[]\s*(?P<unit>[^\)\]]+?)\s*[\)\]]\s*")
_PER_SECOND = re.compile(
    r"(?P<base>.*?)[_\s-]?(?:per|Per|PER)[_\s-]?(?:s|sec|second|Second|SECOND)"
)
_CAMEL_TIME = re.compile(r".*[a-z]In(?P<unit>Seconds|Milliseconds|Microseconds)")
_WORDS = re.compile(r"[_\s-]+")


class Scale(NamedTuple):
    """A unit's conversion to bytes/s, s or probability: ``values * mul / div``
    (a time or percentage is divided, so ``ms / 1000`` rounds once, as written)."""

    mul: float = 1.0
    div: float = 1.0

    def __call__(self, values):
        return values * self.mul / self.div


class ColumnUnit(NamedTuple):
    """What a column's name says: ``kind`` (``rate``, ``time`` or ``loss``), its
    ``scale`` to bytes/s, s or probability, and the ``unit`` as spelled."""

    kind: str
    scale: Scale
    unit: str


class Role(NamedTuple):
    """One column a format reads: ``what`` (``time``, ``rate``, ``delay``, ``loss``
    or ``index``: a row counter whose unit does not matter) and ``scale``, the
    conversion of the format's own unit."""

    what: str
    scale: Scale


_KIND = {"time": "time", "delay": "time", "rate": "rate", "loss": "loss"}


def _unit_of_word(word: str) -> ColumnUnit | None:
    """The unit one word spells, or None."""
    if word.lower() in TIME_WORDS:
        return ColumnUnit("time", Scale(div=TIME_WORDS[word.lower()]), word)
    if word.lower() in LOSS_WORDS:
        return ColumnUnit("loss", Scale(div=LOSS_WORDS[word.lower()]), word)
    try:
        return ColumnUnit("rate", Scale(mul=rate_unit(word)), word)
    except ValueError:
        return None


def _spelled_rate(base: str) -> ColumnUnit | None:
    """``bits``/``bytes`` (with a ``k``/``M``/``G`` prefix) before "per second"."""
    word = _WORDS.split(base)[-1]
    m = re.fullmatch(
        r"(?P<prefix>[kKmMgG]i?)?(?P<base>bits?|Bits?|BITS?|bytes?|Bytes?|BYTES?)", word
    )
    if m is None:
        return None
    base_word = "bit" if m.group("base").lower().startswith("bit") else "byte"
    return ColumnUnit(
        "rate",
        Scale(mul=rate_unit(f"{m.group('prefix') or ''}{base_word}/s")),
        word + " per second",
    )


def column_unit(name: str) -> ColumnUnit | None:
    """The unit a column ``name`` carries (module docstring), or None."""
    name = name.strip()
    m = _BRACKETED.fullmatch(name)
    if m:
        return _unit_of_word(m.group("unit"))
    m = _PER_SECOND.fullmatch(name)
    spelled = _spelled_rate(m.group("base")) if m else None
    if spelled is not None:
        return spelled
    m = _CAMEL_TIME.fullmatch(name)
    if m:
        return _unit_of_word(m.group("unit"))
    words = [w for w in _WORDS.split(name) if w]
    if len(words) >= 2 and words[-1].lower() in ("s", "sec"):
        joined = _unit_of_word(f"{words[-2]}/s")  # rate_mbit_s
        if joined is not None and joined.kind == "rate":
            return joined
    return _unit_of_word(words[-1]) if words else None


def column_scales(path, header: _Header | None, roles: list[Role]) -> list[Scale]:
    """One conversion per column of ``roles`` (as many as the rows have): that
    of the unit ``header`` names for it, else the format's own (``Role.scale``)."""
    if header is None:
        return [r.scale for r in roles]
    if len(header.names) != len(roles):
        raise TraceError(
            path,
            f"the header names {len(header.names)} columns ({', '.join(header.names)}) "
            f"but the rows have {len(roles)}",
            header.line,
        )
    return [
        _scale(path, name, role, header.line)
        for name, role in zip(header.names, roles, strict=True)
    ]


def _scale(path, name: str, role: Role, line: int | None) -> Scale:
    unit = column_unit(name)
    if unit is None or role.what == "index":
        return role.scale
    if unit.kind != _KIND[role.what]:
        raise TraceError(
            path,
            f"column {name!r} names a {unit.kind} unit ({unit.unit!r}) where the format "
            f"reads the {role.what}",
            line,
        )
    return unit.scale


def _given_scale(path, kind: str, option: str, given) -> Scale:
    """The conversion of a unit passed as an option (``unit=``, ``time_unit=``)."""
    if kind == "time":
        if str(given).lower() not in TIME_WORDS:
            raise TraceError(path, f"{option}={given!r}: use one of s, ms, us")
        return Scale(div=TIME_WORDS[str(given).lower()])
    try:
        return Scale(mul=rate_unit(str(given)))
    except ValueError as exc:
        raise TraceError(path, str(exc)) from None


def _unit_of(path, column: str, kind: str, option: str, given) -> Scale:
    """The unit of ``column``: ``given`` (option ``option``) or the one its name carries; both must agree."""
    named = column_unit(column)
    named = named if named is not None and named.kind == kind else None
    if given is None:
        if named is None:
            raise TraceError(
                path, f"format 'csv' needs {option}=: column {column!r} does not name its unit"
            )
        return named.scale
    scale = _given_scale(path, kind, option, given)
    if named is not None and named.scale(1.0) != scale(1.0):
        raise TraceError(
            path, f"{option}={given!r} contradicts column {column!r}, which names {named.unit!r}"
        )
    return scale


def _column(path, header: list[str], line: int, name: str | None, kind: str) -> int | None:
    """The index of column ``name`` (any case), else of the one column whose name
    carries a ``kind`` unit (None if there is none)."""
    low = [h.lower() for h in header]
    if name is not None:
        if str(name).lower() not in low:
            raise TraceError(path, f"missing column {name!r} (have: {', '.join(header)})", line)
        return low.index(str(name).lower())
    named = [
        j for j, h in enumerate(header) if (u := column_unit(h)) is not None and u.kind == kind
    ]
    if len(named) > 1:
        raise TraceError(
            path,
            f"several columns name a {kind} unit ({', '.join(header[j] for j in named)}): "
            f"pass {kind}_column=",
            line,
        )
    return named[0] if named else None


def named_csv(
    path,
    text: str,
    rate_column: str | None = None,
    unit: str | None = None,
    time_column: str | None = None,
    time_unit: str | None = None,
    period_s: float | None = None,
) -> _Parsed:
    """The ``csv`` format (module docstring)."""
    header, head_line, rows = _csv(path, text, spaces_ok=True)
    lines = np.array([i for i, _ in rows])

    def cells(j: int) -> np.ndarray:
        return np.array([_num(path, fields[j], i, what=header[j]) for i, fields in rows])

    rj = _column(path, header, head_line, rate_column, "rate")
    if rj is None:
        raise TraceError(
            path,
            "format 'csv' needs rate_column= and unit= (no column names a rate unit, "
            "e.g. {rate_column: throughput, unit: Mbit/s})",
            head_line,
        )
    rate = _unit_of(path, header[rj], "rate", "unit", unit)(cells(rj))
    _check_nonneg(path, rate, lines, "rate")
    if period_s is not None:
        if time_column is not None:
            raise TraceError(path, "give time_column= or period_s= (rows that far apart), not both")
        step = _positive(path, "period_s", period_s)
        return _Parsed(_Series(np.arange(len(rate)) * step, rate, len(rate) * step))
    tj = _column(path, header, head_line, time_column, "time")
    if tj is None:
        raise TraceError(
            path,
            "no column names a time unit (e.g. time_s): pass time_column= and time_unit=, "
            "or period_s= (seconds between rows)",
            head_line,
        )
    t = _unit_of(path, header[tj], "time", "time_unit", time_unit)(cells(tj))
    _check_nonneg(path, t, lines, "time")
    _check_time(path, t, lines)
    return _Parsed(_hold(t, rate))


__all__ = [
    "Scale",
    "ColumnUnit",
    "Role",
    "column_unit",
    "column_scales",
    "named_csv",
    "TIME_WORDS",
    "LOSS_WORDS",
]
