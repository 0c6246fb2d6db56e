"""``tvm.te.schedule``: InferBound and ScheduleOps one by one, as TVM's own schedule tests call
them (written in tessel's words), and the relation classes under their TVM names."""

from __future__ import annotations

import pytest

import tessel.tvm as tvm
from tessel.errors import DefinitionError
from tessel.ir import stmt as S
from tessel.ir.functor import collect
from tessel.tvm import te


def _attached(m=10, factor=4):
    A = te.placeholder((m,), name="A")
    B = te.compute((m,), lambda i: A[i] + 1.0, name="B")
    C = te.compute((m,), lambda i: B[i] * 2.0, name="C")
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=factor)
    s[B].compute_at(s[C], xo)
    return s.normalize(), B, C, xo, xi


def test_infer_bound_gives_each_loop_its_range():
    s, B, C, xo, xi = _attached()
    bounds = tvm.te.schedule.InferBound(s)
    assert bounds[xo].extent.value == 3 and bounds[xi].extent.value == 4
    assert bounds[B.op.axis[0]].extent.value == 4  # B computed per tile of C: four elements


def test_schedule_ops_is_the_loop_nest_over_tensors():
    s, B, C, xo, _ = _attached()
    bounds = tvm.te.schedule.InferBound(s)
    stmt = tvm.te.schedule.ScheduleOps(s, bounds)
    realize = collect(stmt, lambda n: isinstance(n, S.ProducerRealize))
    assert {r.producer.op.name for r in realize} == {"B", "C"}
    loops = {f.loop_var.name: f for f in collect(stmt, lambda n: isinstance(n, S.For))}
    assert set(loops) == {"i.outer", "i", "i.inner"}
    inside = {f.loop_var.name for f in collect(loops["i.outer"].body, lambda n: isinstance(n, S.For))}
    assert inside == {"i", "i.inner"}  # B's loop inside C's outer loop, beside C's inner one


def test_the_module_imports_under_its_tvm_names():
    import tessel.tvm.te.schedule as by_import
    from tessel.tvm.te.schedule import InferBound, Split

    assert by_import is tvm.te.schedule and InferBound is tvm.te.schedule.InferBound
    s, *_ = _attached()
    assert any(isinstance(r, Split) for st in s.stages for r in st.relations)


def test_a_map_that_is_not_this_schedules_is_refused():
    s, *_ = _attached()
    other, *_ = _attached()
    with pytest.raises(DefinitionError, match="InferBound"):
        tvm.te.schedule.ScheduleOps(s, tvm.te.schedule.InferBound(other))
    with pytest.raises(DefinitionError, match="expected a schedule"):
        tvm.te.schedule.InferBound("s")


def test_a_stage_knows_its_innermost_group_and_the_group_moves_together():
    m, n = te.var("m"), te.var("n")
    x = te.compute((m, n), lambda i, j: te.const(1.0, "float32"), name="x")
    x1 = te.compute((m, n), lambda i, j: x[i, j] + 1.0, name="x1")
    x2 = te.compute((m, n), lambda i, j: x1[i, j] + 2.0, name="x2")
    s = te.create_schedule(x2.op)
    g1 = s.create_group(outputs=x, inputs=x, include_inputs=True)
    g2 = s.create_group(outputs=x1, inputs=x, include_inputs=True)
    assert s[x].group is g1 and s[x1].group is g2 and s[x2].group is None  # g1 lies inside g2
    g2.compute_at(s[x2], x2.op.axis[0])
    bounds = tvm.te.schedule.InferBound(s.normalize())
    assert bounds[x1.op.axis[0]].extent.value == 1 and str(bounds[x1.op.axis[1]].extent) == "n"


