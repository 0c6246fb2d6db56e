"""A few small kernels for tests/testing/test_sources.py to record (not collected by the suite:
its name is not test_*.py). SAMPLE_VECTOR_BYTES is the "flag" a run may change."""

from __future__ import annotations

import os

import numpy as np
from helpers import check, rand

from tessel import te

VECTOR_BYTES = os.environ.get("SAMPLE_VECTOR_BYTES", "32")


def _add(n=13):
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2 + 1, name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=8)
    s[B].vectorize(xi)
    return s, A, B


# built while the module is collected: filed under the module
_s, _A, _B = _add()
check(_s, [_A, _B], [rand(13)], [rand(13) * 2 + 1], targets=("c",))


def test_add_on_both_targets():
    s, A, B = _add(13)
    a = rand(13, seed=1)
    check(s, [A, B], [a], [a * 2 + 1], targets=("python", f"c -vector-bytes={VECTOR_BYTES}"))


def test_row_sum():
    A = te.placeholder((7, 13), name="A")
    k = te.reduce_axis((0, 13), name="k")
    R = te.compute((7,), lambda i: te.sum(A[i, k], axis=k), name="R")
    s = te.create_schedule(R.op)
    a = rand(7, 13)
    check(s, [A, R], [a], [a.sum(axis=1, dtype=np.float32)], targets=("c",), rtol=1e-4)
