"""User assumptions about the symbolic sizes: ``s.assume("n % 8 == 0")``, ``s.assume("n >= 64")``.

An assumption is a condition on the sizes, written as Python over their names (integers,
``+ - * // %``, comparisons, ``and``/``or``/``not``). It joins the polyhedral model's context
(tails and guards that cannot run under it need not be considered) and every call of a kernel
built from the schedule checks it, refusing sizes that break it (ArgumentError naming it).
Only this grammar is accepted: the text is parsed, never evaluated.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

from ..errors import ScheduleError
from ..ir import expr as E

_BIN = {ast.Add: E.add, ast.Sub: E.sub, ast.Mult: E.mul, ast.FloorDiv: E.floordiv, ast.Mod: E.floormod}
_CMP = {ast.Lt: E.lt, ast.LtE: E.le, ast.Gt: E.gt, ast.GtE: E.ge, ast.Eq: E.eq, ast.NotEq: E.ne}


def size_vars(sch) -> list[E.Var]:
    """The symbolic sizes of the schedule's tensors, in order of appearance."""
    from ..ir.functor import collect

    seen: dict[E.Var, None] = {}
    for st in sch.stages:
        for t in st.op.outputs:
            for n in t.shape:
                for v in collect(n, lambda x: isinstance(x, E.Var)):
                    seen.setdefault(v, None)
    return list(seen)


def parse_assumption(text: str, sizes: Sequence[E.Var]) -> E.PrimExpr:
    """The condition ``text`` over the variables ``sizes`` (by name)."""
    if not isinstance(text, str):
        raise ScheduleError(f"assume expects a condition as a string such as \"n % 8 == 0\", got {text!r}")
    by_name: dict[str, list[E.Var]] = {}
    for v in sizes:
        by_name.setdefault(v.name, []).append(v)
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as err:
        raise ScheduleError(f"assume({text!r}): not a condition ({err.msg}); write e.g. \"n % 8 == 0\"") from None
    return _Parse(text, by_name).cond(tree)


class _Parse:
    def __init__(self, text: str, by_name: dict[str, list[E.Var]]):
        self.text, self.by_name = text, by_name

    def fail(self, what: str) -> ScheduleError:
        known = ", ".join(sorted(self.by_name)) or "none"
        return ScheduleError(f"assume({self.text!r}): {what}; an assumption is a condition on the symbolic "
                             f"sizes ({known}) with integers, + - * // %, comparisons, and/or/not")

    def cond(self, node: ast.AST) -> E.PrimExpr:
        if isinstance(node, ast.BoolOp):
            parts = [self.cond(v) for v in node.values]
            join = E.logical_and if isinstance(node.op, ast.And) else E.logical_or
            out = parts[0]
            for p in parts[1:]:
                out = join(out, p)
            return out
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return E.logical_not(self.cond(node.operand))
        if isinstance(node, ast.Compare):
            left = self.value(node.left)
            out = None
            for op, right in zip(node.ops, node.comparators):
                fn = _CMP.get(type(op))
                if fn is None:
                    raise self.fail(f"the comparison {type(op).__name__} is not supported")
                r = self.value(right)
                c = fn(left, r)
                out = c if out is None else E.logical_and(out, c)
                left = r
            assert out is not None
            return out
        raise self.fail("it is not a comparison")

    def value(self, node: ast.AST) -> E.PrimExpr:
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return E.const(node.value)
        if isinstance(node, ast.Name):
            vs = self.by_name.get(node.id)
            if not vs:
                raise self.fail(f"{node.id!r} is not a symbolic size of this schedule")
            if len(vs) > 1:
                raise self.fail(f"two different sizes are named {node.id!r}")
            return vs[0]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return E.neg(self.value(node.operand))
        if isinstance(node, ast.BinOp) and type(node.op) in _BIN:
            return _BIN[type(node.op)](self.value(node.left), self.value(node.right))
        raise self.fail(f"`{ast.unparse(node)}` is not an integer expression of the sizes")


__all__ = ["parse_assumption", "size_vars"]
