"""The interval check of reads the polyhedral check cannot decide (bound/check.py): ranges
are taken over the reading stage's domain, so a non-affine index that stays in bounds there
(``min(3i, 4i) + min(-3i, -2i)`` is 0 for every ``i >= 0``) is not refused, and one that
leaves the tensor still is, with a witness."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import check

from tessel import te
from tessel.bound.infer import run_infer_bound
from tessel.errors import BoundError


@pytest.mark.parametrize("index", [
    lambda i: te.min(3 * i, 4 * i) + te.min(-3 * i, -2 * i),
    lambda i: te.min(3 * i, 4 * i) + te.max(-3 * i, -4 * i),
    lambda i: -2 * te.truncdiv(i, 2) - te.min(i, 0 - i) - i + 2 * te.truncdiv(i, 2),
])
def test_a_non_affine_index_in_bounds_over_the_domain_is_accepted(index):
    A = te.compute((2,), lambda j: j.astype("float32") + 1.0, name="A")
    B = te.compute((10,), lambda i: A[index(i)], name="B")
    s = te.create_schedule([B.op, A.op])
    run_infer_bound(s)  # checks every read by intervals (lowering leaves the affine ones to isl)
    check(s, [B, A], [], [np.ones(10, "float32"), np.array([1, 2], "float32")])


def test_a_read_outside_is_still_refused_with_a_witness():
    A = te.compute((2,), lambda j: j.astype("float32"), name="A")
    B = te.compute((10,), lambda i: A[te.min(i, 7)], name="B")
    with pytest.raises(BoundError, match="reads A\\[min\\(i, 7\\)\\] outside A's shape"):
        run_infer_bound(te.create_schedule(B.op))
