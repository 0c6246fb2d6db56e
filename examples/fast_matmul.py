"""fp32 matmul at BLAS speed: B packed into column panels, cache blocks, a register tile, threads.

Every number in the schedule comes from the Target (``tessel.target.tiles``), none from the
machine it was written on; the loops are those of the BLIS papers:

* ``C`` is computed in ``rows x cols`` register tiles, the largest the target's register file
  holds with the operands of one step beside it: on AVX2 (16 ymm registers, 8 float32 lanes)
  5 rows x 16 columns = 10 registers of accumulators, 2 loads of B, 2 broadcasts of A and one
  register left to the compiler; on AVX-512 (32 zmm registers, 16 lanes) 6 x 64 = 24
  accumulators. The tile's rows are unrolled and its columns vectorized, so every access to
  it is at a constant offset; the reduction runs outside them, unrolled by 4.
* ``Bp`` packs B into panels of ``cols`` columns stored row after row, so each step's loads
  are contiguous instead of a stride through B; it costs one pass over B.
* The reduction is cut into blocks (``tiles.reduction_blocks``): a block of one panel stays in
  L1 while every register tile of a row block reads it, a row block's slice of A stays in L2
  for every panel of a group. The loops run: panel group x row block (shared among threads),
  reduction block, panel, register tile, and the tile accumulates into ``C`` across the
  reduction blocks (``C`` starts at zero, before the first block): tessel keeps the tile's
  cells in registers over each block's loop (``passes.accumulate``).

    python examples/fast_matmul.py [n]
"""

from __future__ import annotations

import sys

import numpy as np

import tessel
from tessel import te
from tessel.target import Target, as_target, resolve
from tessel.target.tiles import ReductionBlocks, RegisterTile, reduction_blocks, register_tile


def plan(n: int, target: str | Target | None = None) -> tuple[RegisterTile, ReductionBlocks]:
    """The register tile and the cache blocks for an ``n x n`` product on ``target``."""
    tgt = resolve(as_target(target))
    tile = register_tile(tgt, "float32", max_rows=n, max_cols=n)
    b = reduction_blocks(tgt, tile, n)
    rows = min(b.rows, -(-n // tile.rows) * tile.rows)
    return tile, ReductionBlocks(b.k, rows, min(b.panels, -(-n // tile.cols)))


def matmul(n: int, target: str | Target | None = None, tile: RegisterTile | None = None,
           group: int | None = None, blocks: ReductionBlocks | None = None):
    """The schedule and its arguments ``[A, B, C]`` for ``C = A @ B`` (n x n, float32), with
    the tile and cache blocks derived from ``target`` (default: this machine) unless given
    (``group``: panels per group, overriding the blocks' own)."""
    derived_tile, derived = plan(n, target)
    tile = tile or derived_tile
    blocks = blocks or derived
    mr, nr = tile.rows, tile.cols
    group = group or blocks.panels
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    panels = (n + nr - 1) // nr
    Bp = te.compute((panels, n, nr),
                    lambda jo, k, ji: te.if_then_else(jo * nr + ji < n, B[k, jo * nr + ji], 0.0), name="Bp")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * Bp[j // nr, k, j % nr], axis=k), name="C")

    s = te.create_schedule(C.op)
    io, jg, ii, jj = s[C].tile(C.op.axis[0], C.op.axis[1], mr, nr * group)
    jp, ji = s[C].split(jj, factor=nr)
    ic, ir = s[C].split(io, factor=max(blocks.rows // mr, 1))
    ko, ki = s[C].split(C.op.reduce_axis[0], factor=blocks.k)
    ks, ku = s[C].split(ki, factor=tile.k_unroll)
    s[C].reorder(jg, ic, ko, jp, ir, ks, ku, ii, ji)
    s[C].unroll(ku)
    s[C].unroll(ii)
    s[C].vectorize(ji)
    s[C].parallel(s[C].fuse(jg, ic))

    bo, _, bi = s[Bp].op.axis
    s[Bp].vectorize(bi)
    s[Bp].parallel(bo)
    return s, [A, B, C]


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    s, args = matmul(n)
    f = tessel.build(s, args)
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((n, n), "float32"), rng.standard_normal((n, n), "float32")
    c = np.empty((n, n), "float32")
    f(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-3, atol=1e-3)
    tile, blocks = plan(n)
    print(f"matmul {n}x{n}x{n}: matches NumPy (register tile {tile}; blocks of {blocks.k} reduction steps, "
          f"{blocks.rows} rows, {blocks.panels} panels)")


if __name__ == "__main__":
    main()
