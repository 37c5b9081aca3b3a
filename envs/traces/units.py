"""Rate units, and the trace format that carries one on every line (:mod:`envs.traces.loaders`).

``unit_series``
    One ``value unit`` sample per line (separated by a comma, spaces or
    nothing: ``5.59,Mbits/sec``, ``5.59 Mbits/sec``, ``5590kbps``), as
    iperf-derived data sets ship them; one sample every ``period_s``
    seconds (default 1, iperf's report interval). Blank lines and ``#``
    comments are skipped, as are a header row (``Value,Unit``: a first line
    without a number) and trailing empty columns (``4.09,Mbits/sec,,,``).

The ``csv`` format (columns by name, units from the names or options) is
:func:`envs.traces.columns.named_csv`.

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
from envs.traces._parse import _check_nonneg, _Parsed, _Series

_UNIT = re.compile(r"(?P<prefix>[kKmMgG]i?)?(?P<base>bits?|bytes?|Bytes?|b|B)(?:/s(?:ec)?|ps)")
_VALUE_UNIT = re.compile(
    r"\s*(?P<value>[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*,?\s*(?P<unit>\S+)\s*"
)
_POWER = {"k": 1, "m": 2, "g": 3}
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
    m = _VALUE_UNIT.fullmatch(_without_empty_columns(line))
    if m is None:
        return False
    try:
        rate_unit(m.group("unit"))
    except ValueError:
        return False
    return True


def _without_empty_columns(line: str) -> str:
    """``line`` without trailing empty columns (``4.09,Mbits/sec,,,`` -> ``4.09,Mbits/sec``)."""
    return line.strip().rstrip(",;\t ")


def _is_header(line: str) -> bool:
    """A first line without any number (``Value,Unit``)."""
    return not re.search(r"\d", line)


def _positive(path, name: str, value) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not (math.isfinite(value) and value > 0)
    ):
        raise TraceError(path, f"{name}={value!r} must be a finite number > 0")
    return float(value)


def unit_series(path, text: str, period_s: float = 1.0) -> _Parsed:
    """The ``unit_series`` format (module docstring)."""
    period_s = _positive(path, "period_s", period_s)
    lines, values, seen = [], [], False
    for i, raw in enumerate(text.splitlines(), 1):
        s = _without_empty_columns(raw)
        if not s or s.startswith("#"):
            continue
        first, seen = not seen, True
        if first and _is_header(s):
            continue
        m = _VALUE_UNIT.fullmatch(s)
        if m is None:
            raise TraceError(
                path,
                f"expected one 'value unit' sample (e.g. '5.59,Mbits/sec'), found {s[:40]!r}",
                i,
            )
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


__all__ = ["rate_unit", "looks_like_unit_line", "unit_series", "UNIT_EXAMPLES"]
