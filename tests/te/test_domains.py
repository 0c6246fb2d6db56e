"""Non-rectangular domains: computes over part of their shape (``where=``) and reductions whose
bounds follow outer axes, against NumPy on both targets, with exact loops (no guard per point)."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import TARGETS, rand

import tessel
from tessel import te
from tessel.ir import stmt as S
from tessel.ir.functor import collect


def _run(sch, args, inputs, outs, target):
    """Build and run; ``outs`` are the output arrays as the caller fills them (kept outside)."""
    f = tessel.build(sch, args, target=target)
    ins = [np.array(a, copy=True) for a in inputs]
    got = [np.array(o, copy=True) for o in outs]
    f(*ins, *got)
    return got


def _guards(sch, args) -> list:
    func = tessel.lower(sch, args)
    return collect(func.body, lambda n: isinstance(n, S.IfThenElse))


@pytest.mark.parametrize("target", TARGETS)
def test_triangular_domain_computes_only_its_points(target):
    n = 13
    A = te.placeholder((n, n), name="A")
    B = te.compute((n, n), lambda i, j: A[i, j] * 2.0 + A[j, i], name="B", where=lambda i, j: j < i)
    s = te.create_schedule(B.op)
    a, keep = rand(n, n), rand(n, n, seed=3)
    (got,) = _run(s, [A, B], [a], [keep], target)
    lower = np.tril(np.ones((n, n), bool), -1)
    np.testing.assert_allclose(got, np.where(lower, a * 2 + a.T, keep), rtol=1e-6)


def test_triangular_loops_are_exact():
    n = te.var("n")
    A = te.placeholder((n, n), name="A")
    B = te.compute((n, n), lambda i, j: A[i, j] + 1.0, name="B", where=lambda i, j: j < i)
    s = te.create_schedule(B.op)
    assert not _guards(s, [A, B])
    text = str(tessel.lower(s, [A, B], simple_mode=True))
    assert "for (j, 0, i + 1)" in text  # the inner bound follows the outer loop (i counted from 1)
    f = tessel.build(s, [A, B], target="c")
    a, out = rand(9, 9), np.zeros((9, 9), "float32")
    f(a, out)
    np.testing.assert_allclose(out, np.tril(a + 1, -1))


@pytest.mark.parametrize("target", TARGETS)
def test_band_with_split_and_parallel(target):
    n, w = 17, 3
    A = te.placeholder((n, n), name="A")
    B = te.compute((n, n), lambda i, j: A[i, j] - A[j, i] * 0.5, name="B", where=lambda i, j: te.abs(i - j) <= w)
    s = te.create_schedule(B.op)
    io, ii = s[B].split(B.op.axis[0], factor=4)
    s[B].parallel(io)
    assert not _guards(s, [A, B])
    a, keep = rand(n, n), rand(n, n, seed=5)
    (got,) = _run(s, [A, B], [a], [keep], target)
    ii_, jj = np.indices((n, n))
    np.testing.assert_allclose(got, np.where(abs(ii_ - jj) <= w, a - a.T * 0.5, keep), rtol=1e-6)


@pytest.mark.parametrize("target", TARGETS)
def test_non_affine_domain_is_guarded(target):
    n = 11
    A = te.placeholder((n, n), name="A")
    B = te.compute((n, n), lambda i, j: A[i, j] + 3.0, name="B", where=lambda i, j: i * j < 20)
    s = te.create_schedule(B.op)
    assert _guards(s, [A, B])  # isl cannot follow i*j: one guard per point, still exact values
    a, keep = rand(n, n), rand(n, n, seed=2)
    (got,) = _run(s, [A, B], [a], [keep], target)
    ii, jj = np.indices((n, n))
    np.testing.assert_allclose(got, np.where(ii * jj < 20, a + 3, keep))


@pytest.mark.parametrize("target", TARGETS)
def test_cholesky_like_triangular_reduction(target):
    """L[i, j] = sum_{k<j} A[i, k]*A[j, k] over the lower triangle j <= i: the reduction's
    bound follows j, the output's domain is triangular."""
    n = 10
    A = te.placeholder((n, n), name="A")

    def f(i, j):
        k = te.reduce_axis((0, j), name="k")
        return te.sum(A[i, k] * A[j, k], axis=k)

    L = te.compute((n, n), f, name="L", where=lambda i, j: j <= i)
    s = te.create_schedule(L.op)
    assert not _guards(s, [A, L])
    a, keep = rand(n, n), rand(n, n, seed=9)
    (got,) = _run(s, [A, L], [a], [keep], target)
    ref = keep.copy()
    for i in range(n):
        for j in range(i + 1):
            ref[i, j] = a[i, :j] @ a[j, :j]
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("target", TARGETS)
def test_trsv_forward_substitution(target):
    """x[i] = (b[i] - sum_{j<i} L[i, j] x[j]) / L[i, i], one recurrence whose reduction reads
    its own earlier values (the reduction's init carries b[i])."""
    n = 12
    Lm = te.placeholder((n, n), name="L")
    b = te.placeholder((n,), name="b")

    def row(x, i):
        j = te.reduce_axis((0, i), name="j")
        return te.sum(-Lm[i, j] * x[j] / Lm[i, i], axis=j, init=b[i] / Lm[i, i])

    x = te.recurrence((n,), [te.define(row)], name="x")
    s = te.create_schedule(x.op)
    lv = np.tril(rand(n, n)) + np.eye(n, dtype="float32") * 4
    bv = rand(n)
    (got,) = _run(s, [Lm, b, x], [lv, bv], [np.zeros(n, "float32")], target)
    np.testing.assert_allclose(got, np.linalg.solve(lv.astype("float64"), bv), rtol=1e-4, atol=1e-5)


