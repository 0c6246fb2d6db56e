"""``tvm.topi`` in tessel's own words: each operator against NumPy on both targets, at awkward
sizes, and schedulable like any stage."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import TARGETS, check, rand

from tessel import te
from tessel.errors import DefinitionError
from tessel.tvm import topi


def _run(outs, args, inputs, want, rtol=1e-5, atol=1e-5):
    s = topi.generic.schedule_injective(outs)
    check(s, args, inputs, want, targets=TARGETS, rtol=rtol, atol=atol)


def test_broadcast_arithmetic_as_numpy_does():
    A = te.placeholder((3, 1, 5), name="A")
    B = te.placeholder((4, 1), name="B")
    a, b = rand(3, 1, 5), rand(4, 1, seed=1)
    outs = [topi.add(A, B), topi.subtract(A, B), topi.multiply(A, 2.0), topi.maximum(A, B), topi.minimum(A, B)]
    assert [tuple(int(d) for d in o.shape) for o in outs[:1]] == [(3, 4, 5)]
    _run(outs, [A, B, *outs], [a, b], [a + b, a - b, a * 2, np.maximum(a, b), np.minimum(a, b)])
    with pytest.raises(DefinitionError, match="do not broadcast"):
        topi.add(A, te.placeholder((4, 6), name="C"))


def test_unary_functions_and_relu():
    A = te.placeholder((7, 9), name="A")
    a = rand(7, 9)
    outs = [topi.exp(A), topi.nn.relu(A), topi.negative(A), topi.tanh(A)]
    _run(outs, [A, *outs], [a], [np.exp(a), np.maximum(a, 0), -a, np.tanh(a)])


@pytest.mark.parametrize(("axis", "keepdims"), [(None, False), (1, False), ((0, 2), True), (-1, True)])
def test_reductions_over_axes(axis, keepdims):
    A = te.placeholder((4, 5, 6), name="A")
    a = rand(4, 5, 6)
    outs = [topi.sum(A, axis, keepdims), topi.max(A, axis, keepdims), topi.min(A, axis, keepdims)]
    np_axis = axis if axis is None or isinstance(axis, int) else tuple(axis)
    want = [a.sum(np_axis, keepdims=keepdims), a.max(np_axis, keepdims=keepdims), a.min(np_axis, keepdims=keepdims)]
    want = [np.asarray(w, "float32") for w in want]  # over every axis: a 0-d tensor, as TVM's
    _run(outs, [A, *outs], [a], want, rtol=1e-4)


def test_pad():
    A = te.placeholder((3, 4), name="A")
    P = topi.nn.pad(A, (1, 2), (0, 3), pad_value=-1.5)
    a = rand(3, 4)
    _run([P], [A, P], [a], [np.pad(a, ((1, 0), (2, 3)), constant_values=-1.5)])


def _conv_ref_nchw(x, w, stride, pads, dilation):
    top, left, bottom, right = pads
    xp = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))
    n, c, h, wd = xp.shape
    f, _, kh, kw = w.shape
    oh = (h - (kh - 1) * dilation - 1) // stride + 1
    ow = (wd - (kw - 1) * dilation - 1) // stride + 1
    out = np.zeros((n, f, oh, ow), "float64")
    for ry in range(kh):
        for rx in range(kw):
            win = xp[:, :, ry * dilation: ry * dilation + stride * oh: stride, rx * dilation: rx * dilation + stride * ow:
                     stride]
            out += np.einsum("nchw,fc->nfhw", win, w[:, :, ry, rx])
    return out.astype("float32")


@pytest.mark.parametrize(("stride", "padding", "dilation"), [(1, "SAME", 1), (2, 1, 1), (1, "VALID", 2), (2, (1, 0), 1)])
def test_conv2d_nchw(stride, padding, dilation):
    X = te.placeholder((2, 3, 9, 7), name="X")
    W = te.placeholder((4, 3, 3, 3), name="W")
    Y = topi.nn.conv2d_nchw(X, W, stride, padding, dilation)
    x, w = rand(2, 3, 9, 7), rand(4, 3, 3, 3, seed=1)
    pads = topi.nn.get_pad_tuple(padding, (3, 3))
    _run([Y], [X, W, Y], [x, w], [_conv_ref_nchw(x, w, stride, pads, dilation)], rtol=1e-4, atol=1e-4)


def test_conv2d_hwcn_bias_relu_as_tedd_builds_it():
    A = te.placeholder((7, 7, 5, 2), name="A")
    W = te.placeholder((3, 3, 5, 6), name="W")
    B = te.placeholder((1, 6, 1), name="bias")
    out = topi.nn.relu(topi.add(topi.nn.conv2d_hwcn(A, W, 1, "SAME", 1), B))
    a, w, b = rand(7, 7, 5, 2), rand(3, 3, 5, 6, seed=1), rand(1, 6, 1, seed=2)
    conv = _conv_ref_nchw(a.transpose(3, 2, 0, 1), w.transpose(3, 2, 0, 1), 1, (1, 1, 1, 1), 1).transpose(2, 3, 1, 0)
    _run([out], [A, W, B, out], [a, w, b], [np.maximum(conv + b, 0)], rtol=1e-4, atol=1e-4)


def test_dense_and_softmax():
    D = te.placeholder((5, 8), name="D")
    Wt = te.placeholder((3, 8), name="Wt")
    bias = te.placeholder((3,), name="bias")
    y = topi.nn.dense(D, Wt, bias)
    sm = topi.nn.softmax(y)
    d, w, b = rand(5, 8), rand(3, 8, seed=1), rand(3, seed=2)
    z = d @ w.T + b
    e = np.exp(z - z.max(axis=1, keepdims=True))
    _run([y, sm], [D, Wt, bias, y, sm], [d, w, b], [z, e / e.sum(axis=1, keepdims=True)], rtol=1e-4)


def test_an_operator_is_a_stage_to_schedule():
    A = te.placeholder((64, 33), name="A")
    B = topi.exp(A)
    s = topi.generic.schedule_injective(B)
    xo, xi = s[B].split(B.op.axis[1], factor=8)
    s[B].vectorize(xi)
    s[B].parallel(B.op.axis[0])
    a = rand(64, 33)
    check(s, [A, B], [a], [np.exp(a)], targets=TARGETS, rtol=1e-5)


def _pool_ref(a, kernel, stride, dilation, padding, pool_type, ceil_mode, count_include_pad):
    """NumPy's NCHW pooling, one output at a time: a window of samples ``dilation`` apart."""
    (kh, kw), (sh, sw), (dh, dw), (top, left, bottom, right) = kernel, stride, dilation, padding
    n, c, h, w = a.shape

    def size(length, before, after, k, s, d):
        span = length + before + after - ((k - 1) * d + 1) + (s - 1 if ceil_mode else 0)
        return span // s + 1

    oh, ow = size(h, top, bottom, kh, sh, dh), size(w, left, right, kw, sw, dw)
    pad_value = te.min_value(str(a.dtype)).value if pool_type == "max" else 0
    out = np.zeros((n, c, oh, ow), a.dtype)
    for y in range(oh):
        for x in range(ow):
            ys = [y * sh - top + r * dh for r in range(kh)]
            xs = [x * sw - left + r * dw for r in range(kw)]
            inside = [(p, q) for p in ys for q in xs if 0 <= p < h and 0 <= q < w]
            # a window wholly in the padding (ceil_mode) reads only the pad value
            vals = np.stack([a[:, :, p, q] for p, q in inside] or [np.full((n, c), pad_value, a.dtype)], axis=-1)
            if pool_type == "max":
                out[:, :, y, x] = vals.max(axis=-1)
            else:
                declared = [(p, q) for p in ys for q in xs if -top <= p < h + bottom and -left <= q < w + right]
                out[:, :, y, x] = vals.sum(axis=-1) / max(len(declared) if count_include_pad else len(inside), 1)
    return out


