"""fp32 matmul at BLAS speed: B packed into column panels, a register tile, threads.

Every number in the schedule comes from the Target (``tessel.target.tiles``), none from the
machine it was written on:

* ``C.local`` (``cache_write``) is a ``rows x cols`` tile of accumulators, the largest the
  target's register file holds with the operands of one step beside it: on AVX2 (16 ymm
  registers, 8 float32 lanes) 6 rows x 16 columns = 12 registers of accumulators, 2 loads of
  B, one broadcast of A and one register left to the compiler; on AVX-512 (32 zmm registers,
  16 lanes) 6 x 64 = 24 accumulators. Its row loop is unrolled and its column loop
  vectorized, so after lowering every access to it is at a constant offset and the C
  generator keeps the whole tile in registers; the reduction loop ``k`` runs outside them,
  unrolled by 2 for a tile that fills the register file (by 4 otherwise).
* ``Bp`` packs B into panels of ``cols`` columns stored row after row, so each step's loads
  are contiguous instead of a stride through B; it costs one pass over B.
* The tile loops sweep a group of panels for each row block of A, so the row block is read
  from L1/L2 for every panel after the first; groups are shared among threads (``parallel``).
  A group holds at least the panels that fit in half of L2. Narrow panels (AVX2's 16 columns)
  are grouped until 8 groups are left for the threads (``tiles.panel_group``): reloading a
  row block of A costs more than streaming the panels from L3 (at 2048 on AVX2, 16 panels per
  group ran 1.12x faster than 2). A 64-column AVX-512 panel pays for the reload alone, and
  its groups are those that fit (at 2048 on AVX-512, 1 panel ran 1.10x faster than 4).

    python examples/fast_matmul.py [n]
"""

from __future__ import annotations

import sys

import numpy as np

import tessel
from tessel import te
from tessel.target import Target, as_target, resolve
from tessel.target.tiles import RegisterTile, panel_group, register_tile


def plan(n: int, target: str | Target | None = None) -> tuple[RegisterTile, int]:
    """The register tile and the panels per group for an ``n x n`` product on ``target``."""
    tgt = resolve(as_target(target))
    tile = register_tile(tgt, "float32", max_rows=n, max_cols=n)
    return tile, panel_group(tgt, tile, n, panels=-(-n // tile.cols))


def matmul(n: int, target: str | Target | None = None, tile: RegisterTile | None = None,
           group: int | None = None):
    """The schedule and its arguments ``[A, B, C]`` for ``C = A @ B`` (n x n, float32), with
    the tile and panel group derived from ``target`` (default: this machine) unless given."""
    if tile is None or group is None:
        derived_tile, derived_group = plan(n, target)
        tile, group = tile or derived_tile, group or derived_group
    mr, nr = tile.rows, tile.cols
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    panels = (n + nr - 1) // nr
    Bp = te.compute((panels, n, nr),
                    lambda jo, k, ji: te.if_then_else(jo * nr + ji < n, B[k, jo * nr + ji], 0.0), name="Bp")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * Bp[j // nr, k, j % nr], axis=k), name="C")

    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "local")
    io, jg, ii, jj = s[C].tile(C.op.axis[0], C.op.axis[1], mr, nr * group)
    jp, ji = s[C].split(jj, factor=nr)
    s[C].reorder(jg, io, jp, ii, ji)
    s[C].unroll(ii)
    s[C].vectorize(ji)
    s[C].parallel(jg)

    s[CC].compute_at(s[C], jp)
    ic, jc = s[CC].op.axis
    ko, ki = s[CC].split(s[CC].op.reduce_axis[0], factor=tile.k_unroll)
    s[CC].reorder(ko, ki, ic, jc)
    s[CC].unroll(ki)
    s[CC].unroll(ic)
    s[CC].vectorize(jc)

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
    tile, group = plan(n)
    print(f"matmul {n}x{n}x{n}: matches NumPy (register tile {tile}; {group} panels per group)")


if __name__ == "__main__":
    main()
