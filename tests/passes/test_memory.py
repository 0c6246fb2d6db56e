"""The c target's own passes: where each temporary lives is decided in the IR, not by the printer."""

from __future__ import annotations

import numpy as np

import tessel
from tessel import te
from tessel.driver import build_func, lower_steps
from tessel.ir import stmt as S
from tessel.ir.functor import collect
from tessel.ir.stmt import AttrKey, LoopKind


def _row_pairs(factor: int = 4):
    """C[i, j] = B[i, j] + B[i, (j+1) % m], B = 2A computed per strip of rows of a parallel loop:
    B's strip has a symbolic size, so it lives on the heap, once per thread."""
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n, m), name="A")
    B = te.compute((n, m), lambda i, j: A[i, j] * 2.0, name="B")
    C = te.compute((n, m), lambda i, j: B[i, j] + B[i, (j + 1) % m], name="C")
    s = te.create_schedule(C.op)
    io, _ = s[C].split(C.op.axis[0], factor)
    s[C].parallel(io)
    s[B].compute_at(s[C], io)
    return s, [A, C]


def _facts(stmt, key):
    return collect(stmt, lambda n: isinstance(n, S.AttrStmt) and n.key == key, statements_only=True)


def test_a_heap_strip_is_allocated_once_per_thread_and_the_ir_says_so():
    s, args = _row_pairs()
    func, steps = lower_steps(s, args, target="c")
    assert "hoist_allocations" in [st.name for st in steps]
    heap = _facts(func.body, AttrKey.HEAP)
    # the parallel loop and its tail copy each allocate B once per thread, around the loop
    assert len(heap) == 2 and all(f.value == "per_thread" and f.node.name == "B" for f in heap)
    assert all(isinstance(f.body, S.For) and f.body.kind == LoopKind.PARALLEL for f in heap)
    # the Allocate stays where it was: it still scopes B for every analysis after the pass
    assert len(collect(func.body, lambda n: isinstance(n, S.Allocate), statements_only=True)) == 2
    assert "B: allocated once by each thread of the loop below" in str(func)
    a = np.random.default_rng(3).random((37, 29), dtype=np.float32)
    for k in (tessel.build(s, args), build_func(func, "c")):
        c = np.full_like(a, np.nan)
        k(a, c)
        b = 2 * a
        np.testing.assert_allclose(c, b + np.roll(b, -1, axis=1), rtol=1e-6)
        # built again from a lowered function, the pass leaves its own facts as they are
        assert k.source.count("tsl_alloc((") == 2 and k.source.count("free(B)") == 2


def test_the_python_target_gets_no_c_facts():
    s, args = _row_pairs()
    func, steps = lower_steps(s, args, target="python")
    assert not _facts(func.body, AttrKey.HEAP) and "hoist_allocations" not in [st.name for st in steps]


def test_a_register_tile_is_marked_and_written_as_variables():
    from examples.fast_matmul import matmul

    func, steps = lower_steps(*matmul(96), target="c")
    tiles = _facts(func.body, AttrKey.REGISTERS)
    assert tiles and "promote_registers" in [st.name for st in steps]
    for f in tiles:  # cells cover disjoint, increasing element ranges of the tile
        ends = [b + n for b, n in f.value]
        assert all(e <= b for e, (b, _) in zip(ends, f.value[1:]))
        assert isinstance(f.body, S.Allocate) and f.body.buffer is f.node
    source = build_func(func, "c").source
    assert "kept in registers" in source
    # promoted again on a second run: nothing to do, the same facts
    assert str(lower_steps(*matmul(96), target="c")[0]) == str(func)


def test_a_temporary_indexed_by_a_variable_stays_an_array():
    A = te.placeholder((20, 8), name="A")
    B = te.compute((20, 8), lambda i, j: A[i, j] + 1.0, name="B")
    C = te.compute((20, 8), lambda i, j: B[i, 7 - j] * 3.0, name="C")
    s = te.create_schedule(C.op)
    s[B].set_scope("local")
    s[B].compute_at(s[C], C.op.axis[0])
    func, _ = lower_steps(s, [A, C], target="c")
    assert not _facts(func.body, AttrKey.REGISTERS) and not _facts(func.body, AttrKey.HEAP)
    a = np.random.default_rng(4).random((20, 8), dtype=np.float32)
    c = np.full_like(a, np.nan)
    tessel.build(s, [A, C])(a, c)
    np.testing.assert_allclose(c, (a[:, ::-1] + 1) * 3, rtol=1e-6)
