"""The transport's binaries: where ``make transport`` puts them, and a
download through the link relay.

    from falcon.deploy.transport import download
    report = download(scenario, size=2_000_000, scheduler="falcon", model="m.onnx",
                      decision_log="decisions.jsonl")
    report["verified"], report["seconds"]

The server (``falcon-quic-server``) listens on 127.0.0.1; the client
(``falcon-quic-client``) connects to the relay from 127.0.0.2 (path 0) and
127.0.0.3 (path 1, ...), as :class:`falcon.relay.Relay` expects, and checks
every byte it receives against the transfer's pattern.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path

import numpy as np

#: binaries of the transport workspace (``transports/falcon-quic/src/bin``)
BINARIES = ("falcon-quic-server", "falcon-quic-client", "falcon-sched-tool")
#: what to run when the binaries are missing
BUILD_HINT = "the transport binaries are not built: `make transport` builds them"


def cache_dir() -> Path:
    """``FALCON_TRANSPORT_CACHE`` or ``${XDG_CACHE_HOME:-~/.cache}/falcon-transport``
    (the patched tquic source and the cargo target dir; transports/build.sh)."""
    env = os.environ.get("FALCON_TRANSPORT_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "falcon-transport"


def binary(name: str) -> Path:
    """Path of a release binary (it may not exist)."""
    return cache_dir() / "target" / "release" / name


def built() -> bool:
    """Whether every binary of :data:`BINARIES` exists."""
    return all(binary(b).is_file() for b in BINARIES)


def free_udp_port(host: str = "127.0.0.1") -> int:
    """A UDP port that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def pattern(size: int, start: int = 0) -> np.ndarray:
    """The transfer's bytes ``[start, start + size)`` (``falcon_quic::pattern_byte``)."""
    i = np.arange(start, start + size, dtype=np.uint64)
    return ((i + i // 251 + i // 65521) % 256).astype(np.uint8)


def server_command(
    scheduler: str,
    port: int,
    model=None,
    decision_log=None,
    n_paths: int = 2,
    extra: tuple[str, ...] = (),
) -> list[str]:
    """The server's command line (one connection, then it exits)."""
    cmd = [
        str(binary("falcon-quic-server")),
        "--listen",
        f"127.0.0.1:{port}",
        "--scheduler",
        scheduler,
        "--paths",
        str(n_paths),
        "--once",
    ]
    if model is not None:
        cmd += ["--model", str(model)]
    if decision_log is not None:
        cmd += ["--decision-log", str(decision_log)]
    return cmd + list(extra)


def download(
    scenario: Mapping,
    size: int = 2_000_000,
    scheduler: str = "minrtt",
    model=None,
    decision_log=None,
    output=None,
    seed: int = 0,
    timeout_s: float = 60.0,
    cc: str | None = None,
    listen: tuple[str, int] = ("127.0.0.1", 0),
    lead_s: float | None = None,
) -> dict:
    """Download ``size`` bytes from a fresh server through a relay that runs
    ``scenario``'s paths; returns the client's report (``bytes``, ``verified``,
    ``seconds`` from request to last byte, ``path_recv_bytes`` per local
    address) plus ``server_rc``, ``client_rc``, ``stderr`` of both and the
    relay's per-path counters (``relay``: :meth:`falcon.relay.Relay.stats`).

    ``cc``: tquic's congestion control on both ends (``--cc``; None: tquic's
    default, BBR); ``listen``: the relay's address (port 0: any free one; a
    port that cannot be bound raises :class:`envs.errors.ConfigError` and
    stops the server); ``lead_s``: the relay's release lead (None: its default)."""
    from falcon.relay import Relay
    from falcon.relay.relay import LEAD_S

    n_paths = len(scenario["paths"])
    port = free_udp_port()
    cc_args = ("--cc", str(cc)) if cc else ()
    server = subprocess.Popen(
        server_command(scheduler, port, model, decision_log, n_paths, cc_args),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    relay_stats: list = []
    try:
        time.sleep(0.2)  # let it bind
        if server.poll() is not None:
            out, err = server.communicate()
            return {
                "verified": False,
                "server_rc": server.returncode,
                "client_rc": None,
                "stderr": err.strip(),
            }
        with Relay(
            scenario,
            listen=listen,
            server=("127.0.0.1", port),
            seed=seed,
            lead_s=LEAD_S if lead_s is None else lead_s,
        ) as relay:
            host, rport = relay.address
            cmd = [
                str(binary("falcon-quic-client")),
                "--connect",
                f"{host}:{rport}",
                "--local",
                ",".join(relay.client_ips),
                "--size",
                str(size),
                "--timeout-s",
                str(timeout_s),
                *cc_args,
            ]
            if output is not None:
                cmd += ["--output", str(output)]
            client = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s + 10)
        relay_stats = relay.stats()
        try:
            _, server_err = server.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            _, server_err = server.communicate()
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    lines = [ln for ln in client.stdout.splitlines() if ln.startswith("{")]
    report = json.loads(lines[-1]) if lines else {"verified": False}
    report.update(
        server_rc=server.returncode,
        client_rc=client.returncode,
        stderr=(client.stderr + server_err).strip(),
        relay=relay_stats,
    )
    return report
