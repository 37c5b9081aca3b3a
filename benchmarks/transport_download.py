"""Real-transport downloads through the link relay, per scheduler.

    python -m benchmarks.transport_download [--scenario static_4g_wlan] [--set KEY=VALUE ...]
        [--size 2000000] [--repeats 3] [--model m.onnx]

Downloads ``--size`` bytes with the transport of ``transports/`` (``make
transport``) through :class:`falcon.relay.Relay` running the scenario, with
tquic's minRTT and round robin schedulers and the ONNX-model scheduler
(``--model``; default: a freshly initialised 3 x 64 network of the
completion MDP, i.e. an untrained policy), and prints per scheduler the
median download time (request to last byte) [s], the share of bytes
received on path 0, and the model's median decision cost [µs] from its
decision log. Every download's bytes are verified by the client.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

from falcon.deploy.transport import BUILD_HINT, built, download


def fresh_model(path, n_paths: int, seed: int = 0):
    """An untrained 3 x 64 Q-network of the completion MDP, exported to ONNX."""
    from baselines.dqn.export import ModelRecord, write_onnx
    from baselines.dqn.learner import BatchedDQN
    from baselines.dqn.network import QNetSpec
    from envs.mdp import COMPLETION, n_inputs

    spec = QNetSpec(n_inputs(n_paths, COMPLETION), n_paths, (64, 64, 64))
    return write_onnx(
        path, ModelRecord("fresh", spec, BatchedDQN(spec, 1, seed=seed).get_weights(0))
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.transport_download")
    ap.add_argument(
        "--scenario", default=None, help="a config of configs/scenario/ (default: the relay's pair)"
    )
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--size", type=int, default=2_000_000, help="bytes per download")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument(
        "--model", default=None, help="ONNX model (default: an untrained 3 x 64 network)"
    )
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if not built():
        print(f"error: {BUILD_HINT}", file=sys.stderr)
        return 2
    from falcon.relay.__main__ import load_scenario

    scen = load_scenario(args.scenario, args.set)
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        model = args.model or fresh_model(Path(tmp) / "fresh.onnx", len(scen["paths"]))
        for sched in ("minrtt", "roundrobin", "falcon"):
            times, shares, costs = [], [], []
            for k in range(args.repeats):
                log = Path(tmp) / f"{sched}{k}.jsonl" if sched == "falcon" else None
                rep = download(
                    scen,
                    args.size,
                    sched,
                    model=model if sched == "falcon" else None,
                    decision_log=log,
                    seed=k,
                )
                if not rep.get("verified"):
                    print(f"error: {sched} download failed: {rep.get('stderr')}", file=sys.stderr)
                    return 1
                times.append(rep["seconds"])
                by_ip = {a.split(":")[0]: b for a, b in rep["path_recv_bytes"].items()}
                shares.append(by_ip.get("127.0.0.2", 0) / max(1, sum(by_ip.values())))
                if log is not None:
                    ends = [
                        json.loads(ln)
                        for ln in log.read_text().splitlines()
                        if '"kind":"end"' in ln
                    ]
                    costs += [e["cost_us_median"] for e in ends]
            rows[sched] = {
                "download_s": statistics.median(times),
                "runs": times,
                "path0_share": statistics.median(shares),
                "decision_us": statistics.median(costs) if costs else None,
            }
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    print(f"scenario {scen.get('name')}, {args.size} bytes, {args.repeats} runs")
    for sched, r in rows.items():
        cost = f", decision {r['decision_us']:.1f} us" if r["decision_us"] is not None else ""
        print(
            f"{sched:10s} {r['download_s']:.3f} s (runs {', '.join(f'{t:.3f}' for t in r['runs'])}), "
            f"path 0 share {r['path0_share']:.2f}{cost}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