def test_infer_bound_is_a_tvm_container_map_and_prim_exprs_compare_by_proof():
    import tessel.tvm as tvm

    m, n = tvm.te.var("m"), tvm.te.var("n")
    A = tvm.te.placeholder((m, n), name="A")
    B = tvm.te.compute((m, n), lambda i, j: A[i, j] + 1.0, name="B")
    C = tvm.te.compute((m, n), lambda i, j: B[i, j] * 2.0, name="C")
    s = tvm.te.create_schedule(C.op)
    xo, _ = s[C].split(C.op.axis[0], 8)
    s[B].compute_at(s[C], xo)
    bounds = tvm.te.schedule.InferBound(s)
    assert isinstance(bounds, tvm.container.Map) and not isinstance(bounds, tvm.container.Array)
    assert isinstance(list(bounds), tvm.container.Array) and not isinstance("ab", tvm.container.Array)
    assert bounds[B.op.axis[0]].extent.value == 8
    tvm.testing.assert_prim_expr_equal(bounds[B.op.axis[1]].extent, n)
    tvm.testing.assert_prim_expr_equal((m + 1) * 2, 2 * m + 2)
    with pytest.raises(AssertionError, match="not provably equal"):
        tvm.testing.assert_prim_expr_equal(m, n)


def test_iter_types_and_pragma_keys_as_tvm_spells_them():
    import tessel.tvm as tvm

    A = tvm.te.placeholder((40, 30), name="A")
    T = tvm.te.compute((40, 30), lambda i, j: A[i, j] * 2.0, name="T")
    s = tvm.te.create_schedule(T.op)
    xo, yo, xi, yi = s[T].tile(T.op.axis[0], T.op.axis[1], x_factor=10, y_factor=5)
    s[T].vectorize(yi)
    s[T].unroll(xi)
    s[T].pragma(xo, "my_hint")
    attrs = s[T].iter_var_attrs
    assert attrs[xi].iter_type == tvm.te.schedule.IterVar.Unrolled
    assert attrs[yi].iter_type == tvm.te.schedule.IterVar.Vectorized
    key = attrs[xo].pragma_keys[0]
    assert key == "my_hint" and key.value == "my_hint"


def test_schedule_to_module_is_the_lowered_module():
    import tessel.tvm as tvm
    from tessel.tvm.driver.build_module import schedule_to_module

    A = tvm.te.placeholder((9, 7), name="A")
    B = tvm.te.compute((9, 7), lambda i, j: A[i, j] + 1.0, name="B")
    s = tvm.te.create_schedule(B.op)
    mod = schedule_to_module(s, [A, B])
    assert isinstance(mod["main"], tvm.tir.PrimFunc)
    assert str(mod) == str(tvm.lower(s, [A, B]))


def test_graph_queries_read_graph_post_order_attach_paths_and_a_scans_body():
    m, n = te.var("m"), te.var("n")
    x = te.compute((m, n), lambda i, j: te.const(1.0, "float32"), name="x")
    state = te.placeholder((m, n), name="state")
    init = te.compute((1, n), lambda _, i: x[0, i], name="init")
    x_trans = te.compute((m, n), lambda i, j: x[i, j] + 1.0, name="x_trans")
    up1 = te.compute((m, n), lambda t, i: state[t - 1, i] + 1.0, name="up1")
    update = te.compute((m, n), lambda t, i: up1[t, i] + x_trans[t, i], name="update")
    res = te.scan(init, update, state)
    assert set(tvm.te.schedule.ScanGetBody(res.op)) == {update.op, up1.op}
    s = te.create_schedule(res.op)
    s[x_trans].compute_at(s[update], update.op.axis[0])
    paths = tvm.te.schedule.CreateAttachPath(s)
    assert paths[update.op] == [res.op.scan_axis]
    assert paths[x_trans.op] == [update.op.axis[0], res.op.scan_axis]
    g = tvm.te.schedule.CreateReadGraph([update.op])
    assert g[update.op] == [up1, x_trans] and g[x_trans.op] == [x]
    order = tvm.te.schedule.PostDFSOrder([update.op], g)
    assert order.index(x.op) < order.index(x_trans.op) < order.index(update.op)
