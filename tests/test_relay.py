"""The link relay: the emulator's path model on real UDP datagrams, in real time."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import pytest
from conftest import LOOPBACK_REASON, loopback_aliases

from envs.errors import ConfigError
from falcon.relay import Relay, format_report, self_test
from falcon.relay.__main__ import load_scenario

pytestmark = pytest.mark.skipif(not loopback_aliases(), reason=LOOPBACK_REASON)


def _pair(**path1) -> dict:
    return {
        "name": "t",
        "paths": [
            {"bandwidth_mbps": 10.0, "rtt_ms": 20.0, "rtt_std_ms": 0.0, "loss": 0.0},
            {"bandwidth_mbps": 5.0, "rtt_ms": 80.0, "rtt_std_ms": 0.0, "loss": 0.0, **path1},
        ],
    }


class _Echo:
    def __init__(self, answers: int = 1):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.05)
        self.answers = answers

    def serve(self, seconds: float):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            try:
                data, src = self.sock.recvfrom(65535)
            except TimeoutError:
                continue
            for _ in range(self.answers):
                self.sock.sendto(data, src)


def _round_trip(ip: str, relay: Relay, echo: _Echo, n: int = 5) -> list[float]:
    import threading

    t = threading.Thread(target=echo.serve, args=(0.2 + n * 0.2,), daemon=True)
    t.start()
    c = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    c.bind((ip, 0))
    c.settimeout(0.5)
    out = []
    for k in range(n):
        t0 = time.monotonic()
        c.sendto(b"x%d" % k, relay.address)
        try:
            c.recvfrom(65535)
            out.append(time.monotonic() - t0)
        except TimeoutError:
            pass
    c.close()
    t.join()
    return out


def test_each_path_is_chosen_by_the_client_address_and_keeps_its_delay():
    echo = _Echo()
    with Relay(_pair(), server=echo.sock.getsockname()) as relay:
        fast = _round_trip("127.0.0.2", relay, echo)
        slow = _round_trip("127.0.0.3", relay, echo)
        stats = relay.stats()
    echo.sock.close()
    assert len(fast) == len(slow) == 5
    assert 0.019 < min(fast) and max(fast) < 0.030  # 20 ms RTT
    assert 0.079 < min(slow) and max(slow) < 0.095  # 80 ms RTT
    assert [s["up_packets"] for s in stats] == [5, 5]
    assert [s["down_packets"] for s in stats] == [5, 5]


def test_random_loss_hits_the_data_direction_only_and_unknown_sources_are_dropped():
    echo = _Echo(answers=20)
    with Relay(_pair(loss=0.5), server=echo.sock.getsockname(), seed=3) as relay:
        _round_trip("127.0.0.3", relay, echo, n=5)
        stray = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        stray.bind(("127.0.0.9", 0))
        stray.sendto(b"?", relay.address)
        time.sleep(0.1)
        stray.close()
        st = relay.stats()[1]
        unknown = relay.unknown_sources
    echo.sock.close()
    assert st["up_packets"] == 5  # client -> server: never lost
    # 5 x 20 answers at once: the drop-tail buffer (the emulator's default, a
    # fraction of the BDP in packets) takes some, random loss about half the rest
    assert st["down_packets"] + st["down_lost"] + st["down_dropped"] == 100
    admitted = st["down_packets"] + st["down_lost"]
    assert st["down_dropped"] > 0 and 0.25 * admitted <= st["down_lost"] <= 0.75 * admitted
    assert unknown == 1


def test_self_test_measures_the_configured_delay_and_rate():
    """The self-test's figures on a short run (CI machines are noisy: 15 %
    here, 5 % is the bar of `python -m falcon.relay --self-test`)."""
    rep = self_test(_pair(), pings=10, ping_interval_s=0.02, blast_s=0.6, tolerance=0.15)
    assert rep["passed"], format_report(rep)
    fast, slow = rep["paths"]
    assert fast["configured_rtt_ms"] == pytest.approx(20.0) and slow[
        "configured_rtt_ms"
    ] == pytest.approx(80.0)
    assert fast["rtt_ms"] == pytest.approx(20.0, rel=0.01) and slow["rtt_ms"] == pytest.approx(
        80.0, rel=0.01
    )
    assert fast["rate_mbps"] == pytest.approx(10.0, rel=0.02) and slow[
        "rate_mbps"
    ] == pytest.approx(5.0, rel=0.02)
    assert fast["dropped"] > 0  # overloaded: the drop-tail queue overflows
    assert "relay self-test passed" in format_report(rep)


def test_a_wrong_measurement_fails_the_self_test():
    """The verdict can fail: a tolerance no real measurement meets."""
    rep = self_test(_pair(), pings=4, ping_interval_s=0.02, blast_s=0.3, tolerance=1e-9)
    assert not rep["passed"]
    assert "FAILED" in format_report(rep)


def test_bad_input_is_one_line():
    with pytest.raises(ConfigError, match="2 distinct client addresses"):
        Relay(_pair(), client_ips=["127.0.0.2"])
    with pytest.raises(ConfigError, match="lead must be"):
        Relay(_pair(), lead_s=0.02)
    with pytest.raises(ConfigError, match="no such key"):
        load_scenario(None, ["paths.5.loss=0.1"])
    assert load_scenario(None, ["paths.1.loss=0.25"])["paths"][1]["loss"] == 0.25
    busy = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    busy.bind(("127.0.0.1", 0))
    try:
        with pytest.raises(ConfigError, match="cannot bind"):
            Relay(_pair(), listen=busy.getsockname()).start()
        host, port = busy.getsockname()
        res = subprocess.run(
            [sys.executable, "-m", "falcon.relay", "--listen", f"{host}:{port}"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        busy.close()
    assert res.returncode == 2
    assert res.stderr.strip().count("\n") == 0 and "cannot bind" in res.stderr


def test_a_trace_driven_and_a_jittery_path_are_judged_against_their_own_model():
    """The self-test compares with what the model released (a trace's own
    rate over the blast, the jitter draws of the very pings), not with the
    configured means."""
    scen = {
        "name": "tr",
        "paths": [
            {
                "synthetic": {
                    "kind": "gaussian_rate",
                    "mean_mbps": 8.0,
                    "std_mbps": 4.0,
                    "step_s": 0.1,
                    "duration_s": 30.0,
                },
                "rtt_ms": 30.0,
                "rtt_std_ms": 0.0,
                "loss": 0.0,
            },
            {"bandwidth_mbps": 5.0, "rtt_ms": 50.0, "rtt_std_ms": 10.0, "loss": 0.0},
        ],
    }
    rep = self_test(scen, pings=10, ping_interval_s=0.02, blast_s=0.6, tolerance=0.15)
    assert rep["passed"], format_report(rep)
    trace, jittery = rep["paths"]
    assert trace["measured_rate_mbps"] == pytest.approx(trace["rate_mbps"], rel=0.15)
    assert jittery["rtt_ms"] != pytest.approx(50.0, abs=0.01)  # the pings' own draws
    assert jittery["measured_rtt_ms"] == pytest.approx(jittery["rtt_ms"], rel=0.15)
