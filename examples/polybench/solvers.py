"""PolyBench's linear-algebra solvers: cholesky, durbin, gramschmidt, lu, ludcmp, trisolv.

Each factorization or substitution overwrites its arrays as it goes, and later points read the
values earlier ones left: a ``te.recurrence`` written into PolyBench's array (``inplace=``), its
loop directions found from the reads (back substitution runs backwards by itself). A reduction
must be a compute's whole value, so a division PolyBench applies after its sum is distributed
over the sum's terms and its initial value (the same quotient, to rounding). durbin's
beta, alpha and y, and gramschmidt's A, R and Q, are the states of one ``te.scan`` that
advance together, each state in PolyBench's array, each step over the one before
(``store_in(y, output=ys)``).
"""

from __future__ import annotations

import numpy as np

from tessel import te

from .common import Arrays, Kernel, Program, Sizes

F64 = "float64"


def _spd(n: int) -> np.ndarray:
    """PolyBench's matrix for cholesky, lu and ludcmp: a lower triangle of ``1 - j/n`` with a unit
    diagonal, times its transpose (positive semi-definite)."""
    j = np.arange(n)
    low = np.tril(np.broadcast_to(-(j % n) / n + 1.0, (n, n)))  # C's -j % n is -(j % n)
    np.fill_diagonal(low, 1.0)
    return low @ low.T


# ---- cholesky: A = L L^T, L over A's lower triangle ----------------------------------------
def _cholesky_define(n: Sizes) -> Program:
    N = n["N"]
    A = te.placeholder((N, N), F64, name="A")

    def below(h: te.Tensor, i: object, j: object) -> object:
        # A[i][j] -= A[i][k] * A[j][k] for k < j, then / A[j][j] off the diagonal, sqrt on it
        k = te.reduce_axis((0, j), name="k")
        s = te.sum(-h[i, k] * h[j, k], axis=k, init=h[i, j])
        return te.if_then_else(j < i, s / h[j, j], te.sqrt(s))

    h = te.recurrence(None, [te.define(below, where=lambda i, j: j <= i)], name="cholesky", inplace=A)
    return Program(te.create_schedule(h.op), [A], ["A"], ["A"])


def _cholesky_init(n: Sizes) -> Arrays:
    return {"A": _spd(n["N"])}


def _cholesky_reference(n: Sizes, a: Arrays) -> None:
    A = a["A"]
    for i in range(n["N"]):
        for j in range(i):
            A[i, j] = (A[i, j] - A[i, :j] @ A[j, :j]) / A[j, j]
        A[i, i] = np.sqrt(A[i, i] - A[i, :i] @ A[i, :i])


CHOLESKY = Kernel(
    "cholesky", "linear-algebra/solvers",
    {"MINI": {"N": 40}, "ODD": {"N": 23}},
    _cholesky_define, _cholesky_init, _cholesky_reference,
    c_loops="""
  for (int i = 0; i < N; i++) {
    for (int j = 0; j < i; j++) {
      for (int k = 0; k < j; k++) A[i][j] -= A[i][k] * A[j][k];
      A[i][j] /= A[j][j];
    }
    for (int k = 0; k < i; k++) A[i][i] -= A[i][k] * A[i][k];
    A[i][i] = sqrt(A[i][i]);
  }""")


# ---- lu: A = L U in place, L's unit diagonal implied -----------------------------------------
def _lu_body(h: te.Tensor, i: object, j: object) -> object:
    """A[i][j] -= A[i][k] * A[k][j] for k < min(i, j), then / A[j][j] below the diagonal: one
    definition, as rows below read both triangles of the rows above as PolyBench left them."""
    k = te.reduce_axis((0, te.min(i, j)), name="k")
    s = te.sum(-h[i, k] * h[k, j], axis=k, init=h[i, j])
    return te.if_then_else(j < i, s / h[j, j], s)


def _lu_define(n: Sizes) -> Program:
    A = te.placeholder((n["N"], n["N"]), F64, name="A")
    h = te.recurrence(None, [te.define(_lu_body)], name="lu", inplace=A)
    return Program(te.create_schedule(h.op), [A], ["A"], ["A"])


def _lu_init(n: Sizes) -> Arrays:
    return {"A": _spd(n["N"])}


def _lu_factor(N: int, A: np.ndarray) -> None:
    for i in range(N):
        for j in range(i):
            A[i, j] = (A[i, j] - A[i, :j] @ A[:j, j]) / A[j, j]
        A[i, i:] -= A[i, :i] @ A[:i, i:]


def _lu_reference(n: Sizes, a: Arrays) -> None:
    _lu_factor(n["N"], a["A"])


