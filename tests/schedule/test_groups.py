"""Groups (groups.py): a tree as TVM's (nesting, a scan's body a group of its own), placement
kept inside the groups that hold a stage, and a group moved whole, checked on both targets."""

from __future__ import annotations

import pytest
from helpers import check, rand

from tessel import te
from tessel.errors import ScheduleError


def _chain(n: int = 11, m: int = 7):
    A = te.placeholder((n, m), name="A")
    x = te.compute((n, m), lambda i, j: A[i, j] * 2.0, name="x")
    x1 = te.compute((n, m), lambda i, j: x[i, j] + 1.0, name="x1")
    x2 = te.compute((n, m), lambda i, j: x1[i, j] - A[i, j], name="x2")
    return A, x, x1, x2


def test_groups_nest_as_a_tree_and_count_their_children():
    A, x, x1, x2 = _chain()
    s = te.create_schedule(x2.op)
    g1 = s.create_group(outputs=x1, inputs=x)
    g2 = s.create_group(outputs=x1, inputs=x, include_inputs=True)
    assert s.groups == [g1, g2] and g1.group is g2 and g2.group is None
    assert s[x].group is g2 and s[x1].group is g1  # a stage's group is its innermost
    assert (g1.num_child_stages, g2.num_child_stages) == (1, 2)  # g2's children: g1 and x
    g2.compute_at(s[x2], x2.op.axis[0])
    assert g2.attach_stage is s[x2] and g1.attach_stage is s[x2]
    a = rand(11, 7)
    check(s, [A, x2], [a], [a * 2 + 1 - a])


def test_a_group_that_would_cut_another_is_refused():
    A, x, x1, x2 = _chain()
    s = te.create_schedule(x2.op)
    s.create_group(outputs=x1, inputs=A)  # x and x1
    with pytest.raises(ScheduleError, match="part of group\\(x, x1\\) but not all"):
        s.create_group(outputs=x2, inputs=x, include_inputs=False)  # x1 and x2: takes x1 alone


def test_a_stage_placed_in_its_group_stays_there_and_the_group_moves_whole():
    A, x, x1, x2 = _chain(13, 9)
    s = te.create_schedule(x2.op)
    g = s.create_group(outputs=x1, inputs=A)
    s[x].compute_at(s[x1], x1.op.axis[1])  # inside its group
    with pytest.raises(ScheduleError, match="stage x is placed inside group\\(x, x1\\), but x2 lies outside"):
        s[x].compute_at(s[x2], x2.op.axis[0])
    xo, _ = s[x2].split(x2.op.axis[0], factor=4)
    g.compute_at(s[x2], xo)
    assert s[x1].attach_stage is s[x2] and s[x].attach_stage is s[x1]
    a = rand(13, 9, seed=2)
    check(s, [A, x2], [a], [a * 2 + 1 - a])


def test_a_scan_body_is_a_group_its_stages_cannot_leave():
    m, n = 6, 5
    X = te.placeholder((m, n), name="X")
    state = te.placeholder((m, n), name="state")
    init = te.compute((1, n), lambda _, i: X[0, i], name="init")
    u1 = te.compute((m, n), lambda t, i: state[t - 1, i] + X[t, i], name="u1")
    u2 = te.compute((m, n), lambda t, i: u1[t, i] * 0.5, name="u2")
    res = te.scan(init, u2, state, inputs=[X], name="res")
    s = te.create_schedule(res.op)
    assert s[u1].group is not None and s[u1].group is s[u2].group and s.groups == [s[u1].group]
    s[u1].compute_at(s[u2], u2.op.axis[1])  # within the scan's group
    with pytest.raises(ScheduleError, match="u2 is part of the body of scan res.*init lies outside"):
        s[u2].compute_at(s[init], init.op.axis[0])
    x = rand(m, n, seed=3)
    want = x.copy()
    for t in range(1, m):
        want[t] = (want[t - 1] + x[t]) * 0.5
    check(s, [X, res], [x], [want])


def test_a_copy_has_its_own_groups_over_its_own_stages():
    A, x, x1, x2 = _chain()
    s = te.create_schedule(x2.op)
    g = s.create_group(outputs=x1, inputs=A)
    t = s.copy()
    (tg,) = t.groups
    assert tg is not g and tg.members == [t[x], t[x1]] and t[x].group is tg and s[x].group is g
    tg.compute_at(t[x2], x2.op.axis[0])
    assert t[x1].attach_stage is t[x2] and s[x1].attach_stage is None
