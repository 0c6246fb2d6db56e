"""A rewrite of a stage upstream of a recurrence (rfactor, cache_write, cache_read, directly
above it or further up) rebuilds the recurrence whole: its definitions share one storage and
know each other, so they were refused ("cannot be made to read a copy") where a plain reader
is simply rewritten (issue 33)."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import TARGETS

import tessel
from tessel import te


def _program(n, m, in_place):
    X = te.placeholder((n, m), name="X", dtype="float64")
    r = te.reduce_axis((0, n), name="r")
    P = te.compute((m,), lambda j: te.sum(X[r, j], axis=r), name="P")
    Q = te.compute((n, m), lambda i, j: X[i, j] - P[j] / n, name="Q")
    Y = te.placeholder((n, m), name="Y", dtype="float64")
    defs = [te.define(lambda h, i, j: Q[i, j] + (h[i, j] if in_place else 0.0)),
            te.define(lambda h, i, j: h[i - 1, j] + h[i, j], where=lambda i, j: i > 0)]
    H = te.recurrence(None if in_place else (n, m), defs, name="H", inplace=Y if in_place else None)
    return X, Y, P, Q, H


def _want(x, y, in_place):
    q = x - x.sum(0) / x.shape[0] + (y if in_place else 0.0)
    return np.cumsum(q, axis=0)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("in_place", [False, True])
@pytest.mark.parametrize("rewrite", ["rfactor", "cache_write", "cache_read_of_Q"])
def test_rewrite_upstream_of_a_recurrence(target, in_place, rewrite):
    n, m = 11, 6
    X, Y, P, Q, H = _program(n, m, in_place)
    s = te.create_schedule(H.op)
    if rewrite == "rfactor":
        _, ri = s[P].split(P.op.reduce_axis[0], factor=4)
        s.rfactor(P, ri)
    elif rewrite == "cache_write":
        s.cache_write(P, "local")
    else:
        s.cache_read(Q, "local", [H.op])
    # every definition still shares the one storage, and reads the rewritten tensors
    defs = s[H].op.definitions
    assert len(defs) == 2 and all(d.op.base is defs[0].op.base for d in defs)
    rng = np.random.default_rng(7)
    x, y = rng.random((n, m)), rng.random((n, m))
    want = _want(x, y, in_place)
    if in_place:
        tessel.build(s, [X, Y], target=target)(x, y)
        np.testing.assert_allclose(y, want, rtol=1e-12, atol=1e-12)
    else:
        got = np.zeros((n, m))
        tessel.build(s, [X, H], target=target)(x, got)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
