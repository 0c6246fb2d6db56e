"""PolyBench's stencils: adi, fdtd-2d, heat-3d, jacobi-1d, jacobi-2d, seidel-2d.

Each is a recurrence over its time steps (``te.recurrence`` over ``(t, i, j, ...)``): the
algorithm keeps every step, the schedule decides how many of them the storage holds. PolyBench
keeps none: two arrays taking turns (jacobi, heat-3d: ``store_in([A, B], ...)``), one array
updated in place (seidel-2d), or a few fields each updated in place (fdtd-2d, adi). Where tessel
does not map the recurrence onto those arrays directly (see each Kernel's ``notes``), the
recurrence is folded onto the fewest steps it needs and its last steps are copied into the
caller's arrays.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tessel import te

from .common import Arrays, Kernel, Program, Sizes

F64 = "float64"


def _edge(shape: tuple[int, ...], idx: tuple) -> object:
    """True on the arrays' border, which PolyBench's loops never write."""
    return te.any(*[c == 0 for c in idx], *[c == n - 1 for c, n in zip(idx, shape)])


def _arity(n: int, fn: Callable) -> Callable:
    """``fn(*args)`` as a function of exactly ``n`` named arguments: te reads the number of
    indices off a function's signature, and the ping-pong serves ranks 1 to 3 alike."""
    return {1: lambda a: fn(a), 2: lambda a, b: fn(a, b), 3: lambda a, b, c: fn(a, b, c),
            4: lambda a, b, c, d: fn(a, b, c, d), 5: lambda a, b, c, d, e: fn(a, b, c, d, e)}[n]


def _ping_pong(A: te.Tensor, B: te.Tensor, steps: int, stencil: Callable, name: str) -> Program:
    """PolyBench's ``B = f(A); A = f(B)``, ``steps`` times, as one recurrence over the half
    steps: half step ``s`` is B's value after step ``(s + 1) // 2`` when ``s`` is odd, A's after
    step ``s // 2`` when even; the border keeps its values (B's own at step 1, else those of two
    half steps before). Each half step reads only the one before, so the steps live in the
    caller's two arrays taking turns, each half step in the array of its parity, as PolyBench
    keeps them (``store_in([A, B], ...)``: the step loop then runs two half steps at a time,
    each naming its arrays, which is PolyBench's loop nest)."""
    shape = tuple(int(x) for x in A.shape)
    r = len(shape)

    def half(h, s, *idx):
        border = te.if_then_else(s == 1, B[idx], h[(s - 2, *idx)])
        return te.if_then_else(_edge(shape, idx), border, stencil(lambda *p: h[(s - 1, *p)], *idx))

    h = te.recurrence((2 * steps + 1, *shape), [
        te.define(_arity(r + 2, lambda h, s, *idx: A[idx]), where=_arity(r + 1, lambda s, *idx: s == 0)),
        te.define(_arity(r + 2, half), where=_arity(r + 1, lambda s, *idx: s >= 1)),
    ], name=name)
    s = te.create_schedule(h.op)
    s[h].store_in([A, B], _arity(r + 1, lambda step, *idx: (step % 2, *idx)))
    if r > 1:  # a 1-D step is too short to share among threads
        s[h].parallel(h.op.axis[1])
    s[h].vectorize(h.op.axis[-1])  # the interior as vector code (the border's iterations run apart: passes/peel.py)
    return Program(s, [A, B], ["A", "B"], ["A", "B"])


# ---- jacobi-1d ------------------------------------------------------------------------------
def _jacobi1d_define(n: Sizes) -> Program:
    A = te.placeholder((n["N"],), F64, name="A")
    B = te.placeholder((n["N"],), F64, name="B")
    return _ping_pong(A, B, n["TSTEPS"], lambda x, i: 0.33333 * (x(i - 1) + x(i) + x(i + 1)), "jacobi1d")


