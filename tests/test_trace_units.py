"""Rate series with units: value-and-unit lines and CSVs with named columns (envs/traces/units.py)."""

import numpy as np
import pytest

from envs import run_episode
from envs.errors import TraceError
from envs.traces import detect_format, load_trace
from envs.traces.units import rate_unit

MBPS = 1e6 / 8


def rate_at(cap, t: float, dt: float = 1e-3) -> float:
    """Capacity [bytes/s] of a capacity trace just after ``t`` [s]."""
    return (cap.cum_bytes(t + dt) - cap.cum_bytes(t)) / dt


@pytest.mark.parametrize("unit, bytes_per_s", [
    ("bps", 1 / 8), ("kbps", 125), ("Kbits/sec", 125), ("Mbits/sec", MBPS), ("Mbit/s", MBPS), ("mbps", MBPS),
    ("Gbits/sec", 1e9 / 8), ("Mb/s", MBPS), ("B/s", 1), ("bytes/sec", 1), ("kB/s", 1e3), ("MB/s", 1e6),
    ("MBps", 1e6), ("MiB/s", 2**20), ("KBytes/sec", 1024), ("MBytes/sec", 2**20), ("GBytes/sec", 2**30),
])
def test_rate_units(unit, bytes_per_s):
    assert rate_unit(unit) == pytest.approx(bytes_per_s)


@pytest.mark.parametrize("unit", ["MBPS", "Mbit", "M/s", "furlongs/fortnight", "", "kbit/h"])
def test_unknown_rate_units_are_rejected(unit):
    with pytest.raises(ValueError, match="unknown rate unit"):
        rate_unit(unit)


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_iperf_style_unit_lines_are_detected_and_read(tmp_path):
    p = write(tmp_path, "iperf.csv", "5.59,Mbits/sec\n# a comment\n\n800 Kbits/sec\n1.5e1Mbps\n0,bits/sec\n")
    assert detect_format(p, p.read_text()) == "unit_series"
    tr = load_trace(p)
    cap = tr.capacity
    assert cap.period == 4.0                                   # four 1-s samples
    assert [rate_at(cap, t) / MBPS for t in (0.5, 1.5, 2.5, 3.5)] == pytest.approx([5.59, 0.8, 15.0, 0.0])
    assert mbps_mean(load_trace(p, "unit_series", period_s=0.5)) == pytest.approx(mbps_mean(tr))
    assert load_trace(p, "unit_series", period_s=0.5).capacity.period == 2.0


def mbps_mean(trace):
    return trace.capacity.mean_rate / MBPS


@pytest.mark.parametrize("text, line, message", [
    ("5 Mbits/sec\n6 furlongs/sec\n", 2, "unknown rate unit 'furlongs/sec'"),
    ("5 Mbits/sec\nfast\n", 2, "expected one 'value unit' sample"),
    ("5 Mbits/sec\n-1 Mbits/sec\n", 2, "negative rate"),
    ("5 Mbits/sec 7\n", 1, "expected one 'value unit' sample"),
])
def test_malformed_unit_lines_name_the_line(tmp_path, text, line, message):
    p = write(tmp_path, "bad.txt", text)
    with pytest.raises(TraceError, match=message) as err:
        load_trace(p, "unit_series")
    assert err.value.line == line
    assert "\n" not in str(err.value)


def test_unit_series_rejects_a_bad_period(tmp_path):
    p = write(tmp_path, "t.txt", "5 Mbits/sec\n")
    with pytest.raises(TraceError, match="period_s=0 must be"):
        load_trace(p, "unit_series", period_s=0)


def test_named_column_csv_with_units(tmp_path):
    p = write(tmp_path, "log.csv", "Time,RSSI,Throughput\n0,-70,12\n500,-71,30\n1500,-69,6\n")
    tr = load_trace(p, "csv", rate_column="throughput", unit="Mbit/s", time_column="time", time_unit="ms")
    cap = tr.capacity
    assert [rate_at(cap, t) / MBPS for t in (0.2, 0.7, 1.6)] == pytest.approx([12, 30, 6])
    assert cap.period == pytest.approx(2.5)                    # last time + last interval
    rows = load_trace(p, "csv", rate_column="Throughput", unit="MB/s", period_s=2)
    assert rows.capacity.period == 6.0 and rate_at(rows.capacity, 0.1) == pytest.approx(12e6)


@pytest.mark.parametrize("options, message", [
    ({"rate_column": "Throughput"}, "needs rate_column= and unit="),
    ({"rate_column": "goodput", "unit": "Mbit/s"}, "missing column 'goodput' \\(have: Time, RSSI, Throughput\\)"),
    ({"rate_column": "Throughput", "unit": "Mbit"}, "unknown rate unit 'Mbit'"),
    ({"rate_column": "Throughput", "unit": "Mbit/s", "time_column": "Time", "time_unit": "min"}, "time_unit='min'"),
    ({"rate_column": "RSSI", "unit": "Mbit/s"}, "negative rate"),
])
def test_named_column_csv_errors_are_one_line(tmp_path, options, message):
    p = write(tmp_path, "log.csv", "Time,RSSI,Throughput\n0,-70,12\n500,-71,30\n")
    with pytest.raises(TraceError, match=message) as err:
        load_trace(p, "csv", **options)
    assert "\n" not in str(err.value)


def test_named_column_csv_cell_and_time_errors_name_the_line(tmp_path):
    p = write(tmp_path, "log.csv", "t,rate\n0,1\n1,n/a\n")
    with pytest.raises(TraceError, match="non-numeric rate 'n/a'") as err:
        load_trace(p, "csv", rate_column="rate", unit="Mbps", time_column="t")
    assert err.value.line == 3
    p = write(tmp_path, "log2.csv", "t,rate\n0,1\n2,1\n1,1\n")
    with pytest.raises(TraceError, match="time 1 is not after the previous 2") as err:
        load_trace(p, "csv", rate_column="rate", unit="Mbps", time_column="t")
    assert err.value.line == 4


def test_a_unit_trace_drives_an_episode(tmp_path):
    p = write(tmp_path, "iperf.txt", "".join(f"{20 + 5 * (k % 3)},Mbits/sec\n" for k in range(30)))
    sc = {"paths": [{"trace": {"file": str(p), "period_s": 0.5}, "rtt_ms": 30},
                    {"trace": {"file": str(p), "format": "unit_series"}, "rtt_ms": 50}]}
    r = run_episode(sc, {"kind": "bulk", "size_bytes": 500_000}, _minrtt(), 0)
    assert r.metrics["timed_out"] == 0 and r.metrics["download_time_s"] > 0
    assert np.isclose(r.metrics["path0_share"] + r.metrics["path1_share"], 1.0)


def _minrtt():
    from baselines import make_scheduler

    return make_scheduler("minrtt")
