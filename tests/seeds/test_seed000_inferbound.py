"""Every program of seed 000 (InferBound): bounds, loop structure and values."""

from __future__ import annotations

import numpy as np
from helpers import check, ir_text, loops

import tessel
from tessel import te
from tessel.ir import structural_equal
from tessel.schedule.graph import attach_path


def _c_d():
    C = te.compute((5, 16), lambda i, j: te.const(5, "float32"), name="C")
    D = te.compute((5, 16), lambda i, j: C[i, j] * 2, name="D")
    return C, D


def _rng(bounds, iv):
    r = bounds[iv]
    return str(r.min), str(r.extent)


def test_ex1_no_attachment_computes_all_of_c():
    C, D = _c_d()
    s = te.create_schedule(D.op)
    b = tessel.infer_bound(s)
    assert _rng(b, C.op.axis[0]) == ("0", "5")
    assert _rng(b, C.op.axis[1]) == ("0", "16")
    text = ir_text(s, [D])
    assert loops(text) == ["for (i, 0, 5) {", "for (j, 0, 16) {", "for (i, 0, 5) {", "for (j, 0, 16) {"]
    assert "realize C([0, 5], [0, 16])" in text
    check(s, [D], [], [np.full((5, 16), 10, "float32")])


def test_ex2_compute_at_inner_axis_needs_one_element():
    C, D = _c_d()
    s = te.create_schedule(D.op)
    s[C].compute_at(s[D], D.op.axis[1])
    b = tessel.infer_bound(s)
    assert _rng(b, C.op.axis[0]) == ("i", "1")
    assert _rng(b, C.op.axis[1]) == ("j", "1")
    assert b[C.op.axis[0]].min is D.op.axis[0].var
    text = ir_text(s, [D])
    assert loops(text) == ["for (i, 0, 5) {", "for (j, 0, 16) {", "for (i_1, 0, 1) {", "for (j_1, 0, 1) {"]
    assert "realize C([i, 1], [j, 1])" in text
    check(s, [D], [], [np.full((5, 16), 10, "float32")])


def test_ex3_compute_at_outer_axis_needs_a_row():
    C, D = _c_d()
    s = te.create_schedule(D.op)
    s[C].compute_at(s[D], D.op.axis[0])
    b = tessel.infer_bound(s)
    assert _rng(b, C.op.axis[0]) == ("i", "1")
    assert _rng(b, C.op.axis[1]) == ("0", "16")
    text = ir_text(s, [D])
    assert loops(text) == ["for (i, 0, 5) {", "for (i_1, 0, 1) {", "for (j, 0, 16) {", "for (j, 0, 16) {"]
    assert "realize C([i, 1], [0, 16])" in text
    # after simplification the unit loop disappears and C is a row indexed by j alone
    final = ir_text(s, [D], step="simplify")
    assert "C[j] = 5.0f" in final and "D[i*16 + j] = C[j]*2.0f" in final
    check(s, [D], [], [np.full((5, 16), 10, "float32")])


def test_ex4_attach_path_and_realize_region():
    C = te.compute((5, 16), lambda i, j: te.const(5, "float32"), name="C")
    D = te.compute((4, 5, 16), lambda di, dj, dk: C[dj, dk] * 2, name="D")
    s = te.create_schedule(D.op)
    s[C].compute_at(s[D], D.op.axis[2])
    assert [iv.name for iv in attach_path(s[C])] == ["dk", "dj", "di"]
    b = tessel.infer_bound(s)
    assert _rng(b, C.op.axis[0]) == ("dj", "1")
    assert _rng(b, C.op.axis[1]) == ("dk", "1")
    text = ir_text(s, [D])
    expected = """realize D([0, 4], [0, 5], [0, 16]) {
  produce D {
    for (di, 0, 4) {
      for (dj, 0, 5) {
        for (dk, 0, 16) {
          realize C([dj, 1], [dk, 1]) {
            produce C {
              for (i, 0, 1) {
                for (j, 0, 1) {
                  C[i + dj, j + dk] = 5.0f
                }
              }
            }
            D[di, dj, dk] = C[dj, dk]*2.0f
          }
        }
      }
    }
  }
}"""
    assert text == expected
    check(s, [D], [], [np.full((4, 5, 16), 10, "float32")])


