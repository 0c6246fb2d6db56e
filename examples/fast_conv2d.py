"""conv2d, NCHW, 3x3, stride 1, padding 1 (a ResNet layer: 64 -> 64 channels, 56 x 56).

Written as a matmul in disguise: each output tile of ``kb`` output channels by ``yb`` rows by
``xb`` pixels is a register tile (``cache_write`` to ``local``) that accumulates over the
c x 3 x 3 reduction. Its size comes from the Target like matmul's
(``tessel.target.tiles.register_tile``, with channel blocks that divide the channels), and its
vectors are laid out over the two pixel axes so that both divide evenly
(``tessel.autosched.conv.split_vectors``): on AVX2 4 channels x 2 rows x 8 pixels, 8
accumulator registers (a 16-pixel row would leave a partial tile on 56-pixel rows, a second
loop nest at a fraction of the speed). Per channel the 3 x 3 window is unrolled whole: each
step broadcasts ``kb`` weights (read from ``W`` as it is: broadcasts need no contiguity) and
loads the input rows' vectors, which the stacked output rows share (rows ``y`` and ``y + 1``
both read input row ``y + 1``), so the C compiler loads each once. Padding is a separate stage
(``Xp``) so that the hot loop reads without conditions. Bands of ``yb`` rows are shared among
threads; inside a band the channel blocks come before the pixel tiles, so the band's input
stays in L2 for every block of weights and a block's weights stay in L1 along the band.

    python -m examples.fast_conv2d
"""

from __future__ import annotations

import numpy as np

import tessel
from tessel import te
from tessel.autosched.conv import split_vectors
from tessel.target import Target, as_target, resolve
from tessel.target.tiles import register_tile


def conv2d(n: int = 1, c: int = 64, k: int = 64, h: int = 56, w: int = 56, target: str | Target | None = None,
           kb: int | None = None, xb: int | None = None, yb: int | None = None):
    """The schedule and its arguments ``[X, W, Y]``: Y = conv(X, W), 3x3, padding 1; the tile is
    ``kb`` output channels x ``yb`` rows x ``xb`` pixels, derived from ``target`` (default: this
    machine) where not given."""
    tgt = resolve(as_target(target))
    tile = register_tile(tgt, "float32", max_rows=k, max_cols=w, rows_divide=k)
    along, stacked = split_vectors(tile.vectors, tile.lanes, w, h)
    kb, xb, yb = kb or tile.rows, xb or along * tile.lanes, yb or stacked
    X = te.placeholder((n, c, h, w), name="X")
    Wt = te.placeholder((k, c, 3, 3), name="W")
    Xp = te.compute((n, c, h + 2, w + 2), lambda b, ci, y, x: te.if_then_else(
        te.all(y >= 1, y < h + 1, x >= 1, x < w + 1), X[b, ci, y - 1, x - 1], 0.0), name="Xp")
    rc = te.reduce_axis((0, c), name="rc")
    ry = te.reduce_axis((0, 3), name="ry")
    rx = te.reduce_axis((0, 3), name="rx")
    Y = te.compute((n, k, h, w), lambda b, ko, y, x: te.sum(
        Xp[b, rc, y + ry, x + rx] * Wt[ko, rc, ry, rx], axis=[rc, ry, rx]), name="Y")

    s = te.create_schedule(Y.op)
    YL = s.cache_write(Y, "local")
    b, ko, y, x = s[Y].op.axis
    kto, kti = s[Y].split(ko, factor=kb)
    yo, yi = s[Y].split(y, factor=yb)
    xo, xi = s[Y].split(x, factor=xb)
    s[Y].reorder(b, yo, kto, xo, kti, yi, xi)
    s[Y].unroll(kti)
    s[Y].unroll(yi)
    s[Y].vectorize(xi)
    s[Y].parallel(s[Y].fuse(b, yo))

    s[YL].compute_at(s[Y], xo)
    bc, kc, yc, xc = s[YL].op.axis
    rcc, ryc, rxc = s[YL].op.reduce_axis
    s[YL].reorder(bc, rcc, ryc, rxc, kc, yc, xc)
    for iv in (ryc, rxc, kc, yc):
        s[YL].unroll(iv)
    s[YL].vectorize(xc)

    s[Xp].parallel(s[Xp].fuse(*s[Xp].op.axis[:2]))
    return s, [X, Wt, Y]


def reference(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """NumPy's best: im2col (a sliding-window copy) and one BLAS matmul."""
    n, c, h, wd = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3))  # n c h w 3 3
    cols = np.ascontiguousarray(win.transpose(0, 1, 4, 5, 2, 3)).reshape(n, c * 9, h * wd)
    return (w.reshape(w.shape[0], c * 9) @ cols).reshape(n, w.shape[0], h, wd)


def main() -> None:
    s, args = conv2d(c=16, k=24, h=19, w=37)
    f = tessel.build(s, args)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 16, 19, 37), "float32")
    w = rng.standard_normal((24, 16, 3, 3), "float32")
    y = np.empty((1, 24, 19, 37), "float32")
    f(x, w, y)
    np.testing.assert_allclose(y, reference(x, w), rtol=1e-4, atol=1e-4)
    print("conv2d 1x16x19x37 -> 24 channels: matches NumPy")


if __name__ == "__main__":
    main()
