"""A UDP link relay on loopback: a scenario's paths, emulated in real time.

A real multipath transport (a QUIC client and server on this machine) talks
through :class:`Relay` instead of through a network. The client sends every
path's packets to the relay's ``listen`` address from its own local address
(``127.0.0.2`` for path 0, ``127.0.0.3`` for path 1, ...: ``client_ips``);
the relay picks the path by that source address, forwards the packet to the
``server`` from a socket of its own per client address and port (so the
server sees one 4-tuple per path), and sends the server's answers back to
the client address they belong to.

Each path applies **the emulator's own link model** (:class:`envs.link.Path`,
built by :meth:`envs.emulation.Emulation.build_path` from the same normalised
scenario): the server-to-client direction carries the download's data, so it
goes through the drop-tail bottleneck (constant rate or capacity trace),
random loss and half of a Gamma-distributed RTT sample, exactly as a data
packet in the emulator; the client-to-server direction (ACKs, requests) gets
half of another RTT sample and the return link if the scenario has one, and
no loss, as the emulator's ACKs. Emulated time is wall-clock time
since :meth:`Relay.start` [s]. Packet sizes on the link are the UDP payload
plus :data:`WIRE_OVERHEAD_BYTES` (IPv4 + UDP headers).

Threads, not asyncio: one receiving thread per socket (blocking
``recvfrom``), and one sending thread that releases packets at their
computed times from a heap. Python is fast enough for the rates the real
transport runs at on this machine (tens of Mbit/s, a few thousand packets
per second per direction); whether it holds the configured rate and delay is
measured, not assumed: ``python -m falcon.relay --self-test``
(:mod:`falcon.relay.selftest`).
"""

from __future__ import annotations

import heapq
import itertools
import socket
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from envs.emulation import Emulation
from envs.errors import ConfigError
from envs.scenario import normalise_scenario

#: bytes a UDP datagram adds on the wire besides its payload (IPv4 20 + UDP 8)
WIRE_OVERHEAD_BYTES = 28
#: largest datagram the relay forwards [bytes]
MAX_DATAGRAM = 65_535
#: the sender thread wakes this long before a release time and sleeps the rest
#: in short steps [s]: ``time.sleep`` alone overshoots by up to ~0.1 ms here
SPIN_S = 0.0002
#: default head start of every release [s]: the kernel and the relay's threads
#: take about this long per direction to hand a datagram on (measured with
#: the self-test: +0.45 ms per round trip without it)
LEAD_S = 0.0002
#: samples kept per path and kind (lateness, computed delays)
MAX_SAMPLES = 100_000


@dataclass
class PathCounters:
    """What one path of the relay did (packets and bytes are UDP payloads)."""

    up_packets: int = 0  # client -> server, forwarded
    down_packets: int = 0  # server -> client, forwarded
    down_bytes: int = 0
    down_dropped: int = 0  # drop-tail buffer full
    down_lost: int = 0  # random loss
    late_s: list[float] = field(default_factory=list)  # release lateness samples [s]
    #: the first :data:`MAX_SAMPLES` datagrams per direction, in order: when
    #: the relay received each and when the model said it arrives, emulated
    #: seconds ``(received, release)`` (None: a server-to-client datagram
    #: dropped or lost)
    up_s: list[tuple[float, float]] = field(default_factory=list)
    down_s: list[tuple[float, float] | None] = field(default_factory=list)


class _Flow:
    """One client address and port: the path it belongs to and its socket toward the server."""

    __slots__ = ("path", "client", "upstream", "thread")

    def __init__(self, path: int, client, upstream: socket.socket):
        self.path = path
        self.client = client
        self.upstream = upstream
        self.thread: threading.Thread | None = None


