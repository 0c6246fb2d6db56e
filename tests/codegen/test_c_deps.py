"""Loops carrying a dependence through memory are kept from the C compiler's vectorizer
(tessel/passes/carried.py): GCC 12 at -O3 -march=native vectorized the outer loop of a
diagonal recurrence and of an in-place stencil and got other values (issue 29, defect 4).

The value checks run on both targets against a sequential NumPy loop; the guard checks read
the generated C, so they hold on any machine: the guard is on exactly the loops that carry
one, and never on a reduction into its own element (matmul), which stays vectorizable.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from helpers import TARGETS, check, rand

import tessel
from tessel import te

GUARD = '__asm__ volatile("");'


def guarded_loops(src: str) -> list[str]:
    """The variables of the loops of ``src`` whose body opens with the guard, in order."""
    lines = [ln.strip() for ln in src.splitlines()]
    out = []
    for k, ln in enumerate(lines[:-1]):
        m = re.match(r"for \(\w+ (\w+) = ", ln)
        if m and lines[k + 1].startswith(GUARD):
            out.append(m.group(1))
    return out


def loop_vars(src: str) -> list[str]:
    return re.findall(r"for \(\w+ (\w+) = ", src)


def diagonal(n, m):
    A = te.placeholder((n, m), name="A", dtype="float64")
    h = te.recurrence((n, m), [te.define(lambda h, i, j: A[i, j]),
                               te.define(lambda h, i, j: A[i, j] + h[i - 1, j - 1],
                                         where=lambda i, j: te.all(i >= 1, j >= 1))], name="h")
    return A, h


def diagonal_ref(a):
    want = a.copy()
    for i in range(1, a.shape[0]):
        for j in range(1, a.shape[1]):
            want[i, j] = a[i, j] + want[i - 1, j - 1]
    return want


def test_diagonal_recurrence_6x4_default_schedule():
    A, h = diagonal(6, 4)
    s = te.create_schedule(h.op)
    a = rand(6, 4, dtype="float64")
    kernels = check(s, [A, h], [a], [diagonal_ref(a)], rtol=1e-12, atol=1e-12)
    src = kernels["c"].source
    # the second definition's rows carry h[i-1, j-1]; its columns (same row) carry nothing
    assert guarded_loops(src) == [loop_vars(src)[2]], src


@pytest.mark.parametrize("n, m", [(7, 13), (13, 7)])
def test_diagonal_recurrence_symbolic_sizes_guards_the_rows_only(n, m):
    N, M = te.var("n"), te.var("m")
    A, h = diagonal(N, M)
    s = te.create_schedule(h.op)
    a = rand(n, m, dtype="float64")
    for target in TARGETS:
        f = tessel.build(s, [A, h], target=target)
        out = np.full((n, m), np.nan)
        f(a, out)
        np.testing.assert_allclose(out, diagonal_ref(a), rtol=1e-12, err_msg=target)
    src = f.source
    assert guarded_loops(src) == [loop_vars(src)[2]], src


def _stencil_ref(a, rows, cols, a_off, b_off):
    want = a.copy()
    for i in range(rows):
        for j in range(cols):
            want[i + 1, j + 1] = want[i + a_off, j + a_off] + want[i + b_off, j + b_off]
    return want


@pytest.mark.parametrize("target", TARGETS)
def test_in_place_stencil_issue_reproducer(target):
    """``A[i*10+j+11] = A[i*10+j] + A[i*10+j+22]`` for i, j < 7: the issue's own C."""
    A = te.placeholder((9, 10), name="A", dtype="float64")
    R = te.compute((7, 7), lambda i, j: A[i, j] + A[i + 2, j + 2], name="R")
    s = te.create_schedule(R.op)
    s[R].store_in(A, lambda i, j: (i + 1, j + 1))
    a = rand(9, 10, dtype="float64")
    f = tessel.build(s, [A], target=target)
    x = a.copy()
    f(x)
    np.testing.assert_allclose(x, _stencil_ref(a, 7, 7, 0, 2), rtol=1e-12)
    if target == "c":
        assert "A[i * 10 + j + 11] = A[i * 10 + j] + A[i * 10 + j + 22]" in f.source
        assert guarded_loops(f.source) == ["i"], f.source


@pytest.mark.parametrize("target", TARGETS)
def test_in_place_stencil_along_rows_guards_both_loops(target):
    """``A[i+1, j+1] = A[i, j+1] + A[i+1, j]``: the columns carry the second read as well."""
    n, m = 13, 7
    A = te.placeholder((n, m), name="A", dtype="float64")
    R = te.compute((n - 1, m - 1), lambda i, j: A[i, j + 1] + A[i + 1, j], name="R")
    s = te.create_schedule(R.op)
    s[R].store_in(A, lambda i, j: (i + 1, j + 1))
    a = rand(n, m, dtype="float64")
    f = tessel.build(s, [A], target=target)
    x = a.copy()
    f(x)
    want = a.copy()
    for i in range(n - 1):
        for j in range(m - 1):
            want[i + 1, j + 1] = want[i, j + 1] + want[i + 1, j]
    np.testing.assert_allclose(x, want, rtol=1e-12)
    if target == "c":
        assert guarded_loops(f.source) == ["i", "j"], f.source


def test_no_guard_on_a_reduction_into_its_own_element():
    """matmul's C[i, j] += A[i, k] * B[k, j] and an out-of-place stencil carry nothing here."""
    n = 13
    A = te.placeholder((n, 7), name="A")
    B = te.placeholder((7, 11), name="B")
    k = te.reduce_axis((0, 7), name="k")
    C = te.compute((n, 11), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    D = te.compute((n - 2, 11), lambda i, j: C[i, j] + C[i + 2, j], name="D")
    s = te.create_schedule(D.op)
    a, b = rand(n, 7), rand(7, 11)
    c = a @ b
    kernels = check(s, [A, B, D], [a, b], [c[:-2] + c[2:]], rtol=1e-4)
    assert GUARD not in kernels["c"].source


def test_prefix_sum_guards_its_loop():
    n = 13
    A = te.placeholder((n,), name="A")
    h = te.recurrence((n,), [te.define(lambda h, i: A[i]),
                             te.define(lambda h, i: h[i - 1] + A[i], where=lambda i: i >= 1)], name="h")
    s = te.create_schedule(h.op)
    a = rand(n)
    kernels = check(s, [A, h], [a], [np.cumsum(a)], rtol=1e-5)
    src = kernels["c"].source
    assert guarded_loops(src) == [loop_vars(src)[1]], src
