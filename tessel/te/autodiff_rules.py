"""The derivative of one scalar expression with respect to the reads of one tensor element.

``te.gradient`` differentiates each compute body with respect to a group of reads of a tensor
(the reads whose indices are the same expression, so the same element). Everything else in the
body is a constant for that derivative. Elementwise math goes through the intrinsic table
(each entry carries its partials), so a function that exists in tessel is differentiable or
says why not. Only floating-point values carry derivatives: an integer or bool subexpression
(an index, a condition) has none, which is how indices and choices are held fixed.

A zero derivative is ``None`` rather than a constant 0, so whole branches drop out and a
read that cannot influence the result produces no adjoint stage at all.
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import DefinitionError
from ..ir import expr as E
from ..ir.functor import Functor, substitute
from ..ir.intrinsics import lookup

D = E.PrimExpr | None


def _one(e: E.PrimExpr) -> E.PrimExpr:
    return E.FloatImm(1.0, e.dtype)


def add(a: D, b: D) -> D:
    if a is None:
        return b
    if b is None:
        return a
    return E.add(a, b)


def mul(a: D, b: D) -> D:
    """``a * b`` where ``None`` is zero and a literal 1 disappears."""
    if a is None or b is None:
        return None
    if isinstance(a, E.FloatImm) and a.value == 1.0:
        return b
    if isinstance(b, E.FloatImm) and b.value == 1.0:
        return a
    return E.mul(a, b)


def neg(a: D) -> D:
    return None if a is None else E.neg(a)


def _select(cond: E.PrimExpr, t: D, f: D, like: E.PrimExpr) -> D:
    if t is None and f is None:
        return None
    zero = E.FloatImm(0.0, like.dtype)
    return E.select(cond, zero if t is None else t, zero if f is None else f)


class Derivative(Functor):
    """``d expr / d x`` where ``x`` is any read for which ``is_target(load)`` holds."""

    def __init__(self, is_target: Callable[[E.ProducerLoad], bool]):
        self.is_target = is_target
        self.memo: dict[int, tuple[E.PrimExpr, D]] = {}

    def __call__(self, e: E.PrimExpr) -> D:
        if not e.dtype.is_float:
            return None
        hit = self.memo.get(id(e))
        if hit is not None and hit[0] is e:
            return hit[1]
        out = self.visit(e)
        self.memo[id(e)] = (e, out)
        return out

    def visit_PrimExpr(self, e: E.PrimExpr) -> D:
        raise DefinitionError(f"te.gradient cannot differentiate `{e}` ({type(e).__name__})")

    def visit_ProducerLoad(self, e: E.ProducerLoad) -> D:
        return _one(e) if self.is_target(e) else None

    def visit_Var(self, e: E.Var) -> D:
        return None

    visit_FloatImm = visit_IntImm = visit_StringImm = visit_Var

    def visit_Add(self, e: E.Add) -> D:
        return add(self(e.a), self(e.b))

    def visit_Sub(self, e: E.Sub) -> D:
        return add(self(e.a), neg(self(e.b)))

    def visit_Mul(self, e: E.Mul) -> D:
        return add(mul(self(e.a), e.b), mul(e.a, self(e.b)))

    def visit_Div(self, e: E.Div) -> D:
        da, db = self(e.a), self(e.b)
        first = None if da is None else E.true_div(da, e.b)
        second = None if db is None else E.true_div(E.mul(e.a, db), E.mul(e.b, e.b))
        return add(first, neg(second))

    def visit_FloorDiv(self, e: E.FloorDiv) -> D:
        return None  # a step function of its operands: zero almost everywhere

    def visit_FloorMod(self, e: E.BinaryOp) -> D:
        # a - floor(a / b) * b, the floor held constant
        return add(self(e.a), neg(mul(E.Call(e.dtype, "floor", (E.true_div(e.a, e.b),)), self(e.b))))

    def visit_Mod(self, e: E.Mod) -> D:
        return add(self(e.a), neg(mul(E.Call(e.dtype, "trunc", (E.true_div(e.a, e.b),)), self(e.b))))

    def visit_Min(self, e: E.Min) -> D:
        return _select(E.le(e.a, e.b), self(e.a), self(e.b), e)

    def visit_Max(self, e: E.Max) -> D:
        return _select(E.ge(e.a, e.b), self(e.a), self(e.b), e)

    def visit_Select(self, e: E.Select) -> D:
        return _select(e.condition, self(e.true_value), self(e.false_value), e)

    def visit_Cast(self, e: E.Cast) -> D:
        d = self(e.value)
        return None if d is None else E.cast(d, e.dtype)

    def visit_Let(self, e: E.Let) -> D:
        return self(substitute(e.body, {e.var: e.value}))

    def visit_Reduce(self, e: E.Reduce) -> D:
        raise DefinitionError("te.gradient: a reduction inside a larger expression cannot be differentiated; "
                              "a reduction must be the whole body of its compute")

    def visit_Call(self, e: E.Call) -> D:
        if e.op == "if_then_else":
            c, t, f = e.args
            dt, df = self(t), self(f)
            if dt is None and df is None:
                return None
            zero = E.FloatImm(0.0, e.dtype)
            return E.Call(e.dtype, "if_then_else", (c, zero if dt is None else dt, zero if df is None else df))
        spec = lookup(e.op)
        if spec is None or spec.derivative is None:
            raise DefinitionError(
                f"te.gradient: the intrinsic {e.op} has no derivative in tessel's intrinsic table "
                "(tessel.ir.intrinsics); rewrite the expression without it or add its derivative there"
            )
        out: D = None
        dargs = [self(a) for a in e.args]
        if all(d is None for d in dargs):
            return None
        partials = spec.derivative(*e.args)
        for p, d in zip(partials, dargs):
            out = add(out, mul(E.cast(p, e.dtype) if p.dtype != e.dtype else p, d))
        return out


def derivative(e: E.PrimExpr, is_target: Callable[[E.ProducerLoad], bool]) -> D:
    """``d e / d x`` (``None`` when it is identically zero) where ``x`` is each read ``is_target`` accepts."""
    return Derivative(is_target)(e)


__all__ = ["Derivative", "add", "derivative", "mul"]
