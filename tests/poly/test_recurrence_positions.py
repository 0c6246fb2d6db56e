"""A recurrence's definitions under the polyhedral model while position primitives try places for
them (fuzz family F1): every definition's accesses name the same storage with the same loops
around it, and a definition stays at the root (it runs whole), so inline_most keeps it there
instead of failing inside isl. Against NumPy on both targets."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import TARGETS, rand

import tessel
from tessel import te
from tessel.errors import ScheduleError


def _run(sch, args, inputs, outs, target):
    f = tessel.build(sch, args, target=target)
    ins = [np.array(a, copy=True) for a in inputs]
    got = [np.array(o, copy=True) for o in outs]
    f(*ins, *got)
    return got


def _recurrence(n, m):
    A = te.placeholder((n, m), name="A")
    B = te.recurrence((n, m), [
        te.define(lambda h, i, j: A[i, j]),
        te.define(lambda h, i, j: A[i, j] + h[i, j - 1] * 0.5, where=lambda i, j: j >= 1),
    ], name="B")
    return A, B


def _recurrence_ref(a):
    b = a.astype("float64").copy()
    for j in range(1, a.shape[1]):
        b[:, j] = a[:, j] + b[:, j - 1] * 0.5
    return b


@pytest.mark.parametrize("target", TARGETS)
def test_shifted_recurrence_inline_most(target):
    A, B = _recurrence(6, 10)
    C = te.compute((6, 10), lambda i, j: B[i, j] * 1.5 + 0.25, name="C")
    s = te.create_schedule([C.op])
    s[B].shift(s[B].leaf_iter_vars[1], -1)
    s.inline_most()  # was a raw islpy.Error: the definitions' stores named different loops
    assert s[B].attach_type == "root" and s[B.op.definitions[0]].attach_type == "root"
    a = rand(6, 10)
    (c,) = _run(s, [A, C], [a], [np.zeros((6, 10), "float32")], target)
    np.testing.assert_allclose(c, _recurrence_ref(a) * 1.5 + 0.25, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("target", TARGETS)
def test_definition_not_computed_inside_a_reader(target):
    A, B = _recurrence(6, 10)
    C = te.compute((6, 10), lambda i, j: B[i, j] * 1.5 + 0.25, name="C")
    s = te.create_schedule([C.op])
    with pytest.raises(ScheduleError, match="definition of a recurrence"):
        s[B].compute_at(s[C], 1)
    s[B].compute_at(s[C], 1, mode="best_effort")
    assert s[B].attach_type == "root"
    a = rand(6, 10)
    (c,) = _run(s, [A, C], [a], [np.zeros((6, 10), "float32")], target)
    np.testing.assert_allclose(c, _recurrence_ref(a) * 1.5 + 0.25, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("target", TARGETS)
def test_copy_realized_inside_a_loop_the_reader_lacks(target):
    """Bp is realized inside B's loops kb and i (reordered), which B's init does not run in: its
    read of Bp is kept approximate with as many storage dimensions as Bp's write has (it had
    none, and isl failed on the mismatch), so the shift is refused with a ScheduleError."""
    A = te.placeholder((3, 13), name="A")
    kb = te.reduce_axis((0, 13), name="kb")
    Bp = te.compute((3,), lambda i: A[i, 0] * 2.0 + 0.5, name="Bp")
    B = te.compute((3,), lambda i: te.max(A[i, kb] * 0.5, axis=kb, init=Bp[i], where=kb > i), name="B")
    s = te.create_schedule([B.op])
    s[Bp].compute_at(s[B], B.op.axis[0])
    s[B].reorder(kb, B.op.axis[0])
    with pytest.raises(ScheduleError, match="shift"):
        s[Bp].shift(s[Bp].leaf_iter_vars[0], 3)
    s[Bp].compute_root()
    a = rand(3, 13)
    (b,) = _run(s, [A, B], [a], [np.zeros(3, "float32")], target)
    i, k = np.meshgrid(np.arange(3), np.arange(13), indexing="ij")
    want = np.maximum(a[:, 0] * 2.0 + 0.5, np.where(k > i, a * 0.5, -np.inf).max(axis=1))
    np.testing.assert_allclose(b, want, rtol=1e-5, atol=1e-5)
