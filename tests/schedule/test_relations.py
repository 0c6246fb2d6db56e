"""The fuse relation's pass-up of a run of fused indices (relations.py), as TVM's: the rows
the run touches (a quotient by an extent is monotone, so this holds for symbolic sizes too),
and only its columns when aligned runs that divide a row never cross one. A stage computed
at the outer loop of a fused-then-split consumer is sized so, and computes the right values."""

from __future__ import annotations

import pytest
from helpers import check, rand

from tessel import te
from tessel.bound.infer import run_infer_bound


def _fused_split(m, l, factor):
    A = te.placeholder((m, l), name="A")
    A1 = te.compute((m, l), lambda i, j: A[i, j] * 2.0, name="A1")
    A2 = te.compute((m, l), lambda i, j: A1[i, j] + 3.0, name="A2")
    s = te.create_schedule(A2.op)
    xo, _ = s[A2].split(s[A2].fuse(*A2.op.axis), factor)
    s[A1].compute_at(s[A2], xo)
    return s, A, A1, A2, xo


def test_symbolic_run_gives_its_rows():
    m, l, f = te.var("m"), te.var("l"), te.var("f")
    s, _, A1, _, xo = _fused_split(m, l, f)
    ctx = run_infer_bound(s)
    r = ctx.rmap[A1.op.axis[0]]
    ana = ctx.analyzer
    assert ana.can_prove_equal(r.min, te.floordiv(xo.var * f, l))
    assert ana.can_prove_equal(r.extent, te.floordiv(xo.var * f + f - 1, l) - te.floordiv(xo.var * f, l) + 1)
    assert ana.can_prove_equal(ctx.rmap[A1.op.axis[1]].extent, l)  # may cross a row: every column


@pytest.mark.parametrize(("l", "factor", "cols"), [(6, 3, 3), (12, 4, 4), (6, 4, 6), (7, 3, 7)])
def test_aligned_runs_within_a_row_give_their_columns(l, factor, cols):
    m = 5
    s, A, A1, A2, _ = _fused_split(m, l, factor)
    ctx = run_infer_bound(s)
    assert ctx.analyzer.can_prove_equal(ctx.rmap[A1.op.axis[1]].extent, cols)
    a = rand(m, l)
    check(s, [A, A2], [a], [a * 2 + 3])
