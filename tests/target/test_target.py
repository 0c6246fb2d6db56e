"""Targets as values: parsing, the host probe, and kernels built for explicit vector widths.

Every build here names its vector width, so what is asserted holds on any machine: GCC's
vector extensions compile 64-byte vectors on an AVX2 machine (as pairs of operations).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from helpers import garbage_like, rand

import tessel
from tessel import te
from tessel.driver import lower_steps
from tessel.ir import stmt as S
from tessel.ir.functor import collect
from tessel.target import STREAMING_STORES, Target, host, parse, resolve

WIDTHS = (16, 32, 64)


def test_strings_parse_into_targets():
    assert parse("c") == Target()
    assert parse("python").kind == "python"
    t = parse("c -mcpu=skylake-avx512 -vector-bytes=32 -features=avx2,fma")
    assert (t.kind, t.mcpu, t.vector_bytes, t.features) == ("c", "skylake-avx512", 32, frozenset({"avx2", "fma"}))
    assert parse(t.describe()) == t


@pytest.mark.parametrize("text, message", [
    ("c -vector-bytes=24", "power of two"),
    ("c -vector-bytes=wide", "number of bytes"),
    ("c -O3", "unknown option '-O3'"),
    ("", "empty target string"),
])
def test_bad_target_strings_say_what_is_wrong(text, message):
    with pytest.raises(tessel.BuildError, match=message):
        parse(text)


def test_an_unknown_target_kind_lists_the_valid_ones():
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] + 1, name="B")
    with pytest.raises(tessel.BuildError, match=r"unknown target 'opencl'; valid targets: c, cuda, cuda-sim, python"):
        tessel.build(te.create_schedule(B.op), [A, B], target="opencl")


def test_a_target_is_a_frozen_hashable_value():
    t = Target(vector_bytes=32)
    with pytest.raises(dataclasses.FrozenInstanceError):
        t.vector_bytes = 64  # type: ignore[misc]
    assert {t: 1}[Target(vector_bytes=32)] == 1
    assert t.lanes(32) == 8 and t.lanes(8) == 32 and Target(vector_bytes=64).lanes(64) == 8


def test_the_host_is_probed_once_and_resolution_keeps_what_a_target_fixes():
    h = host()
    assert h is host()
    assert h.kind == "c" and h.vector_bytes in (16, 32, 64) and h.features is not None
    fixed = resolve(Target(vector_bytes=64, features=frozenset({"fma"})))
    assert fixed.vector_bytes == 64 and fixed.features == frozenset({"fma"})
    assert resolve(Target("python")).features == frozenset()  # no machine features: no streaming stores


def _kernels():
    """A few vectorized kernels at awkward sizes: (name, schedule, args, inputs, NumPy result)."""
    out = []
    A = te.placeholder((1003,), name="A")
    Bt = te.placeholder((1003,), name="B")
    C = te.compute((1003,), lambda i: te.if_then_else(A[i] > Bt[i], A[i] * Bt[i] + 1.5, A[i] - Bt[i]), name="C")
    s = te.create_schedule(C.op)
    s[C].vectorize(C.op.axis[0])
    a, b = rand(1003), rand(1003, seed=1)
    out.append(("select", s, [A, Bt, C], [a, b], np.where(a > b, a * b + 1.5, a - b)))

    X = te.placeholder((37, 131), name="X", dtype="float64")
    k = te.reduce_axis((0, 37), name="k")
    Y = te.compute((131,), lambda j: te.sum(X[k, j], axis=k), name="Y")
    s = te.create_schedule(Y.op)
    s[Y].vectorize(Y.op.axis[0])
    x = rand(37, 131, dtype="float64")
    out.append(("column_sum", s, [X, Y], [x], x.sum(axis=0)))

    P = te.placeholder((517,), name="P", dtype="int8")
    Q = te.compute((517,), lambda i: P[i] * 3 - 7, name="Q")
    s = te.create_schedule(Q.op)
    s[Q].vectorize(Q.op.axis[0])
    p = rand(517, dtype="int8")
    out.append(("int8_wraps", s, [P, Q], [p], (p * np.int8(3) - np.int8(7)).astype("int8")))
    return out


@pytest.mark.parametrize("width", WIDTHS)
def test_vectorized_kernels_are_right_for_every_vector_width(width):
    target = Target(vector_bytes=width)
    for name, s, args, inputs, want in _kernels():
        func, _ = lower_steps(s, args, target=target)
        stores = collect(func.body, lambda n: isinstance(n, S.BufferStore) and n.value.dtype.lanes > 1)
        widest = max(st.value.dtype.lanes * st.buffer.dtype.bits // 8 for st in stores)
        assert widest == width, f"{name}: widest vector {widest} bytes, target {width}"
        for kind in ("c", "python"):
            f = tessel.build(s, args, target=target.with_(kind=kind))
            got = garbage_like(want)
            f(*inputs, got)
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=f"{name}, {kind}, {width} bytes")


def test_the_generated_code_is_remembered_per_target():
    """Two widths, same schedule: two different kernels (the memo is keyed by the target)."""
    A = te.placeholder((96,), name="A")
    B = te.compute((96,), lambda i: A[i] * 2, name="B")
    s = te.create_schedule(B.op)
    s[B].vectorize(B.op.axis[0])
    k16 = tessel.build(s, [A, B], target=Target(vector_bytes=16))
    k64 = tessel.build(s, [A, B], target=Target(vector_bytes=64))
    assert "tsl_f32x4" in k16.source and "tsl_f32x16" not in k16.source
    assert "tsl_f32x16" in k64.source


def _big_copy():
    A = te.placeholder((5000, 5000), name="A")  # 100 MB output: never allocated, only lowered
    B = te.compute((5000, 5000), lambda i, j: A[i, j] * 2, name="B")
    s = te.create_schedule(B.op)
    s[B].vectorize(B.op.axis[1])
    return s, [A, B]


def test_streaming_stores_are_the_targets_choice():
    def streams(target) -> bool:
        func, _ = lower_steps(*_big_copy(), target=target)
        return bool(collect(func.body, lambda n: isinstance(n, S.AttrStmt) and n.key == "stream_store"))

    assert streams(Target(vector_bytes=32, features=frozenset({STREAMING_STORES})))
    assert not streams(Target(vector_bytes=32, features=frozenset()))
    assert not streams(Target("python", vector_bytes=32))


def test_targets_that_read_alike_get_their_own_generated_code():
    """A feature literally named "avx2,streaming_stores" is not the two features: the memo of
    generated code is keyed by every field of the target, not by its description string."""
    odd = Target(vector_bytes=32, features=frozenset({"avx2,streaming_stores"}))
    real = Target(vector_bytes=32, features=frozenset({"avx2", STREAMING_STORES}))
    assert odd.describe() == real.describe()  # the text alone cannot tell them apart
    plain = tessel.build(*_big_copy(), target=odd)
    streamed = tessel.build(*_big_copy(), target=real)
    assert "stream" not in plain.source and "tsl_stream" in streamed.source
