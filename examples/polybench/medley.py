"""PolyBench's medley: deriche (an edge-detecting recursive filter), floyd-warshall, nussinov.

All three are recurrences over their own arrays: ``te.recurrence``, the loop directions found
from the reads (nussinov's rows and deriche's anticausal passes run backwards by themselves).
"""

from __future__ import annotations

import numpy as np

from tessel import te

from .common import Arrays, Kernel, Program, Sizes

F64 = "float64"
I32 = "int32"


# ---- deriche: a causal and an anticausal filter along rows, then along columns -------------
def _deriche_define(n: Sizes) -> Program:
    W, H = n["W"], n["H"]
    alpha = te.var("alpha", F64)
    imgIn = te.placeholder((W, H), F64, name="imgIn")
    imgOut = te.placeholder((W, H), F64, name="imgOut")
    y1 = te.placeholder((W, H), F64, name="y1")
    y2 = te.placeholder((W, H), F64, name="y2")
    one, zero = te.const(1.0, F64), te.const(0.0, F64)
    ea = te.exp(-alpha)
    k = (one - ea) * (one - ea) / (one + 2.0 * alpha * ea - te.exp(2.0 * alpha))
    a1, a2, a3, a4 = k, k * ea * (alpha - one), k * ea * (alpha + one), -k * te.exp(-2.0 * alpha)  # a5..a8 equal these
    b1, b2 = te.power(te.const(2.0, F64), -alpha), -te.exp(-2.0 * alpha)
    c1 = one  # c2 as well

    def at(x: te.Tensor, inside: object, i: object, j: object) -> object:
        """x[i, j], or the 0 PolyBench's filters start from outside the image."""
        return te.if_then_else(inside, x[i, j], zero)

    def causal(x: te.Tensor, step: tuple[int, int], name: str) -> te.Tensor:
        di, dj = step

        def f(h: te.Tensor, i: object, j: object) -> object:
            back1, back2 = (i >= 1, j >= 1)[dj], (i >= 2, j >= 2)[dj]
            return (a1 * x[i, j] + a2 * at(x, back1, i - di, j - dj)
                    + b1 * at(h, back1, i - di, j - dj) + b2 * at(h, back2, i - 2 * di, j - 2 * dj))

        return te.recurrence((W, H), [te.define(f)], name=name)

    def anticausal(x: te.Tensor, step: tuple[int, int], name: str) -> te.Tensor:
        di, dj = step
        size = (W, H)[dj]

        def f(h: te.Tensor, i: object, j: object) -> object:
            at1, at2 = ((i, j)[dj] + 1 < size), ((i, j)[dj] + 2 < size)
            return (a3 * at(x, at1, i + di, j + dj) + a4 * at(x, at2, i + 2 * di, j + 2 * dj)
                    + b1 * at(h, at1, i + di, j + dj) + b2 * at(h, at2, i + 2 * di, j + 2 * dj))

        return te.recurrence((W, H), [te.define(f)], name=name)

    rows1, rows2 = causal(imgIn, (0, 1), "y1_rows"), anticausal(imgIn, (0, 1), "y2_rows")
    rows = te.compute((W, H), lambda i, j: c1 * (rows1[i, j] + rows2[i, j]), name="out_rows")
    cols1, cols2 = causal(rows, (1, 0), "y1_cols"), anticausal(rows, (1, 0), "y2_cols")
    out = te.compute((W, H), lambda i, j: c1 * (cols1[i, j] + cols2[i, j]), name="deriche")
    s = te.create_schedule(out.op)
    # every pass in PolyBench's arrays: the column passes overwrite y1 and y2 after the rows'
    # sum, kept in imgOut, has read them; the result overwrites imgOut after they have read it
    for t, buf in ((rows1, y1), (rows2, y2), (rows, imgOut), (cols1, y1), (cols2, y2), (out, imgOut)):
        s[t].store_in(buf)
    return Program(s, [alpha, imgIn, imgOut, y1, y2], ["alpha", "imgIn", "imgOut", "y1", "y2"],
                   ["imgOut", "y1", "y2"])


def _deriche_init(n: Sizes) -> Arrays:
    W, H = n["W"], n["H"]
    i, j = np.ogrid[:W, :H]
    return {"alpha": 0.25, "imgIn": ((313 * i + 991 * j) % 65536) / 65535.0,
            "imgOut": np.zeros((W, H)), "y1": np.zeros((W, H)), "y2": np.zeros((W, H))}


