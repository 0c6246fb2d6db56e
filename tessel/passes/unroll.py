"""Unrolling: an ``unrolled`` loop of small constant extent becomes straight-line code.

``#pragma GCC unroll`` is a request the compiler may turn down, and it unrolls only after its
own scalar-replacement passes have run, too late to put a register tile's accumulators in
registers. Unrolling in the IR makes every index of the tile a constant before C is written,
so the C generator can see which temporaries are only ever touched at constant offsets (and
keep them in registers), and the C compiler sees plain straight-line code.

A loop with a symbolic extent, or whose unrolled body would exceed :data:`MAX_UNROLLED_STMTS`
statements, stays a loop; the C generator still puts ``#pragma GCC unroll`` on it.
"""

from __future__ import annotations

from ..arith import Analyzer
from ..ir import expr as E
from ..ir import op as O
from ..ir import stmt as S
from ..ir.functor import Mutator, collect, substitute
from .simplify import _Simplify

MAX_UNROLL_EXTENT = 64
MAX_UNROLLED_STMTS = 4096  # statements after unrolling, per loop


def unroll(stmt: S.Stmt, max_extent: int = MAX_UNROLL_EXTENT) -> S.Stmt:
    """Unroll the ``unrolled`` loops that are small enough, folding the now-constant indices of
    each copy (the rest of the kernel is left as it is)."""
    if not collect(stmt, lambda n: isinstance(n, S.For) and n.kind == "unrolled"):
        return stmt
    return _Unroll(max_extent).visit(stmt)


def _size(s: S.Stmt) -> int:
    return len(collect(s, lambda n: isinstance(n, S.Stmt)))


class _Unroll(Mutator):
    def __init__(self, max_extent: int):
        self.max_extent = max_extent
        self.ana = Analyzer()

    def visit_For(self, s: S.For):
        body = self.visit(s.body)  # inner loops first: the size check sees their unrolled form
        ext = self.ana.simplify(s.extent)
        if s.kind == "unrolled" and isinstance(ext, E.IntImm):
            n = ext.value
            if n <= 0:
                return S.Evaluate(0)
            if n <= self.max_extent and n * _size(body) <= MAX_UNROLLED_STMTS:
                v = s.loop_var
                copies = [substitute(body, {v: O.add(s.min, O.const(k, v.dtype))}) for k in range(n)]
                return S.seq(*[simplify_vector_stmt(c) for c in copies])
        return s if body is s.body else S.For(s.loop_var, s.min, s.extent, s.kind, body, s.thread_tag)


class _VectorSimplify(_Simplify):
    """The loop-aware simplifier, applied to the scalar parts of vector expressions only.

    The simplifier reasons about scalar index arithmetic; a vector node is rebuilt around its
    simplified scalar pieces (a ramp's base and stride, a broadcast's value, scalar operands).
    """

    def _expr(self, e):
        vec = _VectorParts(self)
        if e.dtype.lanes == 1 and not vec.has_vector(e):
            return self.ana.simplify(e)
        return vec.visit(e)


class _VectorParts(Mutator):
    def __init__(self, owner: _VectorSimplify):
        self.owner = owner
        self.memo: dict[int, bool] = {}

    def has_vector(self, e) -> bool:
        """Whether ``e`` has a vector node in it (memoized: asked at every level of the walk)."""
        key = id(e)
        if key not in self.memo:
            found = isinstance(e, E.PrimExpr) and e.dtype.lanes > 1
            if not found:
                for f in e.fields():
                    for x in (f if isinstance(f, tuple) else (f,)):
                        if isinstance(x, E.PrimExpr) and self.has_vector(x):
                            found = True
                            break
                    if found:
                        break
            self.memo[key] = found
        return self.memo[key]

    def visit(self, node):
        if isinstance(node, E.PrimExpr) and node.dtype.lanes == 1 and not self.has_vector(node):
            return self.owner.ana.simplify(node)
        return super().visit(node)


def simplify_vector_stmt(stmt: S.Stmt) -> S.Stmt:
    """``simplify_stmt`` for IR that may hold vector expressions."""
    return _VectorSimplify(keep_unit_loops=False).visit(stmt)


__all__ = ["MAX_UNROLL_EXTENT", "simplify_vector_stmt", "unroll"]