def _jacobi1d_init(n: Sizes) -> Arrays:
    i = np.arange(n["N"], dtype=np.float64)
    return {"A": (i + 2) / n["N"], "B": (i + 3) / n["N"]}


def _jacobi1d_reference(n: Sizes, a: Arrays) -> None:
    A, B = a["A"], a["B"]
    for _ in range(n["TSTEPS"]):
        B[1:-1] = 0.33333 * (A[:-2] + A[1:-1] + A[2:])
        A[1:-1] = 0.33333 * (B[:-2] + B[1:-1] + B[2:])


JACOBI_1D = Kernel(
    "jacobi-1d", "stencils",
    {"MINI": {"TSTEPS": 20, "N": 30}, "ODD": {"TSTEPS": 7, "N": 13}},
    _jacobi1d_define, _jacobi1d_init, _jacobi1d_reference,
    c_loops="""
  for (int t = 0; t < TSTEPS; t++) {
    for (int i = 1; i < N - 1; i++) B[i] = 0.33333 * (A[i-1] + A[i] + A[i+1]);
    for (int i = 1; i < N - 1; i++) A[i] = 0.33333 * (B[i-1] + B[i] + B[i+1]);
  }""",
    )


# ---- jacobi-2d ------------------------------------------------------------------------------
def _jacobi2d_define(n: Sizes) -> Program:
    A = te.placeholder((n["N"], n["N"]), F64, name="A")
    B = te.placeholder((n["N"], n["N"]), F64, name="B")
    return _ping_pong(A, B, n["TSTEPS"], lambda x, i, j: 0.2 * (x(i, j) + x(i, j - 1) + x(i, j + 1) + x(i + 1, j)
                                                                + x(i - 1, j)), "jacobi2d")


def _jacobi2d_init(n: Sizes) -> Arrays:
    i, j = np.ogrid[:n["N"], :n["N"]]
    return {"A": (i * (j + 2.0) + 2) / n["N"], "B": (i * (j + 3.0) + 3) / n["N"]}


def _jacobi2d_step(x: np.ndarray) -> np.ndarray:
    return 0.2 * (x[1:-1, 1:-1] + x[1:-1, :-2] + x[1:-1, 2:] + x[2:, 1:-1] + x[:-2, 1:-1])


def _jacobi2d_reference(n: Sizes, a: Arrays) -> None:
    A, B = a["A"], a["B"]
    for _ in range(n["TSTEPS"]):
        B[1:-1, 1:-1] = _jacobi2d_step(A)
        A[1:-1, 1:-1] = _jacobi2d_step(B)


JACOBI_2D = Kernel(
    "jacobi-2d", "stencils",
    {"MINI": {"TSTEPS": 20, "N": 30}, "ODD": {"TSTEPS": 5, "N": 13}},
    _jacobi2d_define, _jacobi2d_init, _jacobi2d_reference,
    c_loops="""
  for (int t = 0; t < TSTEPS; t++) {
    for (int i = 1; i < N - 1; i++)
      for (int j = 1; j < N - 1; j++)
        B[i][j] = 0.2 * (A[i][j] + A[i][j-1] + A[i][1+j] + A[1+i][j] + A[i-1][j]);
    for (int i = 1; i < N - 1; i++)
      for (int j = 1; j < N - 1; j++)
        A[i][j] = 0.2 * (B[i][j] + B[i][j-1] + B[i][1+j] + B[1+i][j] + B[i-1][j]);
  }""",
    )


# ---- heat-3d --------------------------------------------------------------------------------
def _heat(x: Callable, i, j, k):
    c = x(i, j, k)
    return (0.125 * (x(i + 1, j, k) - 2.0 * c + x(i - 1, j, k))
            + 0.125 * (x(i, j + 1, k) - 2.0 * c + x(i, j - 1, k))
            + 0.125 * (x(i, j, k + 1) - 2.0 * c + x(i, j, k - 1))
            + c)


