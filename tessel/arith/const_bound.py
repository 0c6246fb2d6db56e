"""Constant interval bounds of integer expressions.

The cheapest of the analyses, and the one every other rule leans on: a simplifier rule such
as ``floormod(x, 8) -> x`` is sound exactly when ``x`` provably lies in ``[0, 8)``. Bounds are
kept as ``(lo, hi)`` with ``-inf``/``inf`` (floats) standing for "unbounded", so that interval
arithmetic needs no special cases; the analyzer turns infinities into ``None`` at its surface.
Index arithmetic is assumed not to overflow (as in TVM), so sums are not clipped to the dtype.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from ..ir import expr as E

INF = math.inf
Bound = tuple[float | int, float | int]
EVERYTHING: Bound = (-INF, INF)


def dtype_bound(dt) -> Bound:
    """What a value of ``dt`` can hold at all (floats and unknown types: everything)."""
    if dt.is_bool:
        return (0, 1)
    if dt.is_uint:
        return (0, INF)
    return EVERYTHING


def _mul1(x, y):
    if x == 0 or y == 0:  # 0 * inf is 0 here: the product with a zero factor is exactly zero
        return 0
    return x * y


def mul(a: Bound, b: Bound) -> Bound:
    prods = [_mul1(x, y) for x in a for y in b]
    return (min(prods), max(prods))


def add(a: Bound, b: Bound) -> Bound:
    lo = -INF if -INF in (a[0], b[0]) else a[0] + b[0]
    hi = INF if INF in (a[1], b[1]) else a[1] + b[1]
    return (lo, hi)


def neg(a: Bound) -> Bound:
    return (-a[1], -a[0])


def _floor_div1(x, y):
    """floor(x / y) for y > 0 (y may be inf)."""
    if math.isinf(x):
        return x
    if math.isinf(y):
        return 0 if x >= 0 else -1
    return x // y


def _trunc_div1(x, y):
    if math.isinf(x):
        return x
    if math.isinf(y):
        return 0
    q = abs(x) // abs(y)
    return q if x >= 0 else -q


def _nonzero(b: Bound) -> Bound:
    """A divisor is never zero at run time, so a zero end can be moved off by one."""
    if b[0] == 0 and b[1] > 0:
        return (1, b[1])
    if b[1] == 0 and b[0] < 0:
        return (b[0], -1)
    return b


def floordiv(a: Bound, b: Bound) -> Bound:
    b = _nonzero(b)
    if b[0] > 0:
        cands = [_floor_div1(x, y) for x in a for y in b]
        return (min(cands), max(cands))
    if b[1] < 0:
        return floordiv(neg(a), neg(b))
    return EVERYTHING


def truncdiv(a: Bound, b: Bound) -> Bound:
    b = _nonzero(b)
    if b[0] > 0:
        cands = [_trunc_div1(x, y) for x in a for y in b]
        return (min(cands), max(cands))
    if b[1] < 0:
        return neg(truncdiv(a, neg(b)))
    return EVERYTHING


def floormod(a: Bound, b: Bound) -> Bound:
    b = _nonzero(b)
    if b[0] > 0:
        if b[0] == b[1] and not math.isinf(b[0]) and not math.isinf(a[0]) and not math.isinf(a[1]):
            c = b[0]
            if a[0] // c == a[1] // c:  # the whole interval lies in one period
                return (a[0] % c, a[1] % c)
        if a[0] >= 0:
            return (0, min(a[1], b[1] - 1))
        return (0, b[1] - 1)
    if b[1] < 0:
        return (b[0] + 1, 0)
    return EVERYTHING


def truncmod(a: Bound, b: Bound) -> Bound:
    m = max(abs(b[0]), abs(b[1]))
    if b[0] <= 0 <= b[1] and m == 0:
        return EVERYTHING
    if a[0] >= 0:
        return (0, min(a[1], m - 1))
    if a[1] <= 0:
        return (max(a[0], -(m - 1)), 0)
    return (max(a[0], -(m - 1)), min(a[1], m - 1))


def hull(a: Bound, b: Bound) -> Bound:
    return (min(a[0], b[0]), max(a[1], b[1]))


def intersect(a: Bound, b: Bound) -> Bound:
    return (max(a[0], b[0]), min(a[1], b[1]))


_CMP = (E.EQ, E.NE, E.LT, E.LE, E.GT, E.GE)


def align_gap_bound(e: E.PrimExpr) -> Bound | None:
    """The values of ``tsl_align_gap(load, bytes)``, the vectorizer's peel before aligned
    vectors (elements from an address to the next aligned one: fewer than its bytes); None
    for any other expression. Not a rule of :class:`ConstBound` itself, so that the
    simplifier (and the code of the passes that use it) stays as it is."""
    if isinstance(e, E.Call) and e.op == "tsl_align_gap" and isinstance(e.args[1], E.IntImm):
        return (0, max(e.args[1].value - 1, 0))
    return None


class ConstBound:
    """Computes bounds of one expression tree; ``var_bound`` supplies the bounds of variables.

    Results are memoised per node object, so shared subtrees (common after substitution) are
    bounded once instead of once per path.
    """

    def __init__(self, var_bound: Callable[[E.Var], Bound]):
        self.var_bound = var_bound
        self.memo: dict[int, tuple[E.PrimExpr, Bound]] = {}

    def __call__(self, e: E.PrimExpr) -> Bound:
        hit = self.memo.get(id(e))
        if hit is not None and hit[0] is e:
            return hit[1]
        b = intersect(self._bound(e), dtype_bound(e.dtype))
        self.memo[id(e)] = (e, b)
        return b

    def _bound(self, e: E.PrimExpr) -> Bound:
        if isinstance(e, E.IntImm):
            return (e.value, e.value)
        if isinstance(e, E.Var):
            return self.var_bound(e)
        if isinstance(e, E.Add):
            return add(self(e.a), self(e.b))
        if isinstance(e, E.Sub):
            return add(self(e.a), neg(self(e.b)))
        if isinstance(e, E.Mul):
            return mul(self(e.a), self(e.b))
        if isinstance(e, E.FloorDiv):
            return floordiv(self(e.a), self(e.b))
        if isinstance(e, E.FloorMod):
            return floormod(self(e.a), self(e.b))
        if isinstance(e, E.Div) and not e.dtype.is_float:
            return truncdiv(self(e.a), self(e.b))
        if isinstance(e, E.Mod) and not e.dtype.is_float:
            return truncmod(self(e.a), self(e.b))
        if isinstance(e, E.Min):
            a, b = self(e.a), self(e.b)
            return (min(a[0], b[0]), min(a[1], b[1]))
        if isinstance(e, E.Max):
            a, b = self(e.a), self(e.b)
            return (max(a[0], b[0]), max(a[1], b[1]))
        if isinstance(e, E.Select):
            c = self(e.condition)
            if c[0] >= 1:
                return self(e.true_value)
            if c[1] <= 0:
                return self(e.false_value)
            return hull(self(e.true_value), self(e.false_value))
        if isinstance(e, E.Cast):
            return self._cast(e)
        if isinstance(e, E.Let):
            return self(e.body)
        if isinstance(e, _CMP) and not e.a.dtype.is_float:
            return self._compare(e)
        return dtype_bound(e.dtype)

    def _cast(self, e: E.Cast) -> Bound:
        dt, src = e.dtype, e.value.dtype
        if dt.is_bool:
            return (0, 1)
        if not dt.is_integer or not (src.is_integer or src.is_bool):
            return EVERYTHING
        b = self(e.value)
        lo, hi = dt.min_value(), dt.max_value()
        if lo <= b[0] and b[1] <= hi:
            return b
        if src.is_integer and dt.bits >= src.bits and (dt.is_int or src.is_uint):
            return b  # widening keeps every value (unbounded ends stay unbounded)
        return (lo, hi)

    def _compare(self, e: E.BinaryOp) -> Bound:
        d = add(self(e.a), neg(self(e.b)))
        true_if = {E.LT: d[1] < 0, E.LE: d[1] <= 0, E.GT: d[0] > 0, E.GE: d[0] >= 0,
                   E.EQ: d == (0, 0), E.NE: d[0] > 0 or d[1] < 0}
        false_if = {E.LT: d[0] >= 0, E.LE: d[0] > 0, E.GT: d[1] <= 0, E.GE: d[1] < 0,
                    E.EQ: d[0] > 0 or d[1] < 0, E.NE: d == (0, 0)}
        if true_if[type(e)]:
            return (1, 1)
        if false_if[type(e)]:
            return (0, 0)
        return (0, 1)
