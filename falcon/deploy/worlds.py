"""The deploy job's two worlds: real downloads through the relay
(:func:`run_real`) and the same scenario, app and seeds in the emulator
(:func:`run_emulated`, :func:`emulated_episode`: the download time from the
request, as the real client measures it). One record per download:
``{"agent", "seed", "metrics"}``."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from envs.errors import ConfigError
from falcon.deploy.inputs import EMULATOR_AGENTS, TRANSPORT_SCHEDULERS, ModelSource
from falcon.experiment import info


def _values(records, agent, metric="download_time_s") -> list[float]:
    """``metric`` of ``agent``'s records in seed order."""
    return [
        r["metrics"].get(metric, math.nan)
        for r in sorted(records, key=lambda r: r["seed"])
        if r["agent"] == agent
    ]


def _median(vals) -> float:
    v = [x for x in vals if x is not None and math.isfinite(x)]
    return float(np.median(v)) if v else math.nan


def _decision_cost(log: Path) -> float:
    """The median decision cost [us] of a decision log's connection (its end record)."""
    costs = []
    if log.is_file():
        with log.open() as f:
            for line in f:
                if '"kind":"end"' in line:
                    costs.append(float(json.loads(line)["cost_us_median"]))
    return float(np.median(costs)) if costs else math.nan


def real_metrics(
    rep: Mapping, size: int, client_ips: Sequence[str], log: Path | None
) -> dict[str, float]:
    """One real download's metrics (NaN times for a failed or unverified one)."""
    ok = (
        bool(rep.get("verified"))
        and int(rep.get("bytes", -1)) == size
        and rep.get("client_rc") == 0
    )
    secs = float(rep["seconds"]) if ok and rep.get("seconds") else math.nan
    by_ip = {a.rpartition(":")[0]: float(b) for a, b in (rep.get("path_recv_bytes") or {}).items()}
    total = sum(by_ip.values()) or math.nan
    m = {
        "download_time_s": secs,
        "goodput_mbps": size * 8 / secs / 1e6 if secs > 0 else math.nan,
        "bytes_verified": 1.0 if ok else 0.0,
        "bytes_received": float(rep.get("bytes", 0) or 0),
    }
    for i, ip in enumerate(client_ips):
        m[f"path{i}_share"] = by_ip.get(ip, 0.0) / total
    relay = rep.get("relay") or []
    if relay:
        m["relay_dropped"] = float(sum(r["down_dropped"] for r in relay))
        m["relay_lost"] = float(sum(r["down_lost"] for r in relay))
        m["relay_late_p99_ms"] = float(max(r["late_p99_ms"] for r in relay))
    if log is not None:
        m["decision_cost_us"] = _decision_cost(log)
    return m


def run_real(
    scenario: Mapping,
    size: int,
    agents: Sequence[str],
    seeds: Sequence[int],
    *,
    onnx: Path | None,
    cc: str | None,
    listen: tuple[str, int],
    lead_s: float | None,
    timeout_s: float,
    warmup: int,
    log_dir: Path,
    progress: bool,
    decision_log: str = "extra",
) -> tuple[list[dict], float]:
    """Every real download, seeds outermost (the schedulers take turns, so a
    drift of the machine's load spreads over all of them); one record each,
    and the model's median decision cost [us] from its decision log(s)
    (``decision_log``: ``extra``, one more logged model download after the
    timed ones, which run without the log; ``all``, every model download
    logged; ``none``: NaN)."""
    from falcon.deploy.transport import download

    n = len(scenario["paths"])
    ips = [f"127.0.0.{2 + i}" for i in range(n)]
    kw = dict(cc=cc, listen=listen, lead_s=lead_s, timeout_s=timeout_s)
    for k in range(warmup):
        rep = download(scenario, size, "minrtt", seed=seeds[0] + 10_000 + k, **kw)
        if progress:
            info(
                f"deploy: warm-up download {k + 1}/{warmup}: "
                + (f"{rep['seconds']:.3f} s" if rep.get("verified") else f"failed ({_why(rep)})")
            )
    if decision_log not in ("extra", "all", "none"):
        raise ConfigError(f"transport.decision_log: {decision_log!r}: choose extra, all or none")
    records = []
    for j, seed in enumerate(seeds):
        for agent in agents:
            log = (
                log_dir / f"{agent}_{seed}.jsonl"
                if agent == "model" and decision_log == "all"
                else None
            )
            rep = download(
                scenario,
                size,
                TRANSPORT_SCHEDULERS[agent],
                model=onnx if agent == "model" else None,
                decision_log=log,
                seed=seed,
                **kw,
            )
            m = real_metrics(rep, size, ips, log)
            if progress or not m["bytes_verified"]:
                state = (
                    f"{m['download_time_s']:.3f} s, bytes verified"
                    if m["bytes_verified"]
                    else f"FAILED ({_why(rep)})"
                )
                info(f"deploy: {agent} run {j + 1}/{len(seeds)} (seed {seed}): {state}")
            records.append({"agent": agent, "seed": seed, "metrics": m})
    cost = math.nan
    if "model" in agents and decision_log == "all":
        cost = _median(
            [
                r["metrics"].get("decision_cost_us", math.nan)
                for r in records
                if r["agent"] == "model"
            ]
        )
    elif "model" in agents and decision_log == "extra":
        log = log_dir / "model_logged.jsonl"
        rep = download(scenario, size, "falcon", model=onnx, decision_log=log, seed=seeds[0], **kw)
        cost = _decision_cost(log)
        if progress:
            info(
                f"deploy: logged model download (decision cost, untimed): {cost:.1f} us per decision"
                + ("" if rep.get("verified") else f"; failed ({_why(rep)})")
            )
    return records, cost