_LU_C = """
  for (int i = 0; i < N; i++) {
    for (int j = 0; j < i; j++) {
      for (int k = 0; k < j; k++) A[i][j] -= A[i][k] * A[k][j];
      A[i][j] /= A[j][j];
    }
    for (int j = i; j < N; j++)
      for (int k = 0; k < i; k++) A[i][j] -= A[i][k] * A[k][j];
  }"""

LU = Kernel(
    "lu", "linear-algebra/solvers",
    {"MINI": {"N": 40}, "ODD": {"N": 23}},
    _lu_define, _lu_init, _lu_reference, c_loops=_LU_C)


# ---- trisolv: L x = b, forward substitution ------------------------------------------------
def _trisolv_define(n: Sizes) -> Program:
    N = n["N"]
    L = te.placeholder((N, N), F64, name="L")
    x = te.placeholder((N,), F64, name="x")
    b = te.placeholder((N,), F64, name="b")

    def row(h: te.Tensor, i: object) -> object:
        j = te.reduce_axis((0, i), name="j")
        return te.sum(-L[i, j] * h[j], axis=j, init=b[i]) / L[i, i]

    xs = te.recurrence(None, [te.define(row)], name="trisolv", inplace=x)
    return Program(te.create_schedule(xs.op), [L, x, b], ["L", "x", "b"], ["x"])


def _trisolv_init(n: Sizes) -> Arrays:
    N = n["N"]
    i, j = np.ogrid[:N, :N]
    return {"L": np.where(j <= i, (i + N - j + 1) * 2.0 / N, 0.0),
            "x": np.full(N, -999.0), "b": np.arange(N, dtype=F64)}


def _trisolv_reference(n: Sizes, a: Arrays) -> None:
    L, x, b = a["L"], a["x"], a["b"]
    for i in range(n["N"]):
        x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]


TRISOLV = Kernel(
    "trisolv", "linear-algebra/solvers",
    {"MINI": {"N": 40}, "ODD": {"N": 29}},
    _trisolv_define, _trisolv_init, _trisolv_reference,
    c_loops="""
  for (int i = 0; i < N; i++) {
    x[i] = b[i];
    for (int j = 0; j < i; j++) x[i] -= L[i][j] * x[j];
    x[i] = x[i] / L[i][i];
  }""")


# ---- ludcmp: LU in place, then L y = b forwards and U x = y backwards ------------------------
def _ludcmp_define(n: Sizes) -> Program:
    N = n["N"]
    A = te.placeholder((N, N), F64, name="A")
    b = te.placeholder((N,), F64, name="b")
    x = te.placeholder((N,), F64, name="x")
    y = te.placeholder((N,), F64, name="y")
    lu = te.recurrence(None, [te.define(_lu_body)], name="lu", inplace=A)

    def forward(h: te.Tensor, i: object) -> object:
        j = te.reduce_axis((0, i), name="j")
        return te.sum(-lu[i, j] * h[j], axis=j, init=b[i])

    ys = te.recurrence(None, [te.define(forward)], name="forward", inplace=y)

    def backward(h: te.Tensor, i: object) -> object:
        # x[j] for j > i: the loop over i runs backwards, as PolyBench's
        j = te.reduce_axis((i + 1, N), name="j")
        return te.sum(-lu[i, j] * h[j], axis=j, init=ys[i]) / lu[i, i]

    xs = te.recurrence(None, [te.define(backward)], name="backward", inplace=x)
    return Program(te.create_schedule(xs.op), [A, b, x, y], ["A", "b", "x", "y"], ["A", "x", "y"])


def _ludcmp_init(n: Sizes) -> Arrays:
    N = n["N"]
    return {"A": _spd(N), "b": (np.arange(N) + 1) / float(N) / 2.0 + 4, "x": np.zeros(N), "y": np.zeros(N)}


def _ludcmp_reference(n: Sizes, a: Arrays) -> None:
    N, A, b, x, y = n["N"], a["A"], a["b"], a["x"], a["y"]
    _lu_factor(N, A)
    for i in range(N):
        y[i] = b[i] - A[i, :i] @ y[:i]
    for i in range(N - 1, -1, -1):
        x[i] = (y[i] - A[i, i + 1:] @ x[i + 1:]) / A[i, i]


LUDCMP = Kernel(
    "ludcmp", "linear-algebra/solvers",
    {"MINI": {"N": 40}, "ODD": {"N": 23}},
    _ludcmp_define, _ludcmp_init, _ludcmp_reference,
    c_loops=_LU_C + """
  for (int i = 0; i < N; i++) {
    double w = b[i];
    for (int j = 0; j < i; j++) w -= A[i][j] * y[j];
    y[i] = w;
  }
  for (int i = N - 1; i >= 0; i--) {
    double w = y[i];
    for (int j = i + 1; j < N; j++) w -= A[i][j] * x[j];
    x[i] = w / A[i][i];
  }""")



