"""An unrolled copy whose inner loop runs once (fuzz finding F15).

Unrolling substitutes the loop's value in each copy and simplifies it; where a copy's inner
loop then has extent 1, the simplifier drops the loop and substitutes its one value in what
follows. The unroll pass's simplifier (the one that also handles vector expressions) skipped
that substitution, so the copy used the dropped loop's variable unbound: the build failed
('variable k is used but never bound') or the index dtype pass refused the kernel.
"""

import numpy as np

from tessel import te
from tessel.testing import check, rand


def test_unrolled_triangular_reduction():
    """Copy i = 0 of the unrolled row loop sums over one k."""
    A = te.placeholder((5, 5), name="A")
    k = te.reduce_axis((0, 5), name="k")
    B = te.compute((5,), lambda i: te.sum(A[i, k], axis=k, where=k <= i), name="B")
    s = te.create_schedule([B.op])
    s[B].unroll(B.op.axis[0])
    a = rand(5, 5)
    check(s, [A, B], [a], [np.tril(a).sum(1)], targets=("c", "python"))


def test_unrolled_skewed_loop_with_copies_of_one_iteration():
    """Skewed, reversed and unrolled: the first and last diagonals hold one element each."""
    A = te.placeholder((7, 7), name="A", dtype="float64")
    C = te.compute((6, 5), lambda i, j: A[i, j] * 1.0 + A[i, j + 1] * -0.5, name="C")
    s = te.create_schedule([C.op])
    s[C].unroll(s[C].leaf_iter_vars[0])
    s[C].reverse(s[C].leaf_iter_vars[0])
    s[C].skew(s[C].leaf_iter_vars[0], s[C].leaf_iter_vars[1], 2, 1)
    s[C].reverse(s[C].leaf_iter_vars[0])
    a = rand(7, 7, dtype="float64")
    check(s, [A, C], [a], [a[:6, :5] - 0.5 * a[:6, 1:6]], targets=("c", "python"))