def _heat3d_define(n: Sizes) -> Program:
    shape = (n["N"],) * 3
    A = te.placeholder(shape, F64, name="A")
    B = te.placeholder(shape, F64, name="B")
    return _ping_pong(A, B, n["TSTEPS"], _heat, "heat3d")


def _heat3d_init(n: Sizes) -> Arrays:
    N = n["N"]
    i, j, k = np.ogrid[:N, :N, :N]
    a = (i + j + (N - k)).astype(np.float64) * 10 / N
    return {"A": a, "B": a.copy()}


def _heat_np(x: np.ndarray) -> np.ndarray:
    """The stencil over the interior, each neighbour a shifted slice."""
    n = x.shape[0]
    return _heat(lambda i, j, k: x[1 + i:n - 1 + i, 1 + j:n - 1 + j, 1 + k:n - 1 + k], 0, 0, 0)


def _heat3d_reference(n: Sizes, a: Arrays) -> None:
    A, B = a["A"], a["B"]
    for _ in range(n["TSTEPS"]):
        B[1:-1, 1:-1, 1:-1] = _heat_np(A)
        A[1:-1, 1:-1, 1:-1] = _heat_np(B)


HEAT_3D = Kernel(
    "heat-3d", "stencils",
    {"MINI": {"TSTEPS": 20, "N": 10}, "ODD": {"TSTEPS": 3, "N": 7}},
    _heat3d_define, _heat3d_init, _heat3d_reference,
    c_loops="""
  for (int t = 1; t <= TSTEPS; t++) {
    for (int i = 1; i < N - 1; i++)
      for (int j = 1; j < N - 1; j++)
        for (int k = 1; k < N - 1; k++)
          B[i][j][k] = 0.125 * (A[i+1][j][k] - 2.0 * A[i][j][k] + A[i-1][j][k])
                     + 0.125 * (A[i][j+1][k] - 2.0 * A[i][j][k] + A[i][j-1][k])
                     + 0.125 * (A[i][j][k+1] - 2.0 * A[i][j][k] + A[i][j][k-1])
                     + A[i][j][k];
    for (int i = 1; i < N - 1; i++)
      for (int j = 1; j < N - 1; j++)
        for (int k = 1; k < N - 1; k++)
          A[i][j][k] = 0.125 * (B[i+1][j][k] - 2.0 * B[i][j][k] + B[i-1][j][k])
                     + 0.125 * (B[i][j+1][k] - 2.0 * B[i][j][k] + B[i][j-1][k])
                     + 0.125 * (B[i][j][k+1] - 2.0 * B[i][j][k] + B[i][j][k-1])
                     + B[i][j][k];
  }""",
    )



# ---- seidel-2d ------------------------------------------------------------------------------
def _seidel_define(n: Sizes) -> Program:
    N, T = n["N"], n["TSTEPS"]
    A = te.placeholder((N, N), F64, name="A")

    def sweep(h, t, i, j):
        """Gauss-Seidel: the neighbours above and to the left already hold this step's values."""
        return te.if_then_else(
            _edge((N, N), (i, j)), h[t - 1, i, j],
            (h[t, i - 1, j - 1] + h[t, i - 1, j] + h[t, i - 1, j + 1] + h[t, i, j - 1] + h[t - 1, i, j]
             + h[t - 1, i, j + 1] + h[t - 1, i + 1, j - 1] + h[t - 1, i + 1, j] + h[t - 1, i + 1, j + 1]) / 9.0)

    h = te.recurrence((T + 1, N, N), [te.define(lambda h, t, i, j: A[i, j], where=lambda t, i, j: t == 0),
                                      te.define(sweep, where=lambda t, i, j: t >= 1)], name="seidel")
    s = te.create_schedule(h.op)
    s[h].store_in(A, lambda t, i, j: (i, j))  # every step in A itself: PolyBench's in-place sweep
    # a wavefront: the points of one anti-diagonal 2i + j of a sweep depend on none of each other,
    # so the inner loop runs independent chains (each point waits on its left neighbour in the
    # sweep as written: one chain of adds and a division per row, latency-bound)
    _, i, j = h.op.axis
    s[h].skew(i, j, 2, 1)
    return Program(s, [A], ["A"], ["A"])


