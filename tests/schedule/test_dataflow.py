"""The dataflow rewrites (tessel/schedule/dataflow.py) with the storage commands: rfactor of a
stage whose values are stored elsewhere keeps them there, indexed by its new loops (fuzz seed
56 case 404: the folded storage's index still named the axis rfactor had handed to B.rf, and
lowering stopped at a free variable ``i``)."""

from __future__ import annotations

import pytest
from helpers import TARGETS, check, rand

from tessel import te


@pytest.mark.parametrize("storage", ["fold", "store_in"])
def test_rfactor_of_a_stage_stored_elsewhere_keeps_its_storage(storage):
    A = te.placeholder((13, 9), name="A")
    k = te.reduce_axis((0, 9), name="k")
    B = te.compute((13,), lambda i: te.max(A[i, k], axis=k), name="B")
    C = te.compute((13,), lambda i: B[i] * 1.5 + 0.25, name="C")
    D = te.compute((11,), lambda i: C[i] - 0.5 * C[i + 1] + 0.25 * C[i + 2], name="D")
    s = te.create_schedule(D.op)
    s[C].compute_at(s[D], D.op.axis[0])
    s[B].compute_at(s[C], C.op.axis[0])
    if storage == "fold":
        s[B].storage_fold(B.op.axis[0], 4)
    else:
        s[B].store_in(te.placeholder((13,), name="T"), lambda i: (12 - i,))
    s.rfactor(B, s[B].op.reduce_axis[0])
    assert s[B].storage is not None
    a = rand(13, 9)
    c = a.max(axis=1) * 1.5 + 0.25
    check(s, [A, D], [a], [c[:11] - 0.5 * c[1:12] + 0.25 * c[2:]], targets=TARGETS, rtol=1e-5, atol=1e-5)
