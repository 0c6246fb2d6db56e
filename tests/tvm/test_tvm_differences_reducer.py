"""Issue 15, difference 5: rfactor trusts a ``te.comm_reducer``'s declaration, as TVM does.

A ``comm_reducer`` is the user's statement that the combine function commutes and
associates; TVM's own tests rfactor an arg-max whose tie-breaking makes it commute in the
value only. tessel rfactors it, and warns with the sample values that contradict the
declaration, so the difference from the serial loop is never silent. Reducers declared not
commutative or not associative stay serial; reducers tessel builds itself are still checked
(tests/check/test_legality.py).
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import TARGETS, check, rand

import tessel
from tessel import ScheduleError, te
from tessel.errors import TesselWarning

pytestmark = pytest.mark.filterwarnings("ignore:.*rfactor trusts that")  # the replay check warns again


def _tvm_argmax():
    """The arg-max of TVM's rfactor tests: ties keep the left operand, so it commutes only in the value."""
    def fcombine(x, y):
        lhs = te.select((x[1] >= y[1]), x[0], y[0])
        rhs = te.select((x[1] >= y[1]), x[1], y[1])
        return lhs, rhs

    return te.comm_reducer(fcombine, lambda t0, t1: (te.const(-1, t0), te.min_value(t1)), name="argmax")


def test_rfactor_of_tvms_argmax_is_accepted_with_a_warning():
    A = te.placeholder((6, 40), name="A")
    k = te.reduce_axis((0, 40), name="k")
    idx, val = te.compute((6,), lambda i: _tvm_argmax()((k.var, A[i, k]), axis=k), name="B")
    s = te.create_schedule(idx.op)
    ko, ki = s[idx].split(k, factor=8)
    with pytest.warns(TesselWarning, match=r"rfactor of B over k.inner: the reducer argmax is declared .* not commutative"):
        BF = s.rfactor(idx, ki)
    assert [st.name for st in s.stages] == ["A", "B.rf", "B"] and BF[0].op.name == "B.rf"
    a = rand(6, 40)  # distinct values: the index of the maximum is unique, so it is exact
    check(s, [A, idx, val], [a], [a.argmax(axis=1).astype("int32"), a.max(axis=1)])
    tied = np.round(rand(6, 40) * 2) / 2  # ties: the maximum is right, the index one of the tied ones
    for target in TARGETS:
        f = tessel.build(s, [A, idx, val], target=target)
        gi, gv = np.zeros(6, "int32"), np.zeros(6, "float32")
        f(tied, gi, gv)
        np.testing.assert_array_equal(gv, tied.max(axis=1))
        np.testing.assert_array_equal(tied[np.arange(6), gi], gv)


def test_rfactor_of_a_user_product_is_accepted_without_a_warning():
    prod = te.comm_reducer(lambda x, y: x * y, lambda t: te.const(1, t), name="prod")
    A = te.placeholder((4, 12), name="A")
    k = te.reduce_axis((0, 12), name="k")
    B = te.compute((4,), lambda i: prod(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(k, factor=4)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", TesselWarning)
        s.rfactor(B, ki)
    a = rand(4, 12, low=0.5, high=1.5)
    check(s, [A, B], [a], [a.prod(axis=1)], rtol=1e-4)


def test_a_reducer_declared_not_commutative_is_still_refused():
    sub = te.comm_reducer(lambda x, y: x - y, lambda t: te.const(0, t), name="sub", commutative=False)
    A = te.placeholder((4, 12), name="A")
    k = te.reduce_axis((0, 12), name="k")
    B = te.compute((4,), lambda i: sub(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(k, factor=4)
    with pytest.raises(ScheduleError, match="declared not commutative"):
        s.rfactor(B, ki)


def test_the_builtin_reducers_rfactor_silently():
    import warnings

    A = te.placeholder((4, 12), name="A")
    k = te.reduce_axis((0, 12), name="k")
    def reduced(red):
        return te.compute((4,), lambda i: red(A[i, k], axis=k), name="B")

    for red, ref in ((te.sum, np.sum), (te.max, np.max), (te.min, np.min)):
        B = reduced(red)
        s = te.create_schedule(B.op)
        ko, ki = s[B].split(k, factor=4)
        with warnings.catch_warnings():
            warnings.simplefilter("error", TesselWarning)
            s.rfactor(B, ki)
        a = rand(4, 12)
        check(s, [A, B], [a], [ref(a, axis=1)], rtol=1e-5)
