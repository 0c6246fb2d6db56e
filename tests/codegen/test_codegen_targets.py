"""Both targets on hand-written lowered PrimFuncs: values vs. NumPy and python vs. C."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
from cg_util import assert_agree, elementwise, ld, loop, rand, run, st

from tessel.driver import build_func
from tessel.errors import BuildError
from tessel.ir import expr as E
from tessel.ir import stmt as S
from tessel.ir.expr import const
from tessel.runtime.module import KernelRuntimeError

INT_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


def _float16_ok() -> bool:
    from tessel.runtime.compiler import find_compiler

    try:
        return find_compiler().supports("float16")
    except BuildError:
        return False


def test_vadd_symbolic_size_and_kernel_attributes():
    n = E.Var("n", "int32")
    A, B, C = (S.Buffer(x, "float32", (n,)) for x in "ABC")
    f = elementwise("vadd", [A, B], [(C, lambda i: ld(A, i) + ld(B, i))], n)
    for size in (1, 7, 1027):
        a, b = rand(size, "float32", 1), rand(size, "float32", 2)
        assert_agree(run(f, [a, b]), [a + b])
    k = build_func(f, "c")
    assert k.name == "vadd" and k.target == "c" and k.func is f
    assert "const float* restrict A" in k.source and "float* restrict C" in k.source
    assert "for (int32_t i = 0; i < n; ++i)" in k.source
    assert os.path.exists(k.lib_path) and isinstance(k.cache_hit, bool) and k.build_time_s >= 0
    p = build_func(f, "python")
    assert "for i in _loop(int32, 0, n):" in p.source and p.target == "python"


@pytest.mark.parametrize("dt", INT_DTYPES)
def test_integer_dtypes_wrap_like_numpy(dt):
    n = E.Var("n", "int32")
    A, B = S.Buffer("A", dt, (n,)), S.Buffer("B", dt, (n,))
    outs = [S.Buffer(f"O{k}", dt, (n,)) for k in range(5)]
    three = const(3, dt)
    f = elementwise(f"ints_{dt}", [A, B], [
        (outs[0], lambda i: ld(A, i)),
        (outs[1], lambda i: ld(A, i) * three + ld(B, i)),
        (outs[2], lambda i: ld(A, i) - ld(B, i)),
        (outs[3], lambda i: ld(A, i) * ld(B, i)),
        (outs[4], lambda i: E.max_(ld(A, i), ld(B, i)) - E.min_(ld(A, i), ld(B, i))),
    ], n)
    a, b = rand(64, dt, 1, full_range=True), rand(64, dt, 2, full_range=True)
    t = np.dtype(dt).type
    with np.errstate(over="ignore"):
        want = [a, a * t(3) + b, a - b, a * b, np.maximum(a, b) - np.minimum(a, b)]
    assert_agree(run(f, [a, b]), want)


@pytest.mark.parametrize("dt", ["float32", "float64", "float16"])
def test_float_dtypes(dt):
    if dt == "float16" and not _float16_ok():
        pytest.skip("the C compiler has no _Float16")
    n = E.Var("n", "int32")
    A, B = S.Buffer("A", dt, (n,)), S.Buffer("B", dt, (n,))
    outs = [S.Buffer(f"O{k}", dt, (n,)) for k in range(4)]
    f = elementwise(f"floats_{dt}", [A, B], [
        (outs[0], lambda i: ld(A, i)),
        (outs[1], lambda i: ld(A, i) * ld(B, i) + ld(A, i)),
        (outs[2], lambda i: ld(A, i) / ld(B, i) - const(0.25, dt)),
        (outs[3], lambda i: E.select(ld(A, i) < ld(B, i), ld(A, i), -ld(B, i))),
    ], n)
    a, b = rand(100, dt, 1), rand(100, dt, 2)
    t = np.dtype(dt).type
    want = [a, a * b + a, a / b - t(0.25), np.where(a < b, a, -b)]
    tol = {"float16": 2e-3, "float32": 1e-6, "float64": 1e-14}[dt]
    assert_agree(run(f, [a, b]), want, rtol=tol, atol=tol)


def test_bool_dtype():
    n = E.Var("n", "int32")
    A, B = S.Buffer("A", "bool", (n,)), S.Buffer("B", "bool", (n,))
    outs = [S.Buffer(f"O{k}", "bool", (n,)) for k in range(5)]
    f = elementwise("bools", [A, B], [
        (outs[0], lambda i: ld(A, i)),
        (outs[1], lambda i: E.logical_not(ld(A, i))),
        (outs[2], lambda i: E.logical_and(ld(A, i), ld(B, i))),
        (outs[3], lambda i: E.logical_or(ld(A, i), E.logical_not(ld(B, i)))),
        (outs[4], lambda i: E.eq(ld(A, i), ld(B, i))),
    ], n)
    a, b = rand(50, "bool", 1), rand(50, "bool", 2)
    assert_agree(run(f, [a, b]), [a, ~a, a & b, a | ~b, a == b])


def test_casts_between_dtypes():
    n = E.Var("n", "int32")
    I = S.Buffer("I", "int32", (n,))
    F = S.Buffer("F", "float32", (n,))
    casts = [("I", "int8"), ("I", "uint8"), ("I", "int64"), ("I", "uint32"), ("I", "float32"),
             ("I", "bool"), ("F", "int32"), ("F", "int8"), ("F", "float64"), ("F", "bool"),
             ("F", "float16")]
    if not _float16_ok():
        casts.pop()
    outs = []
    for k, (src, dt) in enumerate(casts):
        buf = I if src == "I" else F
        outs.append((S.Buffer(f"O{k}", dt, (n,)), lambda i, buf=buf, dt=dt: E.cast(ld(buf, i), dt)))
    back = S.Buffer("Back", "float32", (n,))  # bool -> float and double -> float
    outs.append((back, lambda i: E.cast(E.cast(ld(F, i), "bool"), "float32") + E.cast(E.cast(ld(F, i), "float64"), "float32")))
    f = elementwise("casts", [I, F], outs, n)
    ints = rand(80, "int32", 1, full_range=True)
    floats = rand(80, "float32", 2, low=-120.0, high=120.0)
    floats[:4] = [0.0, -0.0, 127.9, -127.9]
    want = [(ints if s == "I" else floats).astype(dt) for s, dt in casts]
    want.append(floats.astype(bool).astype("float32") + floats)
    assert_agree(run(f, [ints, floats]), want)


_UNARY = [  # op, NumPy reference, domain
    ("exp", np.exp, (-3, 3)), ("exp2", np.exp2, (-3, 3)), ("exp10", lambda x: np.power(10, x), (-2, 2)),
    ("expm1", np.expm1, (-1, 1)), ("log", np.log, (0.1, 5)), ("log2", np.log2, (0.1, 5)),
    ("log10", np.log10, (0.1, 5)), ("log1p", np.log1p, (-0.5, 5)), ("sqrt", np.sqrt, (0.1, 5)),
    ("rsqrt", lambda x: 1 / np.sqrt(x), (0.1, 5)), ("cbrt", np.cbrt, (-5, 5)),
    ("sin", np.sin, (-3, 3)), ("cos", np.cos, (-3, 3)), ("tan", np.tan, (-1, 1)),
    ("asin", np.arcsin, (-0.9, 0.9)), ("acos", np.arccos, (-0.9, 0.9)), ("atan", np.arctan, (-3, 3)),
    ("sinh", np.sinh, (-2, 2)), ("cosh", np.cosh, (-2, 2)), ("tanh", np.tanh, (-3, 3)),
    ("asinh", np.arcsinh, (-3, 3)), ("acosh", np.arccosh, (1.1, 4)), ("atanh", np.arctanh, (-0.9, 0.9)),
    ("sigmoid", lambda x: 1 / (1 + np.exp(-x)), (-5, 5)),
    ("erf", np.vectorize(math.erf), (-2, 2)), ("fabs", np.abs, (-3, 3)), ("abs", np.abs, (-3, 3)),
    ("floor", np.floor, (-3, 3)), ("ceil", np.ceil, (-3, 3)), ("round", np.rint, (-3, 3)),
    ("trunc", np.trunc, (-3, 3)),
]
_BINARY = [("pow", np.power, (0.1, 3)), ("fmod", np.fmod, (-5, 5)), ("atan2", np.arctan2, (-3, 3)),
           ("hypot", np.hypot, (-3, 3)), ("copysign", np.copysign, (-3, 3))]


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_intrinsics(dt):
    n = E.Var("n", "int32")
    ins, outs, want = [], [], []
    for k, (name, ref, (lo, hi)) in enumerate(_UNARY + _BINARY):
        arity = 2 if (name, ref, (lo, hi)) in _BINARY else 1
        bufs = [S.Buffer(f"X{k}_{j}", dt, (n,)) for j in range(arity)]
        data = [rand(40, dt, 10 * k + j, low=lo, high=hi) for j in range(arity)]
        ins += list(zip(bufs, data))
        out = S.Buffer(f"Y{k}", dt, (n,))
        outs.append((out, lambda i, bufs=bufs, name=name: E.Call(dt, name, [ld(b, i) for b in bufs])))
        want.append(ref(*data).astype(dt))
    f = elementwise(f"intrinsics_{dt}", [b for b, _ in ins], outs, n)
    tol = 2e-6 if dt == "float32" else 1e-13
    assert_agree(run(f, [d for _, d in ins]), want, rtol=tol, atol=tol)


def test_round_half_even_isnan_and_integer_intrinsics():
    n = E.Var("n", "int32")
    X, I = S.Buffer("X", "float32", (n,)), S.Buffer("I", "int16", (n,))
    R, N, F = S.Buffer("R", "float32", (n,)), S.Buffer("N", "bool", (n,)), S.Buffer("F", "bool", (n,))
    AI, FI = S.Buffer("AI", "int16", (n,)), S.Buffer("FI", "int16", (n,))
    f = elementwise("special", [X, I], [
        (R, lambda i: E.Call("float32", "round", [ld(X, i)])),
        (N, lambda i: E.Call("bool", "isnan", [ld(X, i)])),
        (F, lambda i: E.Call("bool", "isfinite", [ld(X, i)])),
        (AI, lambda i: E.Call("int16", "abs", [ld(I, i)])),
        (FI, lambda i: E.Call("int16", "floor", [ld(I, i)])),
    ], n)
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, np.nan, np.inf, 3.7, -3.2], "float32")
    ints = np.array([-32768, -5, 5, 32767, -1, 1, 7, -7, 100, -100], "int16")
    want = [np.rint(x), np.isnan(x), np.isfinite(x), np.abs(ints), ints]
    assert_agree(run(f, [x, ints]), want)


def _py_div(kind: str, a: int, b: int) -> int:
    if b == 0:
        return 0
    if kind == "floordiv":
        return a // b
    if kind == "floormod":
        return a % b
    q = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
    return q if kind == "truncdiv" else a - b * q


@pytest.mark.parametrize("dt", ["int8", "int32", "int64", "uint32"])
def test_integer_division_semantics_on_negatives(dt):
    n = E.Var("n", "int32")
    A, B = S.Buffer("A", dt, (n,)), S.Buffer("B", dt, (n,))
    kinds = {"floordiv": E.FloorDiv, "floormod": E.FloorMod, "truncdiv": E.Div, "truncmod": E.Mod}
    outs, exp = [], []
    for kind, cls in kinds.items():
        outs.append((S.Buffer(kind, dt, (n,)), lambda i, cls=cls: cls(ld(A, i), ld(B, i))))
        exp.append((kind, None))
        for c in (4, -3) if np.dtype(dt).kind == "i" else (4,):  # constant divisors take a faster path
            outs.append((S.Buffer(f"{kind}_c{abs(c)}", dt, (n,)), lambda i, cls=cls, c=c: cls(ld(A, i), const(c, dt))))
            exp.append((kind, c))
    f = elementwise(f"divs_{dt}", [A, B], outs, n)
    info = np.iinfo(dt)
    a_vals = [7, -7, 7, -7, 0, 1, -1, 13, -13, info.min, info.min, info.max, 5, -5]
    b_vals = [2, 2, -2, -2, 3, 0, 0, 5, -5, -1, 1, -1, 0, 3]
    if info.min == 0:
        a_vals = [abs(x) % (info.max + 1) for x in a_vals]
        b_vals = [abs(x) for x in b_vals]
    a, b = np.array(a_vals, dt), np.array(b_vals, dt)
    want = []
    for kind, c in exp:
        divs = [c] * len(a_vals) if c is not None else b_vals
        vals = [_py_div(kind, int(x), int(y)) for x, y in zip(a_vals, divs)]
        want.append(np.array([(v - info.min) % (info.max - info.min + 1) + info.min for v in vals], dt))
    assert_agree(run(f, [a, b]), want)


def test_float_floordiv_floormod_and_fmod():
    n = E.Var("n", "int32")
    A, B = S.Buffer("A", "float64", (n,)), S.Buffer("B", "float64", (n,))
    O = [S.Buffer(f"O{k}", "float64", (n,)) for k in range(3)]
    f = elementwise("fdivs", [A, B], [
        (O[0], lambda i: E.FloorDiv(ld(A, i), ld(B, i))),
        (O[1], lambda i: E.FloorMod(ld(A, i), ld(B, i))),
        (O[2], lambda i: E.Mod(ld(A, i), ld(B, i))),
    ], n)
    a, b = rand(60, "float64", 1, low=-9, high=9), rand(60, "float64", 2, low=-3, high=3)
    want = [np.floor(a / b), a - np.floor(a / b) * b, np.fmod(a, b)]
    assert_agree(run(f, [a, b]), want, rtol=1e-12, atol=1e-12)


def _shift_kernel(guarded: bool, use_call: bool = False) -> S.PrimFunc:
    n = E.Var("n", "int32")
    A, B = S.Buffer("A", "float32", (n,)), S.Buffer("B", "float32", (n,))

    def value(i):
        read = ld(A, i + 1)
        if not guarded:
            return read
        cond = i + 1 < n
        if use_call:
            return E.Call("float32", "if_then_else", [cond, read, const(-1.0, "float32")])
        return E.Select(cond, read, const(-1.0, "float32"))

    return elementwise(f"shift_{guarded}_{use_call}", [A], [(B, value)], n)


@pytest.mark.parametrize("use_call", [False, True])
def test_select_guards_an_out_of_bounds_read(use_call):
    a = rand(33, "float32", 3)
    want = np.append(a[1:], np.float32(-1))
    assert_agree(run(_shift_kernel(True, use_call), [a]), [want])


def test_python_target_reports_out_of_bounds_access():
    k = build_func(_shift_kernel(False), "python")
    a, b = rand(5, "float32", 1), np.empty(5, "float32")
    with pytest.raises(KernelRuntimeError, match=r"reads A\[5\], outside its 5 elements"):
        k(a, b)


def test_parallel_loop_with_private_temporary():
    n = E.Var("n", "int32")
    A = S.Buffer("A", "float32", (n, 64))
    R = S.Buffer("R", "float32", (n,))
    acc = S.Buffer("acc", "float32", (1,), scope="local")
    i, k = E.Var("i", "int32"), E.Var("k", "int32")
    zero = const(0, "int32")
    body = S.Allocate(acc, S.seq(
        st(acc, const(0.0, "float32"), zero),
        loop(k, 64, st(acc, ld(acc, zero) + ld(A, i * 64 + k), zero)),
        st(R, ld(acc, zero), i),
    ))
    f = S.PrimFunc("rowsum", (A, R), (n,), loop(i, n, body, "parallel"), (R,))
    a = rand((301, 64), "float32", 5)
    assert_agree(run(f, [a]), [a.sum(axis=1)], rtol=1e-5, atol=1e-5)
    src = build_func(f, "c").source
    # declared inside the parallel loop body, so private to each thread; a one-element local
    # temporary touched at constant offsets only is a plain variable (a register)
    assert "#pragma omp parallel for" in src and "acc_0 = acc_0 + A[" in src


def _matmul(heap: bool) -> S.PrimFunc:
    """C[i, j] = sum_k A[i, k] * B[k, j], via a row temporary (on the stack, or symbolic on the heap)."""
    n, m = E.Var("n", "int32"), E.Var("m", "int32")
    K = 16
    A, B, C = S.Buffer("A", "float64", (n, K)), S.Buffer("B", "float64", (K, m)), S.Buffer("C", "float64", (n, m))
    row = S.Buffer("row", "float64", (m,) if heap else (8,))
    i, j, k = E.Var("i", "int32"), E.Var("j", "int32"), E.Var("k", "int32")
    width = m if heap else 8
    body = S.seq(
        loop(j, width, st(row, const(0.0, "float64"), j)),
        loop(k, K, loop(j, width, st(row, ld(row, j) + ld(A, i * K + k) * ld(B, k * m + j), j))),
        loop(j, width, st(C, ld(row, j), i * m + j)),
    )
    return S.PrimFunc(f"matmul_{heap}", (A, B, C), (n, m), loop(i, n, S.Allocate(row, body)), (C,))


@pytest.mark.parametrize("heap", [False, True])
def test_matmul_with_temporary(heap):
    f = _matmul(heap)
    a, b = rand((9, 16), "float64", 1), rand((16, 8), "float64", 2)
    assert_agree(run(f, [a, b]), [a @ b], rtol=1e-12, atol=1e-12)
    src = build_func(f, "c").source
    assert ("tsl_alloc" in src) == heap and ("free(row);" in src) == heap


def test_large_constant_temporary_goes_to_heap():
    n = 20000  # 160 kB of float64: too big for the stack
    A, B = S.Buffer("A", "float64", (n,)), S.Buffer("B", "float64", (n,))
    T = S.Buffer("T", "float64", (n,))
    i, j = E.Var("i", "int32"), E.Var("j", "int32")
    body = S.Allocate(T, S.seq(loop(i, n, st(T, ld(A, i) * const(2.0, "float64"), i)),
                               loop(j, n, st(B, ld(T, j) + const(1.0, "float64"), j))))
    f = S.PrimFunc("bigtemp", (A, B), (), body, (B,))
    a = rand(n, "float64", 4)
    assert_agree(run(f, [a]), [a * 2 + 1])
    assert "tsl_alloc(" in build_func(f, "c").source


def test_let_if_attr_evaluate_and_loop_kinds():
    n = E.Var("n", "int32")
    A, B = S.Buffer("A", "int32", (n,)), S.Buffer("B", "int32", (n,))
    i, t, u = E.Var("i", "int32"), E.Var("t", "int32"), E.Var("u", "int32")
    inner = S.LetStmt(t, ld(A, i) * 2, S.IfThenElse(
        ld(A, i) > 0,
        st(B, E.Let(u, t + 1, u * u), i),
        st(B, t - 1, i),
    ))
    body = S.AttrStmt(B, "produce", 0, S.seq(S.Evaluate(0), loop(i, n, inner, "vectorized")))
    f = S.PrimFunc("misc", (A, B), (n,), body, (B,))
    a = rand(40, "int32", 8)
    want = np.where(a > 0, (2 * a + 1) ** 2, 2 * a - 1).astype("int32")
    assert_agree(run(f, [a]), [want])
    src = build_func(f, "c").source
    assert "// produce B" in src and "#pragma GCC ivdep" in src
    assert "# produce B" in build_func(f, "python").source

    j = E.Var("j", "int32")
    g = S.PrimFunc("unrolled", (A, B), (n,), loop(i, n, S.seq(
        st(B, const(0, "int32"), i), loop(j, 4, st(B, ld(B, i) + ld(A, i) * j, i), "unrolled"))), (B,))
    assert_agree(run(g, [a]), [a * 6])
    assert "#pragma GCC unroll 4" in build_func(g, "c").source


def test_awkward_names_become_unique_identifiers():
    n = E.Var("n", "int32")
    A, B = S.Buffer("float", "float32", (n,)), S.Buffer("A.shared", "float32", (n,))
    i, i2 = E.Var("i.outer", "int32"), E.Var("i.outer", "int32")
    ex = E.Var("exp", "float32")
    body = loop(i, n, S.LetStmt(ex, ld(A, i), S.seq(
        st(B, E.Call("float32", "exp", [ex]), i),
        loop(i2, 1, st(B, ld(B, i) + ld(A, i + i2), i)))))
    f = S.PrimFunc("main", (A, B), (n,), body, (B,))
    a = rand(10, "float32", 1)
    assert_agree(run(f, [a]), [np.exp(a) + a], rtol=1e-6, atol=1e-6)
    src = build_func(f, "c").source
    assert "int32_t main_(" in src and "i_outer_1" in src


def test_float16_arithmetic_and_intrinsic():
    if not _float16_ok():
        pytest.skip("the C compiler has no _Float16")
    n = E.Var("n", "int32")
    A, B, C = (S.Buffer(x, "float16", (n,)) for x in "ABC")
    f = elementwise("half", [A, B], [(C, lambda i: E.Call("float16", "exp", [ld(A, i)]) * ld(B, i) + ld(A, i))], n)
    a, b = rand(30, "float16", 1), rand(30, "float16", 2)
    assert_agree(run(f, [a, b]), [np.exp(a) * b + a], rtol=3e-3, atol=3e-3)


def test_zero_size_arrays_run():
    n = E.Var("n", "int32")
    A, B = S.Buffer("A", "float32", (n,)), S.Buffer("B", "float32", (n,))
    f = elementwise("empty", [A], [(B, lambda i: ld(A, i))], n)
    for target in ("python", "c"):
        build_func(f, target)(np.empty(0, "float32"), np.empty(0, "float32"))


# ---- build errors ------------------------------------------------------------------------


def _simple(value_fn, dt="float32") -> S.PrimFunc:
    n = E.Var("n", "int32")
    A, B = S.Buffer("A", dt, (n,)), S.Buffer("B", dt, (n,))
    return elementwise("bad", [A], [(B, value_fn(A))], n)


@pytest.mark.parametrize("target", ["python", "c"])
@pytest.mark.parametrize(("make", "message"), [
    (lambda A: lambda i: E.Call("float32", "frobnicate", [ld(A, i)]), "unknown intrinsic 'frobnicate'"),
    (lambda A: lambda i: E.Call("float32", "pow", [ld(A, i)]), "'pow' takes 2 argument"),
    (lambda A: lambda i: ld(A, i) + E.Var("ghost", "float32"), "'ghost' is used but never bound"),
    (lambda A: lambda i: E.BufferLoad(A, (i, i)), "has 2 indices"),
    (lambda A: lambda i: E.Ramp(i, const(1), 4), "vector"),
    (lambda A: lambda i: ld(S.Buffer("T", "float32", (4,)), i), "buffer 'T' is accessed but is neither a parameter"),
])
def test_build_errors(target, make, message):
    with pytest.raises(BuildError, match=message):
        build_func(_simple(make), target)


def test_unknown_target_lists_valid_ones():
    with pytest.raises(BuildError, match=r"unknown target 'opencl'; valid targets: c, .*python"):
        build_func(_simple(lambda A: lambda i: ld(A, i)), "opencl")


def test_deeply_nested_expression():
    n = E.Var("n", "int32")
    A, B = S.Buffer("A", "float32", (n,)), S.Buffer("B", "float32", (n,))

    def chain(i):  # what fully unrolling a 1500-long reduction produces
        e = ld(A, i)
        for _ in range(1500):
            e = e + ld(A, i)
        return e

    assert_agree(run(elementwise("deep", [A], [(B, chain)], n), [np.ones(3, "float32")]),
                 [np.full(3, 1501, "float32")])
