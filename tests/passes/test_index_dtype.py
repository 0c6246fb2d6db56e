"""Seed 002: index arithmetic in int64 exactly where its values need it, narrow everywhere else.

Kernels over tensors too large to allocate here are checked in their lowered IR and generated
source; correctness is run on small arrays whose index *intermediates* leave int32
(``A[(i*1000003) % 1009]``), on both targets against NumPy, which computes in int64.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import check, garbage_like, rand

import tessel
from tessel import te
from tessel.codegen.c import c_source
from tessel.codegen.python import python_source
from tessel.driver import lower_steps
from tessel.ir import expr as E
from tessel.ir import stmt as S
from tessel.ir.functor import collect
from tessel.target import STREAMING_STORES, Target

BIG = 50000  # BIG*BIG elements: a flat index beyond int32 (10 GB of float32: never allocated here)


def lowered(s, args) -> S.PrimFunc:
    return lower_steps(s, args)[0]


def loop_dtypes(func: S.PrimFunc) -> dict[str, str]:
    return {f.loop_var.name: str(f.loop_var.dtype) for f in collect(func.body, lambda n: isinstance(n, S.For))}


def copy2d(rows=BIG, cols=BIG):
    """``B = A * 2``: its flat index ``i*cols + j`` leaves int32 when the shape is large."""
    A = te.placeholder((rows, cols), name="A")
    B = te.compute((rows, cols), lambda i, j: A[i, j] * 2, name="B")
    return A, B, te.create_schedule(B.op)


# ---- promotion: flat indices, constants, loop variables ----------------------------------------
def test_flat_index_of_a_large_tensor_is_int64_arithmetic():
    A, B, s = copy2d()
    f = lowered(s, [A, B])
    assert "B[int64(i)*int64(50000) + int64(j)] = A[int64(i)*int64(50000) + int64(j)]*2.0f" in str(f.body)
    assert loop_dtypes(f) == {"i": "int32", "j": "int32"}  # the loops themselves fit int32
    store = collect(f.body, lambda n: isinstance(n, S.BufferStore))[0]
    idx = store.indices[0]
    assert idx.dtype == "int64"
    # the operand is widened before the multiplication, not the product after it
    mul = idx.a
    assert isinstance(mul, E.Mul) and isinstance(mul.a, E.Cast) and mul.a.value.dtype == "int32"
    assert "B[(int64_t)i * INT64_C(50000) + (int64_t)j] = A[(int64_t)i * INT64_C(50000) + (int64_t)j] * 2.0f;" \
        in c_source(f)
    assert "for (int32_t i = 0; i < 50000; ++i)" in c_source(f)
    assert "B[i.astype(int64) * int64(50000) + j.astype(int64)]" in python_source(f)


def test_built_kernels_show_the_int64_index_in_their_source():
    A, B, s = copy2d()
    for target, text in (("c", "(int64_t)i * INT64_C(50000)"), ("python", "i.astype(int64) * int64(50000)")):
        assert text in tessel.build(s, [A, B], target=target).source  # built, never called


def test_a_constant_row_of_a_large_tensor_is_not_wrapped():
    A = te.placeholder((BIG, BIG), name="A")
    C = te.compute((BIG,), lambda i: A[BIG - 1, i] * 2, name="C")
    f = lowered(te.create_schedule(C.op), [A, C])
    assert "A[int64(2499950000) + int64(i)]" in str(f.body)  # 49999*50000, not -1795017296


def test_a_fused_loop_beyond_int32_gets_an_int64_variable():
    A, B, s = copy2d()
    s[B].fuse(*B.op.axis)
    f = lowered(s, [A, B])
    loop = collect(f.body, lambda n: isinstance(n, S.For))[0]
    assert loop.loop_var.dtype == "int64" and E.is_const_int(loop.extent, BIG * BIG)
    assert "B[i.j.fused] = A[i.j.fused]*2.0f" in str(f.body)
    assert "for (int64_t i_j_fused = INT64_C(0); i_j_fused < INT64_C(2500000000); ++i_j_fused)" in c_source(f)


def test_vector_accesses_of_a_large_tensor_take_an_int64_base():
    A, B, s = copy2d()
    _, ji = s[B].split(B.op.axis[1], 16)
    s[B].vectorize(ji)
    s[B].parallel(B.op.axis[0])  # a large output: streaming stores after an alignment peel
    # an explicit target: 16 float32 lanes and streaming stores whatever this machine has
    avx512 = Target(vector_bytes=64, features=frozenset({"avx512f", STREAMING_STORES}))
    f = lower_steps(s, [A, B], target=avx512)[0]
    ramps = collect(f.body, lambda n: isinstance(n, E.Ramp))
    assert ramps and all(r.dtype == "int64x16" and r.base.dtype == "int64" for r in ramps)
    src = c_source(f)
    assert "tsl_stream_f32x16(B + (int64_t)i * INT64_C(50000)" in src
    assert "tsl_align_gap(B + (int64_t)i * INT64_C(50000)" in src
    assert "__builtin_convertvector" not in src  # the base is a scalar, not a vector of indices


def test_exact_folding_keeps_an_index_constant_that_would_wrap():
    wrapped = E.mul(49999, 50000)
    kept = E.binary_exact(E.Mul, 49999, 50000)
    assert E.is_const_int(wrapped, -1795017296)  # data arithmetic wraps, as in C and NumPy
    assert isinstance(kept, E.Mul) and kept.dtype == "int32"
    assert E.is_const_int(E.binary_exact(E.Mul, 3, 4), 12)


# ---- correctness where intermediates leave int32 (small arrays, both targets vs NumPy) ----------
def test_gather_through_a_product_beyond_int32():
    n = 5000  # i*1000003 reaches 5.0e9
    A = te.placeholder((1009,), name="A")
    B = te.compute((n,), lambda i: A[(i * 1000003) % 1009], name="B")
    a = rand(1009)
    check(te.create_schedule(B.op), [A, B], [a], [a[np.arange(n, dtype=np.int64) * 1000003 % 1009]])


def test_two_dimensional_index_beyond_int32():
    A = te.placeholder((1009,), name="A")
    B = te.compute((25000, 2), lambda i, j: A[(i * 100000 + j) % 1009], name="B")
    ii, jj = np.meshgrid(np.arange(25000, dtype=np.int64), np.arange(2, dtype=np.int64), indexing="ij")
    a = rand(1009, seed=1)
    check(te.create_schedule(B.op), [A, B], [a], [a[(ii * 100000 + jj) % 1009]])


def test_unrolled_copies_fold_their_constants_exactly():
    A = te.placeholder((1009,), name="A")
    B = te.compute((8,), lambda i: A[(i * 700003000) % 1009], name="B")
    s = te.create_schedule(B.op)
    s[B].unroll(B.op.axis[0])
    a = rand(1009, seed=2)
    check(s, [A, B], [a], [a[np.arange(8, dtype=np.int64) * 700003000 % 1009]])


def test_loop_variable_arithmetic_in_a_vectorized_value():
    C = te.compute((4000, 16), lambda i, j: (i * 1000003 + j).astype("float64"), name="C")
    s = te.create_schedule(C.op)
    s[C].vectorize(C.op.axis[1])
    ii, jj = np.meshgrid(np.arange(4000, dtype=np.int64), np.arange(16, dtype=np.int64), indexing="ij")
    check(s, [C], [], [(ii * 1000003 + jj).astype(np.float64)], rtol=0, atol=0)


def test_an_int32_result_wraps_as_numpy_does():
    D = te.compute((4000,), lambda i: i * 1000003, name="D")
    s = te.create_schedule(D.op)
    assert "D[i] = int32(int64(i)*int64(1000003))" in str(tessel.lower(s, [D], simple_mode=True))
    check(s, [D], [], [(np.arange(4000, dtype=np.int64) * 1000003).astype(np.int32)], rtol=0, atol=0)


# ---- narrowing: everything that fits stays as it was ------------------------------------------
def test_ordinary_kernels_come_out_of_the_step_unchanged():
    from examples.fast_matmul import matmul

    func, steps = lower_steps(*matmul(1024))
    names = [st.name for st in steps]
    at = names.index("index_dtype")
    assert names[at - 1] == "unroll"
    assert steps[at].ir is steps[at - 1].ir  # not one node rebuilt: the generated code is today's
    assert set(loop_dtypes(func).values()) == {"int32"}
    assert not collect(func.body, lambda n: isinstance(n, E.Cast) and n.dtype.element == "int64")
    assert func.guards == ()


def test_int64_shapes_keep_int64_loops():
    n = te.const(5, "int64")
    A = te.placeholder((n, 4), name="A")
    B = te.compute((n, 4), lambda i, j: A[i, j] + 1.0, name="B")
    s = te.create_schedule(B.op)
    assert loop_dtypes(lowered(s, [A, B])) == {"i": "int64", "j": "int32"}
    a = rand(5, 4)
    check(s, [A, B], [a], [a + 1])


# ---- symbolic sizes: the seed's rule, and a guard at every call ------------------------------
def test_symbolic_sizes_keep_their_dtype_and_get_a_guard():
    A, B, s = copy2d(te.var("n"), te.var("m"))
    f = lowered(s, [A, B])
    assert "B[i*m + j] = A[i*m + j]*2.0f" in str(f.body)  # seed rule 2: no promotion
    assert loop_dtypes(f) == {"i": "int32", "j": "int32"}
    # A's index and B's are one expression, so one guard (index guards are kept by structure)
    assert f.guards and {g.what for g in f.guards} <= {"the index of B", "the index of A"}
    k = tessel.build(s, [A, B])
    spec = k._spec
    spec.guards.check([1000, 1000])  # 10^6 elements: fine
    with pytest.raises(tessel.IndexOverflowError, match=r"n=50000, m=50000, the index of [AB] .*int64"):
        spec.guards.check([BIG, BIG])  # what a call with two 10 GB arrays would be refused with
    with pytest.raises(tessel.ArgumentError):  # catchable as any bad call
        spec.guards.check([BIG, BIG])
    a = rand(37, 19)
    check(s, [A, B], [a], [a * 2])


def test_guards_of_a_tiled_kernel_refuse_only_what_overflows():
    """The tiles' tails are loops of their own (loop partitioning); a guard made for a tail
    must not refuse sizes that fit (here 40000 x 53000: 2.12e9 elements)."""
    A, B, s = copy2d(te.var("n"), te.var("m"))
    _, _, ii, ji = s[B].tile(B.op.axis[0], B.op.axis[1], 8, 16)
    s[B].vectorize(ji)
    s[B].unroll(ii)
    spec = tessel.build(s, [A, B])._spec
    spec.guards.check([40000, 53000])
    with pytest.raises(tessel.IndexOverflowError):
        spec.guards.check([40000, 54000])  # 2.16e9
    a = rand(19, 37)
    check(s, [A, B], [a], [a * 2])


def test_a_call_whose_sizes_overflow_the_index_is_refused():
    n, m = te.var("n"), te.var("m")
    X = te.placeholder((n,), name="X")
    W = te.placeholder((m,), name="W")
    Y = te.compute((n,), lambda i: X[(i * m) % n] + W[0], name="Y")  # i*m leaves int32 for n = m = 50000
    s = te.create_schedule(Y.op)
    x, w = rand(BIG), rand(BIG, seed=3)
    for target in ("python", "c"):
        k = tessel.build(s, [X, W, Y], target=target)
        y = garbage_like(x)
        with pytest.raises(tessel.IndexOverflowError) as err:
            k(x, w, y)
        assert "the index of X" in str(err.value) and "te.var('n', dtype='int64')" in str(err.value)
        assert np.isnan(y).all()  # refused before the kernel ran
    small = 1000
    i = np.arange(small, dtype=np.int64)
    check(s, [X, W, Y], [x[:small], w[:small]], [x[:small][i * small % small] + w[0]])


def test_int64_sizes_index_in_int64_and_need_no_guard():
    n, m = te.var("n", dtype="int64"), te.var("m", dtype="int64")
    X = te.placeholder((n,), name="X")
    W = te.placeholder((m,), name="W")
    Y = te.compute((n,), lambda i: X[(i * m) % n] + W[0], name="Y")
    s = te.create_schedule(Y.op)
    assert lowered(s, [X, W, Y]).guards == ()
    x, w = rand(BIG), rand(BIG, seed=3)
    i = np.arange(BIG, dtype=np.int64)
    check(s, [X, W, Y], [x, w], [x[i * BIG % BIG] + w[0]])


def test_a_bounded_overflow_inside_a_symbolic_expression_is_an_error():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((BIG, 2), lambda i, j: A[(i * 100000 + j) % n], name="B")
    with pytest.raises(tessel.LowerError, match=r"the index of A: .*beyond int32.*symbolic size.*n.*int64"):
        tessel.lower(te.create_schedule(B.op), [A, B])


def test_an_unbounded_reach_is_said_in_words_not_converted():
    """The refusal of a narrowing it cannot prove said `int(reach)`, which raised OverflowError
    (a crash instead of the LowerError) when the analysis had no bound at all."""
    from tessel.passes.index_dtype import _bound_text

    assert _bound_text(2.0**40) == str(2**40)
    assert _bound_text(float("inf")) == "any value" and _bound_text(float("-inf")) == "any negative value"


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_a_scalar_size_no_shape_bounds_is_named_and_the_advice_can_be_followed(dtype):
    """The steps given as a scalar argument, the history a temporary: the refusal said "declare
    the sizes int64", and said it again once they were (the byte count is int64 already)."""
    n, steps = te.var("n", dtype=dtype), te.var("S", dtype=dtype)
    A = te.placeholder((n,), name="A")
    h = te.recurrence((steps, n), [te.define(lambda h, t, i: A[i], where=lambda t, i: t == 0),
                                   te.define(lambda h, t, i: h[t - 1, i] * 0.5, where=lambda t, i: t >= 1)], name="h")
    O = te.compute((n,), lambda i: h[steps - 1, i], name="O")
    with pytest.raises(tessel.LowerError, match="S is a scalar argument no argument's shape bounds") as info:
        tessel.build(te.create_schedule(O.op), [A, O, steps], target="python")
    assert "declare the sizes int64" not in str(info.value)
    f = tessel.build(te.create_schedule(h.op), [A, h], target="python")  # the whole history: S is a size
    a = rand(7)
    out = np.empty((4, 7), "float32")
    f(a, out)
    np.testing.assert_allclose(out[-1], a * 0.125, rtol=1e-6)
