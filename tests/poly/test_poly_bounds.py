"""Out-of-bounds reads proved at compile time (seed 004): a read that provably stays inside
its tensor is never refused, however loose intervals are; one that can leave is refused with
a witness -- sizes and loop values at which it happens -- that these tests evaluate."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import TARGETS, check, rand

import tessel
from tessel import te
from tessel.errors import BoundError
from tessel.ir.evaluate import evaluate


# ---- the three programs interval arithmetic refused (issue 13; TVM's own test suite has them) ----
def _two_element_read(index):
    A = te.placeholder((2,), name="A")
    B = te.compute((10,), lambda i: A[index(i)], name="B")
    return A, B


FALSE_REJECTIONS = [
    (lambda i: te.min(3 * i, 4 * i) + te.min(-3 * i, -2 * i), lambda i: 0),
    (lambda i: te.min(3 * i, 4 * i) + te.max(-3 * i, -4 * i), lambda i: 0),
    (lambda i: -2 * te.truncdiv(i, 2) - te.min(i, -i), lambda i: i % 2),
]


@pytest.mark.parametrize("k", range(3))
def test_reads_that_provably_stay_inside_compile_and_compute_right(k):
    index, expect = FALSE_REJECTIONS[k]
    A, B = _two_element_read(index)
    a = rand(2, seed=k)
    want = a[[expect(i) for i in range(10)]]
    check(te.create_schedule(B.op), [A, B], [a], [want])


@pytest.mark.parametrize("k", range(3))
def test_the_interval_check_alone(k):
    """The interval check (what InferBound runs on every read) once placed all three reads
    outside; it now evaluates them over the reading stage's domain (``i >= 0``), where the first
    two stay in. The third (``i % 2`` written with truncdiv and min) is still beyond it: the
    polyhedral check decides it when lowering."""
    from tessel.bound.check import check_reads_in_bounds
    from tessel.schedule.graph import effective_bodies

    A, B = _two_element_read(FALSE_REJECTIONS[k][0])
    s = te.create_schedule(B.op)
    if k < 2:
        check_reads_in_bounds(s, effective_bodies(s))
    else:
        with pytest.raises(BoundError):
            check_reads_in_bounds(s, effective_bodies(s))


# ---- ten programs that really read outside, each refused with a witness ---------------------------
def _oob_programs():
    n, m = te.var("n"), te.var("m")
    progs = []
    A = te.placeholder((n,), name="A")
    progs.append(("past a symbolic end", A, te.compute((n,), lambda i: A[i + 1], name="B")))
    A = te.placeholder((10,), name="A")
    progs.append(("before the start", A, te.compute((10,), lambda i: A[i - 1], name="B")))
    A = te.placeholder((10,), name="A")
    progs.append(("a stride", A, te.compute((10,), lambda i: A[2 * i], name="B")))
    A = te.placeholder((8,), name="A")
    progs.append(("a floordiv", A, te.compute((8,), lambda i: A[i // 2 + 5], name="B")))
    A = te.placeholder((10,), name="A")
    progs.append(("a floormod", A, te.compute((10,), lambda i: A[i % 3 + 8], name="B")))
    A = te.placeholder((4, 6), name="A")
    progs.append(("a transpose of the wrong shape", A, te.compute((6, 6), lambda i, j: A[j, i], name="B")))
    A = te.placeholder((n, m), name="A")
    k = te.reduce_axis((0, m), name="k")
    progs.append(("a reduction one past", A, te.compute((n,), lambda i: te.sum(A[i, k + 1], axis=k), name="B")))
    A = te.placeholder((3,), name="A")
    progs.append(("a max", A, te.compute((3,), lambda i: A[te.max(i, 3)], name="B")))
    A = te.placeholder((5,), name="A")
    progs.append(("a guard that does not protect", A,
                  te.compute((5,), lambda i: te.if_then_else(i < 5, A[i + 1], 0.0), name="B")))
    A = te.placeholder((n,), name="A")
    progs.append(("a symbolic size one larger", A, te.compute((n + 1,), lambda i: A[i], name="B")))
    A = te.placeholder((6,), name="A")
    progs.append(("a truncating division", A, te.compute((6,), lambda i: A[te.truncdiv(i - 5, 2)], name="B")))
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i + 2], name="T")
    C = te.compute((n,), lambda i: B[i] * 2, name="C")
    progs.append(("through an inlined stage", (A, B), C))
    return progs


PROGRAMS = _oob_programs()


@pytest.mark.parametrize("k", range(len(PROGRAMS)), ids=[p[0] for p in PROGRAMS])
def test_a_read_outside_is_refused_with_a_witness_that_really_is_outside(k):
    _, A, B = PROGRAMS[k]
    s = te.create_schedule(B.op)
    reader = s[B]
    if isinstance(A, tuple):  # the inlined stage's own read is refused, as when it is stored (F20)
        s[A[1]].compute_inline()
        reader = s[A[1]]
        A = A[0]
    with pytest.raises(BoundError, match="outside .*'s shape.*it reads") as info:
        tessel.lower(s, [A, B])
    err = info.value
    env = err.witness
    idx = [evaluate(i, env) for i in err.load.indices]
    shape = [evaluate(d, env) for d in err.load.producer.shape]
    assert any(not 0 <= x < d for x, d in zip(idx, shape)), (idx, shape)
    assert not 0 <= idx[err.dimension] < shape[err.dimension]
    for v, x in env.items():  # every named value is in the message
        if v.name in str(err):
            assert f"{v.name} = {x}" in str(err)
    # the witness lies in the reading stage's domain, for sizes the shapes allow
    for iv in reader.op.root_iter_vars:
        lo, ext = evaluate(iv.dom.min, env), evaluate(iv.dom.extent, env)
        assert lo <= env[iv.var] < lo + ext


def test_the_message_names_the_read_the_values_and_the_cure():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i + 1], name="B")
    with pytest.raises(BoundError) as info:
        tessel.build(te.create_schedule(B.op), [A, B])
    msg = str(info.value)
    assert "stage B reads A[i + 1] outside A's shape (n)" in msg
    assert "for n = 1, i = 0 it reads A[1], but A has 1 element(s) along dimension 0" in msg
    assert "te.if_then_else" in msg


def test_a_guard_that_protects_the_read_is_proved_enough():
    A = te.placeholder((5,), name="A")
    B = te.compute((5,), lambda i: te.if_then_else(i < 4, A[i + 1], 0.0), name="B")
    a = rand(5)
    check(te.create_schedule(B.op), [A, B], [a], [np.append(a[1:], 0.0).astype("float32")])


def test_a_read_whose_index_is_not_affine_falls_back_to_intervals():
    A = te.placeholder((5,), name="A")
    B = te.compute((4,), lambda i: A[i * i], name="B")
    with pytest.raises(BoundError, match=r"ranges over \[0, 9\]") as info:
        tessel.lower(te.create_schedule(B.op), [A, B])
    assert not hasattr(info.value, "witness")
    C = te.compute((2,), lambda i: A[i * i], name="C")  # inside: 0 and 1
    a = rand(5)
    check(te.create_schedule(C.op), [A, C], [a], [a[[0, 1]]])


def test_sizes_a_tensor_cannot_have_are_no_witness():
    """An index past the end only when a size would be negative is no out-of-bounds read."""
    n = te.var("n")
    A = te.placeholder((n + 1,), name="A")
    B = te.compute((n,), lambda i: A[i + 1], name="B")
    a = rand(8)
    check(te.create_schedule(B.op), [A, B], [a], [a[1:]])


@pytest.mark.parametrize("target", TARGETS)
def test_an_assumption_proves_a_read_inside(target):
    """``A[i + n - 4]`` over ``i < n`` with ``A`` of ``2n - 4`` elements is inside only when
    ``n >= 4``: refused without the assumption, proved with it (the context joins the check)."""
    n = te.var("n")
    A = te.placeholder((2 * n - 4,), name="A")
    B = te.compute((n,), lambda i: A[i + n - 4], name="B")
    s = te.create_schedule(B.op)
    with pytest.raises(BoundError):
        tessel.lower(s, [A, B])
    s.assume("n >= 4")
    a = rand(8)
    check(s, [A, B], [a], [a[2:8]], targets=(target,))


@pytest.mark.parametrize("inline", [False, True], ids=["stored", "inlined"])
def test_inlining_does_not_change_what_is_refused(inline):
    """Fuzz F20: ``Cp`` reads ``B[i, 0]`` of a ``B`` that is empty when ``m = 2`` (such a read is
    left to the caller). Inlined, the read became ``A[i + 1, 2]`` of a non-empty ``A`` and was
    refused while the stored program was accepted: the check reads each stage's own body."""
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n, m), name="A")
    B = te.compute((n - 2, m - 2), lambda i, j: A[i, j + 1] + A[i + 1, j + 2], name="B")
    Cp = te.compute((n - 2,), lambda i: B[i, 0] * 2.0 + 1.0, name="Cp")
    s = te.create_schedule([Cp.op])
    if inline:
        s[B].compute_inline()
    a = rand(5, 7)
    check(s, [A, Cp], [a], [((a[:3, 1] + a[1:4, 2]) * 2.0 + 1.0).astype("float32")])
