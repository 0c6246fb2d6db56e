"""A reduction inside a larger expression -- the solvers' ``(A[i, j] - sum) / d`` and
``sqrt(A[i, i] - sum)`` -- is one definition: the value is accumulated where it is stored, then
finished once its reduction is complete (issue 33: "a reduction must be a definition's whole
value" made LU, Cholesky, trisolv and ludcmp need an extra layer or a value spread over the
terms). Checked against NumPy on both targets under the schedules a reduction takes."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import TARGETS

import tessel
from tessel import te
from tessel.errors import DefinitionError

F64 = "float64"


def _mean_and_norm(n, m):
    A = te.placeholder((n, m), F64, name="A")
    k = te.reduce_axis((0, m), name="k")
    mean = te.compute((n,), lambda i: te.sum(A[i, k], axis=k) / m, name="mean")
    r = te.reduce_axis((0, m), name="r")
    norm = te.compute((n,), lambda i: te.sqrt(te.sum(A[i, r] * A[i, r], axis=r)) + 1.0, name="norm")
    return A, mean, norm


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("schedule", ["plain", "split_k", "reduce_outside", "rfactor", "cache_write", "parallel"])
def test_a_mean_and_a_norm(target, schedule):
    n, m = 7, 13
    A, mean, norm = _mean_and_norm(n, m)
    s = te.create_schedule([mean.op, norm.op])
    if schedule == "split_k":
        s[mean].split(mean.op.reduce_axis[0], factor=4)
    elif schedule == "reduce_outside":  # the data loop inside the reduction loop: finished after it
        s[mean].reorder(mean.op.reduce_axis[0], mean.op.axis[0])
    elif schedule == "rfactor":
        _, ki = s[norm].split(norm.op.reduce_axis[0], factor=4)
        s.rfactor(norm, ki)
    elif schedule == "cache_write":
        s.cache_write(mean, "local")
    elif schedule == "parallel":
        s[norm].parallel(norm.op.axis[0])
    a = np.random.default_rng(1).random((n, m))
    got_mean, got_norm = np.zeros(n), np.zeros(n)
    tessel.build(s, [A, mean, norm], target=target)(a, got_mean, got_norm)
    np.testing.assert_allclose(got_mean, a.mean(axis=1), rtol=1e-12)
    np.testing.assert_allclose(got_norm, np.sqrt((a * a).sum(axis=1)) + 1.0, rtol=1e-12)


def _lu(n):
    A = te.placeholder((n, n), F64, name="A")

    def body(h, i, j):
        k = te.reduce_axis((0, n), name="k")
        d = te.if_then_else(j < i, h[j, j], te.const(1.0, F64))
        return te.sum(-h[i, k] * h[k, j], axis=k, where=te.all(k < i, k < j), init=h[i, j]) / d

    return A, te.recurrence(None, [te.define(body)], name="lu", inplace=A)


def _lu_ref(a):
    w = a.copy()
    n = len(w)
    for i in range(n):
        for j in range(i):
            w[i, j] = (w[i, j] - w[i, :j] @ w[:j, j]) / w[j, j]
        for j in range(i, n):
            w[i, j] -= w[i, :i] @ w[:i, j]
    return w


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(("n", "schedule"), [(9, "plain"), (11, "split_j"), (10, "skew")])
def test_lu_in_place_divides_once_its_sum_is_complete(target, n, schedule):
    A, h = _lu(n)
    s = te.create_schedule(h.op)
    if schedule == "split_j":
        s[h].split(h.op.axis[1], factor=4)
    elif schedule == "skew":  # a command: the nest comes from isl's AST
        s[h].skew(h.op.axis[0], h.op.axis[1], 1, 1)
    rng = np.random.default_rng(n)
    a0 = rng.random((n, n)) + np.eye(n) * n
    a = a0.copy()
    tessel.build(s, [A], target=target)(a)
    np.testing.assert_allclose(a, _lu_ref(a0), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("n", [8, 13])
def test_cholesky_as_polybench_writes_it(target, n):
    A = te.placeholder((n, n), F64, name="A")

    def chol(h, i, j):
        k = te.reduce_axis((0, n), name="k")
        s = te.sum(-h[i, k] * h[j, k], axis=k, where=k < j, init=h[i, j])
        return te.if_then_else(j < i, s / h[j, j], te.sqrt(s))

    h = te.recurrence(None, [te.define(chol, where=lambda i, j: j <= i)], name="chol", inplace=A)
    m = np.random.default_rng(n).random((n, n))
    a0 = m @ m.T + n * np.eye(n)
    a = a0.copy()
    tessel.build(te.create_schedule(h.op), [A], target=target)(a)
    np.testing.assert_allclose(np.tril(a), np.linalg.cholesky(a0), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("target", TARGETS)
def test_back_substitution_runs_backwards_and_divides(target):
    """ludcmp's second solve: x[i] = (y[i] - sum_{j > i} U[i, j] x[j]) / U[i, i], in place in x."""
    n = 10
    U = te.placeholder((n, n), F64, name="U")
    x = te.placeholder((n,), F64, name="x")

    def solve(h, i):
        j = te.reduce_axis((0, n), name="j")
        return te.sum(-U[i, j] * h[j], axis=j, where=j > i, init=h[i]) / U[i, i]

    X = te.recurrence(None, [te.define(solve)], name="X", inplace=x)
    rng = np.random.default_rng(4)
    u = np.triu(rng.random((n, n))) + np.eye(n) * n
    y = rng.random(n)
    xv = y.copy()
    tessel.build(te.create_schedule(X.op), [U, x], target=target)(u, xv)
    np.testing.assert_allclose(xv, np.linalg.solve(u, y), rtol=1e-12)


