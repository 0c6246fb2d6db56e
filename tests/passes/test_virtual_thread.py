"""passes/virtual_thread.py: virtual threads pushed inward as TVM's InjectVirtualThread does.

On the CPU a virtual thread loop is already a serial loop, so the injected code must compute the
same values: each test lowers for the python target, injects, runs the result and compares
with NumPy, and checks the shape of the code a GPU gets (what runs once, what once per
virtual thread, and the per-thread copies of storage)."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import rand

from tessel import te
from tessel.driver import build_func, lower_steps
from tessel.ir import expr as E
from tessel.ir import stmt as S
from tessel.ir.functor import collect
from tessel.passes.virtual_thread import inject_virtual_threads, is_virtual_loop


def _injected(s, args):
    func, _ = lower_steps(s, args, target="python")
    body = inject_virtual_threads(func.body)
    assert not collect(body, is_virtual_loop)
    new = S.PrimFunc(func.name, func.params, func.size_vars, body, func.outputs, func.guards, func.scalar_args,
                     func.assumptions)
    return new, build_func(new, "python")


def _allocs(body):
    return {a.buffer.name: a.buffer for a in collect(body, lambda n: isinstance(n, S.Allocate))}


def test_local_storage_gets_one_copy_per_virtual_thread():
    A = te.placeholder((19, 22), name="A")
    B = te.compute((19, 22), lambda i, j: A[i, j] * 3, name="B")
    C = te.compute((19, 22), lambda i, j: B[i, j] + 1, name="C")
    s = te.create_schedule(C.op)
    vy, vx = te.thread_axis((0, 2), "vthread", name="vy"), te.thread_axis((0, 2), "vthread", name="vx")
    yo, yi = s[C].split(C.op.axis[0], nparts=2)
    xo, xi = s[C].split(C.op.axis[1], nparts=2)
    s[C].reorder(yo, xo, yi, xi)
    s[C].bind(yo, vy)
    s[C].bind(xo, vx)
    s[B].compute_at(s[C], xo)
    func, kernel = _injected(s, [A, C])
    (buf,) = _allocs(func.body).values()
    assert [int(d.value) for d in buf.shape] == [10 * 11 * 4]  # B's 10x11 tile, four virtual threads
    a = rand(19, 22)
    c = np.full((19, 22), np.nan, "float32")
    kernel(a, c)
    np.testing.assert_allclose(c, a * 3 + 1, rtol=1e-6)


def _gemm(n, vt=2):
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    CL = s.cache_write(C, "local")
    AA = s.cache_read(A, "shared", [CL])
    by, yi = s[C].split(C.op.axis[0], factor=8)
    vy, yi = s[C].split(yi, nparts=vt)
    ty, yi = s[C].split(yi, nparts=2)
    s[C].reorder(by, vy, ty, yi, C.op.axis[1])
    s[C].bind(by, te.thread_axis("blockIdx.x"))
    s[C].bind(vy, te.thread_axis((0, vt), "vthread", name="vy"))
    s[C].bind(ty, te.thread_axis("threadIdx.x"))
    s[CL].compute_at(s[C], ty)
    s[AA].compute_at(s[CL], s[CL].op.reduce_axis[0])
    return s, (A, B, C)


@pytest.mark.parametrize("vt", [2, 17])
def test_a_shared_tile_is_filled_once_and_the_rest_per_virtual_thread(vt):
    s, (A, B, C) = _gemm(8 * vt if vt > 2 else 16, vt)
    n = int(A.shape[0].value) if isinstance(A.shape[0], E.IntImm) else A.shape[0]
    func, kernel = _injected(s, [A, B, C])
    allocs = _allocs(func.body)
    assert len(allocs["C.local"].shape) == 1  # copied per virtual thread
    stores = collect(func.body, lambda x: isinstance(x, S.BufferStore) and x.buffer.name == "A.shared")
    assert len(stores) == 1  # the shared tile (the same for every virtual thread) is written by one statement
    serial = collect(func.body, lambda x: isinstance(x, S.For) and x.loop_var.name.endswith(".s"))
    assert bool(serial) == (vt >= 16)  # 17 virtual threads: a loop; 2: straight-line copies
    for loop in serial:
        assert not collect(loop, lambda x: isinstance(x, S.BufferStore) and x.buffer.name == "A.shared")
    a, b = rand(n, n), rand(n, n, seed=3)
    c = np.full((n, n), np.nan, "float32")
    kernel(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
