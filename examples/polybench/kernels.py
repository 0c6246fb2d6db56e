"""PolyBench's linear-algebra kernels: 2mm, 3mm, atax, bicg, doitgen, mvt."""

from __future__ import annotations

import numpy as np

from tessel import te

from .common import Arrays, Kernel, Program, Sizes, product_rows

F64 = "float64"


# ---- 2mm: D := alpha*A*B*C + beta*D ----------------------------------------------------------
def _2mm_define(n: Sizes) -> Program:
    NI, NJ, NK, NL = n["NI"], n["NJ"], n["NK"], n["NL"]
    A = te.placeholder((NI, NK), F64, name="A")
    B = te.placeholder((NK, NJ), F64, name="B")
    C = te.placeholder((NJ, NL), F64, name="C")
    D = te.placeholder((NI, NL), F64, name="D")
    alpha, beta = te.var("alpha", F64), te.var("beta", F64)
    k = te.reduce_axis((0, NK), name="k")
    tmp = te.compute((NI, NJ), lambda i, j: te.sum(alpha * A[i, k] * B[k, j], axis=k), name="tmp")
    kj = te.reduce_axis((0, NJ), name="k")
    out = te.compute((NI, NL), lambda i, j: te.sum(tmp[i, kj] * C[kj, j], axis=kj, init=beta * D[i, j]), name="D2")
    s = te.create_schedule(out.op)
    s[out].store_in(D)  # D scaled and accumulated in place; tmp is PolyBench's own array
    for t in (tmp, out):
        product_rows(s, t)
    return Program(s, [alpha, beta, tmp, A, B, C, D], ["alpha", "beta", "tmp", "A", "B", "C", "D"], ["tmp", "D"])


def _2mm_init(n: Sizes) -> Arrays:
    ni, nj, nk, nl = n["NI"], n["NJ"], n["NK"], n["NL"]
    a, b, c, d = np.ogrid[:ni, :nk], np.ogrid[:nk, :nj], np.ogrid[:nj, :nl], np.ogrid[:ni, :nl]
    return {"alpha": 1.5, "beta": 1.2,
            "A": ((a[0] * a[1] + 1) % ni) / ni,
            "B": (b[0] * (b[1] + 1) % nj) / nj,
            "C": ((c[0] * (c[1] + 3) + 1) % nl) / nl,
            "D": (d[0] * (d[1] + 2) % nk) / nk,
            "tmp": np.zeros((ni, nj))}


def _2mm_reference(n: Sizes, a: Arrays) -> None:
    tmp, D = a["tmp"], a["D"]
    for i in range(n["NI"]):
        tmp[i, :] = 0.0
        for k in range(n["NK"]):
            tmp[i, :] += a["alpha"] * a["A"][i, k] * a["B"][k, :]
    for i in range(n["NI"]):
        D[i, :] *= a["beta"]
        for k in range(n["NJ"]):
            D[i, :] += tmp[i, k] * a["C"][k, :]


K2MM = Kernel(
    "2mm", "linear-algebra/kernels",
    {"MINI": {"NI": 16, "NJ": 18, "NK": 22, "NL": 24}, "ODD": {"NI": 7, "NJ": 11, "NK": 13, "NL": 5}},
    _2mm_define, _2mm_init, _2mm_reference,
    c_loops="""
  for (int i = 0; i < NI; i++)
    for (int j = 0; j < NJ; j++) {
      tmp[i][j] = 0.0;
      for (int k = 0; k < NK; ++k) tmp[i][j] += alpha * A[i][k] * B[k][j];
    }
  for (int i = 0; i < NI; i++)
    for (int j = 0; j < NL; j++) {
      D[i][j] *= beta;
      for (int k = 0; k < NJ; ++k) D[i][j] += tmp[i][k] * C[k][j];
    }""")


