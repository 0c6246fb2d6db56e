"""PolyBench's data-mining kernels: correlation, covariance."""

from __future__ import annotations

import math

import numpy as np

from tessel import te

from .common import Arrays, Kernel, Program, Sizes

F64 = "float64"


def _column_mean(data: te.Tensor, float_n: te.Var, N: int, M: int) -> te.Tensor:
    """PolyBench's mean[j]: the column sum, then divided in the same array."""

    def column_sum(h: te.Tensor, j: te.Var) -> te.Expr:
        i = te.reduce_axis((0, N), name="i")
        return te.sum(data[i, j], axis=i)

    return te.recurrence((M,), [te.define(column_sum), te.define(lambda h, j: h[j] / float_n)], name="mean")


# ---- correlation -----------------------------------------------------------------------------
def _correlation_define(n: Sizes) -> Program:
    M, N = n["M"], n["N"]
    data = te.placeholder((N, M), F64, name="data")
    float_n = te.var("float_n", F64)
    eps = te.const(0.1, F64)
    mean = _column_mean(data, float_n, N, M)

    def squares(h: te.Tensor, j: te.Var) -> te.Expr:
        i = te.reduce_axis((0, N), name="i")
        return te.sum((data[i, j] - mean[j]) * (data[i, j] - mean[j]), axis=i)

    # the four statements PolyBench runs on stddev[j], each a definition of the same array
    stddev = te.recurrence((M,), [
        te.define(squares),
        te.define(lambda h, j: h[j] / float_n),
        te.define(lambda h, j: te.sqrt(h[j])),
        te.define(lambda h, j: te.if_then_else(h[j] <= eps, te.const(1.0, F64), h[j])),
    ], name="stddev")
    # centre and reduce the columns of data, in data
    centred = te.recurrence(None, [
        te.define(lambda h, i, j: h[i, j] - mean[j]),
        te.define(lambda h, i, j: h[i, j] / (te.sqrt(float_n) * stddev[j])),
    ], name="centred", inplace=data)

    def upper(h: te.Tensor, i: te.Var, j: te.Var) -> te.Expr:
        k = te.reduce_axis((0, N), name="k")
        return te.sum(centred[k, i] * centred[k, j], axis=k)

    corr = te.recurrence((M, M), [
        te.define(lambda h, i, j: te.const(1.0, F64), where=lambda i, j: i == j),
        te.define(upper, where=lambda i, j: j > i),
        te.define(lambda h, i, j: h[j, i], where=lambda i, j: j < i),  # the mirror of the upper triangle
    ], name="corr")
    # stddev is listed first: centred's first definition does not read it, and every read of the
    # input data must come before centred overwrites it
    s = te.create_schedule([corr.op, stddev.op])  # stddev reads data before the centring overwrites it
    return Program(s, [float_n, data, corr, mean, stddev], ["float_n", "data", "corr", "mean", "stddev"],
                   ["data", "corr", "mean", "stddev"])


def _correlation_init(n: Sizes) -> Arrays:
    M, N = n["M"], n["N"]
    i, j = np.ogrid[:N, :M]
    return {"float_n": float(N), "data": (i * j) / M + i,
            "corr": np.zeros((M, M)), "mean": np.zeros(M), "stddev": np.zeros(M)}


def _correlation_reference(n: Sizes, a: Arrays) -> None:
    M, N, fn = n["M"], n["N"], a["float_n"]
    data, corr, mean, stddev = a["data"], a["corr"], a["mean"], a["stddev"]
    mean[:] = 0.0
    for i in range(N):
        mean += data[i, :]
    mean /= fn
    stddev[:] = 0.0
    for i in range(N):
        stddev += (data[i, :] - mean) * (data[i, :] - mean)
    stddev /= fn
    stddev[:] = np.sqrt(stddev)
    stddev[:] = np.where(stddev <= 0.1, 1.0, stddev)
    for i in range(N):
        data[i, :] -= mean
        data[i, :] /= math.sqrt(fn) * stddev
    for i in range(M - 1):
        corr[i, i] = 1.0
        for j in range(i + 1, M):
            corr[i, j] = 0.0
            for k in range(N):
                corr[i, j] += data[k, i] * data[k, j]
            corr[j, i] = corr[i, j]
    corr[M - 1, M - 1] = 1.0


