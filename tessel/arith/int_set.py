"""Interval sets with symbolic ends, as InferBound uses them (seed 000, Phases 2-4).

An :class:`IntSet` is the inclusive interval ``[min_value, max_value]`` whose ends are index
expressions (``None`` for an unbounded end). :func:`eval_set` evaluates an index expression
when some of its variables range over sets: the variables not in the map stay symbolic, so a
consumer's request can read ``[j, j + 120]`` where ``j`` is an outer loop variable. Every rule
over-approximates (the true set of values is always inside), never under-approximates.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import BoundError
from ..ir import expr as E
from ..ir.functor import structural_equal, uses_var
from . import const_bound as cb
from .analyzer import Analyzer

End = E.PrimExpr | None


class IntSet:
    __slots__ = ("_empty", "max_value", "min_value")

    def __init__(self, min_value: End, max_value: End, empty: bool = False):
        self.min_value = min_value
        self.max_value = max_value
        self._empty = empty

    # ---- construction -------------------------------------------------------------------
    @staticmethod
    def interval(lo: Any, hi: Any) -> IntSet:
        return IntSet(None if lo is None else E.convert(lo), None if hi is None else E.convert(hi))

    @staticmethod
    def single_point(e: Any) -> IntSet:
        e = E.convert(e)
        return IntSet(e, e)

    @staticmethod
    def from_range(r: E.Range) -> IntSet:
        if isinstance(r.extent, E.IntImm) and r.extent.value == 1:
            return IntSet(r.min, r.min)
        return IntSet(r.min, Analyzer().simplify(E.sub(E.add(r.min, r.extent), 1)))

    @staticmethod
    def everything() -> IntSet:
        return IntSet(None, None)

    @staticmethod
    def nothing() -> IntSet:
        return IntSet(None, None, empty=True)

    # ---- questions ----------------------------------------------------------------------
    def is_nothing(self) -> bool:
        if self._empty:
            return True
        lo, hi = self.min_value, self.max_value
        return isinstance(lo, E.IntImm) and isinstance(hi, E.IntImm) and lo.value > hi.value

    def is_everything(self) -> bool:
        return not self._empty and self.min_value is None and self.max_value is None

    def has_lower_bound(self) -> bool:
        return not self._empty and self.min_value is not None

    def has_upper_bound(self) -> bool:
        return not self._empty and self.max_value is not None

    def is_single_point(self) -> bool:
        lo, hi = self.min_value, self.max_value
        return not self._empty and lo is not None and hi is not None and structural_equal(lo, hi)

    def point_value(self) -> E.PrimExpr:
        if not self.is_single_point():
            raise BoundError(f"the set {self} is not a single point")
        return self.min_value  # type: ignore[return-value]

    def cover_range(self, default: E.Range) -> E.Range:
        """The smallest Range holding the set; an unbounded end takes the default's end."""
        ana = Analyzer()
        if self.is_nothing():
            return E.Range(default.min, E.const(0, default.extent.dtype))
        lo = self.min_value if self.min_value is not None else default.min
        if self.max_value is not None:
            hi = self.max_value
        else:
            hi = E.sub(E.add(default.min, default.extent), 1)
        lo = ana.simplify(lo)
        if self.is_single_point():
            return E.Range(lo, E.const(1, lo.dtype))
        return E.Range(lo, ana.simplify(E.add(E.sub(hi, lo), 1)))

    def to_range(self) -> E.Range:
        if not (self.has_lower_bound() and self.has_upper_bound()):
            raise BoundError(f"the set {self} is unbounded and has no Range")
        return self.cover_range(E.Range(0, 0))

    def __repr__(self) -> str:
        if self._empty:
            return "{}"
        lo = "-inf" if self.min_value is None else str(self.min_value)
        hi = "+inf" if self.max_value is None else str(self.max_value)
        return f"[{lo}, {hi}]"

    __str__ = __repr__


def _as_set(x: Any) -> IntSet:
    if isinstance(x, IntSet):
        return x
    if isinstance(x, E.Range):
        return IntSet.from_range(x)
    if isinstance(x, tuple | list) and len(x) == 2:
        return IntSet.interval(*x)
    return IntSet.single_point(x)


def _pick(ana: Analyzer, a: E.PrimExpr, b: E.PrimExpr, take_min: bool) -> E.PrimExpr:
    """min/max of two ends, resolved to one of them when provable."""
    return ana.simplify(E.min_(a, b) if take_min else E.max_(a, b))


def union(sets: Iterable[IntSet], analyzer: Analyzer | None = None) -> IntSet:
    """The hull of the sets: the smallest interval containing all of them."""
    ana = analyzer or Analyzer()
    live = [s for s in sets if not s.is_nothing()]
    if not live:
        return IntSet.nothing()
    lo, hi = live[0].min_value, live[0].max_value
    for s in live[1:]:
        lo = None if lo is None or s.min_value is None else _pick(ana, lo, s.min_value, True)
        hi = None if hi is None or s.max_value is None else _pick(ana, hi, s.max_value, False)
    return IntSet(lo, hi)


