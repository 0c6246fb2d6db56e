"""Domains and recurrences in InferBound, the views, the explorer and the loop legality rules."""

from __future__ import annotations

import pytest

import tessel
from tessel import te


def _program(n=7):
    x = te.placeholder((n,), name="x")
    y = te.recurrence((n,), [te.define(lambda y, i: x[i]),
                             te.define(lambda y, i: x[i] + 0.5 * y[i + 1], where=lambda i: i < n - 1)], name="y")
    B = te.compute((n, n), lambda i, j: y[i] * y[j], name="B", where=lambda i, j: j < i)
    return x, y, B


def test_infer_bound_accepts_reads_under_a_declared_domain():
    x, y, B = _program()
    s = te.create_schedule(B.op)
    bounds = tessel.infer_bound(s)  # y[i + 1] is read only where i < n - 1
    assert all(r.extent.value == 7 for iv, r in bounds.items() if iv in y.op.axis)


def test_views_show_domains_definitions_and_directions():
    x, y, B = _program()
    s = te.create_schedule(B.op)
    flow = tessel.viz.dataflow_graph(s).to_dot()
    assert "domain: j < i" in flow
    assert "definition 1 of 2 of y" in flow and "definition 2 of 2 of y" in flow
    assert "backwards: i" in flow
    tree = tessel.viz.schedule_tree(s).to_dot()
    assert "domain: i < 6" in tree and "no loop ranges" not in tree
    assert tessel.viz.schedule_tree(s).to_svg().lstrip().startswith("<")
    tessel.viz.itervar_graph(s).to_dot()


def test_explorer_lowers_every_step(tmp_path):
    x, y, B = _program()
    s = te.create_schedule(B.op)
    s[B].split(B.op.axis[0], factor=3)
    page = tessel.viz.explorer(s, [x, B], path=tmp_path / "e.html")
    assert "definition 2 of 2 of y" in page or "y.def0" in page


def test_parallel_loop_carrying_a_recurrence_is_refused_and_the_other_allowed():
    n = 8
    A = te.placeholder((n, n), name="A")
    h = te.recurrence((n, n), [te.define(lambda h, i, j: A[i, j]),
                               te.define(lambda h, i, j: h[i - 1, j] * 0.5 + A[i, j], where=lambda i, j: i > 0)],
                      name="h")
    s = te.create_schedule(h.op)
    s[h].parallel(h.op.axis[0])
    with pytest.raises(tessel.ScheduleError, match="carries the flow dependence h -> h"):
        tessel.build(s, [A, h], target="python")
    s = te.create_schedule(h.op)
    s[h].parallel(h.op.axis[1])  # j carries nothing: rows are independent
    tessel.build(s, [A, h], target="python")


def test_recurrence_round_trips_through_an_ir_document():
    import numpy as np

    n = 9
    x = te.placeholder((n,), name="x")
    y = te.recurrence((n,), [te.define(lambda y, i: x[i]),
                             te.define(lambda y, i: x[i] + 0.5 * y[i + 1], where=lambda i: i < n - 1)], name="y")
    doc = tessel.ir.save_json(y)
    y2 = tessel.ir.load_json(doc)
    assert tessel.ir.save_json(y2) == doc
    assert y2.op.definitions[-1] is y2 and y2.op.definitions[0].op.base is y2
    (x2,) = [t for t in y2.op.definitions[0].op.input_tensors() if t.op.is_placeholder]
    f = tessel.build(te.create_schedule(y2.op), [x2, y2], target="python")
    xv = np.linspace(-1, 1, n).astype("float32")
    out = np.zeros(n, "float32")
    f(xv, out)
    ref = xv.astype("float64").copy()
    for i in range(n - 2, -1, -1):
        ref[i] = xv[i] + 0.5 * ref[i + 1]
    np.testing.assert_allclose(out, ref, rtol=1e-6)


def test_domain_benchmark_runs_and_checks_its_kernels_agree():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from benchmarks import domains

    table = domains.run(13, 1)  # the three kernels are compared inside the triangle before timing
    assert table.count("\n| ") == 4 and "| triangle |" in table and "| square + guard |" in table
