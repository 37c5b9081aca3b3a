"""Model files: HDF5 (the native layout, one file for one model or a whole
bank) and ONNX (for transport implementations), with independent readers.

Layout and I/O are documented in ``docs/reference/formats/model_formats.md``. In short:

HDF5 (``format = "falcon-qnet"``, ``format_version = 1``)::

    /                          attrs: format, format_version, framework_version, created,
                                      n_models, model_names, (free-form file attributes)
    /models/<name>/            attrs: input_size, output_size, hidden, layer_order,
                                      activations, feature_names, (free-form attributes)
    /models/<name>/dense_<i>/kernel   [in, out] float32   y = x @ kernel + bias
    /models/<name>/dense_<i>/bias     [out]     float32
    /models/<name>/normalisation/offset, scale   [input_size] float32: x <- (x - offset) / scale
                               attrs: formula, rtt_scale_s, rate_scale_pkts, obs_high,
                                      features_per_path (the environment's state scaling)

ONNX: one graph per model, input ``state`` ``[batch, input_size]`` float32,
output ``q_values`` ``[batch, output_size]`` float32, ``batch`` dynamic;
nodes ``Sub``/``Div`` (normalisation), then ``Gemm`` (+ ``Relu``) per layer.
Written at ``ir_version`` 8 and opset 17 by default (the ONNX 1.12 pair),
which every onnxruntime since 1.12 loads; the installed onnx would default to
IR 14, which the installed onnxruntime (1.31) refuses (it reads IR <= 13).

Readers: :func:`read_hdf5` (h5py, validated), :func:`hdf5_forward` (a NumPy
forward pass that follows the file's ``layer_order`` and ``activations``
attributes, sharing no code with the torch model), :func:`onnx_q_values`
(onnxruntime). :func:`check_parity` compares the three with the torch
model. Writes are atomic (temporary file + rename); unusable files raise a
one-line :class:`~baselines.dqn.files.ModelFileError`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from baselines.dqn.files import (
    ModelFileError,
    atomic_path,
    dataset_options,
    framework_version,
    hdf5_error_line,
    integer_attribute,
    open_hdf5_for_writing,
    write_header,
)
from baselines.dqn.network import ACTIVATIONS, QNetSpec
from envs.mdp import (
    FEATURES,
    OBS_HIGH,
    RATE_SCALE_PKTS,
    RTT_SCALE_S,
    feature_names,
    reward_of_inputs,
)

FORMAT = "falcon-qnet"
FORMAT_VERSION = 1
ONNX_OPSET = 17
ONNX_IR_VERSION = 8
INPUT_NAME = "state"
OUTPUT_NAME = "q_values"
NORMALISATION_FORMULA = "(x - offset) / scale"
#: parity tolerance of the exports against the torch model (max abs Q-value difference)
PARITY_TOL = 1e-5

__all__ = [
    "ModelRecord",
    "ModelFileError",
    "write_hdf5",
    "read_hdf5",
    "hdf5_forward",
    "write_onnx",
    "onnx_q_values",
    "torch_q_values",
    "check_parity",
    "max_onnx_ir_version",
    "FORMAT",
    "FORMAT_VERSION",
    "ONNX_OPSET",
    "ONNX_IR_VERSION",
    "INPUT_NAME",
    "OUTPUT_NAME",
]


@dataclass
class ModelRecord:
    """One Q-network: architecture, weights ``[W0, b0, ...]`` (``W`` ``[in,
    out]``) and free-form attributes (strings, numbers, lists of them)."""

    name: str
    spec: QNetSpec
    weights: list[np.ndarray]
    attrs: dict = field(default_factory=dict)

    def __post_init__(self):
        if not self.name or "/" in self.name or self.name in (".", ".."):
            raise ModelFileError(f"model name {self.name!r}: must be non-empty and contain no '/'")
        sizes = self.spec.layer_sizes
        if len(self.weights) != 2 * len(sizes):
            raise ModelFileError(
                f"model {self.name!r}: {len(self.weights)} weight arrays for {len(sizes)} layers"
            )
        for i, (fi, fo) in enumerate(sizes):
            w, b = self.weights[2 * i], self.weights[2 * i + 1]
            if tuple(np.shape(w)) != (fi, fo) or tuple(np.shape(b)) != (fo,):
                raise ModelFileError(
                    f"model {self.name!r}: layer {i} has kernel {np.shape(w)} and bias "
                    f"{np.shape(b)}, expected ({fi}, {fo}) and ({fo},)"
                )


def _attr_value(v):
    if isinstance(v, str | int | float | bool | np.integer | np.floating):
        return v
    if v is None:
        return "null"
    if isinstance(v, list | tuple) and all(isinstance(x, str) for x in v) and v:
        return [str(x) for x in v]
    if (
        isinstance(v, list | tuple)
        and all(isinstance(x, int | float) and not isinstance(x, bool) for x in v)
        and v
    ):
        return np.asarray(v)
    return json.dumps(v, default=str)


def _str(v) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


# ------------------------------------------------------------------ HDF5
def write_hdf5(path, records: list[ModelRecord], file_attrs: dict | None = None) -> Path:
    """Write models to one HDF5 file (layout: module docstring), atomically."""

    if not records:
        raise ModelFileError("no model to write")
    names = [r.name for r in records]
    if len(set(names)) != len(names):
        raise ModelFileError(f"duplicate model names in {names}")
    path = Path(path)
    with atomic_path(path) as tmp:
        with open_hdf5_for_writing(tmp) as f:
            write_header(f, FORMAT, FORMAT_VERSION)
            f.attrs["n_models"] = len(records)
            f.attrs["model_names"] = names
            for k, v in (file_attrs or {}).items():
                f.attrs[k] = _attr_value(v)
            models = f.create_group("models")
            for rec in records:
                spec = rec.spec
                g = models.create_group(rec.name)
                layer_names = [f"dense_{i}" for i in range(len(spec.layer_sizes))]
                g.attrs["input_size"] = spec.n_inputs
                g.attrs["output_size"] = spec.n_actions
                g.attrs["hidden"] = np.asarray(spec.hidden, np.int64)
                g.attrs["layer_order"] = layer_names
                g.attrs["activations"] = spec.activations
                g.attrs["feature_names"] = input_names(spec)
                for k, v in rec.attrs.items():
                    if k in g.attrs:
                        continue
                    g.attrs[k] = _attr_value(v)
                for i, ln in enumerate(layer_names):
                    lg = g.create_group(ln)
                    kernel = np.asarray(rec.weights[2 * i], np.float32)
                    bias = np.asarray(rec.weights[2 * i + 1], np.float32)
                    lg.create_dataset("kernel", data=kernel, **dataset_options(kernel))
                    lg.create_dataset("bias", data=bias, **dataset_options(bias))
                    lg.attrs["activation"] = spec.activations[i]
                    lg.attrs["units"] = spec.layer_sizes[i][1]
                ng = g.create_group("normalisation")
                offset, scale = spec.offset_array(), spec.scale_array()
                ng.create_dataset("offset", data=offset, **dataset_options(offset))
                ng.create_dataset("scale", data=scale, **dataset_options(scale))
                ng.attrs["formula"] = NORMALISATION_FORMULA
                ng.attrs["rtt_scale_s"] = RTT_SCALE_S
                ng.attrs["rate_scale_pkts"] = RATE_SCALE_PKTS
                ng.attrs["obs_high"] = OBS_HIGH
                ng.attrs["features_per_path"] = list(FEATURES)
    return path


def _open_h5(path):
    import h5py

    path = Path(path)
    if not path.is_file():
        raise ModelFileError(f"model file {path}: no such file")
    try:
        return h5py.File(path, "r")
    except OSError as e:
        raise ModelFileError(
            f"model file {path}: not a readable HDF5 file ({str(e).splitlines()[0]})"
        ) from None


def _check_header(f, path) -> None:
    fmt = _str(f.attrs.get("format", ""))
    if fmt != FORMAT:
        raise ModelFileError(
            f"model file {path}: not a FALCON Q-network file (format attribute "
            f"{fmt!r}, expected {FORMAT!r})"
        )
    try:
        version = integer_attribute(f.attrs.get("format_version", -1), "format_version")
    except ValueError as e:
        raise ModelFileError(f"model file {path}: {e}") from None
    if version < 1 or version > FORMAT_VERSION:
        raise ModelFileError(
            f"model file {path}: format version {version} is not supported "
            f"(this reader: {FORMAT_VERSION})"
        )
    if "models" not in f:
        raise ModelFileError(f"model file {path}: no /models group")


def _read_model(g, name: str, path) -> ModelRecord:
    where = f"model file {path}, model {name!r}"
    all_attrs = dict(g.attrs.items())  # one pass over the attributes (h5py: ~0.1 ms per access)
    try:
        n_in = integer_attribute(all_attrs["input_size"], "input_size")
        n_out = integer_attribute(all_attrs["output_size"], "output_size")
        order = [_str(x) for x in all_attrs["layer_order"]]
        acts = [_str(x) for x in all_attrs["activations"]]
    except KeyError as e:
        raise ModelFileError(f"{where}: missing attribute {e}") from None
    except (ValueError, TypeError) as e:
        raise ModelFileError(f"{where}: {e}") from None
    if len(order) != len(acts) or not order:
        raise ModelFileError(f"{where}: {len(order)} layers but {len(acts)} activations")
    weights = []
    prev = n_in
    for ln in order:
        lg = g.get(ln)  # one lookup per object: h5py lookups dominate a bank's read
        kd, bd = (None, None) if lg is None else (lg.get("kernel"), lg.get("bias"))
        if kd is None or bd is None:
            raise ModelFileError(f"{where}: layer {ln!r} (kernel and bias) is missing")
        try:
            w = kd[()]
            b = bd[()]
        except OSError as e:
            raise ModelFileError(
                f"{where}: layer {ln!r} is unreadable ({str(e).splitlines()[0]})"
            ) from None
        if w.dtype.kind != "f" or b.dtype.kind != "f":
            raise ModelFileError(
                f"{where}: layer {ln!r} holds {w.dtype} / {b.dtype}, expected floating point"
            )
        if w.ndim != 2 or b.ndim != 1 or w.shape[0] != prev or w.shape[1] != b.shape[0]:
            raise ModelFileError(
                f"{where}: layer {ln!r} has kernel {w.shape} and bias {b.shape}, which "
                f"do not chain from input size {prev}"
            )
        if not (np.isfinite(w).all() and np.isfinite(b).all()):
            raise ModelFileError(f"{where}: layer {ln!r} holds non-finite values")
        prev = w.shape[1]
        weights += [w.astype(np.float32), b.astype(np.float32)]
    if prev != n_out:
        raise ModelFileError(
            f"{where}: the last layer has {prev} outputs, output_size says {n_out}"
        )
    hidden_acts = acts[:-1]
    if (
        acts[-1] != "linear"
        or any(a not in ACTIVATIONS for a in hidden_acts)
        or len(set(hidden_acts)) > 1
    ):
        raise ModelFileError(
            f"{where}: unsupported activations {acts} (hidden: one of "
            f"{list(ACTIVATIONS)}; output: linear)"
        )
    offset = scale = None
    if "normalisation" in g:
        ng = g["normalisation"]
        try:
            off, sc = ng["offset"][()], ng["scale"][()]
        except KeyError as e:
            raise ModelFileError(f"{where}: normalisation is missing {e}") from None
        if off.shape != (n_in,) or sc.shape != (n_in,) or not (sc > 0).all():
            raise ModelFileError(
                f"{where}: normalisation offset/scale must have {n_in} entries, scale > 0"
            )
        if not (np.all(off == 0) and np.all(sc == 1)):
            offset, scale = tuple(float(x) for x in off), tuple(float(x) for x in sc)
    spec = QNetSpec(
        n_in,
        n_out,
        tuple(w.shape[1] for w in weights[0:-2:2]),
        hidden_acts[0] if hidden_acts else "relu",
        offset,
        scale,
    )
    skip = {"input_size", "output_size", "hidden", "layer_order", "activations"}
    attrs = {}
    for k, v in all_attrs.items():
        if k in skip:
            continue
        attrs[k] = (
            [_str(x) for x in v]
            if isinstance(v, np.ndarray) and v.dtype.kind in "OSU"
            else (
                v.tolist()
                if isinstance(v, np.ndarray)
                else (_str(v) if isinstance(v, bytes | str) else v)
            )
        )
    return ModelRecord(name=name, spec=spec, weights=weights, attrs=attrs)


def read_hdf5(path, names: list[str] | None = None) -> list[ModelRecord]:
    """Read (and validate) the models of an HDF5 model file, in file order;
    a damaged file raises a one-line :class:`ModelFileError`."""
    try:
        return _read_models(path, names)
    except ModelFileError:
        raise
    except (OSError, KeyError, ValueError, TypeError, RuntimeError, IndexError) as e:
        # h5py's own errors on damaged structure (a failed checksum, a bad
        # heap pointer, a wrong dtype where a number belongs)
        raise ModelFileError(
            f"model file {path}: damaged or incomplete ({hdf5_error_line(e)})"
        ) from None


def _read_models(path, names: list[str] | None) -> list[ModelRecord]:
    with _open_h5(path) as f:
        _check_header(f, path)
        stored = [_str(x) for x in f.attrs.get("model_names", list(f["models"].keys()))]
        if names is not None:
            missing = [n for n in names if n not in stored]
            if missing:
                raise ModelFileError(f"model file {path}: no model(s) {missing}; it holds {stored}")
            stored = list(names)
        if not stored:
            raise ModelFileError(f"model file {path}: holds no model")
        out = []
        for name in stored:
            if name not in f["models"]:
                raise ModelFileError(f"model file {path}: model {name!r} is listed but missing")
            out.append(_read_model(f["models"][name], name, path))
        return out


def hdf5_forward(path, states, name: str | None = None) -> np.ndarray:
    """Q-values of ``states`` ``[B, input_size]`` computed straight from the
    HDF5 datasets with NumPy in the stored precision (float32), following the
    file's ``layer_order``/``activations`` attributes: an independent reader."""
    with _open_h5(path) as f:
        _check_header(f, path)
        models = f["models"]
        name = name if name is not None else _str(f.attrs["model_names"][0])
        if name not in models:
            raise ModelFileError(f"model file {path}: no model {name!r}")
        g = models[name]
        x = np.asarray(states, np.float32)
        if "normalisation" in g:
            x = (x - g["normalisation"]["offset"][()]) / g["normalisation"]["scale"][()]
        for ln, act in zip(g.attrs["layer_order"], g.attrs["activations"]):
            lg = g[_str(ln)]
            x = x @ lg["kernel"][()] + lg["bias"][()]
            act = _str(act)
            if act == "relu":
                x = np.maximum(x, 0.0)
            elif act != "linear":
                raise ModelFileError(f"model file {path}: unknown activation {act!r}")
        return x