def test_a_finish_reading_the_accumulated_point_is_refused_with_the_fix():
    n = 5
    A = te.placeholder((n, n), F64, name="A")

    def bad(h, i, j):
        k = te.reduce_axis((0, n), name="k")
        return (h[i, j] - te.sum(h[i, k] * h[k, j], axis=k, where=k < te.min(i, j))) / 2.0

    with pytest.raises(DefinitionError, match=r"reads bad\[i, j\], the point its reduction is accumulated in.*init="):
        te.recurrence(None, [te.define(bad)], name="bad", inplace=A)


def test_two_reductions_in_one_value_are_still_refused():
    A = te.placeholder((4, 6), F64, name="A")
    k, r = te.reduce_axis((0, 6), name="k"), te.reduce_axis((0, 6), name="r")
    with pytest.raises(DefinitionError, match="one reduction of one value inside an expression"):
        te.compute((4,), lambda i: te.sum(A[i, k], axis=k) / te.max(A[i, r], axis=r), name="bad")


def test_the_printer_shows_the_finish():
    A, mean, _ = _mean_and_norm(3, 4)
    assert "then sum_value -> sum_value/4" in str(mean.op.body[0]).replace(" / ", "/")


@pytest.mark.parametrize("target", TARGETS)
def test_a_stage_the_finish_reads_cannot_live_inside_the_reduction_loop(target):
    """Found by the fuzzer: C attached at D's reduction loop is computed anew for each step and is
    not there when D's value is finished after the loop (it was a LowerError: C is read but not
    computed). Refused as a tree rule, with a fix that is checked; the fix builds right."""
    n, m = 8, 6
    A = te.placeholder((n, m), F64, name="A")
    C = te.compute((n, m), lambda i, j: A[i, j] + 1.0, name="C")
    kd = te.reduce_axis((0, m), name="kd")
    D = te.compute((n,), lambda i: te.sum(C[i, kd], axis=kd) * 2.0 + C[i, 0], name="D")
    s = te.create_schedule(D.op)
    s[C].compute_at(s[D], s[D].leaf_iter_vars[1])
    with pytest.raises(tessel.ScheduleError, match="C is read by what finishes reduction D's value") as err:
        tessel.build(s, [A, D], target=target)
    err.value.fix_steps.apply(s)
    a = np.random.default_rng(2).random((n, m))
    got = np.zeros(n)
    tessel.build(s, [A, D], target=target)(a, got)
    c = a + 1.0
    np.testing.assert_allclose(got, c.sum(axis=1) * 2.0 + c[:, 0], rtol=1e-12)


@pytest.mark.parametrize("target", TARGETS)
def test_symbolic_sizes_and_a_store_into_an_input(target):
    """A finished reduction over symbolic sizes, stored in place into an input it does not read
    (a command: the nest comes from isl's AST), at two sizes."""
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n, m), F64, name="A")
    M = te.placeholder((n,), F64, name="M")
    k = te.reduce_axis((0, m), name="k")
    mean = te.compute((n,), lambda i: te.sum(A[i, k], axis=k, init=M[i] * 0.0) / 4.0 + 1.0, name="mean")
    s = te.create_schedule(mean.op)
    s[mean].store_in(M)
    f = tessel.build(s, [A, M], target=target)
    for rows, cols in ((5, 7), (3, 11)):
        a = np.random.default_rng(rows).random((rows, cols))
        got = np.random.default_rng(cols).random(rows)
        f(a, got)
        np.testing.assert_allclose(got, a.sum(axis=1) / 4.0 + 1.0, rtol=1e-12)
