"""cache_write of a reduction whose range is written over the data axes (a triangle,
``reduce_axis((i + 1, m))``, as trmm and the solvers write it): the cache's loops are ``i.c``,
so the range is remade over them. It kept ``i``, free in the cache's code: refused with a
LowerError about int32 sizes the program did not have."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import check, rand

import tessel
from tessel import te


def _trmm_sums(m, n):
    A = te.placeholder((m, m), name="A", dtype="float64")
    B = te.placeholder((m, n), name="B", dtype="float64")

    def body(i, j):
        k = te.reduce_axis((i + 1, m), name="k")
        return te.sum(A[k, i] * B[k, j], axis=k)

    S = te.compute((m, n), body, name="S")
    return A, B, S


def _want(a, b, m, n):
    return np.array([[sum(a[k, i] * b[k, j] for k in range(i + 1, m)) for j in range(n)] for i in range(m)])


@pytest.mark.parametrize("schedule", ["plain", "split", "attached", "reordered"])
def test_cache_write_of_a_triangular_sum_equals_numpy(schedule):
    m, n = 9, 11
    A, B, S = _trmm_sums(m, n)
    s = te.create_schedule(S.op)
    SL = s.cache_write(S, "local")
    if schedule == "split":
        s[SL].split(SL.op.reduce_axis[0], factor=4)
    elif schedule == "attached":
        io, ii = s[S].split(S.op.axis[0], factor=2)
        s[SL].compute_at(s[S], io)
    elif schedule == "reordered":
        i, j = SL.op.axis
        s[SL].reorder(i, SL.op.reduce_axis[0], j)
    a, b = rand(m, m, dtype="float64"), rand(m, n, dtype="float64")
    check(s, [A, B, S], [a, b], [_want(a, b, m, n)])


def test_the_cache_reduces_over_its_own_axes_and_a_plain_range_keeps_its_iter_var():
    """The triangle's axis is remade (its range over ``i.c``); an axis of constant range stays
    the user's IterVar, as in TVM (``S.op.reduce_axis[0]`` schedules the cache)."""
    m, n = 6, 5
    A, B, S = _trmm_sums(m, n)
    s = te.create_schedule(S.op)
    SL = s.cache_write(S, "local")
    (k,) = SL.op.reduce_axis
    assert k is not S.op.reduce_axis[0] and "i.c" in str(k.dom.min)
    C = te.placeholder((m, m), name="C")
    r = te.reduce_axis((0, m), name="r")
    D = te.compute((m,), lambda i: te.sum(C[i, r], axis=r), name="D")
    s2 = te.create_schedule(D.op)
    DL = s2.cache_write(D, "local")
    assert DL.op.reduce_axis[0] is r
    s2[DL].split(r, factor=4)  # the user's handle is a loop of the cache
    c = rand(m, m)
    check(s2, [C, D], [c], [c.sum(axis=1)])


def test_symbolic_sizes():
    m = te.var("m")
    A = te.placeholder((m, m), name="A", dtype="float64")

    def body(i):
        k = te.reduce_axis((i + 1, m), name="k")
        return te.sum(A[i, k], axis=k)

    S = te.compute((m,), body, name="S")
    s = te.create_schedule(S.op)
    s.cache_write(S, "local")
    for size in (1, 7, 13):
        a = rand(size, size, dtype="float64")
        check(s, [A, S], [a], [np.array([a[i, i + 1:].sum() for i in range(size)])])
    assert tessel.lower(s, [A, S]) is not None


def test_a_combiner_over_the_data_axes_is_remade_over_the_caches_axes():
    """A reducer whose combine and identity read the compute's own axis (TVM's
    test_loop_dep_reduce_cache_write): the cache's combiner reads ``i.c``; it kept ``i``, which
    the kernel then used unbound (a BuildError)."""
    n = 10
    X = te.placeholder((n,), name="X")

    def body(i):
        rv = te.reduce_axis((0, i), name="rv")
        init = lambda dt: te.select(i > 1, te.const(0, dt), i.astype(dt))  # noqa: E731
        capped = te.comm_reducer(lambda x, y: te.max(x + y, i.astype("float32")), init, name="capped")
        return capped(X[rv], axis=rv)

    Y = te.compute((n,), body, name="Y")
    s = te.create_schedule(Y.op)
    s.cache_write(Y, "local")
    x = rand(n)
    want = np.zeros(n, "float32")
    for i in range(n):
        acc = np.float32(0 if i > 1 else i)
        for r in range(i):
            acc = max(acc + x[r], np.float32(i))
        want[i] = acc
    check(s, [X, Y], [x], [want])