def intersect(sets: Iterable[IntSet], analyzer: Analyzer | None = None) -> IntSet:
    ana = analyzer or Analyzer()
    lo: End = None
    hi: End = None
    for s in sets:
        if s.is_nothing():
            return IntSet.nothing()
        if s.min_value is not None:
            lo = s.min_value if lo is None else _pick(ana, lo, s.min_value, False)
        if s.max_value is not None:
            hi = s.max_value if hi is None else _pick(ana, hi, s.max_value, True)
    if lo is not None and hi is not None and ana.can_prove(E.lt(hi, lo)):
        return IntSet.nothing()
    return IntSet(lo, hi)


def eval_set(e: Any, dom_map: Mapping[Any, Any], analyzer: Analyzer | None = None,
             presimplify: bool = True) -> IntSet:
    """The values ``e`` takes when each variable of ``dom_map`` ranges over its set.

    ``dom_map`` maps Vars (or IterVars) to IntSets or Ranges; other variables stay symbolic.
    ``presimplify=False`` evaluates ``e`` as written: the simplifier distributes products
    (``i*(n - 2)`` becomes ``i*n - i*2``), and the interval of the sum then treats the two
    ``i`` as independent, which can be far looser than that of the factored form.
    """
    ana = analyzer or Analyzer()
    dom = {(k.var if isinstance(k, E.IterVar) else k): _as_set(v) for k, v in dom_map.items()}
    e = ana.simplify(E.convert(e)) if presimplify else E.convert(e)
    s = _SetEval(ana, dom).eval(e)
    if s.is_nothing():
        return IntSet.nothing()
    simp = [None if x is None else ana.simplify(x) for x in (s.min_value, s.max_value)]
    return IntSet(*simp)


def _add(a: End, b: End, sub: bool = False) -> End:
    if a is None or b is None:
        return None
    return E.sub(a, b) if sub else E.add(a, b)