# ---- durbin: Levinson-Durbin, y solving a Toeplitz system step by step ----------------------
def _durbin_define(n: Sizes) -> Program:
    N = n["N"]
    r = te.placeholder((N,), F64, name="r")
    y = te.placeholder((N,), F64, name="y")
    zero = te.const(0.0, F64)
    # three states advancing together, step k: beta, alpha and y; alpha's sum reads y's step
    # before, z (PolyBench's) too, and y's new step is z and alpha. y lives in the caller's y,
    # each step over the one before (every read of the step before runs first)
    sb = te.placeholder((N,), F64, name="beta")
    sa = te.placeholder((N,), F64, name="alpha")
    sy = te.placeholder((N, N), F64, name="ys")
    b0 = te.compute((1,), lambda _: te.const(1.0, F64), name="beta0")
    a0 = te.compute((1,), lambda _: -r[0], name="alpha0")
    y0 = te.compute((1, N), lambda _, i: te.if_then_else(i == 0, -r[0], zero), name="y0")
    beta = te.compute((N,), lambda k: (1.0 - sa[k - 1] * sa[k - 1]) * sb[k - 1], name="beta_k")
    i = te.reduce_axis((0, N), name="i")
    alpha = te.compute((N,), lambda k: te.sum(r[k - i - 1] * sy[k - 1, i], axis=i, where=i < k, init=r[k]),
                       name="sum")
    alpha_k = te.compute((N,), lambda k: -alpha[k] / beta[k], name="alpha_k")
    z = te.compute((N, N), lambda k, j: te.if_then_else(j < k, sy[k - 1, j] + alpha_k[k] * sy[k - 1, k - j - 1], zero),
                   name="z")
    y_k = te.compute((N, N), lambda k, j: te.if_then_else(j < k, z[k, j], te.if_then_else(j == k, alpha_k[k], zero)),
                     name="y_k")
    _, _, ys = te.scan([b0, a0, y0], [beta, alpha_k, y_k], [sb, sa, sy], name="durbin")
    s = te.create_schedule(ys.op)
    s[ys.op].storage_fold(ys.op.scan_axis, 2)  # beta and alpha: two steps
    s[ys.op].store_in(y, output=ys)
    return Program(s, [r, y], ["r", "y"], ["y"])


def _durbin_init(n: Sizes) -> Arrays:
    N = n["N"]
    return {"r": (N + 1 - np.arange(N)).astype(F64), "y": np.zeros(N)}


def _durbin_reference(n: Sizes, a: Arrays) -> None:
    r, y = a["r"], a["y"]
    y[0] = -r[0]
    beta, alpha = 1.0, -r[0]
    for k in range(1, n["N"]):
        beta = (1 - alpha * alpha) * beta
        alpha = -(r[k] + r[k - 1::-1] @ y[:k]) / beta
        y[:k] = y[:k] + alpha * y[k - 1::-1]
        y[k] = alpha


DURBIN = Kernel(
    "durbin", "linear-algebra/solvers",
    {"MINI": {"N": 40}, "ODD": {"N": 31}},
    _durbin_define, _durbin_init, _durbin_reference,
    notes="beta, alpha and y are three states of one scan; y lives in the caller's y, each step over the "
          "one before (store_in(y, output=ys): every read of the step before runs first), z is a row of "
          "each step, as PolyBench's. Written with y's two steps kept it needed 2 N more; as one "
          "recurrence's row per step, 2 (N + 2), and ran 1.7x slower.",
    c_loops="""
  double z[N], alpha, beta, sum;
  y[0] = -r[0];
  beta = 1.0;
  alpha = -r[0];
  for (int k = 1; k < N; k++) {
    beta = (1 - alpha * alpha) * beta;
    sum = 0.0;
    for (int i = 0; i < k; i++) sum += r[k - i - 1] * y[i];
    alpha = -(r[k] + sum) / beta;
    for (int i = 0; i < k; i++) z[i] = y[i] + alpha * y[k - i - 1];
    for (int i = 0; i < k; i++) y[i] = z[i];
    y[k] = alpha;
  }""")



