"""Loops that cannot run, found by isl and removed from the lowered code (issue 13, item 4).

Lowering's arithmetic already drops a loop whose extent it proves non-positive; what it cannot
combine -- the sizes' context (every dimension is at least zero, the user's assumptions,
``n == 2*m``), the loops around a loop and the guards it sits under -- isl decides exactly: a
loop whose extent is at least one at no point of that set is empty for every call and goes,
with all the instances inside it (a split's tail when the size is known to divide, a stage
whose region is empty); a guard decided there is replaced by the branch that runs. Only loops of symbolic extent are asked about, so a program of
constant sizes pays nothing. A condition isl cannot represent (a data read, a product of two
variables) is left out of the set, which only makes it larger: a loop is removed only when
even that larger set has no point where it runs.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from ..arith.budget import gave_up
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.functor import Mutator, collect, free_vars
from ..ir.names import shown
from ..ir.printer import to_text
from ..tunables import current
from .space import Converter, Namer, NotAffine, bounded, set_space


def remove_empty_loops(stmt: S.Stmt, context: Sequence[E.PrimExpr]) -> tuple[S.Stmt, int]:
    """``stmt`` without its loops that run for no sizes ``context`` allows, and with each guard
    that is decided under it replaced by the part that runs; also how many of both."""
    if not any(not isinstance(f.extent, E.IntImm) for f in collect(stmt, lambda n: isinstance(n, S.For), statements_only=True)):
        return stmt, 0
    pruner = _Prune(list(context))
    out = pruner.visit(stmt)
    return out, len(pruner.removed) + pruner.decided


def _integral(c: E.PrimExpr) -> bool:
    """Whether ``c`` speaks of integer variables only (no data read, no float)."""
    if collect(c, lambda n: isinstance(n, E.ProducerLoad | E.BufferLoad | E.Call)):
        return False
    return all(v.dtype.is_int or v.dtype.is_uint for v in free_vars(c))


class _Prune(Mutator):
    statements_only = True

    def __init__(self, context: list[E.PrimExpr]):
        self.scope = [c for c in context if _integral(c)]
        self.removed: list[S.For] = []
        self.decided = 0  # guards replaced by their branch

    def visit_For(self, s: S.For):
        if not isinstance(s.extent, E.IntImm) and _never(self.scope, E.ge(s.extent, 1)):
            self.removed.append(s)
            return S.Evaluate(0)
        inside = [E.ge(s.loop_var, s.min), E.lt(s.loop_var, E.add(s.min, s.extent))]
        self.scope += inside
        try:
            return self.generic_visit(s)
        finally:
            del self.scope[-len(inside):]

    def visit_SeqStmt(self, s: S.SeqStmt):
        parts = [self.visit(x) for x in s.seq]
        return s if all(a is b for a, b in zip(parts, s.seq)) else S.seq(*parts)

    def visit_IfThenElse(self, s: S.IfThenElse):
        if not _integral(s.condition):
            return self.generic_visit(s)
        if _never(self.scope, s.condition):  # a guard that never holds: only its else part runs
            self.decided += 1
            return self.visit(s.else_case) if s.else_case is not None else S.Evaluate(0)
        if _never(self.scope, E.logical_not(s.condition)):  # one that always holds
            self.decided += 1
            return self.visit(s.then_case)
        self.scope.append(s.condition)
        try:
            then = self.visit(s.then_case)
        finally:
            self.scope.pop()
        els = None
        if s.else_case is not None:
            self.scope.append(E.logical_not(s.condition))
            try:
                els = self.visit(s.else_case)
            finally:
                self.scope.pop()
        if then is s.then_case and els is s.else_case:
            return s
        return S.IfThenElse(s.condition, then, els)


def _never(scope: list[E.PrimExpr], cond: E.PrimExpr) -> bool:
    """Whether no integer values of the variables satisfy ``scope`` and ``cond`` together (every
    variable, loop or size, is a parameter: emptiness is the same question)."""
    if not _integral(cond):
        return False
    found: dict[E.Var, None] = {}
    for c in (*scope, cond):
        for v in free_vars(c):
            found.setdefault(v, None)
    namer = Namer()
    names = [namer.name(v, v.name, "p_") for v in found]
    conv = Converter(set_space([], names), {}, {v: k for k, v in enumerate(found)})
    start = time.perf_counter()
    answered, empty = bounded(current().emptiness_operations, lambda: _empty(conv, scope, cond))
    if not answered:
        gave_up("emptiness", f"the condition {shown(to_text(cond))}", time.perf_counter() - start,
                "the loop or guard is kept")
    return bool(empty)


def _empty(conv: Converter, scope: list[E.PrimExpr], cond: E.PrimExpr) -> bool:
    try:
        points = conv.set(cond)
    except NotAffine:
        return False
    for c in scope:
        try:
            points = points.intersect(conv.set(c))
        except NotAffine:
            continue  # left out: the set only grows
    return bool(points.is_empty())


__all__ = ["remove_empty_loops"]
