"""Exact regions (issue 13, item 2): seed 000's two over-approximations are gone.

A producer's evaluations are counted on the python target: every element its kernel writes
goes through the python target's checked array, whose store is wrapped here to count the
writes per tensor. With ``exact=False`` the counts are InferBound's boxes (the seed's
listings); by default they are exactly what the readers need. Values match NumPy on both
targets either way.
"""

from __future__ import annotations

import collections

import numpy as np
import pytest
from helpers import TARGETS, check, ir_text, rand

import tessel
from tessel import te
from tessel.bound import run_infer_bound
from tessel.codegen import python as pygen
from tessel.poly import plan, regions


@pytest.fixture
def writes(monkeypatch):
    """Counts of the elements each tensor's kernel writes (python target), by tensor name."""
    counts: collections.Counter = collections.Counter()
    store, vstore = pygen._Buf.__setitem__, pygen._Buf.vset

    def counted(self, i, v):
        counts[self.name] += 1
        store(self, i, v)

    def vcounted(self, i, v):
        counts[self.name] += len(i)
        vstore(self, i, v)

    monkeypatch.setattr(pygen._Buf, "__setitem__", counted)
    monkeypatch.setattr(pygen._Buf, "vset", vcounted)
    return counts


def _count(writes, sch, args, inputs, exact):
    f = tessel.build(sch, args, target="python", exact=exact)
    outs = [np.zeros([int(x) for x in t.shape], "float32") for t in args[len(inputs):]]
    writes.clear()
    f(*inputs, *outs)
    return dict(writes), outs


# ---- seed 000: a consumer split 20 by 16 ----------------------------------------------------
def _split_20_by_16(rows=None):
    """D (20 elements) reads a 32-element producer C; D is split by 16 and C computed at the
    outer loop. InferBound asks C for a whole tile of 16 at each of the 2 outer iterations
    (32 evaluations, 12 of them never read); the exact region is the 20 that D reads."""
    A = te.placeholder((32,), name="A")
    C = te.compute((32,), lambda i: A[i] * 3 + 1, name="C")
    D = te.compute((20,), lambda i: C[i] * 2, name="D")
    s = te.create_schedule(D.op)
    outer, _ = s[D].split(D.op.axis[0], factor=16)
    s[C].compute_at(s[D], outer)
    return s, [A, D]


def test_non_divisible_split_computes_only_what_is_read(writes):
    a = rand(32)
    s, args = _split_20_by_16()
    exact, outs = _count(writes, s, args, [a], True)
    box, _ = _count(writes, s, args, [a], False)
    assert exact["C"] == 20 and box["C"] == 32
    assert exact["D"] == box["D"] == 20
    np.testing.assert_allclose(outs[0], (a[:20] * 3 + 1) * 2, rtol=1e-6)
    check(s, args, [a], [(a[:20] * 3 + 1) * 2], targets=TARGETS)


def test_non_divisible_tiles_compute_each_needed_element_once(writes):
    """The same in two dimensions: a 20x20 consumer tiled 16x16 over a 32x32 producer computed
    per tile computes 400 elements of it, each once (InferBound: four whole tiles, 1024)."""
    A = te.placeholder((32, 32), name="A")
    C = te.compute((32, 32), lambda i, j: A[i, j] - 2, name="C")
    D = te.compute((20, 20), lambda i, j: C[i, j] * C[i, j], name="D")
    s = te.create_schedule(D.op)
    _, jo, _, _ = s[D].tile(D.op.axis[0], D.op.axis[1], 16, 16)
    s[C].compute_at(s[D], jo)
    a = rand(32, 32)
    exact, _ = _count(writes, s, [A, D], [a], True)
    box, _ = _count(writes, s, [A, D], [a], False)
    assert exact["C"] == 400 and box["C"] == 1024
    check(s, [A, D], [a], [(a[:20, :20] - 2) ** 2], rtol=1e-5)


