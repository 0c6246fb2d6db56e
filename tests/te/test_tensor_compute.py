"""A compute defined as a tensor intrinsic called on regions (``lambda i: vadd(A[i, 0:16], ...)``):
its loops are scheduled as any stage's, the intrinsic's statements run once per iteration (C
micro-kernels and a NumPy one), checked against NumPy on random data; a call that does not fit
the intrinsic is refused where it is written."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import check, rand

import tessel
from tessel import te
from tessel.bound.infer import run_infer_bound
from tessel.errors import DefinitionError, LowerError, ScheduleError

C_SRC = r"""
#include <stdint.h>
/* z[k] = x[k] + y[k] over 16 contiguous elements */
int32_t tc_vadd(const float* x, const float* y, float* z) {
  for (int k = 0; k < 16; ++k) z[k] = x[k] + y[k];
  return 0;
}
/* z[r] (+)= sum_c w[r*ldw + c] * x[c], a 16x16 gemv */
int32_t tc_gemv(const float* w, const float* x, float* z, int32_t ldw) {
  for (int r = 0; r < 16; ++r) { float s = 0; for (int c = 0; c < 16; ++c) s += w[r * ldw + c] * x[c]; z[r] = s; }
  return 0;
}
int32_t tc_gemv_add(const float* w, const float* x, float* z, int32_t ldw) {
  for (int r = 0; r < 16; ++r) { float s = 0; for (int c = 0; c < 16; ++c) s += w[r * ldw + c] * x[c]; z[r] += s; }
  return 0;
}
int32_t tc_zero(float* z) { for (int r = 0; r < 16; ++r) z[r] = 0; return 0; }
/* z[k] = x[k] * a + b over n elements */
int32_t tc_axpb(const float* x, float* z, int32_t n, float a, float b) {
  for (int k = 0; k < n; ++k) z[k] = x[k] * a + b;
  return 0;
}
"""
NAMES = ("tc_vadd", "tc_gemv", "tc_gemv_add", "tc_zero", "tc_axpb")


@pytest.fixture(scope="module", autouse=True)
def kernels():
    for n in NAMES:
        tessel.register_func(n, c_source=C_SRC, override=True)
    calls = []
    tessel.register_func("tc_py_vadd", lambda x, y, z: (calls.append(1), z.copyfrom(x.numpy() + y.numpy())),
                         override=True)
    yield calls
    for n in (*NAMES, "tc_py_vadd"):
        tessel.remove_global_func(n)


def vadd(fname: str = "tc_vadd"):
    x = te.placeholder((16,), name="x")
    y = te.placeholder((16,), name="y")
    z = te.compute((16,), lambda i: x[i] + y[i], name="z")

    def body(ins, outs):
        if fname == "tc_vadd":
            return te.call_extern("int32", fname, ins[0].access_ptr("r"), ins[1].access_ptr("r"),
                                  outs[0].access_ptr("w"))
        return te.call_packed(fname, ins[0], ins[1], outs[0])

    return te.decl_tensor_intrin(z.op, body, name="vadd16", default_buffer_params={"offset_factor": 1})


def gemv(with_init: bool = True):
    """z[16] = w[16, 16] . x[16], with reset and update for a reduction split outside it."""
    w = te.placeholder((16, 16), name="w")
    x = te.placeholder((16,), name="x")
    k = te.reduce_axis((0, 16), name="k")
    z = te.compute((16,), lambda i: te.sum(w[i, k] * x[k], axis=k), name="z")
    wb = te.decl_buffer(w.shape, w.dtype, name="W", offset_factor=1, strides=[te.var("ldw"), 1])

    def parts(ins, outs):
        ww, xx = ins
        zz = outs[0]
        args = (ww.access_ptr("r"), xx.access_ptr("r"), zz.access_ptr("rw"), ww.strides[0])
        body = te.call_extern("int32", "tc_gemv", *args)
        update = te.call_extern("int32", "tc_gemv_add", *args)
        reset = te.call_extern("int32", "tc_zero", zz.access_ptr("w"))
        return body, (reset if with_init else None), update

    return te.decl_tensor_intrin(z.op, parts, name="gemv16", binds={w: wb},
                                 default_buffer_params={"offset_factor": 1})


@pytest.mark.parametrize("rows", [1, 7, 40])
def test_rows_added_by_the_intrinsic_whatever_the_loop_schedule(rows):
    A = te.placeholder((rows, 16), name="A")
    B = te.placeholder((rows, 16), name="B")
    op = vadd()
    C = te.compute((rows, 16), lambda i: op(A[i, 0:16], B[i, 0:16]), name="C")
    assert isinstance(C.op, te.TensorComputeOp) and len(C.op.axis) == 2
    s = te.create_schedule(C.op)
    assert [iv.name for iv in s[C].leaf_iter_vars] == ["i"]  # the intrinsic's axis is no loop
    xo, xi = s[C].split(C.op.axis[0], factor=3)  # uneven: guarded
    s[C].parallel(xo)
    text = str(tessel.lower(s, [A, B, C], simple_mode=True))
    assert "call_extern('tc_vadd'" in text and "ax0" not in text  # no loop over the intrinsic's axis
    a, b = rand(rows, 16, seed=1), rand(rows, 16, seed=2)
    check(s, [A, B, C], [a, b], [a + b])


def test_a_numpy_intrinsic_through_call_packed_once_per_row(kernels):
    A = te.placeholder((5, 16), name="A")
    B = te.placeholder((5, 16), name="B")
    op = vadd("tc_py_vadd")
    C = te.compute((5, 16), lambda i: op(A[i, 0:16], B[i, 0:16]), name="C")
    s = te.create_schedule(C.op)
    a, b = rand(5, 16, seed=3), rand(5, 16, seed=4)
    kernels.clear()
    check(s, [A, B, C], [a, b], [a + b])
    assert len(kernels) == 5 * 2  # five rows, on each target


@pytest.mark.parametrize("with_init", [True, False])
def test_a_reduction_over_calls_uses_init_and_update(with_init):
    """C[i, j, :] = sum_k A[i, k] (16x16 block) . B[j, k] (16 values): the call's reduce_axis is a
    loop of the stage; without reduce_init the first step runs the body (TVM's rule)."""
    n, m, kb = 3, 5, 4
    A = te.placeholder((n, kb, 16, 16), name="A")
    B = te.placeholder((m, kb, 16), name="B")
    k = te.reduce_axis((0, kb), name="k")
    op = gemv(with_init)
    C = te.compute((n, m, 16), lambda i, j: op(A[i, k, 0:16, 0:16], B[j, k, 0:16], reduce_axis=k), name="C")
    s = te.create_schedule(C.op)
    i, j, kk = s[C].leaf_iter_vars
    s[C].reorder(kk, i, j)  # the reduction outermost: each element's steps still start with its init
    a, b = rand(n, kb, 16, 16, seed=5), rand(m, kb, 16, seed=6)
    want = np.einsum("ikrc,jkc->ijr", a, b)
    check(s, [A, B, C], [a, b], [want], rtol=1e-4, atol=1e-4)
    text = str(tessel.lower(s, [A, B, C], simple_mode=True))
    assert ("tc_zero" in text) == with_init


def test_scalar_arguments_set_the_intrinsics_parameters():
    n, a_, b_ = te.var("n"), te.var("a", "float32"), te.var("b", "float32")
    x = te.placeholder((n,), name="x")
    z = te.compute((n,), lambda i: x[i] * a_ + b_, name="z")
    intrin = te.decl_tensor_intrin(
        z.op, lambda ins, outs, sp: te.call_extern("int32", "tc_axpb", ins[0].access_ptr("r"), outs[0].access_ptr("w"),
                                                   ins[0].shape[0], sp[0], sp[1]),
        scalar_params=[a_, b_], default_buffer_params={"offset_factor": 1})
    assert intrin.scalar_params == (a_, b_)
    A = te.placeholder((6, 9), name="A")
    C = te.compute((6, 9), lambda i: intrin((i + 1).astype("float32"), A[i, 0:9], 0.5), name="C")
    s = te.create_schedule(C.op)
    a = rand(6, 9, seed=7)
    check(s, [A, C], [a], [(a * (np.arange(6)[:, None] + 1) + 0.5).astype("float32")], rtol=1e-5)


def test_a_producer_computed_per_row_and_a_cache_of_the_result():
    A = te.placeholder((9, 16), name="A")
    B = te.placeholder((9, 16), name="B")
    B2 = te.compute((9, 16), lambda i, j: B[i, j] * 2, name="B2")
    op = vadd()
    C = te.compute((9, 16), lambda i: op(A[i, 0:16], B2[i, 0:16]), name="C")
    s = te.create_schedule(C.op)
    CL = s.cache_write(C, "local")
    s[B2].compute_at(s[CL], CL.op.axis[0])
    bounds = run_infer_bound(s).rmap
    assert bounds[B2.op.axis[0]].extent.value == 1 and bounds[B2.op.axis[1]].extent.value == 16
    a, b = rand(9, 16, seed=8), rand(9, 16, seed=9)
    check(s, [A, B, C], [a, b], [a + 2 * b])


def test_inferbound_takes_the_regions_as_written():
    A = te.placeholder((20, 16), name="A")
    B = te.compute((20, 16), lambda i, j: A[i, j] + 1, name="B")
    C = te.compute((10, 16), lambda i: vadd()(B[i + 3, 0:16], B[i + 4, 0:16]), name="C")
    s = te.create_schedule(C.op)
    r = run_infer_bound(s).rmap[B.op.axis[0]]
    assert (r.min.value, r.extent.value) == (3, 11)


def test_calls_that_do_not_fit_the_intrinsic_are_refused():
    A = te.placeholder((4, 16), name="A")
    B = te.placeholder((4, 8), name="B")
    op = vadd()
    with pytest.raises(DefinitionError, match="16 elements in dimension 0, the region of B 8"):
        te.compute((4, 16), lambda i: op(A[i, 0:16], B[i, 0:8]))
    with pytest.raises(DefinitionError, match="takes 2 tensor region"):
        te.compute((4, 16), lambda i: op(A[i, 0:16]))
    with pytest.raises(DefinitionError, match="leading dimension 0 must have extent 1"):
        te.compute((4, 16), lambda i: op(A[0:2, 0:16], A[i, 0:16]))
    with pytest.raises(DefinitionError, match="no reduce_update"):
        te.compute((4, 16), lambda i: op(A[i, 0:16], A[i, 0:16], reduce_axis=te.reduce_axis((0, 2))))
    with pytest.raises(DefinitionError, match="is a slice"):
        te.compute((4,), lambda i: A[i, 0:2] + 1)


def test_scheduling_that_cannot_hold_is_refused():
    A = te.placeholder((4, 16), name="A")
    A2 = te.compute((4, 16), lambda i, j: A[i, j] + 1, name="A2")
    op = vadd()
    C = te.compute((4, 16), lambda i: op(A2[i, 0:16], A[i, 0:16]), name="C")
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match="already computed by the intrinsic vadd16"):
        s[C].tensorize(C.op.axis[0], op)
    s[A2].compute_inline()
    with pytest.raises(LowerError, match="which is inlined"):
        tessel.lower(s, [A, C])
    s2 = te.create_schedule(C.op)
    s2[C].split(C.op.axis[0], 2)
    with pytest.raises(ScheduleError, match="cache_write it first"):
        s2.cache_write(C, "local")
