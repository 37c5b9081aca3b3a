"""Property: a trace written in any supported format and unit spelling, with or
without a header row, reads back with the mean rate it was written with (within
0.1 %); a file that does not say its units is a one-line
:class:`envs.errors.TraceError`, never a guess.

Seeded hypothesis runs, like ``tests/test_trace_fuzz.py``: the default suite
runs 600 + 200 generated files, the slow run 10x (``tests/fuzz_scale.py``).
"""

from __future__ import annotations

import numpy as np
import pytest
from fuzz_scale import SCALES, examples
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from envs.errors import TraceError
from envs.traces import load_trace
from envs.traces.columns import TIME_WORDS

#: rate units as files spell them -> bytes/s per unit
RATE_SPELLINGS = {
    "bps": 1 / 8,
    "kbps": 125.0,
    "Kbps": 125.0,
    "Mbps": 1e6 / 8,
    "mbps": 1e6 / 8,
    "Gbps": 1e9 / 8,
    "kbit/s": 125.0,
    "Mbit/s": 1e6 / 8,
    "Mbits/sec": 1e6 / 8,
    "Kbits/sec": 125.0,
    "bits/sec": 1 / 8,
    "Gbits/sec": 1e9 / 8,
    "B/s": 1.0,
    "Bps": 1.0,
    "kB/s": 1e3,
    "KBps": 1e3,
    "MB/s": 1e6,
    "MBps": 1e6,
    "MiB/s": 2.0**20,
    "KBytes/sec": 1024.0,
    "MBytes/sec": 2.0**20,
    "bytes/sec": 1.0,
}
#: column-name patterns that carry a unit ({u}: the unit)
RATE_NAMES = ["rate_{u}", "bw_{u}", "bandwidth_{u}", "Throughput ({u})", "tput[{u}]", "DL-{u}"]
TIME_NAMES = ["time_{u}", "t_{u}", "Time ({u})", "timestamp[{u}]"]
#: spelled-out names -> bytes/s (rate) or time units per second (time)
SPELLED_RATES = {"BytesPerSecond": 1.0, "bits_per_second": 1 / 8, "throughput_mbit_s": 1e6 / 8}
SPELLED_TIMES = {"timeInSeconds": 1.0, "time_seconds": 1.0, "time_msec": 1e3}
IPERF_UNITS = [
    "bits/sec",
    "Kbits/sec",
    "Mbits/sec",
    "Gbits/sec",
    "KBytes/sec",
    "MBytes/sec",
    "kbps",
    "Mbit/s",
]

rates_mbps = st.lists(
    st.one_of(st.just(0.0), st.floats(1e-3, 2000.0)), min_size=2, max_size=25
).filter(any)
intervals_s = st.lists(
    st.one_of(st.sampled_from([0.001, 0.01, 0.1, 0.5, 1.0, 2.0]), st.floats(0.001, 5.0)),
    min_size=25,
    max_size=25,
)


def held_mean(t_s: np.ndarray, rate: np.ndarray) -> float:
    """Mean of rates held from each time to the next, the last for the last interval."""
    dur = np.diff(np.append(t_s, 2 * t_s[-1] - t_s[-2]))
    return float(np.sum(rate * dur) / np.sum(dur))


def cell(x: float) -> str:
    return repr(float(x))


@st.composite
def rate_unit(draw, spellings=RATE_SPELLINGS):
    u = draw(st.sampled_from(sorted(spellings)))
    return u, spellings[u]


@st.composite
def named_columns(draw):
    """(time name, time units per second, rate name, bytes/s per rate unit)."""
    if draw(st.booleans()):
        tname = draw(st.sampled_from(sorted(SPELLED_TIMES)))
        t_per_s = SPELLED_TIMES[tname]
    else:
        tu = draw(
            st.sampled_from(["s", "sec", "ms", "MS", "msec", "us", "seconds", "milliseconds"])
        )
        tname, t_per_s = draw(st.sampled_from(TIME_NAMES)).format(u=tu), TIME_WORDS[tu.lower()]
    if draw(st.booleans()):
        rname = draw(st.sampled_from(sorted(SPELLED_RATES)))
        r_unit = SPELLED_RATES[rname]
    else:
        u, r_unit = draw(rate_unit())
        rname = draw(st.sampled_from(RATE_NAMES)).format(u=u)
    return tname, t_per_s, rname, r_unit