# ---- seed 000: two disjoint requests ---------------------------------------------------------
def _disjoint():
    """X reads T[0:2, 0:2] and Y reads T[2:4, 2:4]: the dimension-wise union is all of T."""
    A = te.placeholder((4, 4), name="A")
    T = te.compute((4, 4), lambda i, j: A[i, j] * 3, name="T")
    X = te.compute((2, 2), lambda i, j: T[i, j], name="X")
    Y = te.compute((2, 2), lambda i, j: T[i + 2, j + 2], name="Y")
    Z = te.compute((2, 2), lambda i, j: X[i, j] + Y[i, j], name="Z")
    return A, T, Z


def test_disjoint_requests_compute_their_union_not_its_box(writes):
    A, T, Z = _disjoint()
    s = te.create_schedule(Z.op)
    a = rand(4, 4)
    exact, _ = _count(writes, s, [A, Z], [a], True)
    box, _ = _count(writes, s, [A, Z], [a], False)
    assert exact["T"] == 8 and box["T"] == 16
    # the buffer stays the bounding box; only the work is the union
    assert "realize T([0, 4], [0, 4])" in ir_text(s, [A, Z])
    want = a[:2, :2] * 3 + a[2:, 2:] * 3
    check(s, [A, Z], [a], [want])


def test_disjoint_requests_at_an_attach_point(writes):
    """The same two reads inside a loop of the consumer: per row of Z, T computes the two
    pieces that row needs (2 + 2 elements), not the 3x4 box spanning them (rows i to i + 2,
    all four columns: 12 elements per row of Z)."""
    A = te.placeholder((4, 4), name="A")
    T = te.compute((4, 4), lambda i, j: A[i, j] + 0.5, name="T")
    Z = te.compute((2, 2), lambda i, j: T[i, j] * T[i + 2, j + 2], name="Z")
    s = te.create_schedule(Z.op)
    s[T].compute_at(s[Z], Z.op.axis[0])
    a = rand(4, 4)
    exact, _ = _count(writes, s, [A, Z], [a], True)
    box, _ = _count(writes, s, [A, Z], [a], False)
    assert exact["T"] == 8 and box["T"] == 24
    check(s, [A, Z], [a], [(a[:2, :2] + 0.5) * (a[2:, 2:] + 0.5)])


def test_a_strided_read_computes_only_the_elements_read(writes):
    """D reads every other element of C: the interval [0, 19) has 19, the reads 10."""
    A = te.placeholder((20,), name="A")
    C = te.compute((20,), lambda i: A[i] + 1, name="C")
    D = te.compute((10,), lambda i: C[2 * i] * 2, name="D")
    s = te.create_schedule(D.op)
    a = rand(20)
    exact, _ = _count(writes, s, [A, D], [a], True)
    box, _ = _count(writes, s, [A, D], [a], False)
    assert exact["C"] == 10 and box["C"] == 19
    check(s, [A, D], [a], [(a[::2] + 1) * 2])


def test_a_chain_passes_the_exact_need_on_to_its_producers(writes):
    """B feeds C, C feeds the split consumer D: both producers compute only what D needs."""
    A = te.placeholder((32,), name="A")
    B = te.compute((32,), lambda i: A[i] * 2, name="B")
    C = te.compute((32,), lambda i: B[i] + 1, name="C")
    D = te.compute((20,), lambda i: C[i] * 3, name="D")
    s = te.create_schedule(D.op)
    outer, _ = s[D].split(D.op.axis[0], factor=16)
    s[C].compute_at(s[D], outer)
    s[B].compute_at(s[C], C.op.axis[0])
    a = rand(32)
    exact, _ = _count(writes, s, [A, D], [a], True)
    box, _ = _count(writes, s, [A, D], [a], False)
    assert exact["C"] == 20 and exact["B"] == 20
    assert box["C"] == 32 and box["B"] == 32
    check(s, [A, D], [a], [(a[:20] * 2 + 1) * 3])


