"""Broadcast forwarding in transform replay (``transform_replay._forwarding``): a stage computed
inside a reader's loop that fuses its axis with broadcast axes of any extent. Random chains,
fuses, splits, positions and modes; whatever is accepted must give NumPy's values on both
targets (a small, deterministic cousin of the schedule fuzzer)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from helpers import check, rand

from tessel import te
from tessel.errors import ScheduleError


def _chain(R: random.Random, a: int, b: int, c: int):
    """t1 over b, read back as a broadcast over (a, b, c), directly or after a reduction."""
    t0, x6 = te.placeholder((b,), name="t0"), te.placeholder((a, b, c), name="x6")
    t1 = te.compute((b,), lambda j: t0[j] * 0.5, name="t1")
    if R.random() < 0.5:
        t2 = te.compute((b, c), lambda j, k: t1[j], name="t2")
        t5 = te.compute((a, b, c), lambda i, j, k: t2[j, k] + 1.0, name="t5")

        def ref(x, y):
            return (x * 0.5)[None, :, None] + 1.0 + y
    else:
        r = te.reduce_axis((0, b), name="r")
        t2 = te.compute((c,), lambda k: te.sum(t1[r], axis=r) + k * 1.0, name="t2")
        t5 = te.compute((a, b, c), lambda i, j, k: t2[k] * t1[j], name="t5")

        def ref(x, y):
            return ((x * 0.5).sum() + np.arange(c))[None, None, :] * (x * 0.5)[None, :, None] + y
    t7 = te.compute((a, b, c), lambda i, j, k: t5[i, j, k] + x6[i, j, k], name="t7")
    return (t0, x6), (t1, t2, t7), ref


@pytest.mark.parametrize("seed", range(12))
def test_forwarded_positions_never_change_values(seed):
    R = random.Random(seed)
    a, b, c = R.randint(1, 7), R.randint(1, 9), R.randint(1, 6)
    (t0, x6), (t1, t2, t7), ref = _chain(R, a, b, c)
    s = te.create_schedule(t7.op)
    lv = list(s[t7].leaf_iter_vars)
    how = R.randint(0, 3)
    if how == 0:
        s[t7].fuse(lv[0], lv[1])
    elif how == 1:
        s[t7].fuse(s[t7].fuse(lv[0], lv[1]), lv[2])
    elif how == 2:
        s[t7].fuse(lv[1], lv[2])
    lv = list(s[t7].leaf_iter_vars)
    if R.random() < 0.6:
        s[t7].split(lv[R.randrange(len(lv))], factor=R.randint(2, 5))
    pos = R.randint(-1, len(s[t7].leaf_iter_vars))
    try:
        s[R.choice([t1, t2])].compute_at(s[t7], pos, mode=R.choice(["standard", "best_effort", "most_inlined"]))
        if R.random() < 0.5:
            s.inline_most()
    except ScheduleError as err:
        assert err.fix is None or err.fix_steps is not None  # refused: nothing applied
    x, y = rand(b, seed=seed), rand(a, b, c, seed=seed + 1)
    check(s, [t0, x6, t7], [x, y], [ref(x, y).astype("float32")], rtol=1e-4, atol=1e-4)
