"""``te.tag_scope`` (TVM's): a tag for every operation defined inside it, as a ``with`` block or a
decorator; no nesting, no second tag."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import rand

import tessel
from tessel import te
from tessel.errors import DefinitionError


def test_a_with_block_tags_what_it_defines_and_nothing_after():
    n = 9
    A = te.placeholder((n,), name="A")
    with te.tag_scope("elemwise"):
        B = te.compute((n,), lambda i: A[i] * 2.0, name="B")
        C = te.compute((n,), lambda i: B[i] + 1.0, name="C")
    D = te.compute((n,), lambda i: C[i] - 3.0, name="D")
    assert (B.op.tag, C.op.tag, D.op.tag) == ("elemwise", "elemwise", "")
    s = te.create_schedule(D.op)
    f = tessel.build(s, [A, D])
    a, d = rand(n), np.zeros(n, dtype="float32")
    f(a, d)
    np.testing.assert_allclose(d, a * 2 + 1 - 3, rtol=1e-6)


def test_a_decorator_tags_each_call_and_a_scan_is_tagged_too():
    @te.tag_scope("broadcast")
    def twice(X):
        return te.compute(X.shape, lambda i: X[i] * 2.0, name="twice")

    A = te.placeholder((4,), name="A")
    assert twice(A).op.tag == "broadcast" and twice(A).op.tag == "broadcast"
    assert te.compute((4,), lambda i: A[i], name="plain").op.tag == ""
    S = te.placeholder((5, 3), name="S")
    with te.tag_scope("recurrence"):
        init = te.compute((1, 3), lambda t, i: A[i], name="init")
        out = te.scan(init, te.compute((5, 3), lambda t, i: S[t - 1, i] + 1.0, name="upd"), S, name="sc")
    assert out.op.tag == "recurrence"


def test_scopes_do_not_nest_and_an_operation_takes_one_tag():
    A = te.placeholder((4,), name="A")
    with te.tag_scope("outer"):
        with pytest.raises(DefinitionError, match="do not nest"):
            with te.tag_scope("inner"):
                pass
        with pytest.raises(DefinitionError, match="in one place"):
            te.compute((4,), lambda i: A[i], name="B", tag="mine")
    assert te.compute((4,), lambda i: A[i], name="C", tag="mine").op.tag == "mine"  # the scope has closed


def test_tvm_spelling_is_the_same_function():
    import tessel.tvm as tvm

    assert tvm.te.tag_scope is te.tag_scope


def test_equal_is_the_comparison_expression():
    n = te.var("n")
    e = (n + 1).equal(5)
    assert str(e) == "n + 1 == 5"
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: te.if_then_else(i.equal(3), A[i] * 10.0, A[i]), name="B")
    f = tessel.build(te.create_schedule(B.op), [A, B])
    a, b = rand(8), np.zeros(8, dtype="float32")
    f(a, b)
    want = a.copy()
    want[3] *= 10
    np.testing.assert_allclose(b, want, rtol=1e-6)
