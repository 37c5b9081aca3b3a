"""Hybrid MPTCP model files: HDF5 (every weight of actor and critic) and ONNX (the actor), with independent readers.

HDF5 (``format = "falcon-hybrid"``, ``format_version = 1``)::

    /            attrs: format, format_version, framework_version, created,
                        kind ("hybrid"), inner_loop (whether trained with LIA between slots),
                        network (JSON: HybridNetConfig), hyperparameters (JSON), feature_names
    /actor/<name>    float32: the torch parameter ``<name>`` (PyTorch layout: a Linear's
    /critic/<name>   weight is [out, in]; ``lstm.weight_ih_l0`` [4H, F] with the gates i, f, g, o)

ONNX (the actor only): input ``state`` ``[batch, subflows, 6]`` (float32,
one row per subflow in path order, :mod:`baselines.hybrid.features`; every
row a real subflow), output ``window_exponent`` ``[batch, subflows]`` in
[-1, 1] (the transport sets ``cwnd_i <- cwnd_i x 2^a_i``); batch and
subflow count are dynamic. Built node by node at IR 8 / opset 17 as the
GAPS and DQN graphs: the ONNX ``LSTM`` operator (gates reordered to its
i, o, f, c), and the head's first layer split in two so that the final state
is broadcast over the subflows by an ``Add``.

Readers: :func:`numpy_actor` (the LSTM cell equations and the head written
out in NumPy on the HDF5 weights, sharing no code with torch) and
:func:`onnx_actor` (onnxruntime); :func:`check_parity` compares both with
the torch actor. Writes are atomic; unusable files raise a one-line
:class:`~baselines.dqn.files.ModelFileError`.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from baselines.dqn.export import ONNX_IR_VERSION, ONNX_OPSET
from baselines.dqn.files import (
    ModelFileError,
    atomic_path,
    framework_version,
    hdf5_error_line,
    load_weight_groups,
    open_hdf5_for_writing,
    read_weight_groups,
    write_header,
    write_weight_groups,
)
from baselines.hybrid.features import FEATURES
from baselines.hybrid.network import HybridNetConfig

FORMAT = "falcon-hybrid"
FORMAT_VERSION = 1
KIND = "hybrid"
INPUT_NAME = "state"
OUTPUT_NAME = "window_exponent"


# ------------------------------------------------------------------ HDF5
def write_hdf5(path, agent) -> Path:
    """Every weight of ``agent`` (a :class:`baselines.hybrid.agent.HybridMPTCP`), atomically."""
    path = Path(path)
    with atomic_path(path) as tmp:
        with open_hdf5_for_writing(tmp) as f:
            write_header(f, FORMAT, FORMAT_VERSION)
            f.attrs["kind"] = KIND
            f.attrs["inner_loop"] = bool(agent.inner_loop)
            f.attrs["network"] = json.dumps(agent.net_config.as_dict())
            f.attrs["hyperparameters"] = json.dumps(agent.hyperparameters())
            f.attrs["feature_names"] = list(FEATURES)
            write_weight_groups(f, {"actor": agent.ddpg.actor, "critic": agent.ddpg.critic})
    return path


def read_weights(path) -> tuple[HybridNetConfig, dict[str, dict[str, np.ndarray]], dict]:
    """``(network config, {"actor": {name: array}, "critic": {...}}, {"inner_loop": bool})`` of a
    Hybrid MPTCP HDF5 file, validated."""
    import h5py

    path = Path(path)
    if not path.is_file():
        raise ModelFileError(f"Hybrid MPTCP model {path}: no such file")
    try:
        with h5py.File(path, "r") as f:
            fmt = f.attrs.get("format")
            if fmt != FORMAT or f.attrs.get("kind") != KIND:
                raise ModelFileError(
                    f"Hybrid MPTCP model {path}: not a Hybrid MPTCP model file (format {fmt!r}, "
                    f"expected {FORMAT!r})"
                )
            if int(f.attrs.get("format_version", -1)) != FORMAT_VERSION:
                raise ModelFileError(
                    f"Hybrid MPTCP model {path}: unsupported format_version "
                    f"{f.attrs.get('format_version')!r} (this reader: {FORMAT_VERSION})"
                )
            try:
                cfg = HybridNetConfig(**json.loads(f.attrs["network"]))
            except Exception as e:  # KeyError, TypeError, ValueError, ConfigError
                raise ModelFileError(
                    f"Hybrid MPTCP model {path}: bad network attribute "
                    f"({' '.join(str(e).split())[:200]})"
                ) from None
            if cfg.n_features != len(FEATURES):
                raise ModelFileError(
                    f"Hybrid MPTCP model {path}: {cfg.n_features} features per subflow, "
                    f"this reader knows {len(FEATURES)}"
                )
            meta = {"inner_loop": bool(f.attrs.get("inner_loop", True))}
            try:  # what the actor's output means (older files: the paper's scale)
                meta["action"] = str(
                    json.loads(f.attrs.get("hyperparameters", "{}")).get("action", "scale")
                )
            except (TypeError, ValueError):
                meta["action"] = "scale"
            weights = read_weight_groups(f, ("actor", "critic"), f"Hybrid MPTCP model {path}")
    except ModelFileError:
        raise
    except Exception as e:  # h5py raises OSError/KeyError/... for damaged files
        raise ModelFileError(
            f"Hybrid MPTCP model {path}: cannot read it ({hdf5_error_line(e)})"
        ) from None
    _check_shapes(path, cfg, weights["actor"])
    for part in ("actor", "critic"):
        bad = [k for k, v in weights[part].items() if not np.all(np.isfinite(v))]
        if bad:
            raise ModelFileError(
                f"Hybrid MPTCP model {path}: /{part}/{bad[0]} holds NaN or infinite values"
            )
    return cfg, weights, meta


def _actor_shapes(cfg: HybridNetConfig) -> dict[str, tuple]:
    h, f = cfg.lstm_hidden, cfg.n_features
    shapes = {
        "lstm.weight_ih_l0": (4 * h, f),
        "lstm.weight_hh_l0": (4 * h, h),
        "lstm.bias_ih_l0": (4 * h,),
        "lstm.bias_hh_l0": (4 * h,),
    }
    sizes = [2 * h, *cfg.hidden, 1]
    for j in range(len(sizes) - 1):
        shapes[f"head.{2 * j}.weight"] = (sizes[j + 1], sizes[j])
        shapes[f"head.{2 * j}.bias"] = (sizes[j + 1],)
    return shapes


def _check_shapes(path, cfg: HybridNetConfig, actor: dict) -> None:
    want = _actor_shapes(cfg)
    if set(actor) != set(want):
        raise ModelFileError(
            f"Hybrid MPTCP model {path}: /actor holds other parameters than its network "
            f"(missing {sorted(set(want) - set(actor))}, unknown {sorted(set(actor) - set(want))})"
        )
    for name, shape in want.items():
        if actor[name].shape != shape:
            raise ModelFileError(
                f"Hybrid MPTCP model {path}: /actor/{name} has shape {actor[name].shape}, "
                f"expected {shape}"
            )


def read_into(path, agent) -> None:
    """Load a Hybrid MPTCP HDF5 file's weights into ``agent``; the network config must match."""
    cfg, weights, _ = read_weights(path)
    if cfg != agent.net_config:
        raise ModelFileError(
            f"Hybrid MPTCP model {path}: its network {cfg.as_dict()} differs from the agent's "
            f"{agent.net_config.as_dict()}"
        )
    load_weight_groups(agent.ddpg, weights, f"Hybrid MPTCP model {path}")