def _seidel_init(n: Sizes) -> Arrays:
    i, j = np.ogrid[:n["N"], :n["N"]]
    return {"A": (i * (j + 2.0) + 2) / n["N"]}


def _seidel_reference(n: Sizes, a: Arrays) -> None:
    A, N = a["A"], n["N"]
    for _ in range(n["TSTEPS"]):
        for i in range(1, N - 1):
            for j in range(1, N - 1):
                A[i, j] = (A[i - 1, j - 1] + A[i - 1, j] + A[i - 1, j + 1] + A[i, j - 1] + A[i, j] + A[i, j + 1]
                           + A[i + 1, j - 1] + A[i + 1, j] + A[i + 1, j + 1]) / 9.0


SEIDEL_2D = Kernel(
    "seidel-2d", "stencils",
    {"MINI": {"TSTEPS": 20, "N": 40}, "ODD": {"TSTEPS": 3, "N": 11}},
    _seidel_define, _seidel_init, _seidel_reference,
    c_loops="""
  for (int t = 0; t <= TSTEPS - 1; t++)
    for (int i = 1; i <= N - 2; i++)
      for (int j = 1; j <= N - 2; j++)
        A[i][j] = (A[i-1][j-1] + A[i-1][j] + A[i-1][j+1]
                   + A[i][j-1] + A[i][j] + A[i][j+1]
                   + A[i+1][j-1] + A[i+1][j] + A[i+1][j+1]) / 9.0;""",
)


# ---- fdtd-2d --------------------------------------------------------------------------------
def _fdtd_define(n: Sizes) -> Program:
    T, NX, NY = n["TMAX"], n["NX"], n["NY"]
    ex = te.placeholder((NX, NY), F64, name="ex")
    ey = te.placeholder((NX, NY), F64, name="ey")
    hz = te.placeholder((NX, NY), F64, name="hz")
    fict = te.placeholder((T,), F64, name="_fict_")

    def field(h, t, f, i, j):
        """Field f (0: ey, 1: ex, 2: hz) after step t: ey and ex from hz of the step before, hz
        from this step's ex and ey (f runs in that order inside each step)."""
        e_y = te.if_then_else(i == 0, fict[t - 1],
                              h[t - 1, 0, i, j] - 0.5 * (h[t - 1, 2, i, j] - h[t - 1, 2, te.max(i - 1, 0), j]))
        e_x = te.if_then_else(j == 0, h[t - 1, 1, i, j],
                              h[t - 1, 1, i, j] - 0.5 * (h[t - 1, 2, i, j] - h[t - 1, 2, i, te.max(j - 1, 0)]))
        h_z = te.if_then_else(te.all(i < NX - 1, j < NY - 1),
                              h[t - 1, 2, i, j] - 0.7 * (h[t, 1, i, te.min(j + 1, NY - 1)] - h[t, 1, i, j]
                                                         + h[t, 0, te.min(i + 1, NX - 1), j] - h[t, 0, i, j]),
                              h[t - 1, 2, i, j])
        return te.if_then_else(f == 0, e_y, te.if_then_else(f == 1, e_x, h_z))

    h = te.recurrence((T + 1, 3, NX, NY), [
        te.define(lambda h, t, f, i, j: te.if_then_else(f == 0, ey[i, j], te.if_then_else(f == 1, ex[i, j], hz[i, j])),
                  where=lambda t, f, i, j: t == 0),
        te.define(field, where=lambda t, f, i, j: t >= 1)], name="fdtd")
    s = te.create_schedule(h.op)
    # each field in its own array, in place, as PolyBench: field f of every step in ey, ex or hz
    s[h].store_in([ey, ex, hz], lambda t, f, i, j: (f, i, j))
    s[h].parallel(h.op.axis[2])
    s[h].vectorize(h.op.axis[3])
    return Program(s, [ex, ey, hz, fict], ["ex", "ey", "hz", "_fict_"], ["ex", "ey", "hz"])