def _why(rep: Mapping) -> str:
    err = (rep.get("stderr") or "").strip().splitlines()
    return (
        err[-1]
        if err
        else f"server exit {rep.get('server_rc')}, client exit {rep.get('client_rc')}"
    )


def emulator_agent(agent: str, src: ModelSource | None):
    """The emulator's scheduler for a deploy scheduler (None: unavailable)."""
    from falcon.experiments.common import agent_config, build_agent

    if agent != "model":
        return build_agent(agent, agent_config(EMULATOR_AGENTS[agent]), 0)
    if src is None or src.h5 is None:
        return None
    cfg = agent_config(
        "dqn_off", {"model": str(src.h5), "reward": src.reward, "hidden": list(src.hidden)}
    )
    return build_agent("dqn_off", cfg, 0)


def emulated_episode(scenario: Mapping, app: Mapping, scheduler, seed: int) -> dict[str, float]:
    """One emulated episode; ``download_time_s`` from the request (the
    handshake taken off, module docstring), ``connection_time_s`` the emulator's own."""
    from envs.metrics import episode_metrics
    from envs.runner import setup_episode
    from envs.setup import HANDSHAKE_RTTS, normalise_setup
    from envs.sim import collector_paused
    from falcon.jobs import seed_globals

    seed_globals(seed)
    with collector_paused():
        emu, conn, application, s = setup_episode(scenario, app, scheduler, seed)
        setup = normalise_setup(s.get("setup"))
        k = HANDSHAKE_RTTS[setup["handshake"]]
        # path 0's first RTT sample is the handshake's (last) round trip; without samples its mean
        rtt0 = conn.paths[0].srtt if setup["rtt_samples"] else float(s["paths"][0]["rtt_ms"]) / 1000
        handshake = k * rtt0 if k else 0.0
        end = emu.sim.run(until=s["max_duration_s"])
        m = episode_metrics(conn, application, end)
    t = m["download_time_s"] - handshake
    size = float(m["app_bytes"])
    out = {
        "download_time_s": t,
        "goodput_mbps": size * 8 / t / 1e6 if t > 0 else math.nan,
        "connection_time_s": m["download_time_s"],
        "handshake_s": handshake,
        "retransmissions": m["retransmissions"],
    }
    for i in range(len(s["paths"])):
        out[f"path{i}_share"] = m.get(f"path{i}_share", math.nan)
    return out


def run_emulated(
    scenario: Mapping,
    app: Mapping,
    agents: Sequence[str],
    seeds: Sequence[int],
    src: ModelSource | None,
) -> tuple[list[dict], dict[str, str]]:
    """The emulated episodes (records) and, per scheduler without an
    emulated counterpart, why."""
    records, unavailable = [], {}
    for agent in agents:
        if emulator_agent(agent, src) is None:
            unavailable[agent] = (
                "only an ONNX file was given: the emulator needs the model's HDF5 "
                "(model= a falcon.train or falcon.export output)"
            )
            continue
        for seed in seeds:
            sched = emulator_agent(agent, src)
            records.append(
                {
                    "agent": agent,
                    "seed": seed,
                    "metrics": emulated_episode(scenario, app, sched, seed),
                }
            )
    return records, unavailable


__all__ = ["run_real", "run_emulated", "emulated_episode", "emulator_agent", "real_metrics"]