# ------------------------------------------------------------ NumPy reader
def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def numpy_actor(path, state) -> np.ndarray:
    """The actor's window exponents ``[B, S]`` for ``state`` ``[B, S, 6]`` (every row a
    subflow), computed in NumPy from the HDF5 file alone: per subflow t,
    ``z = W_ih x_t + b_ih + W_hh h + b_hh`` split into the gates i, f, g, o,
    ``c = sigmoid(f) c + sigmoid(i) tanh(g)``, ``h = sigmoid(o) tanh(c)``;
    then each subflow's head on ``[h_t, h_S]``."""
    cfg, weights, _ = read_weights(path)
    w = weights["actor"]
    x = np.asarray(state, np.float32)
    if x.ndim != 3 or x.shape[2] != cfg.n_features:
        raise ModelFileError(
            f"Hybrid MPTCP model {path}: expects states [batch, subflows, {cfg.n_features}], "
            f"got shape {x.shape}"
        )
    b, s, _ = x.shape
    hd = cfg.lstm_hidden
    h = np.zeros((b, hd), np.float32)
    c = np.zeros((b, hd), np.float32)
    outs = []
    for t in range(s):
        z = (
            x[:, t] @ w["lstm.weight_ih_l0"].T
            + w["lstm.bias_ih_l0"]
            + h @ w["lstm.weight_hh_l0"].T
            + w["lstm.bias_hh_l0"]
        )
        i, f, g, o = (z[:, k * hd : (k + 1) * hd] for k in range(4))
        c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
        h = _sigmoid(o) * np.tanh(c)
        outs.append(h)
    out = np.stack(outs, axis=1)  # [B, S, H]
    z = np.concatenate([out, np.broadcast_to(h[:, None, :], out.shape)], axis=-1)
    n = len(cfg.hidden) + 1
    for j in range(n):
        z = z @ w[f"head.{2 * j}.weight"].T + w[f"head.{2 * j}.bias"]
        if j < n - 1:
            z = np.maximum(z, 0.0)
    return np.tanh(z[..., 0]).astype(np.float32)


