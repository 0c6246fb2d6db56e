"""A vectorized loop inside a folded time loop: it reads one slot of the storage and writes the
other, so no two of its iterations touch one element (passes/carried.py decides it, per residue
of the time loop). The vectorize pass kept it scalar, reading "h is read at [t%2...] and written
at [(t + 1)%2...]: iterations might depend on each other"."""

from __future__ import annotations

import pytest
from helpers import TARGETS, check, rand

from tessel import te
from tessel.ir import expr as E
from tessel.ir import stmt as S
from tessel.ir.functor import collect
from tessel.ir.stmt import AttrKey
from tessel.passes.vectorize import vectorize
from tessel.target import as_target


def _decay(steps, n, fold):
    A = te.placeholder((n,), name="A", dtype="float64")
    h = te.recurrence((steps, n), [
        te.define(lambda h, t, i: A[i], where=lambda t, i: t == 0),
        te.define(lambda h, t, i: 0.5 * (h[t - 1, i] + A[i]), where=lambda t, i: t > 0)], name="h")
    O = te.compute((n,), lambda i: h[steps - 1, i], name="O")
    s = te.create_schedule(O.op)
    s[h].storage_fold(h.op.axis[0], fold)
    _, inner = s[h].split(h.op.axis[1], factor=4)
    s[h].vectorize(inner)
    return A, O, s


@pytest.mark.parametrize(("steps", "n", "fold"), [(6, 16, 2), (5, 24, 3)])
def test_a_vectorized_loop_inside_a_folded_time_loop_is_vector_code(steps, n, fold):
    A, O, s = _decay(steps, n, fold)
    a = rand(n, dtype="float64")
    want = a.copy()
    for _ in range(1, steps):
        want = 0.5 * (want + a)
    kernels = check(s, [A, O], [a], [want], targets=TARGETS, rtol=1e-12, atol=1e-12)
    src = kernels["c"].source
    assert "not vectorized" not in src


@pytest.mark.parametrize(("shift", "vector"), [(1, False), (-1, False), (16, True), (0, True)])
def test_the_pass_keeps_a_loop_scalar_exactly_when_its_iterations_meet(shift, vector):
    """``A[i + shift] = A[i] + 1`` over a vectorized ``8 <= i < 16`` of a 32-element buffer: lanes in
    lockstep compute it right unless two iterations touch one element (shifts 1 and -1)."""
    A = S.Buffer("A", "float32", (32,))
    i = E.Var("i", "int32")
    body = S.BufferStore(A, E.Add(E.BufferLoad(A, [i]), E.FloatImm(1.0, "float32")),
                         [E.Add(i, E.IntImm(shift, "int32"))])
    out = vectorize(S.For(i, 8, 8, "vectorized", body), as_target("c -vector-bytes=32"))
    scalar = collect(out, lambda n: isinstance(n, S.AttrStmt) and n.key == AttrKey.NOT_VECTORIZED,
                     statements_only=True)
    assert bool(scalar) != vector