def _deriche_reference(n: Sizes, a: Arrays) -> None:
    alpha = a["alpha"]
    x, out, y1, y2 = a["imgIn"], a["imgOut"], a["y1"], a["y2"]
    ea = np.exp(-alpha)
    k = (1.0 - ea) * (1.0 - ea) / (1.0 + 2.0 * alpha * ea - np.exp(2.0 * alpha))
    a1, a2, a3, a4 = k, k * ea * (alpha - 1.0), k * ea * (alpha + 1.0), -k * np.exp(-2.0 * alpha)
    b1, b2 = 2.0 ** -alpha, -np.exp(-2.0 * alpha)
    # each pass runs along one axis, all rows (or columns) at once: the loops over the other
    # axis carry nothing
    for src, f1, f2 in ((x, y1, y2), (out.T, y1.T, y2.T)):
        L = src.shape[1]
        xm1 = ym1 = ym2 = np.zeros(src.shape[0])
        for j in range(L):
            f1[:, j] = a1 * src[:, j] + a2 * xm1 + b1 * ym1 + b2 * ym2
            xm1, ym2, ym1 = src[:, j].copy(), ym1, f1[:, j].copy()
        xp1 = xp2 = yp1 = yp2 = np.zeros(src.shape[0])
        for j in range(L - 1, -1, -1):
            f2[:, j] = a3 * xp1 + a4 * xp2 + b1 * yp1 + b2 * yp2
            xp2, xp1, yp2, yp1 = xp1, src[:, j].copy(), yp1, f2[:, j].copy()
        out[:] = y1 + y2


DERICHE = Kernel(
    "deriche", "medley",
    {"MINI": {"W": 64, "H": 64}, "ODD": {"W": 19, "H": 13}},
    _deriche_define, _deriche_init, _deriche_reference,
    c_loops="""
  double k = (1.0 - exp(-alpha)) * (1.0 - exp(-alpha)) / (1.0 + 2.0 * alpha * exp(-alpha) - exp(2.0 * alpha));
  double a1 = k, a5 = k, a2 = k * exp(-alpha) * (alpha - 1.0), a6 = a2;
  double a3 = k * exp(-alpha) * (alpha + 1.0), a7 = a3, a4 = -k * exp(-2.0 * alpha), a8 = a4;
  double b1 = pow(2.0, -alpha), b2 = -exp(-2.0 * alpha), c1 = 1, c2 = 1;
  for (int i = 0; i < W; i++) {
    double ym1 = 0, ym2 = 0, xm1 = 0;
    for (int j = 0; j < H; j++) {
      y1[i][j] = a1 * imgIn[i][j] + a2 * xm1 + b1 * ym1 + b2 * ym2;
      xm1 = imgIn[i][j]; ym2 = ym1; ym1 = y1[i][j];
    }
  }
  for (int i = 0; i < W; i++) {
    double yp1 = 0, yp2 = 0, xp1 = 0, xp2 = 0;
    for (int j = H - 1; j >= 0; j--) {
      y2[i][j] = a3 * xp1 + a4 * xp2 + b1 * yp1 + b2 * yp2;
      xp2 = xp1; xp1 = imgIn[i][j]; yp2 = yp1; yp1 = y2[i][j];
    }
  }
  for (int i = 0; i < W; i++)
    for (int j = 0; j < H; j++) imgOut[i][j] = c1 * (y1[i][j] + y2[i][j]);
  for (int j = 0; j < H; j++) {
    double tm1 = 0, ym1 = 0, ym2 = 0;
    for (int i = 0; i < W; i++) {
      y1[i][j] = a5 * imgOut[i][j] + a6 * tm1 + b1 * ym1 + b2 * ym2;
      tm1 = imgOut[i][j]; ym2 = ym1; ym1 = y1[i][j];
    }
  }
  for (int j = 0; j < H; j++) {
    double tp1 = 0, tp2 = 0, yp1 = 0, yp2 = 0;
    for (int i = W - 1; i >= 0; i--) {
      y2[i][j] = a7 * tp1 + a8 * tp2 + b1 * yp1 + b2 * yp2;
      tp2 = tp1; tp1 = imgOut[i][j]; yp2 = yp1; yp1 = y2[i][j];
    }
  }
  for (int i = 0; i < W; i++)
    for (int j = 0; j < H; j++) imgOut[i][j] = c2 * (y1[i][j] + y2[i][j]);""")


# ---- floyd-warshall: shortest paths through the nodes below k, in place ---------------------
def _floyd_define(n: Sizes) -> Program:
    N = n["N"]
    path = te.placeholder((N, N), I32, name="path")

    def step(h: te.Tensor, k: object, i: object, j: object) -> object:
        # PolyBench updates path in place: path[i][k] and path[k][j] are read as they are at that
        # moment, this step's value once (i, k) or (k, j) has come by in its loops, else the
        # step before's (the input's, at k = 0)
        def now(r: object, c: object, done: object) -> object:
            before = te.if_then_else(k > 0, h[k - 1, r, c], path[r, c])
            return te.if_then_else(done, h[k, r, c], before)

        old = te.if_then_else(k > 0, h[k - 1, i, j], path[i, j])
        return te.min(old, now(i, k, j > k) + now(k, j, i > k))

    h = te.recurrence((N, N, N), [te.define(step)], name="floyd_warshall", dtype=I32)
    s = te.create_schedule(h.op)
    s[h].store_in(path, lambda k, i, j: (i, j))  # every step in path itself
    return Program(s, [path], ["path"], ["path"])


