"""The explorer shows, for every step, the dependences of the schedule as it then stood (seed
004): each with an example and the loops that carry it, and the polyhedral model as text."""

from __future__ import annotations

import sys
from pathlib import Path

import tessel
from tessel import te

sys.path.insert(0, str(Path(__file__).parent.parent / "viz"))
from viz_util import page_data


def test_every_step_lists_its_dependences_and_the_loops_carrying_them():
    A = te.placeholder((4, 8), name="A")
    k = te.reduce_axis((0, 8), name="k")
    B = te.compute((4,), lambda i: te.sum(A[i, k], axis=k), name="B")
    C = te.compute((4,), lambda i: B[i] + 1, name="C<script>")
    s = te.create_schedule(C.op)
    ko, ki = s[B].split(k, factor=4)
    s[B].compute_at(s[C], C.op.axis[0])
    data = page_data(tessel.viz.explorer(s))
    steps = data["schedules"][0]["steps"]
    last = steps[-1]
    rows = {(r[0], r[1], r[2]): r for r in last["deps"]}
    flow = rows[("flow", "B (update)", "B (update)")]
    assert "then" in flow[4] and "B.k.outer" in flow[5] and "B.k.inner" in flow[5]
    # B is computed inside C's loop: its value reaches C within one iteration, carried by no loop
    assert rows[("flow", "B (update)", "C<script>")][5] == "none (loop-independent)"
    assert "statement S_B_update" in last["ir"]["poly"]
    split_step = steps[-2]  # before compute_at: B at the root, read by C later
    assert any(r[1] == "B (update)" and r[2] == "C<script>" for r in split_step["deps"])


def test_a_stage_nobody_reads_is_reported():
    A = te.placeholder((6,), name="A")
    B = te.compute((6,), lambda i: A[i] * 2, name="B")
    C = te.compute((6,), lambda i: te.if_then_else(i > 9, B[i], A[i]), name="C")
    s = te.create_schedule(C.op)
    m = tessel.poly.model(s)
    assert m.unread_stages() == ["B"]
    assert "unread: B is computed but no other stage reads it" in str(m)
    data = page_data(tessel.viz.explorer(s))
    assert "read by no stage: B" in data["schedules"][0]["steps"][-1]["deps_note"]


def test_a_statement_that_never_runs_is_reported():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    k = te.reduce_axis((0, n - n), name="k")
    B = te.compute((n,), lambda i: te.sum(A[k], axis=k), name="B")
    s = te.create_schedule(B.op)
    m = tessel.poly.model(s)
    assert [x.label() for x in m.empty_statements()] == ["B (update)"]
    assert "empty: B (update) has no instance" in str(m)