# ---- 3mm: G := (A*B)*(C*D) -------------------------------------------------------------------
def _3mm_define(n: Sizes) -> Program:
    NI, NJ, NK, NL, NM = n["NI"], n["NJ"], n["NK"], n["NL"], n["NM"]
    A = te.placeholder((NI, NK), F64, name="A")
    B = te.placeholder((NK, NJ), F64, name="B")
    C = te.placeholder((NJ, NM), F64, name="C")
    D = te.placeholder((NM, NL), F64, name="D")
    k1, k2, k3 = (te.reduce_axis((0, e), name="k") for e in (NK, NM, NJ))
    E = te.compute((NI, NJ), lambda i, j: te.sum(A[i, k1] * B[k1, j], axis=k1), name="E")
    F = te.compute((NJ, NL), lambda i, j: te.sum(C[i, k2] * D[k2, j], axis=k2), name="F")
    G = te.compute((NI, NL), lambda i, j: te.sum(E[i, k3] * F[k3, j], axis=k3), name="G")
    s = te.create_schedule(G.op)
    for t in (E, F, G):
        product_rows(s, t)
    return Program(s, [E, A, B, F, C, D, G], ["E", "A", "B", "F", "C", "D", "G"], ["E", "F", "G"])


def _3mm_init(n: Sizes) -> Arrays:
    ni, nj, nk, nl, nm = n["NI"], n["NJ"], n["NK"], n["NL"], n["NM"]
    a, b, c, d = np.ogrid[:ni, :nk], np.ogrid[:nk, :nj], np.ogrid[:nj, :nm], np.ogrid[:nm, :nl]
    return {"A": ((a[0] * a[1] + 1) % ni) / (5 * ni),
            "B": ((b[0] * (b[1] + 1) + 2) % nj) / (5 * nj),
            "C": (c[0] * (c[1] + 3) % nl) / (5 * nl),
            "D": ((d[0] * (d[1] + 2) + 2) % nk) / (5 * nk),
            "E": np.zeros((ni, nj)), "F": np.zeros((nj, nl)), "G": np.zeros((ni, nl))}


def _3mm_reference(n: Sizes, a: Arrays) -> None:
    def product(out: np.ndarray, x: np.ndarray, y: np.ndarray) -> None:
        for i in range(out.shape[0]):
            out[i, :] = 0.0
            for k in range(x.shape[1]):
                out[i, :] += x[i, k] * y[k, :]

    product(a["E"], a["A"], a["B"])
    product(a["F"], a["C"], a["D"])
    product(a["G"], a["E"], a["F"])


K3MM = Kernel(
    "3mm", "linear-algebra/kernels",
    {"MINI": {"NI": 16, "NJ": 18, "NK": 20, "NL": 22, "NM": 24},
     "ODD": {"NI": 7, "NJ": 11, "NK": 13, "NL": 5, "NM": 9}},
    _3mm_define, _3mm_init, _3mm_reference,
    c_loops="""
  for (int i = 0; i < NI; i++)
    for (int j = 0; j < NJ; j++) {
      E[i][j] = 0.0;
      for (int k = 0; k < NK; ++k) E[i][j] += A[i][k] * B[k][j];
    }
  for (int i = 0; i < NJ; i++)
    for (int j = 0; j < NL; j++) {
      F[i][j] = 0.0;
      for (int k = 0; k < NM; ++k) F[i][j] += C[i][k] * D[k][j];
    }
  for (int i = 0; i < NI; i++)
    for (int j = 0; j < NL; j++) {
      G[i][j] = 0.0;
      for (int k = 0; k < NJ; ++k) G[i][j] += E[i][k] * F[k][j];
    }""")


# ---- atax: y := A'*(A*x) ---------------------------------------------------------------------
def _atax_define(n: Sizes) -> Program:
    M, N = n["M"], n["N"]
    A = te.placeholder((M, N), F64, name="A")
    x = te.placeholder((N,), F64, name="x")
    j = te.reduce_axis((0, N), name="j")
    tmp = te.compute((M,), lambda i: te.sum(A[i, j] * x[j], axis=j), name="tmp")
    i = te.reduce_axis((0, M), name="i")
    # PolyBench adds row i's share into every y[j] after tmp[i]: the same sum over i, gathered
    y = te.compute((N,), lambda j: te.sum(A[i, j] * tmp[i], axis=i), name="y")
    s = te.create_schedule(y.op)
    return Program(s, [A, x, y, tmp], ["A", "x", "y", "tmp"], ["y", "tmp"])


def _atax_init(n: Sizes) -> Arrays:
    M, N = n["M"], n["N"]
    i, j = np.ogrid[:M, :N]
    return {"x": 1 + np.arange(N) / float(N), "A": ((i + j) % N) / (5 * M),
            "y": np.zeros(N), "tmp": np.zeros(M)}