def _floyd_init(n: Sizes) -> Arrays:
    N = n["N"]
    i, j = np.ogrid[:N, :N]
    far = ((i + j) % 13 == 0) | ((i + j) % 7 == 0) | ((i + j) % 11 == 0)
    return {"path": np.where(far, 999, i * j % 7 + 1).astype(I32)}


def _floyd_reference(n: Sizes, a: Arrays) -> None:
    p = a["path"]
    for k in range(n["N"]):
        for i in range(n["N"]):  # row k is read while it is written: row by row, as PolyBench
            p[i] = np.minimum(p[i], p[i, k] + p[k])


FLOYD_WARSHALL = Kernel(
    "floyd-warshall", "medley",
    {"MINI": {"N": 60}, "ODD": {"N": 23}},
    _floyd_define, _floyd_init, _floyd_reference, dtype=I32, tolerance=0.0,
    c_loops="""
  for (int k = 0; k < N; k++)
    for (int i = 0; i < N; i++)
      for (int j = 0; j < N; j++)
        path[i][j] = path[i][j] < path[i][k] + path[k][j] ? path[i][j] : path[i][k] + path[k][j];""")


# ---- nussinov: RNA folding, the best pairing of seq[i..j] ---------------------------------
def _nussinov_define(n: Sizes) -> Program:
    N = n["N"]
    seq = te.placeholder((N,), "int8", name="seq")
    table = te.placeholder((N, N), I32, name="table")
    one, zero = te.const(1, I32), te.const(0, I32)

    def cell(h: te.Tensor, i: object, j: object) -> object:
        # j > i: PolyBench's guards j - 1 >= 0 and i + 1 < N always hold; h[i + 1, ...] makes i
        # run backwards, h[i, j - 1] j forwards
        match = te.if_then_else(seq[i].astype(I32) + seq[j].astype(I32) == 3, one, zero)
        best = te.max(te.max(h[i, j], h[i, j - 1]), h[i + 1, j])
        best = te.max(best, h[i + 1, j - 1] + te.if_then_else(i < j - 1, match, zero))
        k = te.reduce_axis((i + 1, j), name="k")
        return te.max(h[i, k] + h[k + 1, j], axis=k, init=best)

    h = te.recurrence(None, [te.define(cell, where=lambda i, j: j > i)], name="nussinov", inplace=table)
    return Program(te.create_schedule(h.op), [seq, table], ["seq", "table"], ["table"])


def _nussinov_init(n: Sizes) -> Arrays:
    N = n["N"]
    return {"seq": ((np.arange(N) + 1) % 4).astype("int8"), "table": np.zeros((N, N), I32)}


def _nussinov_reference(n: Sizes, a: Arrays) -> None:
    N, seq, t = n["N"], a["seq"].astype(I32), a["table"]
    for i in range(N - 1, -1, -1):
        for j in range(i + 1, N):
            pair = 1 if i < j - 1 and seq[i] + seq[j] == 3 else 0
            best = max(t[i, j], t[i, j - 1], t[i + 1, j], t[i + 1, j - 1] + pair)
            if j > i + 1:
                best = max(best, int((t[i, i + 1:j] + t[i + 2:j + 1, j]).max()))
            t[i, j] = best


NUSSINOV = Kernel(
    "nussinov", "medley",
    {"MINI": {"N": 60}, "ODD": {"N": 29}},
    _nussinov_define, _nussinov_init, _nussinov_reference, dtype=I32, tolerance=0.0,
    c_loops="""
  for (int i = N - 1; i >= 0; i--)
    for (int j = i + 1; j < N; j++) {
      int v;
      if (j - 1 >= 0) { v = table[i][j - 1]; if (v > table[i][j]) table[i][j] = v; }
      if (i + 1 < N) { v = table[i + 1][j]; if (v > table[i][j]) table[i][j] = v; }
      if (j - 1 >= 0 && i + 1 < N) {
        v = table[i + 1][j - 1] + (i < j - 1 && seq[i] + seq[j] == 3 ? 1 : 0);
        if (v > table[i][j]) table[i][j] = v;
      }
      for (int k = i + 1; k < j; k++) {
        v = table[i][k] + table[k + 1][j];
        if (v > table[i][j]) table[i][j] = v;
      }
    }""")

KERNELS = [DERICHE, FLOYD_WARSHALL, NUSSINOV]
