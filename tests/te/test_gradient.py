"""te.gradient: adjoints built as compute stages, checked against central finite differences of
a NumPy forward function (float64) on random data, built for both targets."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import TARGETS, ir_text, rand

import tessel
from tessel import te
from tessel.errors import DefinitionError
from tessel.ir.intrinsics import INTRINSICS
from tessel.te.intrin import EXPORTED

F64 = "float64"


def numeric_vjp(fn, arrays, head, k, eps=1e-6):
    """d <head, fn(*arrays)> / d arrays[k], by central differences."""
    x = arrays[k]
    out = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        old = x[idx]
        x[idx] = old + eps
        up = fn(*arrays)
        x[idx] = old - eps
        down = fn(*arrays)
        x[idx] = old
        out[idx] = np.sum(head * (up - down)) / (2 * eps)  # the unchanged elements cancel exactly
    return out


def reached(outs):
    """Every tensor the outputs read, directly or not."""
    seen, stack = [], list(outs)
    while stack:
        t = stack.pop()
        if not any(t is u for u in seen):
            seen.append(t)
            stack.extend(t.op.input_tensors())
    return seen


def run(tensors, outs, arrays, schedule=None):
    """Build ``outs`` (each target) over those of ``tensors`` they read; the values per target."""
    s = te.create_schedule([o.op for o in outs]) if schedule is None else schedule
    used = reached(outs)
    keep = [k for k, t in enumerate(tensors) if any(t is u for u in used)]
    tensors, arrays = [tensors[k] for k in keep], [arrays[k] for k in keep]
    results = {}
    for target in TARGETS:
        f = tessel.build(s, [*tensors, *outs], target=target)
        got = [np.full([int(d) for d in o.shape], np.nan, dtype=F64) for o in outs]
        f(*[a.copy() for a in arrays], *got)
        results[target] = got
    return results


def check_vjp(output, inputs, fn, arrays, rtol=1e-6, atol=1e-7, extra=()):
    """head * Jacobian of ``output`` w.r.t. each of ``inputs`` against finite differences of ``fn``."""
    out_shape = [int(d) for d in output.shape]
    head_np = rand(*out_shape, dtype=F64, seed=11)
    head = te.placeholder(output.shape, name="head", dtype=F64)
    grads = te.gradient(output, inputs, head)
    for g, x in zip(grads, inputs):
        assert [int(d) for d in g.shape] == [int(d) for d in x.shape]
    results = run([*inputs, *extra, head], grads, [*arrays, head_np])
    for k in range(len(inputs)):
        want = numeric_vjp(fn, [a.copy() for a in arrays], head_np, k)
        for target, got in results.items():
            np.testing.assert_allclose(got[k], want, rtol=rtol, atol=atol, err_msg=f"{target}: input {k}")


def test_matmul_gradient_matches_finite_differences():
    n, m, k = 5, 7, 3
    A = te.placeholder((n, k), name="A", dtype=F64)
    B = te.placeholder((k, m), name="B", dtype=F64)
    r = te.reduce_axis((0, k), name="r")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    check_vjp(C, [A, B], lambda a, b: a @ b, [rand(n, k, dtype=F64, seed=1), rand(k, m, dtype=F64, seed=2)])


def test_matmul_full_jacobian_without_head():
    n, m, k = 3, 4, 2
    A = te.placeholder((n, k), name="A", dtype=F64)
    B = te.placeholder((k, m), name="B", dtype=F64)
    r = te.reduce_axis((0, k), name="r")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    (dA,) = te.gradient(C, [A])
    assert [int(d) for d in dA.shape] == [n, m, n, k]
    a, b = rand(n, k, dtype=F64, seed=3), rand(k, m, dtype=F64, seed=4)
    want = np.einsum("ip,rj->ijpr", np.eye(n), b)  # dC[i,j]/dA[p,r] = [i==p] B[r,j]
    for got in run([A, B], [dA], [a, b]).values():
        np.testing.assert_allclose(got[0], want, rtol=1e-12)


def conv2d_np(x, w, pad, stride):
    n, c, h, wd = x.shape
    f, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    out = np.zeros((n, f, oh, ow))
    for y in range(oh):
        for xx in range(ow):
            patch = xp[:, :, y * stride:y * stride + kh, xx * stride:xx * stride + kw]
            out[:, :, y, xx] = np.einsum("nchw,fchw->nf", patch, w)
    return out


@pytest.mark.parametrize("pad,stride", [(1, 1), (0, 2)])
def test_conv2d_gradient_matches_finite_differences(pad, stride):
    n, c, h, w, f, k = 2, 3, 7, 6, 4, 3
    X = te.placeholder((n, c, h, w), name="X", dtype=F64)
    W = te.placeholder((f, c, k, k), name="W", dtype=F64)
    P = te.compute((n, c, h + 2 * pad, w + 2 * pad), lambda a, b, y, x: te.if_then_else(
        te.all(y >= pad, y < h + pad, x >= pad, x < w + pad), X[a, b, y - pad, x - pad], te.const(0.0, F64)),
        name="P")
    oh, ow = (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1
    rc, ry, rx = te.reduce_axis((0, c), "rc"), te.reduce_axis((0, k), "ry"), te.reduce_axis((0, k), "rx")
    O = te.compute((n, f, oh, ow), lambda a, o, y, x: te.sum(
        P[a, rc, y * stride + ry, x * stride + rx] * W[o, rc, ry, rx], axis=[rc, ry, rx]), name="O")
    check_vjp(O, [X, W], lambda x, wt: conv2d_np(x, wt, pad, stride),
              [rand(n, c, h, w, dtype=F64, seed=5), rand(f, c, k, k, dtype=F64, seed=6)])


def softmax_np(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_softmax_gradient_matches_finite_differences():
    n, m = 4, 9
    X = te.placeholder((n, m), name="X", dtype=F64)
    k1, k2 = te.reduce_axis((0, m), "k1"), te.reduce_axis((0, m), "k2")
    mx = te.compute((n,), lambda i: te.max(X[i, k1], axis=k1), name="mx")
    ex = te.compute((n, m), lambda i, j: te.exp(X[i, j] - mx[i]), name="ex")
    sm = te.compute((n,), lambda i: te.sum(ex[i, k2], axis=k2), name="sm")
    Y = te.compute((n, m), lambda i, j: ex[i, j] / sm[i], name="Y")
    check_vjp(Y, [X], softmax_np, [rand(n, m, dtype=F64, seed=7, low=-2, high=2)])


def test_max_pool_and_broadcast_gradient():
    """A strided max reduction and a broadcast bias: the adjoint goes to the maximum only."""
    n, m = 3, 8
    X = te.placeholder((n, m), name="X", dtype=F64)
    b = te.placeholder((m // 2,), name="b", dtype=F64)
    r = te.reduce_axis((0, 2), "r")
    Mx = te.compute((n, m // 2), lambda i, j: te.max(X[i, 2 * j + r], axis=r), name="Mx")
    Y = te.compute((n, m // 2), lambda i, j: Mx[i, j] * b[j] + b[j], name="Y")

    def fn(x, bb):
        return x.reshape(n, m // 2, 2).max(axis=2) * bb + bb

    check_vjp(Y, [X, b], fn, [rand(n, m, dtype=F64, seed=8), rand(m // 2, dtype=F64, seed=9)])


def test_input_read_twice_and_unreachable_input():
    """x*x (two reads of one element), x[i+1] (a shifted read), and an input the output ignores."""
    n = 6
    X = te.placeholder((n,), name="X", dtype=F64)
    Z = te.placeholder((n,), name="Z", dtype=F64)
    Y = te.compute((n - 1,), lambda i: X[i] * X[i] + te.sin(X[i + 1]) * X[i], name="Y")
    head = te.placeholder((n - 1,), name="head", dtype=F64)
    dX, dZ = te.gradient(Y, [X, Z], head)
    x, h = rand(n, dtype=F64, seed=1), rand(n - 1, dtype=F64, seed=2)
    want = numeric_vjp(lambda v: v[:-1] ** 2 + np.sin(v[1:]) * v[:-1], [x.copy()], h, 0)
    for got in run([X, Z, head], [dX, dZ], [x, rand(n, dtype=F64, seed=3), h]).values():
        np.testing.assert_allclose(got[0], want, rtol=1e-6, atol=1e-8)
        np.testing.assert_array_equal(got[1], np.zeros(n))


DIFFERENTIABLE = sorted({v for v in EXPORTED.values() if INTRINSICS[v].derivative is not None})


def test_every_float_intrinsic_has_a_derivative():
    missing = [n for n, i in INTRINSICS.items() if i.rule in ("float", "any") and i.derivative is None]
    assert missing == []


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_intrinsic_derivative_matches_finite_differences(name):
    spec = INTRINSICS[name]
    n = 7
    lo, hi = spec.domain
    xs = [te.placeholder((n,), name=f"x{k}", dtype=F64) for k in range(spec.arity)]
    fn_te = next(getattr(te, t) for t, v in EXPORTED.items() if v == name)
    Y = te.compute((n,), lambda i: fn_te(*[x[i] for x in xs]), name="Y")
    arrays = [rand(n, dtype=F64, seed=20 + k, low=lo, high=hi) for k in range(spec.arity)]
    if name in ("floor", "ceil", "round", "nearbyint", "trunc"):
        arrays = [a + 0.25 for a in arrays]  # away from the steps
    check_vjp(Y, xs, lambda *a: spec.numpy(*a), arrays, rtol=1e-5, atol=1e-6)


def test_bad_head_and_reducer_are_refused():
    A = te.placeholder((4,), name="A", dtype=F64)
    B = te.compute((4,), lambda i: A[i] * 2.0, name="B")
    with pytest.raises(DefinitionError, match="head"):
        te.gradient(B, [A], te.placeholder((3,), name="H", dtype=F64))
    prod = te.comm_reducer(lambda x, y: x * y, lambda t: te.const(1, t), name="prod")
    r = te.reduce_axis((0, 4), "r")
    P = te.compute((1,), lambda i: prod(A[r], axis=r), name="P")
    with pytest.raises(DefinitionError, match="prod"):
        te.gradient(P, [A])
    with pytest.raises(DefinitionError, match="floating"):
        te.gradient(B, [te.placeholder((4,), name="I", dtype="int32")])


def test_gradient_stages_can_be_scheduled():
    """Adjoints are ordinary stages: split and parallelize the one of a matmul."""
    n, m, k = 6, 5, 4
    A = te.placeholder((n, k), name="A", dtype=F64)
    B = te.placeholder((k, m), name="B", dtype=F64)
    r = te.reduce_axis((0, k), name="r")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    H = te.placeholder((n, m), name="H", dtype=F64)
    (dA,) = te.gradient(C, [A], H)
    s = te.create_schedule(dA.op)
    io, ii = s[dA].split(dA.op.axis[0], factor=4)
    s[dA].parallel(io)
    a, b, h = rand(n, k, dtype=F64, seed=1), rand(k, m, dtype=F64, seed=2), rand(n, m, dtype=F64, seed=3)
    for got in run([A, B, H], [dA], [a, b, h], schedule=s).values():
        np.testing.assert_allclose(got[0], h @ b.T, rtol=1e-12)


def test_strided_and_divided_reads():
    """X[2*i] and X[2*i + 1] (solved with a divisibility condition), X[i // 2] and X[i % 3]
    (unfolded into an affine equation over a remainder or a quotient), X[i*i % 7] (not affine:
    a sum over the reader's points filtered by the equality)."""
    n = 5
    X = te.placeholder((2 * n,), name="X", dtype=F64)
    Down = te.compute((n,), lambda i: X[2 * i] * X[2 * i + 1], name="Down")
    Up = te.compute((4 * n,), lambda i: Down[i // 4] * te.exp(X[i // 2]) + X[i % 3] * X[i * i % 7], name="Up")

    def fn(x):
        down = x[0::2] * x[1::2]
        i = np.arange(4 * n)
        return np.repeat(down, 4) * np.exp(np.repeat(x, 2)) + x[i % 3] * x[i * i % 7]

    check_vjp(Up, [X], fn, [rand(2 * n, dtype=F64, seed=12)])
    head = te.placeholder((4 * n,), name="head", dtype=F64)
    (dX,) = te.gradient(Up, [X], head)
    text = ir_text(te.create_schedule(dX.op), [X, head, dX])
    # only the read X[i*i % 7] sums over all 20 points of Up; X[i // 2] and X[i % 3] do not
    assert text.count("for (i, 0, 20)") == 1


def test_symbolic_shapes():
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n, m), name="A", dtype=F64)
    B = te.compute((n, m), lambda i, j: te.tanh(A[i, j]) * A[i, m - 1 - j], name="B")
    H = te.placeholder((n, m), name="H", dtype=F64)
    (dA,) = te.gradient(B, [A], H)
    s = te.create_schedule(dA.op)
    for shape in ((3, 4), (2, 7)):
        a, h = rand(*shape, dtype=F64, seed=shape[1]), rand(*shape, dtype=F64, seed=1)
        want = numeric_vjp(lambda x: np.tanh(x) * x[:, ::-1], [a.copy()], h, 0)
        for target in TARGETS:
            f = tessel.build(s, [A, H, dA], target=target)
            got = np.full(shape, np.nan)
            f(a, h, got)
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8, err_msg=target)


def test_adjoint_of_a_chain_with_inlined_stages():
    """The adjoints of a three-stage chain; the partial sums inlined into their total."""
    n = 6
    X = te.placeholder((n,), name="X", dtype=F64)
    A = te.compute((n,), lambda i: te.sigmoid(X[i]), name="A")
    B = te.compute((n,), lambda i: A[i] * X[i] + te.log(A[i]), name="B")
    head = te.placeholder((n,), name="head", dtype=F64)
    (dX,) = te.gradient(B, [X], head)
    s = te.create_schedule(dX.op)
    parts = [t for t in reached([dX]) if t.name.startswith("X.grad.")]
    assert parts  # X is read by A and by B: its adjoint sums two contributions
    for t in parts:
        s[t].compute_inline()
    x, h = rand(n, dtype=F64, seed=3), rand(n, dtype=F64, seed=4)

    def fn(v):
        a = 1 / (1 + np.exp(-v))
        return a * v + np.log(a)

    want = numeric_vjp(fn, [x.copy()], h, 0)
    for got in run([X, head], [dX], [x, h], schedule=s).values():
        np.testing.assert_allclose(got[0], want, rtol=1e-6, atol=1e-8)
