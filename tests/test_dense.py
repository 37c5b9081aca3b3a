"""The single-state forward pass of envs/dense.py: its fixed float32 order,
the compiled build against the .py build, and NumpyQNet's use of it."""

from __future__ import annotations

import importlib.util
import pickle
from pathlib import Path

import numpy as np
import pytest

import envs
import envs.dense as dense
from baselines.dqn.network import NumpyQNet, QNetSpec, init_params
from envs.errors import ConfigError

SOURCE = Path(dense.__file__).with_name("dense.py")


def _source_module():
    """envs/dense.py loaded from its source (the .py build), whichever build ``envs.dense`` is."""
    spec = importlib.util.spec_from_file_location("dense_from_source", SOURCE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert not mod._COMPILED
    return mod


def _random_net(rng, sizes, normalise):
    ws = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        ws += [rng.normal(size=(a, b)).astype(np.float32), rng.normal(size=b).astype(np.float32)]
    off = rng.normal(size=sizes[0]).astype(np.float32) if normalise else None
    inv = rng.uniform(0.1, 2, size=sizes[0]).astype(np.float32) if normalise else None
    return ws, off, inv


def _explicit(ws, off, inv, x):
    """The module docstring's arithmetic, one float32 operation at a time."""
    x = np.asarray(x, np.float32)
    if off is not None:
        x = (x - off) * inv
    n_layers = len(ws) // 2
    for layer in range(n_layers):
        w, b = ws[2 * layer], ws[2 * layer + 1]
        y = x[0] * w[0]
        for i in range(1, w.shape[0]):
            y = y + x[i] * w[i]
        y = y + b
        if layer < n_layers - 1:
            y = np.where(y < 0, np.float32(0), y)
        x = y.astype(np.float32)
    return x


#: (with widths through each block of envs/dense_layer.h: 64, 8, two outputs, the rest)
SHAPES = [
    [19, 64, 64, 64, 2],
    [8, 1],
    [30, 1, 3],
    [3, 40, 1],
    [1, 5, 2],
    [12, 17, 9, 4],
    [7, 138, 74, 10, 2],
]


@pytest.mark.parametrize("build", ["imported", "source"])
def test_the_forward_pass_sums_left_to_right_in_float32(build):
    """Bit for bit the documented order, also for one-output layers (where
    NumPy's own reduction would switch to pairwise summation)."""
    mod = dense if build == "imported" else _source_module()
    rng = np.random.default_rng(3)
    for k, sizes in enumerate(SHAPES):
        ws, off, inv = _random_net(rng, sizes, normalise=k % 2 == 1)
        net = mod.DenseForward(ws, off, inv)
        for _ in range(4):
            x = rng.normal(size=sizes[0]).astype(np.float32) * 3
            want = _explicit(ws, off, inv, x)
            got = net.q_values(x)
            assert got.dtype == np.float32 and got.shape == (sizes[-1],)
            assert np.array_equal(got, want), (sizes, got, want)
            assert net.argmax(x) == int(want.argmax())
            rows = np.stack([x * 0, x])  # a state row of a block, read in place
            assert net.argmax_row(rows[1]) == int(want.argmax())


@pytest.mark.skipif(envs.core_kind() != "compiled", reason="the compiled core is not built")
def test_compiled_and_source_builds_agree_bit_for_bit():
    src = _source_module()
    rng = np.random.default_rng(5)
    for t in range(60):
        sizes = [int(v) for v in rng.integers(1, 70, size=int(rng.integers(2, 6)))]
        ws, off, inv = _random_net(rng, sizes, normalise=t % 2 == 0)
        a, b = dense.DenseForward(ws, off, inv), src.DenseForward(ws, off, inv)
        for _ in range(3):
            x = rng.normal(size=sizes[0]).astype(np.float32)
            assert np.array_equal(a.q_values(x), b.q_values(x))
            assert a.argmax(x) == b.argmax(x)


@pytest.mark.parametrize("build", ["imported", "source"])
def test_argmax_takes_the_first_of_ties_and_a_nan_wins(build):
    mod = dense if build == "imported" else _source_module()

    def outputs(values):  # a network whose outputs are its biases
        return mod.DenseForward([np.zeros((2, 3), np.float32), np.array(values, np.float32)])

    zero = np.zeros(2, np.float32)
    assert outputs([1.0, 5.0, 5.0]).argmax(zero) == 1
    assert outputs([1.0, np.nan, 7.0]).argmax(zero) == 1
    assert outputs([-1.0, -3.0, -2.0]).argmax(zero) == 0
    ident = [np.eye(3, dtype=np.float32), np.zeros(3, np.float32)]
    # ReLU zeroes negatives and keeps a NaN (as np.maximum does), which then reaches every output
    relu = mod.DenseForward(
        [np.zeros((2, 3), np.float32), np.array([-1.0, -2.0, 3.0], np.float32)] + ident
    )
    assert relu.q_values(zero).tolist() == [0.0, 0.0, 3.0]
    nan = mod.DenseForward(
        [np.zeros((2, 3), np.float32), np.array([np.nan, -2.0, 3.0], np.float32)] + ident
    )
    assert np.isnan(nan.q_values(zero)).all()


def test_inputs_of_another_dtype_or_layout_are_converted():
    rng = np.random.default_rng(1)
    ws, _, _ = _random_net(rng, [6, 8, 2], normalise=False)
    net = dense.DenseForward(ws)
    x = rng.normal(size=12)[::2]  # float64, strided
    assert np.array_equal(net.q_values(x), net.q_values(np.ascontiguousarray(x, np.float32)))
    assert np.array_equal(net.q_values(list(x)), net.q_values(x.astype(np.float32)))


@pytest.mark.parametrize(
    "weights, match",
    [
        ([], "W0, b0"),
        ([np.ones((3, 2), np.float32)], "W0, b0"),
        ([np.ones((3, 2), np.float32), np.ones(3, np.float32)], "layer 0"),
        (
            [
                np.ones((3, 2), np.float32),
                np.ones(2, np.float32),
                np.ones((4, 2), np.float32),
                np.ones(2, np.float32),
            ],
            "layer 1",
        ),
        ([np.ones(3, np.float32), np.ones(3, np.float32)], "layer 0"),
    ],
)
def test_malformed_weights_are_rejected(weights, match):
    with pytest.raises(ConfigError, match=match):
        dense.DenseForward(weights)


def test_a_wrong_input_size_is_rejected():
    net = dense.DenseForward([np.ones((3, 2), np.float32), np.zeros(2, np.float32)])
    with pytest.raises(ConfigError, match=r"shape \(4,\)"):
        net.argmax(np.ones(4, np.float32))
    with pytest.raises(ConfigError, match="an input of 4 values, expected 3"):
        net.argmax_row(np.ones(4, np.float32))


def test_numpy_qnet_acts_through_the_dense_forward_pass():
    spec = QNetSpec(8, 3, hidden=(16, 16), input_offset=[0.5] * 8, input_scale=[2.0] * 8)
    weights = [p[0].numpy() for p in init_params(spec, 1, seed=4)]
    net = NumpyQNet(weights, spec)
    ref = dense.DenseForward(
        weights, spec.offset_array(), (1.0 / spec.scale_array()).astype(np.float32)
    )
    xs = np.random.default_rng(2).uniform(0, 5, (20, 8)).astype(np.float32)
    batch = net(xs)
    for x, row in zip(xs, batch):
        assert np.array_equal(net(x), ref.q_values(x))
        np.testing.assert_allclose(net(x), row, rtol=1e-5, atol=1e-5)
        assert net.argmax(x) == int(ref.q_values(x).argmax())
    again = pickle.loads(pickle.dumps(net))
    assert all(np.array_equal(again(x), net(x)) for x in xs)
