"""Accumulators kept in registers over a loop (tessel.passes.accumulate): when the pass may,
and that the kernels it rewrites compute what they did."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import TARGETS, check, rand

from tessel import te
from tessel.driver import build_func, lower_steps
from tessel.ir import expr as E
from tessel.ir import stmt as S
from tessel.ir.functor import collect
from tessel.ir.op import const
from tessel.passes import promote_accumulators
from tessel.target import Target

AVX2 = Target(vector_bytes=32, vector_registers=16, fma_units=2, features=frozenset({"avx2", "fma", "x86_64"}))


def _blocked_matmul(n: int, kc: int, rows: int = 3, lanes: int = 8):
    """C = A @ B with the reduction cut into blocks of ``kc`` outside a ``rows x lanes`` tile,
    accumulating into C itself (no cache_write): the loop order of a BLAS kernel."""
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], rows, lanes)
    ko, ki = s[C].split(C.op.reduce_axis[0], factor=kc)
    ks, ku = s[C].split(ki, factor=2)
    s[C].reorder(io, ko, jo, ks, ku, ii, ji)
    s[C].unroll(ku)
    s[C].unroll(ii)
    s[C].vectorize(ji)
    s[C].parallel(io)
    return s, [A, B, C]


def _acc_buffers(stmt) -> list[S.Buffer]:
    return [a.buffer for a in collect(stmt, lambda x: isinstance(x, S.Allocate)) if a.buffer.name.endswith(".acc")]


@pytest.mark.parametrize("n", (48, 37, 5))
def test_a_blocked_reduction_accumulates_in_registers_and_matches_numpy(n):
    s, args = _blocked_matmul(n, kc=8)
    a, b = rand(n, n), rand(n, n, seed=1)
    ks = check(s, args, [a, b], [a @ b], targets=(AVX2, AVX2.with_(kind="python")), rtol=1e-4, atol=1e-4)
    func, _ = lower_steps(s, args, target=AVX2)
    accs = _acc_buffers(func.body)
    if n == 48:  # whole tiles and blocks: the one tile loop keeps its 3 x 1 vectors in variables
        assert [(x.scope, tuple(d.value for d in x.shape)) for x in accs] == [("local", (24,))]
        assert "C_acc_2" in ks[AVX2].source and "kept in registers" in ks[AVX2].source
    else:  # edges: whatever was promoted stays right (checked above); the full tiles still are
        assert all(x.scope == "local" for x in accs)


def _loop(body_of, extent=None, kind="serial"):
    """``for k in [0, extent): body_of(k)`` (extent None: ``n``) over buffers A (read) and C
    (accumulated), both of ``n`` elements."""
    n = E.Var("n", "int32")
    A, C = S.Buffer("A", "float32", (n,)), S.Buffer("C", "float32", (n,))
    k = E.Var("k", "int32")
    loop = S.For(k, const(0), n if extent is None else const(extent), kind, body_of(A, C, k))
    return S.PrimFunc("acc", (A, C), (n,), loop, (C,))


def _add_at(A, C, k, idx):
    return S.BufferStore(C, E.Add(E.BufferLoad(C, (idx,)), E.BufferLoad(A, (k,))), (idx,))


def test_an_invariant_cell_is_promoted_and_the_kernel_agrees():
    f = _loop(lambda A, C, k: S.seq(_add_at(A, C, k, const(0)), _add_at(A, C, k, const(2))), extent=6)
    body = promote_accumulators(f.body)
    assert [x.shape[0].value for x in _acc_buffers(body)] == [2]
    # the loop's own accesses are all to the local copy now
    inner = collect(body, lambda x: isinstance(x, S.For))[0]
    assert not collect(inner, lambda x: isinstance(x, S.BufferStore) and x.buffer.name == "C")
    g = S.PrimFunc(f.name, f.params, f.size_vars, body, f.outputs)
    for target in TARGETS:
        for n in (6, 9):
            a, c = rand(n), rand(n, seed=2)
            want = c.copy()
            want[0] += a[:6].sum()
            want[2] += a[:6].sum()
            build_func(g, target)(a, c)
            np.testing.assert_allclose(c, want, rtol=1e-5, err_msg=target)


@pytest.mark.parametrize("case", ["moves", "guarded", "overlap", "parallel", "address", "may_not_run"])
def test_a_loop_the_pass_cannot_prove_right_is_left_alone(case):
    def body(A, C, k):
        if case == "moves":  # a different cell each iteration
            return _add_at(A, C, k, k)
        if case == "guarded":  # the load before the loop would read what the loop may not
            return S.IfThenElse(E.LT(E.BufferLoad(A, (k,)), const(0.0)), _add_at(A, C, k, const(1)))
        if case == "overlap":  # vectors of 4 lanes at 0 and 2 share two elements
            v = E.Broadcast(E.BufferLoad(A, (k,)), 4)
            ramps = [E.Ramp(const(b), const(1), 4) for b in (0, 2)]
            return S.seq(*(S.BufferStore(C, E.Add(E.BufferLoad(C, (r,)), v), (r,)) for r in ramps))
        if case == "address":  # a call is handed the buffer's address
            addr = E.Call("handle", "address_of", (E.BufferLoad(C, (const(0),)),))
            return S.seq(_add_at(A, C, k, const(0)), S.Evaluate(E.Call("int32", "call_extern", (E.StringImm("f"), addr))))
        return _add_at(A, C, k, const(0))

    # "may_not_run": n iterations, perhaps none, when C[0] may not exist
    f = _loop(body, extent=None if case == "may_not_run" else 6, kind="parallel" if case == "parallel" else "serial")
    assert promote_accumulators(f.body) is f.body

