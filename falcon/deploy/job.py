"""The deploy job: real downloads through the relay beside the emulator.

``python -m falcon.deploy`` (:mod:`falcon.deploy.__main__`, ``configs/deploy.yaml``; inputs checked by
:mod:`falcon.deploy.inputs`, the downloads and episodes in :mod:`falcon.deploy.worlds`)
runs :func:`run_deploy_job`: for every scheduler of ``agent_list`` (the
transport's ``minrtt``, ``rr`` and ``model``) ``runs`` downloads of
``app.size_bytes`` with the multipath QUIC transport of ``transports/``
through :class:`falcon.relay.Relay` running the scenario's paths, every byte
checked by the client; and the same scenario, app and seeds in the emulator
with the comparable scheduler (:data:`EMULATOR_AGENTS`).

**Times.** The real client measures from its request (sent when the
handshake completes) to the last byte; the emulator's ``download_time_s``
starts at the connection start, before the handshake (``envs.setup``). So the
emulated column's ``download_time_s`` is the emulator's time less its
handshake (one round trip of path 0 for IETF QUIC, the very draw the
emulator took: path 0's first RTT sample), and ``connection_time_s`` is the
emulator's own figure. Run ``k`` uses seed ``seed + k`` in both worlds: the
relay's paths are built by ``Emulation(seed).build_path`` like the emulated
episode's, so a trace's random start is the same; the delay and loss draws
follow the real packets, not the emulated ones.

**Outputs** (``output=``, staged: they appear only when complete):
``summary.json`` (``results``: the real downloads in ``falcon.report``'s
layout; ``emulator``: the emulated ones; ``real_vs_emulated``: per
scheduler the median ratio real / emulated and each one's median relative
to minRTT in both worlds, with bootstrap intervals, :mod:`falcon.compare`),
``table.txt``, ``download_time_s__<scenario>__<app>.png`` (real and
emulated per scheduler), ``config.yaml``, the model's ONNX file when it was
written here (``models/``), and an MLflow run.

Errors of the input (a missing or malformed model, a model for another
number of paths, a relay port that cannot be bound, no cargo to build a
missing transport) raise :class:`envs.errors.ConfigError` /
:class:`~envs.errors.FalconInputError` before or while nothing is left
running: the entry point prints one line and exits 2.
"""

from __future__ import annotations

import math
import shlex
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import SimpleNamespace

from envs.errors import ConfigError
from falcon.deploy.inputs import (
    EMULATOR_AGENTS,
    RELAY_RATE_MBPS,
    TRANSPORT_SCHEDULERS,
    agent_names,
    check_listen,
    ensure_transport,
    hostport,
    resolve_model,
    scenario_differences,
    transport_cc,
    write_model_onnx,
)
from falcon.deploy.worlds import _median, _values, run_emulated, run_real
from falcon.experiment import info

#: the job's name (results/deploy/, MLflow tag)
JOB = "deploy"


# ---------------------------------------------------------------- report
def real_vs_emulated(real: list[dict], emu: list[dict], agents: Sequence[str]) -> dict:
    """Per scheduler: medians in both worlds, real / emulated, and the
    median relative to minRTT in each world (with 95 % bootstrap intervals
    over the paired seeds, :func:`falcon.compare.compare_to_references`)."""
    from falcon.compare import compare_to_references

    out = {}
    for ag in agents:
        rv, ev = _values(real, ag), _values(emu, ag)
        row = {"real_median_s": _median(rv), "emulated_median_s": _median(ev) if ev else None}
        if ev:
            c = compare_to_references(rv, {"emulated": ev})
            row["real_over_emulated"] = row["real_median_s"] / row["emulated_median_s"]
            row["real_over_emulated_ci"] = c.get("ratio_ci")
        if "minrtt" in agents:
            for recs, key in ((real, "real_vs_minrtt"), (emu, "emulated_vs_minrtt")):
                mine, ref = _values(recs, ag), _values(recs, "minrtt")
                if mine and ref:
                    c = compare_to_references(mine, {"minrtt": ref}) if ag != "minrtt" else {}
                    row[key] = _median(mine) / _median(ref)
                    row[f"{key}_ci"] = c.get("ratio_ci") if ag != "minrtt" else [1.0, 1.0]
            if row.get("real_vs_minrtt") is not None and row.get("emulated_vs_minrtt") is not None:
                row["relative_agreement"] = row["real_vs_minrtt"] / row["emulated_vs_minrtt"]
        out[ag] = row
    return out


def _f(x, fmt="{:.3f}") -> str:
    return "-" if x is None or (isinstance(x, float) and not math.isfinite(x)) else fmt.format(x)


