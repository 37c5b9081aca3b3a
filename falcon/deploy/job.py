"""The deploy job: real downloads through the relay beside the emulator.

``python -m falcon.deploy`` (:mod:`falcon.deploy.__main__`, ``configs/deploy.yaml``)
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

import json
import math
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from envs.errors import ConfigError
from falcon.experiment import info

#: the deploy scheduler names -> the transport's ``--scheduler``
TRANSPORT_SCHEDULERS = {"minrtt": "minrtt", "rr": "roundrobin", "model": "falcon"}
#: the deploy scheduler names -> the emulator's agent config (configs/agent/)
EMULATOR_AGENTS = {"minrtt": "minrtt", "rr": "rr", "model": "dqn_off"}
#: congestion controls tquic 1.6.0 has (``--cc``)
TQUIC_CC = ("cubic", "bbr", "bbr3", "copa")
#: the relay holds rate and delay up to about this much in all [Mbit/s] (README, relay self-test)
RELAY_RATE_MBPS = 100.0
#: the job's name (results/deploy/, MLflow tag)
JOB = "deploy"


# ---------------------------------------------------------------- inputs
def agent_names(agent_list, model) -> list[str]:
    """The schedulers to run: ``agent_list`` checked, or minrtt and rr
    (plus model when a ``model`` is given)."""
    if agent_list is None:
        return ["minrtt", "rr"] + (["model"] if model else [])
    names = [agent_list] if isinstance(agent_list, str) else agent_list
    if not isinstance(names, (list, tuple)) or not names:
        raise ConfigError(f"agent_list: expected a non-empty list of {', '.join(TRANSPORT_SCHEDULERS)}, "
                          f"got {agent_list!r}")
    names = [str(n) for n in names]
    unknown = [n for n in names if n not in TRANSPORT_SCHEDULERS]
    if unknown:
        raise ConfigError(f"agent {unknown[0]!r}: the transport runs {', '.join(TRANSPORT_SCHEDULERS)} "
                          "(model: the ONNX model of model=)")
    if len(set(names)) != len(names):
        raise ConfigError(f"agent_list: {names} names a scheduler twice")
    if "model" in names and not model:
        raise ConfigError("agent model: needs model= (an exported ONNX file or a falcon.train / "
                          "falcon.export output folder)")
    return names


@dataclass
class ModelSource:
    """The model of ``model=``: an ONNX file for the transport (None: to be
    written from ``h5`` into the output) and the HDF5 file for the emulator
    (None: only an ONNX file was given)."""

    given: Path
    name: str
    onnx: Path | None
    h5: Path | None
    n_inputs: int
    n_actions: int
    reward: str
    hidden: tuple[int, ...] = ()


def _model_files(p: Path) -> tuple[Path | None, Path | None]:
    """``(onnx, h5)`` named by ``model=`` (module docstring of the job)."""
    from baselines.dqn.policy import MODEL_FILE

    if p.is_file():
        return (p, None) if p.suffix.lower() == ".onnx" else (None, p)
    if not p.exists():
        raise FileNotFoundError(f"model: no such file or folder: {p}")
    if (p / MODEL_FILE).is_file():                      # models/<agent>/ of a train output
        return None, p / MODEL_FILE
    trained = sorted(p.glob(f"models/*/{MODEL_FILE}"))  # a falcon.train output
    if len(trained) == 1:
        return None, trained[0]
    if len(trained) > 1:
        raise ConfigError(f"model: {p} holds {len(trained)} models ({', '.join(t.parent.name for t in trained)}); "
                          f"name one: model={p}/models/<agent>")
    onnx = sorted(p.glob("*.onnx"))                    # a falcon.export output
    if len(onnx) == 1:
        h5 = onnx[0].with_suffix(".h5")
        return onnx[0], (h5 if h5.is_file() else None)
    if len(onnx) > 1:
        raise ConfigError(f"model: {p} holds {len(onnx)} ONNX files; name one: model={p}/<name>.onnx")
    raise ConfigError(f"model: {p} holds no ONNX file, {MODEL_FILE} or models/*/{MODEL_FILE}")


def _check_width(path: Path, n_in: int, n_out: int, n_paths: int) -> str:
    """The model's MDP for ``n_paths`` paths; ConfigError when it fits neither."""
    from baselines.dqn.files import ModelFileError
    from envs.mdp import n_inputs, reward_of_inputs

    if n_out != n_paths:
        raise ModelFileError(f"model {path}: {n_out} outputs (one Q-value per path), the scenario has "
                             f"{n_paths} paths")
    reward = reward_of_inputs(n_in, n_paths)
    if reward is None:
        raise ModelFileError(f"model {path}: {n_in} inputs fit neither MDP for {n_paths} paths "
                             f"(paper: {n_inputs(n_paths, 'packet_rate')}, completion: {n_inputs(n_paths, 'completion')})")
    return reward


