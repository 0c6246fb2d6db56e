"""Index simplification with what every loop tells about its variable.

Each expression is simplified knowing the ranges of the loops around it, so that
``j.outer*8 + j.inner - j.outer*8`` becomes ``j.inner`` and a guard that always holds
disappears. Loops of extent one are replaced by their single value: they only exist in
ScheduleOps' output to mirror the schedule's structure.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..arith import Analyzer
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.functor import Mutator, Substituter, moved, structural_equal
from ..ir.stmt import LoopKind


def analyzer(assume: Sequence[E.PrimExpr] = (), memo: dict | None = None) -> Analyzer:
    """An analyzer that knows the user's assumptions about the sizes (``s.assume``): every call
    checks them, so code that can only run when one is broken is dead (a split's tail under
    ``n % 8 == 0``). ``memo``: simplified expressions shared with other analyzers (Analyzer)."""
    ana = Analyzer(memo)
    for cond in assume:
        ana.assume(cond)
    return ana


class _Simplify(Mutator):
    def __init__(self, keep_unit_loops: bool, assume: Sequence[E.PrimExpr] = (), memo: dict | None = None):
        self.ana = analyzer(assume, memo)
        self.keep_unit_loops = keep_unit_loops
        # what the walk has fixed so far: unit loops' variables (their one value) and buffers
        # whose size changed; applied to each expression as it is met, not to whole bodies
        # (rewriting the body under every unit loop is quadratic in a chain of nested stages)
        self.sub = Substituter({})

    def _expr(self, e):
        if self.sub.vmap or self.sub.buffers:
            e = self.sub.visit(e)
        return self._simplified(e)

    def _simplified(self, e):
        """``e`` (what the walk has fixed already substituted) simplified."""
        return self.ana.simplify(e)

    def visit_For(self, s: S.For):
        mn, ext = self._expr(s.min), self._expr(s.extent)
        if E.is_const_int(ext, 0) or (not isinstance(ext, E.IntImm) and self.ana.can_prove(E.le(ext, 0))):
            return S.Evaluate(0)  # a loop that cannot run (a tail the sizes or assumptions rule out)
        if E.is_const_int(ext, 1) and not self.keep_unit_loops and s.kind != LoopKind.THREAD_BINDING:
            self.sub.vmap[s.loop_var] = mn
            try:
                return self.visit(s.body)
            finally:
                del self.sub.vmap[s.loop_var]
        # the loop's range holds inside its body only: kept afterwards, the facts it brings
        # (``min <= v < min + extent``, so ``extent >= 1``) would claim the loop ran, and a
        # later statement -- a sibling loop over the same variable after loop partitioning,
        # whose extent is the same expression -- would be simplified as if that were known
        with self.ana.scoped_bind(s.loop_var, E.Range(mn, ext)):
            body = self.visit(s.body)
        if isinstance(body, S.Evaluate) and isinstance(body.value, E.IntImm):
            return body
        return S.For(s.loop_var, mn, ext, s.kind, body, s.thread_tag)

    def visit_IfThenElse(self, s: S.IfThenElse):
        cond = self._expr(s.condition)
        if isinstance(cond, E.IntImm):
            chosen = s.then_case if cond.value else s.else_case
            return self.visit(chosen) if chosen is not None else S.Evaluate(0)
        with self.ana.constraint_scope(cond):
            then = self.visit(s.then_case)
        els = None
        if s.else_case is not None:
            with self.ana.constraint_scope(E.logical_not(cond)):
                els = self.visit(s.else_case)
        return S.IfThenElse(cond, then, els)

    def visit_Allocate(self, s: S.Allocate):
        """The size too, in the context of the loops around it: a region's extent written in a
        loop variable that a partition or an unrolled copy has since fixed (``(7*17 + 16)//13 -
        7*17//13 + 1``) folds to a constant, so the temporary can live on the stack."""
        old = s.buffer
        shape = tuple(self._expr(x) for x in old.shape)
        if all(structural_equal(a, b) for a, b in zip(shape, old.shape)):
            body = self.visit(s.body)
            return s if body is s.body else S.Allocate(old, body)
        new = S.Buffer(old.name, old.dtype, shape, old.scope)
        self.sub.buffers[id(old)] = new
        try:
            return S.Allocate(new, self.visit(s.body))
        finally:
            del self.sub.buffers[id(old)]

    def visit_BufferStore(self, s: S.BufferStore):
        return unless_itself(self.generic_visit(s))

    def visit_ProducerStore(self, s: S.ProducerStore):
        return unless_itself(self.generic_visit(s))

    def visit_SeqStmt(self, s: S.SeqStmt):
        return S.seq(*[self.visit(x) for x in s.seq])

    def generic_visit(self, node):
        if isinstance(node, E.PrimExpr):
            return self._expr(node)
        node = super().generic_visit(node)
        return moved(node, self.sub.buffers) if self.sub.buffers else node


def unless_itself(s):
    """Nothing, for a store of the very value the element holds (``A[i] = A[i]``: a border a
    recurrence keeps by copying it onto itself, stored in place); else ``s``."""
    v = s.value
    target = s.buffer if isinstance(s, S.BufferStore) else s.producer
    source = v.buffer if isinstance(v, E.BufferLoad) else v.producer if isinstance(v, E.ProducerLoad) else None
    if source is target and len(v.indices) == len(s.indices) and all(
            structural_equal(a, b) for a, b in zip(v.indices, s.indices)):
        return S.Evaluate(0)
    return s


def simplify_stmt(stmt: S.Stmt, keep_unit_loops: bool = False, assume: Sequence[E.PrimExpr] = (),
                  memo: dict | None = None) -> S.Stmt:
    """``assume``: conditions on the sizes that hold whenever the code runs (``s.assume``);
    ``memo``: simplified expressions shared with other runs (see Analyzer), e.g. the runs of
    one pass over mostly the same tree."""
    return _Simplify(keep_unit_loops, assume, memo).visit(stmt)