def _fdtd_init(n: Sizes) -> Arrays:
    i, j = np.ogrid[:n["NX"], :n["NY"]]
    return {"_fict_": np.arange(n["TMAX"], dtype=np.float64),
            "ex": (i * (j + 1.0)) / n["NX"], "ey": (i * (j + 2.0)) / n["NY"], "hz": (i * (j + 3.0)) / n["NX"]}


def _fdtd_reference(n: Sizes, a: Arrays) -> None:
    ex, ey, hz, fict = a["ex"], a["ey"], a["hz"], a["_fict_"]
    for t in range(n["TMAX"]):
        ey[0, :] = fict[t]
        ey[1:, :] -= 0.5 * (hz[1:, :] - hz[:-1, :])
        ex[:, 1:] -= 0.5 * (hz[:, 1:] - hz[:, :-1])
        hz[:-1, :-1] -= 0.7 * (ex[:-1, 1:] - ex[:-1, :-1] + ey[1:, :-1] - ey[:-1, :-1])


FDTD_2D = Kernel(
    "fdtd-2d", "stencils",
    {"MINI": {"TMAX": 20, "NX": 20, "NY": 30}, "ODD": {"TMAX": 5, "NX": 7, "NY": 11}},
    _fdtd_define, _fdtd_init, _fdtd_reference,
    c_loops="""
  for (int t = 0; t < TMAX; t++) {
    for (int j = 0; j < NY; j++) ey[0][j] = _fict_[t];
    for (int i = 1; i < NX; i++)
      for (int j = 0; j < NY; j++) ey[i][j] = ey[i][j] - 0.5 * (hz[i][j] - hz[i-1][j]);
    for (int i = 0; i < NX; i++)
      for (int j = 1; j < NY; j++) ex[i][j] = ex[i][j] - 0.5 * (hz[i][j] - hz[i][j-1]);
    for (int i = 0; i < NX - 1; i++)
      for (int j = 0; j < NY - 1; j++)
        hz[i][j] = hz[i][j] - 0.7 * (ex[i][j+1] - ex[i][j] + ey[i+1][j] - ey[i][j]);
  }""",
    notes="the three fields are one recurrence over (t, field, i, j), stored in place in PolyBench's three "
          "arrays (store_in([ey, ex, hz], ...): the field index chooses the array)")



# ---- adi ------------------------------------------------------------------------------------
#: rows of a sweep run together: each row's sweep along j is a chain of divisions, and rows are
#: independent, so a few chains interleaved hide each other's latency (gcc -O3's unroll and jam)
ROWS_AT_ONCE = 8


def _adi_coefficients(n: Sizes) -> tuple[float, float, float, float, float, float]:
    """PolyBench computes these inside the kernel from N and TSTEPS."""
    dx = dy = 1.0 / n["N"]
    dt = 1.0 / n["TSTEPS"]
    mul1, mul2 = 2.0 * dt / (dx * dx), 1.0 * dt / (dy * dy)
    a, d = -mul1 / 2.0, -mul2 / 2.0
    return a, 1.0 + mul1, a, d, 1.0 + mul2, d