# ------------------------------------------------------------------ ONNX
def _onnx_model(rec: ModelRecord, opset: int, ir_version: int):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    spec = rec.spec
    inits = [
        numpy_helper.from_array(spec.offset_array(), "norm_offset"),
        numpy_helper.from_array(spec.scale_array(), "norm_scale"),
    ]
    nodes = [
        helper.make_node("Sub", [INPUT_NAME, "norm_offset"], ["x_centred"], name="norm_sub"),
        helper.make_node("Div", ["x_centred", "norm_scale"], ["x_0"], name="norm_div"),
    ]
    x = "x_0"
    n = len(spec.layer_sizes)
    for i in range(n):
        w, b = f"dense_{i}_kernel", f"dense_{i}_bias"
        inits += [
            numpy_helper.from_array(np.asarray(rec.weights[2 * i], np.float32), w),
            numpy_helper.from_array(np.asarray(rec.weights[2 * i + 1], np.float32), b),
        ]
        y = OUTPUT_NAME if i == n - 1 else f"z_{i + 1}"
        nodes.append(helper.make_node("Gemm", [x, w, b], [y], name=f"dense_{i}"))
        if i < n - 1:
            nodes.append(helper.make_node("Relu", [y], [f"x_{i + 1}"], name=f"relu_{i}"))
            x = f"x_{i + 1}"
    graph = helper.make_graph(
        nodes,
        f"falcon_qnet_{rec.name}",
        [helper.make_tensor_value_info(INPUT_NAME, TensorProto.FLOAT, ["batch", spec.n_inputs])],
        [helper.make_tensor_value_info(OUTPUT_NAME, TensorProto.FLOAT, ["batch", spec.n_actions])],
        initializer=inits,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", int(opset))],
        producer_name="falcon-mpsched",
        producer_version=framework_version(),
    )
    model.ir_version = int(ir_version)
    meta = {
        "format": "falcon-qnet-onnx",
        "model_name": rec.name,
        "input_size": str(spec.n_inputs),
        "output_size": str(spec.n_actions),
        "hidden": json.dumps(list(spec.hidden)),
        "feature_names": json.dumps(input_names(spec)),
        "normalisation": NORMALISATION_FORMULA,
        "rtt_scale_s": str(RTT_SCALE_S),
        "rate_scale_pkts": str(RATE_SCALE_PKTS),
    }
    for k, v in meta.items():
        p = model.metadata_props.add()
        p.key, p.value = k, v
    onnx.checker.check_model(model)
    return model


