"""Read trace files of every supported format into one :class:`PathTrace`.

``load_trace(path, fmt="auto", **options)``. Units on the way in are those of
each format (below), except that a unit a column's name carries (``time_ms``,
``rate_kbps``, ``Throughput (Mbit/s)``: :mod:`envs.traces.columns`) is always
honoured; on the way out capacity is bytes/s, delay is one-way seconds, loss
is a probability in [0, 1]. Units are never guessed: a file that does not say
them is an error asking for ``fmt=`` / ``unit=``. Every problem with a file
raises :class:`~envs.errors.TraceError` naming the file and, where there is
one, the 1-based line. The :class:`PathTrace` records how it was read
(``format``, ``sample_period_s``) and the file's ``sha256``.

Formats (``TRACE_FORMATS``):

``mahimahi``
    One integer ms timestamp per line; each is one 1500-byte delivery
    opportunity; repeats = several packets in that ms. Loops with period = last
    timestamp (1 ms if that is 0), so opportunities at ``t`` fall in 1-ms bin
    ``t mod period`` (those at ``period`` coincide with the next loop's 0, as
    in ``mm-link``). Rate per bin = count*1500/0.001 bytes/s; the mean rate is
    exactly ``lines*1500/period``.
``rate_series`` (alias ``pensieve``)
    ``time_s rate_mbps`` per line (whitespace or comma, optional header; a
    header's units win: ``time_ms,rate_kbps``). Each rate holds until the next
    sample; period = last time + last interval.
``raca``
    Raca et al. 4G (2018) / 5G (2020) CSV. Rate column ``DL_bitrate`` [kbit/s]
    (option ``column="UL_bitrate"``). ``-`` = missing (forward-filled). The
    ``Timestamp`` has 1 s resolution, and the logger writes duplicate
    timestamps followed by 2-3 s gaps (5G: rows ~= seconds spanned), so by
    default (``duplicates="order"``) rows are taken in order, 1 s each;
    ``duplicates="mean"`` places rows at their timestamps instead, averaging
    rows that share one and holding values over gaps. Timestamps may repeat
    but never go back. When the file has ``PINGAVG`` (RTT, ms) and
    ``PINGLOSS`` (percent of the pings of one measurement: 0, 20, ... 100), and
    ``ping=True`` (default), delay = PINGAVG/2 s and loss = PINGLOSS/100, both
    forward-filled between pings (leading gap back-filled).
``lumos``
    Lumos5G derived runs: ``seq_num throughput`` with throughput in **MB/s**
    (x8 = Mbit/s; a header's rate unit wins); one row = 1 s.
``5gophers``
    5Gophers mobility CSVs: ``walking-trace.csv`` (``throughput_mbps``) or
    ``car-driving-trace-*.csv`` (one ``<Carrier>_throughput_mbps`` column per
    carrier, option ``carrier="Sprint"|"TMobile"|"Verizon"``). One row = 1 s;
    ``seq_num`` must increase, gaps in it are closed up (each driving trace
    misses 6 s).
``aydin``
    MP-Traces ``timeInSeconds,BytesPerSecond``, no header (a header's rate
    unit wins); one row = 1 s.
``unit_series``, ``csv``
    Rates with units: ``value unit`` lines (``5.59,Mbits/sec``; a header row
    and trailing empty columns are skipped) one per ``period_s``
    (:mod:`envs.traces.units`), and CSVs with named time and rate columns
    whose units the names carry or options give (``rate_column``, ``unit``,
    ``time_column``, ``time_unit``, or ``period_s`` between rows;
    :mod:`envs.traces.columns`).
``step``
    ``time_ms,bw_kbps[,delay_ms[,loss]]``, header optional; the units a header
    names win (``time_s,rate_mbps,rtt_ms,loss_pct``). The delay is **one-way**
    unless its column is named ``rtt...`` or option ``delay_is_rtt=True`` is
    given (then halved); ``loss`` is a probability in [0, 1] (``loss_pct``:
    percent). Values hold until the next row; period = last time + last
    interval.

``auto`` detection, first rule that matches: extension ``.down``/``.up`` ->
mahimahi. A first line without a number is a header: ``Timestamp`` and
``DL_bitrate`` -> raca; a ``throughput_mbps`` column and none naming a time
unit -> 5gophers; ``value unit`` lines below it -> unit_series; columns
time, rate[, delay[, loss]] whose names carry their units -> step; one
column naming a rate unit (and at most one a time unit) -> csv; else a
TraceError saying which unit is missing. Without a header: name contains
``lumos`` -> lumos; name ``<n>_<n>_{wifi,cellular}.csv`` -> aydin; a number
and a rate unit -> unit_series; numbers alone (one integer per line, two
to four columns) do not say their units -> TraceError asking for ``fmt=``
(e.g. ``mahimahi``, ``rate_series``, ``step``) or a header naming them.

Options common to all formats: ``scale`` (multiply every rate), ``start_s`` /
``duration_s`` (cut a window out of the looped trace; the window becomes the
new period), ``min_rate_mbps`` (floor applied after scaling; default 0 keeps
real outages). A trace with zero capacity over its whole period is an error.
"""

