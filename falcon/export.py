"""python -m falcon.export: write trained models as HDF5 and ONNX, checked.

    python -m falcon.export model=results/train/<run>                      # every models/*/model.h5
    python -m falcon.export model=results/train/<run>/models/dqn_on output=exports/dqn_on
    python -m falcon.export model=bank.h5 formats=[onnx] names=[cell_000]

``model=`` is a model HDF5 file (:mod:`baselines.dqn.export` layout; a
single model or a bank of them), a folder holding ``model.h5`` (what
``falcon.train`` saves under ``models/<agent>/``), or a ``falcon.train``
output folder (every ``models/*/model.h5`` in it). A GAPS model file
(:mod:`baselines.gaps.export`) is exported as its HDF5 file and the ONNX
graph of its actor (input ``state`` and ``mask``, output ``gap_change``); a
Hybrid MPTCP / DRL-MPTCP model file (:mod:`baselines.hybrid.export`) likewise
(input ``state``, output ``window_exponent``). For every input file the
command writes, into ``output=`` (default ``results/export/<time>``):

* ``<name>.h5``: the models in the documented HDF5 layout;
* ``<name>.onnx`` (``<name>.<model>.onnx`` for a multi-model file): one ONNX
  graph per model, input ``state``, output ``q_values``, dynamic batch;
* ``summary.json``: files, formats, ONNX opset / IR version and the parity
  figures.

Unless ``check.enabled=false`` both exports are loaded back with
independent readers (h5py + NumPy; onnxruntime) and their Q-values compared
with the torch model's on random states and on real states (from
``check.experience`` or from an emulated episode run with the model); a
difference above ``check.tolerance`` fails the export. The output folder
appears only when complete. Bad input (a missing, corrupt or foreign file)
is reported on one line, exit status 2. See ``configs/export.yaml`` and
``docs/reference/formats/model_formats.md``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import hydra
import numpy as np
from omegaconf import DictConfig

from envs.errors import ConfigError
from falcon import cli
from falcon.config import CONFIG_DIR
from falcon.paths import results_dir

FORMATS = ("hdf5", "onnx")


def find_model_files(model) -> list[tuple[str, Path]]:
    """``(name, path)`` of the model files named by ``model=`` (see the module docstring)."""
    from baselines.dqn.policy import MODEL_FILE

    p = Path(str(model)).expanduser()
    if p.is_file():
        name = p.parent.name if p.name == MODEL_FILE else p.stem
        return [(name or "model", p)]
    if not p.exists():
        raise FileNotFoundError(f"model: no such file or folder: {p}")
    if (p / MODEL_FILE).is_file():
        return [(p.name or "model", p / MODEL_FILE)]
    found = sorted(p.glob(f"models/*/{MODEL_FILE}"))
    if not found:
        raise ConfigError(
            f"model: {p} holds no {MODEL_FILE} (nor models/*/{MODEL_FILE} of a falcon.train output)"
        )
    return [(f.parent.name, f) for f in found]


def real_states(rec, check: dict) -> np.ndarray | None:
    """States the model meets in practice: from an experience log, or from
    emulated episodes scheduled greedily by the model."""
    import envs
    from baselines.dqn.experience import read_experience
    from baselines.dqn.network import NumpyQNet
    from baselines.dqn.policy import DQNScheduler
    from envs.gym_env import DEFAULT_SCENARIO
    from envs.mdp import reward_of_inputs

    if check.get("experience"):
        exp = read_experience(check["experience"])
        if exp.state.shape[1] != rec.spec.n_inputs:
            raise ConfigError(
                f"check.experience: its states have {exp.state.shape[1]} features, model "
                f"{rec.name!r} takes {rec.spec.n_inputs}"
            )
        return exp.state[:4096]
    rs = check.get("real_states") or {}
    episodes = int(rs.get("episodes", 1) or 0)
    reward = reward_of_inputs(rec.spec.n_inputs, rec.spec.n_actions)  # which MDP's states
    if episodes <= 0 or reward is None:
        return None
    n = rec.spec.n_actions
    scenario = rs.get("scenario") or (
        DEFAULT_SCENARIO if n == 2 else {"name": f"{n}x4g", "paths": [{"link": "4g"}] * n}
    )
    states: list[np.ndarray] = []

    class Greedy(DQNScheduler):
        name = "export-check"

        def _choose(self, state) -> int:
            states.append(state)
            return super()._choose(state)

    sched = Greedy(reward=reward, hidden=rec.spec.hidden, epsilon=0.0)
    sched.spec = rec.spec
    sched.qnet = NumpyQNet(rec.weights, rec.spec)
    app = {"kind": "bulk", "size_bytes": int(rs.get("app_bytes", 500_000))}
    for i in range(episodes):
        envs.run_episode(scenario, app, sched, int(rs.get("seed", 0)) + i)
    return np.asarray(states, np.float32) if states else None


def _native_and_onnx(name: str, path: Path, out_dir: Path, formats, onnx_cfg: dict, write_onnx):
    """The common part of an actor-critic model file's export (GAPS, Hybrid
    MPTCP): the HDF5 file copied as is (its native layout), the actor's ONNX
    graph written by ``write_onnx``. Returns ``(summary entry, the HDF5 file
    to check, the ONNX file or None)``."""
    import shutil

    entry: dict = {"source": str(path), "models": ["actor", "critic"], "files": [], "parity": {}}
    h5 = path
    if "hdf5" in formats:
        h5 = out_dir / f"{name}.h5"
        shutil.copyfile(path, h5)
        entry["files"].append(h5.name)
    onnx_out = None
    if "onnx" in formats:
        onnx_out = write_onnx(
            out_dir / f"{name}.onnx",
            path,
            opset=int(onnx_cfg["opset"]),
            ir_version=int(onnx_cfg["ir_version"]),
        )
        entry["files"].append(onnx_out.name)
    return entry, h5, onnx_out


def _actor_inputs(
    agent, scenario, app_bytes: int, seed: int
) -> list[tuple[np.ndarray, np.ndarray]]:
    """``(state, mask)`` of every actor call while ``agent`` (a DDPG agent)
    drives a bulk download of ``app_bytes`` on ``scenario`` in the emulator."""
    import envs

    inputs = []
    real_act = agent.ddpg.act

    def act(x, m):
        inputs.append((x.copy(), m.copy()))
        return real_act(x, m)

    agent.ddpg.act = act
    try:
        envs.run_episode(scenario, {"kind": "bulk", "size_bytes": int(app_bytes)}, agent, int(seed))
    finally:
        agent.ddpg.act = real_act
    return inputs


def export_gaps_file(
    name: str, path: Path, out_dir: Path, formats, onnx_cfg: dict, check: dict
) -> dict:
    """Export a GAPS model file (:mod:`baselines.gaps.export`): HDF5 with every
    weight, ONNX of the actor; parity on random states and on states met
    while the model schedules a download in the emulator."""
    from baselines.gaps.agent import GAPS
    from baselines.gaps.export import check_parity, read_weights, write_onnx

    cfg, _ = read_weights(path)
    agent = GAPS(
        network={k: v for k, v in cfg.as_dict().items() if k not in ("n_features", "max_subflows")},
        model=str(path),
    )
    entry, h5, onnx_out = _native_and_onnx(name, path, out_dir, formats, onnx_cfg, write_onnx)
    if check.get("enabled", True):
        tol = float(check.get("tolerance", 1e-5))
        res = {"random": check_parity(agent, h5, onnx_out, tolerance=tol)}
        rs = check.get("real_states") or {}
        scenario = rs.get("scenario") or {
            "name": "export_check",
            "paths": [
                {"bandwidth_mbps": 50, "rtt_ms": 30, "loss": 1e-4},
                {"bandwidth_mbps": 50, "rtt_ms": 80, "loss": 1e-4},
            ],
        }
        # one decision per sRTT needs a longer download than the DQN's check
        inputs = _actor_inputs(
            agent, scenario, rs.get("gaps_app_bytes", 4_000_000), rs.get("seed", 0)
        )
        if inputs:
            states, masks = zip(*inputs)
            res["real"] = check_parity(
                agent, h5, onnx_out, (np.stack(states), np.stack(masks)), tol
            )
        entry["parity"]["actor"] = res
    return entry


def export_hybrid_file(
    name: str, path: Path, out_dir: Path, formats, onnx_cfg: dict, check: dict
) -> dict:
    """Export a Hybrid MPTCP model file (:mod:`baselines.hybrid.export`): HDF5
    with every weight, ONNX of the actor; parity on random states (1 to 8
    subflows) and on the states met while the model drives a download in the
    emulator (one state per 0.2 s slot)."""
    from baselines.hybrid.agent import HybridMPTCP
    from baselines.hybrid.export import check_parity, random_states, read_weights, write_onnx

    cfg, _, meta = read_weights(path)
    agent = HybridMPTCP(
        inner_loop=meta["inner_loop"],
        action=meta.get("action", "scale"),
        network={k: v for k, v in cfg.as_dict().items() if k != "n_features"},
        model=str(path),
    )
    entry, h5, onnx_out = _native_and_onnx(name, path, out_dir, formats, onnx_cfg, write_onnx)
    if check.get("enabled", True):
        tol = float(check.get("tolerance", 1e-5))
        n = int(check.get("random_states", 256))
        res = {
            "random": check_parity(
                agent, h5, onnx_out, random_states(agent.net_config, n), tolerance=tol
            )
        }
        rs = check.get("real_states") or {}
        scenario = rs.get("scenario") or {
            "name": "export_check",
            "cc": "lia",
            "paths": [
                {"bandwidth_mbps": 20, "rtt_ms": 30, "loss": 1e-4},
                {"bandwidth_mbps": 20, "rtt_ms": 80, "loss": 1e-4},
            ],
        }
        # one decision per 0.2 s slot: a download of several seconds
        inputs = _actor_inputs(
            agent, scenario, rs.get("hybrid_app_bytes", 20_000_000), rs.get("seed", 0)
        )
        if inputs:
            res["real"] = check_parity(agent, h5, onnx_out, [np.stack([x for x, _ in inputs])], tol)
        entry["parity"]["actor"] = res
    return entry


def export_file(
    name: str, path: Path, out_dir: Path, formats, names, onnx_cfg: dict, check: dict
) -> dict:
    """Export one model file into ``out_dir``; returns its summary entry."""
    from baselines.dqn.export import check_parity, random_states, read_hdf5, write_hdf5, write_onnx
    from baselines.gaps.export import is_gaps_file
    from baselines.hybrid.export import is_hybrid_file

    if is_gaps_file(path):
        return export_gaps_file(name, path, out_dir, formats, onnx_cfg, check)
    if is_hybrid_file(path):
        return export_hybrid_file(name, path, out_dir, formats, onnx_cfg, check)
    records = read_hdf5(path, names=list(names) if names else None)
    entry: dict = {
        "source": str(path),
        "models": [r.name for r in records],
        "files": [],
        "parity": {},
    }
    h5_out = out_dir / f"{name}.h5"
    if "hdf5" in formats:
        import h5py

        with h5py.File(path, "r") as f:
            file_attrs = {
                k: v
                for k, v in f.attrs.items()
                if k
                not in (
                    "format",
                    "format_version",
                    "framework_version",
                    "created",
                    "n_models",
                    "model_names",
                )
            }
        write_hdf5(h5_out, records, file_attrs)
        entry["files"].append(h5_out.name)
    for rec in records:
        onnx_out = None
        if "onnx" in formats:
            onnx_out = out_dir / (
                f"{name}.onnx" if len(records) == 1 else f"{name}.{rec.name}.onnx"
            )
            write_onnx(
                onnx_out, rec, opset=int(onnx_cfg["opset"]), ir_version=int(onnx_cfg["ir_version"])
            )
            entry["files"].append(onnx_out.name)
        if check.get("enabled", True):
            tol = float(check.get("tolerance", 1e-5))
            h5 = h5_out if "hdf5" in formats else None
            res = {
                "random": check_parity(
                    rec,
                    h5,
                    onnx_out,
                    random_states(rec.spec.n_inputs, int(check.get("random_states", 256))),
                    tol,
                )
            }
            real = real_states(rec, check)
            if real is not None and len(real):
                res["real"] = check_parity(rec, h5, onnx_out, real, tol)
            entry["parity"][rec.name] = res
    return entry


def run_export(cfg) -> dict:
    from falcon.config import to_plain
    from falcon.experiment import info

    c = to_plain(cfg)
    formats = c.get("formats") or []
    formats = [formats] if isinstance(formats, str) else list(formats)
    bad = [f for f in formats if f not in FORMATS]
    if not formats or bad:
        raise ConfigError(
            f"formats: expected a non-empty list of {list(FORMATS)}, got {c.get('formats')!r}"
        )
    names = c.get("names")
    names = [names] if isinstance(names, str) else names
    files = find_model_files(c["model"])
    out = (
        Path(c["output"])
        if c.get("output")
        else results_dir() / "export" / time.strftime("%Y%m%d-%H%M%S")
    )
    onnx_cfg = c.get("onnx") or {"opset": 17, "ir_version": 8}
    check = c.get("check") or {"enabled": False}
    summary = {
        "job": "export",
        "formats": formats,
        "onnx_opset": int(onnx_cfg["opset"]),
        "onnx_ir_version": int(onnx_cfg["ir_version"]),
        "exports": {},
    }
    from baselines.dqn.export import read_hdf5
    from baselines.gaps.export import is_gaps_file, read_weights
    from baselines.hybrid import export as hybrid_export

    for _, path in files:  # validate every input before anything is written
        if is_gaps_file(path):
            read_weights(path)
        elif hybrid_export.is_hybrid_file(path):
            hybrid_export.read_weights(path)
        else:
            read_hdf5(path, names=list(names) if names else None)
    with cli.staged_output(out) as tmp:
        for name, path in files:
            info(f"export: {path} -> {out}/{name}.* ({', '.join(formats)})")
            summary["exports"][name] = export_file(name, path, tmp, formats, names, onnx_cfg, check)
        (tmp / cli.OUTPUT_MARKER).write_text(json.dumps(summary, indent=2) + "\n")
    for name, e in summary["exports"].items():
        for model, res in e["parity"].items():
            worst = max(
                (v for r in res.values() for k, v in r.items() if k.endswith("_max_abs_diff")),
                default=0.0,
            )
            counts = ", ".join(f"{int(r['states'])} {k}" for k, r in res.items())
            info(
                f"  {name}/{model}: exports match the torch model (max |difference| {worst:.2g} on "
                f"{counts} states)"
            )
    print(
        json.dumps(
            {
                "output": str(out),
                "files": [f for e in summary["exports"].values() for f in e["files"]],
            }
        )
    )
    return summary


@hydra.main(config_path=str(CONFIG_DIR), config_name="export", version_base="1.3")
@cli.guard
def _hydra_main(cfg: DictConfig) -> None:
    run_export(cfg)


def main() -> None:
    cli.main(_hydra_main)


if __name__ == "__main__":
    main()


__all__ = ["main", "run_export", "export_file", "find_model_files", "real_states"]
