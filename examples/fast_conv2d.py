"""conv2d, NCHW, 3x3, stride 1, padding 1 (a ResNet layer: 64 -> 64 channels, 56 x 56), and
its 1x1 and depthwise variants.

Written as a matmul in disguise: each output tile of ``kb`` output channels by ``yb`` rows by
``xb`` pixels is a register tile (``cache_write`` to ``local``) that accumulates over the
c x 3 x 3 reduction. Its size comes from the Target like matmul's
(``tessel.autosched.conv.stencil_tile``: around a window, channel blocks divide the channels), and its
vectors are laid out over the two pixel axes so that the row divides evenly
(``tessel.autosched.conv.split_vectors``): on AVX2 4 channels x 2 rows x 8 pixels, 8
accumulator registers (a 16-pixel row would leave a partial tile on 56-pixel rows, a second
loop nest at a fraction of the speed). Per channel the 3 x 3 window is unrolled whole: each
step broadcasts ``kb`` weights (read from ``W`` as it is: broadcasts need no contiguity) and
loads the input rows' vectors, which the stacked output rows share (rows ``y`` and ``y + 1``
both read input row ``y + 1``), so the C compiler loads each once. Padding is a separate stage
(``Xp``) so that the hot loop reads without conditions. Bands of ``yb`` rows are shared among
threads; inside a band the channel blocks come before the pixel tiles, so the band's input
stays in L2 for every block of weights and a block's weights stay in L1 along the band.

Where the image rows are not whole vectors and the output channels are (56 pixels on
AVX-512's 16 lanes, 64 channels), the 3x3 tile is turned around instead
(``tessel.autosched.conv.channels_in_lanes``): vectors of output channels by pixels of a row,
the weights copied once with the channel last so each step loads whole vectors of them, each
input pixel broadcast. Every FMA is then a whole vector, where the tile over pixels wasted an
eighth of them and ran its last half-vector as a second loop nest (on Zen 5, two threads: 480
against 433 GFLOP/s).

The 1x1 conv is the same tile with no window: its channel blocks need not divide the channels
(on AVX2 6 channels x 2 rows x 8 pixels, 12 accumulators, the register file full), and its
channel loop is unrolled as the tile's reduction is (by 2 for a full register file). Read in
place, a conv's input channels lie a whole plane apart, so each thread first copies its band of
input rows with the channels side by side (``tessel.autosched.conv.band_operands``: 1.16x the
speed; for the 3x3 conv 1.03-1.05x, not worth the longer build). The
depthwise conv's weights follow the channel as its input does, so its tile is one channel by
the Target's vectors, stacked over rows the same way. Its padded plane is computed per channel
inside the threads' loop, right before its tiles read it from L1: with nine FMAs per output
and no reuse across channels, a padding pass of its own over the whole image ran the kernel at
0.75x that speed (AVX2; the copy's border is cut out by loop partitioning, so its interior is
a plain vector copy).

    python -m examples.fast_conv2d
"""

from __future__ import annotations

import numpy as np

import tessel
from tessel import te
from tessel.autosched.conv import channel_tile, stencil_tile, transposed_copy, turns
from tessel.errors import DefinitionError
from tessel.target import Target, as_target, resolve


def _tile_shape(tgt: Target, rows: int, h: int, w: int, window_steps: int) -> tuple[int, int, int, int]:
    """``(channels, rows, pixels, k_unroll)`` of the register tile: the Target's tile (channel
    blocks dividing ``rows`` channels where the window has more than one step:
    ``stencil_rows_divide``; 1 channel for a depthwise conv, whose weights vary with the channel
    like its input), its vectors laid out over the two pixel axes (``split_vectors``), and the
    tile's reduction unroll (a 1x1 conv unrolls its channel loop by it)."""
    tile, along, stacked = stencil_tile(tgt, rows, w, h, window_steps)
    return tile.rows, stacked, along * tile.lanes, tile.k_unroll


def _padded(X: te.Tensor, p: int) -> te.Tensor:
    """The input with ``p`` zeros around each image (a stage, so the hot loop reads without
    conditions); the input itself when ``p`` is 0."""
    if not p:
        return X
    n, c, h, w = (int(d) for d in X.shape)
    return te.compute((n, c, h + 2 * p, w + 2 * p), lambda b, ci, y, x: te.if_then_else(
        te.all(y >= p, y < h + p, x >= p, x < w + p), X[b, ci, y - p, x - p], 0.0), name="Xp")