from __future__ import annotations

import math
import re
from datetime import datetime
from pathlib import Path

import numpy as np

from envs.errors import TraceError
from envs.traces._parse import (
    _SEP,
    _check_nonneg,
    _check_time,
    _col,
    _compact,
    _csv,
    _ffill,
    _header_fields,
    _hold,
    _is_num,
    _num,
    _Parsed,
    _per_second,
    _read_file,
    _Series,
    _table,
    _window,
)
from envs.traces.base import CapacityTrace, PathTrace, StepSeries
from envs.traces.catalog import resolve_trace_path
from envs.traces.columns import Role, Scale, column_scales, column_unit, named_csv
from envs.traces.guard import check_read
from envs.traces.units import looks_like_unit_line, unit_series

PACKET_BYTES = 1500  # one mahimahi delivery opportunity [bytes]
TRACE_FORMATS = (
    "mahimahi",
    "rate_series",
    "pensieve",
    "raca",
    "lumos",
    "5gophers",
    "aydin",
    "step",
    "unit_series",
    "csv",
)

# ---------------------------------------------------------------- formats --


def _mahimahi(path, text) -> _Parsed:
    lines = text.splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    try:  # fast path: ~0.1 s for 500k lines
        ts = np.array(list(map(int, lines)), dtype=np.int64)
        nums = np.arange(1, len(ts) + 1)
    except (ValueError, OverflowError):
        vals, line_nums = [], []
        for i, raw in enumerate(lines, 1):
            s = raw.strip()
            if not s or s.startswith("#"):
                continue
            try:
                vals.append(int(s))
            except ValueError:
                raise TraceError(path, f"not an integer ms timestamp: {s!r}", i) from None
            if not -(2**62) < vals[-1] < 2**62:
                raise TraceError(path, f"timestamp out of range: {s!r}", i) from None
            line_nums.append(i)
        ts, nums = np.array(vals, dtype=np.int64), np.array(line_nums)
    if ts.size == 0:
        raise TraceError(path, "no timestamps")
    _check_nonneg(path, ts, nums, "timestamp")
    _check_time(path, ts, nums, strict=False)
    period_ms = int(ts[-1]) or 1
    # Sparse binning (no array of period_ms bins): sorted bin of every
    # opportunity, run-length counted; empty stretches become zero segments.
    m = np.sort(ts % period_ms)
    edges = np.flatnonzero(np.diff(m)) + 1
    bins = m[np.concatenate(([0], edges))]
    counts = np.diff(np.concatenate(([0], edges, [len(m)])))
    nxt = np.append(bins[1:], period_ms)
    gap = (nxt != bins + 1) & (bins + 1 < period_ms)
    lead = [0] if bins[0] > 0 else []
    starts = np.concatenate((bins, bins[gap] + 1, lead)).astype(np.int64)
    vals = np.concatenate((counts, np.zeros(gap.sum() + len(lead), dtype=np.int64)))
    order = np.argsort(starts, kind="stable")
    starts, rates = starts[order], vals[order].astype(np.float64) * (PACKET_BYTES * 1000.0)
    return _Parsed(_Series(starts / 1000.0, rates, period_ms / 1000.0))


_MBIT = Scale(mul=1e6 / 8)  # Mbit/s -> bytes/s


