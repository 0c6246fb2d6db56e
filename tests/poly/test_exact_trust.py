"""Issue 29, defects 5, 6 and 9: the exact region plan where it meets a reduction's ``init=``,
a declared domain (``where=``) and a consumer's guards, on both targets, against NumPy, with
``exact=True`` and ``exact=False`` giving the same values.

What the three shared: a set was taken for where a statement runs when the loops around it
run more (a reduction's init runs where its sum is empty; a guard past a split's end wraps
only its own stage's statement), or less (a hoisted init over the interval box)."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import check, rand

from tessel import te

EXACT = pytest.mark.parametrize("exact", [True, False], ids=["exact", "intervals"])


def _suffix_sums(n: int, split: int | None = None, attach: bool = False):
    """``E[i] = 2*A[i] + sum(A[i+1:])``: the init reads ``P = 2*A``, and ``E[n-1]``'s sum is empty."""
    A = te.placeholder((n,), name="A", dtype="float64")
    P = te.compute((n,), lambda i: 2.0 * A[i], name="P")

    def body(i):
        k = te.reduce_axis((i + 1, n), name="k")
        return te.sum(A[k], axis=k, init=P[i])

    E = te.compute((n,), body, name="E")
    s = te.create_schedule(E.op)
    at = E.op.axis[0]
    if split:
        _, at = s[E].split(at, split)
    if attach:
        s[P].compute_at(s[E], at)
    a = rand(n, dtype="float64")
    want = np.array([2 * a[i] + a[i + 1:].sum() for i in range(n)])
    return s, [A, E], [a], [want]


@EXACT
@pytest.mark.parametrize("n", [7, 13])
def test_a_stage_read_only_by_an_init_is_computed_where_the_sum_is_empty(n, exact):
    s, args, ins, want = _suffix_sums(n)
    check(s, args, ins, want, exact=exact)


@EXACT
@pytest.mark.parametrize("split,attach", [(3, False), (3, True), (5, True)])
def test_an_init_after_a_split_reads_its_element_of_the_split_axis(split, attach, exact):
    """The init is written in the root axis ``i``, which the split turns into two loops; the
    sum's bounds (``i + 1``) follow it there too."""
    s, args, ins, want = _suffix_sums(13, split, attach)
    check(s, args, ins, want, exact=exact)


@EXACT
def test_a_reduction_read_exactly_sets_its_empty_sums_too(exact):
    """The reduction is an intermediate whose reader asks for part of it (a split past the
    end): the elements it computes include those whose sum is empty."""
    n = 13
    A = te.placeholder((n,), name="A", dtype="float64")

    def body(i):
        k = te.reduce_axis((i + 1, n), name="k")
        return te.sum(A[k], axis=k, init=A[i] * 3.0)

    E = te.compute((n,), body, name="E")
    F = te.compute((n - 2,), lambda i: E[i + 2] - E[i], name="F")
    s = te.create_schedule(F.op)
    outer, _ = s[F].split(F.op.axis[0], 4)
    s[E].compute_at(s[F], outer)
    a = rand(n, dtype="float64")
    e = np.array([3 * a[i] + a[i + 1:].sum() for i in range(n)])
    check(s, [A, F], [a], [e[2:] - e[:-2]], exact=exact)


def _gram(n, order: str):
    """``B[i, j] = 2*C[i, j] + sum_k A[i, k]*A[j, k]`` over ``j <= i`` only."""
    A = te.placeholder((n, n), name="A", dtype="float64")
    C = te.placeholder((n, n), name="C", dtype="float64")
    k = te.reduce_axis((0, n), name="k")
    B = te.compute((n, n), lambda i, j: te.sum(A[i, k] * A[j, k], axis=k, init=C[i, j] * 2.0),
                   name="B", where=lambda i, j: j <= i)
    s = te.create_schedule(B.op)
    i, j = B.op.axis
    if order == "ikj":
        s[B].reorder(i, k, j)
    elif order == "kij":
        s[B].reorder(k, i, j)
    elif order == "split":
        jo, ji = s[B].split(j, 4)
        s[B].reorder(i, jo, k, ji)
    return s, A, B, C


