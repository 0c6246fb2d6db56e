"""Which points of a consumer read a given element of its producer: the index equations solved.

The adjoint of ``X[j]`` sums, over every point ``v`` of a consumer's domain (its axes and
reduction axes), the consumer's adjoint times the local derivative wherever the read's indices
``idx(v)`` equal ``j``. Summing over the whole domain with that equality as a filter is always
right (TVM's Jacobian before its zero elimination) but costs the product of both domains. So
each equation ``idx_d(v) == j_d`` that is affine in the domain variables is solved for one of
them (``v_a = (j_d - rest) / c``; a divisibility condition when ``|c| > 1``), together with the
condition that the solved value lies in ``v_a``'s domain; the variables left over stay a
reduction, the equations left over stay conditions. Among several candidates the variable with
the largest constant extent is eliminated, since what remains is iterated.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..arith import Analyzer
from ..arith.linear import affine_terms
from ..ir import expr as E
from ..ir.functor import Mutator, free_vars, substitute


@dataclass
class Solution:
    """Values for the solved domain variables, what must hold, and what is still summed over."""

    values: dict[E.Var, E.PrimExpr] = field(default_factory=dict)
    conditions: list[E.PrimExpr] = field(default_factory=list)
    remaining: list[E.IterVar] = field(default_factory=list)
    #: variables a division's equation brought in (its remainder or quotient), summed over too
    extra: list[E.IterVar] = field(default_factory=list)


def _extent(iv: E.IterVar) -> int:
    return iv.dom.extent.value if isinstance(iv.dom.extent, E.IntImm) else 0


def _pick(coeffs: dict[E.Var, int], ivs: dict[E.Var, E.IterVar]) -> E.Var | None:
    """The variable to eliminate: unit coefficients first, then the largest constant extent."""
    cands = [v for v in coeffs if v in ivs]
    if not cands:
        return None
    return max(cands, key=lambda v: (abs(coeffs[v]) == 1, _extent(ivs[v])))


def _unfold_division(sol: Solution, eq: E.PrimExpr, target: E.PrimExpr, ivs: dict[E.Var, E.IterVar],
                     ana: Analyzer) -> tuple[E.PrimExpr, E.PrimExpr]:
    """``x // c == j`` as ``x == c*j + r`` over a new ``r`` in ``[0, c)``, and ``x % c == j`` as
    ``x == c*q + j`` over the quotients ``q`` that ``x`` can have: each then an affine equation
    in ``x``'s variables, where the division alone was not (upsampling's ``i // 2``)."""
    if not (isinstance(eq, E.FloorDiv | E.FloorMod) and isinstance(eq.b, E.IntImm) and eq.b.value > 0):
        return eq, target
    inner, c = eq.a, eq.b.value
    terms = affine_terms(inner, set(ivs))
    if terms is None or _pick(terms[0], ivs) is None:
        return eq, target
    dt = inner.dtype
    if isinstance(eq, E.FloorDiv):
        dom = E.Range(0, c)
    else:
        lo, hi = ana.const_int_bound(inner)
        if lo is None or hi is None:
            return eq, target
        dom = E.Range(lo // c, hi // c - lo // c + 1)
    new = E.IterVar(dom, E.Var("r" if isinstance(eq, E.FloorDiv) else "q", dt), E.IterVar.REDUCE)
    ivs[new.var] = new
    sol.extra.append(new)
    ana.bind(new.var, dom)
    c_ = E.const(c, dt)
    if isinstance(eq, E.FloorDiv):
        return inner, E.add(E.mul(c_, E.cast(target, dt)), new.var)
    t = E.cast(target, dt)
    sol.conditions.append(E.logical_and(E.le(E.const(0, dt), t), E.lt(t, c_)))  # a remainder's range
    return inner, E.add(E.mul(c_, new.var), t)


def _solve_one(sol: Solution, eq: E.PrimExpr, target: E.PrimExpr, ivs: dict[E.Var, E.IterVar],
               ana: Analyzer) -> None:
    eq = substitute(eq, sol.values)
    eq, target = _unfold_division(sol, eq, target, ivs, ana)
    terms = affine_terms(eq, set(ivs))
    v = None if terms is None else _pick(terms[0], ivs)
    if v is None:
        sol.conditions.append(E.eq(eq, E.cast(target, eq.dtype)))
        return
    coeffs, rest = terms
    c = coeffs[v]
    num = E.sub(E.cast(target, eq.dtype), rest)
    for o, k in coeffs.items():
        if o is not v:
            num = E.sub(num, E.mul(E.const(k, o.dtype), o))
    if abs(c) != 1:
        sol.conditions.append(E.eq(E.floormod(num, E.const(abs(c), num.dtype)), E.const(0, num.dtype)))
        num = E.floordiv(num, E.const(abs(c), num.dtype))
    value = num if c > 0 else E.neg(num)
    dom = ivs.pop(v).dom
    sol.conditions.append(E.logical_and(E.le(dom.min, value), E.lt(value, E.add(dom.min, dom.extent))))
    sol.values = {k: substitute(x, {v: value}) for k, x in sol.values.items()}
    sol.values[v] = value


def solve(indices: tuple[E.PrimExpr, ...], targets: list[E.PrimExpr], domain: list[E.IterVar],
          ana: Analyzer) -> Solution:
    """Solve ``indices[d] == targets[d]`` for the domain's variables as far as affinity allows.

    ``ana`` knows the ranges of the target variables and of the domain; conditions it proves
    are dropped. Equations with fewer domain variables go first, so a variable that an index
    reads alone is taken from that index rather than from a sum it shares with others."""
    ivs = {iv.var: iv for iv in domain}
    sol = Solution()
    order = sorted(range(len(indices)), key=lambda d: len(free_vars(indices[d]) & set(ivs)))
    for d in order:
        _solve_one(sol, indices[d], targets[d], ivs, ana)
    sol.remaining = [iv for iv in [*domain, *sol.extra] if iv.var in ivs]
    conds = []
    todo = [substitute(c, sol.values) for c in sol.conditions]
    while todo:
        c = todo.pop(0)
        if isinstance(c, E.And):  # each half on its own: one may be provable where both are not
            todo[:0] = [c.a, c.b]
        elif not ana.can_prove(c):
            conds.append(c)
    sol.conditions = conds
    return sol


class _Clamp(Mutator):
    """Every read index that ``ana`` cannot prove inside its tensor, clamped into it.

    The reads of an adjoint happen only where the solution's conditions hold, so a clamp never
    changes a value read; it keeps InferBound's interval of each read inside the tensor (it does
    not see the guard), so no producer is asked for elements it does not have."""

    def __init__(self, ana: Analyzer):
        self.ana = ana

    def visit_ProducerLoad(self, e: E.ProducerLoad):
        idx = []
        for x, n in zip(e.indices, e.producer.shape):
            x = self.visit(x)
            zero = E.const(0, x.dtype)
            if not (self.ana.can_prove(E.le(zero, x)) and self.ana.can_prove(E.lt(x, E.cast(n, x.dtype)))):
                x = E.max_(E.min_(x, E.sub(E.cast(n, x.dtype), 1)), zero)
            idx.append(x)
        return E.ProducerLoad(e.producer, idx)


def clamp_reads(e: E.PrimExpr, ana: Analyzer) -> E.PrimExpr:
    return _Clamp(ana).visit(e)


__all__ = ["Solution", "clamp_reads", "solve"]