def test_reading_outside_a_declared_domain_is_refused():
    n = 8
    A = te.placeholder((n, n), name="A")
    B = te.compute((n, n), lambda i, j: A[i, j], name="B", where=lambda i, j: j < i)
    C = te.compute((n, n), lambda i, j: B[i, j] + B[j, i], name="C")
    s = te.create_schedule(C.op)
    with pytest.raises(tessel.BoundError, match="outside B's domain") as e:
        tessel.build(s, [A, C], target="python")
    assert set(e.value.witness.values()) is not None
    D = te.compute((n, n), lambda i, j: B[i, j] * 2.0, name="D", where=lambda i, j: j < i)  # inside: fine
    f = tessel.build(te.create_schedule(D.op), [A, D], target="python")
    a, keep = rand(n, n), rand(n, n, seed=1)
    out = keep.copy()
    f(a, out)
    np.testing.assert_allclose(out, np.where(np.tri(n, k=-1, dtype=bool), a * 2, keep))


@pytest.mark.parametrize("target", TARGETS)
def test_bound_inference_of_undeclared_domains(target):
    """Tiramisu's test_22: S0..S3 declared with no domain (te.compute(None, ...)); their shapes
    come from their readers, and each computes exactly what is read of it: S1 its square and
    the extra point (0, 1) S2 reads, all of them only the triangle S4 declares."""
    m = 9
    S0 = te.compute(None, lambda i, j: te.const(1.0, "float32") * (i + 1), name="S0")
    S1 = te.compute(None, lambda i, j: te.const(1.0, "float32") * (j + 2), name="S1")
    S2 = te.compute(None, lambda i, j: 2.0 * S0[i, j] + S1[0, 1], name="S2")
    S3 = te.compute(None, lambda i, j: 2.0 * S2[i, j] + S1[i, j + 1] + S0[i, j], name="S3")
    S4 = te.compute((m, m), lambda i, j: S3[i, j] + 1.0, name="S4", where=lambda i, j: j <= i)
    s = te.create_schedule(S4.op)
    assert [tuple(int(x) for x in t.shape) for t in (S0, S1, S2, S3)] == [(m, m), (m, m + 1), (m, m), (m, m)]
    plan = tessel.poly.regions(s)
    assert {"S0", "S1", "S2", "S3"} <= set(plan.changed)  # each computes only what is read of it
    keep = rand(m, m, seed=4)
    (got,) = _run(s, [S4], [], [keep], target)
    ii, jj = np.indices((m, m)).astype("float32")
    ref = 2 * (2 * (ii + 1) + 3) + (jj + 3) + (ii + 1) + 1
    np.testing.assert_allclose(got, np.where(jj <= ii, ref, keep), rtol=1e-6)


