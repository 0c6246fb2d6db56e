"""PolyBench's linear-algebra BLAS kernels: gemm, gemver, gesummv, symm, syr2k, syrk, trmm."""

from __future__ import annotations

import numpy as np

from tessel import te

from .common import Arrays, Kernel, Program, Sizes, product_rows

F64 = "float64"


# ---- gemm: C := alpha*A*B + beta*C ----------------------------------------------------------
def _gemm_define(n: Sizes) -> Program:
    A = te.placeholder((n["NI"], n["NK"]), F64, name="A")
    B = te.placeholder((n["NK"], n["NJ"]), F64, name="B")
    C = te.placeholder((n["NI"], n["NJ"]), F64, name="C")
    alpha, beta = te.var("alpha", F64), te.var("beta", F64)
    k = te.reduce_axis((0, n["NK"]), name="k")
    # PolyBench scales C by beta, then adds alpha*A[i][k]*B[k][j] over k: the sum's initial value
    out = te.compute((n["NI"], n["NJ"]), lambda i, j: te.sum(alpha * A[i, k] * B[k, j], axis=k, init=beta * C[i, j]),
                     name="gemm")
    s = te.create_schedule(out.op)
    s[out].store_in(C)  # in place, as PolyBench: no second C
    product_rows(s, out)
    return Program(s, [alpha, beta, A, B, C], ["alpha", "beta", "A", "B", "C"], ["C"])


def _gemm_init(n: Sizes) -> Arrays:
    ni, nj, nk = n["NI"], n["NJ"], n["NK"]
    i, j, k = np.ogrid[:ni, :nj], np.ogrid[:ni, :nk], np.ogrid[:nk, :nj]
    return {"alpha": 1.5, "beta": 1.2,
            "C": ((i[0] * i[1] + 1) % ni) / ni,
            "A": (j[0] * (j[1] + 1) % nk) / nk,
            "B": (k[0] * (k[1] + 2) % nj) / nj}


def _gemm_reference(n: Sizes, a: Arrays) -> None:
    C = a["C"]
    for i in range(n["NI"]):
        C[i, :] *= a["beta"]
        for k in range(n["NK"]):
            C[i, :] += a["alpha"] * a["A"][i, k] * a["B"][k, :]


GEMM = Kernel(
    "gemm", "linear-algebra/blas",
    {"MINI": {"NI": 20, "NJ": 25, "NK": 30}, "ODD": {"NI": 13, "NJ": 17, "NK": 11}},
    _gemm_define, _gemm_init, _gemm_reference,
    c_loops="""
  for (int i = 0; i < NI; i++) {
    for (int j = 0; j < NJ; j++) C[i][j] *= beta;
    for (int k = 0; k < NK; k++)
      for (int j = 0; j < NJ; j++) C[i][j] += alpha * A[i][k] * B[k][j];
  }""")



# ---- gemver: A := A + u1*v1' + u2*v2'; x := x + beta*A'*y + z; w := w + alpha*A*x ------------
def _gemver_define(n: Sizes) -> Program:
    N = n["N"]
    A = te.placeholder((N, N), F64, name="A")
    u1, v1, u2, v2, w, x, y, z = (te.placeholder((N,), F64, name=nm)
                                  for nm in ("u1", "v1", "u2", "v2", "w", "x", "y", "z"))
    alpha, beta = te.var("alpha", F64), te.var("beta", F64)
    Ahat = te.compute((N, N), lambda i, j: A[i, j] + u1[i] * v1[j] + u2[i] * v2[j], name="Ahat")

    def x_gather(h: te.Tensor, i: te.Var) -> te.Expr:
        j = te.reduce_axis((0, N), name="j")
        return te.sum(beta * Ahat[j, i] * y[j], axis=j, init=h[i])

    # PolyBench updates x twice (the product, then + z): two definitions of one recurrence, in x
    xr = te.recurrence(None, [te.define(x_gather), te.define(lambda h, i: h[i] + z[i])], name="xr", inplace=x)
    j = te.reduce_axis((0, N), name="j")
    wr = te.compute((N,), lambda i: te.sum(alpha * Ahat[i, j] * xr[j], axis=j, init=w[i]), name="wr")
    s = te.create_schedule(wr.op)
    s[Ahat].store_in(A)  # the rank-2 update overwrites A, as PolyBench's does
    s[wr].store_in(w)
    return Program(s, [alpha, beta, A, u1, v1, u2, v2, w, x, y, z],
                   ["alpha", "beta", "A", "u1", "v1", "u2", "v2", "w", "x", "y", "z"], ["A", "x", "w"])


