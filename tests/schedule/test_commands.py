"""Tiramisu's loop commands (issue 14, item 3 and 5): ``after``/``before``/``then``/``between``,
``shift``, ``skew``, ``interchange``, ``reverse``, lowered through isl's AST generator and
checked against NumPy on both targets.

Every schedule here is legal (the dependences it has are kept in order); until tessel.poly's
legality check for commands is in, code for an illegal schedule is not refused here.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import TARGETS, check, loops, rand

import tessel
from tessel import te
from tessel.driver import lower_steps


def _ir(s, args) -> str:
    _, steps = lower_steps(s, args)
    return str(next(st.ir for st in steps if st.name == "schedule_ops"))


def _two_outputs(n, m):
    A = te.placeholder((n, m), name="A")
    B = te.compute((n, m), lambda i, j: A[i, j] + 1, name="B")
    C = te.compute((n, m), lambda i, j: A[i, j] * 3, name="C")
    return A, B, C


def _store_order(text: str, first: str, second: str) -> bool:
    """Whether the first store into ``first`` comes before the first store into ``second``."""
    return text.index(f"{first}[") < text.index(f"{second}[")


# ---- after / before at the root, in both orders -----------------------------------------
@pytest.mark.parametrize("c_first", [False, True])
def test_after_at_root_in_both_orders(c_first):
    n, m = te.var("n"), te.var("m")
    A, B, C = _two_outputs(n, m)
    s = te.create_schedule([B.op, C.op])
    if c_first:
        s[C].before(s[B], "root")
    else:
        s[C].after(s[B], None)
    text = _ir(s, [A, B, C])
    assert _store_order(text, "C", "B") == c_first
    assert len(loops(text)) == 4  # two separate nests
    a = rand(7, 5)
    check(s, [A, B, C], [a], [a + 1, a * 3])


@pytest.mark.parametrize("first_is_b", [True, False])
def test_after_at_an_inner_level_fuses_the_nests_in_both_orders(first_is_b):
    n, m = te.var("n"), te.var("m")
    A, B, C = _two_outputs(n, m)
    s = te.create_schedule([B.op, C.op])
    if first_is_b:
        s[C].after(s[B], C.op.axis[0])  # the level named by the later stage's own loop
    else:
        s[B].after(s[C], C.op.axis[0])  # ... or by the anchor's
    text = _ir(s, [A, B, C])
    heads = loops(text)
    assert len(heads) == 3  # one i loop holding two j loops
    assert _store_order(text, "B", "C") == first_is_b
    a = rand(6, 9)
    check(s, [A, B, C], [a], [a + 1, a * 3])


def test_after_at_the_innermost_level_fuses_a_producer_and_its_consumer():
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n, m), name="A")
    B = te.compute((n, m), lambda i, j: A[i, j] * 2, name="B")
    C = te.compute((n, m), lambda i, j: B[i, j] + A[i, j], name="C")
    s = te.create_schedule(C.op)
    s[C].after(s[B], B.op.axis[1])
    text = _ir(s, [A, C])
    assert len(loops(text)) == 2
    a = rand(5, 11)
    check(s, [A, C], [a], [a * 3])


def test_then_chains_and_between_places_a_stage_inside_a_fused_loop():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1, name="B")
    C = te.compute((n,), lambda i: B[i] * 2, name="C")
    D = te.compute((n,), lambda i: C[i] - A[i], name="D")
    s = te.create_schedule(D.op)
    got = s[B].then(s[D], B.op.axis[0])
    assert got is s[D]
    s[C].between(s[B], B.op.axis[0], s[D], D.op.axis[0])  # B, then C, then D in one loop
    text = _ir(s, [A, D])
    assert len(loops(text)) == 1
    assert text.index("B[") < text.index("C[") < text.index("D[")
    a = rand(13)
    check(s, [A, D], [a], [(a + 1) * 2 - a])


def test_after_a_reduction_inside_its_spatial_loop():
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n, m), name="A")
    k = te.reduce_axis((0, m), name="k")
    R = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="R")
    D = te.compute((n,), lambda i: R[i] * 2 + 1, name="D")
    s = te.create_schedule(D.op)
    s[D].after(s[R], D.op.axis[0])
    text = _ir(s, [A, D])
    assert len(loops(text)) == 2  # i { init; k { update }; D }
    a = rand(7, 6)
    check(s, [A, D], [a], [a.sum(1) * 2 + 1], rtol=1e-4)


# ---- compute_at with redundancy (Tiramisu's test 35), ordered with after ---------------------
@pytest.mark.parametrize("host_first", [True, False])
def test_compute_at_with_redundancy_and_a_stage_after_it_in_the_same_loop(host_first):
    N = te.var("N")
    A = te.placeholder((N, N), name="A")
    S0 = te.compute((N, N), lambda i, j: A[i, j] * 2, name="S0")
    S1 = te.compute((N, N - 2), lambda i, j: (S0[i, j] + S0[i, j + 1] + S0[i, j + 2]) / 3, name="S1")
    S2 = te.compute((N, N - 2), lambda i, j: A[i, j + 1] - 1, name="S2")
    s = te.create_schedule([S1.op, S2.op])
    s[S0].compute_at(s[S1], S1.op.axis[1])  # S0 recomputed for j, j+1, j+2 in every iteration
    if host_first:
        s[S2].after(s[S1], S1.op.axis[1])
    else:  # S1 moves after S2, and S0, computed inside S1's loop, moves with it
        s[S1].after(s[S2], S2.op.axis[1])
    text = _ir(s, [A, S1, S2])
    assert len(loops(text)) == 3  # i { j { S0's 3 points; S1; S2 } }
    assert (text.index("S1[") < text.index("S2[")) == host_first
    assert text.index("S0[") < text.index("S1[")
    a = rand(8, 8)
    s0 = a * 2
    check(s, [A, S1, S2], [a], [(s0[:, :-2] + s0[:, 1:-1] + s0[:, 2:]) / 3, a[:, 1:-1] - 1])


def test_shifting_a_consumer_moves_the_stage_computed_inside_it():
    n = te.var("n")
    A = te.placeholder((n, 6), name="A")
    P = te.compute((n, 6), lambda i, j: A[i, j] + 2, name="P")
    C = te.compute((n, 6), lambda i, j: P[i, j] * P[i, j], name="C")
    s = te.create_schedule(C.op)
    s[P].compute_at(s[C], C.op.axis[0])
    s[C].shift(C.op.axis[0], 3)
    a = rand(5, 6)
    check(s, [A, C], [a], [(a + 2) ** 2])


# ---- shift: Tiramisu's blur fused with after + shift (test 15) -------------------------------
def _blur(n, m):
    A = te.placeholder((n + 2, m + 2), name="A")
    bx = te.compute((n + 2, m), lambda y, x: (A[y, x] + A[y, x + 1] + A[y, x + 2]) / 3, name="bx")
    by = te.compute((n, m), lambda y, x: (bx[y, x] + bx[y + 1, x] + bx[y + 2, x]) / 3, name="by")
    return A, bx, by


def _blur_ref(a):
    bx = (a[:, :-2] + a[:, 1:-1] + a[:, 2:]) / 3
    return (bx[:-2] + bx[1:-1] + bx[2:]) / 3


def test_shift_makes_the_fused_blur_read_rows_already_produced():
    n, m = te.var("n"), te.var("m")
    A, bx, by = _blur(n, m)
    s = te.create_schedule(by.op)
    s[by].shift(by.op.axis[0], 2)
    s[by].after(s[bx], by.op.axis[0])
    text = _ir(s, [A, by])
    assert "by[" in text and "bx[" in text
    model = tessel.poly.model(s)
    by_stmt = next(st for st in model.statements if st.stage is s[by])
    assert "t1 = 2 + " in str(by_stmt.schedule)  # by's row y runs at time y + 2
    a = rand(11, 10)
    check(s, [A, by], [a], [_blur_ref(a)])


# ---- skew on Tiramisu's wavefront stencil (test 176 / 185), in place -------------------------
def _wavefront(n, m):
    A = te.placeholder((n, m), name="A")
    R = te.compute((n - 1, m - 1), lambda i, j: (A[i, j + 1] + A[i + 1, j]) * 0.5, name="R")
    s = te.create_schedule(R.op)
    s[R].store_in(A, lambda i, j: (i + 1, j + 1))  # in place: dependences (1, 0) and (0, 1)
    return A, R, s


def _wavefront_ref(a):
    out = a.copy()
    for i in range(1, a.shape[0]):
        for j in range(1, a.shape[1]):
            out[i, j] = (out[i - 1, j] + out[i, j - 1]) * np.float32(0.5)
    return out


def _run_in_place(s, A, a, expected):
    for target in TARGETS:
        f = tessel.build(s, [A], target=target)
        x = a.copy()
        f(x)
        np.testing.assert_allclose(x, expected, rtol=1e-5, atol=1e-6, err_msg=target)


@pytest.mark.parametrize("parallel", [False, True])
def test_skew_1_1_of_the_wavefront_computes_the_same_values(parallel):
    n, m = te.var("n"), te.var("m")
    A, R, s = _wavefront(n, m)
    i, j = R.op.axis
    s[R].skew(i, j, 1, 1)
    if parallel:
        s[R].parallel(j)  # after the skew the inner loop carries no dependence
    text = _ir(s, [A])
    heads = loops(text)
    assert len(heads) == 2 and "n + m" in heads[0]  # the outer loop runs over i + j
    assert heads[1].startswith("parallel" if parallel else "for")
    a = rand(9, 7)
    _run_in_place(s, A, a, _wavefront_ref(a))


def test_skew_factors_are_made_unimodular():
    from tessel.schedule.commands import unimodular_completion

    for a, b in [(1, 1), (2, 1), (1, 3), (3, 2), (0, 1), (1, 0), (-1, 2)]:
        c, e = unimodular_completion(a, b)
        assert a * e - b * c == 1
    assert unimodular_completion(1, 1) == (0, 1)  # (i + j, j)
    n = te.var("n")
    A, R, s = _wavefront(n, n)
    s[R].skew(*R.op.axis, 2, 1)
    a = rand(6, 6)
    _run_in_place(s, A, a, _wavefront_ref(a))


# ---- interchange and reverse -------------------------------------------------------------
def test_interchange_swaps_the_loops_and_the_values_stay():
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n, m), name="A")
    B = te.compute((n, m), lambda i, j: A[i, j] * 2 - 1, name="B")
    s = te.create_schedule(B.op)
    i, j = B.op.axis
    s[B].interchange(i, j)
    s[B].vectorize(i)  # i names the loop carrying i's values, now the inner one
    text = _ir(s, [A, B])
    heads = loops(text)
    assert heads[0].startswith("for (j") and "m" in heads[0]
    assert heads[1].startswith("vectorized (i")
    a = rand(7, 5)
    check(s, [A, B], [a], [a * 2 - 1])


def test_interchange_of_a_recurrence_column_order_keeps_its_dependences():
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n, m), name="A")
    R = te.compute((n - 1, m), lambda i, j: A[i, j] + A[i + 1, j], name="R")  # a dependence along i only
    s = te.create_schedule(R.op)
    s[R].store_in(A, lambda i, j: (i + 1, j))
    s[R].interchange(*R.op.axis)
    a = rand(6, 4)
    ref = a.copy()
    for i in range(1, 6):
        ref[i] = ref[i - 1] + ref[i]
    _run_in_place(s, A, a, ref)


def test_reverse_runs_a_loop_backwards():
    n = te.var("n")
    A = te.placeholder((n, 3), name="A")
    B = te.compute((n, 3), lambda i, j: A[i, j] * 0.5 + 1, name="B")
    s = te.create_schedule(B.op)
    s[B].reverse(B.op.axis[0])
    model = tessel.poly.model(s)
    assert "t1 = -i" in str(model.statements[0].schedule)
    text = _ir(s, [A, B])
    store = next(ln for ln in text.splitlines() if "B[" in ln)
    assert "n" in store.split("=")[0]  # row n - 1 - counter: the first iteration writes the last row
    a = rand(9, 3)
    check(s, [A, B], [a], [a * 0.5 + 1])


def test_commands_compose_with_a_non_divisible_split():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1, name="B")
    C = te.compute((n,), lambda i: B[i] * B[i], name="C")
    s = te.create_schedule(C.op)
    bo, bi = s[B].split(B.op.axis[0], factor=4)
    co, ci = s[C].split(C.op.axis[0], factor=4)
    s[C].after(s[B], co)  # fused over the tiles, separate inner loops
    s[C].unroll(ci)
    a = rand(14)
    check(s, [A, C], [a], [(a + 1) ** 2])


# ---- loop tags from the schedule --------------------------------------------------------------
@pytest.mark.parametrize("both", [True, False])
def test_a_fused_loop_keeps_the_tag_its_stages_agree_on(both):
    n = te.var("n")
    A = te.placeholder((n, 4), name="A")
    B = te.compute((n, 4), lambda i, j: A[i, j] + 1, name="B")
    C = te.compute((n, 4), lambda i, j: B[i, j] * 3, name="C")
    s = te.create_schedule(C.op)
    s[C].after(s[B], C.op.axis[0])
    s[C].parallel(C.op.axis[0])
    if both:
        s[B].parallel(B.op.axis[0])
    s[C].unroll(C.op.axis[1])
    text = _ir(s, [A, C])
    heads = loops(text)
    assert heads[0].startswith("parallel" if both else "for")  # fused loops of other kinds run serially
    assert heads[-1].startswith("unrolled (j, 0, 4)")
    func, _ = lower_steps(s, [A, C])
    assert len(loops(str(func.body))) == 2  # C's j loop is straight-line code now
    a = rand(9, 4)
    check(s, [A, C], [a], [(a + 1) * 3])


def test_commands_on_an_inlined_stage_are_refused():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1, name="B")
    C = te.compute((n,), lambda i: B[i] * 3, name="C")
    s = te.create_schedule(C.op)
    s[B].shift(B.op.axis[0], 1)
    s[B].compute_inline()
    with pytest.raises(tessel.errors.LowerError, match=r"B is inlined.*shift\(i, 1\).*compute_root"):
        tessel.lower(s, [A, C])


def test_a_reduction_ordered_after_another_stage_keeps_its_init_before_its_update():
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n, m), name="A")
    E = te.compute((n,), lambda i: A[i, 0] * 2, name="E")
    k = te.reduce_axis((0, m), name="k")
    R = te.compute((n,), lambda i: te.sum(A[i, k] * E[i], axis=k), name="R")
    s = te.create_schedule(R.op)
    s[R].after(s[E], R.op.axis[0])  # init and update both move into E's loop, in their order
    model = tessel.poly.model(s)
    init, update = (st for st in model.statements if st.stage is s[R])
    assert "t2 = 1" in str(init.schedule) and "t2 = 2" in str(update.schedule)
    a = rand(6, 5)
    check(s, [A, R], [a], [a.sum(1) * a[:, 0] * 2], rtol=1e-4)


def test_hints_the_isl_lowering_does_not_carry_are_refused():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1, name="B")
    s = te.create_schedule(B.op)
    s[B].shift(B.op.axis[0], 1)
    s[B].pragma(B.op.axis[0], "auto_unroll_max_step", 4)
    with pytest.raises(tessel.errors.LowerError, match="stage B: .*pragma.*not lowered with commands"):
        tessel.lower(s, [A, B])
