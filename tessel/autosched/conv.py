"""Stencil reductions (conv2d, depthwise, 1x1 convolutions): a register tile spread over two
pixel axes, and the stencil window unrolled whole.

Why a conv2d needs more than matmul's tile: its vector axis is an image row, whose width is
rarely a multiple of the tile's columns (56 pixels are 3.5 tiles of 16), and a partial tile
costs a second copy of the loop nest that runs at a fraction of the speed (on AVX2, a tile of
5 channels, which leaves a partial block of 64, measured 0.7x the speed of one of 4). The output has a
second pixel axis, though, that the broadcast operand (the weights) ignores just as it ignores
the row: the tile's vectors can be stacked over rows instead (``spread``), 4 channels x 2 rows
x 8 pixels instead of 4 channels x 16 pixels, the same accumulators, and both pixel axes
divided evenly. Stacked rows share input rows too: with the stencil window (``ry``, ``rx``)
unrolled, output rows ``y`` and ``y + 1`` read input row ``y + 1`` at the same offsets, and the
C compiler loads it once for both (measured on AVX2, one thread: 1.44x the speed of the
4 channels x 16 pixels tile that unrolls ``rx`` alone).

A 1 x 1 conv reads its input in place, a plane apart per channel: each thread copies its band
of rows first, the channels side by side (``band_operands``).

A depthwise conv reads each input plane from its own channel alone, so its padded input is
computed inside the tile's thread loop (``per_thread_producer``) instead of in a pass of its own:
with nine FMAs per output, a pass over the whole image ran the kernel at 0.75x the speed
(AVX2, 64 x 56 x 56).

Nothing here is tuned for one machine: the number of vectors comes from the Target's register
tile (:func:`tessel.target.tiles.register_tile`), and the split between the axes from the
extents of the computation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..ir import expr as E
from ..ir.dtype import dtype as as_dtype
from ..target.target import Target
from ..target.tiles import FMA_LATENCY, RegisterTile, register_tile, stencil_rows_divide
from ..te.tensor import Tensor
from .analysis import Graph, OpInfo, extent

if TYPE_CHECKING:
    from ..schedule.schedule import Schedule

WINDOW_UNROLL = 16  # trailing reduction loops unrolled whole while their trip counts multiply to at most this (a 4x4 window)


def spread_axis(info: OpInfo, inner: E.IterVar, rows: E.IterVar | None) -> E.IterVar | None:
    """A data-parallel axis, neither the vector axis nor the rows, that every read ignoring the
    vector axis ignores too (its broadcast value is reused along it) and some read using the
    vector axis follows (its vectors differ along it): an image's second pixel axis. The one
    with the largest constant extent; None where there is no such axis (matmul)."""
    best, best_ext = None, 1
    for iv in info.op.axis:
        if iv is inner or iv is rows:
            continue
        ext = extent(iv)
        if ext is None or ext <= best_ext:
            continue
        bcast_ok = all(iv.var not in r.all_vars() for r in info.reads if inner.var not in r.all_vars())
        differs = any(iv.var in r.all_vars() for r in info.reads if inner.var in r.all_vars())
        if bcast_ok and differs:
            best, best_ext = iv, ext
    return best


CHANNEL_VECTORS = 2  # at most this many vectors of channels per tile (see channels_in_lanes)


def channels_in_lanes(info: OpInfo, inner: E.IterVar, rows: E.IterVar | None, target: Target
                      ) -> list[tuple[Tensor, int]] | None:
    """The operands to copy with the rows axis last, when the tile is better turned around:
    its vectors along the rows axis (a conv's output channels) and its rows along the vector
    axis (the pixels of an image row, broadcast from the input); None to leave it as it is.

    Turned around where the image row is not a whole number of vectors and the channels are
    (:func:`turns`): 56 pixels on 16 lanes are three vectors and a half, so an eighth of every
    FMA of the last one is wasted and its loop nest is a second, slower copy (on AVX-512 30%
    of the time for 14% of the work), while 64 channels are four whole vectors. The weights,
    read along the channels a whole filter apart (``W[o, rc, ry, rx]``), are copied once per
    call with the channel last (``Wt[rc, ry, rx, o]``, :func:`transposed_copy`), so each step
    loads whole vectors of them; the input row is broadcast a pixel at a time, and the finished
    tile is stored a channel plane apart per lane. On AVX-512 (Zen 5, two threads, 64 -> 64
    channels, 56 x 56, interleaved) 8 pixels x 2 vectors of channels ran at 480 GFLOP/s
    against 433 for 8 channels x 3 vectors of pixels; 14 x 1 and 7 x 2 ran as fast, but 4 x 4
    at 433 and 2 x 4 at 235, so at most :data:`CHANNEL_VECTORS` vectors. On AVX2 56 pixels are
    seven whole vectors: not turned. Only around a stencil window: a 1 x 1 conv turned around
    ran at 281 GFLOP/s against 375 as it is (its input read in place a plane apart per
    channel, where the tile as it is reads a band copied with the channels side by side:
    ``band_operands``).

    Every read that follows the rows axis must index it alone in one dimension, by its
    variable, every index a variable, and neither the vector axis (a weight, not an input
    window); the pair is (tensor, that dimension)."""
    if rows is None or not _slides(info) or not turns(target, extent(inner), extent(rows), info.dtype):
        return None
    out: dict[int, tuple[Tensor, int]] = {}
    for r in info.reads:
        if rows.var not in r.all_vars():
            continue
        dims = [d for d in range(len(r.indices)) if rows.var in r.vars_at(d)]
        if len(dims) != 1 or r.indices[dims[0]] is not rows.var or inner.var in r.all_vars():
            return None
        if not all(isinstance(i, E.Var) for i in r.indices) or out.get(id(r.tensor), (r.tensor, dims[0]))[1] != dims[0]:
            return None  # a tensor read along the channels in two dimensions has no one layout
        out[id(r.tensor)] = (r.tensor, dims[0])
    return list(out.values()) or None


def turns(target: Target, pixels: int | None, channels: int | None, dtype: str = "float32") -> bool:
    """Whether a conv's tile is turned around (:func:`channels_in_lanes`): its image rows are
    not whole vectors, its channels are, and the turned tile (:func:`channel_tile`) has the
    accumulators to hide the FMA latency (a prime row of 37 pixels would leave 1 x 1 vector)."""
    lanes = target.vector_lanes(dtype)
    if pixels is None or channels is None or pixels % lanes == 0 or channels % lanes:
        return False
    return channel_tile(target, channels, pixels, dtype).accumulators >= FMA_LATENCY * target.fma_pipes


def channel_tile(target: Target, channels: int, pixels: int, dtype: str = "float32") -> RegisterTile:
    """The register tile of a turned conv (:func:`channels_in_lanes`): ``rows`` pixels of an
    image row (dividing it, as around a window a partial block is a second loop nest) by
    ``vectors`` vectors of channels, at most :data:`CHANNEL_VECTORS`."""
    return register_tile(target, dtype, max_rows=pixels, max_cols=channels, rows_divide=pixels,
                         max_vectors=CHANNEL_VECTORS)


def row_divisors(rows: int, pixels: int | None) -> tuple[int, ...]:
    """A turned tile's candidate rows for the search: the divisors of the image row up to twice
    ``rows`` (a partial block is a second loop nest), ``rows`` among them."""
    if pixels is None:
        return (rows,)
    return tuple(sorted({d for d in range(1, 2 * rows + 1) if pixels % d == 0} | {rows}))


def transposed_copy(s: Schedule, operand: Tensor, dim: int, readers: list[Tensor]) -> Tensor:
    """``operand`` copied once per call with dimension ``dim`` last, for ``readers`` to load
    whole vectors along it: a cache_read whose loops end in ``dim``, a cache_write of it
    (which takes the loops' order as its layout), the first inlined; threads over the copy's
    first loop, its last vectorized. TE's primitives alone, so the steps show in the schedule's
    history and printed Python. Returns the copy."""
    c = s.cache_read(operand, "global", readers)
    axes = list(s[c].op.axis)
    s[c].reorder(*[iv for k, iv in enumerate(axes) if k != dim], axes[dim])
    t = s.cache_write(c, "global")
    s[c].compute_inline()
    if (extent(s[t].op.axis[0]) or 2) >= 2:  # never a parallel loop of one iteration (rules.in_threads)
        s[t].parallel(s[t].op.axis[0])
    s[t].vectorize(s[t].op.axis[-1])
    return t


def _slides(info: OpInfo) -> bool:
    """Whether a window of more than one step slides over an image axis in some read (``y +
    ry``, ``ry`` of 3): a stencil, not a 1 x 1 conv (whose ``ry`` and ``rx`` have one step)."""
    red = {iv.var for iv in info.op.reduce_axis if (extent(iv) or 2) > 1}
    data = {iv.var for iv in info.op.axis}
    return any(r.vars_at(d) & red and r.vars_at(d) & data for r in info.reads for d in range(len(r.indices)))


def per_thread_producer(g: Graph, info: OpInfo, tile: OpInfo, tile_axes: set[int]) -> bool:
    """Whether ``info`` (a padded input) is better computed inside ``tile``'s thread loop than
    as a pass of its own: a copy whose only reader is the tile, and each of whose reads indexes
    it by every other data-parallel axis of the tile as a lone index free of reductions (a
    depthwise conv's ``Xp[b, ci, y + ry, x + rx]``: a thread's channels read only their own
    planes). Then each thread computes its slice once, right before it reads it from L1; a
    conv2d's ``Xp[b, rc, ...]`` follows no output channel and would be copied once per channel."""
    if info.is_output or info.is_reduction or info.consumers != [tile.op] or not info.op.axis:
        return False
    red = {iv.var for iv in tile.op.reduce_axis}
    outer = [iv.var for k, iv in enumerate(tile.op.axis) if k not in tile_axes]
    sliding = {iv.var for k, iv in enumerate(tile.op.axis) if k in tile_axes}
    for r in tile.reads_of(info.op):
        lone = {i for i in r.indices if isinstance(i, E.Var)}
        if any(v not in lone for v in outer):
            return False
        # a reduction may only slide a window along the tile's own axes (``y + ry``): one
        # alone (matmul's ``A[i, k]``) would have every thread copy the whole of it
        if any(d & red and not d & sliding for d in (r.vars_at(k) for k in range(len(r.indices)))):
            return False
    return bool(outer) and bool(tile.reads_of(info.op))


def band_operands(info: OpInfo, inner: E.IterVar, spread: E.IterVar, rows: E.IterVar | None) -> list[Tensor]:
    """Operands worth copying, a band of image rows at a time, into a thread's own buffer: read
    along the vector and the spread axes, with a reduction (the input channel) as another
    index, and not by the output channel (``X[b, rc, y, x]`` in a 1x1 conv: every block of
    output channels reads the band again). Read in place, each step of the channel loop jumps a
    whole image plane (12.5 KB at 56 x 56), so the tile's loads come from 64 planes whose lines
    crowd the same L1 sets; the copy lays the band's channels next to each other (measured on
    AVX2, 64 -> 64 channels, 56 x 56, two threads, interleaved medians: 1.13x and 1.19x the
    speed read in place; :func:`band_by_default` says where the copy starts on, the search may
    turn it on or off). A padded input computed per band (:func:`per_thread_producer`) is such
    a copy already; the caller leaves out members and inlined producers."""
    red = {iv.var for iv in info.op.reduce_axis}
    out: list[Tensor] = []
    for r in info.reads:
        vs = r.all_vars()
        if (inner.var in vs and spread.var in vs and vs & red and (rows is None or rows.var not in vs)
                and r.tensor not in out):
            out.append(r.tensor)
    return out


def band_by_default(info: OpInfo, band: list[Tensor], inner: E.IterVar, spread: E.IterVar, stacked: int,
                    target: Target) -> bool:
    """Whether the band copy is on before any search: no stencil window slides over the band
    (a reduction of more than one step indexing an image axis: around a 3 x 3 window the copy
    ran 1.03x and 1.05x as fast, and the cold build took 15-20% longer, 0.45 against 0.37-0.40
    s, the copy of 4 padded rows per 2 output rows being more code for the C compiler), and a
    thread's band fits in half of L2 (beside the weights and the output it is reread from)."""
    red = {iv.var: extent(iv) or 256 for iv in info.op.reduce_axis}
    axes = list(info.op.axis)
    # the band loop's body: the reductions and the data-parallel loops after it (the batch, if
    # it is the spread axis, has the image rows inside it)
    inside = {**red, **{iv.var: extent(iv) or 256 for iv in axes[axes.index(spread) + 1:] if iv is not inner}}
    elems = stacked * (extent(inner) or 256)
    for r in info.reads:
        if r.tensor not in band:
            continue
        for d in range(len(r.indices)):
            vs = r.vars_at(d)
            if inner.var in vs or spread.var in vs:
                if any(red[v] > 1 for v in vs if v in red):
                    return False
            else:
                for v in vs & inside.keys():
                    elems *= inside[v]
        return elems * max(as_dtype(r.tensor.dtype).bits // 8, 1) <= target.l2_bytes // 2
    return False


def split_vectors(vectors: int, lanes: int, cols: int | None, rows: int | None,
                  window: bool = False) -> tuple[int, int]:
    """``(along, stacked)``: how a tile of ``vectors`` vectors is laid out, ``along`` vectors
    along the vector axis (``cols`` long) times ``stacked`` rows of the spread axis (``rows``
    long). A tile that divides the vector axis first (a partial tile there is a slow second loop
    nest in every band of rows), one no wider than the row (a wider one is partial everywhere),
    then the most vectors (accumulators hide the FMA latency),
    then one that divides the rows (a partial band is one loop nest per image, not per row),
    then the most along the vector axis (the longest contiguous run), or, for a reduction with
    a ``window`` over the rows, the most stacked: stacked rows share the input rows the window
    reads, so a step loads fewer vectors per FMA (a 3 x 3 depthwise conv on AVX2: 7 vectors
    stacked over rows ran 1.5x faster than 7 along a 56-pixel row)."""

    def even(n: int, ext: int | None) -> bool:
        return ext is None or ext % n == 0

    best = (vectors, 1)
    best_key = None
    for along in range(1, vectors + 1):
        for stacked in range(1, vectors // along + 1):
            if rows is not None and stacked > rows:
                continue
            fits = cols is None or along == 1 or along * lanes <= cols
            key = (even(along * lanes, cols), fits, along * stacked, even(stacked, rows), stacked if window else along)
            if best_key is None or key > best_key:
                best, best_key = (along, stacked), key
    return best


def stencil_tile(target: Target, channels: int, cols: int, rows: int, window_steps: int,
                 dtype: str = "float32") -> tuple[RegisterTile, int, int]:
    """``(tile, along, stacked)``: a convolution's register tile over ``channels`` output
    channels and its vectors laid out over a ``rows x cols`` image, by the rules the hand
    schedule and the peers share with the auto-scheduler (``stencil_rows_divide``,
    :func:`split_vectors` with the window)."""
    tile = register_tile(target, dtype, max_rows=channels, max_cols=cols,
                         rows_divide=stencil_rows_divide(channels, window_steps))
    along, stacked = split_vectors(tile.vectors, tile.lanes, cols, rows, window=window_steps > 1)
    return tile, along, stacked


def window_loops(reduce_axis: list[E.IterVar]) -> tuple[list[E.IterVar], list[E.IterVar], int]:
    """``(rest, window, steps)``: the trailing reduction loops short enough to unroll whole (a
    stencil window: ``ry``, ``rx``; at most :data:`WINDOW_UNROLL` steps), those before them,
    and the window's steps. The caller unrolls the window, and splits the last of ``rest`` for
    unrolling when the window is too short to fill a body (a 1x1 convolution, a matmul)."""
    window: list[E.IterVar] = []
    steps = 1
    for iv in reversed(reduce_axis):
        ext = extent(iv)
        if ext is None or steps * ext > WINDOW_UNROLL:
            break
        window.insert(0, iv)
        steps *= ext
    return reduce_axis[: len(reduce_axis) - len(window)], window, steps
