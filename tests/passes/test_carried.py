"""The carried-dependence test of tessel/passes/carried.py against brute force: random
two-deep nests ``A[a*i + b*j + c] = A[p*i + q*j + r] + 1`` with constant bounds. A loop that
carries a dependence must be found (else the C compiler's vectorizer may get its values
wrong), and with constant bounds and affine indices the test is exact, so no loop that
carries none is kept from the vectorizer either."""

from __future__ import annotations

import itertools
import random

import pytest

from tessel.ir import expr as E
from tessel.ir import stmt as S
from tessel.passes.carried import carrying_loops


def _nest(n1, n2, w, r):
    i, j = E.Var("i", "int32"), E.Var("j", "int32")
    A = S.Buffer("A", "float32", (4096,))

    def at(c):
        return E.IntImm(c[0], "int32") * i + E.IntImm(c[1], "int32") * j + E.IntImm(c[2], "int32")

    body = S.BufferStore(A, E.BufferLoad(A, (at(r),)) + E.FloatImm(1.0, "float32"), (at(w),))
    inner = S.For(j, 0, n2, "serial", body)
    outer = S.For(i, 0, n1, "serial", inner)
    return S.PrimFunc("f", [A], [], outer), outer, inner


def _brute(n1, n2, w, r):
    """(outer carries, inner carries) by carried.py's definition: a write and a read at another
    index expression meet in two iterations (the loops outside shared, inside free)."""
    def idx(c, i, j):
        return c[0] * i + c[1] * j + c[2]

    if w == r:
        return False, False
    pts = list(itertools.product(range(n1), range(n2)))
    outer = any(idx(w, i1, j1) == idx(r, i2, j2) for (i1, j1) in pts for (i2, j2) in pts if i1 != i2)
    inner = any(idx(w, i, j1) == idx(r, i, j2) for i in range(n1) for j1 in range(n2) for j2 in range(n2) if j1 != j2)
    # an index that does not vary in the loop touches the same element in every iteration
    outer = outer and (w[:2] != (0, 0) or r[:2] != (0, 0))
    inner = inner and (w[1] != 0 or r[1] != 0)
    return outer, inner


@pytest.mark.parametrize("seed", range(4))
def test_the_carried_loops_are_those_brute_force_finds(seed):
    rng = random.Random(seed)
    for _ in range(60):
        n1, n2 = rng.randint(1, 7), rng.randint(1, 7)
        w = (rng.choice([0, 1, 2, 3, 7, 10, -1]), rng.choice([0, 1, 2, -1]), rng.randint(40, 60))
        r = (rng.choice([w[0], 0, 1, 2, 7, 10]), rng.choice([w[1], 0, 1, -1]), w[2] + rng.randint(-12, 12))
        func, outer, inner = _nest(n1, n2, w, r)
        got = carrying_loops(func)
        want = _brute(n1, n2, w, r)
        assert (id(outer) in got, id(inner) in got) == want, (n1, n2, w, r, got)


def _nest_many(n1, n2, accesses):
    """One body of several statements ``A[w] = A[r] + 1`` (``accesses``: (w, r) pairs)."""
    i, j = E.Var("i", "int32"), E.Var("j", "int32")
    A = S.Buffer("A", "float32", (4096,))

    def at(c):
        return E.IntImm(c[0], "int32") * i + E.IntImm(c[1], "int32") * j + E.IntImm(c[2], "int32")

    body = S.seq(*[S.BufferStore(A, E.BufferLoad(A, (at(r),)) + E.FloatImm(1.0, "float32"), (at(w),))
                   for w, r in accesses])
    inner = S.For(j, 0, n2, "serial", body)
    outer = S.For(i, 0, n1, "serial", inner)
    return S.PrimFunc("f", [A], [], outer), outer, inner


def _brute_many(n1, n2, accesses):
    """carried.py's definition over every store and every other access (a store or a load at
    another index expression), either one first."""
    stores = [w for w, _ in accesses]
    every = [(w, True) for w in stores] + [(r, False) for _, r in accesses]

    def idx(c, i, j):
        return c[0] * i + c[1] * j + c[2]

    outer = inner = False
    for w in stores:
        for a, _ in every:
            if a == w:
                continue
            pts = list(itertools.product(range(n1), range(n2)))
            o = any(idx(w, i1, j1) == idx(a, i2, j2) or idx(a, i1, j1) == idx(w, i2, j2)
                    for (i1, j1) in pts for (i2, j2) in pts if i1 < i2)
            n = any(idx(w, i, j1) == idx(a, i, j2) for i in range(n1) for j1 in range(n2) for j2 in range(n2)
                    if j1 != j2)
            outer |= o and (w[:2] != (0, 0) or a[:2] != (0, 0))
            inner |= n and (w[1] != 0 or a[1] != 0)
    return outer, inner