def _adi_define(n: Sizes) -> Program:
    """Each step's two sweeps are six recurrences along j (forwards for p and q, backwards for
    v and u), each stored in the PolyBench array it writes; they cannot be one recurrence over
    t (the sweeps interleave per step and run j both ways), so the steps are unrolled."""
    N, T = n["N"], n["TSTEPS"]
    a, b, c, d, e, f = _adi_coefficients(n)
    u, v, p, q = (te.placeholder((N, N), F64, name=nm) for nm in "uvpq")

    def inner(x):
        return te.all(x >= 1, x < N - 1)

    def first(value: float, at: Callable) -> te.Definition:
        return te.define(lambda h, i, j: te.const(value, F64), where=at)

    def sweep(fn: Callable) -> te.Definition:
        return te.define(fn, where=lambda i, j: te.all(inner(i), inner(j)))

    def start(i, j):
        return te.all(inner(i), j == 0)

    def ends(i, j):
        return te.all(inner(i), te.any(j == 0, j == N - 1))

    def step(U: te.Tensor, t: int) -> list[te.Tensor]:
        p1 = te.recurrence((N, N), [first(0.0, start), sweep(lambda h, i, j: -c / (a * h[i, j - 1] + b))],
                           name=f"p_col{t}")
        q1 = te.recurrence((N, N), [first(1.0, start), sweep(
            lambda h, i, j: (-d * U[j, i - 1] + (1.0 + 2.0 * d) * U[j, i] - f * U[j, i + 1] - a * h[i, j - 1])
            / (a * p1[i, j - 1] + b))], name=f"q_col{t}")
        # v[j][i]: its first axis is j, run backwards (it reads v[j + 1][i])
        v1 = te.recurrence((N, N), [first(1.0, lambda j, i: ends(i, j)),
                                    te.define(lambda h, j, i: p1[i, j] * h[j + 1, i] + q1[i, j],
                                              where=lambda j, i: te.all(inner(i), inner(j)))], name=f"v{t}")
        p2 = te.recurrence((N, N), [first(0.0, start), sweep(lambda h, i, j: -f / (d * h[i, j - 1] + e))],
                           name=f"p_row{t}")
        q2 = te.recurrence((N, N), [first(1.0, start), sweep(
            lambda h, i, j: (-a * v1[i - 1, j] + (1.0 + 2.0 * a) * v1[i, j] - c * v1[i + 1, j] - d * h[i, j - 1])
            / (d * p2[i, j - 1] + e))], name=f"q_row{t}")
        u1 = te.recurrence((N, N), [first(1.0, ends), sweep(lambda h, i, j: p2[i, j] * h[i, j + 1] + q2[i, j])],
                           name=f"u{t}")
        return [p1, q1, v1, p2, q2, u1]

    stages: list[te.Tensor] = []
    U = u
    for t in range(T):
        stages += step(U, t)
        U = stages[-1]
    s = te.create_schedule([x.op for x in stages])  # listed in PolyBench's order: p is reused only then
    for x, home in zip(stages, [p, q, v, p, q, u] * T):
        s[x].store_in(home)  # every sweep in the array PolyBench writes, in place
        if x.op.axis[0].var.name == "i":  # a sweep along j, row by row: rows' chains interleaved
            io, ii = s[x].split(x.op.axis[0], ROWS_AT_ONCE)
            s[x].reorder(io, x.op.axis[1], ii)
            s[x].unroll(ii)
    return Program(s, [u, v, p, q], ["u", "v", "p", "q"], ["u", "v", "p", "q"])


def _adi_init(n: Sizes) -> Arrays:
    """u as PolyBench's init_array; v, p, q are uninitialized there (zeros here): the kernel
    leaves their borders unwritten."""
    N = n["N"]
    i, j = np.ogrid[:N, :N]
    return {"u": (i + N - j).astype(np.float64) / N, "v": np.zeros((N, N)), "p": np.zeros((N, N)),
            "q": np.zeros((N, N))}


