"""TVM's tensorize analyses under their test-hook names, attach types compared with TVM's
numbers, ``tvm.ir.structural_equal`` of Python numbers, ``tvm.arith``, and the lowered IR
without tessel's ``produce`` marks (written in tessel's words)."""

from __future__ import annotations

import pytest

import tessel
import tessel.tvm as tvm
from tessel.errors import LowerError, NotOfferedError
from tessel.ir import stmt as S
from tessel.tvm import te


def _vadd16(guard_rows: int | None = None, outer=None):
    x = te.placeholder((16,), name="x")
    y = te.placeholder((16,), name="y")
    if guard_rows is None:
        z = te.compute((16,), lambda i: x[i] + y[i], name="z")
    else:  # the tail of a split, as the intrinsic declares it
        z = te.compute((16,), lambda i: tvm.tir.Select(outer * 16 + i < guard_rows, x[i] + y[i], 0.0), name="z")
    return te.decl_tensor_intrin(z.op, lambda ins, outs: tvm.tir.call_packed("vadd", ins[0], ins[1], outs[0]),
                                 default_buffer_params={"offset_factor": 1})


def test_the_region_one_call_covers_and_the_body_in_the_intrinsics_terms():
    A = te.placeholder((80,), name="A")
    B = te.placeholder((80,), name="B")
    C = te.compute((80,), lambda i: A[i] + B[i], name="C")
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=16)
    intrin = _vadd16()
    s[C].tensorize(xi, intrin)
    infer = tvm.get_global_func("test.op.InferTensorizeRegion")
    out_dom, in_dom = infer(s[C], tvm.te.schedule.InferBound(s))
    r = out_dom[C.op.axis[0]]
    assert tvm.ir.structural_equal(r.extent, 16) and not tvm.ir.structural_equal(r.extent, 15)
    assert tvm.ir.structural_equal(r.min, xo.var * 16)
    assert [t.name for t, _ in in_dom.items()] == ["A", "B"] and in_dom.items()[1][1][0].extent.value == 16
    match = tvm.get_global_func("test.op.MatchTensorizeBody")
    body = match(s[C], out_dom, in_dom, intrin)
    assert tvm.ir.structural_equal(body[0], intrin.op.body[0])
    x, y = intrin.inputs
    other = te.decl_tensor_intrin(te.compute((16,), lambda i: x[i] * y[i], name="w").op,
                                  lambda ins, outs: tvm.tir.call_packed("vmul", ins[0], ins[1], outs[0]))
    with pytest.raises(LowerError, match="does not match"):
        match(s[C], out_dom, in_dom, other)


def test_a_tail_guarded_by_cache_write_matches_an_intrinsic_declaring_a_select():
    A = te.placeholder((40,), name="A")
    B = te.placeholder((40,), name="B")
    C = te.compute((40,), lambda i: A[i] + B[i], name="C")
    s = te.create_schedule(C.op)
    s[C].split(C.op.axis[0], factor=16)
    CG = s.cache_write(C, "global")
    xo, xi = CG.op.axis
    s[CG].tensorize(xi, _vadd16(40, xo))
    out_dom, in_dom = tvm.get_global_func("test.op.InferTensorizeRegion")(s[CG], tvm.te.schedule.InferBound(s))
    body = tvm.get_global_func("test.op.MatchTensorizeBody")(s[CG], out_dom, in_dom, _vadd16(40, xo))
    assert isinstance(body[0], tvm.tir.Select)


def test_attach_types_compare_equal_to_tvms_numbers():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1.0, name="B")
    C = te.compute((8,), lambda i: B[i] * 2.0, name="C")
    s = te.create_schedule(C.op)
    assert s[B].attach_type == 1 and s[B].attach_type == "root" and s[B].attach_type != 2
    s[B].compute_at(s[C], C.op.axis[0])
    assert s[B].attach_type == 4
    s[B].compute_inline()
    assert s[B].attach_type == 2 and s[B].attach_type != 3  # tessel has no kInlinedAlready
    assert s[B].attach_type != True  # noqa: E712 (a bool is no attach type)


def test_structural_equal_converts_numbers_and_lists_and_tvm_arith_simplifies():
    i = te.var("i")
    assert tvm.ir.structural_equal(tvm.tir.const(3), 3) and not tvm.ir.structural_equal(tvm.tir.const(3), 4)
    assert tvm.ir.structural_equal([i, 2], (i, tvm.tir.const(2)))
    assert tvm.ir.structural_equal(tvm.arith.Analyzer().simplify(i * 2 - i), i)
    with pytest.raises(NotOfferedError, match="identity"):
        tvm.ir.structural_equal(i, te.var("j"), map_free_vars=True)


def test_lowered_bodies_hold_the_loops_without_produce_marks():
    A = te.placeholder((6, 5), name="A")
    B = te.compute((6, 5), lambda i, j: A[i, j] + 1.0, name="B")
    C = te.compute((6, 5), lambda i, j: B[i, j] * 2.0, name="C")
    s = te.create_schedule(C.op)
    body = tvm.lower(s, [A, C])["main"].body
    assert isinstance(body, S.Allocate) and isinstance(body.body, S.SeqStmt)
    assert all(isinstance(x, S.For) for x in body.body) and len(body.body) == 2
    stmt = tvm.te.schedule.ScheduleOps(s, tvm.te.schedule.InferBound(s))
    assert "produce" not in str(stmt) and "produce" not in str(tvm.lower(s, [A, C]))


def test_the_schedule_record_holds_the_schedule_after_each_primitive():
    A = te.placeholder((32, 32), name="A")
    k = te.reduce_axis((0, 32), name="k")
    C = te.compute((32, 32), lambda i, j: te.sum(A[i, k] * A[k, j], axis=k), name="C")
    assert te.create_schedule(C.op).schedule_record == []  # kept only when asked
    with tvm.transform.PassContext(config={"te.keep_schedule_record": True}):
        s = te.create_schedule(C.op)
    io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], 8, 8)
    with pytest.raises(tessel.errors.ScheduleError):
        s[C].split(C.op.axis[0], 2)  # refused: not a primitive applied, not recorded
    s[C].vectorize(ji)
    assert s.primitive_record == ["vanilla", "split", "split", "reorder", "vectorize"]
    rec = s.schedule_record
    assert [len(x[C].relations) for x in rec] == [0, 1, 2, 2, 2]
    assert [iv.name for iv in rec[2][C].leaf_iter_vars][:2] == ["i.outer", "i.inner"]  # before the reorder
    assert [iv.name for iv in rec[3][C].leaf_iter_vars][:2] == ["i.outer", "j.outer"]
    assert not rec[3][C].iter_var_attrs and rec[4][C].iter_var_attrs
    rec[1][C].split(rec[1][C].leaf_iter_vars[-1], 4)  # a copy: the record does not grow
    assert len(s.schedule_record) == 5 and len(s[C].relations) == 2