def comparison_table(
    cmp: Mapping,
    real_sum: Mapping,
    emu_sum: Mapping | None,
    scenario: str,
    app: str,
    unavailable: Mapping,
) -> str:
    """Real against emulated, one row per scheduler."""
    from falcon.experiments.common import format_table

    def stats(summary, ag):
        st = (
            (summary or {})
            .get("results", {})
            .get(scenario, {})
            .get(app, {})
            .get(ag, {})
            .get("download_time_s")
        )
        if not st or st["median"] is None:
            return "-"
        return f"{st['median']:.3f} [{st['p25']:.3f}, {st['p75']:.3f}]"

    rows = []
    for ag, r in cmp.items():
        ci = r.get("real_over_emulated_ci")
        rows.append(
            [
                ag,
                stats(real_sum, ag),
                stats(emu_sum, ag) if ag not in unavailable else "unavailable",
                _f(r.get("real_over_emulated")) + (f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else ""),
                _f(r.get("real_vs_minrtt")),
                _f(r.get("emulated_vs_minrtt")),
            ]
        )
    head = [
        "scheduler",
        "real s median [p25, p75]",
        "emulated s median [p25, p75]",
        "real/emulated [95 % CI]",
        "real vs minRTT",
        "emulated vs minRTT",
    ]
    return format_table(head, rows)


def plot_worlds(
    real_sum: Mapping, emu_sum: Mapping | None, scenario: str, app: str, folder: Path
) -> list[Path]:
    """``download_time_s__<scenario>__<app>.png``: CDF and box per scheduler, real and emulated."""
    from falcon import report

    merged = {}
    worlds = [
        (label, (summary or {}).get("results", {}).get(scenario, {}).get(app, {}))
        for label, summary in (("real", real_sum), ("emulated", emu_sum))
    ]
    for ag in worlds[0][1]:  # each scheduler's real and emulated side by side
        for label, by_agent in worlds:
            if "download_time_s" in by_agent.get(ag, {}):
                merged[f"{ag}\n{label}"] = {"download_time_s": by_agent[ag]["download_time_s"]}
    return report.plot_metric({"results": {scenario: {app: merged}}}, "download_time_s", folder)


# ---------------------------------------------------------------- the job
def settings(cfg) -> SimpleNamespace:
    """Everything the job needs from the composed config, checked before
    anything starts (the model, the relay's port, the transport's binaries:
    built here when missing)."""
    from envs.apps import normalise_app
    from envs.scenario import normalise_scenario
    from falcon.config import check_int, to_plain
    from falcon.relay import Relay

    c = to_plain(cfg)
    runs, seed0 = check_int(cfg, "runs", 1), check_int(cfg, "seed", 0)
    scenario = normalise_scenario(c["scenario"])
    app = normalise_app(c["app"])
    if app.get("kind") != "bulk":
        raise ConfigError(
            f"app: the transport downloads one file (app=bulk), got kind {app.get('kind')!r}"
        )
    agents = agent_names(c.get("agent_list"), c.get("model"))
    src = resolve_model(c["model"], len(scenario["paths"])) if c.get("model") else None
    t, r = dict(c.get("transport") or {}), dict(c.get("relay") or {})
    cc, cc_note = transport_cc(t.get("cc", "scenario"), c["scenario"])
    listen = hostport(r.get("listen", "127.0.0.1:0"))
    lead_s = None if r.get("lead_ms") is None else float(r["lead_ms"]) / 1000
    Relay(
        scenario, listen=listen, lead_s=0.0 if lead_s is None else lead_s
    )  # the relay takes the scenario
    check_listen(listen)
    build_note = ensure_transport(bool(t.get("build", True)))
    rate = sum(float(p.get("bandwidth_mbps") or 0) for p in scenario["paths"])
    if rate > RELAY_RATE_MBPS:
        info(
            f"deploy: the paths add up to {rate:g} Mbit/s; the relay holds rate and delay up to about "
            f"{RELAY_RATE_MBPS:g} Mbit/s on this machine (python -m falcon.relay --self-test)"
        )
    return SimpleNamespace(
        plain={k: v for k, v in c.items() if k != "hydra"},
        seeds=list(range(seed0, seed0 + runs)),
        scenario_cfg=c["scenario"],
        scenario=scenario,
        app=app,
        size=int(app["size_bytes"]),
        sname=str(c["scenario"].get("name") or "scenario"),
        aname="bulk",
        agents=agents,
        src=src,
        cc=cc,
        cc_note=cc_note,
        diffs=scenario_differences(scenario, cc),
        listen=listen,
        lead_s=lead_s,
        timeout_s=float(t.get("timeout_s", 60)),
        warmup=int(t.get("warmup", 1)),
        decision_log=str(t.get("decision_log", "extra")),
        keep_logs=bool(t.get("keep_decision_logs", False)),
        emulate=bool((c.get("emulator") or {}).get("enabled", True)),
        progress=bool(c.get("progress", True)),
        build_note=build_note,
        metrics=list((c.get("report") or {}).get("table_metrics") or ["download_time_s"]),
    )