def _gemver_init(n: Sizes) -> Arrays:
    N = n["N"]
    fn = float(N)
    i = np.arange(N, dtype=np.float64)
    ii, jj = np.ogrid[:N, :N]
    return {"alpha": 1.5, "beta": 1.2, "A": (ii * jj % N) / N,
            "u1": i.copy(), "u2": ((i + 1) / fn) / 2.0, "v1": ((i + 1) / fn) / 4.0, "v2": ((i + 1) / fn) / 6.0,
            "y": ((i + 1) / fn) / 8.0, "z": ((i + 1) / fn) / 9.0, "x": np.zeros(N), "w": np.zeros(N)}


def _gemver_reference(n: Sizes, a: Arrays) -> None:
    A, x, w = a["A"], a["x"], a["w"]
    A += np.outer(a["u1"], a["v1"]) + np.outer(a["u2"], a["v2"])
    for i in range(n["N"]):
        for j in range(n["N"]):
            x[i] += a["beta"] * A[j, i] * a["y"][j]
    x += a["z"]
    for i in range(n["N"]):
        for j in range(n["N"]):
            w[i] += a["alpha"] * A[i, j] * x[j]


GEMVER = Kernel(
    "gemver", "linear-algebra/blas",
    {"MINI": {"N": 40}, "ODD": {"N": 13}},
    _gemver_define, _gemver_init, _gemver_reference,
    c_loops="""
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) A[i][j] = A[i][j] + u1[i] * v1[j] + u2[i] * v2[j];
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) x[i] = x[i] + beta * A[j][i] * y[j];
  for (int i = 0; i < N; i++) x[i] = x[i] + z[i];
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) w[i] = w[i] + alpha * A[i][j] * x[j];""")


# ---- gesummv: y := alpha*A*x + beta*B*x ------------------------------------------------------
def _gesummv_define(n: Sizes) -> Program:
    N = n["N"]
    A = te.placeholder((N, N), F64, name="A")
    B = te.placeholder((N, N), F64, name="B")
    x = te.placeholder((N,), F64, name="x")
    alpha, beta = te.var("alpha", F64), te.var("beta", F64)
    j = te.reduce_axis((0, N), name="j")
    tmp = te.compute((N,), lambda i: te.sum(A[i, j] * x[j], axis=j), name="tmp")

    def y_sum(h: te.Tensor, i: te.Var) -> te.Expr:
        jb = te.reduce_axis((0, N), name="j")
        return te.sum(B[i, jb] * x[jb], axis=jb)

    # y first holds B*x, then is scaled and combined with tmp in the same array, as in PolyBench
    y = te.recurrence((N,), [te.define(y_sum), te.define(lambda h, i: alpha * tmp[i] + beta * h[i])], name="y")
    s = te.create_schedule(y.op)
    for t in (tmp, y.op.definitions[0]):  # eight rows' sums side by side: independent chains, each in order
        io, ii = s[t].split(t.op.axis[0], 8)
        s[t].reorder(io, t.op.reduce_axis[0], ii)
        s[t].unroll(ii)
    return Program(s, [alpha, beta, A, B, tmp, x, y], ["alpha", "beta", "A", "B", "tmp", "x", "y"], ["tmp", "y"])


