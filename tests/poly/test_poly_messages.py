"""The polyhedral layer's errors follow tessel's grammar: the subject (stage, tensor, loop or
assumption), the fact with its values, and the cure (issue 13, item 5)."""

from __future__ import annotations

import islpy as isl
import numpy as np
import pytest

import tessel
from tessel import te
from tessel.errors import ArgumentError, BoundError, InternalError, ScheduleError
from tessel.poly.astgen import AstReader


def test_an_out_of_bounds_read_names_stage_read_values_and_cure():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i + 2], name="B")
    s = te.create_schedule(B.op)
    with pytest.raises(BoundError) as err:
        tessel.build(s, [A, B], target="python")
    msg = str(err.value)
    assert msg.startswith("stage B reads A[i + 2]")  # the subject
    w = err.value.witness
    assert f"n = {w[n]}" in msg and f"reads A[{w[B.op.axis[0].var] + 2}]" in msg  # the fact, with values
    assert "shrink B's shape, or guard the read with te.if_then_else" in msg  # the cure


def test_a_carried_dependence_names_the_loop_the_instances_and_the_cure():
    A = te.placeholder((16,), name="A")
    k = te.reduce_axis((0, 16), name="k")
    B = te.compute((1,), lambda i: te.sum(A[k], axis=k), name="B")
    s = te.create_schedule(B.op)
    with pytest.raises(ScheduleError) as err:
        s[B].parallel(k)
    msg = str(err.value)
    assert "stage B" in msg and "cannot parallelize k" in msg
    assert "rfactor" in msg


def test_a_broken_assumption_names_it_the_sizes_and_the_cure():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1, name="B")
    s = te.create_schedule(B.op)
    s.assume("n % 8 == 0")
    f = tessel.build(s, [A, B], target="python")
    with pytest.raises(ArgumentError) as err:
        f(np.ones(9, "float32"), np.empty(9, "float32"))
    msg = str(err.value)
    assert "n=9" in msg and "'n % 8 == 0'" in msg and "call it with sizes that satisfy it" in msg


def test_a_bad_assumption_says_what_to_write():
    n = te.var("n")
    B = te.compute((n,), lambda i: i * 2, name="B")
    s = te.create_schedule(B.op)
    with pytest.raises(ScheduleError, match=r"assume\('m > 3'\): .*symbolic sizes \(n\)"):
        s.assume("m > 3")


def test_an_isl_ast_tessel_cannot_read_says_how_to_build_anyway():
    reader = AstReader({}, {})
    with pytest.raises(InternalError) as err:
        reader.expr(isl.AstExpr.from_id(isl.Id("zz")))
    msg = str(err.value)
    assert "'zz'" in msg and "exact=False" in msg and "report" in msg