def resolve_model(model, n_paths: int) -> ModelSource:
    """Find and check the model of ``model=`` for a scenario of ``n_paths``
    paths: readable (HDF5 by its reader, ONNX by onnxruntime), one model,
    as many outputs as paths and an input width of one of the MDPs."""
    from baselines.dqn.export import _ort_session, read_hdf5
    from baselines.dqn.files import ModelFileError

    given = Path(str(model)).expanduser()
    onnx, h5 = _model_files(given)
    if h5 is not None:
        records = read_hdf5(h5)
        if len(records) != 1:
            raise ModelFileError(f"model {h5}: holds {len(records)} models (a bank?); export one "
                                 "(python -m falcon.export model=... names=[...])")
        rec = records[0]
        n_in, n_out = rec.spec.n_inputs, rec.spec.n_actions
        hidden = tuple(rec.spec.hidden)
        name = rec.name
    if onnx is not None:
        sess = _ort_session(onnx)
        i_shape, o_shape = sess.get_inputs()[0].shape, sess.get_outputs()[0].shape
        if len(i_shape) != 2 or len(o_shape) != 2 or not all(isinstance(x, int) for x in (i_shape[1], o_shape[1])):
            raise ModelFileError(f"model {onnx}: expected state [batch, n] -> q_values [batch, paths], got "
                                 f"{i_shape} -> {o_shape}")
        if h5 is not None and (i_shape[1], o_shape[1]) != (n_in, n_out):
            raise ModelFileError(f"model {onnx}: {i_shape[1]} inputs and {o_shape[1]} outputs, its HDF5 {h5} "
                                 f"{n_in} and {n_out}")
        n_in, n_out = int(i_shape[1]), int(o_shape[1])
        if h5 is None:
            hidden, name = (), onnx.stem
    reward = _check_width(onnx or h5, n_in, n_out, n_paths)
    return ModelSource(given, name, onnx, h5, n_in, n_out, reward, hidden)


def write_model_onnx(src: ModelSource, folder: Path) -> Path:
    """The transport's ONNX file: the given one, or the HDF5 model written
    as ONNX into ``folder`` and checked against the HDF5 reader."""
    if src.onnx is not None:
        return src.onnx
    from baselines.dqn.export import (
        hdf5_forward,
        onnx_q_values,
        random_states,
        read_hdf5,
        write_onnx,
    )

    rec = read_hdf5(src.h5)[0]
    folder.mkdir(parents=True, exist_ok=True)
    out = write_onnx(folder / f"{src.name}.onnx", rec)
    x = random_states(rec.spec.n_inputs, 64)
    ref, q = hdf5_forward(src.h5, x), onnx_q_values(out, x)
    err = float(np.max(np.abs(q - ref) / np.maximum(1.0, np.abs(ref))))
    if not err <= 1e-5:
        raise ConfigError(f"model {src.h5}: its ONNX export differs from the HDF5 model by {err:.3g} (relative)")
    return out


