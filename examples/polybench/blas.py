"""PolyBench's linear-algebra BLAS kernels: gemm, gemver, gesummv, symm, syr2k, syrk, trmm."""

from __future__ import annotations

import numpy as np

from tessel import te

from .common import Arrays, Kernel, Program, Sizes

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

KERNELS = [GEMM]