def write_onnx(
    path, rec: ModelRecord, opset: int = ONNX_OPSET, ir_version: int = ONNX_IR_VERSION
) -> Path:
    """Write one model as ONNX (I/O: module docstring), atomically."""
    model = _onnx_model(rec, opset, ir_version)
    path = Path(path)
    with atomic_path(path) as tmp:
        tmp.write_bytes(model.SerializeToString())
    return path


def ort_session(path, inputs=(INPUT_NAME,), outputs=(OUTPUT_NAME,)):
    """An onnxruntime session of an ONNX model file whose inputs and outputs
    are named ``inputs`` and ``outputs`` (a Q-network's by default), or a
    one-line :class:`ModelFileError`."""
    import onnxruntime as ort

    path = Path(path)
    if not path.is_file():
        raise ModelFileError(f"ONNX model {path}: no such file")
    try:
        sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    except Exception as e:  # onnxruntime raises its own exception types
        msg = " ".join(str(e).split())
        raise ModelFileError(
            f"ONNX model {path}: onnxruntime cannot load it ({msg[:200]})"
        ) from None
    ins, outs = sess.get_inputs(), sess.get_outputs()
    if [i.name for i in ins] != list(inputs) or [o.name for o in outs] != list(outputs):
        raise ModelFileError(
            f"ONNX model {path}: expected input {inputs[0] if len(inputs) == 1 else list(inputs)!r} "
            f"and output {outputs[0] if len(outputs) == 1 else list(outputs)!r}, "
            f"found {[i.name for i in ins]} -> {[o.name for o in outs]}"
        )
    return sess


