"""The polyhedral model of a schedule (seed 004): conversion of index expressions, domains,
accesses, the 2d+1 schedule, dependences with witnesses, and the cache that keeps a second
build from analysing again."""

from __future__ import annotations

import islpy as isl
import pytest
from helpers import check, rand

import tessel
from tessel import te
from tessel.ir import expr as E
from tessel.ir.evaluate import evaluate
from tessel.poly import NotAffine
from tessel.poly.analysis import RUNS, analysis
from tessel.poly.space import Converter, Namer, set_space


def _conv():
    i, j, n = E.Var("i"), E.Var("j"), te.var("n")
    sp = set_space(["i", "j"], ["n"], "S")
    return i, j, n, Converter(sp, {i: 0, j: 1}, {n: 0})


@pytest.mark.parametrize("make", [
    lambda i, j, n: i + 2 * j - n,
    lambda i, j, n: (i + 7) // 4,
    lambda i, j, n: (i - 3) % 5,
    lambda i, j, n: te.truncdiv(i - 9, 4),
    lambda i, j, n: te.truncmod(i - 9, 4),
    lambda i, j, n: te.min(i, j) + te.max(n - i, 3),
    lambda i, j, n: te.if_then_else(i < j, i * 3, j - 1),
    lambda i, j, n: (i // -3) + (j % -4),
])
def test_quasi_affine_conversion_agrees_with_evaluation(make):
    i, j, n, conv = _conv()
    e = make(i, j, n)
    pa = conv.aff(e)
    for vi in range(-6, 7, 3):
        for vj in range(-5, 6, 2):
            for vn in (0, 4, 9):
                pt = isl.Set(f"[n] -> {{ S[{vi}, {vj}] : n = {vn} }}")
                got = isl.Map.from_pw_aff(pa).intersect_domain(pt).range().sample_point()
                want = evaluate(e, {i: vi, j: vj, n: vn})
                assert got.get_coordinate_val(isl.dim_type.set, 0).to_python() == want, (e, vi, vj, vn)


@pytest.mark.parametrize("make, why", [
    (lambda i, j, n: i * j, "multiplies two non-constants"),
    (lambda i, j, n: i // n, "divides by a non-constant"),
    (lambda i, j, n: E.FloorMod(i, E.IntImm(0)), "by zero"),
    (lambda i, j, n: E.Var("q") + i, "neither a loop of this space nor a symbolic size"),
])
def test_what_is_not_affine_says_why(make, why):
    i, j, n, conv = _conv()
    with pytest.raises(NotAffine, match=why):
        conv.aff(make(i, j, n))


def test_names_reaching_isl_are_safe_and_unique():
    namer = Namer()
    a, b, c = object(), object(), object()
    names = [namer.name(a, 'x] -> { : 1 = 0 }; y["'), namer.name(b, 'x] -> { : 1 = 0 }; y["'), namer.name(c, "")]
    assert len(set(names)) == 3
    assert all(n.replace("_", "").isalnum() for n in names)
    assert namer.name(a, "other") == names[0] and namer.owner(names[1]) is b


def _tiled_reduction():
    n = te.var("n")
    A = te.placeholder((n, 16), name="A")
    B = te.compute((n, 16), lambda i, j: A[i, j] * 2, name="B")
    k = te.reduce_axis((0, 16), name="k")
    C = te.compute((n,), lambda i: te.sum(B[i, k], axis=k), name="C")
    s = te.create_schedule(C.op)
    io, ii = s[C].split(C.op.axis[0], factor=4)
    s[B].compute_at(s[C], io)
    return n, A, B, C, s


def test_the_model_reads_as_text_with_domains_schedules_and_accesses():
    *_, s = _tiled_reduction()
    text = str(tessel.poly.model(s))
    assert "statement S_C_init: C (init)" in text and "statement S_C_update: C (update)" in text
    assert "statement S_B: B" in text
    assert "sizes: n as p_n" in text
    # B is realized inside i.outer: its storage is indexed by that loop first
    assert "writes B[i, j]" in text and "A_B[i_outer, i_1, j]" in text
    assert "loops:    i.outer (t1), i (t3), j (t5)" in text


def test_domains_and_the_time_order_of_a_compute_at():
    *_, s = _tiled_reduction()
    m = tessel.poly.model(s)
    by = {st.name: st for st in m.statements}
    b, upd, init = by["S_B"], by["S_C_update"], by["S_C_init"]
    # B's instances inside one iteration of i.outer: rows 4*i.outer .. 4*i.outer + 3 (for n >= 4)
    rows = b.domain.intersect_params(isl.Set("[p_n] -> { : p_n = 10 }")).fix_val(
        isl.dim_type.set, 0, isl.Val.int_from_si(isl.DEFAULT_CONTEXT, 1)).project_out(isl.dim_type.set, 2, 1)
    assert rows.reset_tuple_id().is_equal(isl.Set("[p_n] -> { [1, r] : 4 <= r <= 7 and p_n = 10 }"))
    # every B instance of an i.outer iteration runs before C's init and updates of it
    for later in (init, upd):
        before = b.schedule.lex_lt_map(later.schedule)
        same_tile = isl.Map("[p_n] -> { S_B[o, r, j] -> %s : exists (e : o = floor(i / 4)) }"
                            % ("S_C_init[i]" if later is init else "S_C_update[i, k]"))
        pairs = same_tile.intersect_domain(b.domain).intersect_range(later.domain)
        assert pairs.is_subset(before)


def test_dependences_are_listed_with_witnesses_that_touch_one_element():
    n, A, B, C, s = _tiled_reduction()
    deps = s.dependences()
    kinds = {(d.kind, d.source.label(), d.sink.label()) for d in deps}
    assert ("flow", "B", "C (update)") in kinds
    assert ("flow", "C (init)", "C (update)") in kinds
    assert ("output", "C (update)", "C (update)") in kinds
    for d in deps:
        w = d.witness()
        assert w is not None and "then" in str(d)
        # both instances reach the same element: evaluate their accesses at the witness
        src = [a for a in d.source.accesses if a.tensor.name == d.tensor_name]
        snk = [a for a in d.sink.accesses if a.tensor.name == d.tensor_name]
        assert src and snk
        assert w.sizes["n"] >= 1


@pytest.mark.no_replay_check  # the replay check lowers a rebuilt copy: another schedule, analysed anew
def test_a_cached_build_does_not_analyse_again():
    n, A, B, C, s = _tiled_reduction()
    s[C].parallel(s[C].leaf_iter_vars[0])
    before = dict(RUNS)
    a = rand(9, 16)
    check(s, [A, C], [a], [(a * 2).sum(axis=1)])
    once = {k: RUNS[k] - before[k] for k in RUNS}
    assert once["bounds"] <= 1 and once["model"] == 1
    tessel.build(s, [A, C])
    assert {k: RUNS[k] - before[k] for k in RUNS} == once
    s[C].vectorize(s[C].leaf_iter_vars[1])  # a new schedule state: analysed again
    tessel.lower(s, [A, C])
    assert RUNS["model"] - before["model"] == 2


@pytest.mark.no_replay_check
def test_the_same_program_built_again_is_not_analysed_again():
    """What a cached build is: the same program and schedule made afresh (another process's
    objects, the same content); a different schedule is analysed."""
    def program(factor):
        n = te.var("n")
        A = te.placeholder((n, 8), name="A")
        B = te.compute((n, 8), lambda i, j: A[i, j] + 1, name="B")
        s = te.create_schedule(B.op)
        o, i = s[B].split(B.op.axis[1], factor=factor)
        s[B].parallel(B.op.axis[0])
        s[B].vectorize(i)
        return s, [A, B]

    tessel.lower(*program(4))
    before = dict(RUNS)
    tessel.lower(*program(4))
    assert RUNS == before
    tessel.lower(*program(2))
    assert RUNS["model"] == before["model"] + 1 and RUNS["bounds"] == before["bounds"] + 1


def test_a_reduction_loop_refusal_names_the_dependence():
    A = te.placeholder((4, 8), name="A")
    k = te.reduce_axis((0, 8), name="k")
    B = te.compute((4,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    with pytest.raises(tessel.ScheduleError, match=r"carries the flow dependence B \(update\) -> B \(update\) "
                                                   r"through B: B \(update\)\(i=\d, k=\d\) then"):
        s[B].parallel(k)


def test_a_loop_that_carries_a_dependence_is_refused_by_legality():
    """A parallel annotation set behind the primitives' back on a reduction loop of a stage
    whose reduction rule is met elsewhere: the dependence rule names the dependence."""
    A = te.placeholder((4, 8), name="A")
    k = te.reduce_axis((0, 8), name="k")
    B = te.compute((4,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    found = analysis(s).carried(s[B], k)
    assert found is not None
    dep, part = found
    w = dep.witness(part)
    assert w.distance["k"] >= 1 and w.distance["i"] == 0
    assert analysis(s).carried(s[B], B.op.axis[0]) is None


def test_a_stage_nobody_can_model_is_said_so():
    n = te.var("n")
    A = te.placeholder((n, 6), name="A")
    B = te.compute((n, 6), lambda i, j: A[i, j] + 1, name="B")
    s = te.create_schedule(B.op)
    f = s[B].fuse(*B.op.axis)
    s[B].split(f, factor=4)
    m = tessel.poly.model(s)
    assert not m.unmodelled  # a fuse with a constant inner extent is affine
    s2 = te.create_schedule(B.op)
    s2[B].split(B.op.axis[0], nparts=3)
    m2 = tessel.poly.model(s2)
    assert "B" in m2.unmodelled and "divides by a non-constant" in m2.unmodelled["B"]
    assert "not modelled: B" in str(m2)


def test_distance_vectors_over_the_common_loops():
    A = te.placeholder((4, 8), name="A")
    k = te.reduce_axis((0, 8), name="k")
    B = te.compute((4,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    by = {(d.kind, d.source.role, d.sink.role): d for d in s.dependences()}
    upd = by[("flow", "update", "update")].distances()
    assert upd.reset_tuple_id().is_equal(isl.Set("{ [0, d] : 0 < d <= 7 }"))
    init = by[("flow", "init", "update")].distances()  # only the i loop encloses both
    assert init.reset_tuple_id().is_equal(isl.Set("{ [0] }"))
