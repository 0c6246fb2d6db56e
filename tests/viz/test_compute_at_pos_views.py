"""computeAt by position in the views (seed 003): the explorer says, for the step, which stages
were replayed and attached where and the common consumer; the IterVar DAG marks the relations
that replay made."""

from __future__ import annotations

import json
import re

from tessel import te, viz


def _program():
    n = 45
    t0 = te.placeholder((n,), name="t0")
    t1 = te.compute((n,), lambda i: t0[i] * 0.5, name="t1")
    t2 = te.compute((n,), lambda i: t1[i] * -1.0, name="t2")
    t3 = te.compute((n,), lambda i: t1[i] * -2.0, name="t3")
    t4 = te.compute((n,), lambda i: t2[i] + t3[i], name="t4")
    s = te.create_schedule(t4.op)
    s[t3].split(t3.op.axis[0], factor=8)
    s[t1].compute_at(s[t3], 1)
    return s, [t0, t4]


def test_itervar_dag_marks_replayed_relations():
    s, _ = _program()
    dag = s["t2"].itervar_dag()
    assert [e.replayed_from for e in dag.edges] == ["t1"]
    assert "[replayed from t1]" in dag.to_text()
    assert [e.replayed_from for e in s["t3"].itervar_dag().edges] == [None]  # the user's own split
    svg = viz.itervar_graph(s, stage="t4").to_dot()
    assert "replayed from" in svg


def test_explorer_reports_the_compute_at_step():
    s, args = _program()
    page = viz.explorer(s, args, engine="python")
    data = json.loads(re.search(r'<script type="application/json" id="data">(.*?)</script>', page, re.S).group(1))
    steps = data["schedules"][0]["steps"]
    step = next(st for st in steps if st["call"].startswith("s[t1].compute_at"))
    text = step["positions"]
    assert "common consumer: t4" in text
    assert "replayed: t1, t2, t4" in text
    assert "t1 computed at t4's loop i.outer (position 1)" in text
    assert all("positions" not in st for st in steps if st["call"].startswith("s[t3].split"))


def test_explorer_says_what_best_effort_lowered_and_why():
    n = 21
    t0 = te.placeholder((n, 6), name="t0")
    t1 = te.compute((n, 6), lambda i, j: t0[i, j] + 1.0, name="t1")
    k = te.reduce_axis((0, 6), name="k")
    t2 = te.compute((n,), lambda i: te.sum(t1[i, k], axis=k), name="t2")
    t3 = te.compute((n,), lambda i: t2[i] * 2.0, name="t3")
    s = te.create_schedule(t3.op)
    _, ii = s[t3].split(t3.op.axis[0], factor=4)
    s[t3].unroll(ii)
    s[t1].compute_at(s[t3], -1, mode="best_effort")
    page = viz.explorer(s, [t0, t3], engine="python")
    data = json.loads(re.search(r'<script type="application/json" id="data">(.*?)</script>', page, re.S).group(1))
    step = next(st for st in data["schedules"][0]["steps"] if st["call"].startswith("s[t1].compute_at"))
    assert "lowered t2's position from 2 to 1: t3's loop i.inner is unrolled" in step["positions"]
