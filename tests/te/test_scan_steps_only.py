"""A scan runs its body for its steps only (from the end of its init on), so a read that would
leave a tensor at step 0 is never made: ``X[t - 1]`` in an update (a per-step forcing term, as
fdtd-2d's) was refused with a witness at t = 0, and users wrote ``where=t >= 1`` on every body
stage to get past it. A read that leaves the tensor at a step the scan does run is refused."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import TARGETS, rand

import tessel
from tessel import te


def _forced(m: int, n: int, shift: int, through_body: bool):
    X = te.placeholder((m - 1, n), name="X")  # one forcing row per step 1..m-1
    state = te.placeholder((m, n), name="state")
    Y0 = te.placeholder((n,), name="Y0")
    init = te.compute((1, n), lambda _, i: Y0[i], name="init")
    if through_body:  # a body stage between the state and the update reads the input too
        B = te.compute((m, n), lambda t, i: state[t - 1, i] * 0.5 + X[t - shift, i], name="B")
        update = te.compute((m, n), lambda t, i: B[t, i] + 1.0, name="update")
    else:
        update = te.compute((m, n), lambda t, i: state[t - 1, i] + X[t - shift, i], name="update")
    out = te.scan(init, update, state, inputs=[X, Y0], name="out")
    return X, Y0, out


@pytest.mark.parametrize("through_body", [False, True])
@pytest.mark.parametrize("target", TARGETS)
def test_an_input_read_one_step_back_builds_and_equals_numpy(target, through_body):
    m, n = 6, 5
    X, Y0, out = _forced(m, n, 1, through_body)
    f = tessel.build(te.create_schedule(out.op), [X, Y0, out], target=target)
    x, y0 = rand(m - 1, n), rand(n)
    want = [y0.astype("float64")]
    for t in range(1, m):
        want.append(want[-1] * 0.5 + x[t - 1] + 1.0 if through_body else want[-1] + x[t - 1])
    got = np.empty((m, n), "float32")
    f(x, y0, got)
    np.testing.assert_allclose(got, np.array(want), rtol=1e-5)


@pytest.mark.parametrize("target", TARGETS)
def test_a_read_past_the_input_at_a_step_the_scan_runs_is_still_refused(target):
    X, Y0, out = _forced(6, 5, 2, False)  # X[t - 2] at t = 1 reads X[-1]
    with pytest.raises(tessel.BoundError, match=r"reads X\[t - 2, i\] outside X's shape .*for t = 1"):
        tessel.build(te.create_schedule(out.op), [X, Y0, out], target=target)
