"""The Q-network: a fully connected ReLU network with functional, stackable parameters.

FALCON's Q-network (paper Sec. V-A): the FALCON state in
(``4 * n_paths`` features, :mod:`envs.gym_env`), three hidden ReLU layers
(64 units each by default), one linear output per action (path).

Parameters are plain tensors, not an ``nn.Module``: a flat list
``[W0, b0, W1, b1, ...]`` where ``W_l`` has shape ``[M, in_l, out_l]`` and
``b_l`` shape ``[M, out_l]`` for a stack of ``M`` independent models (``M =
1`` for a single scheduler, 729 for the meta-model bank). A layer computes
``y = x @ W + b`` (the Keras ``Dense`` convention, also the HDF5 layout of
:mod:`baselines.dqn.export`). One batched matrix product per layer then
evaluates every model of the stack at once (:func:`q_values`).

An optional per-feature input normalisation ``(x - offset) / scale`` is part
of the model (:class:`QNetSpec`); it is identity by default since the
environment's features are already scaled to roughly unit range
(:mod:`envs.gym_env`, "Observation"), and it travels with the model into the
HDF5 and ONNX exports.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from envs.dense import DenseForward
from envs.errors import ConfigError

ACTIVATIONS = ("relu",)


@dataclass(frozen=True)
class QNetSpec:
    """Architecture of a Q-network.

    Attributes:
        n_inputs: state size (``4 * n_paths`` for FALCON's state).
        n_actions: number of actions (paths).
        hidden: widths of the hidden layers (three layers of 64 by default).
        activation: hidden-layer activation (``"relu"``); the output is linear.
        input_offset / input_scale: per-input normalisation
            ``(x - offset) / scale``; ``None`` = 0 / 1 (identity).
    """

    n_inputs: int
    n_actions: int
    hidden: tuple[int, ...] = (64, 64, 64)
    activation: str = "relu"
    input_offset: tuple[float, ...] | None = field(default=None)
    input_scale: tuple[float, ...] | None = field(default=None)

    def __post_init__(self):
        if int(self.n_inputs) < 1 or int(self.n_actions) < 1:
            raise ConfigError(
                f"Q-network: n_inputs and n_actions must be positive, got "
                f"{self.n_inputs}, {self.n_actions}"
            )
        hidden = tuple(int(h) for h in self.hidden)
        if any(h < 1 for h in hidden):
            raise ConfigError(
                f"hidden: every layer width must be positive, got {list(self.hidden)}"
            )
        object.__setattr__(self, "hidden", hidden)
        if self.activation not in ACTIVATIONS:
            raise ConfigError(
                f"activation: unknown {self.activation!r}; known: {list(ACTIVATIONS)}"
            )
        for name in ("input_offset", "input_scale"):
            v = getattr(self, name)
            if v is not None:
                v = tuple(float(x) for x in v)
                if len(v) != self.n_inputs:
                    raise ConfigError(f"{name}: expected {self.n_inputs} values, got {len(v)}")
                object.__setattr__(self, name, v)
        if self.input_scale is not None and any(not s > 0 for s in self.input_scale):
            raise ConfigError("input_scale: every entry must be positive")

    @property
    def layer_sizes(self) -> list[tuple[int, int]]:
        """``(in, out)`` of every dense layer, input to output."""
        sizes = [self.n_inputs, *self.hidden, self.n_actions]
        return list(zip(sizes[:-1], sizes[1:]))

    @property
    def activations(self) -> list[str]:
        """Activation after every dense layer (``"linear"`` for the output)."""
        return [self.activation] * len(self.hidden) + ["linear"]

    @property
    def n_parameters(self) -> int:
        return sum(i * o + o for i, o in self.layer_sizes)

    def offset_array(self) -> np.ndarray:
        return (
            np.zeros(self.n_inputs, np.float32)
            if self.input_offset is None
            else np.asarray(self.input_offset, np.float32)
        )

    def scale_array(self) -> np.ndarray:
        return (
            np.ones(self.n_inputs, np.float32)
            if self.input_scale is None
            else np.asarray(self.input_scale, np.float32)
        )

    @property
    def normalises(self) -> bool:
        return self.input_offset is not None or self.input_scale is not None

    def to_dict(self) -> dict:
        return {
            "n_inputs": self.n_inputs,
            "n_actions": self.n_actions,
            "hidden": list(self.hidden),
            "activation": self.activation,
            "input_offset": None if self.input_offset is None else list(self.input_offset),
            "input_scale": None if self.input_scale is None else list(self.input_scale),
        }


def init_params(spec: QNetSpec, n_models: int = 1, seed: int = 0) -> list[torch.Tensor]:
    """Fresh stacked parameters ``[W0, b0, ...]`` for ``n_models`` models.

    Glorot-uniform weights and zero biases (the Keras ``Dense`` defaults; the
    paper's implementation is keras-rl). Deterministic for a seed: model ``m``
    of a stack gets the same draw whatever ``n_models`` is, so a bank of
    models and a single model built with the same seed start alike.
    """
    if int(n_models) < 1:
        raise ConfigError(f"n_models: must be positive, got {n_models}")
    n_models = int(n_models)
    weights = [torch.empty((n_models, i, o), dtype=torch.float32) for i, o in spec.layer_sizes]
    for m in range(n_models):
        # model m's own stream: SeedSequence((seed, m)), so a model's initial
        # weights do not depend on how many models share the stack
        state = np.random.SeedSequence((int(seed), m)).generate_state(1, np.uint64)[0]
        gen = torch.Generator().manual_seed(int(state >> np.uint64(1)))
        for w, (fan_in, fan_out) in zip(weights, spec.layer_sizes):
            limit = math.sqrt(6.0 / (fan_in + fan_out))
            w[m] = (
                torch.rand((fan_in, fan_out), generator=gen, dtype=torch.float32) * 2 - 1
            ) * limit
    params: list[torch.Tensor] = []
    for w, (_, fan_out) in zip(weights, spec.layer_sizes):
        params += [w, torch.zeros((n_models, fan_out), dtype=torch.float32)]
    return params


def normalise_input(spec: QNetSpec, x: torch.Tensor) -> torch.Tensor:
    if not spec.normalises:
        return x
    off = torch.as_tensor(spec.offset_array())
    scale = torch.as_tensor(spec.scale_array())
    return (x - off) / scale


def q_values(
    params: Sequence[torch.Tensor], x: torch.Tensor, spec: QNetSpec | None = None
) -> torch.Tensor:
    """Q-values of a stack of models: ``x`` ``[M, B, n_inputs]`` -> ``[M, B, n_actions]``.

    One ``baddbmm`` per layer (a batched ``x @ W + b`` over the M models).
    """
    if spec is not None:
        x = normalise_input(spec, x)
    n = len(params) // 2
    for i in range(n):
        w, b = params[2 * i], params[2 * i + 1]
        x = torch.baddbmm(b.unsqueeze(1), x, w)
        if i < n - 1:
            x = torch.relu(x)
    return x


def q_values_single(
    params: Sequence[torch.Tensor], x: torch.Tensor, spec: QNetSpec | None = None
) -> torch.Tensor:
    """Q-values of one model given unstacked parameters (``W`` ``[in, out]``,
    ``b`` ``[out]``): ``x`` ``[B, n_inputs]`` -> ``[B, n_actions]``. The
    per-model function that ``torch.func.vmap`` maps over a stack."""
    if spec is not None:
        x = normalise_input(spec, x)
    n = len(params) // 2
    for i in range(n):
        x = torch.addmm(params[2 * i + 1], x, params[2 * i])
        if i < n - 1:
            x = torch.relu(x)
    return x


class NumpyQNet:
    """A deployed (frozen) copy of one model for acting, outside torch.

    The scheduler calls it once per decision on one state: that goes
    through :class:`envs.dense.DenseForward` (float32, a fixed summation
    order; in the compiled core a C loop of about 2 µs against about 11 µs
    for NumPy's per-call overhead, and independent of the BLAS library). A
    batch ``[B, n_inputs]`` goes through NumPy's matrix products (its
    values agree with the single-state ones to float32 rounding, not bit for
    bit). ``weights`` is ``[W0, b0, ...]`` with ``W`` ``[in, out]`` float32.
    """

    __slots__ = ("weights", "offset", "inv_scale", "n_layers", "_pairs", "_dense")

    def __init__(self, weights: Sequence[np.ndarray], spec: QNetSpec):
        self.weights = [np.ascontiguousarray(w, dtype=np.float32) for w in weights]
        self.offset = spec.offset_array() if spec.normalises else None
        self.inv_scale = (1.0 / spec.scale_array()).astype(np.float32) if spec.normalises else None
        self._setup()

    def _setup(self) -> None:
        self.n_layers = len(self.weights) // 2
        self._pairs = [(self.weights[2 * i], self.weights[2 * i + 1]) for i in range(self.n_layers)]
        self._dense = DenseForward(self.weights, self.offset, self.inv_scale)

    @classmethod
    def from_params(
        cls, params: Sequence[torch.Tensor], spec: QNetSpec, model: int = 0
    ) -> NumpyQNet:
        return cls([p[model].detach().cpu().numpy().copy() for p in params], spec)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """Q-values of a state ``[n_inputs]`` (or a batch ``[B, n_inputs]``)."""
        if np.ndim(x) == 1:
            return self._dense.q_values(x)
        if self.offset is not None:
            x = (x - self.offset) * self.inv_scale
        last = self.n_layers - 1
        for i, (w, b) in enumerate(self._pairs):
            x = x @ w
            x += b
            if i < last:
                np.maximum(x, 0.0, out=x)
        return x

    def argmax(self, x: np.ndarray) -> int:
        """The greedy action of a state ``[n_inputs]``: ``int(self(x).argmax())``, faster."""
        return self._dense.argmax(x)

    def __getstate__(self):
        return {"weights": self.weights, "offset": self.offset, "inv_scale": self.inv_scale}

    def __setstate__(self, state):
        self.weights = state["weights"]
        self.offset = state["offset"]
        self.inv_scale = state["inv_scale"]
        self._setup()


__all__ = ["QNetSpec", "init_params", "q_values", "q_values_single", "NumpyQNet", "ACTIVATIONS"]