@pytest.mark.parametrize(("pool_type", "ceil_mode", "count_include_pad"),
                         [("max", False, True), ("max", True, True), ("avg", False, True), ("avg", True, False),
                          ("avg", False, False)])
def test_pool2d_max_and_average_as_numpy(pool_type, ceil_mode, count_include_pad):
    A = te.placeholder((2, 3, 11, 9), name="A")
    args = dict(kernel=(3, 2), stride=(2, 1), dilation=(1, 2), padding=(1, 0, 2, 1))
    P = topi.nn.pool2d(A, pool_type=pool_type, ceil_mode=ceil_mode, count_include_pad=count_include_pad, **args)
    a = rand(2, 3, 11, 9)
    want = _pool_ref(a, args["kernel"], args["stride"], args["dilation"], args["padding"], pool_type, ceil_mode,
                     count_include_pad)
    assert tuple(int(d) for d in P.shape) == want.shape
    _run([P], [A, P], [a], [want])


def test_pool2d_in_nhwc_and_its_refusals():
    A = te.placeholder((1, 7, 5, 4), name="A")
    P = topi.nn.pool2d(A, 2, 1, 1, (0, 0, 0, 0), "max", layout="NHWC")
    a = rand(1, 7, 5, 4)
    want = _pool_ref(a.transpose(0, 3, 1, 2), (2, 2), (1, 1), (1, 1), (0, 0, 0, 0), "max", False, True)
    _run([P], [A, P], [a], [want.transpose(0, 2, 3, 1)])
    with pytest.raises(DefinitionError, match="pool_type 'sum'"):
        topi.nn.pool2d(A, 2, 1, 1, (0, 0, 0, 0), "sum", layout="NHWC")
    with pytest.raises(DefinitionError, match="H and W once each"):
        topi.nn.pool2d(A, 2, 1, 1, (0, 0, 0, 0), "max", layout="NCHw")
