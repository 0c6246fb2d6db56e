"""Commands are ordinary schedule steps (issue 14, item 3): recorded, replayed onto fresh
tensors, copied with the schedule, shown by the explorer and the views, checked by the
legality hook after every call, and refused with an error naming the stage and what to do."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import check, rand

import tessel
from tessel import te
from tessel.errors import ScheduleError
from tessel.schedule import checking, commands
from tessel.schedule.history import corresponding

sys.path.insert(0, str(Path(__file__).parent.parent / "viz"))
from viz_util import page_data, parse_dot


def _pipeline():
    n = te.var("n")
    A = te.placeholder((n + 2, 5), name="A")
    B = te.compute((n + 2, 5), lambda i, j: A[i, j] * 2, name="B")
    C = te.compute((n, 5), lambda i, j: B[i, j] + B[i + 2, j], name="C")
    return A, B, C


def _ref(a):
    b = a * 2
    return b[:-2] + b[2:]


# every command, each a step; the schedule is legal after each of them
STEPS = {
    "after": lambda s, B, C: s[C].after(s[B], None),
    "shift": lambda s, B, C: (s[C].shift(C.op.axis[0], 2), s[C].after(s[B], C.op.axis[0])),
    "interchange": lambda s, B, C: s[B].interchange(*B.op.axis),
    "reverse": lambda s, B, C: s[B].reverse(B.op.axis[1]),
    "skew": lambda s, B, C: s[B].skew(*B.op.axis, 1, 1),
    "store_in": lambda s, B, C: s[B].store_in(te.placeholder((5, s[B].op.output(0).shape[0]), name="Bt"),
                                               lambda i, j: (j, i)),
    "storage_fold": lambda s, B, C: (s[C].shift(C.op.axis[0], 2), s[C].after(s[B], C.op.axis[0]),
                                     s[B].storage_fold(B.op.axis[0], 3)),
    "then": lambda s, B, C: s[B].then(s[C], None),
    "before": lambda s, B, C: s[B].before(s[C], "root"),
}


@pytest.mark.parametrize("name", sorted(STEPS))
def test_each_command_is_a_step_that_replays_to_the_same_values(name):
    A, B, C = _pipeline()
    s = te.create_schedule(C.op)
    STEPS[name](s, B, C)
    calls = [st.call for st in s.history]
    assert any(f".{name}(" in c for c in calls), calls
    a = rand(9, 5)
    check(s, [A, C], [a], [_ref(a)])
    again = s.history.replay()  # onto a fresh schedule of the same operations
    assert commands.commands_key(again) == commands.commands_key(s)
    check(again, [A, C], [a], [_ref(a)])
    copy = s.copy()  # a copy keeps the commands and leaves the original alone
    assert commands.commands_key(copy) == commands.commands_key(s)


def test_replay_onto_fresh_tensors_keeps_orders_on_the_new_stages():
    A, B, C = _pipeline()
    s = te.create_schedule(C.op)
    s[C].shift(C.op.axis[0], 2)
    s[C].after(s[B], C.op.axis[0])
    A2, B2, C2 = _pipeline()
    t = s.history.replay(onto=[C2.op])
    (order,) = t.orders
    assert order.stage is t[C2] and order.anchor is t[B2] and order.level is C2.op.axis[0]
    a = rand(7, 5)
    check(t, [A2, C2], [a], [_ref(a)])
    assert corresponding(C, s, t) is C2


def test_the_explorer_shows_each_command_with_its_code_and_model():
    A, B, C = _pipeline()
    s = te.create_schedule(C.op)
    s[C].shift(C.op.axis[0], 2)
    s[C].after(s[B], C.op.axis[0])
    data = page_data(tessel.viz.explorer(s))
    steps = data["schedules"][0]["steps"]
    assert [st["call"] for st in steps[-2:]] == ["s[C].shift(i, 2)", "s[C].after(s[B], i)"]
    last = steps[-1]
    assert last["state"] == "ok"
    assert "t1 = 2 + " in last["ir"]["poly"]  # C's rows run two steps later...
    assert "commands: shift(i, 2), after(B, i)" in last["ir"]["poly"]
    fused = last["ir"]["schedule_ops"]
    assert fused.count("for (i") == 1  # ...in the loop that computes B's rows


def test_the_schedule_tree_lists_a_stages_commands():
    A, B, C = _pipeline()
    s = te.create_schedule(C.op)
    s[C].shift(C.op.axis[0], 2)
    s[C].after(s[B], C.op.axis[0])
    s[B].storage_fold(B.op.axis[0], 3)
    dot = parse_dot(tessel.viz.schedule_tree(s).to_dot())
    labels = {ln for node in dot.nodes for ln in dot.label(node)}
    assert "shift(i, 2)" in labels and "after(B, i)" in labels
    assert any(ln.startswith("storage_fold(B.folded[i%3, j])") for ln in labels)


# ---- the checker asked after each command -------------------------------------------------
def test_the_checker_is_asked_after_every_command_and_its_refusal_undoes_it(monkeypatch):
    """The schedule asks the checking layer through the interface it owns (schedule.checking);
    a checker standing in for tessel.check's sees every command, and its refusal undoes it."""
    seen = []
    real = checking.checker()

    class Refusing:
        def __getattr__(self, name):
            return getattr(real, name)

        def after_command(self, sch, stage, cmd):
            seen.append((stage.name, type(cmd).__name__))
            if isinstance(cmd, commands.Skew):
                raise ScheduleError(f"stage {stage.name}: refused by the test's check")
            real.after_command(sch, stage, cmd)

    monkeypatch.setattr(checking, "_WIRED", [Refusing()])
    A, B, C = _pipeline()
    s = te.create_schedule(C.op)
    s[C].after(s[B], None)
    s[B].shift(B.op.axis[0], 1)
    with pytest.raises(ScheduleError, match="refused by the test's check"):
        s[B].skew(*B.op.axis, 1, 1)
    assert seen == [("C", "Order"), ("B", "Shift"), ("B", "Skew")]
    assert [type(c).__name__ for c in s[B].commands] == ["Shift"]  # the skew was undone
    assert s.history[-1].error is not None  # and recorded as a failed step
    a = rand(6, 5)
    check(s, [A, C], [a], [_ref(a)])