@pytest.mark.parametrize("seed", range(4))
def test_many_accesses_alike_but_for_their_constants(seed):
    """A register tile's shape: several stores and loads whose indices differ only in their
    constants (asked as one class of differences), mixed with others."""
    rng = random.Random(100 + seed)
    for _ in range(40):
        n1, n2 = rng.randint(1, 6), rng.randint(1, 6)
        a, b = rng.choice([0, 1, 4, 8, -1]), rng.choice([0, 1, 2, -1])
        accesses = []
        for _ in range(rng.randint(2, 5)):
            w = (a, b, rng.randint(40, 60)) if rng.random() < 0.7 else (rng.choice([0, 1, 3]), rng.choice([0, 1]), 50)
            r = (a, b, rng.randint(40, 60)) if rng.random() < 0.7 else (rng.choice([0, 2]), rng.choice([0, 1, -1]), 45)
            accesses.append((w, r))
        func, outer, inner = _nest_many(n1, n2, accesses)
        got = carrying_loops(func)
        assert (id(outer) in got, id(inner) in got) == _brute_many(n1, n2, accesses), (n1, n2, accesses, got)


def _two_loops_one_var(second_min, second_extent, first_read: int, second_write: int):
    """``for v < 4 { for j in J1 { A[j] = 1; B[j] = A[j + r] }  for j in J2 { A[j + w] = 1;
    B[j] = A[j + w + 3] } }``:
    two sibling loops that share the variable ``j`` (an unrolled body's copies keep their inner
    loops' variables), with ranges of their own."""
    n = E.Var("n", "int32")
    v, j = E.Var("v", "int32"), E.Var("j", "int32")
    A, B = S.Buffer("A", "float32", (4096,)), S.Buffer("B", "float32", (4096,))
    one = E.FloatImm(1.0, "float32")

    def c(x):
        return E.IntImm(x, "int32")

    first = S.For(j, c(0), n, "serial", S.seq(S.BufferStore(A, one, (j,)),
                                              S.BufferStore(B, E.BufferLoad(A, (j + c(first_read),)), (j,))))
    second = S.For(j, second_min(n), second_extent, "serial", S.seq(
        S.BufferStore(A, one, (j + c(second_write),)),
        S.BufferStore(B, E.BufferLoad(A, (j + c(second_write + first_read),)), (j,))))
    outer = S.For(v, c(0), c(4), "serial", S.seq(first, second))
    return S.PrimFunc("f", [A, B], [n], outer), outer


def test_sibling_loops_sharing_a_variable_are_asked_apart():
    """The review's case: the first loop's store A[j] and read A[j + 3] meet across iterations of
    v (for n > 3); the second loop, over other values of j, must not stand in for it."""
    func, outer = _two_loops_one_var(lambda n: n, E.IntImm(1, "int32"), 3, 5)
    assert id(outer) in carrying_loops(func)


def test_one_index_under_other_loops_is_not_a_reduction_into_its_element():
    """``for v { for u < 2 (unrolled) { for j in [2u, 2u + 2) { A[v + j] += 1 } } }`` after the
    unroll pass: the copies' ``A[v + j]`` read as one index, but over other values of j, so
    iteration v reads A[v + 2], which iteration v + 2 writes."""
    from tessel.ir import expr as E
    from tessel.passes import simplify_stmt, unroll

    v, u, j = (E.Var(x, "int32") for x in "vuj")
    A = S.Buffer("A", "float32", (64,))
    two = E.IntImm(2, "int32")
    idx = E.add(v, j)
    body = S.BufferStore(A, E.BufferLoad(A, (idx,)) + E.FloatImm(1.0, "float32"), (idx,))
    nest = S.For(v, 0, 8, "serial", S.For(u, 0, 2, "unrolled", S.For(j, E.mul(u, two), two, "serial", body)))
    stmt = simplify_stmt(unroll(nest))
    assert isinstance(stmt, S.For) and stmt.loop_var is v
    assert id(stmt) in carrying_loops(S.PrimFunc("f", [A], [], stmt))