class Relay:
    """The scenario's paths between a client and a server on loopback (module docstring).

    Args:
        scenario: a scenario config (normalised here); its paths are the relay's.
        listen: ``(host, port)`` the client sends to (port 0: any free port, see :attr:`address`).
        server: ``(host, port)`` of the real server.
        client_ips: the client's local address of each path, in path order
            (default ``127.0.0.2``, ``127.0.0.3``, ...).
        seed: seeds the paths' delay and loss draws (as an emulation's seed).
        lead_s: each datagram leaves this long before its computed time [s],
            the relay's own forwarding latency (:data:`LEAD_S`).
    """

    def __init__(
        self,
        scenario: Mapping,
        listen: tuple[str, int] = ("127.0.0.1", 0),
        server: tuple[str, int] = ("127.0.0.1", 4433),
        client_ips: Sequence[str] | None = None,
        seed: int = 0,
        lead_s: float = LEAD_S,
    ):
        if not 0.0 <= float(lead_s) < 0.01:
            raise ConfigError(f"relay: lead must be in [0, 10) ms, got {1000 * float(lead_s):g} ms")
        self.lead_s = float(lead_s)
        self.scenario = normalise_scenario(scenario)
        n = len(self.scenario["paths"])
        ips = (
            [f"127.0.0.{2 + i}" for i in range(n)]
            if client_ips is None
            else [str(x) for x in client_ips]
        )
        if len(ips) != n or len(set(ips)) != n:
            raise ConfigError(
                f"relay: expected {n} distinct client addresses (one per path), got {ips}"
            )
        self.client_ips = ips
        self._path_of_ip = {ip: i for i, ip in enumerate(ips)}
        emu = Emulation(seed)
        self.paths = [emu.build_path(p, self.scenario) for p in self.scenario["paths"]]
        self.counters = [PathCounters() for _ in range(n)]
        self.server = (str(server[0]), int(server[1]))
        self._listen_req = (str(listen[0]), int(listen[1]))
        self._locks = [threading.Lock() for _ in range(n)]
        self._flows: dict[tuple, _Flow] = {}
        self._heap: list = []
        self._seq = itertools.count()
        self._cv = threading.Condition()
        self._running = False
        self._threads: list[threading.Thread] = []
        self._t0 = 0.0
        self.listen_sock: socket.socket | None = None
        self.unknown_sources = 0

    # ---------------------------------------------------------------- control
    @property
    def address(self) -> tuple[str, int]:
        """The ``(host, port)`` the relay listens on (after :meth:`start`)."""
        if self.listen_sock is None:
            raise RuntimeError("relay: not started")
        return self.listen_sock.getsockname()[:2]

    def start(self) -> Relay:
        """Bind the listening socket and start the threads; emulated time 0 is now."""
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            s.bind(self._listen_req)
        except OSError as e:
            s.close()
            raise ConfigError(
                f"relay: cannot bind {self._listen_req[0]}:{self._listen_req[1]} ({e.strerror})"
            ) from None
        s.settimeout(0.2)
        self.listen_sock = s
        self._running = True
        self._t0 = time.monotonic()
        for target in (self._client_loop, self._send_loop):
            t = threading.Thread(target=target, name=f"relay-{target.__name__}", daemon=True)
            t.start()
            self._threads.append(t)
        return self

    def stop(self) -> None:
        """Stop the threads and close every socket (queued packets are dropped)."""
        self._running = False
        with self._cv:
            self._cv.notify_all()
        for t in self._threads + [
            f.thread for f in list(self._flows.values()) if f.thread is not None
        ]:
            t.join(timeout=2.0)
        for f in list(self._flows.values()):
            f.upstream.close()
        if self.listen_sock is not None:
            self.listen_sock.close()

    def __enter__(self) -> Relay:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def now(self) -> float:
        """Emulated time [s]: wall-clock time since :meth:`start`."""
        return time.monotonic() - self._t0

    def emulated(self, monotonic_s: float) -> float:
        """The emulated time [s] of a ``time.monotonic()`` reading."""
        return monotonic_s - self._t0

    # ---------------------------------------------------------------- threads
    def _client_loop(self) -> None:
        """Client -> server: the return direction of the packet's path."""
        s = self.listen_sock
        while self._running:
            try:
                data, src = s.recvfrom(MAX_DATAGRAM)
            except TimeoutError:
                continue
            except OSError:
                return
            path = self._path_of_ip.get(src[0])
            if path is None:
                self.unknown_sources += 1
                continue
            flow = self._flows.get(src)
            if flow is None:
                flow = self._open_flow(path, src)
            now = self.now()
            p = self.paths[path]
            with self._locks[path]:
                half = 0.5 * p.delay.sample_rtt(now)
                at = p.ack_arrival(now, half, len(data) + WIRE_OVERHEAD_BYTES)
                c = self.counters[path]
                c.up_packets += 1
                if len(c.up_s) < MAX_SAMPLES:
                    c.up_s.append((now, at))
            self._release(at, flow.upstream, data, self.server, path)

    def _open_flow(self, path: int, client) -> _Flow:
        up = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        up.bind(("127.0.0.1", 0))
        up.settimeout(0.2)
        flow = _Flow(path, client, up)
        flow.thread = threading.Thread(
            target=self._server_loop,
            args=(flow,),
            daemon=True,
            name=f"relay-path{path}-{client[1]}",
        )
        self._flows[client] = flow
        flow.thread.start()
        return flow

    def _server_loop(self, flow: _Flow) -> None:
        """Server -> client: the data direction of the flow's path."""
        up, path = flow.upstream, flow.path
        p, c = self.paths[path], self.counters[path]
        while self._running:
            try:
                data, _src = up.recvfrom(MAX_DATAGRAM)
            except TimeoutError:
                continue
            except OSError:
                return
            now = self.now()
            with self._locks[path]:
                drops = p.link.drops
                out = p.transmit(now, len(data) + WIRE_OVERHEAD_BYTES)
                if len(c.down_s) < MAX_SAMPLES:
                    c.down_s.append(None if out is None else (now, out[0]))
                if out is None:
                    if p.link.drops > drops:
                        c.down_dropped += 1
                    else:
                        c.down_lost += 1
                    continue
                c.down_packets += 1
                c.down_bytes += len(data)
            self._release(out[0], self.listen_sock, data, flow.client, path)

    def _release(self, at: float, sock: socket.socket, data: bytes, dest, path: int) -> None:
        at -= self.lead_s
        with self._cv:
            heapq.heappush(self._heap, (at, next(self._seq), sock, data, dest, path))
            if self._heap[0][0] == at:
                self._cv.notify()

    def _send_loop(self) -> None:
        heap, cv = self._heap, self._cv
        while True:
            with cv:
                while self._running and (not heap or heap[0][0] - self.now() > SPIN_S):
                    cv.wait(None if not heap else heap[0][0] - self.now() - SPIN_S)
                if not self._running:
                    return
                at, _, sock, data, dest, path = heapq.heappop(heap)
            while True:  # the last fraction of a millisecond in short sleeps
                left = at - self.now()
                if left <= 0.0:
                    break
                time.sleep(left / 2 if left > 5e-5 else 0)
            late = self.now() - at
            samples = self.counters[path].late_s
            if len(samples) < MAX_SAMPLES:
                samples.append(late)
            try:
                sock.sendto(data, dest)
            except OSError:
                if not self._running:
                    return

    # ---------------------------------------------------------------- report
    def stats(self) -> list[dict]:
        """Per path: packets and bytes forwarded, drops, random losses, and
        the sender's release lateness (median and 99th percentile) [ms]."""
        out = []
        for i, c in enumerate(self.counters):
            late = sorted(c.late_s)
            out.append(
                {
                    "path": i,
                    "client_ip": self.client_ips[i],
                    "up_packets": c.up_packets,
                    "down_packets": c.down_packets,
                    "down_bytes": c.down_bytes,
                    "down_dropped": c.down_dropped,
                    "down_lost": c.down_lost,
                    "late_median_ms": _quantile_ms(late, 0.5),
                    "late_p99_ms": _quantile_ms(late, 0.99),
                }
            )
        return out


def _quantile_ms(ordered: list[float], q: float) -> float:
    """The ``q`` quantile of sorted seconds, in ms (0 for no samples)."""
    if not ordered:
        return 0.0
    return 1000.0 * ordered[min(len(ordered) - 1, int(q * len(ordered)))]


__all__ = ["Relay", "PathCounters", "WIRE_OVERHEAD_BYTES"]
