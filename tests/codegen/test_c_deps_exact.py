"""The carried-dependence test of tessel/codegen/c_deps.py against brute force: random
two-deep nests ``A[a*i + b*j + c] = A[p*i + q*j + r] + 1`` with constant bounds. A loop that
carries a dependence must be found (else the C compiler's vectorizer may get its values
wrong), and with constant bounds and affine indices the test is exact, so no loop that
carries none is kept from the vectorizer either."""

from __future__ import annotations

import itertools
import random

import pytest

from tessel.codegen.c_deps import carrying_loops
from tessel.ir import expr as E
from tessel.ir import stmt as S


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
    """(outer carries, inner carries) by c_deps' definition: a write and a read at another
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