# ------------------------------------------------------------------ ONNX
def _onnx_actor_model(path, opset: int, ir_version: int):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    cfg, weights, meta = read_weights(path)
    w = weights["actor"]
    hd = cfg.lstm_hidden
    inits: list = []
    nodes: list = []

    def const(name, arr):
        inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def node(op, ins, out=None, n_out=1, **attrs):
        outs = (
            [out or f"t{len(nodes)}"]
            if n_out == 1
            else [f"t{len(nodes)}_{k}" for k in range(n_out)]
        )
        nodes.append(helper.make_node(op, ins, outs, name=f"n{len(nodes)}_{op}", **attrs))
        return outs[0] if n_out == 1 else outs

    def gates(arr):  # torch's i, f, g, o -> ONNX's i, o, f, c
        i, f, g, o = np.split(arr, 4, axis=0)
        return np.concatenate([i, o, f, g], axis=0)

    wi = const("lstm.W", gates(w["lstm.weight_ih_l0"])[None])
    ri = const("lstm.R", gates(w["lstm.weight_hh_l0"])[None])
    bi = const(
        "lstm.B", np.concatenate([gates(w["lstm.bias_ih_l0"]), gates(w["lstm.bias_hh_l0"])])[None]
    )
    seq = node("Transpose", [INPUT_NAME], perm=[1, 0, 2])  # [S, B, F]
    y, y_h = node("LSTM", [seq, wi, ri, bi], n_out=2, hidden_size=hd)  # [S, 1, B, H], [1, B, H]
    out = node(
        "Transpose",
        [node("Squeeze", [y, const("axes_1", np.array([1], np.int64))])],
        perm=[1, 0, 2],
    )  # [B, S, H]
    final = node("Transpose", [y_h], perm=[1, 0, 2])  # [B, 1, H]
    w0 = w["head.0.weight"]  # [h1, 2H]
    z = node(
        "Add",
        [
            node(
                "Add",
                [
                    node("MatMul", [out, const("head.0.weight_step_t", w0[:, :hd].T.copy())]),
                    node("MatMul", [final, const("head.0.weight_final_t", w0[:, hd:].T.copy())]),
                ],
            ),
            const("head.0.bias", w["head.0.bias"]),
        ],
    )
    n = len(cfg.hidden) + 1
    for j in range(1, n):
        z = node(
            "Add",
            [
                node(
                    "MatMul",
                    [
                        node("Relu", [z]),
                        const(f"head.{2 * j}.weight_t", w[f"head.{2 * j}.weight"].T.copy()),
                    ],
                ),
                const(f"head.{2 * j}.bias", w[f"head.{2 * j}.bias"]),
            ],
        )
    node("Squeeze", [node("Tanh", [z]), const("axes_2", np.array([2], np.int64))], out=OUTPUT_NAME)
    graph = helper.make_graph(
        nodes,
        "falcon_hybrid_actor",
        [
            helper.make_tensor_value_info(
                INPUT_NAME, TensorProto.FLOAT, ["batch", "subflows", cfg.n_features]
            )
        ],
        [helper.make_tensor_value_info(OUTPUT_NAME, TensorProto.FLOAT, ["batch", "subflows"])],
        initializer=inits,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", int(opset))],
        producer_name="falcon-mpsched",
        producer_version=framework_version(),
    )
    model.ir_version = int(ir_version)
    for k, val in {
        "format": "falcon-hybrid-onnx",
        "kind": KIND,
        "inner_loop": json.dumps(meta["inner_loop"]),
        "network": json.dumps(cfg.as_dict()),
        "feature_names": json.dumps(list(FEATURES)),
    }.items():
        prop = model.metadata_props.add()
        prop.key, prop.value = k, val
    onnx.checker.check_model(model)
    return model