def test_symbolic_sizes_keep_the_exact_region():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    C = te.compute((n,), lambda i: A[i] * A[i], name="C")
    D = te.compute((n - 4,), lambda i: C[i] + C[i + 4], name="D")
    s = te.create_schedule(D.op)
    outer, _ = s[D].split(D.op.axis[0], factor=8)
    s[C].compute_at(s[D], outer)
    for size in (5, 13, 30):
        a = rand(size)
        check(s, [A, D], [a], [a[:-4] ** 2 + a[4:] ** 2])


# ---- the seeds' listings and tessel.infer_bound are InferBound's --------------------------------
def test_infer_bound_and_the_interval_listing_are_unchanged():
    s, args = _split_20_by_16()
    C = s.stages[1].op
    r = tessel.infer_bound(s)[C.axis[0]]
    assert str(r.extent) == "16"  # InferBound's box, whatever lowering computes
    box = str(tessel.lower(s, args, simple_mode=True, exact=False))
    exact = str(tessel.lower(s, args, simple_mode=True))
    assert box != exact
    assert "for (i, 0, 16)" in box


def test_where_the_box_is_exact_the_loop_nest_is_the_interval_one():
    A = te.placeholder((8, 6), name="A")
    B = te.compute((8, 6), lambda i, j: A[i, j] + 1, name="B")
    C = te.compute((8, 6), lambda i, j: B[i, j] * 2, name="C")
    s = te.create_schedule(C.op)
    s[B].compute_at(s[C], C.op.axis[0])
    assert str(tessel.lower(s, [A, C], simple_mode=True)) == str(tessel.lower(s, [A, C], simple_mode=True, exact=False))
    assert plan(run_infer_bound(s)).changed == []


# ---- what cannot be exact falls back to the box, and says why -----------------------------------
def test_a_non_affine_read_keeps_the_box_and_the_plan_says_why(writes):
    A = te.placeholder((16,), name="A")
    C = te.compute((16,), lambda i: A[i] + 2, name="C")
    D = te.compute((4,), lambda i: C[i * i] * 2, name="D")
    s = te.create_schedule(D.op)
    p = regions(s)
    assert not p.changed
    assert any("stage C" in n and "not affine" in n for n in p.notes), p.notes
    assert "stage C: keeps its interval box" in p.report() and "not affine" in p.report()
    a = rand(16)
    exact, _ = _count(writes, s, [A, D], [a], True)
    assert exact["C"] == 10  # InferBound's interval [0, 9]
    check(s, [A, D], [a], [(a[[0, 1, 4, 9]] + 2) * 2])


def test_the_plan_names_the_stages_it_made_exact():
    s, _ = _split_20_by_16()
    p = plan(run_infer_bound(s))
    assert p.changed == ["C"]
    assert "stage C: computes the exact region" in p.report()


def test_a_reduction_computes_only_the_rows_read(writes):
    """A row sum over a 32-row input, read by a 20-row consumer split by 16 and computed at its
    outer loop: 20 rows are initialized and accumulated (20 + 20*5 writes), not 32."""
    A = te.placeholder((32, 5), name="A")
    k = te.reduce_axis((0, 5), name="k")
    B = te.compute((32,), lambda i: te.sum(A[i, k], axis=k), name="B")
    D = te.compute((20,), lambda i: B[i] * 2, name="D")
    s = te.create_schedule(D.op)
    outer, _ = s[D].split(D.op.axis[0], factor=16)
    s[B].compute_at(s[D], outer)
    a = rand(32, 5)
    exact, _ = _count(writes, s, [A, D], [a], True)
    box, _ = _count(writes, s, [A, D], [a], False)
    assert exact["B"] == 20 * 6 and box["B"] == 32 * 6
    check(s, [A, D], [a], [a[:20].sum(axis=1) * 2], rtol=1e-5)
