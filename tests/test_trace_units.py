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


@pytest.mark.parametrize(
    "unit, bytes_per_s",
    [
        ("bps", 1 / 8),
        ("kbps", 125),
        ("Kbits/sec", 125),
        ("Mbits/sec", MBPS),
        ("Mbit/s", MBPS),
        ("mbps", MBPS),
        ("Gbits/sec", 1e9 / 8),
        ("Mb/s", MBPS),
        ("B/s", 1),
        ("bytes/sec", 1),
        ("kB/s", 1e3),
        ("MB/s", 1e6),
        ("MBps", 1e6),
        ("MiB/s", 2**20),
        ("KBytes/sec", 1024),
        ("MBytes/sec", 2**20),
        ("GBytes/sec", 2**30),
    ],
)
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
    p = write(
        tmp_path,
        "iperf.csv",
        "5.59,Mbits/sec\n# a comment\n\n800 Kbits/sec\n1.5e1Mbps\n0,bits/sec\n",
    )
    assert detect_format(p, p.read_text()) == "unit_series"
    tr = load_trace(p)
    cap = tr.capacity
    assert cap.period == 4.0  # four 1-s samples
    assert [rate_at(cap, t) / MBPS for t in (0.5, 1.5, 2.5, 3.5)] == pytest.approx(
        [5.59, 0.8, 15.0, 0.0]
    )
    assert mbps_mean(load_trace(p, "unit_series", period_s=0.5)) == pytest.approx(mbps_mean(tr))
    assert load_trace(p, "unit_series", period_s=0.5).capacity.period == 2.0


def mbps_mean(trace):
    return trace.capacity.mean_rate / MBPS


@pytest.mark.parametrize(
    "text, line, message",
    [
        ("5 Mbits/sec\n6 furlongs/sec\n", 2, "unknown rate unit 'furlongs/sec'"),
        ("5 Mbits/sec\nfast\n", 2, "expected one 'value unit' sample"),
        ("5 Mbits/sec\n-1 Mbits/sec\n", 2, "negative rate"),
        ("5 Mbits/sec 7\n", 1, "expected one 'value unit' sample"),
    ],
)
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
    tr = load_trace(
        p, "csv", rate_column="throughput", unit="Mbit/s", time_column="time", time_unit="ms"
    )
    cap = tr.capacity
    assert [rate_at(cap, t) / MBPS for t in (0.2, 0.7, 1.6)] == pytest.approx([12, 30, 6])
    assert cap.period == pytest.approx(2.5)  # last time + last interval
    rows = load_trace(p, "csv", rate_column="Throughput", unit="MB/s", period_s=2)
    assert rows.capacity.period == 6.0 and rate_at(rows.capacity, 0.1) == pytest.approx(12e6)


@pytest.mark.parametrize(
    "options, message",
    [
        ({"rate_column": "Throughput"}, "needs unit=: column 'Throughput' does not name its unit"),
        ({}, "needs rate_column= and unit="),
        ({"rate_column": "Throughput", "unit": "Mbit/s"}, "no column names a time unit"),
        (
            {"rate_column": "Throughput", "unit": "Mbit/s", "time_column": "Time"},
            "needs time_unit=: column 'Time'",
        ),
        (
            {"rate_column": "goodput", "unit": "Mbit/s"},
            "missing column 'goodput' \\(have: Time, RSSI, Throughput\\)",
        ),
        ({"rate_column": "Throughput", "unit": "Mbit"}, "unknown rate unit 'Mbit'"),
        (
            {
                "rate_column": "Throughput",
                "unit": "Mbit/s",
                "time_column": "Time",
                "time_unit": "min",
            },
            "time_unit='min'",
        ),
        ({"rate_column": "RSSI", "unit": "Mbit/s"}, "negative rate"),
    ],
)
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
        load_trace(p, "csv", rate_column="rate", unit="Mbps", time_column="t", time_unit="s")
    assert err.value.line == 4


