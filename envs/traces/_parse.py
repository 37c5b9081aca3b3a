"""Parsing helpers shared by the trace readers (:mod:`envs.traces.loaders`,
:mod:`envs.traces.units`): reading a text file, numeric cells and tables,
plain CSVs, checks that raise :class:`~envs.errors.TraceError` with the
1-based line, and the step-series operations (hold, per-second rows,
forward fill, window). Units: seconds; values in the unit of their series.
"""

from __future__ import annotations

import hashlib
import math
import re
from pathlib import Path
from typing import NamedTuple

import numpy as np

from envs.errors import TraceError

_SEP = re.compile(r"[\s,]+")
_MISSING = ("", "-")


class _Series(NamedTuple):
    times: np.ndarray  # segment starts [s], times[0] == 0
    values: np.ndarray  # value in each segment (unit of the series)
    period: float  # [s]


class _Parsed(NamedTuple):
    rate: _Series  # bytes/s
    delay: _Series | None = None  # one-way [s]
    loss: _Series | None = None  # probability


def _read_file(path: Path) -> tuple[str, str]:
    """The text of a trace file and the SHA-256 of its bytes (hex)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise TraceError(path, "no such file") from None
    except IsADirectoryError:
        raise TraceError(path, "is a directory, not a trace file") from None
    except OSError as exc:
        raise TraceError(path, f"cannot read: {exc.strerror}") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise TraceError(path, "not a text file (invalid UTF-8)", line) from None
    if not text.strip():
        raise TraceError(path, "empty file")
    return text, hashlib.sha256(data).hexdigest()


def _is_num(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def _num(path, s: str, line: int, missing_ok: bool = False, what: str = "value") -> float:
    """One numeric cell (``what``: its name in error messages); NaN for a
    missing one when ``missing_ok``."""
    s = s.strip()
    if missing_ok and s in _MISSING:
        return math.nan
    try:
        v = float(s)
    except ValueError:
        raise TraceError(path, f"non-numeric {what} {s[:40]!r}", line) from None
    if not math.isfinite(v):
        raise TraceError(path, f"non-finite {what} {s!r}", line)
    return v


class _Header(NamedTuple):
    names: list[str]  # column names, as spelled in the file
    line: int  # 1-based line of the header


def _header_fields(line: str) -> list[str]:
    """The names of a header line: comma-separated when it has a comma, else
    whitespace-separated; trailing empty names (``a,b,,,``) dropped."""
    fields = [f.strip() for f in line.split(",")] if "," in line else line.split()
    while fields and not fields[-1]:
        fields.pop()
    return fields


def _table(path, text: str, min_cols: int, max_cols: int):
    """Numeric rows of a small text table.

    Blank lines and ``#`` comments are skipped; a first line with no numeric
    field is a header; trailing separators of a row (``0,5,,``) are dropped.
    Returns (line numbers, 2-D float array, :class:`_Header` or None).
    """
    lines, rows, header = [], [], None
    for i, raw in enumerate(text.splitlines(), 1):
        s = raw.strip().rstrip(", \t")
        if not s or s.startswith("#"):
            continue
        fields = _SEP.split(s)
        if not rows and header is None and not any(map(_is_num, fields)):
            header = _Header(_header_fields(s), i)
            continue
        want = len(rows[0]) if rows else None
        if not min_cols <= len(fields) <= max_cols or (want and len(fields) != want):
            exp = want or (f"{min_cols}" if min_cols == max_cols else f"{min_cols}-{max_cols}")
            raise TraceError(path, f"expected {exp} columns, found {len(fields)}", i)
        rows.append([_num(path, f, i) for f in fields])
        lines.append(i)
    if not rows:
        raise TraceError(path, "no data rows")
    return np.array(lines), np.array(rows, dtype=np.float64), header


def _csv(path, text: str, spaces_ok: bool = False):
    """Header (stripped names), its line, and [(line, fields)] of a plain CSV
    (``spaces_ok``: a header without a comma means whitespace-separated columns)."""
    it = ((i, s) for i, s in enumerate(text.splitlines(), 1) if s.strip())
    head_line, head = next(it)
    by_spaces = spaces_ok and "," not in head
    header = head.split() if by_spaces else [h.strip() for h in head.split(",")]
    rows = []
    for i, s in it:
        fields = s.split() if by_spaces else s.split(",")
        if len(fields) < len(header):
            raise TraceError(path, f"expected {len(header)} fields, found {len(fields)}", i)
        rows.append((i, fields))
    if not rows:
        raise TraceError(path, "no data rows after the header", head_line)
    return header, head_line, rows


def _col(path, header, line: int, name: str) -> int:
    if name not in header:
        raise TraceError(path, f"missing column {name!r} (have: {', '.join(header)})", line)
    return header.index(name)


def _check_nonneg(path, values, lines, what: str):
    bad = np.flatnonzero(values < 0)
    if bad.size:
        k = bad[0]
        raise TraceError(path, f"negative {what} {values[k]:g}", int(lines[k]))


def _check_time(path, t, lines, strict: bool = True):
    d = np.diff(t)
    bad = np.flatnonzero(d <= 0 if strict else d < 0)
    if bad.size:
        k = bad[0] + 1
        raise TraceError(
            path,
            f"time {t[k]:g} is not after the previous {t[k - 1]:g} "
            f"(time must {'increase' if strict else 'not decrease'})",
            int(lines[k]),
        )


def _hold(t, v) -> _Series:
    """Samples at times ``t`` held until the next; period = last + last interval."""
    t = t - t[0]
    last = t[-1] - t[-2] if len(t) > 1 else 1.0
    return _Series(t, v, float(t[-1] + last))


def _per_second(v) -> _Series:
    return _Series(np.arange(len(v), dtype=np.float64), v, float(len(v)))


def _ffill(v):
    """Forward-fill NaNs (leading NaNs take the first value); None if all NaN."""
    ok = ~np.isnan(v)
    if not ok.any():
        return None
    idx = np.where(ok, np.arange(len(v)), 0)
    np.maximum.accumulate(idx, out=idx)
    out = v[idx]
    out[: np.argmax(ok)] = v[np.argmax(ok)]
    return out


def _compact(t, v):
    keep = np.concatenate(([True], v[1:] != v[:-1]))
    return t[keep], v[keep]


def _window(s: _Series, start: float, dur: float) -> _Series:
    """The looped series over [start, start + dur), re-based to 0."""
    loops = max(1, math.ceil((start + dur) / s.period))
    tt = (s.times[None, :] + s.period * np.arange(loops)[:, None]).ravel()
    vv = np.tile(s.values, loops)
    first = np.searchsorted(tt, start, side="right") - 1
    sel = (tt > start) & (tt < start + dur)
    t = np.concatenate(([0.0], tt[sel] - start))
    v = np.concatenate(([vv[first]], vv[sel]))
    ok = np.concatenate(([True], np.diff(t) > 0)) & (t < dur)
    return _Series(t[ok], v[ok], float(dur))