def _atax_reference(n: Sizes, a: Arrays) -> None:
    A, x, y, tmp = a["A"], a["x"], a["y"], a["tmp"]
    y[:] = 0.0
    for i in range(n["M"]):
        tmp[i] = 0.0
        for j in range(n["N"]):
            tmp[i] = tmp[i] + A[i, j] * x[j]
        y[:] = y + A[i, :] * tmp[i]


ATAX = Kernel(
    "atax", "linear-algebra/kernels",
    {"MINI": {"M": 38, "N": 42}, "ODD": {"M": 13, "N": 11}},
    _atax_define, _atax_init, _atax_reference,
    c_loops="""
  for (int i = 0; i < N; i++) y[i] = 0;
  for (int i = 0; i < M; i++) {
    tmp[i] = 0.0;
    for (int j = 0; j < N; j++) tmp[i] = tmp[i] + A[i][j] * x[j];
    for (int j = 0; j < N; j++) y[j] = y[j] + A[i][j] * tmp[i];
  }""")


# ---- bicg: s := A'*r, q := A*p ---------------------------------------------------------------
def _bicg_define(n: Sizes) -> Program:
    M, N = n["M"], n["N"]
    A = te.placeholder((N, M), F64, name="A")
    p = te.placeholder((M,), F64, name="p")
    r = te.placeholder((N,), F64, name="r")
    i = te.reduce_axis((0, N), name="i")
    s_ = te.compute((M,), lambda j: te.sum(r[i] * A[i, j], axis=i), name="s")
    j = te.reduce_axis((0, M), name="j")
    q = te.compute((N,), lambda i: te.sum(A[i, j] * p[j], axis=j), name="q")
    sch = te.create_schedule([s_.op, q.op])
    return Program(sch, [A, s_, q, p, r], ["A", "s", "q", "p", "r"], ["s", "q"])


def _bicg_init(n: Sizes) -> Arrays:
    M, N = n["M"], n["N"]
    i, j = np.ogrid[:N, :M]
    return {"p": (np.arange(M) % M) / M, "r": (np.arange(N) % N) / N, "A": (i * (j + 1) % N) / N,
            "s": np.zeros(M), "q": np.zeros(N)}


def _bicg_reference(n: Sizes, a: Arrays) -> None:
    A, s, q = a["A"], a["s"], a["q"]
    s[:] = 0.0
    for i in range(n["N"]):
        s[:] = s + a["r"][i] * A[i, :]
        q[i] = 0.0
        for j in range(n["M"]):
            q[i] = q[i] + A[i, j] * a["p"][j]


BICG = Kernel(
    "bicg", "linear-algebra/kernels",
    {"MINI": {"M": 38, "N": 42}, "ODD": {"M": 11, "N": 13}},
    _bicg_define, _bicg_init, _bicg_reference,
    c_loops="""
  for (int i = 0; i < M; i++) s[i] = 0;
  for (int i = 0; i < N; i++) {
    q[i] = 0.0;
    for (int j = 0; j < M; j++) {
      s[j] = s[j] + r[i] * A[i][j];
      q[i] = q[i] + A[i][j] * p[j];
    }
  }""")


# ---- doitgen: A[r][q][:] := A[r][q][:] * C4, through one row sum[] ---------------------------
def _doitgen_define(n: Sizes) -> Program:
    NR, NQ, NP = n["NR"], n["NQ"], n["NP"]
    A = te.placeholder((NR, NQ, NP), F64, name="A")
    C4 = te.placeholder((NP, NP), F64, name="C4")
    sum_ = te.placeholder((NP,), F64, name="sum")
    s_ax = te.reduce_axis((0, NP), name="s")
    row = te.compute((NR, NQ, NP), lambda r, q, p: te.sum(A[r, q, s_ax] * C4[s_ax, p], axis=s_ax), name="row")
    out = te.compute((NR, NQ, NP), lambda r, q, p: row[r, q, p], name="doitgen")
    sch = te.create_schedule(out.op)
    # row (r, q) is made in PolyBench's one sum[] array, then copied back over A's row (r, q)
    # before the next row is made: the product computed inside the copy's loop q
    sch[row].compute_at(sch[out], out.op.axis[1])
    sch[row].store_in(sum_, lambda r, q, p: (p,))
    sch[out].store_in(A)
    return Program(sch, [A, sum_, C4], ["A", "sum", "C4"], ["A"])