def _gesummv_init(n: Sizes) -> Arrays:
    N = n["N"]
    i, j = np.ogrid[:N, :N]
    return {"alpha": 1.5, "beta": 1.2, "x": (np.arange(N) % N) / N,
            "A": ((i * j + 1) % N) / N, "B": ((i * j + 2) % N) / N, "tmp": np.zeros(N), "y": np.zeros(N)}


def _gesummv_reference(n: Sizes, a: Arrays) -> None:
    tmp, y = a["tmp"], a["y"]
    tmp[:] = a["A"] @ a["x"]
    y[:] = a["B"] @ a["x"]
    y[:] = a["alpha"] * tmp + a["beta"] * y


GESUMMV = Kernel(
    "gesummv", "linear-algebra/blas",
    {"MINI": {"N": 30}, "ODD": {"N": 11}},
    _gesummv_define, _gesummv_init, _gesummv_reference,
    c_loops="""
  for (int i = 0; i < N; i++) {
    tmp[i] = 0.0;
    y[i] = 0.0;
    for (int j = 0; j < N; j++) {
      tmp[i] = A[i][j] * x[j] + tmp[i];
      y[i] = B[i][j] * x[j] + y[i];
    }
    y[i] = alpha * tmp[i] + beta * y[i];
  }""")


# ---- symm: C := alpha*A*B + beta*C, A symmetric, only its lower triangle read ----------------
def _symm_define(n: Sizes) -> Program:
    M, N = n["M"], n["N"]
    C = te.placeholder((M, N), F64, name="C")
    A = te.placeholder((M, M), F64, name="A")
    B = te.placeholder((M, N), F64, name="B")
    alpha, beta = te.var("alpha", F64), te.var("beta", F64)

    def own_row(h: te.Tensor, i: te.Var, j: te.Var) -> te.Expr:
        # PolyBench's temp2 (rows k < i of the lower triangle) and the diagonal term
        k = te.reduce_axis((0, i), name="k")
        return te.sum(alpha * B[k, j] * A[i, k], axis=k, init=beta * h[i, j] + alpha * B[i, j] * A[i, i])

    def scattered(h: te.Tensor, i: te.Var, j: te.Var) -> te.Expr:
        # what PolyBench's later rows i' > i add into C[i][j] (A[i'][i] is the upper triangle by symmetry)
        k = te.reduce_axis((i + 1, M), name="k")
        return te.sum(alpha * B[k, j] * A[k, i], axis=k, init=h[i, j])

    out = te.recurrence(None, [te.define(own_row), te.define(scattered)], name="symm", inplace=C)
    s = te.create_schedule(out.op)
    return Program(s, [alpha, beta, C, A, B], ["alpha", "beta", "C", "A", "B"], ["C"])


def _symm_init(n: Sizes) -> Arrays:
    M, N = n["M"], n["N"]
    i, j = np.ogrid[:M, :N]
    ia, ja = np.ogrid[:M, :M]
    A = np.where(ja <= ia, ((ia + ja) % 100) / M, -999.0)  # the upper triangle is never read
    return {"alpha": 1.5, "beta": 1.2, "C": ((i + j) % 100) / M, "B": ((N + i - j) % 100) / M, "A": A}


def _symm_reference(n: Sizes, a: Arrays) -> None:
    C, A, B, alpha, beta = a["C"], a["A"], a["B"], a["alpha"], a["beta"]
    for i in range(n["M"]):
        for j in range(n["N"]):
            temp2 = 0.0
            for k in range(i):
                C[k, j] += alpha * B[i, j] * A[i, k]
                temp2 += B[k, j] * A[i, k]
            C[i, j] = beta * C[i, j] + alpha * B[i, j] * A[i, i] + alpha * temp2


SYMM = Kernel(
    "symm", "linear-algebra/blas",
    {"MINI": {"M": 20, "N": 30}, "ODD": {"M": 11, "N": 13}},
    _symm_define, _symm_init, _symm_reference,
    c_loops="""
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      double temp2 = 0;
      for (int k = 0; k < i; k++) {
        C[k][j] += alpha * B[i][j] * A[i][k];
        temp2 += B[k][j] * A[i][k];
      }
      C[i][j] = beta * C[i][j] + alpha * B[i][j] * A[i][i] + alpha * temp2;
    }""")


