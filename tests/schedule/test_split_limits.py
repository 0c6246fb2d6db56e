"""Split factors near and past the loop variable's dtype (issue 29, defect 7): a factor just
below 2**31 computes NumPy's values (the outer extent ``ceil(16 / f)`` was folded as
``(16 + f - 1) // f`` in int32 and wrapped to -2, so the output was never written), and one
that the loop's int32 cannot hold is refused with what to do instead of becoming
``2**32 + 4 -> 4``; an int64 size takes it."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import TARGETS, check, rand

import tessel
from tessel import te
from tessel.errors import ScheduleError

BIG = 2**31 - 15


def _ab(n=17, m=16):
    A = te.placeholder((n, m), name="A")
    B = te.compute((n, m), lambda i, j: A[i, j] * 2 - 1, name="B")
    return A, B


@pytest.mark.parametrize("how", ["factor", "nparts", "tile"])
def test_a_factor_just_below_int32_max_computes_numpys_values(how):
    A, B = _ab()
    s = te.create_schedule(B.op)
    i, j = B.op.axis
    if how == "tile":
        s[B].tile(i, j, BIG, 2**31 - 1)
    else:
        s[B].split(i, **{how: BIG})
        s[B].split(j, **{how: 2**31 - 1})
    a = rand(17, 16)
    check(s, [A, B], [a], [a * 2 - 1])


@pytest.mark.parametrize("amount", [2**31, 2**32 + 4, 2**40, np.int64(2**32 + 4)])
def test_a_factor_past_the_loops_dtype_is_refused(amount):
    _, B = _ab()
    s = te.create_schedule(B.op)
    i, j = B.op.axis
    for kw in ({"factor": amount}, {"nparts": amount}):
        label = next(iter(kw))
        with pytest.raises(ScheduleError, match=rf"stage B: split {label} {int(amount)} of i does not fit int32.*"
                                                r"at most 2147483647.*int64"):
            s[B].split(i, **kw)
    with pytest.raises(ScheduleError, match=rf"split factor {int(amount)} of j does not fit int32"):
        s[B].tile(i, j, 4, amount)
    assert [iv.name for iv in s[B].leaf_iter_vars] == ["i", "j"]  # nothing changed


def test_an_int64_size_takes_a_factor_past_int32():
    n = te.var("n", dtype="int64")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2 - 1, name="B")
    s = te.create_schedule(B.op)
    s[B].split(B.op.axis[0], factor=2**32 + 4)
    a = rand(13)
    for target in TARGETS:
        f = tessel.build(s, [A, B], target=target)
        out = np.full(13, np.nan, "float32")
        f(a, out)
        np.testing.assert_allclose(out, a * 2 - 1, rtol=1e-6, err_msg=target)
