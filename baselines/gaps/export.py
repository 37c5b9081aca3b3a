"""GAPS model files: HDF5 (every weight of actor and critic) and ONNX (the actor), with independent readers.

HDF5 (``format = "falcon-gaps"``, ``format_version = 1``)::

    /            attrs: format, format_version, framework_version, created,
                        network (JSON: GapsNetConfig), hyperparameters (JSON),
                        feature_names, mask_bias
    /actor/<name>    float32: the torch parameter ``<name>`` (PyTorch layout:
    /critic/<name>   a Linear's weight is [out, in]), e.g. ``encoder.layers.0.q.weight``

ONNX (the actor only, what a transport runs): inputs ``state`` ``[batch, S,
F]`` and ``mask`` ``[batch, S]`` (float32, 1 = a subflow, 0 = padding; tokens
in ascending sRTT order, :mod:`baselines.gaps.features`), output
``gap_change`` ``[batch, S]`` in [-1, 1] (0 for padding and for token 0,
the fastest subflow). Built node by node (``MatMul``, ``Add``, ``Softmax``,
``LayerNormalization``, ...) at IR 8 / opset 17, as the DQN's graph.

Readers: :func:`numpy_actor` (a NumPy forward pass of the HDF5 weights,
sharing no code with torch) and :func:`onnx_actor` (onnxruntime);
:func:`check_parity` compares both with the torch actor. Writes are atomic;
unusable files raise a one-line :class:`~baselines.dqn.files.ModelFileError`.
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
from baselines.gaps.features import FEATURES
from baselines.gaps.network import MASK_BIAS, GapsNetConfig

FORMAT = "falcon-gaps"
FORMAT_VERSION = 1
LN_EPS = 1e-5


# ------------------------------------------------------------------ HDF5
def write_hdf5(path, agent) -> Path:
    """Every weight of ``agent`` (a :class:`baselines.gaps.agent.GAPS`), atomically."""
    path = Path(path)
    with atomic_path(path) as tmp:
        with open_hdf5_for_writing(tmp) as f:
            write_header(f, FORMAT, FORMAT_VERSION)
            f.attrs["network"] = json.dumps(agent.net_config.as_dict())
            f.attrs["hyperparameters"] = json.dumps(agent.hyperparameters())
            f.attrs["feature_names"] = list(FEATURES)
            f.attrs["mask_bias"] = MASK_BIAS
            write_weight_groups(f, {"actor": agent.ddpg.actor, "critic": agent.ddpg.critic})
    return path


def read_weights(path) -> tuple[GapsNetConfig, dict[str, dict[str, np.ndarray]]]:
    """``(network config, {"actor": {name: array}, "critic": {...}})`` of a GAPS HDF5 file, validated."""
    import h5py

    path = Path(path)
    if not path.is_file():
        raise ModelFileError(f"GAPS model {path}: no such file")
    try:
        with h5py.File(path, "r") as f:
            fmt = f.attrs.get("format")
            if fmt != FORMAT:
                raise ModelFileError(
                    f"GAPS model {path}: not a GAPS model file (format {fmt!r}, expected {FORMAT!r})"
                )
            if int(f.attrs.get("format_version", -1)) != FORMAT_VERSION:
                raise ModelFileError(
                    f"GAPS model {path}: unsupported format_version "
                    f"{f.attrs.get('format_version')!r} (this reader: {FORMAT_VERSION})"
                )
            try:
                cfg = GapsNetConfig(**json.loads(f.attrs["network"]))
            except (KeyError, TypeError, ValueError) as e:
                raise ModelFileError(f"GAPS model {path}: bad network attribute ({e})") from None
            weights = read_weight_groups(f, ("actor", "critic"), f"GAPS model {path}")
    except ModelFileError:
        raise
    except Exception as e:  # h5py raises OSError/KeyError/... for damaged files
        raise ModelFileError(f"GAPS model {path}: cannot read it ({hdf5_error_line(e)})") from None
    return cfg, weights


def read_into(path, agent) -> None:
    """Load a GAPS HDF5 file's weights into ``agent``; the network config must match."""
    cfg, weights = read_weights(path)
    if cfg != agent.net_config:
        raise ModelFileError(
            f"GAPS model {path}: its network {cfg.as_dict()} differs from the agent's "
            f"{agent.net_config.as_dict()}"
        )
    load_weight_groups(agent.ddpg, weights, f"GAPS model {path}")


# ------------------------------------------------------------ NumPy reader
def _layer_norm(x, g, b):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + LN_EPS) * g + b