CORRELATION = Kernel(
    "correlation", "datamining",
    {"MINI": {"M": 28, "N": 32}, "ODD": {"M": 7, "N": 11}},
    _correlation_define, _correlation_init, _correlation_reference,
    c_loops="""
  double eps = 0.1;
  for (int j = 0; j < M; j++) {
    mean[j] = 0.0;
    for (int i = 0; i < N; i++) mean[j] += data[i][j];
    mean[j] /= float_n;
  }
  for (int j = 0; j < M; j++) {
    stddev[j] = 0.0;
    for (int i = 0; i < N; i++) stddev[j] += (data[i][j] - mean[j]) * (data[i][j] - mean[j]);
    stddev[j] /= float_n;
    stddev[j] = sqrt(stddev[j]);
    stddev[j] = stddev[j] <= eps ? 1.0 : stddev[j];
  }
  for (int i = 0; i < N; i++)
    for (int j = 0; j < M; j++) {
      data[i][j] -= mean[j];
      data[i][j] /= sqrt(float_n) * stddev[j];
    }
  for (int i = 0; i < M - 1; i++) {
    corr[i][i] = 1.0;
    for (int j = i + 1; j < M; j++) {
      corr[i][j] = 0.0;
      for (int k = 0; k < N; k++) corr[i][j] += data[k][i] * data[k][j];
      corr[j][i] = corr[i][j];
    }
  }
  corr[M - 1][M - 1] = 1.0;""")


# ---- covariance ------------------------------------------------------------------------------
def _covariance_define(n: Sizes) -> Program:
    M, N = n["M"], n["N"]
    data = te.placeholder((N, M), F64, name="data")
    float_n = te.var("float_n", F64)
    mean = _column_mean(data, float_n, N, M)
    centred = te.compute((N, M), lambda i, j: data[i, j] - mean[j], name="centred")

    def upper(h: te.Tensor, i: te.Var, j: te.Var) -> te.Expr:
        k = te.reduce_axis((0, N), name="k")
        return te.sum(centred[k, i] * centred[k, j], axis=k)

    cov = te.recurrence((M, M), [
        te.define(upper, where=lambda i, j: j >= i),
        te.define(lambda h, i, j: h[i, j] / (float_n - 1.0), where=lambda i, j: j >= i),
        te.define(lambda h, i, j: h[j, i], where=lambda i, j: j < i),  # the mirror of the upper triangle
    ], name="cov")
    s = te.create_schedule(cov.op)
    s[centred].store_in(data)  # data -= mean, in data
    return Program(s, [float_n, data, cov, mean], ["float_n", "data", "cov", "mean"], ["data", "cov", "mean"])


def _covariance_init(n: Sizes) -> Arrays:
    M, N = n["M"], n["N"]
    i, j = np.ogrid[:N, :M]
    return {"float_n": float(N), "data": (i.astype(np.float64) * j) / M,
            "cov": np.zeros((M, M)), "mean": np.zeros(M)}


def _covariance_reference(n: Sizes, a: Arrays) -> None:
    M, N, fn = n["M"], n["N"], a["float_n"]
    data, cov, mean = a["data"], a["cov"], a["mean"]
    mean[:] = 0.0
    for i in range(N):
        mean += data[i, :]
    mean /= fn
    data -= mean
    for i in range(M):
        for j in range(i, M):
            cov[i, j] = 0.0
            for k in range(N):
                cov[i, j] += data[k, i] * data[k, j]
            cov[i, j] /= fn - 1.0
            cov[j, i] = cov[i, j]


COVARIANCE = Kernel(
    "covariance", "datamining",
    {"MINI": {"M": 28, "N": 32}, "ODD": {"M": 7, "N": 11}},
    _covariance_define, _covariance_init, _covariance_reference,
    c_loops="""
  for (int j = 0; j < M; j++) {
    mean[j] = 0.0;
    for (int i = 0; i < N; i++) mean[j] += data[i][j];
    mean[j] /= float_n;
  }
  for (int i = 0; i < N; i++)
    for (int j = 0; j < M; j++) data[i][j] -= mean[j];
  for (int i = 0; i < M; i++)
    for (int j = i; j < M; j++) {
      cov[i][j] = 0.0;
      for (int k = 0; k < N; k++) cov[i][j] += data[k][i] * data[k][j];
      cov[i][j] /= (float_n - 1.0);
      cov[j][i] = cov[i][j];
    }""")

KERNELS = [CORRELATION, COVARIANCE]
