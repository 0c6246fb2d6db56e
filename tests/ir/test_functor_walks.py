"""The walks of tessel/ir/functor.py that the passes use for speed give what the plain ones give."""

from __future__ import annotations

import tessel
from tessel import te
from tessel.ir import expr as E
from tessel.ir import stmt as S
from tessel.ir.expr import const
from tessel.ir.functor import (
    children,
    collect,
    post_order_visit,
    structural_equal,
    substitute,
    substitute_each,
)


def _kernel() -> S.Stmt:
    """A lowered kernel with unrolled copies, a vector loop, a guarded tail and a temporary."""
    A = te.placeholder((13, 10), name="A")
    k = te.reduce_axis((0, 10), name="k")
    B = te.compute((13,), lambda i: te.sum(A[i, k] * 2.0, axis=k), name="B")
    s = te.create_schedule(B.op)
    BL = s.cache_write(B, "local")
    io, ii = s[B].split(B.op.axis[0], factor=4)
    s[BL].compute_at(s[B], io)
    s[B].unroll(ii)
    return tessel.lower(s, [A, B], simple_mode=True)


def _recursive(node, out: list, kinds) -> None:
    for c in children(node):
        if isinstance(c, kinds):
            _recursive(c, out, kinds)
    out.append(node)


def test_post_order_is_children_left_to_right_then_the_node():
    body = _kernel()
    for statements_only, kinds in ((False, (E.PrimExpr, S.Stmt, E.Range)), (True, S.Stmt)):
        got: list = []
        post_order_visit(body, got.append, statements_only=statements_only)
        want: list = []
        _recursive(body, want, kinds)
        assert len(got) == len(want) > 10
        assert all(a is b for a, b in zip(got, want))


def test_a_shared_subtree_is_visited_at_each_place_unless_unique():
    x = E.Var("x", "int32")
    shared = E.Add(x, const(1))
    e = E.Mul(shared, shared)
    seen: list = []
    post_order_visit(e, seen.append)
    assert [n is shared for n in seen].count(True) == 2
    once: list = []
    post_order_visit(e, once.append, unique=True)
    assert [n is shared for n in once].count(True) == 1
    assert once[-1] is e


def test_collecting_statements_alone_finds_what_the_full_walk_finds():
    body = _kernel()
    for pred in (lambda n: isinstance(n, S.For), lambda n: isinstance(n, S.BufferStore),
                 lambda n: isinstance(n, S.Stmt)):
        full = collect(body, pred)
        assert full
        assert collect(body, pred, statements_only=True) == full


def test_substitute_each_is_one_substitution_per_value():
    n = E.Var("n", "int32")
    v = E.Var("v", "int32")
    buf = S.Buffer("T", "float32", (E.Add(v, const(2)),), "local")
    other = S.BufferStore(buf, E.FloatImm(1.0, "float32"), (E.Mul(n, const(3)),))
    body = S.Allocate(buf, S.seq(S.BufferStore(buf, E.FloatImm(0.0, "float32"), (E.Add(v, n),)), other))
    values = [const(k) for k in range(3)]
    got = substitute_each(body, v, values)
    for copy, x in zip(got, values):
        want = substitute(body, {v: x})
        assert structural_equal(copy.buffer.shape, want.buffer.shape)
        assert structural_equal(copy.body.seq[0].indices, want.body.seq[0].indices)
        assert copy.body.seq[1].value is other.value  # untouched: shared, not copied
    assert structural_equal(got[2].buffer.shape[0], E.Add(const(2), const(2)))
    assert not structural_equal(got[0].buffer.shape[0], got[2].buffer.shape[0])
    assert got[1].body.seq[0].buffer is got[1].buffer  # the accesses follow the allocation's new buffer