# ---- gramschmidt: A = Q R, modified Gram-Schmidt, A's later columns updated in place -----------
def _gramschmidt_define(n: Sizes) -> Program:
    M, N = n["M"], n["N"]
    A = te.placeholder((M, N), F64, name="A")
    R = te.placeholder((N, N), F64, name="R")
    Q = te.placeholder((M, N), F64, name="Q")
    # a scan over k (step t = k + 1) of three states, A, R and Q, each in the caller's array, each
    # step over the one before: step k writes Q's column k, R's row k and A's columns after k
    As, Rs, Qs = (te.placeholder((N + 1, *x.shape), F64, name=f"{x.name}s") for x in (A, R, Q))
    first = [te.compute((1, *x.shape), _caller_values(x), name=f"{x.name}0") for x in (A, R, Q)]
    i = te.reduce_axis((0, M), name="i")
    nrm = te.compute((N + 1,), lambda t: te.sum(As[t - 1, i, t - 1] * As[t - 1, i, t - 1], axis=i), name="nrm")
    q_k = te.compute((N + 1, M, N), lambda t, a, c: te.if_then_else(
        c == t - 1, As[t - 1, a, c] / te.sqrt(nrm[t]), Qs[t - 1, a, c]), name="Q_k")
    p = te.reduce_axis((0, M), name="i")
    r_k = te.compute((N + 1, N, N), lambda t, r, j: te.sum(
        q_k[t, p, t - 1] * As[t - 1, p, j], axis=p, where=te.all(r == t - 1, j > r),
        init=te.if_then_else(r == t - 1, te.if_then_else(j == r, te.sqrt(nrm[t]), te.if_then_else(
            j > r, te.const(0.0, F64), Rs[t - 1, r, j])), Rs[t - 1, r, j])), name="R_k")
    a_k = te.compute((N + 1, M, N), lambda t, a, j: te.if_then_else(
        j > t - 1, As[t - 1, a, j] - q_k[t, a, t - 1] * r_k[t, t - 1, j], As[t - 1, a, j]), name="A_k")
    states = te.scan(first, [a_k, r_k, q_k], [As, Rs, Qs], name="gramschmidt")
    s = te.create_schedule(states[0].op)
    for state, home in zip(states, (A, R, Q)):
        s[states[0].op].store_in(home, output=state)
    return Program(s, [A, R, Q], ["A", "R", "Q"], ["A", "R", "Q"])


def _caller_values(x: te.Tensor):
    """A state's first step: the caller's array as it is."""
    return lambda t, a, b: x[a, b]


def _gramschmidt_init(n: Sizes) -> Arrays:
    M, N = n["M"], n["N"]
    i, j = np.ogrid[:M, :N]
    return {"A": ((i * j) % M) / M * 100.0 + 10.0, "R": np.zeros((N, N)), "Q": np.zeros((M, N))}


def _gramschmidt_reference(n: Sizes, a: Arrays) -> None:
    M, N, A, R, Q = n["M"], n["N"], a["A"], a["R"], a["Q"]
    # sums in PolyBench's order, element by element: NumPy's dot would round differently, and a
    # column of nearly zero norm turns that into different values (or 0/0)
    for k in range(N):
        nrm = 0.0
        for i in range(M):
            nrm += A[i, k] * A[i, k]
        R[k, k] = np.sqrt(nrm)
        Q[:, k] = A[:, k] / R[k, k]
        for j in range(k + 1, N):
            acc = 0.0
            for i in range(M):
                acc += Q[i, k] * A[i, j]
            R[k, j] = acc
            A[:, j] = A[:, j] - Q[:, k] * acc


GRAMSCHMIDT = Kernel(
    "gramschmidt", "linear-algebra/solvers",
    {"FULL": {"M": 31, "N": 17}, "ODD": {"M": 23, "N": 11}},
    _gramschmidt_define, _gramschmidt_init, _gramschmidt_reference,
    c_loops="""
  for (int k = 0; k < N; k++) {
    double nrm = 0.0;
    for (int i = 0; i < M; i++) nrm += A[i][k] * A[i][k];
    R[k][k] = sqrt(nrm);
    for (int i = 0; i < M; i++) Q[i][k] = A[i][k] / R[k][k];
    for (int j = k + 1; j < N; j++) {
      R[k][j] = 0.0;
      for (int i = 0; i < M; i++) R[k][j] += Q[i][k] * A[i][j];
      for (int i = 0; i < M; i++) A[i][j] = A[i][j] - Q[i][k] * R[k][j];
    }
  }""",
    notes="A, R and Q are three states of one scan over k, each in the caller's array, each step over the "
          "one before (store_in(A, output=...)): the lowered loops are PolyBench's. "
          "PolyBench's MINI (M = 20 < N = 30) is rank-deficient: its columns past the rank are "
          "rounding noise, which any change of rounding (gcc's multiply-add under -march=native) "
          "changes, so it is checked at two full-rank sizes instead.")

KERNELS = [CHOLESKY, DURBIN, GRAMSCHMIDT, LU, LUDCMP, TRISOLV]