def _rate_series(path, text) -> _Parsed:
    lines, rows, header = _table(path, text, 2, 2)
    to_s, to_bytes = column_scales(path, header, [Role("time", Scale()), Role("rate", _MBIT)])
    t, rate = to_s(rows[:, 0]), to_bytes(rows[:, 1])
    _check_nonneg(path, t, lines, "time")
    _check_nonneg(path, rate, lines, "rate")
    _check_time(path, t, lines)
    return _Parsed(_hold(t, rate))


def _lumos(path, text) -> _Parsed:
    lines, rows, header = _table(path, text, 2, 2)
    _, to_bytes = column_scales(
        path, header, [Role("index", Scale()), Role("rate", Scale(mul=1e6))]
    )  # MB/s
    _check_time(path, rows[:, 0], lines)
    _check_nonneg(path, rows[:, 1], lines, "throughput")
    return _Parsed(_per_second(to_bytes(rows[:, 1])))


def _aydin(path, text) -> _Parsed:
    lines, rows, header = _table(path, text, 2, 2)
    _, to_bytes = column_scales(
        path, header, [Role("index", Scale()), Role("rate", Scale())]
    )  # B/s
    _check_nonneg(path, rows[:, 0], lines, "time")
    _check_time(path, rows[:, 0], lines)
    _check_nonneg(path, rows[:, 1], lines, "rate")
    return _Parsed(_per_second(to_bytes(rows[:, 1])))


#: the step format's own units: ms, kbit/s, ms one-way, probability
_STEP_ROLES = [
    Role("time", Scale(div=1000.0)),
    Role("rate", Scale(mul=1000.0 / 8)),
    Role("delay", Scale(div=1000.0)),
    Role("loss", Scale()),
]


def _step(path, text, delay_is_rtt: bool = False) -> _Parsed:
    lines, rows, header = _table(path, text, 2, 4)
    scales = column_scales(path, header, _STEP_ROLES[: rows.shape[1]])
    _check_nonneg(path, rows[:, 0], lines, "time")
    _check_time(path, rows[:, 0], lines)
    for k, what in enumerate(("bandwidth", "delay", "loss")[: rows.shape[1] - 1], 1):
        _check_nonneg(path, rows[:, k], lines, what)
    rate = _hold(scales[0](rows[:, 0]), scales[1](rows[:, 1]))
    delay = loss = None
    if rows.shape[1] > 2:
        rtt = delay_is_rtt or (header is not None and header.names[2].lower().startswith("rtt"))
        delay = rate._replace(values=scales[2](rows[:, 2]) / (2.0 if rtt else 1.0))
    if rows.shape[1] > 3:
        p = scales[3](rows[:, 3])
        bad = np.flatnonzero(p > 1)
        if bad.size:
            raise TraceError(
                path, f"loss {rows[bad[0], 3]:g} is not a probability in [0, 1]", int(lines[bad[0]])
            )
        loss = rate._replace(values=p)
    return _Parsed(rate, delay, loss)


def _raca_time(path, s: str, line: int) -> float:
    try:
        dt = datetime.strptime(s.strip(), "%Y.%m.%d_%H.%M.%S")
    except ValueError:
        raise TraceError(
            path, f"bad Timestamp {s.strip()!r} (want YYYY.MM.DD_HH.MM.SS)", line
        ) from None
    return (dt - datetime(1970, 1, 1)).total_seconds()