@st.composite
def timed_table(draw):
    """Time and rate columns with a header naming the units: auto-detected (step,
    or csv with extra columns), or read with fmt= rate_series / step / csv."""
    mbps = np.array(draw(rates_mbps))
    t_s = draw(st.floats(0, 100)) + np.cumsum([0.0, *draw(intervals_s)[: len(mbps) - 1]])
    tname, t_per_s, rname, r_unit = draw(named_columns())
    extra = draw(st.booleans())  # an unrelated column: read as 'csv'
    names = [tname, *(["RSSI"] if extra else []), rname]
    rows = [
        [cell(t * t_per_s), *(["-70"] if extra else []), cell(r * 1e6 / 8 / r_unit)]
        for t, r in zip(t_s, mbps)
    ]
    sep = (
        ","
        if any(" " in n for n in names) or draw(st.booleans())
        else draw(st.sampled_from([" ", "\t"]))
    )
    trailing = "," * draw(st.integers(0, 2)) if sep == "," else ""
    text = "\n".join([sep.join(names) + trailing, *(sep.join(r) + trailing for r in rows)]) + "\n"
    fmt = draw(
        st.sampled_from(["auto", "csv"] if extra else ["auto", "step", "rate_series", "csv"])
    )
    return "table.csv", text, fmt, {}, held_mean(t_s, mbps) * 1e6 / 8


@st.composite
def format_units_table(draw):
    """A headerless (or unit-less header) table read with fmt= in the format's own units."""
    mbps = np.array(draw(rates_mbps))
    t_s = np.cumsum([0.0, *draw(intervals_s)[: len(mbps) - 1]])
    fmt = draw(st.sampled_from(["rate_series", "pensieve", "step"]))
    if fmt == "step":
        rows, header = [[cell(t * 1000), cell(r * 1000)] for t, r in zip(t_s, mbps)], "time,bw"
    else:
        rows, header = [[cell(t), cell(r)] for t, r in zip(t_s, mbps)], "time rate"
    sep = draw(st.sampled_from([",", " ", "\t", ", "]))
    lines = (
        [header.replace(",", sep) if sep.strip() else header.replace(",", " ")]
        if draw(st.booleans())
        else []
    )
    text = "\n".join(lines + [sep.join(r) for r in rows]) + "\n"
    return "cooked.txt", text, fmt, {}, held_mean(t_s, mbps) * 1e6 / 8


@st.composite
def unit_lines(draw):
    """iperf-style ``value unit`` lines, with or without a header row and trailing empty columns."""
    mbps = np.array(draw(rates_mbps))
    period = draw(st.sampled_from([None, 0.5, 1.0, 2.0]))
    lines = []
    for r in mbps:
        u = draw(st.sampled_from(IPERF_UNITS))
        sep = draw(st.sampled_from([",", " ", ""]))
        lines.append(f"{cell(r * 1e6 / 8 / RATE_SPELLINGS[u])}{sep}{u}")
    trailing = "," * draw(st.integers(0, 3))
    header = (
        [draw(st.sampled_from(["Value,Unit", "Bitrate Unit", "bandwidth,unit"]))]
        if draw(st.booleans())
        else []
    )
    text = "\n".join(header + [line + trailing for line in lines]) + "\n"
    fmt = draw(st.sampled_from(["auto", "unit_series"]))
    return (
        "iperf.csv",
        text,
        fmt,
        ({} if period is None else {"period_s": period}),
        float(mbps.mean()) * 1e6 / 8,
    )


