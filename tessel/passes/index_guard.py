"""Guards on symbolic sizes: what a call's sizes must satisfy for narrow index arithmetic.

Seed 002 keeps an expression over a symbolic size in the size's dtype, so ``i*m + j`` on a
``(n, m)`` tensor of int32 sizes is int32 arithmetic, and a call with ``n*m`` beyond int32
would index the wrong elements. Lowering cannot know the sizes; it can only say, for each such
computation, how large its values get *as a function of the sizes*. That is what this module
derives: bounds of a node's values over the loops around it, with the loop variables
eliminated (``i*m + j`` for ``i < n``, ``j < m`` reaches ``n*m - 1``). The kernel's argument
check evaluates them in Python integers at every call (:class:`~tessel.ir.stmt.IndexGuard`).

The bounds are interval arithmetic with symbolic ends, built in int64 so that the expressions
themselves never wrap, and loose rather than ever too tight: a product of two ranges of
unknown sign takes the extreme of the four corner products. They are not the IntSets of
bound inference on purpose: those give up (an unbounded end) where a sign cannot be proved,
and a guard must always have a value. Nor are they simplified: the canonical simplifier
would cost more at every build than the check costs at a call, where the guards share their
subexpressions (the ranges of the loops) and each is evaluated once per new set of sizes.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from ..arith import const_bound as cb
from ..errors import LowerError
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.dtype import int64
from ..ir.functor import StructKey, free_vars, memoized

Ends = tuple[E.PrimExpr, E.PrimExpr]
_MAY_OVERFLOW = (E.Add, E.Sub, E.Mul, E.Ramp)  # other nodes stay within their operands' values


class LaneBounds(cb.ConstBound):
    """Constant bounds that also see through vectors (a bound of every lane) and know the
    intrinsic the vectorizer peels with; kept to these passes, so that the simplifier the
    earlier passes use (and hence their code) stays as it was."""

    def _bound(self, e: E.PrimExpr) -> cb.Bound:
        if isinstance(e, E.Broadcast):
            return self(e.value)
        if isinstance(e, E.Ramp):
            base = self(e.base)
            return cb.hull(base, cb.add(base, cb.mul(self(e.stride), (e.lanes - 1, e.lanes - 1))))
        gap = cb.align_gap_bound(e)
        return gap if gap is not None else super()._bound(e)


@dataclass
class _Frame:
    """A loop or let variable in scope: its first and last value, and their ends in the sizes."""

    var: E.Var
    first: E.PrimExpr
    last: E.PrimExpr
    ends: Ends | None = None


class GuardBuilder:
    """Collects the :class:`IndexGuard` s of one kernel while the index_dtype step walks it."""

    def __init__(self, size_vars: Iterable[E.Var]):
        self.sizes = set(size_vars)
        self.frames: list[_Frame] = []
        self.bounds: dict[E.Var, cb.Bound] = {}  # loop and let variables, sizes in [0, max]
        # a size is an array's extent: never negative, and it fits its dtype
        self.at_call = LaneBounds(self._var_bound)  # bounds of ends, which use sizes only
        # (side, the end without its constant term) -> the guard with the extreme constant
        self.guards: dict[tuple, tuple[S.IndexGuard, int]] = {}
        self.when: list[E.PrimExpr] = []  # the conditions on sizes alone of the branches we are in
        self._fresh()

    def _fresh(self) -> None:
        self.memo: dict[int, tuple[E.PrimExpr, Ends | None]] = {}
        self.cbound = LaneBounds(self._var_bound)

    def _var_bound(self, v: E.Var) -> cb.Bound:
        b = self.bounds.get(v)
        if b is not None:
            return b
        return (0, v.dtype.max_value()) if v in self.sizes else cb.dtype_bound(v.dtype)

    def enter(self, var: E.Var, first: E.PrimExpr, last: E.PrimExpr) -> None:
        lo = self.cbound(first)[0]
        self.bounds[var] = (lo, max(self.cbound(last)[1], lo))
        self.frames.append(_Frame(var, first, last))
        self._fresh()

    def leave(self) -> None:
        self.bounds.pop(self.frames.pop().var, None)
        self._fresh()

    @contextmanager
    def assume(self, cond: E.PrimExpr) -> Iterator[None]:
        """Inside a branch taken when ``cond`` holds: a condition on the sizes alone (a loop
        partition's ``m >= 16``) limits the guards made there; any other is left out, which
        only makes them stricter."""
        mine = not self._uses_more_than_sizes(cond)
        if mine:
            self.when.append(cond)
        try:
            yield
        finally:
            if mine:
                self.when.pop()

    def _uses_more_than_sizes(self, e: E.PrimExpr) -> bool:
        if isinstance(e, E.Var):
            return e not in self.sizes
        if isinstance(e, E.BufferLoad | E.Call | E.Let | E.Ramp | E.Broadcast):
            return True
        return any(self._uses_more_than_sizes(x) for x in e.fields() if isinstance(x, E.PrimExpr))

    # ---- guards --------------------------------------------------------------------------
    def check(self, e: E.PrimExpr, what: str) -> None:
        """Guard the narrow node ``e`` (``what`` says where it is) if some sizes could take it out
        of its dtype. Only nodes that can leave their operands' range are worth a guard."""
        if not isinstance(e, _MAY_OVERFLOW):
            return
        dt = e.dtype.element
        lo, hi = self.cbound(e)
        need = (lo < dt.min_value(), hi > dt.max_value())
        if not any(need):
            return
        ends = self.ends(e)
        if ends is None:
            raise LowerError(f"{what}: `{e}` is computed in {dt}, but its range could not be expressed in the "
                             f"symbolic sizes ({self._names()}), so a call with sizes it cannot hold would go "
                             f"unnoticed; {self._advice(e, dt)}")
        low, high = (x if n else None for x, n in zip(ends, need))
        if low is not None and self.at_call(low)[0] >= dt.min_value():
            low = None
        if high is not None and self.at_call(high)[1] <= dt.max_value():
            high = None
        if low is None and high is None:
            return
        if all(x is None or isinstance(x, E.IntImm) for x in (low, high)):
            raise LowerError(
                f"{what}: `{e}` is computed in {dt}, but reaches {high if high is not None else low} whatever "
                f"the sizes are; declare the sizes int64 (te.var(..., dtype='int64'))"
            )
        for end, sign in ((low, -1), (high, 1)):
            if end is None:
                continue
            # unrolled copies reach ``x + 0``, ``x + 16``, ...: one guard, on the extreme constant
            base, c = _offset(end)
            when = tuple(self.when)
            # by structure: a partitioned or unrolled nest repeats each index many times over
            key = (sign, StructKey(base), *map(StructKey, when))
            if key not in self.guards or sign * c > sign * self.guards[key][1]:
                ends = (end, None) if sign < 0 else (None, end)
                self.guards[key] = (S.IndexGuard(what, e, *ends, when), c)

    def result(self) -> tuple[S.IndexGuard, ...]:
        return tuple(g for g, _ in self.guards.values())

    def _names(self) -> str:
        return ", ".join(sorted(v.name for v in self.sizes))

    # ---- symbolic interval arithmetic ------------------------------------------------------
    def _advice(self, e: E.PrimExpr, dt) -> str:
        """What to do: an unknown scalar argument is bounded by giving it a shape (an argument's
        shape is checked at the call); declaring sizes int64 helps only an expression narrower
        than int64 (issue 33's trial: the advice was repeated after it was followed)."""
        unknown = sorted({v.name for v in free_vars(e) if v not in self.sizes and v not in self.bounds})
        if unknown:
            return (f"{', '.join(unknown)} is a scalar argument no argument's shape bounds, so it may be any value: "
                    f"pass a tensor shaped by it (e.g. the whole result instead of one row), so that its value is "
                    f"known to be a size")
        if dt.bits >= int64.bits:
            return "its operands are too large for any index dtype; make the sizes smaller or split the computation"
        return "declare the sizes int64 (te.var(..., dtype='int64')) so that it is computed in int64"

    def ends(self, e: E.PrimExpr) -> Ends | None:
        """Lowest and highest value of ``e`` (each lane, for a vector) in terms of the sizes, as
        int64 expressions; ``None`` when ``e`` depends on data or on calls."""
        return memoized(self.memo, e, self._ends)

    def _ends(self, e: E.PrimExpr) -> Ends | None:
        if isinstance(e, E.IntImm):
            c = E.const(e.value, int64)
            return c, c
        if isinstance(e, E.Var):
            return self._var(e)
        if isinstance(e, E.Broadcast):
            return self.ends(e.value)
        if isinstance(e, E.Cast):
            inner = self.ends(e.value)
            if inner is not None and e.dtype.element.bits >= e.value.dtype.element.bits:
                return inner  # a widening keeps every value
            el = e.dtype.element
            return E.const(el.min_value(), int64), E.const(el.max_value(), int64)
        if isinstance(e, E.Select):
            t, f = self.ends(e.true_value), self.ends(e.false_value)
            return None if t is None or f is None else (E.min_(t[0], f[0]), E.max_(t[1], f[1]))
        kids = [self.ends(x) for x in e.fields() if isinstance(x, E.PrimExpr)]
        if any(k is None for k in kids) or not kids:
            return None
        if isinstance(e, E.Ramp):
            (b0, b1), (s0, s1) = kids
            step = E.const(e.lanes - 1, int64)
            last = (E.mul(s0, step), E.mul(s1, step))
            return E.min_(b0, E.add(b0, last[0])), E.max_(b1, E.add(b1, last[1]))
        if not isinstance(e, E.BinaryOp) or isinstance(e, E.CmpOp | E.And | E.Or):
            return None
        (a0, a1), (b0, b1) = kids
        if isinstance(e, E.Add):
            return E.add(a0, b0), E.add(a1, b1)
        if isinstance(e, E.Sub):
            return E.sub(a0, b1), E.sub(a1, b0)
        if isinstance(e, E.Min):
            return E.min_(a0, b0), E.min_(a1, b1)
        if isinstance(e, E.Max):
            return E.max_(a0, b0), E.max_(a1, b1)
        if isinstance(e, E.Mul):
            return self._mul((a0, a1), (b0, b1))
        return self._div(e, (a0, a1), (b0, b1))

    def _var(self, v: E.Var) -> Ends | None:
        if v in self.sizes:
            x = E.cast(v, int64)
            return x, x
        f = next((f for f in reversed(self.frames) if f.var is v), None)
        if f is None:
            return None
        if f.ends is None:  # its first and last values use only variables of outer loops
            first, last = self.ends(f.first), self.ends(f.last)
            f.ends = None if first is None or last is None else (first[0], last[1])
        return f.ends

    def _nonneg(self, x: E.PrimExpr) -> bool:
        return self.at_call(x)[0] >= 0

    def _mul(self, a: Ends, b: Ends) -> Ends:
        if _constant(b) is not None:
            a, b = b, a
        if _constant(a) is not None:  # a constant factor
            p, q = E.mul(a[0], b[0]), E.mul(a[0], b[1])
            return (p, q) if a[0].value >= 0 else (q, p)
        if self._nonneg(a[0]) and self._nonneg(b[0]):  # both ranges start at 0 or above
            return E.mul(a[0], b[0]), E.mul(a[1], b[1])
        corners = [E.mul(x, y) for x in a for y in b]
        lo, hi = corners[0], corners[0]
        for c in corners[1:]:
            lo, hi = E.min_(lo, c), E.max_(hi, c)
        return lo, hi

    def _div(self, e: E.BinaryOp, a: Ends, b: Ends) -> Ends:
        """Division and remainder; a zero divisor gives 0 in both targets."""
        zero = E.const(0, int64)
        c = _constant(b)
        if c is not None and c > 0:
            if isinstance(e, E.FloorDiv | E.Div):  # monotone in the dividend
                fn = E.floordiv if isinstance(e, E.FloorDiv) else E.truncdiv
                return fn(a[0], b[0]), fn(a[1], b[1])
            top = E.const(c - 1, int64)
            if isinstance(e, E.FloorMod) or self._nonneg(a[0]):
                return zero, top
            return E.neg(top), top
        # any divisor: the result is no larger in magnitude than the dividend
        m = E.max_(E.max_(a[1], E.neg(a[0])), zero)
        return E.neg(m), m


def _offset(end: E.PrimExpr) -> tuple[E.PrimExpr, int]:
    """``end`` as ``base + c`` for a constant ``c`` (0 when it has no constant term)."""
    if isinstance(end, E.Add | E.Sub) and isinstance(end.b, E.IntImm):
        return end.a, end.b.value if isinstance(end, E.Add) else -end.b.value
    return end, 0


def _constant(x: Ends) -> int | None:
    """The value of a range that is a single constant."""
    lo, hi = x
    return lo.value if isinstance(lo, E.IntImm) and isinstance(hi, E.IntImm) and lo.value == hi.value else None


__all__ = ["GuardBuilder", "LaneBounds"]