def _raca(
    path, text, column: str = "DL_bitrate", duplicates: str = "order", ping: bool = True
) -> _Parsed:
    if duplicates not in ("order", "mean"):
        raise TraceError(path, f"duplicates={duplicates!r}: use 'order' or 'mean'")
    header, hl, rows = _csv(path, text)
    it, ir = _col(path, header, hl, "Timestamp"), _col(path, header, hl, column)
    ip = [header.index(c) if ping and c in header else None for c in ("PINGAVG", "PINGLOSS")]
    n = len(rows)
    lines = np.array([i for i, _ in rows])
    t = np.array([_raca_time(path, f[it], i) for i, f in rows])
    cols = [
        np.array([_num(path, f[j], i, missing_ok=True) for i, f in rows]) if j is not None else None
        for j in (ir, *ip)
    ]
    _check_time(path, t, lines, strict=False)
    for c, what in zip(cols, (column, "PINGAVG", "PINGLOSS"), strict=True):
        if c is not None:
            _check_nonneg(path, np.nan_to_num(c), lines, what)
    if cols[2] is not None and np.nanmax(cols[2], initial=0) > 100:
        k = int(np.nanargmax(cols[2]))
        raise TraceError(path, f"PINGLOSS {cols[2][k]:g} is not a percentage", int(lines[k]))
    if duplicates == "mean":
        uniq, inv = np.unique(t, return_inverse=True)

        def series(v):
            ok = ~np.isnan(v)
            cnt = np.bincount(inv, weights=ok, minlength=len(uniq))
            tot = np.bincount(inv, weights=np.where(ok, v, 0.0), minlength=len(uniq))
            with np.errstate(invalid="ignore", divide="ignore"):
                return tot / cnt

        times, period = uniq - uniq[0], float(uniq[-1] - uniq[0] + 1)
    else:

        def series(v):
            return v

        times, period = np.arange(n, dtype=np.float64), float(n)
    out = []
    for c, unit in zip(cols, (1000.0 / 8, 0.5e-3, 0.01), strict=True):  # kbit/s->B/s, ms->s/2, %->p
        v = _ffill(series(c)) if c is not None else None
        out.append(_Series(times, v * unit, period) if v is not None else None)
    if out[0] is None:
        raise TraceError(path, f"column {column!r} has no values")
    return _Parsed(*out)


def _5gophers(path, text, carrier: str | None = None) -> _Parsed:
    header, hl, rows = _csv(path, text)
    per_carrier = [h for h in header if h.lower().endswith("_throughput_mbps")]
    if "throughput_mbps" in header and not per_carrier:
        if carrier is not None:
            raise TraceError(path, "carrier= given but the file has one throughput column", hl)
        col = "throughput_mbps"
    elif not per_carrier:
        raise TraceError(
            path, "missing column 'throughput_mbps' (or '<Carrier>_throughput_mbps')", hl
        )
    else:
        names = {h[: -len("_throughput_mbps")]: h for h in per_carrier}
        key = {re.sub(r"[\W_]", "", k).lower(): k for k in names}
        want = re.sub(r"[\W_]", "", carrier or "").lower()
        if want not in key:
            raise TraceError(
                path,
                f"pass carrier= one of {', '.join(names)}"
                + (f" (got {carrier!r})" if carrier else ""),
                hl,
            )
        col = names[key[want]]
    j = header.index(col)
    lines = np.array([i for i, _ in rows])
    v = np.array([_num(path, f[j], i) for i, f in rows])
    if "seq_num" in header:
        k = header.index("seq_num")
        _check_time(path, np.array([_num(path, f[k], i) for i, f in rows]), lines)
    _check_nonneg(path, v, lines, "throughput")
    return _Parsed(_per_second(v * 1e6 / 8))


_PARSERS = {
    "mahimahi": _mahimahi,
    "rate_series": _rate_series,
    "pensieve": _rate_series,
    "raca": _raca,
    "lumos": _lumos,
    "5gophers": _5gophers,
    "aydin": _aydin,
    "step": _step,
    "unit_series": unit_series,
    "csv": named_csv,
}
_OPTIONS = {
    "raca": {"column", "duplicates", "ping"},
    "5gophers": {"carrier"},
    "step": {"delay_is_rtt"},
    "unit_series": {"period_s"},
    "csv": {"rate_column", "unit", "time_column", "time_unit", "period_s"},
}


def detect_format(path, text: str) -> str:
    """The format of ``text`` read from ``path`` (rules in the module doc);
    :class:`TraceError` when the file does not say its units."""
    name = Path(path).name.lower()
    if name.endswith((".down", ".up")):
        return "mahimahi"
    (line, first), (_, second) = _first_lines(text)
    if not any(map(_is_num, _SEP.split(first))):  # a header row
        return _header_format(path, first, line, second)
    if "lumos" in name:
        return "lumos"
    if re.fullmatch(r"\d+_\d+_(wifi|cellular)\.csv", name):
        return "aydin"
    if looks_like_unit_line(first):
        return "unit_series"
    fields = _SEP.split(first.rstrip(", \t"))
    if all(map(_is_num, fields)):
        raise TraceError(path, _UNITS_UNKNOWN[min(len(fields), 3)], line)
    raise TraceError(
        path, f"cannot detect the trace format; pass fmt= one of {', '.join(TRACE_FORMATS)}", line
    )


