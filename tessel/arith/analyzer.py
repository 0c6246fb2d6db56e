"""The one arithmetic facade that bound inference, lowering and passes talk to.

An :class:`Analyzer` holds what is known about variables: constant bounds, substitutions
(``bind(v, expr)``) and symbolic facts, each stored as an index expression ``F`` meaning
``F <= 0`` (``i < n`` becomes ``i - n + 1 <= 0``). Facts come from ranges with symbolic ends
and from :meth:`Analyzer.constraint_scope`; they let the simplifier decide ``i < n`` inside
``for (i, 0, n)`` even though nothing is known about ``n`` itself.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Protocol, runtime_checkable

from ..errors import DefinitionError
from ..ir import expr as E
from ..ir.functor import StructKey, structural_equal
from . import const_bound as cb
from .canonical import Simplifier, is_index_dtype
from .linear import Lin


@runtime_checkable
class Interval(Protocol):
    """What ``bind`` accepts besides a Range: an interval of expressions whose ends may be
    unknown (``None``). ``int_set.IntSet`` is one; the prover is below the sets it evaluates,
    so it names their shape, not their class."""

    min_value: E.PrimExpr | None
    max_value: E.PrimExpr | None

    def is_single_point(self) -> bool: ...


def _key(v: Any) -> E.Var:
    if isinstance(v, E.IterVar):
        return v.var
    if not isinstance(v, E.Var):
        raise DefinitionError(f"Analyzer.bind needs a Var or IterVar, got {v!r}")
    return v


def _expr(x: Any) -> Any:
    """Accept what users hold: numbers, IterVars, expressions (statements pass through)."""
    if isinstance(x, E.IterVar):
        return x.var
    if isinstance(x, int | float | bool):
        return E.convert(x)
    return x


def _public(x: float | int) -> int | None:
    return None if x in (cb.INF, -cb.INF) else int(x)


_UNCHANGED = object()  # a memo entry: the simplifier handed back its input
_MEMO_MAX = 1 << 16  # entries of a memo of simplified expressions before it is emptied

# the states analyzers have been in, each numbered once: a memo entry is keyed by the number, so
# that a lookup hashes and compares one int instead of everything known (a few hundred lookups
# per state). Numbers are never reused: emptied when full, an equal state gets a new number
# (the memo misses, it is never wrong). A build goes through 50-110 states (conv2d, matmul
# 1024), so the table holds the last few dozen builds' and no more of their expressions alive.
_STATES: dict[tuple, int] = {}
_STATES_MAX = 1 << 12
_STATE_NUMBERS = itertools.count()


def _key_of(x: E.PrimExpr | None) -> StructKey | None:
    return None if x is None else StructKey(x)


def _state_number(state: tuple) -> int:
    n = _STATES.get(state)
    if n is None:
        if len(_STATES) >= _STATES_MAX:
            _STATES.clear()
        n = _STATES[state] = next(_STATE_NUMBERS)
    return n


class Analyzer:
    """``memo``: a dict of simplified expressions, which several analyzers may share (the
    unrolled copies of one loop are simplified by one analyzer each, mostly in the same
    state): an entry is keyed by the expression's structure and by everything the analyzer
    knows, so a hit is what a fresh simplification in that state would give."""

    def __init__(self, memo: dict | None = None) -> None:
        self._memo: dict = {} if memo is None else memo
        self._state: int | None = None  # the memo's key of what is known; None: to be made again
        self._bounds: dict[E.Var, cb.Bound] = {}
        self._subst: dict[E.Var, E.PrimExpr] = {}
        self._var_facts: dict[E.Var, list[E.PrimExpr]] = {}
        self._facts: list[E.PrimExpr] = []
        self._resolving: set[E.Var] = set()
        #: var -> (modulus, residue): ``v % modulus == residue`` (from ``assume("n % 8 == 0")``)
        self._mods: dict[E.Var, tuple[int, int]] = {}

    # ---- what is known ------------------------------------------------------------------
    def bind(self, var: Any, value: Any = None, allow_override: bool = True) -> None:
        """Let ``var`` range over a Range (or IntSet), or equal an expression.

        A dict ``{var: value}`` binds several at once. A range of extent 1 becomes an equality
        so that the variable disappears from simplified expressions, as in lowered loop nests.
        """
        if isinstance(var, Mapping):
            for k, v in var.items():
                self.bind(k, v, allow_override)
            return
        v = _key(var)
        if not allow_override and (v in self._bounds or v in self._subst):
            raise DefinitionError(f"variable `{v.name}` is already bound in this analyzer")
        before = self._state if v not in self._bounds and v not in self._subst and v not in self._var_facts else None
        try:
            self._bind(v, value)
        finally:
            self._state = None
        if before is not None:  # a new variable: the state is the one before and what it adds
            self._state = _state_number(("bind", before, StructKey(v), self._bounds.get(v),
                                         _key_of(self._subst.get(v)), tuple(map(StructKey, self._var_facts.get(v, ())))))

    def _bind(self, v: E.Var, value: Any) -> None:
        # what was known of ``v`` is forgotten first; the state's number (the memo's key) stays
        # valid for the simplifications below unless something was known (a loop's variable is
        # usually bound afresh); ``bind`` renumbers afterwards for the new binding
        known = (self._bounds.pop(v, None), self._subst.pop(v, None), self._var_facts.pop(v, None))
        if any(x is not None for x in known):
            self._state = None
        if isinstance(value, E.Range) and isinstance(value.min, E.IntImm) and isinstance(value.extent, E.IntImm):
            # most loops: what the general case gives, without asking the simplifier about constants
            if value.extent.value == 1:
                self._subst[v] = E.cast(value.min, v.dtype)
            else:
                self._bind_interval(v, value.min, E.sub(E.add(value.min, value.extent), 1))
        elif isinstance(value, E.Range):
            lo = self.simplify(value.min)
            extent = self.simplify(value.extent)
            if isinstance(extent, E.IntImm) and extent.value == 1:
                self._subst[v] = E.cast(lo, v.dtype)
                return
            self._bind_interval(v, lo, self.simplify(E.sub(E.add(value.min, value.extent), 1)))
        elif isinstance(value, Interval):
            if value.is_single_point():
                self._subst[v] = E.cast(self.simplify(value.min_value), v.dtype)
            else:
                self._bind_interval(v, value.min_value, value.max_value)
        else:
            self._subst[v] = E.cast(self.simplify(E.convert(value)), v.dtype)

    def _bind_interval(self, v: E.Var, lo: E.PrimExpr | None, hi: E.PrimExpr | None) -> None:
        blo = self._bound(lo)[0] if lo is not None else -cb.INF
        bhi = self._bound(hi)[1] if hi is not None else cb.INF
        self._bounds[v] = (blo, max(bhi, blo))
        # numbered from the state before where ``v`` is new (as ``bind`` numbers the result):
        # the facts below are simplified in it, and a full key costs a walk over all that is known
        prev = self._state
        self._state = None if prev is None else _state_number(("bind", prev, StructKey(v), self._bounds[v], None, ()))
        facts = []
        if lo is not None and not isinstance(lo, E.IntImm):
            facts.append(self.simplify(E.sub(lo, v)))
        if hi is not None and not isinstance(hi, E.IntImm):
            facts.append(self.simplify(E.sub(v, hi)))
        if facts:
            self._var_facts[v] = facts

    @contextmanager
    def scoped_bind(self, var: Any, value: Any) -> Iterator[None]:
        """``bind`` for the duration of a with-block (e.g. a loop body)."""
        saved = self._snapshot()
        self.bind(var, value)
        try:
            yield
        finally:
            self._restore(saved)

    @contextmanager
    def constraint_scope(self, cond: Any) -> Iterator[None]:
        """Assume ``cond`` (e.g. ``i < n`` or ``i*4 + j < 30``) inside the with-block."""
        saved = self._snapshot()
        self._assume(self.simplify(E.convert(cond)))
        try:
            yield
        finally:
            self._restore(saved)

    def assume(self, cond: Any) -> None:
        """Assume ``cond`` from now on (a user's promise about the sizes, ``s.assume``)."""
        self._assume(self.simplify(E.convert(cond)))

    def _snapshot(self) -> tuple:
        """What is known, with its memo key (restored as it was, the key is still right)."""
        return (dict(self._bounds), dict(self._subst), dict(self._var_facts), list(self._facts), dict(self._mods),
                self._state)

    def _restore(self, saved: tuple) -> None:
        self._bounds, self._subst, self._var_facts, self._facts, self._mods, self._state = saved

    def _state_key(self) -> int:
        """Everything a simplification reads from the analyzer (variables by identity,
        expressions by structure), as the number of that state; made once per state."""
        if self._state is None:
            self._state = _state_number((
                tuple((StructKey(v), b) for v, b in self._bounds.items()),
                tuple((StructKey(v), StructKey(x)) for v, x in self._subst.items()),
                tuple((StructKey(v), tuple(map(StructKey, fs))) for v, fs in self._var_facts.items()),
                tuple(map(StructKey, self._facts)),
                tuple((StructKey(v), m) for v, m in self._mods.items())))
        return self._state

    def _assume(self, c: E.PrimExpr) -> None:
        self._state = None
        try:
            self._assume_one(c)
        finally:
            self._state = None

    def _assume_one(self, c: E.PrimExpr) -> None:
        if isinstance(c, E.And):
            self._assume(c.a)
            self._assume(c.b)
            return
        if isinstance(c, E.Not) and isinstance(c.a, E.Or):
            self._assume(self.simplify(E.Not(c.a.a)))
            self._assume(self.simplify(E.Not(c.a.b)))
            return
        if not isinstance(c, E.LT | E.LE | E.GT | E.GE | E.EQ) or not is_index_dtype(c.a.dtype):
            return
        if isinstance(c, E.EQ):
            self._assume_mod(c.a, c.b)
            self._assume_mod(c.b, c.a)
        a, b = c.a, c.b
        if isinstance(c, E.GT | E.GE):
            a, b = b, a
        forms = [E.sub(a, b)] if not isinstance(c, E.EQ) else [E.sub(a, b), E.sub(b, a)]
        if isinstance(c, E.LT | E.GT):
            forms = [E.add(forms[0], 1)]
        for f in forms:
            f = self.simplify(f)
            self._facts.append(f)
            self._refine(f)
            self._state = None

    def _assume_mod(self, a: E.PrimExpr, b: E.PrimExpr) -> None:
        """``v % k == r``: a modular fact, which no bound can hold (``n % 8 == 0`` says nothing of
        ``n``'s range) but which decides ``(n + 7) // 8`` and ``n % 8`` -- a split's tail."""
        if not (isinstance(a, E.FloorMod | E.Mod) and isinstance(a.a, E.Var) and isinstance(a.b, E.IntImm)
                and isinstance(b, E.IntImm) and a.b.value > 0):
            return
        if isinstance(a, E.Mod) and not self.can_prove(E.ge(a.a, 0)):
            return
        k, r = a.b.value, b.value
        if not 0 <= r < k:
            return  # never true: the call-time check refuses every size
        old = self._mods.get(a.a)
        if old is not None and old[0] % k == 0:
            return  # already knows as much
        if old is not None and k % old[0] and (old[1] or r):
            return  # two moduli with residues: keep the first (no Chinese remainder here)
        if old is not None and k % old[0]:
            k = k * old[0] // math.gcd(k, old[0])  # both residues 0: a multiple of the lcm
        self._mods[a.a] = (k, r)
        self._state = None

    def residue(self, v: E.Var) -> tuple[int, int] | None:
        """``(k, r)`` when ``v % k == r`` is known, else None."""
        return self._mods.get(v)

    def _refine(self, f: E.PrimExpr) -> None:
        """Tighten the constant bound of each variable that a new fact ``f <= 0`` constrains."""
        s = Simplifier(self)
        L = s.lin(f)
        for m, k in L.terms.items():
            if len(m) != 1 or not isinstance(s.atoms[m[0]], E.Var):
                continue
            v = s.atoms[m[0]]
            lo_rest = s.lin_bound(L - Lin({m: k}))[0]  # k*v <= -rest <= -lo_rest
            if lo_rest == -cb.INF:
                continue
            old = self.var_bound(v)
            if k > 0:
                new = (old[0], min(old[1], (-lo_rest) // k))
            else:
                new = (max(old[0], -((-lo_rest) // -k)), old[1])
            self._bounds[v] = new
            self._state = None

    def substitution(self, v: E.Var) -> E.PrimExpr | None:
        return self._subst.get(v)

    def facts(self) -> list[E.PrimExpr]:
        out = [f for fs in self._var_facts.values() for f in fs]
        return out + self._facts

    def var_bound(self, v: E.Var) -> cb.Bound:
        b = self._bounds.get(v)
        if b is not None:
            return b
        sub = self._subst.get(v)
        if sub is not None and v not in self._resolving:
            self._resolving.add(v)
            try:
                return self._bound(sub)
            finally:
                self._resolving.discard(v)
        return cb.dtype_bound(v.dtype)

    def _bound(self, e: E.PrimExpr) -> cb.Bound:
        return cb.ConstBound(self.var_bound)(e)

    # ---- questions ----------------------------------------------------------------------
    def simplify(self, e: Any) -> Any:
        """A simpler equivalent of ``e`` (an expression, or a statement: loops bind their vars)."""
        e = _expr(e)
        if not isinstance(e, E.PrimExpr):
            return Simplifier(self).visit(e)
        key = (StructKey(e), self._state_key())
        hit = self._memo.get(key)
        if hit is None:
            r = Simplifier(self).visit(e)
            if len(self._memo) >= _MEMO_MAX:  # a long-lived analyzer (a user's) keeps only the recent ones
                self._memo.clear()
            self._memo[key] = hit = _UNCHANGED if r is e else r
        return e if hit is _UNCHANGED else hit

    def can_prove(self, cond: Any) -> bool:
        """True only if ``cond`` holds for every value the bound variables may take."""
        c = self.simplify(cond)
        return isinstance(c, E.IntImm) and c.value != 0

    def linear_in(self, e: E.PrimExpr, v: E.Var) -> tuple[int, E.PrimExpr] | None:
        """``(coeff, rest)`` with ``e == coeff*v + rest`` for a constant ``coeff`` (0 included)
        and ``rest`` (simplified) free of ``v``, as far as the simplifier proves it; None
        otherwise. The one answer to "is this index linear in the loop's variable" that loop
        partitioning (where a test starts to fail) and vectorization (a ramp's stride) ask;
        ``linear.affine_terms`` reads the same off an expression as written, without proofs."""
        from ..ir.functor import substitute

        e0 = self.simplify(substitute(e, {v: E.const(0, v.dtype)}))
        a = self.simplify(E.sub(self.simplify(substitute(e, {v: E.const(1, v.dtype)})), e0))
        if not isinstance(a, E.IntImm):
            return None
        check = self.simplify(E.sub(e, E.add(e0, E.mul(a, E.cast(v, e.dtype)))))
        return (a.value, e0) if E.is_const_int(check, 0) else None

    def can_prove_equal(self, a: Any, b: Any) -> bool:
        a, b = E.convert(_expr(a)), E.convert(_expr(b))
        if is_index_dtype(a.dtype) and is_index_dtype(b.dtype):
            d = self.simplify(E.sub(a, b))
            return isinstance(d, E.IntImm) and d.value == 0
        return structural_equal(self.simplify(a), self.simplify(b))

    def const_int_bound(self, e: Any) -> tuple[int | None, int | None]:
        """Inclusive constant bounds of ``e``; ``None`` marks an unbounded end."""
        e = E.convert(_expr(e))
        s = Simplifier(self)
        if is_index_dtype(e.dtype):
            b = s.lin_bound(s.lin(e))
            b = cb.intersect(b, self._bound(e))
        else:
            b = self._bound(s.expr(e))
        return _public(b[0]), _public(b[1])