@st.composite
def per_second_formats(draw):
    """Lumos5G, Aydin, 5Gophers and Raca files (one row = 1 s), by their names and headers."""
    mbps = np.array(draw(rates_mbps))
    kind = draw(st.sampled_from(["lumos", "aydin", "5gophers", "raca"]))
    if kind == "lumos":  # MB/s
        rows = [f"{k + 1}.0 {cell(r / 8)}" for k, r in enumerate(mbps)]
        header = ["seq throughput"] if draw(st.booleans()) else []
        return (
            "lumos_trace_9.log",
            "\n".join(header + rows) + "\n",
            "lumos" if header else "auto",
            {},
            float(mbps.mean()) * 1e6 / 8,
        )
    if kind == "aydin":  # bytes/s
        rows = [f"{k + 1},{cell(r * 1e6 / 8)}" for k, r in enumerate(mbps)]
        return "7_1_wifi.csv", "\n".join(rows) + "\n", "auto", {}, float(mbps.mean()) * 1e6 / 8
    if kind == "5gophers":  # Mbit/s
        rows = [f"TCP,{k},{cell(r)}" for k, r in enumerate(mbps)]
        return (
            "walk.csv",
            "\n".join(["protocol,seq_num,throughput_mbps", *rows]) + "\n",
            "auto",
            {},
            float(mbps.mean()) * 1e6 / 8,
        )
    rows = [
        f"2020.01.01_00.{k // 60:02d}.{k % 60:02d},{cell(r * 1000)},7" for k, r in enumerate(mbps)
    ]  # kbit/s
    return (
        "B_2020.csv",
        "\n".join(["Timestamp,DL_bitrate,UL_bitrate", *rows]) + "\n",
        "auto",
        {},
        float(mbps.mean()) * 1e6 / 8,
    )


@st.composite
def mahimahi(draw):
    """Delivery opportunities in ms (each 1500 bytes): mean = lines x 1500 / last timestamp."""
    ts = sorted(draw(st.lists(st.integers(0, 5000), min_size=1, max_size=60)))
    last = max(ts[-1], 1)
    ts[-1] = last
    name, fmt = draw(st.sampled_from([("t.down", "auto"), ("t.up", "auto"), ("t.txt", "mahimahi")]))
    return name, "\n".join(map(str, ts)) + "\n", fmt, {}, len(ts) * 1500 / (last / 1000)


trace_file = st.one_of(
    timed_table(), format_units_table(), unit_lines(), per_second_formats(), mahimahi()
)


def check_mean(tmp_path, case) -> None:
    name, text, fmt, opts, mean_bytes_per_s = case
    path = tmp_path / name
    path.write_text(text)
    trace = load_trace(path, fmt, **opts)
    assert trace.capacity.mean_rate == pytest.approx(mean_bytes_per_s, rel=1e-3), (fmt, text[:300])


@st.composite
def ambiguous_file(draw):
    """Files whose units only a guess could supply, read with fmt='auto'."""
    kind = draw(st.sampled_from(["headerless", "unitless_header", "two_rates"]))
    n_cols = draw(st.integers(1, 4))
    rows = [
        ",".join(cell(draw(st.floats(0, 1e4))) for _ in range(n_cols))
        for _ in range(draw(st.integers(1, 8)))
    ]
    if kind == "headerless":
        rows[0] = str(draw(st.integers(0, 100))) if n_cols == 1 else rows[0]
        return draw(st.sampled_from(["t.txt", "t.csv", "trace.log", "x"])), "\n".join(rows) + "\n"
    if kind == "unitless_header":
        header = draw(
            st.sampled_from(
                ["time,rate", "t,bw", "seconds_elapsed,throughput", "time,bandwidth,delay"]
            )
        )
        width = len(header.split(","))
        rows = [",".join(cell(draw(st.floats(0, 1e4))) for _ in range(width)) for _ in range(3)]
        return "t.csv", "\n".join([header, *rows]) + "\n"
    return "t.csv", "time_s,dl_kbps,ul_kbps\n0,1,2\n1,3,4\n"


def check_refused(tmp_path, case) -> None:
    name, text = case
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(TraceError) as err:
        load_trace(path)
    assert "\n" not in str(err.value) and str(err.value).startswith("trace ")


@pytest.mark.parametrize("scale", SCALES)
def test_every_format_and_unit_spelling_reads_back_its_mean_rate(tmp_path_factory, scale):
    tmp_path = tmp_path_factory.mktemp("roundtrip")

    @seed(20260046 + 100 * scale)
    @settings(
        max_examples=examples(0.75, scale),
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(case=trace_file)
    def run(case):
        check_mean(tmp_path, case)

    run()


@pytest.mark.parametrize("scale", SCALES)
def test_a_file_that_does_not_say_its_units_is_a_one_line_error(tmp_path_factory, scale):
    tmp_path = tmp_path_factory.mktemp("ambiguous")

    @seed(20260146 + 100 * scale)
    @settings(
        max_examples=examples(0.25, scale),
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(case=ambiguous_file())
    def run(case):
        check_refused(tmp_path, case)

    run()