def numpy_actor(path, state, mask) -> np.ndarray:
    """The actor's output ``[B, S]`` for ``state`` ``[B, S, F]`` and ``mask``
    ``[B, S]``, computed in float32 NumPy from the HDF5 file alone."""
    cfg, weights = read_weights(path)
    w = weights["actor"]
    x = np.asarray(state, np.float32)
    m = np.asarray(mask, np.float32)

    def lin(h, name):
        return h @ w[f"{name}.weight"].T + w[f"{name}.bias"]

    h = lin(x, "encoder.embed") + w["encoder.position"]
    bias = ((1.0 - m) * np.float32(MASK_BIAS))[:, None, None, :]
    b, s, d = h.shape
    heads, dh = cfg.heads, d // cfg.heads
    for i in range(cfg.layers):
        p = f"encoder.layers.{i}"

        def split(t):
            return t.reshape(b, s, heads, dh).transpose(0, 2, 1, 3)

        q, k, v = split(lin(h, f"{p}.q")), split(lin(h, f"{p}.k")), split(lin(h, f"{p}.v"))
        sc = q @ k.transpose(0, 1, 3, 2) / np.float32(np.sqrt(dh)) + bias
        sc = np.exp(sc - sc.max(-1, keepdims=True))
        att = sc / sc.sum(-1, keepdims=True)
        ctx = (att @ v).transpose(0, 2, 1, 3).reshape(b, s, d)
        h = _layer_norm(h + lin(ctx, f"{p}.o"), w[f"{p}.norm1.weight"], w[f"{p}.norm1.bias"])
        ff = lin(np.maximum(lin(h, f"{p}.ff1"), 0.0), f"{p}.ff2")
        h = _layer_norm(h + ff, w[f"{p}.norm2.weight"], w[f"{p}.norm2.bias"])
    n = len(cfg.actor_hidden) + 1
    for j in range(n):
        h = lin(h, f"head.{2 * j}")
        if j < n - 1:
            h = np.maximum(h, 0.0)
    return np.tanh(h[..., 0]) * m * w["controllable"]


# ------------------------------------------------------------------ ONNX
def _onnx_actor_model(path, opset: int, ir_version: int):
    from onnx import helper, numpy_helper

    cfg, weights = read_weights(path)
    w = weights["actor"]
    inits: list = []
    nodes: list = []

    def const(name, arr):
        inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def node(op, ins, out=None, **attrs):
        out = out or f"t{len(nodes)}"
        nodes.append(helper.make_node(op, ins, [out], name=f"n{len(nodes)}_{op}", **attrs))
        return out

    def lin(x, name):
        wt = const(f"{name}.weight_t", w[f"{name}.weight"].T.copy())
        return node("Add", [node("MatMul", [x, wt]), const(f"{name}.bias", w[f"{name}.bias"])])

    d, heads = cfg.d_model, cfg.heads
    dh = d // heads
    h = node(
        "Add", [lin("state", "encoder.embed"), const("encoder.position", w["encoder.position"])]
    )
    neg = node(
        "Mul",
        [
            node("Sub", [const("one", np.float32(1.0)), "mask"]),
            const("mask_bias", np.float32(MASK_BIAS)),
        ],
    )
    bias = node("Unsqueeze", [neg, const("axes_12", np.array([1, 2], np.int64))])
    heads_shape = const("heads_shape", np.array([0, 0, heads, dh], np.int64))
    model_shape = const("model_shape", np.array([0, 0, d], np.int64))
    scale = const("inv_sqrt_dh", np.float32(1.0 / np.sqrt(dh)))
    for i in range(cfg.layers):
        p = f"encoder.layers.{i}"
        q = node("Transpose", [node("Reshape", [lin(h, f"{p}.q"), heads_shape])], perm=[0, 2, 1, 3])
        kt = node(
            "Transpose", [node("Reshape", [lin(h, f"{p}.k"), heads_shape])], perm=[0, 2, 3, 1]
        )
        v = node("Transpose", [node("Reshape", [lin(h, f"{p}.v"), heads_shape])], perm=[0, 2, 1, 3])
        sc = node("Add", [node("Mul", [node("MatMul", [q, kt]), scale]), bias])
        ctx = node("MatMul", [node("Softmax", [sc], axis=-1), v])
        ctx = node("Reshape", [node("Transpose", [ctx], perm=[0, 2, 1, 3]), model_shape])
        h = node(
            "LayerNormalization",
            [
                node("Add", [h, lin(ctx, f"{p}.o")]),
                const(f"{p}.norm1.weight", w[f"{p}.norm1.weight"]),
                const(f"{p}.norm1.bias", w[f"{p}.norm1.bias"]),
            ],
            axis=-1,
            epsilon=LN_EPS,
        )
        ff = lin(node("Relu", [lin(h, f"{p}.ff1")]), f"{p}.ff2")
        h = node(
            "LayerNormalization",
            [
                node("Add", [h, ff]),
                const(f"{p}.norm2.weight", w[f"{p}.norm2.weight"]),
                const(f"{p}.norm2.bias", w[f"{p}.norm2.bias"]),
            ],
            axis=-1,
            epsilon=LN_EPS,
        )
    n = len(cfg.actor_hidden) + 1
    for j in range(n):
        h = lin(h, f"head.{2 * j}")
        if j < n - 1:
            h = node("Relu", [h])
    out = node("Squeeze", [node("Tanh", [h]), const("axes_2", np.array([2], np.int64))])
    node(
        "Mul",
        [node("Mul", [out, "mask"]), const("controllable", w["controllable"])],
        out="gap_change",
    )
    return _actor_model(nodes, inits, cfg, opset, ir_version)


