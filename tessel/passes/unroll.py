"""Unrolling: an ``unrolled`` loop of small constant extent becomes straight-line code.

``#pragma GCC unroll`` is a request the compiler may turn down, and it unrolls only after its
own scalar-replacement passes have run, too late to put a register tile's accumulators in
registers. Unrolling in the IR makes every index of the tile a constant before C is written,
so the C generator can see which temporaries are only ever touched at constant offsets (and
keep them in registers), and the C compiler sees plain straight-line code.

A loop with a symbolic extent, or whose unrolled body would exceed ``tunables.max_unrolled_stmts``
statements, stays a loop; the C generator still puts ``#pragma GCC unroll`` on it. A loop whose
*straight-line size* (:func:`straight_line_size`) passes the limit the driver hands in becomes
a plain serial loop: the driver has already refused such a loop where the user unrolled it
(``tessel.schedule.unroll_limit``); the ones left were marked by ``auto_unroll_max_step``.
"""

from __future__ import annotations

from ..arith import Analyzer
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.functor import Mutator, collect, memoized, substitute_each
from ..ir.stmt import LoopKind
from ..tunables import current
from .simplify import _Simplify


def unroll(stmt: S.Stmt, max_extent: int | None = None, max_statements: int | None = None) -> S.Stmt:
    """Unroll the ``unrolled`` loops that are small enough (an extent up to ``max_extent``, by
    default ``tunables.max_unroll_extent``), folding the now-constant indices of each copy (the
    rest of the kernel is left as it is); an unrolled loop whose straight-line size passes
    ``max_statements`` becomes a serial loop."""
    if not collect(stmt, lambda n: isinstance(n, S.For) and n.kind == LoopKind.UNROLLED, statements_only=True):
        return stmt
    limits = current()
    return _Unroll(limits.max_unroll_extent if max_extent is None else max_extent, max_statements,
                   limits.max_unrolled_stmts).visit(stmt)


def _size(s: S.Stmt) -> int:
    return len(collect(s, lambda n: isinstance(n, S.Stmt), statements_only=True))


def straight_line_size(s: S.Stmt) -> int:
    """The statements ``s`` becomes once its unrolled loops are copied out: an unrolled loop of
    constant extent n counts n times its body, any other loop its body once (plus itself)."""
    if isinstance(s, S.SeqStmt):
        return sum(straight_line_size(x) for x in s.seq)
    if isinstance(s, S.For):
        ext = s.extent
        if s.kind == LoopKind.UNROLLED and isinstance(ext, E.IntImm):
            return max(ext.value, 0) * straight_line_size(s.body)
        return 1 + straight_line_size(s.body)
    if isinstance(s, S.IfThenElse):
        other = straight_line_size(s.else_case) if s.else_case is not None else 0
        return 1 + straight_line_size(s.then_case) + other
    body = getattr(s, "body", None)
    return 1 + (straight_line_size(body) if isinstance(body, S.Stmt) else 0)


def oversized_unrolls(stmt: S.Stmt, limit: int) -> list[tuple[S.For, int, int]]:
    """``(loop, extent, body size)`` of each unrolled loop whose straight-line size passes
    ``limit`` while its body's does not: the loops to split (an enclosing one is then fine)."""
    out: list[tuple[S.For, int, int]] = []

    def walk(s: S.Stmt) -> int:
        """Straight-line size of ``s``, recording the loops that cross the limit."""
        if isinstance(s, S.SeqStmt):
            return sum(walk(x) for x in s.seq)
        if isinstance(s, S.IfThenElse):
            return 1 + walk(s.then_case) + (walk(s.else_case) if s.else_case is not None else 0)
        body = getattr(s, "body", None)
        inner = walk(body) if isinstance(body, S.Stmt) else 0
        if isinstance(s, S.For) and s.kind == LoopKind.UNROLLED and isinstance(s.extent, E.IntImm):
            n = max(s.extent.value, 0)
            if n * inner > limit >= inner:
                out.append((s, n, inner))
            return n * inner
        return 1 + inner

    walk(stmt)
    return out


class _Unroll(Mutator):
    def __init__(self, max_extent: int, max_statements: int | None, max_copied: int):
        self.max_extent = max_extent
        self.max_statements = max_statements
        self.max_copied = max_copied  # statements one loop may become when copied
        self.ana = Analyzer()
        self.memo: dict = {}  # simplified expressions, shared by the copies (most are alike)
        self.vectors: dict = {}  # whether an expression holds a vector node, by identity (see _VectorParts)

    def visit_For(self, s: S.For):
        body = self.visit(s.body)  # inner loops first: the size check sees their unrolled form
        ext = self.ana.simplify(s.extent)
        if s.kind == LoopKind.UNROLLED and isinstance(ext, E.IntImm):
            n = ext.value
            if n <= 0:
                return S.Evaluate(0)
            if self.max_statements is not None and n * straight_line_size(body) > self.max_statements:
                return S.For(s.loop_var, s.min, s.extent, LoopKind.SERIAL, body, s.thread_tag)
            if n <= self.max_extent and n * _size(body) <= self.max_copied:
                v = s.loop_var
                copies = substitute_each(body, v, [E.add(s.min, E.const(k, v.dtype)) for k in range(n)])
                return S.seq(*[simplify_vector_stmt(c, self.memo, self.vectors) for c in copies])
        return s if body is s.body else S.For(s.loop_var, s.min, s.extent, s.kind, body, s.thread_tag)


class _VectorSimplify(_Simplify):
    """The loop-aware simplifier, applied to the scalar parts of vector expressions only.

    The simplifier reasons about scalar index arithmetic; a vector node is rebuilt around its
    simplified scalar pieces (a ramp's base and stride, a broadcast's value, scalar operands).
    ``vectors``: ``_VectorParts.has_vector``'s answers, which several runs may share (the
    unrolled copies of a body share most subexpressions).
    """

    def __init__(self, memo: dict | None = None, vectors: dict | None = None):
        super().__init__(keep_unit_loops=False, memo=memo)
        self.vectors: dict = {} if vectors is None else vectors

    def _simplified(self, e):
        vec = _VectorParts(self)
        if e.dtype.lanes == 1 and not vec.has_vector(e):
            return self.ana.simplify(e)
        return vec.visit(e)


class _VectorParts(Mutator):
    def __init__(self, owner: _VectorSimplify):
        self.owner = owner
        self.memo: dict = owner.vectors

    def has_vector(self, e) -> bool:
        """Whether ``e`` has a vector node in it (memoized: asked at every level of the walk)."""
        return memoized(self.memo, e, self._has_vector)

    def _has_vector(self, e) -> bool:
        if isinstance(e, E.PrimExpr) and e.dtype.lanes > 1:
            return True
        for f in e.fields():
            for x in (f if isinstance(f, tuple) else (f,)):
                if isinstance(x, E.PrimExpr) and self.has_vector(x):
                    return True
        return False

    def visit(self, node):
        if isinstance(node, E.PrimExpr) and node.dtype.lanes == 1 and not self.has_vector(node):
            return self.owner.ana.simplify(node)
        return super().visit(node)


def simplify_vector_stmt(stmt: S.Stmt, memo: dict | None = None, vectors: dict | None = None) -> S.Stmt:
    """``simplify_stmt`` for IR that may hold vector expressions (``memo``: see Analyzer;
    ``vectors``: see _VectorSimplify)."""
    return _VectorSimplify(memo, vectors).visit(stmt)


__all__ = ["oversized_unrolls", "simplify_vector_stmt", "straight_line_size", "unroll"]