def run_worlds(st: SimpleNamespace, folder: Path) -> dict:
    """The emulated episodes, then the real downloads (the model's ONNX file
    written into ``folder`` when it came as HDF5); records and wall times."""
    onnx = (
        write_model_onnx(st.src, folder / "models")
        if st.src is not None and "model" in st.agents
        else None
    )
    out = {"onnx": onnx, "emu": [], "unavailable": {}, "emu_wall_s": 0.0}
    if st.emulate:
        info(f"deploy: emulating {', '.join(st.agents)} on {st.sname}, {len(st.seeds)} seeds")
        t0 = time.perf_counter()
        out["emu"], out["unavailable"] = run_emulated(
            st.scenario_cfg, st.app, st.agents, st.seeds, st.src
        )
        for ag, why in out["unavailable"].items():
            info(f"deploy: {ag}: emulator column unavailable: {why}")
        out["emu_wall_s"] = time.perf_counter() - t0
    info(
        f"deploy: {len(st.agents)} schedulers x {len(st.seeds)} real downloads of {st.size} bytes on {st.sname} "
        f"through the relay (tquic cc: {st.cc or 'default'})"
    )
    with tempfile.TemporaryDirectory(prefix="falcon-deploy-") as logs_tmp:
        log_dir = folder / "logs" if st.keep_logs else Path(logs_tmp)
        log_dir.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        out["real"], out["cost"] = run_real(
            st.scenario,
            st.size,
            st.agents,
            st.seeds,
            onnx=onnx,
            cc=st.cc,
            listen=st.listen,
            lead_s=st.lead_s,
            timeout_s=st.timeout_s,
            warmup=st.warmup,
            log_dir=log_dir,
            progress=st.progress,
            decision_log=st.decision_log,
        )
        out["real_wall_s"] = time.perf_counter() - t0
    return out


def build_summary(
    st: SimpleNamespace, w: dict, run_id: str | None, t_job: float
) -> tuple[dict, dict | None]:
    """The summary (module docstring) and the emulated runs' own summary."""
    from falcon import report

    tag = {"scenario": st.sname, "app": st.aname}
    real_sum = report.summarize([{**tag, **r} for r in w["real"]], seeds=st.seeds, job=JOB)
    emu_sum = (
        report.summarize([{**tag, **r} for r in w["emu"]], seeds=st.seeds, job=JOB)
        if w["emu"]
        else None
    )
    runs = len(st.seeds)
    verified = {
        ag: int(sum(r["metrics"]["bytes_verified"] for r in w["real"] if r["agent"] == ag))
        for ag in st.agents
    }
    src, onnx = st.src, w["onnx"]
    summary = {
        **real_sum,
        "world": "real: multipath QUIC (tquic 1.6.0) through the link relay; download_time_s from the request "
        "to the last byte",
        "size_bytes": st.size,
        "bytes_verified": verified,
        "all_bytes_verified": all(v == runs for v in verified.values()),
        "decision_cost_us_median": {"model": w["cost"]} if "model" in st.agents else {},
        "transport": {
            "cc": st.cc or "default (bbr)",
            "cc_note": st.cc_note,
            "build": st.build_note,
            "scenario_differences": st.diffs,
            "decision_log": st.decision_log,
            "schedulers": {ag: TRANSPORT_SCHEDULERS[ag] for ag in st.agents},
            "relay_listen": f"{st.listen[0]}:{st.listen[1]}",
            "warmup_downloads": st.warmup,
            "wall_s": w["real_wall_s"],
        },
        "model": None
        if src is None
        else {
            "given": str(src.given),
            "onnx": str(onnx) if onnx else None,
            "onnx_written_here": src.onnx is None and onnx is not None,
            "h5": str(src.h5) if src.h5 else None,
            "mdp": src.reward,
            "inputs": src.n_inputs,
            "paths": src.n_actions,
        },
        "emulator": None
        if not st.emulate
        else {
            "schedulers": {
                ag: EMULATOR_AGENTS[ag] for ag in st.agents if ag not in w["unavailable"]
            },
            "unavailable": w["unavailable"],
            "download_time_s": "emulated download time less the handshake (from the request, as the real client "
            "measures); connection_time_s: the emulator's own",
            "results": (emu_sum or {}).get("results", {}),
            "comparison": (emu_sum or {}).get("comparison", {}),
            "wall_s": w["emu_wall_s"],
        },
        "real_vs_emulated": real_vs_emulated(w["real"], w["emu"], st.agents),
        "mlflow_run_id": run_id,
        "wall_s": time.perf_counter() - t_job,
    }
    return summary, emu_sum