#: what a headerless numeric file could be, by its number of columns (3: more)
_UNITS_UNKNOWN = {
    1: "one number per line, units unknown: pass fmt='mahimahi' (delivery times in ms; or name the "
    "file *.down / *.up) or, for one rate per row, add a header naming its unit (e.g. rate_kbps) "
    "and pass period_s=",
    2: "two numeric columns and no header naming their units: add one (e.g. time_s,rate_mbps) or pass "
    "fmt='rate_series' (s, Mbit/s), fmt='step' (ms, kbit/s) or fmt='csv' with unit= and time_unit=",
    3: "numeric columns and no header naming their units: add one (e.g. time_ms,rate_kbps,delay_ms,loss) "
    "or pass fmt='step' (ms, kbit/s, one-way ms, probability) or fmt='csv' with unit= and time_unit=",
}


def _first_lines(text: str) -> tuple[tuple[int, str], tuple[int, str]]:
    """The first two lines that are not blank or ``#`` comments: (1-based line, stripped text)."""
    found = [
        (i, s.strip())
        for i, s in enumerate(text.splitlines(), 1)
        if s.strip() and not s.lstrip().startswith("#")
    ][:2]
    return tuple((found + [(1, ""), (1, "")])[:2])


def _step_layout(names: list[str], kinds: list[str | None]) -> bool:
    """True for the step format's columns with named units: time, rate[, delay[, loss]]."""
    delay = len(names) < 3 or (
        kinds[2] == "time" and re.match(r"(delay|rtt|owd|latency)", names[2].lower())
    )
    loss = len(names) < 4 or (kinds[3] in (None, "loss") and names[3].lower().startswith("loss"))
    return len(names) <= 4 and kinds[:2] == ["time", "rate"] and bool(delay) and loss


def _header_format(path, header: str, line: int, row: str) -> str:
    """The format of a file whose first line ``header`` names its columns (``row``: the next line)."""
    low, names = header.lower(), _header_fields(header)
    units = [column_unit(n) for n in names]
    kinds = [u.kind if u else None for u in units]
    if "timestamp" in low and "dl_bitrate" in low:
        return "raca"
    if any(n.lower().endswith("throughput_mbps") for n in names) and "time" not in kinds:
        return "5gophers"
    if looks_like_unit_line(row):
        return "unit_series"
    if not row or not all(map(_is_num, _SEP.split(row.rstrip(", \t")))):
        raise TraceError(
            path,
            f"cannot detect the trace format; pass fmt= one of {', '.join(TRACE_FORMATS)}",
            line,
        )
    if _step_layout(names, kinds):
        return "step"
    rates, times = (
        [n for n, k in zip(names, kinds, strict=True) if k == kind] for kind in ("rate", "time")
    )
    for cols, what in ((rates, "rate"), (times, "time")):
        if len(cols) > 1:
            raise TraceError(
                path,
                f"several columns name a {what} unit ({', '.join(cols)}): pass fmt='csv' "
                f"with {what}_column=",
                line,
            )
    if rates:
        return "csv"
    raise TraceError(
        path,
        f"no column names its rate unit (columns: {', '.join(names)}): name it (e.g. "
        f"rate_mbps, bw_kbps, 'throughput (MB/s)') or pass fmt= (one of {', '.join(TRACE_FORMATS)})"
        " and, for 'csv', unit=",
        line,
    )


# -------------------------------------------------------------- public API --


