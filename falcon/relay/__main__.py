"""``python -m falcon.relay``: run the link relay, or measure it.

    python -m falcon.relay --self-test                        # the default heterogeneous pair
    python -m falcon.relay --self-test --scenario static_4g_wlan --set paths.0.bandwidth_mbps=20
    python -m falcon.relay --scenario static_4g_wlan --listen 127.0.0.1:4433 --server 127.0.0.1:4434

``--scenario`` names a config of ``configs/scenario/`` (the emulator's), and
``--set key=value`` changes one of its keys (dotted, list indices as
numbers, values as YAML). Without ``--self-test`` the relay runs until
Ctrl-C (or SIGTERM) and prints its per-path counters. Exit status: 0, 1 if the self-test
failed, 2 on bad input (one line).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time

from envs.errors import ConfigError, FalconInputError
from falcon.cli import EXIT_BAD_INPUT


def _stop(signum, frame):
    raise SystemExit(0)


def _hostport(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) < 65536:
        raise ConfigError(f"relay: expected host:port, got {text!r}")
    return host, int(port)


def load_scenario(name: str | None, sets: list[str]) -> dict:
    """The scenario config ``name`` (None: the self-test pair) with the ``--set`` changes."""
    import yaml

    from falcon.config import load_group, to_plain
    from falcon.relay.selftest import DEFAULT_SCENARIO

    scen = (
        to_plain(load_group("scenario", name)) if name else json.loads(json.dumps(DEFAULT_SCENARIO))
    )
    for item in sets:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"relay: --set expects key=value, got {item!r}")
        node, parts = scen, key.split(".")
        try:
            for part in parts[:-1]:
                node = node[int(part)] if isinstance(node, list) else node[part]
            last = parts[-1]
            node[int(last) if isinstance(node, list) else last] = yaml.safe_load(raw)
        except (KeyError, IndexError, ValueError, TypeError):
            raise ConfigError(f"relay: --set {key}: no such key in the scenario") from None
    return scen


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m falcon.relay",
        description="Run the link relay between a real client and server, or "
        "measure it (--self-test).",
    )
    ap.add_argument(
        "--scenario", help="a config of configs/scenario/ (default: the self-test pair)"
    )
    ap.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="change a scenario key"
    )
    ap.add_argument(
        "--listen", default="127.0.0.1:4433", help="address the client sends to (host:port)"
    )
    ap.add_argument(
        "--server", default="127.0.0.1:4434", help="address of the real server (host:port)"
    )
    ap.add_argument(
        "--clients", help="the client's address per path, comma-separated (default 127.0.0.2, ...)"
    )
    ap.add_argument("--seed", type=int, default=0, help="seeds the delay and loss draws")
    ap.add_argument(
        "--lead-ms",
        type=float,
        default=None,
        help="release datagrams this much before their computed time (default 0.2: the relay's own "
        "forwarding latency)",
    )
    ap.add_argument("--self-test", action="store_true", help="measure delay and rate, then exit")
    ap.add_argument("--json", action="store_true", help="print the self-test report as JSON")
    args = ap.parse_args(argv)
    from falcon.relay.relay import LEAD_S, Relay
    from falcon.relay.selftest import format_report, self_test

    lead = LEAD_S if args.lead_ms is None else args.lead_ms / 1000.0
    try:
        scen = load_scenario(args.scenario, args.set)
        if args.self_test:
            rep = self_test(scen, seed=args.seed, lead_s=lead)
            print(json.dumps(rep, indent=2) if args.json else format_report(rep))
            return 0 if rep["passed"] else 1
        clients = args.clients.split(",") if args.clients else None
        relay = Relay(
            scen,
            listen=_hostport(args.listen),
            server=_hostport(args.server),
            client_ips=clients,
            seed=args.seed,
            lead_s=lead,
        ).start()
    except (ConfigError, FalconInputError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    host, port = relay.address
    print(
        f"relay: {host}:{port} -> {relay.server[0]}:{relay.server[1]}, paths "
        + ", ".join(
            f"{ip} ({p['name']})" for ip, p in zip(relay.client_ips, relay.scenario["paths"])
        ),
        flush=True,
    )
    signal.signal(signal.SIGTERM, _stop)
    try:
        while True:
            time.sleep(1.0)
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        relay.stop()
        for row in relay.stats():
            print(json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
