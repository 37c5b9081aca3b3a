"""Fuzzing the trace readers: generated files, in every format and by auto-detection,
load or fail with one documented error, :class:`envs.errors.TraceError`, never
anything else (no IndexError, no numpy warning turned error, no hang).

The default suite runs 3 x 800 = 2 400 generated inputs, seeded; the slow
run 10x (``tests/fuzz_scale.py``; ``FALCON_FUZZ_EXAMPLES`` scales both).
"""

from __future__ import annotations

import pytest
from fuzz_scale import SCALES, examples
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from envs.errors import TraceError
from envs.traces import TRACE_FORMATS, PathTrace, load_trace

#: tokens that look like the real formats, so generated files reach deep into the parsers
TOKENS = [
    "0",
    "1",
    "12",
    "-3",
    "0.5",
    "1e3",
    "1e400",
    "nan",
    "inf",
    "-",
    "",
    "x",
    "5.59",
    "Mbits/sec",
    "kbps",
    "MB/s",
    "KBytes/sec",
    "furlongs",
    "Timestamp",
    "DL_bitrate",
    "UL_bitrate",
    "PINGAVG",
    "PINGLOSS",
    "2019.12.14_10.16.30",
    "2019.12.14_10.16.29",
    "throughput_mbps",
    "seq_num",
    "Sprint_throughput_mbps",
    "time_ms",
    "bw_kbps",
    "rate",
    "time",
    "#",
    " ",
    "99999999999999999999",
]
SEPARATORS = [",", " ", "\t", ", ", ""]
NAMES = ["t.txt", "t.csv", "t.down", "lumos_1.log", "7_1_wifi.csv", "iperf.log", "B_2019.csv"]

NUMBERS = [
    "0",
    "1",
    "2",
    "3",
    "10",
    "250",
    "1000",
    "0.5",
    "1e3",
    "-1",
    "1e400",
    "nan",
    "",
    "-",
    "x",
]
UNITS = ["Mbits/sec", "kbps", "MB/s", "KBytes/sec", "bps", "furlongs", "Mbit"]
HEADERS = [
    "Timestamp,DL_bitrate,PINGAVG,PINGLOSS",
    "seq_num,throughput_mbps",
    "time_ms,bw_kbps,delay_ms,loss",
    "seq_num,Sprint_throughput_mbps,Verizon_throughput_mbps",
    "time,rate",
    "t rate",
    "",
]
STAMPS = [
    "2019.12.14_10.16.29",
    "2019.12.14_10.16.30",
    "2019.12.14_10.16.32",
    "2019.13.14_10.16.30",
]

# token soup: looks like any format, reaches the detectors and early checks
soup_line = st.lists(st.sampled_from(TOKENS), min_size=0, max_size=6).flatmap(
    lambda toks: st.sampled_from(SEPARATORS).map(lambda sep: sep.join(toks))
)
soup = st.lists(soup_line, min_size=0, max_size=12).map("\n".join)
# structured files: a header and rows of mostly valid cells, to reach the parsers' later checks
number = st.one_of(
    st.sampled_from(NUMBERS),
    st.integers(0, 5000).map(str),
    st.floats(0, 1e4, allow_nan=False).map(lambda x: f"{x:.3f}"),
)
row = st.tuples(st.integers(1, 5), st.sampled_from([",", " ", "\t"])).flatmap(
    lambda k: st.lists(number, min_size=k[0], max_size=k[0]).map(k[1].join)
)
rows = st.tuples(st.sampled_from(HEADERS), st.lists(row, min_size=1, max_size=15)).map(
    lambda hr: "\n".join(([hr[0]] if hr[0] else []) + hr[1])
)
mahimahi = st.lists(st.integers(-2, 60), min_size=1, max_size=40).map(
    lambda v: "\n".join(map(str, sorted(v) if len(v) % 3 else v))
)
units = st.lists(
    st.tuples(number, st.sampled_from(["", ",", " "]), st.sampled_from(UNITS)).map("".join),
    min_size=1,
    max_size=15,
).map("\n".join)
raca = st.lists(
    st.tuples(st.sampled_from(STAMPS), number, number, number).map(",".join),
    min_size=1,
    max_size=10,
).map(lambda r: "\n".join([HEADERS[0], *sorted(r)]))
text = st.one_of(soup, rows, mahimahi, units, raca)
raw = st.binary(max_size=200)
options = {
    "raca": st.fixed_dictionaries(
        {},
        optional={
            "column": st.sampled_from(["DL_bitrate", "UL_bitrate", "nope"]),
            "duplicates": st.sampled_from(["order", "mean", "bad"]),
            "ping": st.booleans(),
        },
    ),
    "5gophers": st.fixed_dictionaries({}, optional={"carrier": st.sampled_from(["Sprint", "x"])}),
    "step": st.fixed_dictionaries({}, optional={"delay_is_rtt": st.booleans()}),
    "unit_series": st.fixed_dictionaries(
        {}, optional={"period_s": st.sampled_from([1.0, 0.1, 0, -1])}
    ),
    "csv": st.fixed_dictionaries(
        {},
        optional={
            "rate_column": st.sampled_from(TOKENS[:25]),
            "unit": st.sampled_from(["Mbit/s", "kbps", "x"]),
            "time_column": st.sampled_from(["time", "seq_num", "t"]),
            "time_unit": st.sampled_from(["s", "ms", "h"]),
            "period_s": st.sampled_from([1.0, 0]),
        },
    ),
}
common = st.fixed_dictionaries(
    {},
    optional={
        "scale": st.sampled_from([1.0, 0.0, 2.5, -1.0]),
        "start_s": st.sampled_from([0.0, 0.5, 3.0, 1e9]),
        "duration_s": st.sampled_from([None, 0.5, 10.0, 0.0]),
        "min_rate_mbps": st.sampled_from([0.0, 1.0]),
    },
)


@st.composite
def trace_file(draw):
    content = draw(st.one_of(text, text, text, text, text, text, raw))
    fmt = draw(st.sampled_from(["auto", *TRACE_FORMATS]))
    opts = draw(options.get(fmt, st.just({}))) if fmt != "auto" else {}
    return draw(st.sampled_from(NAMES)), content, fmt, {**opts, **draw(common)}


def check_one(tmp_path, case) -> None:
    name, content, fmt, opts = case
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    try:
        tr = load_trace(path, fmt, **opts)
    except TraceError as e:
        assert "\n" not in str(e) and str(e).startswith("trace ")
        return
    assert isinstance(tr, PathTrace) and tr.capacity.mean_rate > 0


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("part", range(3))
def test_generated_trace_files_load_or_raise_trace_error(tmp_path_factory, part, scale):
    """3 x 800 generated files in the default suite (2 400 inputs)."""
    tmp_path = tmp_path_factory.mktemp(f"fuzz{part}")

    @seed(20261124 + part + 100 * scale)  # reproducible, and a different stream per part and scale
    @settings(
        max_examples=examples(1.0, scale),
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(case=trace_file())
    def run(case):
        check_one(tmp_path, case)

    run()
