"""Fast kernels: vectorize, unroll, parallel, loop partitioning, register tiles, hoisted temporaries.

Every kernel runs on both targets (the python target executes the same vector IR lane by lane
with NumPy arrays) and is compared with NumPy on awkward sizes; the structure of the lowered IR
and of the generated C is inspected where the point is how the code looks, never how fast it is.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import check, rand

import tessel
from tessel import te
from tessel.driver import lower_steps
from tessel.ir import expr as E
from tessel.ir import stmt as S
from tessel.ir.functor import collect

SIZES = (1, 7, 1027)


def _final(s, args, vector_bytes=None) -> S.Stmt:
    func, _ = lower_steps(s, args, vector_bytes=vector_bytes)
    return func.body


def _innermost_loops(stmt: S.Stmt) -> list[S.For]:
    """Innermost loops, except in the branch kept for inputs smaller than a split factor
    (``small_sizes``: the loop nest as scheduled, guards and all, run only for tiny inputs)."""
    small = collect(stmt, lambda n: isinstance(n, S.AttrStmt) and n.key == "small_sizes")
    skip = {id(f) for a in small for f in collect(a, lambda n: isinstance(n, S.For))}
    return [f for f in collect(stmt, lambda n: isinstance(n, S.For))
            if id(f) not in skip and not collect(f.body, lambda n: isinstance(n, S.For))]


def _has_vectors(stmt: S.Stmt) -> bool:
    return bool(collect(stmt, lambda n: isinstance(n, E.Ramp | E.Broadcast)))


def _axpy(n, factor=None):
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute((n,), lambda i: A[i] * 2.5 + B[i], name="C")
    s = te.create_schedule(C.op)
    if factor is None:
        s[C].vectorize(C.op.axis[0])
    else:
        _, xi = s[C].split(C.op.axis[0], factor=factor)
        s[C].vectorize(xi)
    return s, [A, B, C]


# ---- vectorize -------------------------------------------------------------------------------------
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("symbolic", [False, True])
@pytest.mark.parametrize("factor", [None, 16])
def test_vectorize_awkward_sizes(n, symbolic, factor):
    s, args = _axpy(te.var("n") if symbolic else n, factor)
    a, b = rand(n), rand(n, seed=1)
    check(s, args, [a, b], [a * np.float32(2.5) + b])


def test_vectorized_loop_compiles_to_vector_types():
    s, args = _axpy(1024, 16)
    body = _final(s, args, vector_bytes=64)
    assert _has_vectors(body)
    assert not [f for f in collect(body, lambda n: isinstance(n, S.For)) if f.kind == "vectorized"]
    f = tessel.build(s, args)
    assert "vector_size(" in f.source and "tsl_ld_f32x" in f.source and "tsl_st_f32x" in f.source
    assert "#pragma GCC ivdep" not in f.source


def test_vector_width_follows_the_target():
    s, args = _axpy(64, 64)
    for nbytes, lanes in ((16, 4), (32, 8), (64, 16)):
        ramps = collect(_final(s, args, vector_bytes=nbytes), lambda n: isinstance(n, E.Ramp))
        assert {r.lanes for r in ramps} == {lanes}


def test_odd_extent_splits_into_power_of_two_vectors():
    s, args = _axpy(7)
    ramps = collect(_final(s, args, vector_bytes=64), lambda n: isinstance(n, E.Ramp))
    assert sorted({r.lanes for r in ramps}) == [2, 4]  # 7 = 4 + 2 + a scalar one


def test_data_dependent_index_falls_back_to_a_scalar_loop_that_says_why():
    n = 100
    A = te.placeholder((n,), name="A")
    idx = te.placeholder((n,), name="idx", dtype="int32")
    C = te.compute((n,), lambda i: A[idx[i]] + 1.0, name="C")
    s = te.create_schedule(C.op)
    _, xi = s[C].split(C.op.axis[0], factor=8)
    s[C].vectorize(xi)
    a = rand(n)
    ix = np.random.default_rng(3).integers(0, n, n).astype("int32")
    ks = check(s, [A, idx, C], [a, ix], [a[ix] + 1])
    assert "// not vectorized:" in ks["c"].source and "depends on data" in ks["c"].source
    assert "# not vectorized:" in ks["python"].source


@pytest.mark.parametrize("n", (7, 33))
def test_strided_access_gathers(n):
    A = te.placeholder((n, n), name="A")
    B = te.compute((n, n), lambda i, j: A[j, i] * 2.0, name="B")
    s = te.create_schedule(B.op)
    _, ji = s[B].split(B.op.axis[1], factor=8)
    s[B].vectorize(ji)
    a = rand(n, n)
    ks = check(s, [A, B], [a], [a.T * 2])
    if n == 33:
        assert "tsl_gather_f32x" in ks["c"].source


def test_vector_select_min_max_cast_and_math():
    n = 203
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute((n,), lambda i: te.if_then_else(
        A[i] > B[i], te.max(A[i], 0.25), te.min(B[i], -0.25)) + (A[i] < 0.0).astype("float32")
        + te.exp(A[i] * 30.0) * 1e-12 + te.sqrt(te.abs(B[i])) + i.astype("float32"), name="C")
    s = te.create_schedule(C.op)
    _, xi = s[C].split(C.op.axis[0], factor=16)
    s[C].vectorize(xi)
    a, b = rand(n), rand(n, seed=2)
    want = (np.where(a > b, np.maximum(a, 0.25), np.minimum(b, -0.25)) + (a < 0) + np.exp(a * 30) * 1e-12
            + np.sqrt(np.abs(b)) + np.arange(n)).astype("float32")
    ks = check(s, [A, B, C], [a, b], [want], rtol=2e-5)
    assert "tsl_sel_f32x" in ks["c"].source and "tsl_vexp_f32x" in ks["c"].source


def test_vector_exp_special_values():
    vals = np.array([-np.inf, -200, -103.9, -87.5, -20, -0.001, 0, 1e-07, 0.5, 1, 10, 80, 88.7, 88.73, 100, np.inf, np.nan, *list(np.linspace(-90, 89, 15))], dtype="float32")
    n = len(vals)
    A = te.placeholder((n,), name="A")
    C = te.compute((n,), lambda i: te.exp(A[i]), name="C")
    s = te.create_schedule(C.op)
    _, xi = s[C].split(C.op.axis[0], factor=16)
    s[C].vectorize(xi)
    f = tessel.build(s, [A, C])
    out = np.empty_like(vals)
    f(vals, out)
    with np.errstate(over="ignore"):
        want = np.exp(vals)
    np.testing.assert_allclose(out, want, rtol=3e-7, atol=1e-44)


def _vector_exp(n, lanes):
    A = te.placeholder((n,), name="A")
    C = te.compute((n,), lambda i: te.exp(A[i]), name="C")
    s = te.create_schedule(C.op)
    _, xi = s[C].split(C.op.axis[0], factor=lanes)
    s[C].vectorize(xi)
    return tessel.build(s, [A, C])


def test_vector_exp_within_one_ulp_over_the_float32_range():
    """Every 4099th float32 bit pattern (both signs, subnormal inputs, inf, NaN payloads) and
    the edges of underflow and overflow: the vector exp is within 1 ulp of the correctly
    rounded exp (NumPy's in float64, rounded once), NaN for NaN; its 16-lane form (AVX-512's
    vscalefps where the compiler targets AVX-512) and its 8-lane one (the portable scaling)
    agree bit for bit."""
    edges = np.array([-np.inf, np.inf, -104.0, -103.97, -103.28, -87.34, -87.33, -86.99, 88.37, 88.38, 88.72,
                      88.7228, 88.73, 89.0, 1e-45, -1e-45, 0.0, -0.0], dtype="float32")
    x = np.concatenate([np.arange(0, 1 << 32, 4099, dtype=np.uint64).astype(np.uint32).view("float32"), edges])
    got = {}
    for lanes in (16, 8):
        out = np.empty_like(x)
        f = _vector_exp(len(x), lanes)
        f(x, out)
        got[lanes] = out
        assert ("__builtin_ia32_scalefps512_mask" in f.source) == (lanes == 16)  # in an #if of AVX-512
    assert np.array_equal(got[16].view("int32"), got[8].view("int32"))
    nan = np.isnan(x)
    assert np.isnan(got[16][nan]).all() and not np.isnan(got[16][~nan]).any()
    with np.errstate(over="ignore"):
        want = np.exp(x[~nan].astype("float64")).astype("float32")
    ulps = np.abs(got[16][~nan].view("int32").astype(np.int64) - want.view("int32").astype(np.int64))
    assert ulps.max() <= 1, f"{ulps.max()} ulp at x = {x[~nan][ulps.argmax()]!r}"
    assert got[16][~nan][want == 0].max() == 0 and np.isinf(got[16][~nan][np.isinf(want)]).all()


@pytest.mark.parametrize("dtype", ["int8", "int32", "uint16", "float64"])
def test_vectorized_integer_and_double_arithmetic(dtype):
    n = 77
    A = te.placeholder((n,), name="A", dtype=dtype)
    B = te.placeholder((n,), name="B", dtype=dtype)
    C = te.compute((n,), lambda i: A[i] * B[i] + A[i] - (B[i] // 3 if dtype != "float64" else B[i] / 3),
                   name="C")
    s = te.create_schedule(C.op)
    _, xi = s[C].split(C.op.axis[0], factor=32)
    s[C].vectorize(xi)
    a = rand(n, dtype=dtype, low=-60, high=60) if dtype == "float64" else rand(n, dtype=dtype)
    b = rand(n, dtype=dtype, seed=4) if dtype != "float64" else rand(n, dtype=dtype, seed=4, low=-60, high=60)
    with np.errstate(over="ignore"):
        want = a * b + a - (b // 3 if dtype != "float64" else b / 3)
    check(s, [A, B, C], [a, b], [want.astype(dtype)])


def test_loop_carried_dependence_is_not_vectorized():
    n = 64
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1.0, name="B")
    C = te.compute((n,), lambda i: B[(i + 3) % n] * 2.0, name="C")
    s = te.create_schedule(C.op)
    _, xi = s[C].split(C.op.axis[0], factor=8)
    s[B].compute_at(s[C], xi)
    s[C].vectorize(xi)
    a = rand(n)
    ks = check(s, [A, C], [a], [(np.roll(a, -3) + 1) * 2])
    assert "not vectorized" in ks["c"].source


# ---- reductions: rfactor + vectorize ------------------------------------------------------------------
@pytest.mark.parametrize("m", SIZES)
def test_rfactor_vectorized_row_sum(m):
    rows = 5
    A = te.placeholder((rows, m), name="A")
    k = te.reduce_axis((0, m), name="k")
    B = te.compute((rows,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    _, ki = s[B].split(k, factor=16)
    BF = s.rfactor(B, ki)
    s[BF].compute_at(s[B], s[B].op.axis[0])
    s[BF].reorder(*s[BF].op.reduce_axis, s[BF].op.axis[0])
    s[BF].vectorize(s[BF].op.axis[0])
    s[BF].set_scope("local")
    a = rand(rows, m)
    ks = check(s, [A, B], [a], [a.sum(axis=1)], rtol=1e-4, atol=1e-4)
    if m == 1027:
        assert "tsl_ld_f32x" in ks["c"].source  # the partial sums are vector loads and adds


# ---- unroll ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("n", SIZES)
def test_unroll_awkward_sizes(n):
    A = te.placeholder((n,), name="A")
    C = te.compute((n,), lambda i: A[i] * A[i], name="C")
    s = te.create_schedule(C.op)
    _, xi = s[C].split(C.op.axis[0], factor=4)
    s[C].unroll(xi)
    a = rand(n)
    check(s, [A, C], [a], [a * a])
    if n == 1027:
        loops = [f.loop_var.name for f in collect(_final(s, [A, C]), lambda x: isinstance(x, S.For))]
        assert "i.inner" not in loops  # straight-line code, not a loop


def test_unroll_of_a_loop_without_a_constant_bound_is_refused_with_a_fix():
    """Seed 004: unroll is legal iff the loop's bounds are constant (a split's inner loop, whose
    extent is min(n, factor), is bounded by the factor and may be unrolled)."""
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    C = te.compute((n,), lambda i: A[i] + 1.0, name="C")
    s = te.create_schedule(C.op)
    s[C].unroll(C.op.axis[0])
    with pytest.raises(tessel.ScheduleError, match="cannot unroll i: its extent n has no constant bound") as info:
        tessel.build(s, [A, C])
    info.value.fix_steps.apply(s)
    f = tessel.build(s, [A, C])
    a = rand(10)
    out = np.empty_like(a)
    f(a, out)
    np.testing.assert_allclose(out, a + 1)


# ---- register tiles: cache_write to local, unrolled and vectorized -------------------------------------
@pytest.mark.parametrize("n", (7, 40))
def test_register_tile_matmul(n):
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "local")
    io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], 4, 16)
    s[CC].compute_at(s[C], jo)
    ic, jc = s[CC].op.axis
    (kk,) = s[CC].op.reduce_axis
    s[CC].reorder(kk, ic, jc)
    s[CC].unroll(ic)
    s[CC].vectorize(jc)
    s[C].unroll(ii)
    s[C].vectorize(ji)
    s[C].parallel(io)
    a, b = rand(n, n), rand(n, n, seed=1)
    ks = check(s, [A, B, C], [a, b], [a @ b], rtol=1e-4, atol=1e-4)
    if n == 40:
        assert "kept in registers" in ks["c"].source


@pytest.mark.parametrize("m", [56, 57])
def test_a_register_tile_with_a_partial_vector_per_row_stays_in_registers(m):
    """A tile row of 56 float32 on a 64-byte target is three vectors of 16 and one of 8; kept
    in variables of both widths (an array of them, stored to and reloaded at every step, ran a
    3 x 3 conv at half speed on AVX-512). A single element read back is a lane of its vector;
    a row of 57 ends in a single element, a scalar variable of its own."""
    from tessel.target import Target

    wide = Target(vector_bytes=64, vector_registers=32, fma_units=2)
    n, kk = 9, 13
    A = te.placeholder((n, kk), name="A")
    B = te.placeholder((kk, m), name="B")
    k = te.reduce_axis((0, kk), name="k")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    D = te.compute((n, m), lambda i, j: C[i, j] + C[i, 0], name="D")
    s = te.create_schedule(D.op)
    s[C].set_scope("local")
    io, ii = s[D].split(D.op.axis[0], factor=3)
    s[C].compute_at(s[D], io)
    ic, jc = s[C].op.axis
    s[C].reorder(s[C].op.reduce_axis[0], ic, jc)
    s[C].unroll(ic)
    s[C].vectorize(jc)
    s[D].unroll(ii)
    s[D].vectorize(D.op.axis[1])
    a, b = rand(n, kk), rand(kk, m, seed=1)
    c = a @ b
    ks = check(s, [A, B, D], [a, b], [c + c[:, :1]], targets=("python", wide), rtol=1e-4, atol=1e-4)
    src = ks[wide].source
    assert "float C[" not in src  # no array of the tile left in memory
    if m == 56:  # three rows of 16 + 16 + 16 + 8: named by their first element over their width
        assert "tsl_f32x16 C_0, C_1, C_2, C_3, C_4, C_5, C_7, C_8, C_9;" in src
        assert "tsl_f32x8 C_6, C_13, C_20;" in src
    else:  # 16 + 16 + 16 + 8 + 1: the last column of each row a float of its own
        assert "float C_56, C_113, C_170;" in src, src


# ---- loop partitioning ------------------------------------------------------------------------------------
@pytest.mark.parametrize("symbolic", [False, True])
def test_partition_leaves_no_condition_in_innermost_loops(symbolic):
    size = 37
    n = te.var("n") if symbolic else size
    A = te.placeholder((n, n), name="A")
    B = te.compute((n, n), lambda i, j: A[i, j] * 3.0, name="B")
    s = te.create_schedule(B.op)
    io, jo, ii, ji = s[B].tile(B.op.axis[0], B.op.axis[1], 8, 16)
    s[B].vectorize(ji)
    body = _final(s, [A, B])
    for f in _innermost_loops(body):
        assert not collect(f.body, lambda x: isinstance(x, S.IfThenElse)), f"`if` inside innermost loop:\n{f}"
    assert _has_vectors(body)
    a = rand(size, size)
    check(s, [A, B], [a], [a * 3])


def test_partition_keeps_every_iteration_of_a_reduction():
    m = 1027
    A = te.placeholder((m,), name="A")
    k = te.reduce_axis((0, m), name="k")
    B = te.compute((1,), lambda i: te.sum(A[k] * A[k], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(k, factor=16)
    s[B].unroll(ki)
    body = _final(s, [A, B])
    assert not [f for f in _innermost_loops(body)
                if collect(f.body, lambda x: isinstance(x, S.IfThenElse))]
    a = rand(m)
    check(s, [A, B], [a], [np.array([np.dot(a, a)], "float32")], rtol=1e-4)


# ---- parallel ---------------------------------------------------------------------------------------------
def _parallel_kernel(n):
    A = te.placeholder((n, 64), name="A")
    B = te.compute((n, 64), lambda i, j: A[i, j] * 2.0 + 1.0, name="B")
    s = te.create_schedule(B.op)
    s[B].parallel(B.op.axis[0])
    s[B].vectorize(B.op.axis[1])
    return s, [A, B]


@pytest.mark.parametrize("n", SIZES)
def test_parallel_thread_counts(n, monkeypatch):
    s, args = _parallel_kernel(te.var("n"))
    a = rand(n, 64)
    want = a * 2 + 1
    for target in ("python", "c"):
        f = tessel.build(s, args, target=target)
        out = np.empty_like(a)
        for threads in (1, 2, 3):
            out.fill(np.nan)
            f(a, out, num_threads=threads)
            np.testing.assert_allclose(out, want)
        f.set_num_threads(1)
        assert f.num_threads == 1
        out.fill(np.nan)
        f(a, out)
        np.testing.assert_allclose(out, want)
        f.set_num_threads(None)
        monkeypatch.setenv("TESSEL_NUM_THREADS", "2")
        assert f.num_threads == 2
        out.fill(np.nan)
        f(a, out)
        np.testing.assert_allclose(out, want)
        monkeypatch.delenv("TESSEL_NUM_THREADS")
    assert "num_threads(tsl_nt)" in f.source


def test_bad_thread_counts_are_argument_errors(monkeypatch):
    s, args = _parallel_kernel(16)
    f = tessel.build(s, args)
    a = rand(16, 64)
    out = np.empty_like(a)
    with pytest.raises(tessel.ArgumentError, match="num_threads"):
        f(a, out, num_threads=-1)
    with pytest.raises(tessel.ArgumentError, match="num_threads"):
        f.set_num_threads(1.5)
    monkeypatch.setenv("TESSEL_NUM_THREADS", "many")
    with pytest.raises(tessel.ArgumentError, match="TESSEL_NUM_THREADS"):
        f(a, out)


# ---- temporaries --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("n", (5, 300))
def test_heap_temporary_allocated_once_per_thread(n):
    A = te.placeholder((n, n), name="A")
    Bx = te.compute((n, n - 2), lambda y, x: A[y, x] + A[y, x + 1] + A[y, x + 2], name="Bx")
    By = te.compute((n - 2, n - 2), lambda y, x: Bx[y, x] + Bx[y + 1, x] + Bx[y + 2, x], name="By")
    s = te.create_schedule(By.op)
    yo, yi = s[By].split(By.op.axis[0], factor=32)
    s[Bx].compute_at(s[By], yo)
    _, xi = s[By].split(By.op.axis[1], factor=16)
    s[By].vectorize(xi)
    s[By].parallel(yo)
    a = rand(n, n)
    bx = a[:, :-2] + a[:, 1:-1] + a[:, 2:]
    ks = check(s, [A, By], [a], [bx[:-2] + bx[1:-1] + bx[2:]], rtol=1e-4, atol=1e-5)
    src = ks["c"].source
    if n == 300:  # 34 x 298 floats: the heap, allocated in the parallel region, before the loop
        region = src[src.index("#pragma omp parallel num_threads"):]
        assert region.index("tsl_alloc") < region.index("#pragma omp for")


@pytest.mark.parametrize("shape", [(3, 3), (4, 19), (33, 17)])
@pytest.mark.parametrize("symbolic", [False, True])
def test_partitioned_tiles_with_attached_producer(shape, symbolic):
    """Non-divisible tiles in both dimensions, a producer computed per tile (its region
    guarded at the borders), vectorized and unrolled: every partition piece must agree."""
    h, w = (te.var("h"), te.var("w")) if symbolic else shape
    A = te.placeholder((h, w), name="A")
    P = te.compute((h, w - 1), lambda y, x: A[y, x] * 2.0 + A[y, x + 1], name="P")
    Q = te.compute((h - 2, w - 1), lambda y, x: P[y, x] - P[y + 2, x], name="Q")
    s = te.create_schedule(Q.op)
    yo, xo, yi, xi = s[Q].tile(Q.op.axis[0], Q.op.axis[1], 4, 8)
    s[P].compute_at(s[Q], xo)
    s[Q].unroll(yi)
    s[Q].vectorize(xi)
    _, pxi = s[P].split(s[P].op.axis[1], factor=4)
    s[P].vectorize(pxi)
    s[Q].parallel(yo)
    a = rand(*shape)
    p = a[:, :-1] * 2 + a[:, 1:]
    check(s, [A, Q], [a], [p[:-2] - p[2:]])


# ---- streaming stores ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(3, 5), (7, 1027), (33, 100), (5, 136), (9, 72)])
def test_streaming_stores_for_large_outputs(shape, limits):
    """Outputs past a size threshold are written with streaming stores; lowered here for small
    arrays so that every piece runs. A row longer than eight vectors (16 lanes) is peeled to an
    aligned start, then whole vectors, then a tail; a shorter one is unrolled whole with no
    peel, each vector streaming where its address is aligned."""
    from tessel.target import STREAMING_STORES, Target

    limits(stream_min_bytes=64)
    rows, cols = shape
    A = te.placeholder((rows, cols), name="A")
    B = te.compute((rows, cols), lambda i, j: A[i, j] * 3.0 - 1.0, name="B")
    s = te.create_schedule(B.op)
    s[B].parallel(B.op.axis[0])
    s[B].vectorize(B.op.axis[1])
    a = rand(rows, cols)
    wide = Target(vector_bytes=64, features=frozenset({STREAMING_STORES}))
    ks = check(s, [A, B], [a], [a * 3 - 1], targets=("python", "c", wide))
    src = ks[wide].source
    if cols >= 64:
        assert "tsl_stream_f32x16" in src and "tsl_sfence();" in src
        assert ("tsl_align_gap(" in src) == (cols // 16 > 8)


def test_register_tile_streams_out_at_constant_offsets(limits):
    """The matmul's accumulator tile is copied to a streamed C row by row with no alignment peel:
    a peel would read the tile at a runtime offset, and the C compiler would then keep all of it
    in memory instead of registers (the 2048 matmul ran at a third of its speed on AVX-512)."""
    from examples import fast_matmul
    from tessel.target import STREAMING_STORES, Target

    limits(stream_min_bytes=64)
    wide = Target(vector_bytes=64, vector_registers=32, fma_units=2, features=frozenset({STREAMING_STORES}))
    n = 70
    s, args = fast_matmul.matmul(n, target=wide)
    a, b = rand(n, n), rand(n, n)
    ks = check(s, args, [a, b], [a @ b], targets=("python", wide), rtol=1e-4, atol=1e-4)
    src = ks[wide].source
    assert "tsl_stream_f32x16(C" in src and "tsl_align_gap(" not in src


def test_outputs_read_back_are_not_streamed(limits):
    limits(stream_min_bytes=64)
    n = 300
    A = te.placeholder((n,), name="A")
    k = te.reduce_axis((0, n), name="k")
    B = te.compute((1,), lambda i: te.sum(A[k], axis=k), name="B")  # B is read while it is summed
    C = te.compute((n,), lambda i: A[i] + 1.0, name="C")
    s = te.create_schedule([B.op, C.op])
    s[C].vectorize(C.op.axis[0])
    body = _final(s, [A, B, C])
    streamed = {a.node.name for a in collect(body, lambda x: isinstance(x, S.AttrStmt) and x.key == "stream_store")}
    assert streamed == {"C"}


@pytest.mark.parametrize("n", (100, 1027))
def test_split_then_vectorized_output_still_streams(n, limits):
    """The TVM idiom split(x, 16) + vectorize(inner) is re-fused into one row for the peel."""
    limits(stream_min_bytes=64)
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 0.5, name="B")
    s = te.create_schedule(B.op)
    _, xi = s[B].split(B.op.axis[0], factor=16)
    s[B].vectorize(xi)
    a = rand(n)
    ks = check(s, [A, B], [a], [a + np.float32(0.5)])
    assert "tsl_stream_f32x" in ks["c"].source


# ---- pragmas -----------------------------------------------------------------------------------------
def _tiled_scale(m, n, bi, bj):
    A = te.placeholder((m, n), name="A")
    C = te.compute((m, n), lambda i, j: A[i, j] * 3.0 - 1.0, name="C")
    s = te.create_schedule(C.op)
    io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], bi, bj)
    return s, [A, C], (io, jo, ii, ji)


@pytest.mark.parametrize("shape", [(8, 8), (7, 13)])
def test_auto_unroll_max_step_unrolls_small_nests_only(shape):
    m, n = shape
    s, args, (io, jo, ii, ji) = _tiled_scale(m, n, 2, 4)
    s[args[1]].pragma(jo, "auto_unroll_max_step", 8)  # ii x ji = 8 steps: both unrolled, jo itself not
    a = rand(m, n)
    check(s, args, [a], [a * 3.0 - 1.0])
    loops = {f.loop_var.name for f in collect(_final(s, args), lambda x: isinstance(x, S.For))}
    assert "i.inner" not in loops and "j.inner" not in loops
    assert "j.outer" in loops and "i.outer" in loops


def test_auto_unroll_max_step_below_the_nest_unrolls_only_the_inner_loop():
    s, args, (io, jo, ii, ji) = _tiled_scale(8, 8, 2, 4)
    s[args[1]].pragma(jo, "auto_unroll_max_step", 4)  # ji (4 steps) fits, ii x ji (8) does not
    loops = {f.loop_var.name for f in collect(_final(s, args), lambda x: isinstance(x, S.For))}
    assert "j.inner" not in loops and "i.inner" in loops
    a = rand(8, 8)
    check(s, args, [a], [a * 3.0 - 1.0])


def test_auto_unroll_zero_and_unroll_explicit_change_nothing():
    s, args, (io, jo, ii, ji) = _tiled_scale(8, 8, 2, 4)
    before = tessel.build(s, args).source
    s[args[1]].pragma(io, "auto_unroll_max_step", 0)
    s[args[1]].pragma(io, "unroll_explicit", True)
    assert tessel.build(s, args).source == before


def test_debug_skip_region_leaves_the_output_untouched():
    s, args, (io, jo, ii, ji) = _tiled_scale(8, 8, 2, 4)
    s[args[1]].pragma(io, "debug_skip_region")
    assert "pragma_debug_skip_region" in str(tessel.lower(s, args))
    for target in ("python", "c"):
        f = tessel.build(s, args, target=target)
        out = np.full((8, 8), 7.0, "float32")
        f(rand(8, 8), out)
        np.testing.assert_array_equal(out, 7.0)


@pytest.mark.parametrize("key, value, words", [
    ("auto_unroll_max_step", -1, "int >= 0"),
    ("auto_unroll_max_step", 2.5, "int >= 0"),
    ("unroll_explicit", False, "always unrolls in the IR"),
])
def test_pragma_refused_with_the_reason(key, value, words):
    s, args, (io, jo, ii, ji) = _tiled_scale(8, 8, 2, 4)
    with pytest.raises(tessel.ScheduleError, match=words) as info:
        s[args[1]].pragma(io, key, value)
    assert "stage C" in str(info.value) and "i.outer" in str(info.value)
    assert not s[args[1]].iter_var_attrs.get(io) or not s[args[1]].iter_var_attrs[io].pragmas
