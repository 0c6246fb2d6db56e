"""``auto_schedule`` on recurrences (issue 33: it did nothing on the 15 recurrence kernels of
PolyBench): a time-iterated stencil keeps the fewest steps that hold every value until it is
read, runs its rows in parallel and its interior as vector code; a sweep whose loops all carry
a dependence is left as it is. Values against NumPy on both targets."""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import TARGETS, heat_steps, heat_steps_ref

import tessel
from tessel import te
from tessel.ir import stmt as S
from tessel.ir.functor import collect


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(("steps", "n", "m"), [(9, 13, 21), (6, 10, 33)])
def test_a_stencil_over_time_is_folded_parallel_and_vector_code(target, steps, n, m):
    A, h, out = heat_steps(steps, n, m)
    s = tessel.auto_schedule([out], target="c", budget=0)
    code = s.python()
    assert "storage_fold(" in code and ".parallel(" in code and ".vectorize(" in code
    # the steps kept: a fold of 2, not all of them
    func = tessel.lower(s, [A, out])
    temps = [math.prod(x.value for x in a.buffer.shape)
             for a in collect(func.body, lambda x: isinstance(x, S.Allocate), statements_only=True)]
    assert max(temps) == 2 * n * m
    a = np.random.default_rng(steps).random((n, m))
    got = np.zeros((n, m))
    tessel.build(s, [A, out], target=target)(a, got)
    np.testing.assert_allclose(got, heat_steps_ref(a, steps), rtol=1e-12)


