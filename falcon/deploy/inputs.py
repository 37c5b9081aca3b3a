"""The deploy job's inputs, checked before anything starts: the schedulers,
the model of ``model=`` (:func:`resolve_model`), tquic's congestion control
for the scenario (:func:`transport_cc`) and where the scenario differs from
what tquic runs (:func:`scenario_differences`), the relay's address, and the
transport's binaries (:func:`ensure_transport`). Every problem is a
:class:`envs.errors.ConfigError` / ``FalconInputError`` (one line, exit 2)."""

from __future__ import annotations

import shutil
import socket
import subprocess
from collections.abc import Mapping
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
#: the relay holds rate and delay up to about this much in all [Mbit/s] (docs/tutorials/real_transport.md, relay self-test)
RELAY_RATE_MBPS = 100.0
#: what the transport's binaries run whatever the scenario says (tquic 1.6.0's
#: defaults, ``falcon-quic-server``): scenario key -> (tquic's value, what it is)
TQUIC_FIXED = {
    "initial_window_packets": (10, "initial congestion window [packets]"),
    "flow_control.initial_window_bytes": (
        10_485_760,
        "connection flow-control window [bytes] (initial_max_data)",
    ),
    "packet_size": (
        1500,
        "full packet on the wire [bytes] (1472-byte UDP payload once PMTU discovery has "
        "probed loopback; 1200 before)",
    ),
    "setup.handshake_link": (
        True,
        "the server's handshake datagram crosses the link (waits out an outage)",
    ),
}
#: what tquic's CUBIC runs (checked only when both worlds run CUBIC)
TQUIC_CUBIC_FIXED = {"hystart": (True, "CUBIC's slow start also ends on a rising RTT (HyStart++)")}


# ---------------------------------------------------------------- inputs
def agent_names(agent_list, model) -> list[str]:
    """The schedulers to run: ``agent_list`` checked, or minrtt and rr
    (plus model when a ``model`` is given)."""
    if agent_list is None:
        return ["minrtt", "rr"] + (["model"] if model else [])
    names = [agent_list] if isinstance(agent_list, str) else agent_list
    if not isinstance(names, (list, tuple)) or not names:
        raise ConfigError(
            f"agent_list: expected a non-empty list of {', '.join(TRANSPORT_SCHEDULERS)}, "
            f"got {agent_list!r}"
        )
    names = [str(n) for n in names]
    unknown = [n for n in names if n not in TRANSPORT_SCHEDULERS]
    if unknown:
        raise ConfigError(
            f"agent {unknown[0]!r}: the transport runs {', '.join(TRANSPORT_SCHEDULERS)} "
            "(model: the ONNX model of model=)"
        )
    if len(set(names)) != len(names):
        raise ConfigError(f"agent_list: {names} names a scheduler twice")
    if "model" in names and not model:
        raise ConfigError(
            "agent model: needs model= (an exported ONNX file or a falcon.train / "
            "falcon.export output folder)"
        )
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
    if (p / MODEL_FILE).is_file():  # models/<agent>/ of a train output
        return None, p / MODEL_FILE
    trained = sorted(p.glob(f"models/*/{MODEL_FILE}"))  # a falcon.train output
    if len(trained) == 1:
        return None, trained[0]
    if len(trained) > 1:
        raise ConfigError(
            f"model: {p} holds {len(trained)} models ({', '.join(t.parent.name for t in trained)}); "
            f"name one: model={p}/models/<agent>"
        )
    onnx = sorted(p.glob("*.onnx"))  # a falcon.export output
    if len(onnx) == 1:
        h5 = onnx[0].with_suffix(".h5")
        return onnx[0], (h5 if h5.is_file() else None)
    if len(onnx) > 1:
        raise ConfigError(
            f"model: {p} holds {len(onnx)} ONNX files; name one: model={p}/<name>.onnx"
        )
    raise ConfigError(f"model: {p} holds no ONNX file, {MODEL_FILE} or models/*/{MODEL_FILE}")


def _check_width(path: Path, n_in: int, n_out: int, n_paths: int) -> str:
    """The model's MDP for ``n_paths`` paths; ConfigError when it fits neither."""
    from baselines.dqn.files import ModelFileError
    from envs.mdp import n_inputs, reward_of_inputs

    if n_out != n_paths:
        raise ModelFileError(
            f"model {path}: {n_out} outputs (one Q-value per path), the scenario has "
            f"{n_paths} paths"
        )
    reward = reward_of_inputs(n_in, n_paths)
    if reward is None:
        raise ModelFileError(
            f"model {path}: {n_in} inputs fit neither MDP for {n_paths} paths "
            f"(paper: {n_inputs(n_paths, 'packet_rate')}, completion: {n_inputs(n_paths, 'completion')})"
        )
    return reward