def transport_cc(choice, scenario: Mapping) -> tuple[str | None, str]:
    """tquic's congestion control for ``transport.cc`` and a note on how it
    relates to the scenario's (None: tquic's default, BBR)."""
    choice = str(choice or "scenario")
    scen_cc = str(scenario.get("cc") or "olia")
    path_ccs = {str(p.get("cc")) for p in scenario.get("paths", []) if p.get("cc")}
    if choice == "default":
        return None, f"tquic's default (BBR with pacing); the emulator runs {scen_cc}"
    if choice in TQUIC_CC:
        same = "the same as" if choice == scen_cc and not path_ccs - {choice} else "the emulator runs"
        return choice, f"{choice}; {same} {scen_cc if same != 'the same as' else 'the emulator'}"
    if choice != "scenario":
        raise ConfigError(f"transport.cc: {choice!r}: choose scenario, default or one of {', '.join(TQUIC_CC)}")
    if path_ccs - {scen_cc}:
        raise ConfigError(f"transport.cc=scenario: the scenario's paths have their own cc ({sorted(path_ccs)}); "
                          "tquic runs one for all paths: set transport.cc")
    if scen_cc in TQUIC_CC:
        return scen_cc, f"{scen_cc} in both worlds"
    return "cubic", (f"the scenario's cc {scen_cc} has no tquic counterpart: tquic runs cubic "
                     f"(set scenario.cc=cubic for the same CC in both worlds)")


def hostport(text) -> tuple[str, int]:
    host, sep, port = str(text).rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) < 65536:
        raise ConfigError(f"relay.listen: expected host:port, got {text!r}")
    return host, int(port)


def check_listen(addr: tuple[str, int]) -> None:
    """Fail early when the relay's port cannot be bound (it is bound again per download)."""
    if addr[1] == 0:
        return
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.bind(addr)
        except OSError as e:
            raise ConfigError(f"relay: cannot bind {addr[0]}:{addr[1]} ({e.strerror})") from None


def ensure_transport(build: bool) -> str | None:
    """Build the transport when its binaries are missing (one line saying so)
    or, with ``build``, let ``transports/build.sh`` check them (seconds when
    nothing changed); a note when it rebuilt them, None otherwise.
    No cargo and no binaries: ConfigError."""
    from falcon.deploy.transport import BINARIES, binary, built

    script = Path(__file__).resolve().parents[2] / "transports" / "build.sh"
    have = built()
    if not have and shutil.which("cargo") is None:
        raise ConfigError("the transport binaries are not built and cargo is missing (install Rust's cargo, "
                          "then `make transport`)")
    if have and (not build or shutil.which("cargo") is None):
        return None
    if not script.is_file():
        if have:
            return None
        raise ConfigError(f"the transport binaries are not built and {script} is missing")
    before = {b: binary(b).stat().st_mtime_ns for b in BINARIES} if have else None
    if not have:
        info("deploy: the transport binaries are missing: building them (transports/build.sh; minutes)")
    proc = subprocess.run(["bash", str(script)], capture_output=True, text=True)
    if proc.returncode != 0 or not built():
        last = (proc.stderr.strip() or proc.stdout.strip() or "no output").splitlines()[-1]
        raise ConfigError(f"building the transport failed (transports/build.sh, exit {proc.returncode}): {last}")
    after = {b: binary(b).stat().st_mtime_ns for b in BINARIES}
    if before is not None and after != before:
        info("deploy: transports/build.sh rebuilt the transport (its sources changed)")
        return "rebuilt"
    return None if have else "built"


# ---------------------------------------------------------------- the two worlds
def _decision_cost(log: Path) -> float:
    """The median decision cost [us] of a decision log's connection (its end record)."""
    costs = []
    if log.is_file():
        with log.open() as f:
            for line in f:
                if '"kind":"end"' in line:
                    costs.append(float(json.loads(line)["cost_us_median"]))
    return float(np.median(costs)) if costs else math.nan


