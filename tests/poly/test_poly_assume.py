"""User assumptions about the sizes (``s.assume``): parsed, recorded as a step, joined to the
polyhedral context and to lowering's arithmetic, and checked at every call."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import TARGETS, check, rand

import tessel
from tessel import te
from tessel.errors import ArgumentError, ScheduleError


def _split_by_16():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2, name="B")
    s = te.create_schedule(B.op)
    s[B].split(B.op.axis[0], factor=16)
    return n, A, B, s


@pytest.mark.parametrize("target", TARGETS)
def test_a_call_that_breaks_an_assumption_is_refused_naming_it(target):
    n, A, B, s = _split_by_16()
    s.assume("n % 8 == 0")
    s.assume("n >= 16")
    f = tessel.build(s, [A, B], target=target)
    a = rand(40)
    out = np.empty_like(a)
    f(a, out)
    np.testing.assert_allclose(out, a * 2)
    with pytest.raises(ArgumentError, match=r"n=12, which breaks the assumption 'n % 8 == 0'"):
        f(np.zeros(12, "float32"), np.zeros(12, "float32"))
    with pytest.raises(ArgumentError, match=r"n=8, which breaks the assumption 'n >= 16'"):
        f(np.zeros(8, "float32"), np.zeros(8, "float32"))


def test_assumptions_join_the_polyhedral_context():
    n, A, B, s = _split_by_16()
    s.assume("n % 8 == 0 and n >= 64")
    ctx = tessel.poly.model(s).context
    assert "mod 8 = 0" in str(ctx) and "p_n >= 64" in str(ctx)


def test_an_assumption_removes_code_that_cannot_run():
    n, A, B, s = _split_by_16()
    before = str(tessel.lower(s, [A, B], simple_mode=True))
    s.assume("n % 16 == 0")
    after = str(tessel.lower(s, [A, B], simple_mode=True))
    assert "min(n - i.outer*16, 16)" in before and "min(" not in after  # the tail of the split is gone
    a = rand(80)
    check(s, [A, B], [a], [a * 2])


@pytest.mark.parametrize("text, why", [
    ("q > 3", "'q' is not a symbolic size"),
    ("n +", "not a condition"),
    ("n", "not a comparison"),
    ("__import__('os').system('true') == 0", "is not an integer expression"),
    ("n.bit_length() > 1", "is not an integer expression"),
])
def test_a_bad_assumption_is_refused_where_it_is_written(text, why):
    n, A, B, s = _split_by_16()
    with pytest.raises(ScheduleError, match=why):
        s.assume(text)
    assert s.assumptions == ()


def test_an_assumption_is_a_step_that_replays_and_copies():
    n, A, B, s = _split_by_16()
    s.assume("n >= 32")
    assert s.history[-1].primitive == "assume"
    assert s.history.replay().assumptions == ("n >= 32",)
    t = s.copy()
    t.assume("n % 4 == 0")
    assert s.assumptions == ("n >= 32",) and t.assumptions == ("n >= 32", "n % 4 == 0")
