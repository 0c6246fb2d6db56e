"""Small templates the tuner tests share (tiny sizes: each candidate builds in well under a second)."""

from __future__ import annotations

import os
import signal
import time

from tessel import te
from tessel.tune import get_config, template


def matmul(cfg, n: int, l: int, m: int):
    """A plain template (config first): two splits, a reorder choice and a vectorize knob."""
    A = te.placeholder((n, l), name="A")
    B = te.placeholder((l, m), name="B")
    k = te.reduce_axis((0, l), name="k")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    y, x = s[C].op.axis
    cfg.define_split("tile_y", y, num_outputs=2)
    cfg.define_split("tile_x", x, num_outputs=2)
    cfg.define_knob("vec", [0, 1])
    cfg.add_flop(2 * n * l * m)
    yo, yi = cfg["tile_y"].apply(s, C, y)
    xo, xi = cfg["tile_x"].apply(s, C, x)
    s[C].reorder(yo, xo, s[C].op.reduce_axis[0], yi, xi)
    if cfg["vec"].val:
        s[C].vectorize(xi)
    return s, [A, B, C]


MODES = ("ok", "raise", "crash", "slow_build", "slow_run", "wrong")


@template("tests/troublesome")
def troublesome(n: int):
    """One knob, one way to fail per value: the tuner must record each failure and go on."""
    cfg = get_config()
    cfg.define_knob("mode", list(MODES))
    mode = cfg["mode"].val
    A = te.placeholder((n,), name="A")
    if mode == "raise":
        raise ValueError("this candidate cannot be built")
    if mode == "crash":
        os.kill(os.getpid(), signal.SIGSEGV)
    if mode == "slow_build":
        time.sleep(600)
    if mode == "slow_run":  # 2**44 additions: runs for hours
        r1 = te.reduce_axis((0, 1 << 22), name="r1")
        r2 = te.reduce_axis((0, 1 << 22), name="r2")
        B = te.compute((n,), lambda i: te.sum(A[i] * (r1 + r2).astype("float32"), axis=[r1, r2]), name="B")
    elif mode == "wrong":
        B = te.compute((n,), lambda i: A[i] * 2.0 + 1.0, name="B")
    else:
        B = te.compute((n,), lambda i: A[i] * 2.0, name="B")
    return te.create_schedule(B.op), [A, B]
