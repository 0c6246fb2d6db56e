"""``store_in`` and ``storage_fold`` (issue 14, item 3): transposed, lower-dimensional,
modulo (circular) and scalar storage, a many-to-one map, in-place storage into an input;
checked against NumPy on both targets (legal schedules only: each value is read before the
storage holding it is reused)."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import TARGETS, check, rand

import tessel
from tessel import te
from tessel.driver import lower_steps
from tessel.errors import BoundError, LowerError, ScheduleError


def _flat(s, args) -> str:
    _, steps = lower_steps(s, args)
    return str(next(st.ir for st in steps if st.name == "storage_flatten"))


def test_store_in_transposed_storage():
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n, m), name="A")
    B = te.compute((n, m), lambda i, j: A[i, j] + 1, name="B")
    C = te.compute((n, m), lambda i, j: B[i, j] * 2, name="C")
    s = te.create_schedule(C.op)
    Bt = te.placeholder((m, n), name="Bt")
    s[B].store_in(Bt, lambda i, j: (j, i))
    text = _flat(s, [A, C])
    assert "allocate Bt" in text and "allocate B[" not in text
    assert "Bt[j*n + i] = A[i*m + j]" in text and "C[i*m + j] = Bt[j*n + i]" in text
    a = rand(5, 8)
    check(s, [A, C], [a], [(a + 1) * 2])


def test_store_in_a_lower_dimensional_buffer_fused_row_by_row():
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n, m), name="A")
    B = te.compute((n, m), lambda i, j: A[i, j] * 2, name="B")
    C = te.compute((n, m), lambda i, j: B[i, j] + A[i, j], name="C")
    s = te.create_schedule(C.op)
    s[C].after(s[B], C.op.axis[0])  # fused first: each step of the schedule is legal
    row = te.placeholder((m,), name="row")
    s[B].store_in(row, lambda i, j: (j,))  # many-to-one: every row of B in one row of storage
    text = _flat(s, [A, C])
    assert "allocate row[float32 * m]" in text
    a = rand(6, 7)
    check(s, [A, C], [a], [a * 3])


@pytest.mark.parametrize("fold", [False, True])
def test_circular_buffer_of_three_rows_for_the_fused_blur(fold):
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n + 2, m + 2), name="A")
    bx = te.compute((n + 2, m), lambda y, x: (A[y, x] + A[y, x + 1] + A[y, x + 2]) / 3, name="bx")
    by = te.compute((n, m), lambda y, x: (bx[y, x] + bx[y + 1, x] + bx[y + 2, x]) / 3, name="by")
    s = te.create_schedule(by.op)
    s[by].shift(by.op.axis[0], 2)
    s[by].after(s[bx], by.op.axis[0])
    if fold:
        s[bx].storage_fold(bx.op.axis[0], 3)
        name = "bx.folded"
    else:
        ring = te.placeholder((3, m), name="ring")
        s[bx].store_in(ring, lambda y, x: (y % 3, x))
        name = "ring"
    text = _flat(s, [A, by])
    assert f"allocate {name}[float32 * 3 * m]" in text
    a = rand(12, 9)
    bxr = (a[:, :-2] + a[:, 1:-1] + a[:, 2:]) / 3
    check(s, [A, by], [a], [(bxr[:-2] + bxr[1:-1] + bxr[2:]) / 3])


@pytest.mark.parametrize("shape", [(), (1,)])
def test_a_reduction_through_scalar_storage(shape):
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n, m), name="A")
    k = te.reduce_axis((0, m), name="k")
    R = te.compute((n,), lambda i: te.sum(A[i, k] * A[i, k], axis=k), name="R")
    D = te.compute((n,), lambda i: R[i] + 1, name="D")
    s = te.create_schedule(D.op)
    s[D].after(s[R], D.op.axis[0])
    acc = te.placeholder(shape, name="acc")
    s[R].store_in(acc, lambda i: (0,) * len(shape))  # one accumulator for every row
    text = _flat(s, [A, D])
    assert "acc[0]" in text
    a = rand(7, 5)
    check(s, [A, D], [a], [(a * a).sum(1) + 1], rtol=1e-4)


def test_store_in_an_input_is_an_in_place_update():
    n = te.var("n")
    A = te.placeholder((n, 4), name="A")
    E = te.compute((n, 4), lambda i, j: A[i, j] * 2 - 1, name="E")
    s = te.create_schedule(E.op)
    s[E].store_in(A)  # the same indices, into the input
    a = rand(5, 4)
    for target in TARGETS:
        f = tessel.build(s, [A], target=target)
        x = a.copy()
        f(x)
        np.testing.assert_allclose(x, a * 2 - 1, rtol=1e-6, err_msg=target)


def test_storage_is_visible_to_the_model():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1, name="B")
    C = te.compute((n,), lambda i: B[i] * 2, name="C")
    s = te.create_schedule(C.op)
    s[C].after(s[B], C.op.axis[0])
    ring = te.placeholder((2,), name="ring")
    s[B].store_in(ring, lambda i: (i % 2,))
    model = tessel.poly.model(s)
    c_read = next(a for st in model.statements if st.stage is s[C] for a in st.reads)
    assert c_read.relation.get_tuple_name(tessel.poly.space.DIM.out).endswith("ring")
    assert "2*floor" in str(c_read.relation) or "mod" in str(c_read.relation)


# ---- refusals ----------------------------------------------------------------------------
def test_store_in_refusals_name_the_stage_and_what_to_do():
    n = te.var("n")
    A = te.placeholder((n, 3), name="A")
    B = te.compute((n, 3), lambda i, j: A[i, j] + 1, name="B")
    s = te.create_schedule(B.op)
    with pytest.raises(ScheduleError, match="B.*int32.*float32|B.*float32.*int32"):
        s[B].store_in(te.placeholder((n, 3), "int32", name="I"))
    with pytest.raises(ScheduleError, match="2 dimensions"):
        s[B].store_in(te.placeholder((n, 3), name="T"), lambda i, j: (i,))
    with pytest.raises(ScheduleError, match="not axes of B"):
        s[B].store_in(te.placeholder((n,), name="T"), [n])
    with pytest.raises(ScheduleError, match="fold must be positive"):
        s[B].storage_fold(B.op.axis[0], 0)
    assert s[B].storage is None  # a refused command changes nothing
    s[B].store_in(te.placeholder((3, n), name="T"), lambda i, j: (j, i))
    with pytest.raises(LowerError, match="pass T to lower/build instead of B"):
        tessel.lower(s, [A, B])


def test_store_in_outside_the_buffer_is_refused_with_a_witness():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1, name="B")
    C = te.compute((n,), lambda i: B[i] * 2, name="C")
    s = te.create_schedule(C.op)
    s[C].after(s[B], C.op.axis[0])
    s[B].store_in(te.placeholder((2,), name="ring"), lambda i: (i % 3,))
    with pytest.raises(BoundError, match=r"B is stored in ring.*leaves its shape \(2\): for n = \d+, i = 2"):
        tessel.build(s, [A, C])


@pytest.mark.parametrize("index", [lambda i: (i, 0), lambda i, j, k: (i, j), lambda: (0, 0)])
def test_store_in_index_function_of_the_wrong_arity_names_the_axes(index):
    A = te.placeholder((4, 3), name="A")
    B = te.compute((4, 3), lambda i, j: A[i, j] + 1, name="B")
    s = te.create_schedule(B.op)
    with pytest.raises(ScheduleError, match=r"stage B: store_in's index function must take 2 argument\(s\), one per "
                                            r"axis of B \(i, j\)"):
        s[B].store_in(te.placeholder((3, 4), name="T"), index)
    assert s[B].storage is None
