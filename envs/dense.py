# cython: boundscheck=False, wraparound=False, initializedcheck=False
# (the compiled build: no index checks; this module indexes nothing from the end)
"""Forward pass of a small dense ReLU network for one state, in a fixed float32 order.

A learned scheduler evaluates its Q-network once per decision on one state,
a few thousand multiply-adds. Through NumPy that costs about 11 µs, nearly
all of it call overhead (a ``matmul``, an ``add`` and a ``maximum`` per
layer), and it was the largest single cost of a bank task's decision. This
module is part of the compiled core (``envs/dense.pxd``, ``setup.py``): the
compiled build runs the layers as C loops (about 2 µs for 3 x 64); the ``.py`` build
runs the same arithmetic through NumPy reductions.

Both compute, in float32, with no fused multiply-add (``setup.py``'s flags):

* ``x = (x - offset) * inv_scale`` when the network normalises its input;
* per layer, ``y_j = x_0 w_0j + x_1 w_1j + ... + x_{n-1} w_{n-1,j}``
  summed left to right, then ``y_j + b_j``, then ``y_j = 0`` where
  ``y_j < 0`` on hidden layers (ReLU; NaN and -0.0 pass unchanged, as
  ``np.maximum(y, 0)`` does);
* the argmax is the first index of the largest value (a NaN counts as the
  largest, as ``np.argmax``).

A fixed order is what makes the two builds bit-identical
(``tests/test_core.py``) and the result independent of the BLAS library and
the CPU, which a ``matmul`` is not (its kernels choose the summation order).
NumPy's ``add.reduce`` over the leading axis of a ``[n, m]`` array sums
left to right when ``m >= 2``; for ``m == 1`` it switches to pairwise
summation, so a one-output layer is reduced with a zero column appended
(``tests/test_dense.py`` checks both against an explicit loop).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from envs.errors import ConfigError

try:  # the compiled build's pointer syntax in _forward (which the .py build never runs)
    import cython
except ImportError:  # pragma: no cover - the .py build installed without Cython
    from envs._cython_stub import cython  # type: ignore[assignment]

#: True in the compiled build (the module is an extension, not this file)
_COMPILED = not __file__.endswith(".py")
#: NumPy's float32 dtype (native byte order: a singleton, compared by identity)
_FLOAT32 = np.dtype(np.float32)


class DenseForward:
    """A frozen dense ReLU network: ``weights`` ``[W0, b0, W1, b1, ...]``
    with ``W`` ``[in, out]``, ReLU after every layer but the last.

    ``offset`` and ``inv_scale`` (``[n_in]``, or None) normalise the input
    as ``(x - offset) * inv_scale``.
    """

    def __init__(
        self,
        weights: Sequence[np.ndarray],
        offset: np.ndarray | None = None,
        inv_scale: np.ndarray | None = None,
    ):
        ws = [np.ascontiguousarray(w, dtype=np.float32) for w in weights]
        if not ws or len(ws) % 2:
            raise ConfigError(
                f"dense network: weights must be [W0, b0, W1, b1, ...], got {len(ws)} arrays"
            )
        prev = ws[0].shape[0] if ws[0].ndim == 2 else -1
        sizes = [prev]
        for i in range(0, len(ws), 2):
            w, b = ws[i], ws[i + 1]
            if w.ndim != 2 or w.shape[0] != prev or w.shape[1] < 1 or b.shape != (w.shape[1],):
                raise ConfigError(
                    f"dense network: layer {i // 2} has shapes {w.shape} and {b.shape}, "
                    f"after {prev} inputs"
                )
            prev = w.shape[1]
            sizes.append(prev)
        self.n_layers = len(ws) // 2
        self.n_in = sizes[0]
        self.n_out = prev
        # the NumPy reduction of a one-output layer needs a second column (module docstring)
        self._ref_pairs = [
            (np.pad(w, ((0, 0), (0, 1))) if w.shape[1] == 1 else w, b)
            for w, b in zip(ws[0::2], ws[1::2])
        ]
        self.normalises = offset is not None or inv_scale is not None
        self.offset = (
            np.zeros(self.n_in, np.float32)
            if offset is None
            else np.ascontiguousarray(offset, dtype=np.float32)
        )
        self.inv_scale = (
            np.ones(self.n_in, np.float32)
            if inv_scale is None
            else np.ascontiguousarray(inv_scale, dtype=np.float32)
        )
        if self.offset.shape != (self.n_in,) or self.inv_scale.shape != (self.n_in,):
            raise ConfigError(f"dense network: offset and inv_scale must have {self.n_in} entries")
        self._params = np.concatenate([w.ravel() for w in ws])
        self._sizes = np.asarray(sizes, dtype=np.int32)
        self._width = int(max(sizes))
        #: scratch of two layers' outputs (``_buf`` is its typed view in the compiled build)
        self._scratch = np.zeros(2 * self._width, dtype=np.float32)
        self._buf = self._scratch

    def q_values(self, x: np.ndarray) -> np.ndarray:
        """The outputs ``[n_out]`` float32 for one input ``x`` ``[n_in]``."""
        x = self._input(x)
        if _COMPILED:
            out = self._forward(x)
            return self._scratch[out : out + self.n_out].copy()
        return self._reference(x)

    def argmax(self, x: np.ndarray) -> int:
        """The index of the largest output for ``x`` (first of ties; a NaN wins)."""
        x = self._input(x)
        if _COMPILED:
            return self._argmax_at(self._forward(x))
        return int(self._reference(x).argmax())

    def argmax_row(self, x) -> int:
        """:meth:`argmax` of ``x``, a contiguous float32 row of ``n_in`` values (typed in
        the compiled build, where it is read as it is: no conversion, no Python checks;
        a learned scheduler's state row)."""
        if x.shape[0] != self.n_in:
            raise ConfigError(
                f"dense network: an input of {x.shape[0]} values, expected {self.n_in}"
            )
        if _COMPILED:
            return self._argmax_at(self._forward(x))
        return int(self._reference(np.asarray(x, dtype=np.float32)).argmax())

    def _input(self, x) -> np.ndarray:
        if (
            type(x) is not np.ndarray
            or x.dtype is not _FLOAT32
            or x.ndim != 1
            or (x.shape[0] > 1 and x.strides[0] != 4)
        ):  # (a contiguous row: the common case, fast)
            x = np.ascontiguousarray(x, dtype=np.float32)
        if x.ndim != 1 or x.shape[0] != self.n_in:
            raise ConfigError(
                f"dense network: an input of shape {x.shape}, expected ({self.n_in},)"
            )
        return x

    def _reference(self, x: np.ndarray) -> np.ndarray:
        """The forward pass through NumPy, in the module's order (the ``.py`` build)."""
        if self.normalises:
            x = (x - self.offset) * self.inv_scale
        last = self.n_layers - 1
        for i, (w, b) in enumerate(self._ref_pairs):
            y = np.add.reduce(x[:, None] * w, axis=0)[: b.shape[0]]
            y += b
            if i < last:
                y[y < 0] = 0.0
            x = y
        return x

    def _forward(self, x) -> int:
        """The forward pass as loops (the compiled build): writes the outputs
        into the scratch buffer and returns their offset in it."""
        p = self._params
        sizes = self._sizes
        buf = self._buf
        width = self._width
        n = sizes[0]
        if self.normalises:
            off = self.offset
            inv = self.inv_scale
            for i in range(n):
                buf[i] = (x[i] - off[i]) * inv[i]
        else:
            for i in range(n):
                buf[i] = x[i]
        src = 0
        k = 0
        last = self.n_layers - 1
        for layer in range(self.n_layers):
            n = sizes[layer]
            m = sizes[layer + 1]
            dst = width - src
            # the layer's loops in C (envs/dense_layer.h: vectorised across outputs, AVX2
            # where the CPU has it), in the order of the module docstring
            falcon_dense_layer(  # type: ignore[name-defined]  # noqa: F821 (a C function, dense.pxd)
                cython.address(buf[src]),
                n,
                cython.address(p[k]),
                cython.address(p[k + n * m]),
                m,
                cython.address(buf[dst]),
                layer < last,
            )
            k += n * m + m
            src = dst
        return src

    def _argmax_at(self, start) -> int:
        buf = self._buf
        best = start
        for j in range(start, start + self.n_out):
            v = buf[j]
            if v != v:  # NaN
                return j - start
            if v > buf[best]:
                best = j
        return best - start


__all__ = ["DenseForward"]
