"""Does the relay hold its configured delay and rate on this machine? Measured.

``python -m falcon.relay --self-test`` (or :func:`self_test`) starts a
:class:`~falcon.relay.relay.Relay` on the scenario, a UDP echo/blast server
and one UDP client per path bound to that path's client address, and
measures all paths at the same time (so the relay is under the load of every
path at once):

1. **Delay.** Each client sends ``pings`` small datagrams, one every
   ``ping_interval_s``; the server echoes them. The mean round trip through
   the relay is compared with the mean of what the path's model gave those
   very datagrams (the ping's delay to the server plus its echo's back,
   :attr:`PathCounters.up_s` / ``down_s``): the relay's own
   error, free of the jitter draws, whose mean over a few dozen pings moves
   by several percent on a jittery path. The configured mean RTT is
   reported beside it.
2. **Rate.** The server sends each client ``blast_s`` seconds of 1 350-byte
   datagrams at ``overload`` times the path's mean rate (of the next 10 s),
   so a constant-rate bottleneck's queue never empties. The client's
   received wire bytes over the span between the first and the last arrival
   are the delivered rate, compared with the rate the path's model released
   those very datagrams at (the k-th datagram received is the model's k-th
   delivered one: a path never reorders). On a constant-rate path that is
   the configured rate; on a trace-driven one it follows the trace, outages
   included, whatever the load.
3. **Release lateness.** How late the relay's sender thread released each
   packet against its computed time (median and 99th percentile).

A path passes when both relative errors are at most ``tolerance`` (5 %); a
check the path's own model leaves without data (a trace in an outage drops
every echo) is reported as not measured.
The report is a table and a dict (JSON with ``--json``).
"""

from __future__ import annotations

import math
import socket
import statistics
import threading
import time
from collections.abc import Mapping

from falcon.relay.relay import WIRE_OVERHEAD_BYTES, Relay

#: the default scenario of the self-test: a heterogeneous pair without
#: jitter or loss, so the expected delay and rate are exact
DEFAULT_SCENARIO = {
    "name": "relay_self_test",
    "paths": [
        {"name": "fast", "bandwidth_mbps": 10.0, "rtt_ms": 20.0, "rtt_std_ms": 0.0, "loss": 0.0},
        {"name": "slow", "bandwidth_mbps": 5.0, "rtt_ms": 80.0, "rtt_std_ms": 0.0, "loss": 0.0},
    ],
}

PAYLOAD = 1350


