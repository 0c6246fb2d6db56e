"""A scan of several states of different ranks (a row per step and a number per step), read by
a later stage: each state's region is gathered from the requests for that state alone (issue 33:
an IndexError in ScanOp.gather_bound, which indexed one state's request with another's axes)."""

from __future__ import annotations

import numpy as np
import pytest

import tessel
from tessel import te


def _program(T: int, n: int, row_first: bool):
    A = te.placeholder((T, n), name="A")
    Xs = te.placeholder((T, n), name="Xs")
    Ys = te.placeholder((T,), name="Ys")
    Xi = te.compute((1, n), lambda t, i: A[0, i], name="Xi")
    Yi = te.compute((1,), lambda t: A[0, 0] * 0.0 + 1.0, name="Yi")
    Xu = te.compute((T, n), lambda t, i: Xs[t - 1, i] * 0.5 + Ys[t - 1] + A[t, i], name="Xu")
    Yu = te.compute((T,), lambda t: Ys[t - 1] + Xs[t - 1, n - 1], name="Yu")
    if row_first:
        X, Y = te.scan([Xi, Yi], [Xu, Yu], [Xs, Ys], name="sc")
    else:
        Y, X = te.scan([Yi, Xi], [Yu, Xu], [Ys, Xs], name="sc")
    Z = te.compute((n,), lambda i: X[T - 1, i] * Y[T - 2], name="Z")
    return A, Z


def _reference(a: np.ndarray) -> np.ndarray:
    T, n = a.shape
    x, y = np.zeros((T, n)), np.zeros(T)
    x[0], y[0] = a[0], 1.0
    for t in range(1, T):
        x[t] = x[t - 1] * 0.5 + y[t - 1] + a[t]
        y[t] = y[t - 1] + x[t - 1, n - 1]
    return x[T - 1] * y[T - 2]


@pytest.mark.parametrize("target", ["c", "python"])
@pytest.mark.parametrize("row_first", [True, False])
@pytest.mark.parametrize("T, n", [(6, 5), (3, 17)])
@pytest.mark.parametrize("scheduled", [False, True])
def test_states_of_different_ranks_read_by_a_later_stage(target, row_first, T, n, scheduled):
    A, Z = _program(T, n, row_first)
    s = te.create_schedule(Z.op)
    if scheduled:  # the reader split by a factor that does not divide it, its inner loop vectorized
        _, zi = s[Z].split(Z.op.axis[0], factor=4)
        s[Z].vectorize(zi)
    f = tessel.build(s, [A, Z], target=target)
    a = np.random.default_rng(T * n).random((T, n)).astype("float32")
    z = np.full(n, np.nan, dtype="float32")
    f(a, z)
    np.testing.assert_allclose(z, _reference(a.astype(np.float64)), rtol=1e-5)