def _actor_model(nodes: list, inits: list, cfg: GapsNetConfig, opset: int, ir_version: int):
    """The checked ONNX model of the actor graph ``nodes`` (inputs ``state`` and ``mask``,
    output ``gap_change``) with its initialisers and the falcon-gaps-onnx metadata."""
    import onnx
    from onnx import TensorProto, helper

    s = cfg.max_subflows
    graph = helper.make_graph(
        nodes,
        "falcon_gaps_actor",
        [
            helper.make_tensor_value_info("state", TensorProto.FLOAT, ["batch", s, cfg.n_features]),
            helper.make_tensor_value_info("mask", TensorProto.FLOAT, ["batch", s]),
        ],
        [helper.make_tensor_value_info("gap_change", TensorProto.FLOAT, ["batch", s])],
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
        "format": "falcon-gaps-onnx",
        "network": json.dumps(cfg.as_dict()),
        "feature_names": json.dumps(list(FEATURES)),
    }.items():
        prop = model.metadata_props.add()
        prop.key, prop.value = k, val
    onnx.checker.check_model(model)
    return model


def write_onnx(path, h5_path, opset: int = ONNX_OPSET, ir_version: int = ONNX_IR_VERSION) -> Path:
    """The actor of a GAPS HDF5 file as ONNX (module docstring), atomically."""
    model = _onnx_actor_model(h5_path, opset, ir_version)
    path = Path(path)
    with atomic_path(path) as tmp:
        tmp.write_bytes(model.SerializeToString())
    return path


def onnx_actor(path, state, mask) -> np.ndarray:
    """The actor's output from an ONNX file, with onnxruntime."""
    from baselines.dqn.export import ort_session

    sess = ort_session(path, inputs=("state", "mask"), outputs=("gap_change",))
    return sess.run(
        ["gap_change"],
        {"state": np.asarray(state, np.float32), "mask": np.asarray(mask, np.float32)},
    )[0]


# ---------------------------------------------------------------- parity
def random_states(cfg: GapsNetConfig, n: int = 256, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``n`` states over the range the features take, 2 to S subflows each."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.0, 2.0, size=(n, cfg.max_subflows, cfg.n_features)).astype(np.float32)
    k = rng.integers(2, cfg.max_subflows + 1, size=n)
    mask = (np.arange(cfg.max_subflows)[None, :] < k[:, None]).astype(np.float32)
    return x * mask[..., None], mask


def torch_actor(agent, state, mask) -> np.ndarray:
    import torch

    agent.ddpg.actor.eval()
    with torch.no_grad():
        return agent.ddpg.actor(
            torch.from_numpy(np.asarray(state, np.float32)),
            torch.from_numpy(np.asarray(mask, np.float32)),
        ).numpy()


def check_parity(agent, h5_path=None, onnx_path=None, states=None, tolerance: float = 1e-5) -> dict:
    """Max |difference| of the exported actors against the torch actor; raises
    :class:`ModelFileError` above ``tolerance``."""
    x, m = states if states is not None else random_states(agent.net_config)
    ref = torch_actor(agent, x, m)
    res = {"states": float(len(x))}
    for key, fn, p in (("hdf5", numpy_actor, h5_path), ("onnx", onnx_actor, onnx_path)):
        if p is None:
            continue
        diff = float(np.max(np.abs(fn(p, x, m) - ref)))
        res[f"{key}_max_abs_diff"] = diff
        if not diff <= tolerance:
            raise ModelFileError(
                f"GAPS export {p}: differs from the torch actor by {diff:.3g} "
                f"(tolerance {tolerance:g})"
            )
    return res


def is_gaps_file(path) -> bool:
    """Whether ``path`` is an HDF5 file of this format (:func:`baselines.dqn.files.has_format`)."""
    from baselines.dqn.files import has_format

    return has_format(path, FORMAT)


__all__ = [
    "FORMAT",
    "write_hdf5",
    "read_weights",
    "read_into",
    "numpy_actor",
    "write_onnx",
    "onnx_actor",
    "check_parity",
    "random_states",
    "torch_actor",
    "is_gaps_file",
]
