"""isl's AST generator, read back as tessel's loop IR.

isl knows how to scan an integer set with loops (Tiramisu's codegen does the same, seed 004
§4): given a schedule map it produces ``for``/``if``/block nodes whose bounds are min/max of
affine expressions and whose leaves name the statement instance to run. This module walks that
tree and writes tessel statements: every ``for`` becomes a :class:`~tessel.ir.stmt.For`
counting from zero (the form every later pass expects, as ScheduleOps' loops do), with the
iterator rebuilt as ``init + step * counter``; ``if`` becomes ``IfThenElse``; a leaf is handed to
the caller, which writes the statement for the given iterator values.

isl's names never reach generated code: the caller says what tessel expression each parameter
and iterator name stands for, and fresh counters are tessel ``Var`` s named by the caller.
isl's integer operations map onto tessel's: ``fdiv_q``/``pdiv_q``/``div`` (exact) are floor
division, ``pdiv_r``/``zdiv_r`` floor modulo (isl only compares ``zdiv_r`` with zero, where
the two agree), n-ary ``min``/``max`` fold left, ``select``/``cond`` is ``select``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import islpy as isl

from ..errors import InternalError
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.functor import substitute
from ..ir.stmt import LoopKind

#: writes the statement of one leaf: (statement name, the values of its tuple's dimensions)
UserFn = Callable[[str, list[E.PrimExpr]], S.Stmt]
#: wraps a loop body: (iterator name, counter var, extent, body) -> the loop as annotated
LoopFn = Callable[[str, E.Var, E.PrimExpr, S.Stmt], S.Stmt]
#: the same, also given the names of the statements the loop runs (to take their loops' tags)
TaggedLoopFn = Callable[[str, E.Var, E.PrimExpr, S.Stmt, frozenset[str]], S.Stmt]

_T = isl.ast_expr_op_type
_BINARY = {
    _T.add: E.add, _T.sub: E.sub, _T.mul: E.mul,
    _T.div: E.floordiv, _T.fdiv_q: E.floordiv, _T.pdiv_q: E.floordiv,
    _T.pdiv_r: E.floormod, _T.zdiv_r: E.floormod,
    _T.eq: E.eq, _T.le: E.le, _T.lt: E.lt, _T.ge: E.ge, _T.gt: E.gt,
    _T.and_: E.logical_and, _T.and_then: E.logical_and, _T.or_: E.logical_or, _T.or_else: E.logical_or,
}
_NARY = {_T.min: E.min_, _T.max: E.max_}


class AstReader:
    """Turns one isl AST into tessel IR.

    ``names``: what each isl parameter stands for; ``counters``: per iterator, the variable
    whose name and dtype each loop over it counts with (a fresh ``Var`` per loop, as isl may
    scan one dimension with several loops);
    ``index_dtype``: the dtype of isl's integer constants and of fresh counters;
    ``tagged``: used instead of ``loop`` when given, also told which statements the loop runs.
    """

    def __init__(self, names: Mapping[str, E.PrimExpr], user: UserFn, loop: LoopFn | None = None,
                 counters: Mapping[str, E.Var] | None = None, index_dtype: str = "int32",
                 tagged: TaggedLoopFn | None = None):
        self.names = dict(names)
        self.user = user
        self.make_loop = loop or _serial
        self.tagged = tagged
        self.counters = dict(counters or {})
        self.dtype = index_dtype
        self._open: list[set[str]] = []  # per loop being read, the statements met inside it

    # ---- statements ----------------------------------------------------------------------
    def stmt(self, node: isl.AstNode) -> S.Stmt:
        t = node.get_type()
        if t == isl.ast_node_type.for_:
            return self._for(node)
        if t == isl.ast_node_type.if_:
            then = self.stmt(node.if_get_then_node())
            other = self.stmt(node.if_get_else_node()) if node.if_has_else_node() else None
            return S.IfThenElse(self.expr(node.if_get_cond()), then, other)
        if t == isl.ast_node_type.block:
            kids = node.block_get_children()
            return S.seq(*[self.stmt(kids.get_at(k)) for k in range(kids.n_ast_node())])
        if t == isl.ast_node_type.mark:
            return self.stmt(node.mark_get_node())
        if t == isl.ast_node_type.user:
            call = node.user_get_expr()
            if call.get_type() != isl.ast_expr_type.op or call.get_op_type() != _T.call:
                raise _internal(f"isl AST leaf is not a statement call: {call.to_C_str()}")
            name = call.get_op_arg(0).get_id().get_name()
            for under in self._open:
                under.add(name)
            args = [self.expr(call.get_op_arg(k)) for k in range(1, call.get_op_n_arg())]
            return self.user(name, args)
        raise _internal(f"isl AST node of unexpected type {t}")

    def _for(self, node: isl.AstNode) -> S.Stmt:
        it = node.for_get_iterator().get_id().get_name()
        init = self.expr(node.for_get_init())
        step = node.for_get_inc().get_val().to_python()
        like = self.counters.get(it)
        counter = E.Var(like.name, like.dtype) if like is not None else E.Var(it, self.dtype)
        here = E.Var(f"{it}.value", counter.dtype)  # the iterator's value while reading the body
        self.names[it] = here
        self._open.append(set())
        try:
            body = self.stmt(node.for_get_body())
            last = None if node.for_is_degenerate() else self._upper(node.for_get_cond(), it)
        finally:
            del self.names[it]
            under = frozenset(self._open.pop())
        if last is None:  # one iteration (isl gives no condition for it)
            extent: E.PrimExpr = E.const(1, counter.dtype)
        else:  # iterator in [init, last], every step-th value
            extent = E.add(E.floordiv(E.sub(last, init), step), 1) if step != 1 else E.add(E.sub(last, init), 1)
        value = E.add(init, E.mul(counter, step) if step != 1 else counter)
        body = substitute(body, {here: value})
        if self.tagged is not None:
            return self.tagged(it, counter, extent, body, under)
        return self.make_loop(it, counter, extent, body)

    def _upper(self, cond: isl.AstExpr, it: str) -> E.PrimExpr:
        """The last value of the iterator from the loop condition ``it <= x`` / ``it < x``
        (a conjunction of such bounds: their minimum)."""
        if cond.get_type() != isl.ast_expr_type.op:
            raise _internal(f"isl loop over {it} has the condition {cond.to_C_str()}, which bounds nothing")
        op = cond.get_op_type()
        if op in (_T.and_, _T.and_then):
            a = self._upper(cond.get_op_arg(0), it)
            b = self._upper(cond.get_op_arg(1), it)
            return E.min_(a, b)
        lhs = cond.get_op_arg(0)
        if op not in (_T.le, _T.lt) or lhs.get_type() != isl.ast_expr_type.id or lhs.get_id().get_name() != it:
            raise _internal(f"isl loop condition not of the form {it} <= bound: {cond.to_C_str()}")
        bound = self.expr(cond.get_op_arg(1))
        return bound if op == _T.le else E.sub(bound, 1)

    # ---- expressions ---------------------------------------------------------------------
    def expr(self, e: isl.AstExpr) -> E.PrimExpr:
        t = e.get_type()
        if t == isl.ast_expr_type.int:
            v = e.get_val().to_python()
            return E.const(v, self.dtype if -(2**31) <= v < 2**31 else "int64")
        if t == isl.ast_expr_type.id:
            name = e.get_id().get_name()
            if name not in self.names:
                raise _internal(f"isl AST names {name!r}, which stands for nothing in tessel")
            return self.names[name]
        op = e.get_op_type()
        args = [self.expr(e.get_op_arg(k)) for k in range(e.get_op_n_arg())]
        if op in _BINARY:
            return _BINARY[op](args[0], args[1])
        if op in _NARY:
            out = args[0]
            for a in args[1:]:
                out = _NARY[op](out, a)
            return out
        if op == _T.minus:
            return E.neg(args[0])
        if op in (_T.select, _T.cond):
            return E.select(args[0], args[1], args[2])
        raise _internal(f"isl AST expression {e.to_C_str()} has an operation tessel does not map")


def _internal(fact: str) -> InternalError:
    """A loop nest isl generated that tessel cannot read: the fact, then what the user can do
    now (the interval lowering needs no isl AST) and what to report."""
    return InternalError(f"isl's loop nest: {fact}; a schedule without commands (after, shift, ...) built with "
                         "exact=False keeps InferBound's regions and needs no isl AST; report the program that "
                         "caused it (a bug in tessel.poly.astgen)")


def _serial(it: str, counter: E.Var, extent: E.PrimExpr, body: S.Stmt) -> S.Stmt:
    return S.For(counter, E.const(0, extent.dtype), extent, LoopKind.SERIAL, body)


def scan(schedule: isl.UnionMap, context: isl.Set, iterators: Sequence[str], reader: AstReader) -> S.Stmt:
    """The loop nest that visits every instance of ``schedule``'s domain in its order.

    ``iterators`` name the schedule's output dimensions (what ``reader.counters`` and its loop
    callback are keyed by); ``context`` holds what is known of the parameters.
    """
    build = isl.AstBuild.from_context(context)
    ids = isl.IdList.alloc(context.get_ctx(), len(iterators))
    for name in iterators:
        ids = ids.add(isl.Id(name))
    build = build.set_iterators(ids)
    return reader.stmt(build.node_from_schedule_map(schedule))


def condition(s: isl.Set, context: isl.Set, reader: AstReader) -> E.PrimExpr:
    """A boolean tessel expression true exactly at the points of ``s`` (within ``context``),
    over the names ``reader`` knows (``s``'s dimensions must be parameters)."""
    build = isl.AstBuild.from_context(context)
    return reader.expr(build.expr_from_set(s))


__all__ = ["AstReader", "LoopFn", "TaggedLoopFn", "UserFn", "condition", "scan"]
