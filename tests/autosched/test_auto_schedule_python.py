"""``s.python()``: a schedule printed as the Python that makes it, which a user pastes and edits.
Executed, the text rebuilds a schedule with the same steps that lowers to the same loops, for
every auto-scheduled kernel of the benchmark suite, for hand-written steps, and for names that
are no Python identifiers.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from helpers import rand

import tessel
from tessel import te
from tessel.autosched import auto_schedule_result
from tessel.schedule.history import AxisRef

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # benchmarks/ lives at the root

from benchmarks import definitions


def auto(outputs, **kw):
    """The rule-based schedule alone (budget 0: nothing measured, nothing timed)."""
    return auto_schedule_result(outputs, **{"budget": 0, **kw})


def _steps(s) -> list[tuple]:
    return [(st.primitive, st.target, st.args, tuple(sorted(st.kwargs.items()))) for st in s.history[1:]
            if st.error is None]


def rebuilt(s, outputs, func: str = "schedule"):
    ns: dict = {}
    exec(compile(s.python(func), "<s.python()>", "exec"), ns)
    return ns[func](*outputs)


@pytest.mark.parametrize("d", definitions.suite(small=True), ids=lambda d: d.name)
def test_printed_auto_schedule_rebuilds_an_equal_schedule(d):
    r = auto(d.outputs)
    again = rebuilt(r.schedule, d.outputs)
    assert _steps(again) == _steps(r.schedule)
    args = d.params + d.outputs
    assert str(tessel.lower(again, args)) == str(tessel.lower(r.schedule, args))


def test_printed_text_names_loops_and_stages_as_a_user_would():
    d = definitions.matmul(64)
    text = auto(d.outputs).schedule.python()
    assert text.startswith("from tessel import te\n")
    assert "def schedule(C):" in text
    assert "C_local = s.cache_write(C, 'local')" in text
    assert "j_outer, j_inner = s[C].split(j, factor=" in text
    assert "s[C_local].vectorize(j_c)" in text
    assert "return s" in text


def test_hand_steps_with_tuples_errors_and_awkward_names_print_and_run():
    """A refused step is left out; a stage named like a keyword and one with a dot are
    printed through the name-safety module; an argmax's two outputs come back as a tuple."""
    A = te.placeholder((9, 13), name="lambda")
    B = te.compute((9, 13), lambda i, j: A[i, j] * 2.0, name="B.x")
    k = te.reduce_axis((0, 13), name="k")
    C = te.compute((9,), lambda i: te.sum(B[i, k], axis=k), name="None")
    s = te.create_schedule(C.op)
    ko, ki = s[C].split(C.op.reduce_axis[0], factor=4)
    CF = s.rfactor(C, ki)
    with pytest.raises(tessel.ScheduleError):
        s[C].vectorize(C.op.reduce_axis[0])
    s[B].compute_at(s[CF], s[CF].op.axis[1])
    s[CF].compute_at(s[C], s[C].op.axis[0])
    text = s.python("make")
    assert "def make(None_):" in text and "lambda_" in text and "B_x" in text
    again = rebuilt(s, [C], "make")
    assert _steps(again) == _steps(s)
    a = rand(9, 13)
    import numpy as np

    out = np.empty(9, "float32")
    tessel.build(again, [A, C], target="python")(a, out)
    np.testing.assert_allclose(out, (a * 2).sum(axis=1), rtol=1e-5, atol=1e-5)


def test_split_results_are_bound_to_variables_named_after_the_loops():
    A = te.placeholder((8, 8), name="A")
    B = te.compute((8, 8), lambda i, j: A[i, j] + 1.0, name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=4)
    s[B].unroll(xi)
    assert isinstance(s.history[-1].args[0], AxisRef)
    assert "i_outer, i_inner = s[B].split(i, factor=4)" in s.python()
    assert "s[B].unroll(i_inner)" in s.python()


def test_tessel_explain_sees_the_auto_schedule_and_nothing_it_tried(tmp_path):
    """The rules are tried on quiet copies; only the schedule returned is announced, so the
    ``tessel`` command's explorer lists exactly it, with its steps."""
    from tessel.cli import run_script

    script = tmp_path / "auto.py"
    script.write_text(
        "import tessel\nfrom tessel import te\n"
        "A = te.placeholder((40, 70), name='A')\nk = te.reduce_axis((0, 70), name='k')\n"
        "M = te.compute((40,), lambda i: te.max(A[i, k], axis=k), name='M')\n"
        "O = te.compute((40, 70), lambda i, j: A[i, j] - M[i], name='O')\n"
        "s = tessel.auto_schedule(O, budget=0)\ntessel.build(s, [A, O])\n")
    run = run_script(script)
    assert run.failure is None and len(run.schedules) == 1
    s = run.schedules[0]
    assert [st.primitive for st in s.history[1:]][:3] == ["parallel", "vectorize", "split"]
    assert "rfactor" in [st.primitive for st in s.history]
    assert [t.name for t in run.args[s]] == ["A", "O"]