def table_text(st: SimpleNamespace, summary: dict, real_sum: dict, emu_sum: dict | None) -> str:
    """table.txt: the real downloads, the emulated ones, and the two side by side."""
    from falcon import report

    text = ["real transport (request to last byte)", report.summary_table(real_sum, st.metrics)]
    if emu_sum is not None:
        text += [
            "",
            "emulator (same scenario, app and seeds; handshake taken off)",
            report.summary_table(
                emu_sum, ["download_time_s", "goodput_mbps", "path0_share", "connection_time_s"]
            ),
        ]
    unavailable = (summary["emulator"] or {}).get("unavailable", {})
    text += [
        "",
        f"real against emulated: {st.sname}, {st.size} bytes, {len(st.seeds)} runs, tquic cc "
        f"{st.cc or 'default'} ({st.cc_note})",
        comparison_table(
            summary["real_vs_emulated"], real_sum, emu_sum, st.sname, st.aname, unavailable
        ).rstrip(),
    ]
    from falcon.compare import few_runs_warning

    cis = [r.get("real_over_emulated_ci") for r in summary["real_vs_emulated"].values()]
    if any(cis) and (warning := few_runs_warning(len(st.seeds))):
        text.append(warning)  # the real/emulated intervals are over the seeds
    if st.diffs:
        text.append("the emulated scenario differs from what tquic runs in: " + "; ".join(st.diffs))
    cost = summary["decision_cost_us_median"]
    if cost:
        text.append(
            f"model decision cost (median over decisions, from the transport's decision log): "
            f"{_f(cost.get('model'), '{:.1f}')} us"
        )
    for ag, why in unavailable.items():
        text.append(f"{ag}: emulator column unavailable: {why}")
    if not summary["all_bytes_verified"]:
        text.append(
            "NOT every download was verified: "
            + ", ".join(f"{a} {v}/{len(st.seeds)}" for a, v in summary["bytes_verified"].items())
        )
    return "\n".join(text) + "\n"


def run_deploy_job(cfg) -> dict:
    """The whole job (module docstring); returns the summary plus ``output``."""
    import yaml

    from falcon import report
    from falcon.cli import staged_output
    from falcon.experiment import output_dir
    from falcon.tracking import flatten, tracked_run

    t_job = time.perf_counter()
    st = settings(cfg)
    tracking = st.plain.get("tracking") or {"enabled": False}
    tags = {
        "falcon.job": JOB,
        "falcon.agents": ",".join(st.agents),
        "falcon.scenarios": st.sname,
        "falcon.apps": st.aname,
        "falcon.command": shlex.join(["python -m falcon.deploy", *sys.argv[1:]]),
    }
    run_name = tracking.get("run_name") or f"{JOB}:{','.join(st.agents)}@{st.sname}"
    with tracked_run(tracking, run_name=run_name, tags=tags) as tracker:
        tracker.log_params(flatten(st.plain))
        out = output_dir(cfg, JOB, tracker.run_id)
        with staged_output(out) as tmp:
            w = run_worlds(st, tmp)
            summary, emu_sum = build_summary(st, w, tracker.run_id, t_job)
            real_sum = {k: summary[k] for k in ("results", "comparison") if k in summary}
            table = table_text(st, summary, real_sum, emu_sum)
            (tmp / "table.txt").write_text(table)
            plot_worlds(real_sum, emu_sum, st.sname, st.aname, tmp)
            (tmp / "config.yaml").write_text(yaml.safe_dump(st.plain, sort_keys=False))
            report.write_json(
                _finite(summary), tmp / "summary.json"
            )  # last: marks a complete output
        flat = report.flat_metrics(real_sum)
        for ag, r in summary["real_vs_emulated"].items():
            flat |= {
                f"{ag}/{k}": float(v)
                for k, v in r.items()
                if isinstance(v, (int, float)) and math.isfinite(v)
            }
        if emu_sum is not None:
            flat |= {f"emulated/{k}": v for k, v in report.flat_metrics(emu_sum).items()}
        tracker.log_metrics(flat | {"wall_time_s": time.perf_counter() - t_job})
        tracker.log_artifacts(out)
    print(table, end="", flush=True)
    if not summary["all_bytes_verified"]:
        info(
            "deploy: NOT every download completed with its bytes verified (summary.json: bytes_verified); "
            "their times are left out of the statistics"
        )
    info(f"deploy: summary: {out / 'summary.json'}")
    if tracker.run_id:
        info(f"mlflow run {tracker.run_id} in {tracker.uri}")
    return {**summary, "output": str(out)}


def _finite(x):
    """NaN and infinities as None (strict JSON)."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_finite(v) for v in x]
    return x


__all__ = ["run_deploy_job", "settings", "run_worlds", "build_summary", "real_vs_emulated", "JOB"]