def load_trace(
    path,
    fmt: str = "auto",
    *,
    scale: float = 1.0,
    start_s: float = 0.0,
    duration_s: float | None = None,
    min_rate_mbps: float = 0.0,
    **options,
) -> PathTrace:
    """Load one trace file into a :class:`PathTrace` (see the module doc).

    ``path``: a file path, or a path relative to the shipped ``data/traces/``.
    ``scale``: rate multiplier; ``start_s``/``duration_s`` [s]: window;
    ``min_rate_mbps`` [Mbit/s]: rate floor. Other ``options`` are per format.
    Inside :func:`envs.traces.guard.training_reads` a test file of the trace
    split is refused (:class:`TraceError`).
    """
    path = resolve_trace_path(path)
    check_read(path)
    if fmt not in TRACE_FORMATS and fmt != "auto":
        raise TraceError(path, f"unknown format {fmt!r} (known: auto, {', '.join(TRACE_FORMATS)})")
    text, sha256 = _read_file(path)
    key = _cache_key(path, sha256, fmt, scale, start_s, duration_s, min_rate_mbps, options)
    if key in _CACHE:
        return _CACHE[key]
    if fmt == "auto":
        fmt = detect_format(path, text)
    extra = set(options) - _OPTIONS.get(fmt, set())
    if extra:
        raise TraceError(
            path, f"option(s) {', '.join(sorted(extra))} do not apply to format {fmt!r}"
        )
    parsed = _PARSERS[fmt](path, text, **options)
    trace = _finish(path, parsed, scale, start_s, duration_s, min_rate_mbps)
    trace.format, trace.sha256 = fmt, sha256
    trace.sample_period_s = _sample_period_s(fmt, parsed.rate)
    if len(_CACHE) >= CACHE_SIZE:
        _CACHE.pop(next(iter(_CACHE)))  # the oldest entry
    _CACHE[key] = trace
    return trace


#: traces parsed by this process, by file content and load options (:func:`_cache_key`): a
#: trace condition's episodes load the same files again and again, and parsing a Raca CSV or a
#: Mahimahi file (80-130 ms) costs several times a 2 MB episode. Loaded traces are never
#: modified, so one object serves every caller. The guard (check_read) runs before the lookup.
_CACHE: dict = {}
CACHE_SIZE = 64


def _cache_key(path, sha256, fmt, scale, start_s, duration_s, min_rate_mbps, options) -> tuple:
    """The file (its path and content hash: an edited file is parsed again; reading and
    hashing cost a few ms, parsing far more) and every load option; options that are not
    plain values make the key unique (no caching)."""
    try:
        opts = tuple(sorted(options.items()))
        hash(opts)
    except TypeError:
        opts = (object(),)
    return (str(path), sha256, fmt, scale, start_s, duration_s, min_rate_mbps, opts)


def _sample_period_s(fmt: str, rate: _Series) -> float:
    """The file's sampling interval [s]: 1 ms for Mahimahi's bins, else the
    median interval between the rate samples as read."""
    if fmt == "mahimahi":
        return 1e-3
    return float(np.median(np.diff(np.append(rate.times, rate.period))))


def _finish(path, p: _Parsed, scale, start_s, duration_s, min_rate_mbps) -> PathTrace:
    for name, v in (("scale", scale), ("start_s", start_s), ("min_rate_mbps", min_rate_mbps)):
        if not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
            raise TraceError(path, f"{name}={v!r} must be a finite number >= 0")
    period = p.rate.period
    if start_s or duration_s is not None:
        if start_s >= period:
            raise TraceError(path, f"start_s={start_s:g} is past the trace's end ({period:g} s)")
        dur = period - start_s if duration_s is None else duration_s
        if not (isinstance(dur, (int, float)) and math.isfinite(dur) and dur > 0):
            raise TraceError(path, f"duration_s={duration_s!r} must be a finite number > 0")
        p = _Parsed(*(s and _window(s, float(start_s), float(dur)) for s in p))
    t, r = p.rate.times, p.rate.values * scale
    if min_rate_mbps > 0:
        r = np.maximum(r, min_rate_mbps * 1e6 / 8)
    if not np.any(r > 0):
        raise TraceError(path, "zero capacity over the whole trace (or window)")
    try:
        cap = CapacityTrace(*_compact(t, r), p.rate.period, name=path.name)
        delay, loss = (
            s and StepSeries(*_compact(s.times, s.values), s.period) for s in (p.delay, p.loss)
        )
    except ValueError as exc:  # should not happen: parsers validate first
        raise TraceError(path, str(exc)) from None
    return PathTrace(cap, delay, loss, source=str(path))
