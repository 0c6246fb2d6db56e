"""tensorize: an inner 16x16 matmul tile replaced by a registered micro-kernel (C, and a NumPy
function), checked on random data and on sizes that are not multiples of the tile; mismatches
are refused naming what differs."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import check, rand

import tessel
from tessel import te
from tessel.errors import LowerError, ScheduleError

# c[16x16] = a[16xk] . b[16xk]^T, rows sa/sb/sc elements apart: a whole reduction per call
C_GEMM = r"""
#include <stdint.h>
int32_t tile_gemm(float* c, const float* a, const float* b, int32_t k, int32_t sa, int32_t sb, int32_t sc) {
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j) {
      float s = 0.0f;
      for (int r = 0; r < k; ++r) s += a[i * sa + r] * b[j * sb + r];
      c[i * sc + j] = s;
    }
  return 0;
}
int32_t tile_reset(float* c, int32_t sc) {
  for (int i = 0; i < 16; ++i) for (int j = 0; j < 16; ++j) c[i * sc + j] = 0.0f;
  return 0;
}
int32_t tile_update(float* c, const float* a, const float* b, int32_t sa, int32_t sb, int32_t sc) {
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j)
      for (int r = 0; r < 16; ++r) c[i * sc + j] += a[i * sa + r] * b[j * sb + r];
  return 0;
}
"""


C_GEMV = r"""
#include <stdint.h>
/* cc[i] (+)= sum_j aa[j] * bb[i*stride + j], as in TVM's tensorize tutorial */
int32_t gemv_update(float* cc, const float* aa, const float* bb, int32_t m, int32_t l, int32_t stride) {
  for (int i = 0; i < m; ++i) for (int j = 0; j < l; ++j) cc[i] += aa[j] * bb[i * stride + j];
  return 0;
}
int32_t gemv_reset(float* cc, int32_t m) { for (int i = 0; i < m; ++i) cc[i] = 0.0f; return 0; }
"""


@pytest.fixture(scope="module", autouse=True)
def kernels():
    names = ["tile_gemm", "tile_reset", "tile_update"]
    for n in names:
        tessel.register_func(n, c_source=C_GEMM, override=True)
    calls = []
    tessel.register_func("py_tile", lambda c, a, b: (calls.append(1), c.copyfrom(a.numpy() @ b.numpy().T)),
                         override=True)
    for n in ("gemv_update", "gemv_reset"):
        tessel.register_func(n, c_source=C_GEMV, override=True)
    yield calls
    for n in [*names, "py_tile", "gemv_update", "gemv_reset"]:
        tessel.remove_global_func(n)


def _operands(k: int, b_transposed: bool = False):
    a = te.placeholder((16, k), name="a")
    b = te.placeholder((k, 16) if b_transposed else (16, k), name="b")
    r = te.reduce_axis((0, k), name="r")
    if b_transposed:
        c = te.compute((16, 16), lambda i, j: te.sum(a[i, r] * b[r, j], axis=r), name="c")
    else:
        c = te.compute((16, 16), lambda i, j: te.sum(a[i, r] * b[j, r], axis=r), name="c")
    binds = {t: te.decl_buffer(t.shape, t.dtype, t.op.name + "_buf", offset_factor=1,
                               strides=[te.var(t.op.name + "_s"), 1]) for t in (a, b, c)}
    return a, b, c, binds


def whole_gemm(k: int, b_transposed: bool = False):
    """A micro-kernel computing a 16x16 tile over the whole reduction of length k."""
    a, b, c, binds = _operands(k, b_transposed)

    def body(ins, outs):
        aa, bb = ins
        cc = outs[0]
        return te.call_extern("int32", "tile_gemm", cc.access_ptr("w"), aa.access_ptr("r"), bb.access_ptr("r"), k,
                              aa.strides[0], bb.strides[0], cc.strides[0])

    return te.decl_tensor_intrin(c.op, body, name="gemm16", binds=binds)


def stepped_gemm():
    """A 16x16x16 micro-kernel with reset and update, for a reduction split outside it."""
    a, b, c, binds = _operands(16)

    def parts(ins, outs):
        aa, bb = ins
        cc = outs[0]
        reset = te.call_extern("int32", "tile_reset", cc.access_ptr("w"), cc.strides[0])
        update = te.call_extern("int32", "tile_update", cc.access_ptr("rw"), aa.access_ptr("r"), bb.access_ptr("r"),
                                aa.strides[0], bb.strides[0], cc.strides[0])
        return tessel.ir.stmt.seq(tessel.ir.stmt.Evaluate(reset), tessel.ir.stmt.Evaluate(update)), reset, update

    return te.decl_tensor_intrin(c.op, parts, name="gemm16x16x16", binds=binds)


def matmul(m: int, n: int, k: int):
    A = te.placeholder((m, k), name="A")
    B = te.placeholder((n, k), name="B")
    r = te.reduce_axis((0, k), name="k")
    C = te.compute((m, n), lambda i, j: te.sum(A[i, r] * B[j, r], axis=r), name="C")
    return A, B, C


@pytest.mark.parametrize("m,n,k", [(48, 32, 24), (37, 45, 24), (16, 81, 7)])
def test_an_inner_16x16_matmul_is_replaced_by_a_c_micro_kernel(m, n, k):
    A, B, C = matmul(m, n, k)
    s = te.create_schedule(C.op)
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], 16, 16)
    s[C].tensorize(xi, whole_gemm(k))
    text = str(tessel.lower(s, [A, B, C], simple_mode=True))
    assert "call_extern('tile_gemm'" in text
    assert "for (i.inner" not in text.split("call_extern")[0]  # the full tiles have no scalar loops
    a, b = rand(m, k, seed=1), rand(n, k, seed=2)
    check(s, [A, B, C], [a, b], [a @ b.T], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("m,n,k", [(32, 48, 64), (40, 19, 40)])
def test_a_reduction_split_outside_the_tile_uses_reset_and_update(m, n, k):
    A, B, C = matmul(m, n, k)
    s = te.create_schedule(C.op)
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], 16, 16)
    ko, ki = s[C].split(C.op.reduce_axis[0], factor=16)
    s[C].reorder(xo, yo, ko, xi, yi, ki)
    s[C].tensorize(xi, stepped_gemm())
    text = str(tessel.lower(s, [A, B, C], simple_mode=True))
    assert "call_extern('tile_reset'" in text and "call_extern('tile_update'" in text
    a, b = rand(m, k, seed=3), rand(n, k, seed=4)
    check(s, [A, B, C], [a, b], [a @ b.T], rtol=1e-4, atol=1e-5)


def test_a_numpy_micro_kernel_through_call_packed(kernels):
    a_, b_, c_, binds = _operands(20)
    intrin = te.decl_tensor_intrin(c_.op, lambda ins, outs: te.call_packed("py_tile", outs[0], ins[0], ins[1]),
                                   name="py16", binds=binds)
    A, B, C = matmul(32, 16, 20)
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=16)
    s[C].tensorize(xi, intrin)
    a, b = rand(32, 20, seed=5), rand(16, 20, seed=6)
    kernels.clear()
    check(s, [A, B, C], [a, b], [a @ b.T], rtol=1e-4, atol=1e-5)
    assert len(kernels) == 2 * 2  # two tiles, on each target


# ---- refusals, naming the mismatch ----------------------------------------------------------
def test_a_different_computation_is_refused_showing_both_sides():
    A, B, C = matmul(32, 32, 24)
    s = te.create_schedule(C.op)
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], 16, 16)
    s[C].tensorize(xi, whole_gemm(24, b_transposed=True))
    with pytest.raises(LowerError, match=r"stage C: tensorize at i.inner with intrinsic gemm16: the computation does "
                                         r"not match.*stage computes .*b\[j, r\].*declares .*b\[r, j\].*"
                                         r"first differ at `b\[j, r\]` vs `b\[r, j\]`"):
        tessel.lower(s, [A, B, C])


def test_a_tile_of_the_wrong_size_is_refused_with_the_split_to_make():
    A, B, C = matmul(32, 32, 24)
    s = te.create_schedule(C.op)
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], 8, 16)
    s[C].tensorize(xi, whole_gemm(24))
    with pytest.raises(LowerError, match=r"cover 8 iteration\(s\) of axis i, but the intrinsic's axis i has 16; "
                                         r"split i by 16"):
        tessel.lower(s, [A, B, C])


def _split_k(m, n, k, intrin):
    A, B, C = matmul(m, n, k)
    s = te.create_schedule(C.op)
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], 16, 16)
    ko, ki = s[C].split(C.op.reduce_axis[0], factor=16)
    s[C].reorder(xo, yo, ko, xi, yi, ki)
    s[C].tensorize(xi, intrin)
    return s, (A, B, C)


def test_reduction_loops_outside_need_an_update():
    s, args = _split_k(32, 32, 32, whole_gemm(16))
    with pytest.raises(LowerError, match="needs reduce_update"):
        tessel.lower(s, list(args))


def test_without_reduce_init_the_tile_starts_from_the_identity():
    a_, b_, c_, binds = _operands(16)

    def parts(ins, outs):
        aa, bb = ins
        cc = outs[0]
        update = te.call_extern("int32", "tile_update", cc.access_ptr("rw"), aa.access_ptr("r"), bb.access_ptr("r"),
                                aa.strides[0], bb.strides[0], cc.strides[0])
        return tessel.ir.stmt.Evaluate(update), None, update

    s, (A, B, C) = _split_k(48, 35, 40, te.decl_tensor_intrin(c_.op, parts, name="update_only", binds=binds))
    text = str(tessel.lower(s, [A, B, C], simple_mode=True))
    assert "tile_reset" not in text and "tile_update" in text
    a, b = rand(48, 40, seed=18), rand(35, 40, seed=19)
    check(s, [A, B, C], [a, b], [a @ b.T], rtol=1e-4, atol=1e-5)


def test_tensorize_checks_its_arguments_at_once():
    A, B, C = matmul(32, 32, 16)
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match="needs a tensor intrinsic made by decl_tensor_intrin"):
        s[C].tensorize(C.op.axis[0], "gemm")
    xo, xi = s[C].split(C.op.axis[0], factor=16)
    with pytest.raises(ScheduleError, match="cannot tensorize axis i: it is no longer a loop"):
        s[C].tensorize(C.op.axis[0], whole_gemm(16))


def test_micro_kernels_called_from_parallel_tiles(kernels):
    """C and Python micro-kernels run from OpenMP threads (a Python one through a callback)."""
    a_, b_, c_, binds = _operands(12)
    py = te.decl_tensor_intrin(c_.op, lambda ins, outs: te.call_packed("py_tile", outs[0], ins[0], ins[1]),
                               name="py16", binds=binds)
    for intrin in (whole_gemm(12), py):
        A, B, C = matmul(80, 35, 12)
        s = te.create_schedule(C.op)
        xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], 16, 16)
        s[C].parallel(xo)
        s[C].tensorize(xi, intrin)
        a, b = rand(80, 12, seed=7), rand(35, 12, seed=8)
        check(s, [A, B, C], [a, b], [a @ b.T], rtol=1e-4, atol=1e-5)


def test_a_remembered_kernel_keeps_its_table_of_functions():
    """The second build of a kernel comes from the memo of generated code: its outside functions
    are found again when it is loaded."""
    A, B, C = matmul(32, 32, 8)
    for _ in range(2):
        s = te.create_schedule(C.op)
        xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], 16, 16)
        s[C].tensorize(xi, whole_gemm(8))
        a, b = rand(32, 8, seed=9), rand(32, 8, seed=10)
        check(s, [A, B, C], [a, b], [a @ b.T], targets=("c",), rtol=1e-4, atol=1e-5)


def test_the_micro_kernel_reads_a_cache_placed_around_its_tile():
    """The intrinsic's input bound to a cache realized per tile (its offsets relative to the
    cache's region, its row length the cache's)."""
    m, n, k = 40, 32, 24
    A, B, C = matmul(m, n, k)
    s = te.create_schedule(C.op)
    AL = s.cache_read(A, "local", [s[C]])
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], 16, 16)
    s[AL].compute_at(s[C], yo)
    s[C].tensorize(xi, whole_gemm(k))
    text = str(tessel.lower(s, [A, B, C], simple_mode=True))
    assert "A.local" in text and "call_extern('tile_gemm'" in text
    a, b = rand(m, k, seed=11), rand(n, k, seed=12)
    check(s, [A, B, C], [a, b], [a @ b.T], rtol=1e-4, atol=1e-5)


def test_unrolled_and_vectorized_loops_around_micro_kernels():
    """Copies of the tile (unrolled) bind the same buffer variables again; a vectorized loop
    holding a call stays a loop."""
    A, B, C = matmul(32, 48, 8)
    s = te.create_schedule(C.op)
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], 16, 16)
    s[C].unroll(yo)
    s[C].tensorize(xi, whole_gemm(8))
    a, b = rand(32, 8, seed=13), rand(48, 8, seed=14)
    check(s, [A, B, C], [a, b], [a @ b.T], rtol=1e-4, atol=1e-5)
    n = 20
    X = te.placeholder((n,), name="X")
    Y = te.compute((n,), lambda i: te.call_pure_extern("float32", "expf", X[i]) * 2, name="Y")
    s = te.create_schedule(Y.op)
    s[Y].vectorize(Y.op.axis[0])
    x = rand(n, seed=15)
    check(s, [X, Y], [x], [np.exp(x) * 2], rtol=1e-6)




def _gemv(m: int, l: int):
    """The tutorial's intrinsic: a 1-d output, written with ir_builder (body, reset, update)."""
    from tessel.te import ir_builder

    a = te.placeholder((l,), name="a")
    b = te.placeholder((m, l), name="b")
    k = te.reduce_axis((0, l), name="k")
    c = te.compute((m,), lambda i: te.sum(a[k] * b[i, k], axis=k), name="c")
    Ab = te.decl_buffer(a.shape, a.dtype, name="A", offset_factor=1, strides=[1])
    Bb = te.decl_buffer(b.shape, b.dtype, name="B", offset_factor=1, strides=[te.var("s1"), 1])
    Cb = te.decl_buffer(c.shape, c.dtype, name="C", offset_factor=1, strides=[1])

    def intrin_func(ins, outs):
        aa, bb = ins
        cc = outs[0]

        def call(name, *args):
            ib = ir_builder.create()
            ib.emit(te.call_extern("int32", name, *args))
            return ib.get()

        reset = call("gemv_reset", cc.access_ptr("w"), m)
        update = call("gemv_update", cc.access_ptr("w"), aa.access_ptr("r"), bb.access_ptr("r"), m, l, bb.strides[0])
        return tessel.ir.stmt.seq(reset, update), reset, update

    return te.decl_tensor_intrin(c.op, intrin_func, binds={a: Ab, b: Bb, c: Cb})


@pytest.mark.parametrize("split_reduction", [False, True])
def test_the_tutorial_gemv_matches_a_2d_stage_by_its_inner_axis(split_reduction):
    N, M, L = 7, 48, 32
    A = te.placeholder((N, L), name="A")
    B = te.placeholder((M, L), name="B")
    k = te.reduce_axis((0, L), name="k")
    C = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[j, k], axis=k), name="C")
    s = te.create_schedule(C.op)
    x, y = C.op.axis
    yo, yi = s[C].split(y, factor=16)
    if split_reduction:
        zo, zi = s[C].split(k, factor=16)
        s[C].reorder(x, yo, zo, yi, zi)
        s[C].tensorize(yi, _gemv(16, 16))
    else:
        s[C].reorder(x, yo, yi, k)
        s[C].tensorize(yi, _gemv(16, L))
    a, b = rand(N, L, seed=16), rand(M, L, seed=17)
    check(s, [A, B, C], [a, b], [a @ b.T], rtol=1e-4, atol=1e-5)
