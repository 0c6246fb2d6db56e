"""The program's own order of a reduction computed inside another stage's loops (its copies): the
init of each point comes before its update in every copy. The copies' loops used to meet the
update's mark, so a reduction seemed to read its accumulator before initialising it, and any
command or storage choice beside such a compute_at was refused (PolyBench's doitgen and trmm as
PolyBench writes them)."""

from __future__ import annotations

import islpy as isl
import numpy as np
import pytest
from helpers import TARGETS

import tessel
from tessel import te
from tessel.poly.deps import in_program_order
from tessel.poly.order import moved, program_order

F64 = "float64"


def _doitgen(nr, nq, np_):
    A = te.placeholder((nr, nq, np_), F64, name="A")
    C4 = te.placeholder((np_, np_), F64, name="C4")
    total = te.placeholder((np_,), F64, name="sum")
    s_ax = te.reduce_axis((0, np_), name="s")
    row = te.compute((nr, nq, np_), lambda r, q, p: te.sum(A[r, q, s_ax] * C4[s_ax, p], axis=s_ax), name="row")
    out = te.compute((nr, nq, np_), lambda r, q, p: row[r, q, p], name="out")
    s = te.create_schedule(out.op)
    s[row].compute_at(s[out], out.op.axis[1])
    s[row].store_in(total, lambda r, q, p: (p,))
    s[out].store_in(A)
    return s, [A, C4, total]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("sizes", [(3, 5, 7), (2, 4, 6)])
def test_doitgen_row_computed_at_the_copy_and_stored_in_sum(target, sizes):
    s, args = _doitgen(*sizes)
    rng = np.random.default_rng(3)
    a0, c0 = rng.random(sizes), rng.random((sizes[2], sizes[2]))
    a = a0.copy()
    tessel.build(s, args, target=target)(a, c0, rng.random(sizes[2]))
    np.testing.assert_allclose(a, a0 @ c0, rtol=1e-12)


@pytest.mark.parametrize("target", TARGETS)
def test_trmm_sum_computed_at_the_output_row_in_place(target):
    m, n, alpha = 9, 11, 1.5
    A = te.placeholder((m, m), F64, name="A")
    B = te.placeholder((m, n), F64, name="B")
    k = te.reduce_axis((0, m), name="k")
    S = te.compute((m, n), lambda i, j: te.sum(A[k, i] * B[k, j], axis=k, where=k > i), name="S")
    O = te.compute((m, n), lambda i, j: alpha * (B[i, j] + S[i, j]), name="O")
    s = te.create_schedule(O.op)
    s[S].compute_at(s[O], O.op.axis[0])
    s[O].store_in(B)
    rng = np.random.default_rng(4)
    a, b0 = np.tril(rng.random((m, m))), rng.random((m, n))
    want = b0.copy()
    for i in range(m):
        for j in range(n):
            for kk in range(i + 1, m):
                want[i, j] += a[kk, i] * b0[kk, j]
            want[i, j] *= alpha
    b = b0.copy()
    tessel.build(s, [A, B], target=target)(a, b)
    np.testing.assert_allclose(b, want, rtol=1e-12)


def test_in_program_order_each_copy_initialises_before_it_updates():
    s, _ = _doitgen(2, 2, 3)
    model = in_program_order(program_order(s, moved(s)).model)
    init = next(x for x in model.statements if x.role == "init")
    update = next(x for x in model.statements if x.role == "update")
    # each update instance with the init instance of its own point and copy
    own = isl.Map(f"{{ {update.name}[a, b, c, d, e, f] -> {init.name}[a, b, c, d, e] }}")
    own = own.intersect_domain(update.domain).intersect_range(init.domain)
    times = own.apply_domain(update.schedule).apply_range(init.schedule)
    assert not times.is_empty()
    assert times.intersect(isl.Map.lex_lt(times.get_space().domain())).is_empty()  # no update before its init