def test_undeclared_domains_that_cannot_be_inferred_are_refused():
    P = te.compute(None, lambda i: te.const(1.0, "float32") * i, name="P")
    Q = te.compute((5,), lambda i: P[i - 1], name="Q")
    with pytest.raises(tessel.DefinitionError, match="may be negative"):
        te.create_schedule(Q.op)
    R = te.compute(None, lambda i: te.const(2.0, "float32"), name="R")
    with pytest.raises(tessel.DefinitionError, match="nothing reads it"):
        te.create_schedule(R.op)


def test_model_domains_follow_the_declaration():
    n = te.var("n")
    A = te.placeholder((n, n), name="A")
    B = te.compute((n, n), lambda i, j: A[i, j], name="B", where=lambda i, j: te.abs(i - j) <= 2)
    s = te.create_schedule(B.op)
    (st,) = tessel.poly.model(s).statements
    i, j = st.dim_vars
    conv = st.converter
    assert st.domain.intersect(conv.set(j == i + 3)).is_empty()  # outside the band
    assert not st.domain.intersect(conv.set(j == i + 2)).is_empty()
    assert not st.domain.intersect(conv.set(i == j + 2)).is_empty()


def test_where_must_be_a_condition_on_indices():
    A = te.placeholder((4, 4), name="A")
    with pytest.raises(tessel.TesselError, match="where="):
        te.compute((4, 4), lambda i, j: A[i, j], name="B", where=lambda i, j: i + j)
    with pytest.raises(tessel.TesselError, match="must not read a tensor"):
        te.compute((4, 4), lambda i, j: A[i, j], name="B", where=lambda i, j: A[i, j] > 0)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("split_i,split_k", [(3, None), (None, 2), (4, 3)])
def test_reduction_bounded_by_an_outer_axis_under_splits(target, split_i, split_k):
    n = 11
    A = te.placeholder((n, n), name="A")

    def f(i):
        k = te.reduce_axis((0, i), name="k")
        return te.sum(A[i, k] * A[k, i], axis=k)

    C = te.compute((n,), f, name="C")
    s = te.create_schedule(C.op)
    if split_i:
        s[C].split(C.op.axis[0], factor=split_i)
    if split_k:
        s[C].split(C.op.reduce_axis[0], factor=split_k)
    a = rand(n, n)
    (got,) = _run(s, [A, C], [a], [np.zeros(n, "float32")], target)
    np.testing.assert_allclose(got, [a[i, :i] @ a[:i, i] for i in range(n)], rtol=1e-5, atol=1e-6)


def test_reduction_loop_moved_outside_the_axis_bounding_it_is_refused():
    n = 6
    A = te.placeholder((n, n), name="A")

    def f(i):
        k = te.reduce_axis((0, i), name="k")
        return te.sum(A[i, k], axis=k)

    C = te.compute((n,), f, name="C")
    s = te.create_schedule(C.op)
    s[C].reorder(C.op.reduce_axis[0], C.op.axis[0])
    with pytest.raises(tessel.ScheduleError, match="bounds of loop k .* depend on loop i"):
        tessel.build(s, [A, C], target="python")


def test_verdicts_shared_by_content_tell_declared_domains_apart():
    """An out-of-bounds read that a declared domain keeps inside must not make the same body
    without the domain pass as clean (the analysis shares verdicts by content)."""
    n = 6
    for declared in (True, False):
        A = te.placeholder((n, n), name="A")
        B = _shifted_read(A, n, (lambda i, j: te.all(j < i, j > 0)) if declared else None)
        s = te.create_schedule(B.op)
        if declared:
            tessel.build(s, [A, B], target="python")
        else:
            with pytest.raises(tessel.BoundError):
                tessel.build(s, [A, B], target="python")


def _shifted_read(A, n, where):
    return te.compute((n, n), lambda i, j: A[i, j - 1], name="B", where=where)