class _SetEval:
    def __init__(self, ana: Analyzer, dom: dict[E.Var, IntSet]):
        self.ana = ana
        self.dom = dom

    def relaxed(self, e: E.PrimExpr) -> bool:
        return uses_var(e, lambda v: v in self.dom)

    def sign(self, e: E.PrimExpr) -> int:
        """1 if e >= 0 provably, -1 if e <= 0 provably, 0 if unknown."""
        lo, hi = self.ana.const_int_bound(e)
        if lo is not None and lo >= 0:
            return 1
        if hi is not None and hi <= 0:
            return -1
        if self.ana.can_prove(E.ge(e, 0)):
            return 1
        return -1 if self.ana.can_prove(E.le(e, 0)) else 0

    def eval(self, e: E.PrimExpr) -> IntSet:
        if not self.relaxed(e):
            return IntSet.single_point(e)
        if isinstance(e, E.Var):
            return self.dom[e]
        fn = getattr(self, "ev_" + type(e).__name__, None)
        out = fn(e) if fn is not None else None
        return out if out is not None else self.fallback(e)

    def fallback(self, e: E.PrimExpr) -> IntSet:
        """Constant bounds with each relaxed variable bounded by its set's constant ends."""

        def var_bound(v: E.Var) -> cb.Bound:
            s = self.dom.get(v)
            if s is None:
                return self.ana.var_bound(v)
            lo = self.ana.const_int_bound(s.min_value)[0] if s.min_value is not None else None
            hi = self.ana.const_int_bound(s.max_value)[1] if s.max_value is not None else None
            return (-cb.INF if lo is None else lo, cb.INF if hi is None else hi)

        lo, hi = cb.ConstBound(var_bound)(e)
        if not (e.dtype.is_integer or e.dtype.is_bool):
            return IntSet.everything()
        lo_e = None if lo == -cb.INF else E.const(int(lo), e.dtype)
        return IntSet(lo_e, None if hi == cb.INF else E.const(int(hi), e.dtype))

    def ev_Add(self, e: E.Add) -> IntSet | None:
        a, b = self.eval(e.a), self.eval(e.b)
        return _empty_or(a, b) or IntSet(_add(a.min_value, b.min_value), _add(a.max_value, b.max_value))

    def ev_Sub(self, e: E.Sub) -> IntSet | None:
        a, b = self.eval(e.a), self.eval(e.b)
        return _empty_or(a, b) or IntSet(_add(a.min_value, b.max_value, True), _add(a.max_value, b.min_value, True))

    def _scale(self, s: IntSet, k: E.PrimExpr, sign: int, fn=E.mul) -> IntSet | None:
        if sign == 0:  # unknown sign: both products are candidates for either end
            if s.min_value is None or s.max_value is None or fn is not E.mul:
                return None
            p, q = fn(s.min_value, k), fn(s.max_value, k)
            return IntSet(E.min_(p, q), E.max_(p, q))
        lo = None if s.min_value is None else fn(s.min_value, k)
        hi = None if s.max_value is None else fn(s.max_value, k)
        return IntSet(lo, hi) if sign > 0 else IntSet(hi, lo)

    def ev_Mul(self, e: E.Mul) -> IntSet | None:
        a, b = self.eval(e.a), self.eval(e.b)
        if _empty_or(a, b):
            return IntSet.nothing()
        if b.is_single_point():
            return self._scale(a, b.point_value(), self.sign(b.point_value()))
        if a.is_single_point():
            return self._scale(b, a.point_value(), self.sign(a.point_value()))
        ends = (a.min_value, a.max_value, b.min_value, b.max_value)
        if all(x is not None for x in ends) and self.sign(a.min_value) > 0 and self.sign(b.min_value) > 0:
            return IntSet(E.mul(a.min_value, b.min_value), E.mul(a.max_value, b.max_value))
        return None

    def _divisor(self, e: E.BinaryOp) -> tuple[IntSet, E.PrimExpr, int] | None:
        a, b = self.eval(e.a), self.eval(e.b)
        if not b.is_single_point():
            return None
        d = b.point_value()
        sd = self.sign(E.sub(d, 1))  # d >= 1 ?
        return (a, d, 1) if sd > 0 else (a, d, -1) if self.sign(E.add(d, 1)) < 0 else None

    def ev_FloorDiv(self, e: E.FloorDiv) -> IntSet | None:
        got = self._divisor(e)
        return None if got is None else self._scale(got[0], got[1], got[2], E.floordiv)

    def ev_Div(self, e: E.Div) -> IntSet | None:
        got = self._divisor(e)  # truncation is monotone in the dividend as well
        return None if got is None else self._scale(got[0], got[1], got[2], E.truncdiv)

    def _mod(self, e: E.BinaryOp, div, mod) -> IntSet | None:
        got = self._divisor(e)
        if got is None or got[2] < 0:
            return None
        a, d, _ = got
        lo, hi = a.min_value, a.max_value
        nonneg = lo is not None and self.sign(lo) > 0
        if lo is not None and hi is not None and (div is E.floordiv or nonneg):
            if self.ana.can_prove_equal(div(lo, d), div(hi, d)):  # one period: no wrap-around
                return IntSet(mod(lo, d), mod(hi, d))
        top = E.sub(d, 1)
        if div is E.floordiv or nonneg:
            return IntSet(E.const(0, e.dtype), top)
        if hi is not None and self.sign(hi) < 0:
            return IntSet(E.neg(top), E.const(0, e.dtype))
        return IntSet(E.neg(top), top)

    def ev_FloorMod(self, e: E.FloorMod) -> IntSet | None:
        return self._mod(e, E.floordiv, E.floormod)

    def ev_Mod(self, e: E.Mod) -> IntSet | None:
        return self._mod(e, E.truncdiv, E.truncmod)

    def _minmax(self, e: E.BinaryOp, take_min: bool) -> IntSet:
        a, b = self.eval(e.a), self.eval(e.b)
        if a.is_nothing() or b.is_nothing():
            return b if a.is_nothing() else a
        fn = E.min_ if take_min else E.max_

        def both(x: End, y: End, none_wins: bool) -> End:
            if x is None or y is None:
                return None if none_wins else (y if x is None else x)
            return fn(x, y)

        # the minimum is unbounded below if either is; bounded above if either is
        return IntSet(both(a.min_value, b.min_value, take_min), both(a.max_value, b.max_value, not take_min))

    def ev_Min(self, e: E.Min) -> IntSet:
        return self._minmax(e, True)

    def ev_Max(self, e: E.Max) -> IntSet:
        return self._minmax(e, False)

    def ev_Select(self, e: E.Select) -> IntSet:
        if self.ana.can_prove(e.condition):
            return self.eval(e.true_value)
        if self.ana.can_prove(E.logical_not(e.condition)):
            return self.eval(e.false_value)
        return union([self.eval(e.true_value), self.eval(e.false_value)], self.ana)

    def ev_Cast(self, e: E.Cast) -> IntSet | None:
        src, dt = e.value.dtype, e.dtype
        if not (src.is_integer and dt.is_integer and dt.bits >= src.bits and (dt.is_int or src.is_uint)):
            return None
        s = self.eval(e.value)
        if s.is_nothing():
            return s
        return IntSet(*(None if x is None else E.cast(x, dt) for x in (s.min_value, s.max_value)))

    def ev_Let(self, e: E.Let) -> IntSet:
        inner = _SetEval(self.ana, {**self.dom, e.var: self.eval(e.value)})
        return inner.eval(e.body)


def _empty_or(a: IntSet, b: IntSet) -> IntSet | None:
    return IntSet.nothing() if a.is_nothing() or b.is_nothing() else None