def test_the_checking_layer_is_wired_once_by_the_package_face():
    """tessel/__init__.py wires tessel.check to the schedule; no other module calls wire."""
    import tessel.check

    assert checking.checker() is tessel.check.CHECKS
    root = Path(tessel.__file__).parent
    callers = sorted(str(p.relative_to(root)) for p in root.rglob("*.py") if "_wire(" in p.read_text()
                     or "checking.wire(" in p.read_text())
    assert callers == ["__init__.py"]


# ---- refusals -----------------------------------------------------------------------------
def test_refusals_name_the_stage_and_say_what_to_do():
    A, B, C = _pipeline()
    s = te.create_schedule(C.op)
    i, j = B.op.axis
    with pytest.raises(ScheduleError, match="not unimodular.*gcd"):
        s[B].skew(i, j, 2, 2)
    with pytest.raises(ScheduleError, match="constant int"):
        s[B].shift(i, 1.5)
    with pytest.raises(ScheduleError, match="two different loops"):
        s[B].interchange(i, i)
    with pytest.raises(ScheduleError, match="needs another stage"):
        s[B].after(s[B], None)
    with pytest.raises(ScheduleError, match="level r is not a loop of B or C"):
        s[B].after(s[C], te.reduce_axis((0, 2), name="r"))
    with pytest.raises(ScheduleError, match="level must be a loop"):
        s[B].after(s[C], 3)
    io, ii = s[B].split(i, factor=2)
    with pytest.raises(ScheduleError, match="no longer a loop of B"):
        s[B].shift(i, 1)
    s[B].compute_at(s[C], C.op.axis[0])
    with pytest.raises(ScheduleError, match="computed at the root.*compute_root"):
        s[C].after(s[B], None)
    assert not commands.has_commands(s)


def test_interchange_across_a_reduction_init_is_refused():
    n = te.var("n")
    A = te.placeholder((n, 4), name="A")
    k = te.reduce_axis((0, 4), name="k")
    R = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="R")
    s = te.create_schedule(R.op)
    # the command is checked against the model right away (tessel.check), so refused there
    with pytest.raises(ScheduleError, match="R.*interchange.*R \\(init\\) runs inside i and not inside k"):
        s[R].interchange(R.op.axis[0], k)
    assert not s[R].commands


def test_skew_of_loops_that_are_not_consecutive_is_refused():
    A = te.placeholder((3, 4, 5), name="A")
    B = te.compute((3, 4, 5), lambda i, j, k: A[i, j, k] + 1, name="B")
    s = te.create_schedule(B.op)
    i, j, k = B.op.axis
    with pytest.raises(ScheduleError, match="consecutive loops"):
        s[B].skew(i, k, 1, 1)
        tessel.lower(s, [A, B])
    s2 = te.create_schedule(B.op)
    s2[B].interchange(j, k)  # now i, k are consecutive
    s2[B].skew(i, k, 1, 1)
    a = rand(3, 4, 5)
    check(s2, [A, B], [a], [a + 1])
    assert np.isfinite(a).all()