@pytest.mark.parametrize("target", TARGETS)
def test_a_sweep_whose_loops_all_carry_is_left_as_written(target):
    """LU in place: every loop carries a dependence, so nothing is annotated, and it is right."""
    n = 9
    A = te.placeholder((n, n), name="A", dtype="float64")

    def lu(h, i, j):
        k = te.reduce_axis((0, n), name="k")
        s = te.sum(-h[i, k] * h[k, j], axis=k, where=te.all(k < i, k < j), init=h[i, j])
        return te.if_then_else(j < i, s / h[j, j], s)

    L = te.recurrence(None, [te.define(lu)], name="lu", inplace=A)
    s = tessel.auto_schedule([L], target="c", budget=0)
    assert ".parallel(" not in s.python() and ".vectorize(" not in s.python()
    a0 = np.random.default_rng(1).random((n, n)) + np.eye(n) * n
    want = a0.copy()
    for i in range(n):
        for j in range(i):
            want[i, j] = (want[i, j] - want[i, :j] @ want[:j, j]) / want[j, j]
        for j in range(i, n):
            want[i, j] -= want[i, :i] @ want[:i, j]
    a = a0.copy()
    tessel.build(s, [A], target=target)(a)
    np.testing.assert_allclose(a, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("target", TARGETS)
def test_a_scan_keeps_the_fewest_steps(target):
    T, n = 8, 11
    X = te.placeholder((T, n), name="X", dtype="float64")
    init = te.compute((1, n), lambda _, i: X[0, i], name="init")
    st = te.placeholder((T, n), name="st", dtype="float64")
    upd = te.compute((T, n), lambda t, i: st[t - 1, i] * 0.5 + X[t, i], name="upd")
    res = te.scan(init, upd, st, name="res")
    out = te.compute((n,), lambda i: res[T - 1, i], name="out")
    s = tessel.auto_schedule([out], target="c", budget=0)
    assert "storage_fold(" in s.python()
    func = tessel.lower(s, [X, out])
    sizes = {a.buffer.name: math.prod(x.value for x in a.buffer.shape)
             for a in collect(func.body, lambda x: isinstance(x, S.Allocate), statements_only=True)}
    assert sizes["res"] == 2 * n
    x = np.random.default_rng(5).random((T, n))
    want = x[0].copy()
    for t in range(1, T):
        want = want * 0.5 + x[t]
    got = np.zeros(n)
    tessel.build(s, [X, out], target=target)(x, got)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def _seidel(steps: int, n: int):
    """PolyBench's seidel-2d over time: each point reads its upper and left neighbours' new
    values, the others' old ones."""
    A = te.placeholder((n, n), name="A", dtype="float64")

    def sweep(h, t, i, j):
        edge = te.any(i == 0, j == 0, i == n - 1, j == n - 1)
        return te.if_then_else(edge, h[t - 1, i, j], (
            h[t, i - 1, j - 1] + h[t, i - 1, j] + h[t, i - 1, j + 1] + h[t, i, j - 1] + h[t - 1, i, j]
            + h[t - 1, i, j + 1] + h[t - 1, i + 1, j - 1] + h[t - 1, i + 1, j] + h[t - 1, i + 1, j + 1]) / 9.0)

    h = te.recurrence((steps + 1, n, n), [te.define(lambda h, t, i, j: A[i, j], where=lambda t, i, j: t == 0),
                                          te.define(sweep, where=lambda t, i, j: t >= 1)], name="seidel")
    out = te.compute((n, n), lambda i, j: h[steps, i, j], name="out")
    return A, out


def _seidel_ref(a: np.ndarray, steps: int) -> np.ndarray:
    a = a.copy()
    n = a.shape[0]
    for _ in range(steps):
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                a[i, j] = (a[i - 1, j - 1] + a[i - 1, j] + a[i - 1, j + 1] + a[i, j - 1] + a[i, j] + a[i, j + 1]
                           + a[i + 1, j - 1] + a[i + 1, j] + a[i + 1, j + 1]) / 9.0
    return a


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(("steps", "n"), [(3, 11), (2, 16)])
def test_a_sweep_in_place_with_no_free_loop_becomes_a_wavefront(target, steps, n):
    """Gauss-Seidel: one step in place (a fold of 1), no loop free, so the last two loops are
    skewed until the inner one carries nothing: its points are independent chains. The same
    operations on each point in the same order: the values are PolyBench's to the bit."""
    A, out = _seidel(steps, n)
    s = tessel.auto_schedule([out], target="c", budget=0)
    code = s.python()
    assert "storage_fold(" in code and ".skew(" in code
    a = np.random.default_rng(n).random((n, n))
    got = np.zeros((n, n))
    tessel.build(s, [A, out], target=target)(a, got)
    np.testing.assert_array_equal(got, _seidel_ref(a, steps))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(("n", "m"), [(21, 37), (5, 9)])
def test_rows_of_a_carried_sweep_run_side_by_side(target, n, m):
    """Each row's sweep along j is a chain of divisions (adi's, a tridiagonal solve's): the rows
    are free, so groups of them run inside j, unrolled (unroll and jam), the groups in parallel
    where there are two or more; right on both targets, the last partial group too."""
    from tessel.autosched.recurrences import INTERLEAVED_ROWS

    X = te.placeholder((n, m), "float64", name="X")
    P = te.recurrence((n, m), [
        te.define(lambda h, i, j: X[i, 0], where=lambda i, j: j == 0),
        te.define(lambda h, i, j: X[i, j] / (0.5 * h[i, j - 1] + 2.0), where=lambda i, j: j >= 1)], name="P")
    s = tessel.auto_schedule([P], target="c", budget=0)
    code = s.python()
    assert f"s[P].split(i_2, {INTERLEAVED_ROWS})" in code and "s[P].unroll(i_inner)" in code
    assert ("s[P].parallel(i_outer)" in code) == (n > INTERLEAVED_ROWS)
    x = np.random.default_rng(n).random((n, m)) + 0.5
    want = np.zeros((n, m))
    want[:, 0] = x[:, 0]
    for j in range(1, m):
        want[:, j] = x[:, j] / (0.5 * want[:, j - 1] + 2.0)
    got = np.zeros((n, m))
    tessel.build(s, [X, P], target=target)(x, got)
    np.testing.assert_allclose(got, want, rtol=1e-13)