def real_metrics(rep: Mapping, size: int, client_ips: Sequence[str], log: Path | None) -> dict[str, float]:
    """One real download's metrics (NaN times for a failed or unverified one)."""
    ok = bool(rep.get("verified")) and int(rep.get("bytes", -1)) == size and rep.get("client_rc") == 0
    secs = float(rep["seconds"]) if ok and rep.get("seconds") else math.nan
    by_ip = {a.rpartition(":")[0]: float(b) for a, b in (rep.get("path_recv_bytes") or {}).items()}
    total = sum(by_ip.values()) or math.nan
    m = {"download_time_s": secs,
         "goodput_mbps": size * 8 / secs / 1e6 if secs > 0 else math.nan,
         "bytes_verified": 1.0 if ok else 0.0,
         "bytes_received": float(rep.get("bytes", 0) or 0)}
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


def run_real(scenario: Mapping, size: int, agents: Sequence[str], seeds: Sequence[int], *, onnx: Path | None,
             cc: str | None, listen: tuple[str, int], lead_s: float | None, timeout_s: float, warmup: int,
             log_dir: Path, progress: bool) -> list[dict]:
    """Every real download, seeds outermost (the schedulers take turns, so a
    drift of the machine's load spreads over all of them); one record each."""
    from falcon.deploy.transport import download

    n = len(scenario["paths"])
    ips = [f"127.0.0.{2 + i}" for i in range(n)]
    kw = dict(cc=cc, listen=listen, lead_s=lead_s, timeout_s=timeout_s)
    for k in range(warmup):
        rep = download(scenario, size, "minrtt", seed=seeds[0] + 10_000 + k, **kw)
        if progress:
            info(f"deploy: warm-up download {k + 1}/{warmup}: "
                 + (f"{rep['seconds']:.3f} s" if rep.get("verified") else f"failed ({_why(rep)})"))
    records = []
    for j, seed in enumerate(seeds):
        for agent in agents:
            log = log_dir / f"{agent}_{seed}.jsonl" if agent == "model" else None
            rep = download(scenario, size, TRANSPORT_SCHEDULERS[agent], model=onnx if agent == "model" else None,
                           decision_log=log, seed=seed, **kw)
            m = real_metrics(rep, size, ips, log)
            if progress or not m["bytes_verified"]:
                state = (f"{m['download_time_s']:.3f} s, bytes verified" if m["bytes_verified"]
                         else f"FAILED ({_why(rep)})")
                info(f"deploy: {agent} run {j + 1}/{len(seeds)} (seed {seed}): {state}")
            records.append({"agent": agent, "seed": seed, "metrics": m})
    return records


def _why(rep: Mapping) -> str:
    err = (rep.get("stderr") or "").strip().splitlines()
    return err[-1] if err else f"server exit {rep.get('server_rc')}, client exit {rep.get('client_rc')}"


def emulator_agent(agent: str, src: ModelSource | None):
    """The emulator's scheduler for a deploy scheduler (None: unavailable)."""
    from falcon.experiments.common import agent_config, build_agent

    if agent != "model":
        return build_agent(agent, agent_config(EMULATOR_AGENTS[agent]), 0)
    if src is None or src.h5 is None:
        return None
    cfg = agent_config("dqn_off", {"model": str(src.h5), "reward": src.reward, "hidden": list(src.hidden)})
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
    out = {"download_time_s": t, "goodput_mbps": size * 8 / t / 1e6 if t > 0 else math.nan,
           "connection_time_s": m["download_time_s"], "handshake_s": handshake,
           "retransmissions": m["retransmissions"]}
    for i in range(len(s["paths"])):
        out[f"path{i}_share"] = m.get(f"path{i}_share", math.nan)
    return out


def run_emulated(scenario: Mapping, app: Mapping, agents: Sequence[str], seeds: Sequence[int],
                 src: ModelSource | None) -> tuple[list[dict], dict[str, str]]:
    """The emulated episodes (records) and, per scheduler without an
    emulated counterpart, why."""
    records, unavailable = [], {}
    for agent in agents:
        if emulator_agent(agent, src) is None:
            unavailable[agent] = ("only an ONNX file was given: the emulator needs the model's HDF5 "
                                  "(model= a falcon.train or falcon.export output)")
            continue
        for seed in seeds:
            sched = emulator_agent(agent, src)
            records.append({"agent": agent, "seed": seed, "metrics": emulated_episode(scenario, app, sched, seed)})
    return records, unavailable


