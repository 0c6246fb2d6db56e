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
