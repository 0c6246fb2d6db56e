"""A store of a guarded read, as a branch that loop partitioning can cut.

A padded copy (``Xp[y, x] = if_then_else(1 <= y < h + 1 && 1 <= x < w + 1, X[y - 1, x - 1], 0)``)
tests its border on every element, and the per-lane choice between a load and a constant stops
the loop from becoming vector code: the copy of a depthwise conv's input cost four times the
convolution itself (AVX2, 64 x 56 x 56). Written as ``if (cond) {store the read} else {store
the constant}``, the condition is one that :mod:`.loop_partition` cuts the loops on, and the
interior of the image becomes a plain copy. What is left uncut (a condition reading data, or
one the partition's budget did not reach) is folded back into a guarded store, as it was.
"""

from __future__ import annotations

from ..ir import expr as E
from ..ir import stmt as S
from ..ir.functor import Mutator, collect, free_vars, structural_equal


def _guard(value: E.PrimExpr) -> tuple[E.PrimExpr, E.PrimExpr, E.PrimExpr] | None:
    """``(cond, then, else)`` of a value that is a whole ``if_then_else`` or select."""
    if isinstance(value, E.Call) and value.op == "if_then_else":
        return value.args[0], value.args[1], value.args[2]
    if isinstance(value, E.Select):
        return value.condition, value.true_value, value.false_value
    return None


class _Split(Mutator):
    """``buf[i] = cond ? a : b`` inside a loop whose variable ``cond`` tests, with no load in
    ``cond``: ``if (cond) buf[i] = a; else buf[i] = b;``."""

    statements_only = True  # expressions are read off the statements it rewrites, never walked

    def __init__(self) -> None:
        self.loops: list[E.Var] = []

    def visit_For(self, s: S.For):
        self.loops.append(s.loop_var)
        try:
            return self.generic_visit(s)
        finally:
            self.loops.pop()

    def visit_BufferStore(self, s: S.BufferStore):
        g = _guard(s.value)
        if g is None:
            return s
        cond, a, b = g
        if not free_vars(cond) & set(self.loops) or collect(
                cond, lambda n: isinstance(n, E.BufferLoad | E.ProducerLoad | E.Call | E.Let)):
            return s
        return S.IfThenElse(cond, S.BufferStore(s.buffer, a, s.indices), S.BufferStore(s.buffer, b, s.indices))


def is_guarded_store(s: S.IfThenElse) -> bool:
    """Whether both branches store to the same element (what :class:`_Split` makes)."""
    t, f = s.then_case, s.else_case
    return (isinstance(t, S.BufferStore) and isinstance(f, S.BufferStore) and t.buffer is f.buffer
            and len(t.indices) == len(f.indices) and t.value.dtype == f.value.dtype
            and all(structural_equal(i, j) for i, j in zip(t.indices, f.indices)))


class _Merge(Mutator):
    """The inverse of :class:`_Split` for the branches no cut removed."""

    statements_only = True  # expressions are read off the statements it rewrites, never walked

    def visit_IfThenElse(self, s: S.IfThenElse):
        s = self.generic_visit(s)
        t, f = s.then_case, s.else_case
        if is_guarded_store(s):
            return S.BufferStore(t.buffer, E.Call(t.value.dtype, "if_then_else", (s.condition, t.value, f.value)),
                                 t.indices)
        return s


def split_guarded_stores(stmt: S.Stmt) -> S.Stmt:
    return _Split().visit(stmt)


def merge_guarded_stores(stmt: S.Stmt) -> S.Stmt:
    return _Merge().visit(stmt)


__all__ = ["is_guarded_store", "merge_guarded_stores", "split_guarded_stores"]