def _adi_reference(n: Sizes, arr: Arrays) -> None:
    """PolyBench's loops with i (independent rows of each sweep) vectorized, j in order."""
    N = n["N"]
    a, b, c, d, e, f = _adi_coefficients(n)
    u, v, p, q = arr["u"], arr["v"], arr["p"], arr["q"]
    inner = slice(1, N - 1)
    for _ in range(n["TSTEPS"]):
        v[0, inner] = 1.0
        p[inner, 0] = 0.0
        q[inner, 0] = v[0, inner]
        for j in range(1, N - 1):
            p[inner, j] = -c / (a * p[inner, j - 1] + b)
            q[inner, j] = (-d * u[j, :-2] + (1.0 + 2.0 * d) * u[j, inner] - f * u[j, 2:]
                           - a * q[inner, j - 1]) / (a * p[inner, j - 1] + b)
        v[N - 1, inner] = 1.0
        for j in range(N - 2, 0, -1):
            v[j, inner] = p[inner, j] * v[j + 1, inner] + q[inner, j]
        u[inner, 0] = 1.0
        p[inner, 0] = 0.0
        q[inner, 0] = u[inner, 0]
        for j in range(1, N - 1):
            p[inner, j] = -f / (d * p[inner, j - 1] + e)
            q[inner, j] = (-a * v[:-2, j] + (1.0 + 2.0 * a) * v[inner, j] - c * v[2:, j]
                           - d * q[inner, j - 1]) / (d * p[inner, j - 1] + e)
        u[inner, N - 1] = 1.0
        for j in range(N - 2, 0, -1):
            u[inner, j] = p[inner, j] * u[inner, j + 1] + q[inner, j]


ADI = Kernel(
    "adi", "stencils",
    {"SHORT": {"TSTEPS": 4, "N": 20}, "ODD": {"TSTEPS": 3, "N": 9}},
    _adi_define, _adi_init, _adi_reference,
    c_loops="""
  double DX = 1.0 / (double)N, DY = 1.0 / (double)N, DT = 1.0 / (double)TSTEPS;
  double B1 = 2.0, B2 = 1.0;
  double mul1 = B1 * DT / (DX * DX), mul2 = B2 * DT / (DY * DY);
  double a = -mul1 / 2.0, b = 1.0 + mul1, c = a, d = -mul2 / 2.0, e = 1.0 + mul2, f = d;
  for (int t = 1; t <= TSTEPS; t++) {
    for (int i = 1; i < N - 1; i++) {
      v[0][i] = 1.0;
      p[i][0] = 0.0;
      q[i][0] = v[0][i];
      for (int j = 1; j < N - 1; j++) {
        p[i][j] = -c / (a * p[i][j-1] + b);
        q[i][j] = (-d * u[j][i-1] + (1.0 + 2.0 * d) * u[j][i] - f * u[j][i+1] - a * q[i][j-1]) / (a * p[i][j-1] + b);
      }
      v[N-1][i] = 1.0;
      for (int j = N - 2; j >= 1; j--) v[j][i] = p[i][j] * v[j+1][i] + q[i][j];
    }
    for (int i = 1; i < N - 1; i++) {
      u[i][0] = 1.0;
      p[i][0] = 0.0;
      q[i][0] = u[i][0];
      for (int j = 1; j < N - 1; j++) {
        p[i][j] = -f / (d * p[i][j-1] + e);
        q[i][j] = (-a * v[i-1][j] + (1.0 + 2.0 * a) * v[i][j] - c * v[i+1][j] - d * q[i][j-1]) / (d * p[i][j-1] + e);
      }
      u[i][N-1] = 1.0;
      for (int j = N - 2; j >= 1; j--) u[i][j] = p[i][j] * u[i][j+1] + q[i][j];
    }
  }""",
    notes="written in PolyBench's arrays (each sweep store_in its array, exact footprint) but with the time "
          "loop unrolled: six recurrences per step, so PolyBench's MINI (20 steps) is 241 stages (about 6 s "
          "to build per target); the tests check it over 4 and 3 steps")

KERNELS = [ADI, FDTD_2D, HEAT_3D, JACOBI_1D, JACOBI_2D, SEIDEL_2D]