class _Server:
    """Echo ``P`` datagrams; on ``B <seconds> <bits per second>`` send that many
    seconds of :data:`PAYLOAD`-byte datagrams at that rate back to the sender."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.running = True
        self.thread = threading.Thread(target=self._loop, daemon=True, name="relay-selftest-server")
        self.blasts: list[threading.Thread] = []

    @property
    def address(self):
        return self.sock.getsockname()

    def _loop(self):
        while self.running:
            try:
                data, src = self.sock.recvfrom(65_535)
            except TimeoutError:
                continue
            except OSError:
                return
            if data[:1] == b"P":
                self.sock.sendto(data, src)
            elif data[:1] == b"B":
                _, secs, bps = data.split()
                t = threading.Thread(
                    target=self._blast, args=(src, float(secs), float(bps)), daemon=True
                )
                t.start()
                self.blasts.append(t)

    def _blast(self, dest, secs: float, bps: float):
        gap = (PAYLOAD + WIRE_OVERHEAD_BYTES) * 8 / bps
        body = b"D" * PAYLOAD
        t0 = time.monotonic()
        k = 0
        while self.running and time.monotonic() - t0 < secs:
            due = t0 + k * gap
            left = due - time.monotonic()
            if left > 0:
                time.sleep(left)
            try:
                self.sock.sendto(body, dest)
            except OSError:
                return
            k += 1

    def close(self):
        self.running = False
        self.thread.join(timeout=2)
        for t in self.blasts:
            t.join(timeout=2)
        self.sock.close()


def _client(
    ip: str, relay_addr, pings: int, interval: float, blast_s: float, blast_bps: float, out: dict
):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((ip, 0))
    s.settimeout(0.05)
    sent: dict[int, float] = {}
    rtts: dict[int, float] = {}
    t_next = time.monotonic()
    for k in range(pings):  # 1. delay
        t_next += interval
        sent[k] = time.monotonic()
        s.sendto(b"P%d" % k, relay_addr)
        while time.monotonic() < t_next:
            try:
                data, _ = s.recvfrom(65_535)
            except TimeoutError:
                continue
            now = time.monotonic()
            if data[:1] == b"P":
                rtts[int(data[1:])] = now - sent[int(data[1:])]
    drain_until = time.monotonic() + 1.0
    while len(rtts) < pings and time.monotonic() < drain_until:
        try:
            data, _ = s.recvfrom(65_535)
        except TimeoutError:
            continue
        if data[:1] == b"P":
            rtts[int(data[1:])] = time.monotonic() - sent[int(data[1:])]
    s.sendto(b"B %f %f" % (blast_s, blast_bps), relay_addr)  # 2. rate
    arrivals: list[tuple[float, int]] = []
    t_req = quiet_since = time.monotonic()
    deadline = t_req + blast_s + 5.0
    while time.monotonic() < deadline:
        try:
            data, _ = s.recvfrom(65_535)
        except TimeoutError:
            now = time.monotonic()
            if arrivals and now - quiet_since > 0.5 and now - t_req > blast_s + 0.5:
                break
            continue
        quiet_since = time.monotonic()
        if data[:1] == b"D":
            arrivals.append((quiet_since, len(data)))
        elif data[:1] == b"P":  # a late echo (a trace outage held it)
            rtts[int(data[1:])] = quiet_since - sent[int(data[1:])]
    s.close()
    out.update(rtts=rtts, arrivals=arrivals, stopped=time.monotonic())


def self_test(
    scenario: Mapping | None = None,
    *,
    pings: int = 40,
    ping_interval_s: float = 0.025,
    blast_s: float = 2.0,
    overload: float = 1.25,
    tolerance: float = 0.05,
    seed: int = 0,
    lead_s: float | None = None,
) -> dict:
    """Run the measurement of the module docstring; returns per path the
    configured and measured RTT and rate, their relative errors, the
    release lateness and ``passed``, plus ``passed`` for all paths."""
    server = _Server()
    server.thread.start()
    kw = {} if lead_s is None else {"lead_s": lead_s}
    relay = Relay(scenario or DEFAULT_SCENARIO, server=server.address, seed=seed, **kw).start()
    try:
        results: list[dict] = [{} for _ in relay.paths]
        threads = []
        for i, (ip, p) in enumerate(zip(relay.client_ips, relay.paths)):
            rate_bps = _mean_rate_bps(p, relay)
            t = threading.Thread(
                target=_client,
                args=(
                    ip,
                    relay.address,
                    pings,
                    ping_interval_s,
                    blast_s,
                    overload * rate_bps,
                    results[i],
                ),
                daemon=True,
            )
            t.start()
            threads.append(t)
        for t in threads:
            t.join(timeout=pings * ping_interval_s + blast_s + 15.0)
        report = []
        for i, (p, res) in enumerate(zip(relay.paths, results)):
            report.append(_judge(i, p, relay, res, tolerance, pings))
        stats = relay.stats()
    finally:
        relay.stop()
        server.close()
    for row, st in zip(report, stats):
        row.update(
            late_median_ms=st["late_median_ms"],
            late_p99_ms=st["late_p99_ms"],
            dropped=st["down_dropped"],
            lost=st["down_lost"],
        )
    return {"tolerance": tolerance, "paths": report, "passed": all(r["passed"] for r in report)}


def _mean_rate_bps(path, relay: Relay) -> float:
    """The path's mean capacity over the next 10 s [bit/s] (at least 1 Mbit/s:
    a trace in an outage still gets a blast to measure)."""
    link = path.link
    now = relay.now()
    return max(1e6, 8.0 * link.offered_bytes(now, now + 10.0) / 10.0)


def _judge(i: int, path, relay: Relay, res: dict, tolerance: float, pings: int) -> dict:
    """One path's verdict. A check the model itself leaves without data (a
    trace outage: every echo or blast datagram dropped by the path's model)
    is reported as not measured (NaN error) and does not fail the path; one
    where the model delivered and the client received nothing fails it."""
    conf = relay.scenario["paths"][i]
    rtts = res.get("rtts") or {}
    c = relay.counters[i]
    up, down = c.up_s, c.down_s
    # the k-th ping is the path's k-th client datagram, its echo the k-th server one (FIFO)
    model = {
        k: (up[k][1] - up[k][0]) + (down[k][1] - down[k][0])
        for k in range(min(pings, len(up), len(down)))
        if down[k] is not None
    }
    answered = [k for k in rtts if k in model]
    expected_rtt = statistics.fmean(model[k] for k in answered) if answered else math.nan
    measured_rtt = statistics.fmean(rtts[k] for k in answered) if answered else math.nan
    if answered:
        rtt_err = abs(measured_rtt - expected_rtt) / expected_rtt
    else:
        rtt_err = math.inf if model else math.nan
    arrivals = res.get("arrivals") or []
    # the blast as the model delivered it, up to when the client stopped listening
    stop = relay.emulated(res.get("stopped", math.inf))
    released = [d[1] for d in down[pings:] if d is not None and d[1] < stop]
    n = min(len(arrivals), len(released))
    measured_bps = expected_bps = math.nan
    if n >= 3 and arrivals[n - 1][0] > arrivals[0][0] and released[n - 1] > released[0]:
        wire = sum(size + WIRE_OVERHEAD_BYTES for _, size in arrivals[1:n])
        measured_bps = 8.0 * wire / (arrivals[n - 1][0] - arrivals[0][0])
        expected_bps = 8.0 * wire / (released[n - 1] - released[0])
        rate_err = abs(measured_bps - expected_bps) / expected_bps
    else:
        rate_err = math.inf if len(released) >= 3 else math.nan
    ok = all(math.isnan(e) or e <= tolerance for e in (rtt_err, rate_err))
    return {
        "path": i,
        "name": conf["name"],
        "client_ip": relay.client_ips[i],
        "configured_rtt_ms": 1000 * path.delay.mean_rtt,
        "rtt_ms": 1000 * expected_rtt,
        "measured_rtt_ms": 1000 * measured_rtt,
        "rtt_error": rtt_err,
        "pings": len(answered),
        "rate_mbps": expected_bps / 1e6,
        "measured_rate_mbps": measured_bps / 1e6,
        "rate_error": rate_err,
        "packets": len(arrivals),
        "passed": ok,
    }


def format_report(rep: dict) -> str:
    head = [
        "path",
        "client",
        "RTT ms (configured)",
        "model",
        "measured",
        "err %",
        "rate Mbit/s",
        "measured",
        "err %",
        "late ms (median, p99)",
        "drops",
        "ok",
    ]
    rows = [head]
    for r in rep["paths"]:
        rows.append(
            [
                r["name"],
                r["client_ip"],
                f"{r['configured_rtt_ms']:.1f}",
                f"{r['rtt_ms']:.2f}",
                f"{r['measured_rtt_ms']:.2f}",
                f"{100 * r['rtt_error']:.1f}",
                f"{r['rate_mbps']:.2f}",
                f"{r['measured_rate_mbps']:.2f}",
                f"{100 * r['rate_error']:.1f}",
                f"{r['late_median_ms']:.3f}, {r['late_p99_ms']:.3f}",
                str(r["dropped"]),
                "yes" if r["passed"] else "NO",
            ]
        )
    widths = [max(len(row[c]) for row in rows) for c in range(len(head))]
    lines = ["  ".join(x.rjust(w) for x, w in zip(row, widths)) for row in rows]
    verdict = "passed" if rep["passed"] else "FAILED"
    return (
        "\n".join(lines) + f"\nrelay self-test {verdict} (tolerance {100 * rep['tolerance']:.0f} %)"
    )


__all__ = ["self_test", "format_report", "DEFAULT_SCENARIO"]