def write_onnx(path, h5_path, opset: int = ONNX_OPSET, ir_version: int = ONNX_IR_VERSION) -> Path:
    """The actor of a Hybrid MPTCP HDF5 file as ONNX (module docstring), atomically."""
    model = _onnx_actor_model(h5_path, opset, ir_version)
    path = Path(path)
    with atomic_path(path) as tmp:
        tmp.write_bytes(model.SerializeToString())
    return path


def onnx_actor(path, state) -> np.ndarray:
    """The actor's window exponents from an ONNX file, with onnxruntime."""
    from baselines.dqn.export import ort_session

    sess = ort_session(path, inputs=(INPUT_NAME,), outputs=(OUTPUT_NAME,))
    return sess.run([OUTPUT_NAME], {INPUT_NAME: np.asarray(state, np.float32)})[0]


# ---------------------------------------------------------------- parity
def random_states(
    cfg: HybridNetConfig, n: int = 256, subflows=(1, 2, 3, 4, 8), seed: int = 0
) -> list[np.ndarray]:
    """Batches of ``n`` random states, one batch per subflow count, over the range the features take."""
    rng = np.random.default_rng(seed)
    lo = np.array([0.0, 0.0, 0.0, -2.0, 0.0, 0.0], np.float32)[: cfg.n_features]
    hi = np.array([1.5, 1.5, 3.0, 2.0, 1.0, 2.0], np.float32)[: cfg.n_features]
    return [rng.uniform(lo, hi, size=(n, s, cfg.n_features)).astype(np.float32) for s in subflows]


def torch_actor(agent, state) -> np.ndarray:
    import torch

    x = np.asarray(state, np.float32)
    agent.ddpg.actor.eval()
    with torch.no_grad():
        return agent.ddpg.actor(torch.from_numpy(x), torch.ones(x.shape[:2])).numpy()


def check_parity(agent, h5_path=None, onnx_path=None, states=None, tolerance: float = 1e-5) -> dict:
    """Max |difference| of the exported actors against the torch actor over
    ``states`` (a list of ``[B, S, 6]`` batches; default: :func:`random_states`);
    raises :class:`ModelFileError` above ``tolerance``."""
    batches = states if states is not None else random_states(agent.net_config)
    res = {"states": float(sum(len(x) for x in batches))}
    for key, fn, p in (("hdf5", numpy_actor, h5_path), ("onnx", onnx_actor, onnx_path)):
        if p is None:
            continue
        diff = max(float(np.max(np.abs(fn(p, x) - torch_actor(agent, x)))) for x in batches)
        res[f"{key}_max_abs_diff"] = diff
        if not diff <= tolerance:
            raise ModelFileError(
                f"Hybrid MPTCP export {p}: differs from the torch actor by {diff:.3g} "
                f"(tolerance {tolerance:g})"
            )
    return res


def is_hybrid_file(path) -> bool:
    """Whether ``path`` is an HDF5 file of this format (:func:`baselines.dqn.files.has_format`)."""
    from baselines.dqn.files import has_format

    return has_format(path, FORMAT)


__all__ = [
    "FORMAT",
    "KIND",
    "write_hdf5",
    "read_weights",
    "read_into",
    "numpy_actor",
    "write_onnx",
    "onnx_actor",
    "check_parity",
    "random_states",
    "torch_actor",
    "is_hybrid_file",
]
