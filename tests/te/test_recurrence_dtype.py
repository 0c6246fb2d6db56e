"""The dtype of a ``te.recurrence`` follows its values (issue 29, defect 8): a first
definition that is a reduction over the tensor's own reads, started from a float64 ``init``,
was float32 (its reads of itself were taken as float32, and the reduction cast the init down),
so a float64 LU-like recurrence lost half of its digits without a word."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import TARGETS, check, rand

import tessel
from tessel import te


def _prefix(n, input_dtype, **kw):
    A = te.placeholder((n,), name="A", dtype=input_dtype)
    k = te.reduce_axis((0, n), name="k")
    h = te.recurrence((n,), [te.define(lambda h, i: te.sum(h[k] * 0.5, axis=k, where=k < i, init=A[i]))],
                      name="h", **kw)
    return A, h


def _prefix_ref(a):
    want = a.copy()
    for i in range(1, len(a)):
        want[i] = a[i] + 0.5 * want[:i].sum()
    return want


def test_a_reduction_over_its_own_reads_takes_its_inits_float64():
    A, h = _prefix(13, "float64")
    assert h.dtype == "float64"
    s = te.create_schedule(h.op)
    a = rand(13, dtype="float64")
    check(s, [A, h], [a], [_prefix_ref(a)], rtol=1e-13, atol=1e-13)


def test_lu_like_recurrence_in_float64():
    """``h[i, j] = A[i, j] - sum(h[i, k] * h[k, j] for k < min(i, j))``: LU's update."""
    n = 7
    A = te.placeholder((n, n), name="A", dtype="float64")
    k = te.reduce_axis((0, n), name="k")
    h = te.recurrence((n, n), [te.define(lambda h, i, j: te.sum(-h[i, k] * h[k, j], axis=k,
                                                                 where=te.all(k < i, k < j), init=A[i, j]))],
                      name="h")
    assert h.dtype == "float64"
    s = te.create_schedule(h.op)
    a = rand(n, n, dtype="float64") / 4
    want = a.copy()
    for i in range(n):
        for j in range(n):
            want[i, j] = a[i, j] - sum(want[i, q] * want[q, j] for q in range(min(i, j)))
    check(s, [A, h], [a], [want], rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("dtype, kw, want", [("float32", {}, "float32"), ("float64", {"dtype": "float32"}, "float32"),
                                              ("float16", {}, "float32")])
def test_float32_inputs_and_an_explicit_dtype_are_kept(dtype, kw, want):
    _, h = _prefix(7, dtype, **kw)
    assert h.dtype == want


def test_values_without_a_reduction_keep_their_dtype():
    A = te.placeholder((7,), name="A", dtype="float64")
    h = te.recurrence((7,), [te.define(lambda h, i: A[i]),
                             te.define(lambda h, i: h[i - 1] + A[i], where=lambda i: i >= 1)], name="h")
    assert h.dtype == "float64"


@pytest.mark.parametrize("target", TARGETS)
def test_an_integer_recurrence_reading_itself_first_stays_integer(target):
    """Floyd-Warshall as PolyBench writes it, in place in the int32 ``path``: a guess of float32
    for its own reads settled at float32, and store_in into ``path`` was refused for the dtype."""
    n = 6
    P = te.placeholder((n, n), "int32", name="path")
    h = te.recurrence((n, n, n), [te.define(
        lambda h, k, i, j: te.min(te.if_then_else(k > 0, h[k - 1, i, j], P[i, j]),
                                  te.if_then_else(k > 0, h[k - 1, i, k], P[i, k]) +
                                  te.if_then_else(k > 0, h[k - 1, k, j], P[k, j])))], name="h")
    assert h.dtype == "int32"
    out = te.compute((n, n), lambda i, j: h[n - 1, i, j], name="out")
    s = te.create_schedule(out.op)
    p = np.random.default_rng(5).integers(1, 50, (n, n)).astype("int32")
    want = p.copy()
    for k in range(n):
        want = np.minimum(want, want[:, k:k + 1] + want[k:k + 1, :])
    got = np.zeros((n, n), "int32")
    tessel.build(s, [P, out], target=target)(p, got)
    np.testing.assert_array_equal(got, want)
