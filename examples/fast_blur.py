"""3x3 separable box blur, in row strips: the horizontal pass lives in L2, one strip at a time.

``Bx`` (the horizontal 1x3 average) is computed for a strip of ``ty + 2`` rows at each
iteration of the strip loop (``compute_at``), straight before the vertical pass reads it,
so the intermediate image never goes to memory (``ty`` from the Target's L2:
``tessel.target.tiles.strip_rows``, 12 rows of 4094 floats in half of a 512 KiB L2); strips are shared among threads, each of
which allocates its strip buffer once (a heap temporary inside a parallel loop is per
thread). Both passes are vectorized along whole rows: the vectorize pass strip-mines them,
and for the 64 MiB result peels a few pixels per row until the stores are aligned, so that
they can be streaming stores (no read of the output's cache lines before writing them).

    python examples/fast_blur.py
"""

from __future__ import annotations

import numpy as np

import tessel
from tessel import te
from tessel.target import Target, as_target, resolve
from tessel.target.tiles import strip_rows

THIRD = 1.0 / 3.0


def blur(h: int, w: int, target: str | Target | None = None, ty: int | None = None):
    """The schedule and its arguments ``[A, By]``: By is A averaged over 3x3 windows."""
    ty = ty or strip_rows(resolve(as_target(target)), (w - 2) * 4, halo=2)
    A = te.placeholder((h, w), name="A")
    Bx = te.compute((h, w - 2), lambda y, x: (A[y, x] + A[y, x + 1] + A[y, x + 2]) * THIRD, name="Bx")
    By = te.compute((h - 2, w - 2), lambda y, x: (Bx[y, x] + Bx[y + 1, x] + Bx[y + 2, x]) * THIRD, name="By")
    s = te.create_schedule(By.op)
    yo, _ = s[By].split(By.op.axis[0], factor=ty)
    s[By].vectorize(By.op.axis[1])  # whole rows: the pass cuts them into vectors of its width
    s[By].parallel(yo)
    s[Bx].compute_at(s[By], yo)
    s[Bx].vectorize(s[Bx].op.axis[1])
    return s, [A, By]


def reference(a: np.ndarray) -> np.ndarray:
    third = np.float32(THIRD)
    bx = (a[:, :-2] + a[:, 1:-1] + a[:, 2:]) * third
    return (bx[:-2] + bx[1:-1] + bx[2:]) * third


def main() -> None:
    s, args = blur(101, 203)
    f = tessel.build(s, args)
    a = np.random.default_rng(1).standard_normal((101, 203), "float32")
    out = np.empty((99, 201), "float32")
    f(a, out)
    np.testing.assert_allclose(out, reference(a), rtol=1e-5, atol=1e-6)
    print("blur 101x203: matches NumPy")


if __name__ == "__main__":
    main()