# ---- syr2k: C := alpha*A*B' + alpha*B*A' + beta*C on the lower triangle ----------------------
def triangle_rows(s, t, cols: int = 16) -> None:
    """A triangle of row-by-row dot products (syrk, syr2k): rows in parallel, and in a row
    ``cols`` elements' sums side by side inside the loop over k, each still in order: as many
    independent chains (one sum alone waits on its previous addition every step)."""
    i, j = t.op.axis
    jo, ji = s[t].split(j, cols)
    s[t].reorder(i, jo, t.op.reduce_axis[0], ji)
    s[t].unroll(ji)
    s[t].parallel(i)  # rows of the triangle are independent


def _syr2k_define(n: Sizes) -> Program:
    N, M = n["N"], n["M"]
    C = te.placeholder((N, N), F64, name="C")
    A = te.placeholder((N, M), F64, name="A")
    B = te.placeholder((N, M), F64, name="B")
    alpha, beta = te.var("alpha", F64), te.var("beta", F64)
    k = te.reduce_axis((0, M), name="k")
    # the lower triangle only (j <= i); the strict upper one keeps what C held, as PolyBench leaves it
    out = te.compute((N, N), lambda i, j: te.sum(A[j, k] * alpha * B[i, k] + B[j, k] * alpha * A[i, k], axis=k,
                                                 init=beta * C[i, j]),
                     name="syr2k", where=lambda i, j: j <= i)
    s = te.create_schedule(out.op)
    s[out].store_in(C)
    triangle_rows(s, out)
    return Program(s, [alpha, beta, C, A, B], ["alpha", "beta", "C", "A", "B"], ["C"])


def _syr2k_init(n: Sizes) -> Arrays:
    N, M = n["N"], n["M"]
    i, j = np.ogrid[:N, :M]
    ic, jc = np.ogrid[:N, :N]
    return {"alpha": 1.5, "beta": 1.2, "A": ((i * j + 1) % N) / N, "B": ((i * j + 2) % M) / M,
            "C": ((ic * jc + 3) % N) / M}


def _syr2k_reference(n: Sizes, a: Arrays) -> None:
    C, A, B, alpha = a["C"], a["A"], a["B"], a["alpha"]
    for i in range(n["N"]):
        C[i, :i + 1] *= a["beta"]
        for k in range(n["M"]):
            C[i, :i + 1] += A[:i + 1, k] * alpha * B[i, k] + B[:i + 1, k] * alpha * A[i, k]


SYR2K = Kernel(
    "syr2k", "linear-algebra/blas",
    {"MINI": {"M": 20, "N": 30}, "ODD": {"M": 7, "N": 13}},
    _syr2k_define, _syr2k_init, _syr2k_reference,
    c_loops="""
  for (int i = 0; i < N; i++) {
    for (int j = 0; j <= i; j++) C[i][j] *= beta;
    for (int k = 0; k < M; k++)
      for (int j = 0; j <= i; j++) C[i][j] += A[j][k] * alpha * B[i][k] + B[j][k] * alpha * A[i][k];
  }""")


# ---- syrk: C := alpha*A*A' + beta*C on the lower triangle ------------------------------------
def _syrk_define(n: Sizes) -> Program:
    N, M = n["N"], n["M"]
    C = te.placeholder((N, N), F64, name="C")
    A = te.placeholder((N, M), F64, name="A")
    alpha, beta = te.var("alpha", F64), te.var("beta", F64)
    k = te.reduce_axis((0, M), name="k")
    out = te.compute((N, N), lambda i, j: te.sum(alpha * A[i, k] * A[j, k], axis=k, init=beta * C[i, j]),
                     name="syrk", where=lambda i, j: j <= i)
    s = te.create_schedule(out.op)
    s[out].store_in(C)
    triangle_rows(s, out)
    return Program(s, [alpha, beta, C, A], ["alpha", "beta", "C", "A"], ["C"])


