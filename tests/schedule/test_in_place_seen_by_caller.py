"""A stage stored in place in a tensor the caller passes writes its whole domain (fuzz F17).

The caller sees every element such a stage writes, as it sees an output's. At the root,
InferBound gave it the region its readers need (TVM's rule for a stage that is not an output),
so an in-place stencil read every other row skipped its last row and the caller's tensor kept
an old value. Now it computes its whole domain at the root; inside another stage's loops, where
its region is its readers', a schedule whose readers need only part of it is refused.
"""

import numpy as np
import pytest

from tessel import te
from tessel.errors import ScheduleError
from tessel.testing import check, rand


def _program(rows_read_every: int):
    A = te.placeholder((10, 10), name="A")
    B = te.compute((8, 8), lambda i, j: A[i + 1, j + 1] * 2.0, name="B")
    D = te.compute((8 // rows_read_every, 8), lambda i, j: B[i * rows_read_every, j] + 0.125, name="D")
    s = te.create_schedule([D.op])
    s[B].store_in(A, lambda i, j: (i + 1, j + 1))
    a = rand(10, 10)
    updated = a.astype(np.float64).copy()
    updated[1:9, 1:9] *= 2
    rd = (updated[1:9:rows_read_every, 1:9] + 0.125).astype(np.float32)
    return s, A, B, D, a, updated, rd


def test_in_place_stencil_read_every_other_row_updates_every_row():
    """F17's program: the stencil reads its own neighbours in place, D every other row."""
    A = te.placeholder((10, 10), name="A")
    B = te.compute((8, 8), lambda i, j: A[i, j] * 0.5 + A[i + 1, j + 1] + A[i, j + 2] * -0.25 + A[i + 2, j] * 0.125,
                   name="B")
    D = te.compute((4, 8), lambda i, j: B[i * 2, j] + 0.125, name="D")
    s = te.create_schedule([D.op])
    s[B].store_in(A, lambda i, j: (i + 1, j + 1))
    a = rand(10, 10)
    x = a.astype(np.float64).copy()
    for i in range(8):
        for j in range(8):
            x[i + 1, j + 1] = x[i, j] * 0.5 + x[i + 1, j + 1] + x[i, j + 2] * -0.25 + x[i + 2, j] * 0.125
    check(s, [A, D], [a], [(x[1:9:2, 1:9] + 0.125).astype(np.float32)], updated={0: x}, targets=("c", "python"))


def test_root_in_place_stage_computes_its_whole_domain():
    s, A, _, D, a, updated, rd = _program(2)
    check(s, [A, D], [a], [rd], updated={0: updated}, targets=("c", "python"))


def test_attached_in_place_stage_read_whole_is_accepted():
    s, A, B, D, a, updated, rd = _program(1)
    s[B].compute_at(s[D], D.op.axis[0])
    check(s, [A, D], [a], [rd], updated={0: updated}, targets=("c", "python"))


def test_attached_in_place_stage_read_in_part_is_refused():
    s, A, B, D, a, updated, rd = _program(2)
    s[B].compute_at(s[D], D.op.axis[0])
    with pytest.raises(ScheduleError, match=r"stage B is stored in place in A.*i = 1, j = 0 would never be written.*"
                                             r"compute_root"):
        check(s, [A, D], [a], [rd], updated={0: updated}, targets=("c", "python"))