# ---------------------------------------------------------------- report
def _values(records, agent, metric="download_time_s") -> list[float]:
    return [r["metrics"].get(metric, math.nan) for r in sorted(records, key=lambda r: r["seed"]) if r["agent"] == agent]


def _median(vals) -> float:
    v = [x for x in vals if x is not None and math.isfinite(x)]
    return float(np.median(v)) if v else math.nan


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


def comparison_table(cmp: Mapping, real_sum: Mapping, emu_sum: Mapping | None, scenario: str, app: str,
                     unavailable: Mapping) -> str:
    """Real against emulated, one row per scheduler."""
    from falcon.experiments.common import format_table

    def stats(summary, ag):
        st = (summary or {}).get("results", {}).get(scenario, {}).get(app, {}).get(ag, {}).get("download_time_s")
        if not st or st["median"] is None:
            return "-"
        return f"{st['median']:.3f} [{st['p25']:.3f}, {st['p75']:.3f}]"

    rows = []
    for ag, r in cmp.items():
        ci = r.get("real_over_emulated_ci")
        rows.append([ag, stats(real_sum, ag), stats(emu_sum, ag) if ag not in unavailable else "unavailable",
                     _f(r.get("real_over_emulated")) + (f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else ""),
                     _f(r.get("real_vs_minrtt")), _f(r.get("emulated_vs_minrtt"))])
    head = ["scheduler", "real s median [p25, p75]", "emulated s median [p25, p75]", "real/emulated [95 % CI]",
            "real vs minRTT", "emulated vs minRTT"]
    return format_table(head, rows)


def plot_worlds(real_sum: Mapping, emu_sum: Mapping | None, scenario: str, app: str, folder: Path) -> list[Path]:
    """``download_time_s__<scenario>__<app>.png``: CDF and box per scheduler, real and emulated."""
    from falcon import report

    merged = {}
    for label, summary in (("real", real_sum), ("emulated", emu_sum)):
        for ag, st in ((summary or {}).get("results", {}).get(scenario, {}).get(app, {})).items():
            if "download_time_s" in st:
                merged[f"{ag} ({label})"] = {"download_time_s": st["download_time_s"]}
    return report.plot_metric({"results": {scenario: {app: merged}}}, "download_time_s", folder)


