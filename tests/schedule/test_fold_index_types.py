"""storage_fold of a recurrence over int64 sizes: the index of the folded storage is arithmetic
in the axis's type, and a definition's constant index (``where=t == 0`` stores at ``t = 0``, an
int32 constant) was substituted into it as it was: an InternalError (FloorMod operands int32 vs
int64) instead of a kernel."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import TARGETS, rand

import tessel
from tessel import te


@pytest.mark.parametrize("dtype", ["int32", "int64"])
@pytest.mark.parametrize("target", TARGETS)
def test_a_folded_recurrence_over_int64_sizes_builds_and_equals_numpy(target, dtype):
    n, steps = te.var("n", dtype=dtype), te.var("S", dtype=dtype)
    A = te.placeholder((n,), name="A")
    X = te.placeholder((steps, n), name="X")
    h = te.recurrence((steps, n), [
        te.define(lambda h, t, i: A[i], where=lambda t, i: t == 0),
        te.define(lambda h, t, i: h[t - 1, i] * 0.5 + X[t, i], where=lambda t, i: t >= 1)], name="h")
    O = te.compute((n,), lambda i: h[steps - 1, i], name="O")
    s = te.create_schedule(O.op)
    s[h].storage_fold(h.op.axis[0], 2)
    f = tessel.build(s, [A, X, O], target=target)
    a, x = rand(7), rand(5, 7)
    want = a.astype("float64")
    for t in range(1, 5):
        want = want * 0.5 + x[t]
    out = np.empty(7, "float32")
    f(a, x, out)
    np.testing.assert_allclose(out, want, rtol=1e-5)


def _skewed_stencil(dn: str, ds: str):
    n, steps = te.var("n", dtype=dn), te.var("S", dtype=ds)
    A = te.placeholder((n,), name="A")
    h = te.recurrence((steps, n), [
        te.define(lambda h, t, i: A[i], where=lambda t, i: t == 0),
        te.define(lambda h, t, i: te.if_then_else(te.any(i == 0, i == n - 1), h[t - 1, i],
                                                  (h[t - 1, i - 1] + h[t - 1, i] + h[t - 1, i + 1]) / 3.0),
                  where=lambda t, i: t >= 1)], name="h")
    s = te.create_schedule(h.op)
    t, i = h.op.axis
    s[h].skew(t, i, 1, 0, 1, 1)
    return s, [A, h]


@pytest.mark.parametrize("target", TARGETS)
def test_a_skew_over_an_int64_and_an_int32_size_is_refused_saying_what_to_declare(target):
    """isl's AST writes the skewed space index in int64, the body is int32 arithmetic: an
    InternalError (operands int64 vs int32) before; now the narrowing is the index dtype pass's
    to prove, which it cannot, and it says so. With both sizes of one type it builds."""
    s, args = _skewed_stencil("int32", "int64")
    with pytest.raises(tessel.LowerError, match="int32"):
        tessel.build(s, args, target=target)
    a = rand(9)
    want = [a.astype("float64")]
    for _ in range(4):
        p = want[-1].copy()
        p[1:-1] = (want[-1][:-2] + want[-1][1:-1] + want[-1][2:]) / 3.0
        want.append(p)
    for dtype in ("int32", "int64"):
        s, args = _skewed_stencil(dtype, dtype)
        out = np.empty((5, 9), "float32")
        tessel.build(s, args, target=target)(a, out)
        np.testing.assert_allclose(out, np.array(want), rtol=1e-5)