def onnx_q_values(path, states) -> np.ndarray:
    """Q-values of ``states`` ``[B, input_size]`` from an ONNX file, with onnxruntime."""
    sess = ort_session(path)
    x = np.asarray(states, np.float32)
    width = sess.get_inputs()[0].shape[1]
    if x.ndim != 2 or (isinstance(width, int) and x.shape[1] != width):
        raise ModelFileError(
            f"ONNX model {path}: expects states of width {width}, got shape {x.shape}"
        )
    return sess.run([OUTPUT_NAME], {INPUT_NAME: x})[0]


def max_onnx_ir_version() -> int:
    """The highest ONNX IR version the installed onnxruntime loads (probed)."""
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper

    best = 0
    for ir in range(3, onnx.IR_VERSION + 1):
        g = helper.make_graph(
            [helper.make_node("Relu", ["x"], ["y"])],
            "probe",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
        )
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", ONNX_OPSET)])
        m.ir_version = ir
        try:
            ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
            best = ir
        except Exception:
            pass
    return best


# ------------------------------------------------------------------ parity
def torch_q_values(rec: ModelRecord, states) -> np.ndarray:
    """Q-values of the torch model (:func:`baselines.dqn.network.q_values`) of a record."""
    import torch

    from baselines.dqn.network import q_values

    params = [torch.as_tensor(np.asarray(w, np.float32)).unsqueeze(0) for w in rec.weights]
    x = torch.as_tensor(np.asarray(states, np.float32)).unsqueeze(0)
    with torch.no_grad():
        return q_values(params, x, rec.spec)[0].numpy()