def resolve_model(model, n_paths: int) -> ModelSource:
    """Find and check the model of ``model=`` for a scenario of ``n_paths``
    paths: readable (HDF5 by its reader, ONNX by onnxruntime), one model,
    as many outputs as paths and an input width of one of the MDPs."""
    from baselines.dqn.export import ort_session, read_hdf5
    from baselines.dqn.files import ModelFileError

    given = Path(str(model)).expanduser()
    onnx, h5 = _model_files(given)
    if h5 is not None:
        records = read_hdf5(h5)
        if len(records) != 1:
            raise ModelFileError(
                f"model {h5}: holds {len(records)} models (a bank?); export one "
                "(python -m falcon.export model=... names=[...])"
            )
        rec = records[0]
        n_in, n_out = rec.spec.n_inputs, rec.spec.n_actions
        hidden = tuple(rec.spec.hidden)
        name = rec.name
    if onnx is not None:
        sess = ort_session(onnx)
        i_shape, o_shape = sess.get_inputs()[0].shape, sess.get_outputs()[0].shape
        if (
            len(i_shape) != 2
            or len(o_shape) != 2
            or not all(isinstance(x, int) for x in (i_shape[1], o_shape[1]))
        ):
            raise ModelFileError(
                f"model {onnx}: expected state [batch, n] -> q_values [batch, paths], got "
                f"{i_shape} -> {o_shape}"
            )
        if h5 is not None and (i_shape[1], o_shape[1]) != (n_in, n_out):
            raise ModelFileError(
                f"model {onnx}: {i_shape[1]} inputs and {o_shape[1]} outputs, its HDF5 {h5} "
                f"{n_in} and {n_out}"
            )
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
        raise ConfigError(
            f"model {src.h5}: its ONNX export differs from the HDF5 model by {err:.3g} (relative)"
        )
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
        same = (
            "the same as" if choice == scen_cc and not path_ccs - {choice} else "the emulator runs"
        )
        return choice, f"{choice}; {same} {scen_cc if same != 'the same as' else 'the emulator'}"
    if choice != "scenario":
        raise ConfigError(
            f"transport.cc: {choice!r}: choose scenario, default or one of {', '.join(TQUIC_CC)}"
        )
    if path_ccs - {scen_cc}:
        raise ConfigError(
            f"transport.cc=scenario: the scenario's paths have their own cc ({sorted(path_ccs)}); "
            "tquic runs one for all paths: set transport.cc"
        )
    if scen_cc in TQUIC_CC:
        return scen_cc, f"{scen_cc} in both worlds"
    return "cubic", (
        f"the scenario's cc {scen_cc} has no tquic counterpart: tquic runs cubic "
        f"(set scenario.cc=cubic for the same CC in both worlds)"
    )


def scenario_differences(scenario: Mapping, cc: str | None) -> list[str]:
    """Where the emulator's (normalised) scenario differs from what the
    transport runs (:data:`TQUIC_FIXED`, the congestion control): the
    transport does not read these keys, the emulator does."""
    out = []
    fixed = dict(TQUIC_FIXED)
    if cc == "cubic":
        fixed.update(TQUIC_CUBIC_FIXED)
    for key, (value, what) in fixed.items():
        node = scenario
        for part in key.split("."):
            node = node.get(part) if isinstance(node, Mapping) else None
        if node is not None and node != value:
            out.append(f"{key}: emulator {node}, tquic {value} ({what})")
    ccs = {str(p.get("cc") or scenario.get("cc")) for p in scenario.get("paths", [])}
    if ccs != {cc or "bbr"}:
        out.append(f"cc: emulator {', '.join(sorted(ccs))}, tquic {cc or 'bbr (default, paced)'}")
    return out


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
        raise ConfigError(
            "the transport binaries are not built and cargo is missing (install Rust's cargo, "
            "then `make transport`)"
        )
    if have and (not build or shutil.which("cargo") is None):
        return None
    if not script.is_file():
        if have:
            return None
        raise ConfigError(f"the transport binaries are not built and {script} is missing")
    before = {b: binary(b).stat().st_mtime_ns for b in BINARIES} if have else None
    if not have:
        info(
            "deploy: the transport binaries are missing: building them (transports/build.sh; minutes)"
        )
    proc = subprocess.run(["bash", str(script)], capture_output=True, text=True)
    if proc.returncode != 0 or not built():
        last = (proc.stderr.strip() or proc.stdout.strip() or "no output").splitlines()[-1]
        raise ConfigError(
            f"building the transport failed (transports/build.sh, exit {proc.returncode}): {last}"
        )
    after = {b: binary(b).stat().st_mtime_ns for b in BINARIES}
    if before is not None and after != before:
        info("deploy: transports/build.sh rebuilt the transport (its sources changed)")
        return "rebuilt"
    return None if have else "built"


__all__ = [
    "agent_names",
    "resolve_model",
    "write_model_onnx",
    "transport_cc",
    "scenario_differences",
    "hostport",
    "check_listen",
    "ensure_transport",
    "ModelSource",
    "TRANSPORT_SCHEDULERS",
    "EMULATOR_AGENTS",
    "TQUIC_CC",
    "TQUIC_FIXED",
    "TQUIC_CUBIC_FIXED",
    "RELAY_RATE_MBPS",
]
