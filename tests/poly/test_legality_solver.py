"""The dependence solver under the commands (issue 14, item 4): checks and repairs on isl maps.

The stencils here are written directly as statements and dependences (an in-place update
``A[i, j] = A[i-1, j] + A[i, j-1]`` has flow distances (1, 0) and (0, 1); Tiramisu's test 179
kernel ``A[i-1, j-1] + A[i-1, j+1]`` has (1, 1) and (1, -1)), so the checks are exercised on
exactly the time maps the commands produce; the same checks on compiled programs are in
``test_legality_commands.py``.
"""

from __future__ import annotations

from types import SimpleNamespace

import islpy as isl

from tessel import te
from tessel.ir import expr as E
from tessel.poly import legality as L
from tessel.poly import repair as R
from tessel.poly.analysis import analysis
from tessel.poly.deps import Dependence
from tessel.poly.model import Model, Statement

N = E.Var("n", "int32")


def _stencil(distances: list[tuple[int, int]]):
    """One statement S[i, j] over 0 <= i, j < n, in its program order, with a flow
    dependence of every given distance."""
    dom = isl.Set("[p_n] -> { S[i, j] : 0 <= i < p_n and 0 <= j < p_n }")
    sched = isl.Map("[p_n] -> { S[i, j] -> T[0, i, 0, j, 0] : 0 <= i < p_n and 0 <= j < p_n }")
    stmt = Statement("S", SimpleNamespace(name="S"), "compute", [E.Var("i", "int32"), E.Var("j", "int32")],
                     dom, [], schedule=sched)
    model = Model(None, None, {N: "p_n"}, isl.Set("[p_n] -> { : p_n >= 0 }"), [stmt], [], 5, {}, {})
    cond = " or ".join(f"(i2 = i + {a} and j2 = j + {b})" for a, b in distances)
    rel = isl.Map(f"[p_n] -> {{ S[i, j] -> S[i2, j2] : {cond} }}").intersect_domain(dom).intersect_range(dom)
    time = rel.apply_domain(sched).apply_range(sched)
    return model, stmt, [Dependence("flow", stmt, stmt, "A", time, model)]


def test_skew_1_1_is_legal_on_the_1_0_and_0_1_stencil():
    model, s, deps = _stencil([(1, 0), (0, 1)])
    assert L.distance_text(deps[0]) == "(0, 1), (1, 0)"
    assert not L.conflicts(deps, {"S": s.schedule}, model.context)
    skewed = {"S": R.skewed(s.schedule, 1, 3, 1, 1)}
    assert not L.conflicts(deps, skewed, model.context)
    # the inner loop carries nothing after the skew, and both loops carried something before
    assert L.carried_part(deps[0], skewed, 3).intersect_params(model.context).is_empty()
    assert not L.carried_part(deps[0], skewed, 1).is_empty()
    assert not L.carried_part(deps[0], {"S": s.schedule}, 3).intersect_params(model.context).is_empty()


def test_skew_1_1_is_illegal_on_the_diagonal_stencil_and_2_1_is_legal():
    model, s, deps = _stencil([(1, 1), (1, -1)])
    bad = L.conflicts(deps, {"S": R.skewed(s.schedule, 1, 3, 1, 1)}, model.context)
    assert len(bad) == 1
    text = bad[0].describe()
    assert "flow dependence S -> S through A" in text and "(1, -1), (1, 1)" in text
    w = bad[0].witness()
    assert w is not None and w.sink.values["i"] - w.source.values["i"] == 1
    assert w.sink.values["j"] - w.source.values["j"] == -1  # the (1, -1) distance is the broken one
    assert not L.conflicts(deps, {"S": R.skewed(s.schedule, 1, 3, 2, 1)}, model.context)


def test_wavefront_factors_are_the_least_that_carry_everything_outside():
    _, s, deps = _stencil([(1, 0), (0, 1)])
    assert R.skew_factors(R.inner_distances(deps, {"S": s.schedule}, 1, 3)) == (1, 1)
    _, s, deps = _stencil([(1, 1), (1, -1), (0, 1)])
    assert R.skew_factors(R.inner_distances(deps, {"S": s.schedule}, 1, 3)) == (2, 1)
    _, s, deps = _stencil([(1, 0), (1, -3)])
    a, b = R.skew_factors(R.inner_distances(deps, {"S": s.schedule}, 1, 3))
    assert a * 1 + b * -3 >= 1 and a >= 1