def test_ex5_split_then_compute_at():
    C, D = _c_d()
    s = te.create_schedule(D.op)
    d_o, d_i = s[D].split(D.op.axis[1], factor=8)
    s[C].compute_at(s[D], d_i)
    assert [iv.name for iv in attach_path(s[C])] == ["j.inner", "j.outer", "i"]
    b = tessel.infer_bound(s)
    assert _rng(b, d_o) == ("0", "2") and _rng(b, d_i) == ("0", "8")
    assert _rng(b, C.op.axis[1]) == ("j.outer*8 + j.inner", "1")
    text = ir_text(s, [D], step="simplify_indices")
    assert loops(text)[:3] == ["for (i, 0, 5) {", "for (j.outer, 0, 2) {", "for (j.inner, 0, 8) {"]
    assert "D[i, j.outer*8 + j.inner] = C[i, j.outer*8 + j.inner]*2.0f" in text
    check(s, [D], [], [np.full((5, 16), 10, "float32")])


def _cde():
    C = te.compute((5, 16), lambda i, j: te.const(5, "float32"), name="C")
    D = te.compute((5, 16), lambda di, dj: C[di, dj] * 2, name="D")
    E = te.compute((5, 16), lambda ei, ej: D[ei, ej] * 4, name="E")
    return C, D, E


def test_chain_c_at_d_at_e():
    C, D, E = _cde()
    s = te.create_schedule(E.op)
    s[C].compute_at(s[D], D.op.axis[1])
    s[D].compute_at(s[E], E.op.axis[1])
    assert [iv.name for iv in attach_path(s[C])] == ["dj", "di", "ej", "ei"]
    assert [iv.name for iv in attach_path(s[D])] == ["ej", "ei"]
    b = tessel.infer_bound(s)
    assert _rng(b, D.op.axis[0]) == ("ei", "1") and _rng(b, D.op.axis[1]) == ("ej", "1")
    assert _rng(b, C.op.axis[0]) == ("ei", "1") and _rng(b, C.op.axis[1]) == ("ej", "1")
    text = ir_text(s, [E])
    assert loops(text) == ["for (ei, 0, 5) {", "for (ej, 0, 16) {", "for (di, 0, 1) {", "for (dj, 0, 1) {",
                           "for (i, 0, 1) {", "for (j, 0, 1) {"]
    assert "C[i + ei, j + ej] = 5.0f" in text
    check(s, [E], [], [np.full((5, 16), 40, "float32")])


def test_chain_only_d_attached_relaxes_c_over_d_attach_path():
    C, D, E = _cde()
    s = te.create_schedule(E.op)
    s[D].compute_at(s[E], E.op.axis[1])
    b = tessel.infer_bound(s)
    # C is not attached: it must serve every (ei, ej) of D's attach path
    assert _rng(b, C.op.axis[0]) == ("0", "5") and _rng(b, C.op.axis[1]) == ("0", "16")
    assert _rng(b, D.op.axis[0]) == ("ei", "1")
    text = ir_text(s, [E])
    assert loops(text) == ["for (i, 0, 5) {", "for (j, 0, 16) {", "for (ei, 0, 5) {", "for (ej, 0, 16) {",
                           "for (di, 0, 1) {", "for (dj, 0, 1) {"]
    check(s, [E], [], [np.full((5, 16), 40, "float32")])


def test_chain_compute_at_every_level_values():
    """compute_at at every level of a three-stage chain, on random data."""
    A = te.placeholder((6, 10), name="A")
    B = te.compute((6, 10), lambda i, j: A[i, j] + 1, name="B")
    C = te.compute((6, 10), lambda i, j: B[i, j] * 3, name="C")
    D = te.compute((6, 10), lambda i, j: C[i, j] - A[i, j], name="D")
    a = np.random.default_rng(1).standard_normal((6, 10)).astype("float32")
    want = (a + 1) * 3 - a
    for b_level in (None, 0, 1):
        for c_level in (None, 0, 1):
            s = te.create_schedule(D.op)
            if c_level is not None:
                s[C].compute_at(s[D], D.op.axis[c_level])
            if b_level is not None:
                s[B].compute_at(s[C], C.op.axis[b_level])
            check(s, [A, D], [a], [want])


def test_split_factor_larger_than_extent_is_tightened():
    A = te.placeholder((6,), name="A")
    B = te.compute((6,), lambda i: A[i] + 1, name="B")
    s = te.create_schedule(B.op)
    o, i = s[B].split(B.op.axis[0], factor=16)
    b = tessel.infer_bound(s)
    assert _rng(b, i) == ("0", "6") and _rng(b, o) == ("0", "1")
    a = np.arange(6, dtype="float32") + 0.5
    check(s, [A, B], [a], [a + 1])


def test_bound_min_is_the_consumer_loop_variable():
    C, D = _c_d()
    s = te.create_schedule(D.op)
    s[C].compute_at(s[D], D.op.axis[1])
    b = tessel.infer_bound(s)
    assert structural_equal(b[C.op.axis[1]].min, D.op.axis[1].var)
