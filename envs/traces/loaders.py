"""Read trace files of every supported format into one :class:`PathTrace`.

``load_trace(path, fmt="auto", **options)``. Units on the way in are those of
each format (below); on the way out capacity is bytes/s, delay is one-way
seconds, loss is a probability in [0, 1]. Every problem with a file raises
:class:`~envs.errors.TraceError` naming the file and, where there is one, the
1-based line.

Formats (``TRACE_FORMATS``):

``mahimahi``
    One integer ms timestamp per line; each is one 1500-byte delivery
    opportunity; repeats = several packets in that ms. Loops with period = last
    timestamp (1 ms if that is 0), so opportunities at ``t`` fall in 1-ms bin
    ``t mod period`` (those at ``period`` coincide with the next loop's 0, as
    in ``mm-link``). Rate per bin = count*1500/0.001 bytes/s; the mean rate is
    exactly ``lines*1500/period``.
``rate_series`` (alias ``pensieve``)
    ``time_s rate_mbps`` per line (whitespace or comma, optional header).
    Each rate holds until the next sample; period = last time + last interval.
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
    (x8 = Mbit/s); one row = 1 s.
``5gophers``
    5Gophers mobility CSVs: ``walking-trace.csv`` (``throughput_mbps``) or
    ``car-driving-trace-*.csv`` (one ``<Carrier>_throughput_mbps`` column per
    carrier, option ``carrier="Sprint"|"TMobile"|"Verizon"``). One row = 1 s;
    ``seq_num`` must increase, gaps in it are closed up (each driving trace
    misses 6 s).
``aydin``
    MP-Traces ``timeInSeconds,BytesPerSecond``, no header; one row = 1 s.
``unit_series``, ``csv``
    Rates with units: ``value unit`` lines (``5.59,Mbits/sec``) one per
    ``period_s``, and CSVs with named time and rate columns and a rate unit
    (``rate_column``, ``unit``, ``time_column``, ``time_unit``); see
    :mod:`envs.traces.units`.
``step``
    ``time_ms,bw_kbps[,delay_ms[,loss]]``, header optional. ``delay_ms`` is
    **one-way** (option ``delay_is_rtt=True`` halves it); ``loss`` is a
    probability in [0, 1]. Values hold until the next row; period = last time
    + last interval.

``auto`` detection, first rule that matches: extension ``.down``/``.up`` ->
mahimahi; name contains ``lumos`` -> lumos; name ``<n>_<n>_{wifi,cellular}.csv``
-> aydin; first line has ``Timestamp`` and ``DL_bitrate`` -> raca; has
``throughput_mbps`` -> 5gophers; has ``time_ms`` or ``bw_kbps`` -> step; one
integer per line -> mahimahi; a number and a rate unit -> unit_series
(``csv`` is never guessed: it needs its column names); two numbers (or a
two-field header) ->
rate_series; three or four numbers -> step; anything else -> TraceError.

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
    _hold,
    _is_num,
    _num,
    _Parsed,
    _per_second,
    _read_text,
    _Series,
    _table,
    _window,
)
from envs.traces.base import CapacityTrace, PathTrace, StepSeries
from envs.traces.catalog import resolve_trace_path
from envs.traces.guard import check_read
from envs.traces.units import looks_like_unit_line, named_csv, unit_series

PACKET_BYTES = 1500  # one mahimahi delivery opportunity [bytes]
TRACE_FORMATS = ("mahimahi", "rate_series", "pensieve", "raca", "lumos",
                 "5gophers", "aydin", "step", "unit_series", "csv")

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
            if not -2**62 < vals[-1] < 2**62:
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


def _rate_series(path, text) -> _Parsed:
    lines, rows, _ = _table(path, text, 2, 2)
    t, mbps = rows[:, 0], rows[:, 1]
    _check_nonneg(path, t, lines, "time")
    _check_nonneg(path, mbps, lines, "rate")
    _check_time(path, t, lines)
    return _Parsed(_hold(t, mbps * 1e6 / 8))


def _lumos(path, text) -> _Parsed:
    lines, rows, _ = _table(path, text, 2, 2)
    _check_time(path, rows[:, 0], lines)
    _check_nonneg(path, rows[:, 1], lines, "throughput")
    return _Parsed(_per_second(rows[:, 1] * 1e6))  # MB/s -> bytes/s


def _aydin(path, text) -> _Parsed:
    lines, rows, _ = _table(path, text, 2, 2)
    _check_nonneg(path, rows[:, 0], lines, "time")
    _check_time(path, rows[:, 0], lines)
    _check_nonneg(path, rows[:, 1], lines, "rate")
    return _Parsed(_per_second(rows[:, 1]))


def _step(path, text, delay_is_rtt: bool = False) -> _Parsed:
    lines, rows, _ = _table(path, text, 2, 4)
    t = rows[:, 0] / 1000.0
    _check_nonneg(path, rows[:, 0], lines, "time")
    _check_time(path, rows[:, 0], lines)
    for k, what in enumerate(("bandwidth", "delay", "loss")[:rows.shape[1] - 1], 1):
        _check_nonneg(path, rows[:, k], lines, what)
    rate = _hold(t, rows[:, 1] * 1000.0 / 8)
    delay = loss = None
    if rows.shape[1] > 2:
        d = rows[:, 2] / 1000.0 / (2.0 if delay_is_rtt else 1.0)
        delay = rate._replace(values=d)
    if rows.shape[1] > 3:
        bad = np.flatnonzero(rows[:, 3] > 1)
        if bad.size:
            raise TraceError(path, f"loss {rows[bad[0], 3]:g} is not a probability in [0, 1]",
                             int(lines[bad[0]]))
        loss = rate._replace(values=rows[:, 3])
    return _Parsed(rate, delay, loss)


def _raca_time(path, s: str, line: int) -> float:
    try:
        dt = datetime.strptime(s.strip(), "%Y.%m.%d_%H.%M.%S")
    except ValueError:
        raise TraceError(path, f"bad Timestamp {s.strip()!r} (want YYYY.MM.DD_HH.MM.SS)", line) from None
    return (dt - datetime(1970, 1, 1)).total_seconds()


def _raca(path, text, column: str = "DL_bitrate", duplicates: str = "order",
          ping: bool = True) -> _Parsed:
    if duplicates not in ("order", "mean"):
        raise TraceError(path, f"duplicates={duplicates!r}: use 'order' or 'mean'")
    header, hl, rows = _csv(path, text)
    it, ir = _col(path, header, hl, "Timestamp"), _col(path, header, hl, column)
    ip = [header.index(c) if ping and c in header else None for c in ("PINGAVG", "PINGLOSS")]
    n = len(rows)
    lines = np.array([i for i, _ in rows])
    t = np.array([_raca_time(path, f[it], i) for i, f in rows])
    cols = [np.array([_num(path, f[j], i, missing_ok=True) for i, f in rows]) if j is not None
            else None for j in (ir, *ip)]
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
        raise TraceError(path, "missing column 'throughput_mbps' (or '<Carrier>_throughput_mbps')", hl)
    else:
        names = {h[:-len("_throughput_mbps")]: h for h in per_carrier}
        key = {re.sub(r"[\W_]", "", k).lower(): k for k in names}
        want = re.sub(r"[\W_]", "", carrier or "").lower()
        if want not in key:
            raise TraceError(path, f"pass carrier= one of {', '.join(names)}"
                                   + (f" (got {carrier!r})" if carrier else ""), hl)
        col = names[key[want]]
    j = header.index(col)
    lines = np.array([i for i, _ in rows])
    v = np.array([_num(path, f[j], i) for i, f in rows])
    if "seq_num" in header:
        k = header.index("seq_num")
        _check_time(path, np.array([_num(path, f[k], i) for i, f in rows]), lines)
    _check_nonneg(path, v, lines, "throughput")
    return _Parsed(_per_second(v * 1e6 / 8))


_PARSERS = {"mahimahi": _mahimahi, "rate_series": _rate_series, "pensieve": _rate_series,
            "raca": _raca, "lumos": _lumos, "5gophers": _5gophers, "aydin": _aydin,
            "step": _step, "unit_series": unit_series, "csv": named_csv}
_OPTIONS = {"raca": {"column", "duplicates", "ping"}, "5gophers": {"carrier"},
            "step": {"delay_is_rtt"}, "unit_series": {"period_s"},
            "csv": {"rate_column", "unit", "time_column", "time_unit", "period_s"}}


def detect_format(path, text: str) -> str:
    """The format of ``text`` read from ``path`` (rules in the module doc)."""
    name = Path(path).name.lower()
    if name.endswith((".down", ".up")):
        return "mahimahi"
    if "lumos" in name:
        return "lumos"
    if re.fullmatch(r"\d+_\d+_(wifi|cellular)\.csv", name):
        return "aydin"
    first = next((s.strip() for s in text.splitlines()
                  if s.strip() and not s.lstrip().startswith("#")), "")
    low = first.lower()
    fields = _SEP.split(first)
    if "timestamp" in low and "dl_bitrate" in low:
        return "raca"
    if "throughput_mbps" in low:
        return "5gophers"
    if "time_ms" in low or "bw_kbps" in low:
        return "step"
    numeric = all(map(_is_num, fields))
    if not numeric and looks_like_unit_line(first):
        return "unit_series"
    if len(fields) == 1 and re.fullmatch(r"\d+", first):
        return "mahimahi"
    if len(fields) == 2 and (numeric or not any(map(_is_num, fields))):
        return "rate_series"
    if numeric and len(fields) in (3, 4):
        return "step"
    raise TraceError(path, f"cannot detect the trace format; pass fmt= one of {', '.join(TRACE_FORMATS)}", 1)


# -------------------------------------------------------------- public API --

def load_trace(path, fmt: str = "auto", *, scale: float = 1.0, start_s: float = 0.0,
               duration_s: float | None = None, min_rate_mbps: float = 0.0,
               **options) -> PathTrace:
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
    text = _read_text(path)
    if fmt == "auto":
        fmt = detect_format(path, text)
    extra = set(options) - _OPTIONS.get(fmt, set())
    if extra:
        raise TraceError(path, f"option(s) {', '.join(sorted(extra))} do not apply to format {fmt!r}")
    parsed = _PARSERS[fmt](path, text, **options)
    return _finish(path, parsed, scale, start_s, duration_s, min_rate_mbps)


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
        delay, loss = (s and StepSeries(*_compact(s.times, s.values), s.period)
                       for s in (p.delay, p.loss))
    except ValueError as exc:  # should not happen: parsers validate first
        raise TraceError(path, str(exc)) from None
    return PathTrace(cap, delay, loss, source=str(path))