def test_completion_is_unimodular():
    for a in range(0, 5):
        for b in range(-4, 5):
            got = R.completion(a, b)
            if b == 0 and a != 1:
                continue
            if got is None:
                from math import gcd
                assert gcd(a, b) != 1
                continue
            g, s = got
            assert a * s - b * g == 1


def test_reversal_of_a_carried_loop_is_a_conflict():
    model, s, deps = _stencil([(1, 0)])
    rev = R.retime(s.schedule, ["t0", "-t1", "t2", "t3", "t4"])
    assert L.conflicts(deps, {"S": rev}, model.context)
    rev_j = R.retime(s.schedule, ["t0", "t1", "t2", "-t3", "t4"])
    assert not L.conflicts(deps, {"S": rev_j}, model.context)


def _blur(read: str = "rows"):
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n + 2, m + 2), name="A")
    bx = te.compute((n + 2, m), lambda i, j: (A[i, j] + A[i, j + 1] + A[i, j + 2]) / 3, name="bx")
    body = {
        "rows": lambda i, j: (bx[i, j] + bx[i + 1, j] + bx[i + 2, j]) / 3,
        "reversed row": lambda i, j: (bx[i, m - 1 - j] + bx[i, j]) / 2,
        "reversed column": lambda i, j: (bx[n - 1 - i, j] + bx[i, j]) / 2,
    }[read]
    by = te.compute((n, m), body, name="by")
    an = analysis(te.create_schedule(by.op))
    return an.model, an.dependences


def test_fusion_of_blur_at_the_inner_level_needs_a_shift_of_two_rows():
    model, deps = _blur()
    sx, sy = model.statements
    scheds = {st.name: st.schedule for st in model.statements}
    assert not L.conflicts(deps, scheds, model.context)
    fused = R.fused_schedules(scheds, {sx.name}, {sy.name}, 4, [1, 3])
    bad = L.conflicts(deps, fused, model.context)
    assert len(bad) == 1 and "flow dependence bx -> by through bx" in str(bad[0])
    assert "(-2, 0), (-1, 0), (0, 0)" in str(bad[0])
    assert R.fusion_shifts(deps, fused, {sx.name}, {sy.name}, [1, 3]) == [2, 0]
    depth, shifts, result = R.repair_fusion(deps, scheds, {sx.name}, {sy.name}, [(1, 1), (3, 1)], model.context)
    assert (depth, shifts) == (1, [2, 0])
    assert not L.conflicts(deps, result, model.context)
    # a shift of one row is not enough
    short = R.fused_schedules(scheds, {sx.name}, {sy.name}, 4, [1, 3], [1, 0])
    assert L.conflicts(deps, short, model.context)


def test_a_row_read_backwards_is_fused_inside_by_delaying_a_whole_row():
    model, deps = _blur("reversed row")
    sx, sy = model.statements
    scheds = {st.name: st.schedule for st in model.statements}
    fused = R.fused_schedules(scheds, {sx.name}, {sy.name}, 4, [1, 3])
    assert L.conflicts(deps, fused, model.context)
    # no delay of the inner loop helps (the distance along j is unbounded); one row of delay does
    assert R.fusion_shifts(deps, fused, {sx.name}, {sy.name}, [1, 3]) == [1, 0]
    assert not L.conflicts(deps, R.fused_schedules(scheds, {sx.name}, {sy.name}, 4, [1, 3], [1, 0]),
                           model.context)


def test_a_column_read_backwards_cannot_be_fused_at_any_loop():
    model, deps = _blur("reversed column")
    sx, sy = model.statements
    scheds = {st.name: st.schedule for st in model.statements}
    for last, dims in ((4, [1, 3]), (2, [1])):
        fused = R.fused_schedules(scheds, {sx.name}, {sy.name}, last, dims)
        assert L.conflicts(deps, fused, model.context)
        assert R.fusion_shifts(deps, fused, {sx.name}, {sy.name}, dims) is None
    assert R.repair_fusion(deps, scheds, {sx.name}, {sy.name}, [(1, 1), (3, 1)], model.context) is None