def _syrk_init(n: Sizes) -> Arrays:
    N, M = n["N"], n["M"]
    i, j = np.ogrid[:N, :M]
    ic, jc = np.ogrid[:N, :N]
    return {"alpha": 1.5, "beta": 1.2, "A": ((i * j + 1) % N) / N, "C": ((ic * jc + 2) % M) / M}


def _syrk_reference(n: Sizes, a: Arrays) -> None:
    C, A, alpha = a["C"], a["A"], a["alpha"]
    for i in range(n["N"]):
        C[i, :i + 1] *= a["beta"]
        for k in range(n["M"]):
            C[i, :i + 1] += alpha * A[i, k] * A[:i + 1, k]


SYRK = Kernel(
    "syrk", "linear-algebra/blas",
    {"MINI": {"M": 20, "N": 30}, "ODD": {"M": 13, "N": 11}},
    _syrk_define, _syrk_init, _syrk_reference,
    c_loops="""
  for (int i = 0; i < N; i++) {
    for (int j = 0; j <= i; j++) C[i][j] *= beta;
    for (int k = 0; k < M; k++)
      for (int j = 0; j <= i; j++) C[i][j] += alpha * A[i][k] * A[j][k];
  }""")


# ---- trmm: B := alpha*A'*B, A unit lower triangular ------------------------------------------
def _trmm_define(n: Sizes) -> Program:
    M, N = n["M"], n["N"]
    A = te.placeholder((M, M), F64, name="A")
    B = te.placeholder((M, N), F64, name="B")
    alpha = te.var("alpha", F64)

    def acc(i: te.Var, j: te.Var) -> te.Expr:
        # rows k > i of B: PolyBench's row i runs before them, so they are still the input's
        k = te.reduce_axis((i + 1, M), name="k")
        return te.sum(A[k, i] * B[k, j], axis=k, init=B[i, j])

    S = te.compute((M, N), acc, name="acc")
    out = te.compute((M, N), lambda i, j: alpha * S[i, j], name="trmm")
    s = te.create_schedule(out.op)
    s[S].compute_at(s[out], out.op.axis[1])  # B[i][j]'s sum, then its scaling, as PolyBench's loop
    s[S].store_in(te.placeholder((1,), F64, name="acc1"), lambda i, j: (0,))  # one element at a time
    s[out].store_in(B)
    return Program(s, [alpha, A, B], ["alpha", "A", "B"], ["B"])


def _trmm_init(n: Sizes) -> Arrays:
    M, N = n["M"], n["N"]
    ia, ja = np.ogrid[:M, :M]
    A = np.where(ja < ia, ((ia + ja) % M) / M, 0.0)  # PolyBench leaves the upper triangle unset
    np.fill_diagonal(A, 1.0)
    i, j = np.ogrid[:M, :N]
    return {"alpha": 1.5, "A": A, "B": ((N + (i - j)) % N) / N}


def _trmm_reference(n: Sizes, a: Arrays) -> None:
    A, B = a["A"], a["B"]
    for i in range(n["M"]):
        for j in range(n["N"]):
            for k in range(i + 1, n["M"]):
                B[i, j] += A[k, i] * B[k, j]
            B[i, j] = a["alpha"] * B[i, j]


TRMM = Kernel(
    "trmm", "linear-algebra/blas",
    {"MINI": {"M": 20, "N": 30}, "ODD": {"M": 13, "N": 7}},
    _trmm_define, _trmm_init, _trmm_reference,
    c_loops="""
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      for (int k = i + 1; k < M; k++) B[i][j] += A[k][i] * B[k][j];
      B[i][j] = alpha * B[i][j];
    }""")

KERNELS = [GEMM, GEMVER, GESUMMV, SYMM, SYR2K, SYRK, TRMM]