# ---------------------------------------------------------------- the job
def run_deploy_job(cfg) -> dict:
    """The whole job (module docstring); returns the summary plus ``output``."""
    import yaml

    from envs.apps import normalise_app
    from envs.scenario import normalise_scenario
    from falcon import report
    from falcon.cli import staged_output
    from falcon.config import check_int, to_plain
    from falcon.experiment import output_dir
    from falcon.tracking import flatten, tracked_run

    t_job = time.perf_counter()
    cfg_plain = to_plain(cfg)
    runs, seed0 = check_int(cfg, "runs", 1), check_int(cfg, "seed", 0)
    seeds = list(range(seed0, seed0 + runs))
    scen_cfg, app_cfg = cfg_plain["scenario"], cfg_plain["app"]
    scenario = normalise_scenario(scen_cfg)
    app = normalise_app(app_cfg)
    if app.get("kind") != "bulk":
        raise ConfigError(f"app: the transport downloads one file (app=bulk), got kind {app.get('kind')!r}")
    size = int(app["size_bytes"])
    sname, aname = str(scen_cfg.get("name") or "scenario"), "bulk"
    n_paths = len(scenario["paths"])
    agents = agent_names(cfg_plain.get("agent_list"), cfg_plain.get("model"))
    src = resolve_model(cfg_plain["model"], n_paths) if cfg_plain.get("model") else None
    tcfg = dict(cfg_plain.get("transport") or {})
    rcfg = dict(cfg_plain.get("relay") or {})
    cc, cc_note = transport_cc(tcfg.get("cc", "scenario"), scen_cfg)
    listen = hostport(rcfg.get("listen", "127.0.0.1:0"))
    lead_ms = rcfg.get("lead_ms")
    lead_s = None if lead_ms is None else float(lead_ms) / 1000
    timeout_s = float(tcfg.get("timeout_s", 60))
    warmup = int(tcfg.get("warmup", 1))
    emulate = bool((cfg_plain.get("emulator") or {}).get("enabled", True))
    progress = bool(cfg_plain.get("progress", True))
    from falcon.relay import Relay

    Relay(scenario, listen=listen)             # checks the scenario for the relay (client addresses, lead)
    check_listen(listen)
    build_note = ensure_transport(bool(tcfg.get("build", True)))
    mean_rate = sum(float(p.get("bandwidth_mbps") or 0) for p in scenario["paths"])
    if mean_rate > RELAY_RATE_MBPS:
        info(f"deploy: the paths add up to {mean_rate:g} Mbit/s; the relay holds rate and delay up to about "
             f"{RELAY_RATE_MBPS:g} Mbit/s on this machine (python -m falcon.relay --self-test)")

    tracking = cfg_plain.get("tracking") or {"enabled": False}
    tags = {"falcon.job": JOB, "falcon.agents": ",".join(agents), "falcon.scenarios": sname, "falcon.apps": aname,
            "falcon.command": shlex.join(["python -m falcon.deploy", *sys.argv[1:]])}
    run_name = tracking.get("run_name") or f"{JOB}:{','.join(agents)}@{sname}"
    with tracked_run(tracking, run_name=run_name, tags=tags) as tracker:
        tracker.log_params(flatten({k: v for k, v in cfg_plain.items() if k != "hydra"}))
        out = output_dir(cfg, JOB, tracker.run_id)
        with staged_output(out) as tmp:
            onnx = write_model_onnx(src, tmp / "models") if src is not None and "model" in agents else None
            emu_records, unavailable = ([], {})
            if emulate:
                info(f"deploy: emulating {', '.join(agents)} on {sname}, {runs} seeds")
                t0 = time.perf_counter()
                emu_records, unavailable = run_emulated(scen_cfg, app, agents, seeds, src)
                for ag, why in unavailable.items():
                    info(f"deploy: {ag}: emulator column unavailable: {why}")
                emu_wall = time.perf_counter() - t0
            else:
                emu_wall = 0.0
            info(f"deploy: {len(agents)} schedulers x {runs} real downloads of {size} bytes on {sname} "
                 f"through the relay (tquic cc: {cc or 'default'})")
            keep = bool(tcfg.get("keep_decision_logs", False))
            with tempfile.TemporaryDirectory(prefix="falcon-deploy-") as logs_tmp:
                log_dir = tmp / "logs" if keep else Path(logs_tmp)
                log_dir.mkdir(parents=True, exist_ok=True)
                t0 = time.perf_counter()
                real_records = run_real(scenario, size, agents, seeds, onnx=onnx, cc=cc, listen=listen,
                                        lead_s=lead_s, timeout_s=timeout_s, warmup=warmup, log_dir=log_dir,
                                        progress=progress)
                real_wall = time.perf_counter() - t0
            tag = {"scenario": sname, "app": aname}
            real_sum = report.summarize([{**tag, **r} for r in real_records], seeds=seeds, job=JOB,
                                        compare="download_time_s")
            emu_sum = (report.summarize([{**tag, **r} for r in emu_records], seeds=seeds, job=JOB,
                                        compare="download_time_s") if emu_records else None)
            cmp = real_vs_emulated(real_records, emu_records, agents)
            verified = {ag: int(sum(r["metrics"]["bytes_verified"] for r in real_records if r["agent"] == ag))
                        for ag in agents}
            cost = {ag: _median(_values(real_records, ag, "decision_cost_us")) for ag in agents if ag == "model"}
            summary = {**real_sum,
                       "world": "real: multipath QUIC (tquic 1.6.0) through the link relay; download_time_s from "
                                "the request to the last byte",
                       "size_bytes": size, "bytes_verified": verified,
                       "all_bytes_verified": all(v == runs for v in verified.values()),
                       "decision_cost_us_median": cost,
                       "transport": {"cc": cc or "default (bbr)", "cc_note": cc_note, "build": build_note,
                                     "schedulers": {ag: TRANSPORT_SCHEDULERS[ag] for ag in agents},
                                     "relay_listen": f"{listen[0]}:{listen[1]}", "warmup_downloads": warmup,
                                     "wall_s": real_wall},
                       "model": None if src is None else {
                           "given": str(src.given), "onnx": str(onnx) if onnx else None,
                           "onnx_written_here": src.onnx is None and onnx is not None,
                           "h5": str(src.h5) if src.h5 else None, "mdp": src.reward, "inputs": src.n_inputs,
                           "paths": src.n_actions},
                       "emulator": None if not emulate else {
                           "schedulers": {ag: EMULATOR_AGENTS[ag] for ag in agents if ag not in unavailable},
                           "unavailable": unavailable,
                           "download_time_s": "emulated download time less the handshake (from the request, as "
                                              "the real client measures); connection_time_s: the emulator's own",
                           "results": (emu_sum or {}).get("results", {}),
                           "comparison": (emu_sum or {}).get("comparison", {}), "wall_s": emu_wall},
                       "real_vs_emulated": cmp,
                       "mlflow_run_id": tracker.run_id, "wall_s": time.perf_counter() - t_job}
            metrics = list(to_plain((cfg.get("report") or {}).get("table_metrics")) or ["download_time_s"])
            text = ["real transport (request to last byte)", report.summary_table(real_sum, metrics)]
            if emu_sum is not None:
                text += ["", "emulator (same scenario, app and seeds; handshake taken off)",
                         report.summary_table(emu_sum, ["download_time_s", "goodput_mbps", "path0_share",
                                                        "connection_time_s"])]
            text += ["", f"real against emulated: {sname}, {size} bytes, {runs} runs, tquic cc {cc or 'default'}"
                     f" ({cc_note})", comparison_table(cmp, real_sum, emu_sum, sname, aname, unavailable).rstrip()]
            if cost:
                text.append(f"model decision cost (median of the runs' medians): {_f(cost.get('model'), '{:.1f}')} us")
            for ag, why in unavailable.items():
                text.append(f"{ag}: emulator column unavailable: {why}")
            if not summary["all_bytes_verified"]:
                text.append("NOT every download was verified: " + ", ".join(f"{a} {v}/{runs}"
                                                                            for a, v in verified.items()))
            table = "\n".join(text) + "\n"
            (tmp / "table.txt").write_text(table)
            plot_worlds(real_sum, emu_sum, sname, aname, tmp)
            (tmp / "config.yaml").write_text(yaml.safe_dump({k: v for k, v in cfg_plain.items() if k != "hydra"},
                                                            sort_keys=False))
            report.write_json(_finite(summary), tmp / "summary.json")    # last: marks a complete output
        flat = report.flat_metrics(real_sum)
        for ag, r in cmp.items():
            for k, v in r.items():
                if isinstance(v, (int, float)) and v is not None and math.isfinite(v):
                    flat[f"{ag}/{k}"] = float(v)
        if emu_sum is not None:
            flat |= {f"emulated/{k}": v for k, v in report.flat_metrics(emu_sum).items()}
        tracker.log_metrics(flat | {"wall_time_s": time.perf_counter() - t_job})
        tracker.log_artifacts(out)
    print(table, end="", flush=True)
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


__all__ = ["run_deploy_job", "resolve_model", "agent_names", "transport_cc", "ensure_transport",
           "emulated_episode", "real_vs_emulated", "TRANSPORT_SCHEDULERS", "EMULATOR_AGENTS"]