def _register_tile(s, Y: te.Tensor, tile: tuple[int, ...], red_unroll: int | None = None,
                   bands_first: bool = True) -> tuple[te.Tensor, te.IterVar]:
    """Y's tiles: bands of rows for the threads, then channel blocks, then pixel tiles, each a
    register tile (``Y.local``) with the stencil window (``ry``, ``rx``: the last two reduction
    loops) unrolled whole, and the channel loop by ``red_unroll`` where given. Without
    ``bands_first`` the channels are outermost (a depthwise conv: each channel's plane is read
    by its own channel alone, and stays in L1 while its bands are swept). Returns the register
    tile's tensor (``Y.local``) and the threads' loop."""
    kb, yb, xb = tile[:3]
    YL = s.cache_write(Y, "local")
    b, ko, y, x = s[Y].op.axis
    kto, kti = s[Y].split(ko, factor=kb)
    yo, yi = s[Y].split(y, factor=yb)
    xo, xi = s[Y].split(x, factor=xb)
    s[Y].reorder(*((b, yo, kto) if bands_first else (b, kto, yo)), xo, kti, yi, xi)
    s[Y].unroll(kti)
    s[Y].unroll(yi)
    s[Y].vectorize(xi)
    top = s[Y].fuse(b, yo if bands_first else kto)
    s[Y].parallel(top)
    s[YL].compute_at(s[Y], xo)
    bc, kc, yc, xc = s[YL].op.axis
    red = list(s[YL].op.reduce_axis)
    rest, win = red[:-2], red[-2:]
    unroll = list(win)
    if red_unroll and rest:  # no window to fill the body (1x1): the channel loop unrolled instead
        rco, rci = s[YL].split(rest[-1], factor=red_unroll)
        rest, unroll = [*rest[:-1], rco, rci], [rci, *win]
    s[YL].reorder(bc, *rest, *win, kc, yc, xc)
    for iv in (*unroll, kc, yc):
        s[YL].unroll(iv)
    s[YL].vectorize(xc)
    return YL, top


def _channels_in_lanes(s, Y: te.Tensor, W: te.Tensor, tile) -> None:
    """Y's tiles turned around: ``tile.rows`` pixels of a row by ``tile.cols`` channels, the
    channels in the vector lanes, for rows that are not whole vectors (56 pixels on AVX-512's
    16 lanes). The tile is laid out with the channel last (``reorder`` before ``cache_write``),
    so its vectors are contiguous; the weights are copied once with the channel last (a
    ``cache_read`` whose loops end in it, ``cache_write`` of that: it takes the loop order as
    its layout), so each step of the window loads whole vectors of them and broadcasts one
    input pixel per row of the tile. Rows of the image are shared among threads."""
    b, ko, y, x = s[Y].op.axis
    s[Y].reorder(b, y, x, ko)
    YL = s.cache_write(Y, "local")
    b, ko, y, x = s[Y].op.axis
    kto, kti = s[Y].split(ko, factor=tile.cols)
    xo, xi = s[Y].split(x, factor=tile.rows)
    s[Y].reorder(b, y, xo, kto, xi, kti)
    s[Y].unroll(xi)
    s[Y].vectorize(kti)  # each lane stored a channel plane apart
    s[Y].parallel(s[Y].fuse(b, y))
    s[YL].compute_at(s[Y], kto)
    bc, yc, xc, kc = s[YL].op.axis
    rc, ry, rx = s[YL].op.reduce_axis
    s[YL].reorder(bc, yc, rc, ry, rx, xc, kc)
    for iv in (ry, rx, xc):
        s[YL].unroll(iv)
    s[YL].vectorize(kc)
    transposed_copy(s, W, 0, [YL])  # W[o, c, wy, wx] copied as Wt[c, wy, wx, o]