def _doitgen_init(n: Sizes) -> Arrays:
    NR, NQ, NP = n["NR"], n["NQ"], n["NP"]
    i, j, k = np.ogrid[:NR, :NQ, :NP]
    ci, cj = np.ogrid[:NP, :NP]
    return {"A": ((i * j + k) % NP) / NP, "C4": (ci * cj % NP) / NP, "sum": np.zeros(NP)}


def _doitgen_reference(n: Sizes, a: Arrays) -> None:
    A, C4 = a["A"], a["C4"]
    for r in range(n["NR"]):
        for q in range(n["NQ"]):
            a["sum"][:] = A[r, q, :] @ C4
            A[r, q, :] = a["sum"]


DOITGEN = Kernel(
    "doitgen", "linear-algebra/kernels",
    {"MINI": {"NQ": 8, "NR": 10, "NP": 12}, "ODD": {"NQ": 5, "NR": 3, "NP": 7}},
    _doitgen_define, _doitgen_init, _doitgen_reference,
    c_loops="""
  for (int r = 0; r < NR; r++)
    for (int q = 0; q < NQ; q++) {
      for (int p = 0; p < NP; p++) {
        sum[p] = 0.0;
        for (int s = 0; s < NP; s++) sum[p] += A[r][q][s] * C4[s][p];
      }
      for (int p = 0; p < NP; p++) A[r][q][p] = sum[p];
    }""")


# ---- mvt: x1 := x1 + A*y_1, x2 := x2 + A'*y_2 -----------------------------------------------
def _mvt_define(n: Sizes) -> Program:
    N = n["N"]
    A = te.placeholder((N, N), F64, name="A")
    x1, x2, y1, y2 = (te.placeholder((N,), F64, name=nm) for nm in ("x1", "x2", "y_1", "y_2"))
    j1, j2 = te.reduce_axis((0, N), name="j"), te.reduce_axis((0, N), name="j")
    o1 = te.compute((N,), lambda i: te.sum(A[i, j1] * y1[j1], axis=j1, init=x1[i]), name="mvt1")
    o2 = te.compute((N,), lambda i: te.sum(A[j2, i] * y2[j2], axis=j2, init=x2[i]), name="mvt2")
    s = te.create_schedule([o1.op, o2.op])
    s[o1].store_in(x1)  # both vectors accumulate in place
    s[o2].store_in(x2)
    # eight elements' sums at a time, each still over j in order: inside the loop over j they
    # are eight independent chains (x1: rows of A side by side) or one vector (x2: a row of A
    # is eight consecutive elements' terms), which is how gcc vectorizes PolyBench's x2 loop
    for o, j in ((o1, j1), (o2, j2)):
        io, ii = s[o].split(o.op.axis[0], 8)
        s[o].reorder(io, j, ii)
        s[o].parallel(io)
        if o is o2:
            s[o].vectorize(ii)
        else:
            s[o].unroll(ii)
    return Program(s, [A, x1, x2, y1, y2], ["A", "x1", "x2", "y_1", "y_2"], ["x1", "x2"])


def _mvt_init(n: Sizes) -> Arrays:
    N = n["N"]
    i = np.arange(N)
    ii, jj = np.ogrid[:N, :N]
    return {"x1": (i % N) / N, "x2": ((i + 1) % N) / N, "y_1": ((i + 3) % N) / N, "y_2": ((i + 4) % N) / N,
            "A": (ii * jj % N) / N}


def _mvt_reference(n: Sizes, a: Arrays) -> None:
    A, x1, x2 = a["A"], a["x1"], a["x2"]
    for i in range(n["N"]):
        for j in range(n["N"]):
            x1[i] = x1[i] + A[i, j] * a["y_1"][j]
    for i in range(n["N"]):
        for j in range(n["N"]):
            x2[i] = x2[i] + A[j, i] * a["y_2"][j]


MVT = Kernel(
    "mvt", "linear-algebra/kernels",
    {"MINI": {"N": 40}, "ODD": {"N": 13}},
    _mvt_define, _mvt_init, _mvt_reference,
    c_loops="""
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) x1[i] = x1[i] + A[i][j] * y_1[j];
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) x2[i] = x2[i] + A[j][i] * y_2[j];""")

KERNELS = [K2MM, K3MM, ATAX, BICG, DOITGEN, MVT]