@EXACT
@pytest.mark.parametrize("order", ["ijk", "ikj", "kij", "split"])
@pytest.mark.parametrize("n", [7, 13])
def test_a_hoisted_init_keeps_to_the_declared_domain(n, order, exact):
    s, A, B, C = _gram(n, order)
    a, c = rand(n, n, dtype="float64"), rand(n, n, dtype="float64", seed=5)
    full = 2 * c + a @ a.T
    # the elements outside the domain keep what the output held (check fills it with NaN)
    want = np.where(np.tril(np.ones((n, n), bool)), full, np.nan)
    check(s, [A, C, B], [a, c], [want], exact=exact)


@EXACT
def test_a_hoisted_init_keeps_to_a_symbolic_domain_under_assumptions(exact):
    n = te.var("n")
    s, A, B, C = _gram(n, "ikj")
    s.assume("n >= 3")
    for size in (7, 13):
        a, c = rand(size, size, dtype="float64"), rand(size, size, dtype="float64", seed=5)
        full = 2 * c + a @ a.T
        check(s, [A, C, B], [a, c], [np.where(np.tril(np.ones((size, size), bool)), full, np.nan)], exact=exact)


def _stencils(offsets, split: int):
    """``S0``, ``S1``: two 3-point stencils from ``A`` (11x10), ``S1``'s column split and its row
    fused with the outer part, ``S0`` computed at the inner part."""
    A = te.placeholder((11, 10), name="A", dtype="float64")
    span = [max(o[d] for o in offsets) for d in (0, 1)]

    def stencil(T):
        return lambda i, j: sum((T[i + a, j + b] for a, b in offsets[1:]), T[i + offsets[0][0], j + offsets[0][1]])

    S0 = te.compute((11 - span[0], 10 - span[1]), stencil(A), name="S0")
    S1 = te.compute((11 - 2 * span[0], 10 - 2 * span[1]), stencil(S0), name="S1")
    s = te.create_schedule(S1.op)
    i, j = S1.op.axis
    _, ji = s[S1].split(j, split)
    s[S1].fuse(i, _)
    s[S0].compute_at(s[S1], ji)
    a = rand(11, 10, dtype="float64")

    def np_stencil(x, rows, cols):
        return sum(x[p:p + rows, q:q + cols] for p, q in offsets)

    s0 = np_stencil(a, 11 - span[0], 10 - span[1])
    return s, [A, S1], [a], [np_stencil(s0, 11 - 2 * span[0], 10 - 2 * span[1])]


@EXACT
@pytest.mark.parametrize("offsets,split", [
    ([(0, 0), (1, 0), (0, 1)], 6),  # the issue's: a write to S0[-10] of a 4-element temporary
    ([(0, 0), (1, 0), (0, 1)], 5),
    ([(0, 0), (1, 1), (2, 2)], 6),  # a diagonal: the column is a function of the row
])
def test_an_exact_temporary_is_not_computed_past_its_readers_guard(offsets, split, exact):
    """``S1``'s last column tile is partial: its guard skips ``S1``'s statement there, not
    the loops around it, so ``S0``, attached inside, must check that itself."""
    check(*_stencils(offsets, split), exact=exact)



@EXACT
def test_symbolic_sizes_under_assumptions(exact):
    """The init's reader attached at a split's outer loop, and the stencil pair, over a
    symbolic size: each call's size (the smallest the assumption allows too) gets its values."""
    n = te.var("n")
    A = te.placeholder((n,), name="A", dtype="float64")
    P = te.compute((n,), lambda i: 2.0 * A[i], name="P")

    def body(i):
        k = te.reduce_axis((i + 1, n), name="k")
        return te.sum(A[k], axis=k, init=P[i])

    E = te.compute((n,), body, name="E")
    s = te.create_schedule(E.op)
    outer, _ = s[E].split(E.op.axis[0], 4)
    s[P].compute_at(s[E], outer)
    s.assume("n >= 2")
    for size in (2, 7, 13):
        a = rand(size, dtype="float64")
        check(s, [A, E], [a], [np.array([2 * a[i] + a[i + 1:].sum() for i in range(size)])], exact=exact)