def test_a_unit_trace_drives_an_episode(tmp_path):
    p = write(tmp_path, "iperf.txt", "".join(f"{20 + 5 * (k % 3)},Mbits/sec\n" for k in range(30)))
    sc = {
        "paths": [
            {"trace": {"file": str(p), "period_s": 0.5}, "rtt_ms": 30},
            {"trace": {"file": str(p), "format": "unit_series"}, "rtt_ms": 50},
        ]
    }
    r = run_episode(sc, {"kind": "bulk", "size_bytes": 500_000}, _minrtt(), 0)
    assert r.metrics["timed_out"] == 0 and r.metrics["download_time_s"] > 0
    assert np.isclose(r.metrics["path0_share"] + r.metrics["path1_share"], 1.0)


def _minrtt():
    from baselines import make_scheduler

    return make_scheduler("minrtt")


@pytest.mark.parametrize(
    "text, fmt, mean_mbps",
    [
        ("time_s,rate_kbps\n0,12500\n1,12500\n", "step", 12.5),  # was read as Mbit/s: 12 500
        (
            "time_ms,rate_mbps\n0,12.5\n1000,12.5\n",
            "step",
            12.5,
        ),  # was read as step's kbit/s: 0.0125
        ("time_ms bandwidth_Mbps\n0 10\n500 20\n", "step", 15.0),
        ("Time (s),RSSI,Throughput (MB/s)\n0,-70,1\n1,-71,3\n", "csv", 16.0),
        ("timeInSeconds,BytesPerSecond\n0,1000000\n1,3000000\n", "step", 16.0),
        ("Value,Unit\n4.09,Mbits/sec,,,\n5.91,Mbits/sec,,,\n", "unit_series", 5.0),
    ],
)
def test_units_named_in_a_header_are_honoured(tmp_path, text, fmt, mean_mbps):
    tr = load_trace(write(tmp_path, "mine.csv", text))
    assert tr.format == fmt and mbps_mean(tr) == pytest.approx(mean_mbps)


@pytest.mark.parametrize("fmt", ["rate_series", "step", "csv"])
def test_an_explicit_format_does_not_override_a_named_unit(tmp_path, fmt):
    p = write(tmp_path, "mine.csv", "time_ms,rate_kbps\n0,4000\n1000,8000\n")
    assert mbps_mean(load_trace(p, fmt)) == pytest.approx(6.0)


def test_step_header_names_rtt_and_loss_percent(tmp_path):
    tr = load_trace(
        write(tmp_path, "s.csv", "time_s,rate_mbps,rtt_ms,loss_pct\n0,8,40,1\n1,16,80,0\n")
    )
    assert tr.delay.value_at(0.5) == pytest.approx(0.020) and tr.loss.value_at(
        0.5
    ) == pytest.approx(0.01)


@pytest.mark.parametrize(
    "text, message",
    [
        ("0 5\n1 6\n", "two numeric columns and no header naming their units"),
        ("0\n10\n20\n", "one number per line, units unknown: pass fmt='mahimahi'"),
        ("0,1,2\n", "numeric columns and no header naming their units"),
        ("time,rate\n0,5\n1,6\n", "no column names its rate unit \\(columns: time, rate\\)"),
        ("t_s,dl_kbps,ul_kbps\n0,1,2\n", "several columns name a rate unit \\(dl_kbps, ul_kbps\\)"),
        ("rate_mbps\n5\n6\n", "no column names a time unit"),
        ("time_s,rate_MBPS\n0,5\n", "no column names its rate unit"),
    ],
)
def test_a_file_whose_units_are_unknown_is_a_one_line_error(tmp_path, text, message):
    with pytest.raises(TraceError, match=message) as err:
        load_trace(write(tmp_path, "mine.txt", text))
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    "options, message",
    [
        ({"unit": "kbps"}, "unit='kbps' contradicts column 'rate_mbps', which names 'mbps'"),
        ({"time_unit": "s"}, "time_unit='s' contradicts column 'time_ms'"),
        ({"period_s": 1.0, "time_column": "time_ms"}, "not both"),
    ],
)
def test_options_that_contradict_a_named_unit_are_errors(tmp_path, options, message):
    p = write(tmp_path, "mine.csv", "time_ms,rate_mbps\n0,5\n1000,6\n")
    with pytest.raises(TraceError, match=message):
        load_trace(p, "csv", **options)
