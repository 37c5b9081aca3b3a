"""Rate units, and the two trace formats that carry them (:mod:`envs.traces.loaders`).

``unit_series``
    One ``value unit`` sample per line (separated by a comma, spaces or
    nothing: ``5.59,Mbits/sec``, ``5.59 Mbits/sec``, ``5590kbps``), as
    iperf-derived data sets ship them; one sample every ``period_s``
    seconds (default 1). Blank lines and ``#`` comments are skipped.
``csv``
    A CSV with a header and named columns: ``rate_column`` in ``unit``
    (required), ``time_column`` in ``time_unit`` (``s``, ``ms`` or ``us``;
    without a time column the rows are ``period_s`` apart). Each rate holds
    until the next row. Column names match case-insensitively.

Units (:func:`rate_unit`, bytes per second per unit):

* bits: ``bps``, ``b/s``, ``bit/s``, ``bits/s``, ``bits/sec`` with an
  optional ``k``/``K``, ``M``/``m``, ``G``/``g`` prefix (x 1000 each), e.g.
  ``kbps``, ``Mbit/s``, ``Gbits/sec``;
* bytes: ``Bps``, ``B/s``, ``byte/s``, ``bytes/s``, ``bytes/sec``; the
  prefixes ``k``/``K``, ``M``, ``G`` are x 1000 (``kB/s``, ``MB/s``), ``Ki``,
  ``Mi``, ``Gi`` x 1024 (``MiB/s``), and iperf's spelled-out ``KBytes``,
  ``MBytes``, ``GBytes`` are x 1024 as iperf prints them.

``b`` is bits and ``B`` bytes wherever the unit is abbreviated; an unknown
unit is a one-line :class:`~envs.errors.TraceError` naming it and the line.
"""

from __future__ import annotations

import math
import re

import numpy as np

from envs.errors import TraceError
from envs.traces._parse import _check_nonneg, _check_time, _csv, _hold, _num, _Parsed, _Series

_UNIT = re.compile(r"(?P<prefix>[kKmMgG]i?)?(?P<base>bits?|bytes?|Bytes?|b|B)(?:/s(?:ec)?|ps)")
_VALUE_UNIT = re.compile(r"\s*(?P<value>[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*,?\s*(?P<unit>\S+)\s*")
_POWER = {"k": 1, "m": 2, "g": 3}
TIME_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6}
#: examples of every unit family, for error messages
UNIT_EXAMPLES = "bps, kbps, Mbit/s, Gbits/sec, B/s, kB/s, MB/s, MiB/s, MBytes/sec"


def rate_unit(unit: str) -> float:
    """Bytes per second of one ``unit`` (module docstring); ValueError if unknown."""
    m = _UNIT.fullmatch(unit.strip())
    if m is None:
        raise ValueError(f"unknown rate unit {unit!r} (known e.g.: {UNIT_EXAMPLES})")
    prefix, base = m.group("prefix") or "", m.group("base")
    is_bits = base.startswith("bit") or base == "b"
    binary = prefix.endswith("i") or (base in ("Byte", "Bytes") and bool(prefix))
    power = _POWER[prefix[0].lower()] if prefix else 0
    factor = float((1024 if binary else 1000) ** power)
    return factor / 8.0 if is_bits else factor


def looks_like_unit_line(line: str) -> bool:
    """True when ``line`` is one ``value unit`` sample with a known unit."""
    m = _VALUE_UNIT.fullmatch(line)
    if m is None:
        return False
    try:
        rate_unit(m.group("unit"))
    except ValueError:
        return False
    return True


def _positive(path, name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (math.isfinite(value) and value > 0):
        raise TraceError(path, f"{name}={value!r} must be a finite number > 0")
    return float(value)


def unit_series(path, text: str, period_s: float = 1.0) -> _Parsed:
    """The ``unit_series`` format (module docstring)."""
    period_s = _positive(path, "period_s", period_s)
    lines, values = [], []
    for i, raw in enumerate(text.splitlines(), 1):
        s = raw.strip()
        if not s or s.startswith("#"):
            continue
        m = _VALUE_UNIT.fullmatch(s)
        if m is None:
            raise TraceError(path, f"expected one 'value unit' sample (e.g. '5.59,Mbits/sec'), found {s[:40]!r}", i)
        try:
            factor = rate_unit(m.group("unit"))
        except ValueError as exc:
            raise TraceError(path, str(exc), i) from None
        v = float(m.group("value")) * factor
        if not math.isfinite(v):
            raise TraceError(path, f"non-finite value {m.group('value')!r}", i)
        lines.append(i)
        values.append(v)
    if not values:
        raise TraceError(path, "no data rows")
    v = np.array(values)
    _check_nonneg(path, v, np.array(lines), "rate")
    return _Parsed(_Series(np.arange(len(v)) * period_s, v, len(v) * period_s))


def named_csv(path, text: str, rate_column: str | None = None, unit: str | None = None,
              time_column: str | None = None, time_unit: str = "s", period_s: float = 1.0) -> _Parsed:
    """The ``csv`` format (module docstring)."""
    if not rate_column or not unit:
        raise TraceError(path, "format 'csv' needs rate_column= and unit= (e.g. {rate_column: throughput, "
                               "unit: Mbit/s})")
    try:
        factor = rate_unit(str(unit))
    except ValueError as exc:
        raise TraceError(path, str(exc)) from None
    if time_unit not in TIME_UNITS:
        raise TraceError(path, f"time_unit={time_unit!r}: use one of {', '.join(TIME_UNITS)}")
    header, head_line, rows = _csv(path, text)
    low = [h.lower() for h in header]

    def column(name: str) -> int:
        if name.lower() not in low:
            raise TraceError(path, f"missing column {name!r} (have: {', '.join(header)})", head_line)
        return low.index(name.lower())

    def cells(j: int, what: str) -> np.ndarray:
        return np.array([_num(path, fields[j], i, what=what) for i, fields in rows])

    lines = np.array([i for i, _ in rows])
    rate = cells(column(rate_column), rate_column) * factor
    _check_nonneg(path, rate, lines, "rate")
    if time_column is None:
        step = _positive(path, "period_s", period_s)
        return _Parsed(_Series(np.arange(len(rate)) * step, rate, len(rate) * step))
    t = cells(column(time_column), time_column) * TIME_UNITS[time_unit]
    _check_nonneg(path, t, lines, "time")
    _check_time(path, t, lines)
    return _Parsed(_hold(t, rate))


__all__ = ["rate_unit", "looks_like_unit_line", "unit_series", "named_csv", "TIME_UNITS", "UNIT_EXAMPLES"]
