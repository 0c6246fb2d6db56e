"""fp32 matmul at BLAS speed: B packed into column panels, a register tile, threads.

The schedule, from the inside out:

* ``C.local`` (``cache_write``) is a ``MR x NR`` tile of accumulators: 6 rows by 64 columns,
  24 AVX-512 registers. Its row loop is unrolled and its column loop vectorized, so after
  lowering every access to it is at a constant offset and the C generator keeps the whole
  tile in registers; the reduction loop ``k`` runs outside them (unrolled by 4), so each step
  is 6 broadcasts of A, 4 vector loads of B and 24 fused multiply-adds.
* ``Bp`` packs B into panels of ``NR`` columns stored row after row, so those 4 loads are one
  contiguous 256-byte line pair instead of a stride through B; it costs one pass over B.
* The tile loops run panel by panel (``j.outer`` outside ``i.outer``): one 64-column panel of
  ``Bp`` (256 KiB for n = 1024) stays in L2 while every row block of A streams past it, and
  threads share the panels out (``parallel``).

    python examples/fast_matmul.py [n]
"""

from __future__ import annotations

import sys

import numpy as np

import tessel
from tessel import te

MR, NR, KU = 6, 64, 4


def matmul(n: int, mr: int = MR, nr: int = NR, ku: int = KU):
    """The schedule and its arguments ``[A, B, C]`` for ``C = A @ B`` (n x n, float32)."""
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    panels = (n + nr - 1) // nr
    Bp = te.compute((panels, n, nr),
                    lambda jo, k, ji: te.if_then_else(jo * nr + ji < n, B[k, jo * nr + ji], 0.0), name="Bp")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * Bp[j // nr, k, j % nr], axis=k), name="C")

    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "local")
    io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], mr, nr)
    s[C].reorder(jo, io, ii, ji)
    s[C].unroll(ii)
    s[C].vectorize(ji)
    s[C].parallel(jo)

    s[CC].compute_at(s[C], io)
    ic, jc = s[CC].op.axis
    ko, ki = s[CC].split(s[CC].op.reduce_axis[0], factor=ku)
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
    print(f"matmul {n}x{n}x{n}: matches NumPy")


if __name__ == "__main__":
    main()
