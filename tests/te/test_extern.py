"""te.extern: stages computed by functions outside tessel (Python with NumPy, C source, the C
library), reached with call_packed / call_extern / call_pure_extern, on both targets."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import TARGETS, check, rand

import tessel
from tessel import te
from tessel.errors import BuildError, DefinitionError, KernelRuntimeError, ScheduleError

C_AXPY = r"""
#include <stdint.h>
/* out = a*x + row index, and a row-sum into sums: two outputs of one call */
int32_t axpy_rows(float* out, float* sums, const float* x, int32_t n, int32_t m, float a) {
  for (int32_t i = 0; i < n; ++i) {
    float s = 0.0f;
    for (int32_t j = 0; j < m; ++j) { out[i*m + j] = a * x[i*m + j] + (float)i; s += x[i*m + j]; }
    sums[i] = s;
  }
  return 0;
}
"""

# TVM's packed convention: values, type codes (7: a DLTensor), count; strides in elements
C_PACKED = r"""
#include <stdint.h>
typedef union { int64_t v_int64; double v_float64; void* v_handle; } value;
typedef struct { int32_t t, id; } dev;
typedef struct { uint8_t code, bits; uint16_t lanes; } dtype;
typedef struct { void* data; dev device; int32_t ndim; dtype dt; int64_t* shape; int64_t* strides; uint64_t off; } tensor;
int32_t col_flip(const value* args, const int32_t* codes, int32_t n) {
  if (n != 3 || codes[0] != 7 || codes[1] != 7 || codes[2] != 2) return 5;
  const tensor* x = (const tensor*)args[0].v_handle; const tensor* y = (const tensor*)args[1].v_handle;
  double k = args[2].v_float64;
  const float* xd = (const float*)x->data; float* yd = (float*)y->data;
  for (int64_t i = 0; i < x->shape[0]; ++i)
    for (int64_t j = 0; j < x->shape[1]; ++j)
      yd[i * y->strides[0] + j * y->strides[1]] = (float)k * xd[i * x->strides[0] + (x->shape[1] - 1 - j) * x->strides[1]];
  return 0;
}
"""


@pytest.fixture
def registered():
    """Names registered by a test are removed after it (the registry is process-wide)."""
    names: list[str] = []

    def reg(name, f=None, **kw):
        tessel.register_func(name, f, override=True, **kw)
        names.append(name)

    yield reg
    for n in names:
        tessel.remove_global_func(n)


def test_a_numpy_function_computes_an_extern_stage_read_by_a_compute(registered):
    seen = []

    def addone(x, y):
        seen.append((x.shape, y.shape))
        y.copyfrom(x.numpy() + 1)  # TVM's array methods

    registered("tvm.contrib.my_addone", addone)
    n, m = 37, 5
    A = te.placeholder((n, m), name="A")
    B = te.extern(A.shape, [A], lambda ins, outs: te.call_packed("tvm.contrib.my_addone", ins[0], outs[0]), name="B")
    C = te.compute((n, m), lambda i, j: B[i, j] * 2 - A[i, j], name="C")
    s = te.create_schedule(C.op)
    a = rand(n, m, seed=1)
    check(s, [A, C], [a], [(a + 1) * 2 - a])
    assert seen == [((n, m), (n, m))] * len(TARGETS)


def test_a_c_function_with_two_outputs_through_call_extern(registered):
    registered("axpy_rows", c_source=C_AXPY)
    n, m = 13, 9
    X = te.placeholder((n, m), name="X")
    Y, S = te.extern([(n, m), (n,)], [X], lambda ins, outs: te.call_extern(
        "int32", "axpy_rows", outs[0].access_ptr("w"), outs[1].access_ptr("w"), ins[0].access_ptr("r"), n, m,
        te.const(1.5)), name="AX")
    s = te.create_schedule([Y.op])
    x = rand(n, m, seed=2)
    check(s, [X, Y, S], [x], [1.5 * x + np.arange(n, dtype="float32")[:, None], x.sum(axis=1)], rtol=1e-5)


def test_a_c_packed_function_receives_dltensors(registered):
    registered("flip.cols", c_source=C_PACKED, symbol="col_flip")
    n, m = 6, 11
    A = te.placeholder((n, m), name="A")
    B = te.extern((n, m), [A], lambda ins, outs: te.call_packed("flip.cols", ins[0], outs[0], te.const(3.0)), name="B")
    s = te.create_schedule(B.op)
    a = rand(n, m, seed=3)
    check(s, [A, B], [a], [3 * a[:, ::-1]])


def test_pure_scalar_calls_of_the_c_library_and_of_python(registered):
    registered("cube", lambda x: x * x * x)
    n = 29
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: te.call_pure_extern("float32", "expf", A[i]) + te.call_pure_extern(
        "float32", "cube", A[i]), name="B")
    s = te.create_schedule(B.op)
    a = rand(n, seed=4)
    check(s, [A, B], [a], [np.exp(a) + a ** 3], rtol=1e-5)


def test_a_strided_buffer_is_bound_to_its_tensor_and_the_function_sees_the_stride(registered):
    """in_buffers with a stride variable and an offset variable: the bind sets both."""
    registered("row_first", lambda x, y, stride: y.copyfrom(x[:, 0] * stride))
    n, m = 7, 4
    A = te.placeholder((n, m), name="A")
    sv = te.var("sv")
    Ab = te.decl_buffer((n, m), "float32", "Ab", strides=[sv, 1], offset_factor=1)
    B = te.extern((n,), [A], lambda ins, outs: te.call_packed("row_first", ins[0], outs[0], ins[0].strides[0]),
                  name="B", in_buffers=[Ab])
    s = te.create_schedule(B.op)
    a = rand(n, m, seed=5)
    check(s, [A, B], [a], [a[:, 0] * m])


def test_an_extern_can_be_placed_inside_a_consumer_loop(registered):
    registered("neg", lambda x, y: y.copyfrom(-x.numpy()))
    n = 10
    A = te.placeholder((n,), name="A")
    B = te.extern((n,), [A], lambda ins, outs: te.call_packed("neg", ins[0], outs[0]), name="B")
    C = te.compute((n, 3), lambda i, j: B[i] + j, name="C")
    s = te.create_schedule(C.op)
    s[B].compute_at(s[C], C.op.axis[0])
    a = rand(n, seed=6)
    check(s, [A, C], [a], [-a[:, None] + np.arange(3, dtype="float32")])


# ---- what is refused, and how ---------------------------------------------------------------
def test_an_unregistered_function_is_refused_at_build_saying_how_to_register():
    A = te.placeholder((4,), name="A")
    B = te.extern((4,), [A], lambda ins, outs: te.call_packed("nobody.home", ins[0], outs[0]), name="B")
    for target in TARGETS:
        with pytest.raises(BuildError, match=r"'nobody.home', which is not registered.*register_func"):
            tessel.build(te.create_schedule(B.op), [A, B], target=target)


@pytest.mark.parametrize("target", TARGETS)
def test_an_exception_in_the_python_function_is_raised_by_the_call(registered, target):
    def broken(x, y):
        raise ValueError("no luck")

    registered("broken", broken)
    A = te.placeholder((4,), name="A")
    B = te.extern((4,), [A], lambda ins, outs: te.call_packed("broken", ins[0], outs[0]), name="B")
    f = tessel.build(te.create_schedule(B.op), [A, B], target=target)
    with pytest.raises(KernelRuntimeError, match="'broken' it calls raised ValueError: no luck"):
        f(rand(4), np.zeros(4, "float32"))


def test_a_c_symbol_must_be_a_c_identifier_and_names_are_never_pasted_into_c(registered):
    with pytest.raises(DefinitionError, match="not a C identifier"):
        tessel.register_func("x", c_source="int f(void){return 0;}", symbol="f(); system(\"ls\")")
    with pytest.raises(DefinitionError, match="not a C identifier.*symbol="):
        tessel.register_func("my.func", c_source="int f(void){return 0;}")
    evil = 'tsl_funcs*/ #include "x"\n'
    registered(evil, lambda x, y: y.copyfrom(x.numpy() * 2))
    A = te.placeholder((5,), name="A")
    B = te.extern((5,), [A], lambda ins, outs: te.call_packed(evil, ins[0], outs[0]), name="B")
    s = te.create_schedule(B.op)
    a = rand(5, seed=7)
    kernels = check(s, [A, B], [a], [2 * a])
    lines = [ln.strip() for ln in kernels["c"].source.splitlines() if "include \"x\"" in ln]
    assert lines and all(ln.startswith("// tsl_funcs[0]") and "*/" not in ln for ln in lines)  # one comment line


def test_registration_refuses_a_second_function_under_one_name(registered):
    registered("twice", lambda: 0)
    with pytest.raises(DefinitionError, match="already registered.*override=True"):
        tessel.register_func("twice", lambda: 1)


def test_pointers_to_a_python_function_are_refused(registered):
    registered("takes_ptr", lambda p: 0)
    A = te.placeholder((4,), name="A")
    B = te.extern((4,), [A], lambda ins, outs: te.call_extern("int32", "takes_ptr", outs[0].access_ptr("w")),
                  name="B")
    for target in TARGETS:
        with pytest.raises(BuildError, match="passes pointers to a Python function.*call_packed"):
            tessel.build(te.create_schedule(B.op), [A, B], target=target)


def test_an_extern_stage_cannot_be_inlined_and_buffers_must_match_their_tensors():
    A = te.placeholder((4, 3), name="A")
    B = te.extern((4, 3), [A], lambda ins, outs: te.call_packed("f", ins[0], outs[0]), name="B")
    C = te.compute((4, 3), lambda i, j: B[i, j] + 1, name="C")
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match="stage B: an extern stage cannot be inlined"):
        s[B].compute_inline()
    wrong = te.decl_buffer((4,), "float32", "W")
    with pytest.raises(DefinitionError, match="input buffer W is float32 of 1 dimension.*2"):
        te.extern((4, 3), [A], lambda ins, outs: te.call_packed("f", ins[0], outs[0]), in_buffers=[wrong])


def test_a_compact_buffer_bound_to_a_region_of_other_strides_is_refused_with_the_fix(registered):
    registered("ident", lambda x, y: y.copyfrom(x.numpy()))
    A = te.placeholder((4, 6), name="A")
    # declares 4x6 with a stride of 8: the tensor's rows are 6 apart
    Ab = te.decl_buffer((4, 6), "float32", "Ab", strides=[8, 1])
    B = te.extern((4, 6), [A], lambda ins, outs: te.call_packed("ident", ins[0], outs[0]), in_buffers=[Ab], name="B")
    with pytest.raises(tessel.LowerError, match=r"buffer Ab bound to A: its stride of dimension 0 is declared 8.*needs 6"):
        tessel.lower(te.create_schedule(B.op), [A, B])


def test_an_extern_stage_of_symbolic_size(registered):
    registered("sym.twice", lambda x, y, n: y.copyfrom(x.numpy() * 2 + n))
    n = te.var("n")
    A = te.placeholder((n, 3), name="A")
    B = te.extern((n, 3), [A], lambda ins, outs: te.call_packed("sym.twice", ins[0], outs[0], n), name="B")
    s = te.create_schedule(B.op)
    for rows in (1, 7):
        a = rand(rows, 3, seed=rows)
        check(s, [A, B], [a], [a * 2 + rows])


def test_arrays_given_to_python_copy_both_ways(registered):
    registered("copy.to", lambda x, y: x.copyto(y))
    A = te.placeholder((3, 4), name="A")
    B = te.extern((3, 4), [A], lambda ins, outs: te.call_packed("copy.to", ins[0], outs[0]), name="B")
    a = rand(3, 4, seed=9)
    check(te.create_schedule(B.op), [A, B], [a], [a])


def test_c_source_that_does_not_compile_or_lacks_the_symbol_is_refused():
    with pytest.raises(BuildError, match="the C compiler failed"):
        tessel.register_func("bad.c", c_source="int32_t f(void) { return nope; }", symbol="f")
    with pytest.raises(BuildError, match="'bad.sym'.*lacks the symbol 'g'"):
        tessel.register_func("bad.sym", c_source="int f(void) { return 0; }", symbol="g")
    assert "bad.c" not in tessel.list_global_func_names() and "bad.sym" not in tessel.list_global_func_names()


def test_a_python_function_called_for_its_effect_with_numbers(registered):
    seen = []
    registered("note", lambda i, x: seen.append((i, round(x, 4))))
    n = 5
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + te.call_extern("float32", "note", i, A[i]), name="B")
    a = rand(n, seed=10)
    for target in TARGETS:
        seen.clear()
        out = np.empty(n, "float32")
        tessel.build(te.create_schedule(B.op), [A, B], target=target)(a, out)
        np.testing.assert_allclose(out, a, err_msg=target)  # None counts as 0
        assert seen == [(i, round(float(a[i]), 4)) for i in range(n)], target
