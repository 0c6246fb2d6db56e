"""Issue 30, item 4: the explorer and the history's snapshots handle chains of 30 to 100 stages
instead of raising RecursionError: the computation is copied producers first, so a copy is as
deep as one operation, not as the chain. The snapshot of the 30-stage chain is built and run."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import TARGETS, rand

import tessel
from tessel import te
from tessel.viz import explorer


def _chain(n: int):
    A = te.placeholder((13,), name="A")

    def step(P, k):
        return te.compute((13,), lambda i: P[i] * 0.5 + float(k % 3), name=f"T{k}")

    T = A
    for k in range(n):
        T = step(T, k)
    return A, T


@pytest.mark.parametrize(("n", "inline"), [(30, False), (30, True), (100, False)])
def test_snapshots_and_the_explorer_of_a_long_chain(n, inline):
    A, T = _chain(n)
    s = te.create_schedule(T.op)
    if inline:
        for st in list(s.stages)[1:-1]:
            st.compute_inline()
    s[T].split(T.op.axis[0], factor=4)
    last = s.history[-1]
    assert last.snapshot is not None and last.snapshot_error is None
    html = explorer(s, args=[A, T])
    assert f"T{n - 1}" in html
    if n > 30:
        return  # building a 100-stage kernel twice would take minutes on a loaded machine
    a = rand(13, seed=n)
    want = a.astype("float64")
    for k in range(n):
        want = want * 0.5 + k % 3
    snap_args = [last.in_snapshot(A), last.in_snapshot(T)]
    for target in TARGETS:
        f = tessel.build(last.snapshot, snap_args, target=target)
        b = np.full(13, np.nan, "float32")
        f(a, b)
        np.testing.assert_allclose(b, want, rtol=1e-4, atol=1e-4)