def input_names(spec: QNetSpec) -> list[str]:
    """Names of a network's inputs: the MDP's feature names when its input
    size is one of :mod:`envs.mdp`'s for its number of paths, else ``x0, x1, ...``."""
    reward = reward_of_inputs(spec.n_inputs, spec.n_actions)
    if reward is None:
        return [f"x{i}" for i in range(spec.n_inputs)]
    return feature_names(spec.n_actions, reward)


def random_states(n_inputs: int, n: int = 256, seed: int = 0) -> np.ndarray:
    """Random states over the range FALCON states take (window rates 0-12,
    i.e. up to a saturated ~1.3 Gbit/s path; RTT 0.05-6, i.e. 5-600 ms), and
    the all-zero state."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.0, 12.0, (n, n_inputs)).astype(np.float32)
    if n_inputs % 4 == 0:
        x[:, 3::4] = rng.uniform(0.05, 6.0, (n, n_inputs // 4))
    x[0] = 0.0
    return x


def check_parity(
    rec: ModelRecord, h5_path=None, onnx_path=None, states=None, tol: float = PARITY_TOL
) -> dict[str, float]:
    """Compare the torch model's Q-values with the HDF5 (NumPy) and ONNX
    (onnxruntime) readers' on ``states`` (random states when None). Returns
    the max abs differences; raises :class:`ModelFileError` above ``tol``
    times the Q-values' scale, ``max(1, max |Q|)``: float32 Q-values of a
    few thousand differ by ~1e-3 between summation orders (their spacing is
    ~5e-4), so a purely absolute bound would reject exact exports."""
    x = random_states(rec.spec.n_inputs) if states is None else np.asarray(states, np.float32)
    ref = torch_q_values(rec, x).astype(np.float64)
    out = {"states": float(len(x)), "q_abs_max": float(np.abs(ref).max()) if len(ref) else 0.0}
    for key, path, fn in (
        ("hdf5", h5_path, lambda p: hdf5_forward(p, x, rec.name)),
        ("onnx", onnx_path, lambda p: onnx_q_values(p, x)),
    ):
        if path is None:
            continue
        q = np.asarray(fn(path), np.float64)
        if q.shape != ref.shape:
            raise ModelFileError(
                f"{key} model {path}: Q-values of shape {q.shape}, expected {ref.shape}"
            )
        diff = float(np.abs(q - ref).max()) if len(ref) else 0.0
        out[f"{key}_max_abs_diff"] = diff
        bound = tol * max(1.0, out["q_abs_max"])
        if not diff <= bound or math.isnan(diff):
            raise ModelFileError(
                f"{key} model {path}: Q-values differ from the torch model by {diff:.3g} "
                f"(tolerance {tol:g} x max(1, max |Q| = {out['q_abs_max']:.3g}))"
            )
    return out