def conv2d(n: int = 1, c: int = 64, k: int = 64, h: int = 56, w: int = 56, target: str | Target | None = None,
           kernel: int = 3):
    """The schedule and its arguments ``[X, W, Y]``: Y = conv(X, W), ``kernel`` x ``kernel``
    (odd), zero padding keeping the size, the tile derived from ``target`` (default: this
    machine)."""
    if not isinstance(kernel, int) or kernel < 1 or kernel % 2 == 0:  # an even window has no centre
        raise DefinitionError(f"conv2d: kernel={kernel!r}: the window W[k, c, kernel, kernel] must be odd and "
                              "positive (1, 3, 5, ...), so that zero padding of kernel // 2 keeps the image size")
    tgt = resolve(as_target(target))
    p = kernel // 2
    X = te.placeholder((n, c, h, w), name="X")
    Wt = te.placeholder((k, c, kernel, kernel), name="W")
    Xp = _padded(X, p)
    rc = te.reduce_axis((0, c), name="rc")
    ry = te.reduce_axis((0, kernel), name="ry")
    rx = te.reduce_axis((0, kernel), name="rx")
    Y = te.compute((n, k, h, w), lambda b, ko, y, x: te.sum(
        Xp[b, rc, y + ry, x + rx] * Wt[ko, rc, ry, rx], axis=[rc, ry, rx]), name="Y")
    s = te.create_schedule(Y.op)
    if p and turns(tgt, w, k):  # channels in the lanes (conv.channels_in_lanes)
        _channels_in_lanes(s, Y, Wt, channel_tile(tgt, k, w))
        s[Xp].parallel(s[Xp].fuse(*s[Xp].op.axis[:2]))
        s[Xp].vectorize(s[Xp].op.axis[-1])
        return s, [X, Wt, Y]
    tile = _tile_shape(tgt, k, h, w, kernel * kernel)
    YL, band = _register_tile(s, Y, tile, None if p else tile[3])
    if p:
        s[Xp].parallel(s[Xp].fuse(*s[Xp].op.axis[:2]))
    else:  # each thread copies its band of input rows, the channels side by side (conv.band_operands)
        XL = s.cache_read(X, "local", [YL])
        s[XL].compute_at(s[Y], band)
        s[XL].vectorize(s[XL].op.axis[-1])
    return s, [X, Wt, Y]


def depthwise(n: int = 1, c: int = 64, h: int = 56, w: int = 56, target: str | Target | None = None):
    """The schedule and its arguments ``[X, W, Y]`` of a 3x3 depthwise conv (channel ``ci``
    filtered by ``W[ci]`` alone), padding 1: one channel x the Target's vectors per tile."""
    tgt = resolve(as_target(target))
    X = te.placeholder((n, c, h, w), name="X")
    Wt = te.placeholder((c, 3, 3), name="W")
    Xp = _padded(X, 1)
    ry = te.reduce_axis((0, 3), name="ry")
    rx = te.reduce_axis((0, 3), name="rx")
    Y = te.compute((n, c, h, w), lambda b, ci, y, x: te.sum(
        Xp[b, ci, y + ry, x + rx] * Wt[ci, ry, rx], axis=[ry, rx]), name="Y")
    s = te.create_schedule(Y.op)
    _register_tile(s, Y, _tile_shape(tgt, 1, h, w, 9), bands_first=False)
    # each channel's padded plane right before its tiles read it, from L1 (a pass of its own
    # over the whole input measured 0.75x the speed on AVX2)
    s[Xp].compute_at(s[Y], s[Y].leaf_iter_vars[0])
    s[Xp].vectorize(s[Xp].op.axis[-1])
    return s, [X, Wt, Y]


def reference(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """NumPy's best: im2col (a sliding-window copy) and one BLAS matmul (any odd kernel size)."""
    n, c, h, wd = x.shape
    kh = w.shape[2]
    p = kh // 2
    xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (kh, kh), axis=(2, 3))  # n c h w kh kh
    cols = np.ascontiguousarray(win.transpose(0, 1, 4, 5, 2, 3)).reshape(n, c * kh * kh, h * wd)
    return (w.reshape(w.shape[0], c * kh * kh) @ cols).reshape(n, w.shape[0], h, wd)


def depthwise_reference(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Nine shifted products of the padded input, summed (in float64, rounded once)."""
    h, wd = x.shape[2:]
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1))).astype("float64")
    return sum(xp[:, :, dy:dy + h, dx:dx + wd] * w[None, :, dy, dx, None, None]
               for dy in range(3) for dx in range(3)).astype("float32")


def main() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 16, 19, 37), "float32")
    for kernel in (3, 1):
        s, args = conv2d(c=16, k=24, h=19, w=37, kernel=kernel)
        w = rng.standard_normal((24, 16, kernel, kernel), "float32")
        y = np.empty((1, 24, 19, 37), "float32")
        tessel.build(s, args)(x, w, y)
        np.testing.assert_allclose(y, reference(x, w), rtol=1e-4, atol=1e-4)
        print(f"conv2d {kernel}x{kernel} 1x16x19x37 -> 24 channels: matches NumPy")
    s, args = depthwise(c=16, h=19, w=37)
    w = rng.standard_normal((16, 3, 3), "float32")
    y = np.empty_like(x)
    tessel.build(s, args)(x, w, y)
    np.testing.assert_allclose(y, depthwise_reference(x, w), rtol=1e-4, atol=1e-4)
    print("depthwise 3x3 1x16x19x37: matches NumPy")


if __name__ == "__main__":
    main()
