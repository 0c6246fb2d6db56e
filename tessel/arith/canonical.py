"""The simplifier: canonical linear forms for integer index arithmetic, folding elsewhere.

Integer expressions of dtype int32/int64 are turned into a :class:`~.linear.Lin` (a sum of
monomials over atoms), rewritten there, and printed back in a fixed, readable shape: terms in
order of first appearance, ``var*coeff``, negative terms as subtraction, the constant last.
Division and modulus by positive constants, ``min``/``max`` and comparisons are decided with
constant bounds of the pieces and with the analyzer's facts (``F <= 0`` forms collected from
``bind`` and ``constraint_scope``). Everything else (floats, bools, vectors) is only
constant-folded: floating-point arithmetic is never reassociated.

Index arithmetic is assumed not to overflow, as in TVM; rules are otherwise exact.
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Any

from ..ir import expr as E
from ..ir import stmt as S
from ..ir.dtype import DType
from ..ir.functor import Mutator, StructKey, memoized, structural_equal
from ..tunables import current
from . import const_bound as cb
from .budget import charge, gave_up
from .linear import Lin, Mono

if TYPE_CHECKING:
    from .analyzer import Analyzer

INF = math.inf
_CMP = (E.EQ, E.NE, E.LT, E.LE, E.GT, E.GE)
_FLIP = {E.LT: E.GE, E.LE: E.GT, E.GT: E.LE, E.GE: E.LT, E.EQ: E.NE, E.NE: E.EQ}


def is_index_dtype(dt: DType) -> bool:
    """The dtypes the canonical form handles: signed scalar integers wide enough for indices."""
    return dt.lanes == 1 and dt.is_int and dt.bits in (32, 64)


def _fits(v: int, dt: DType) -> bool:
    return dt.min_value() <= v <= dt.max_value()


#: residues tried when quotients by several divisors are compared (their least common multiple)
_RESIDUES = 4096


class _Overflow(Exception):
    """A constant of the canonical form does not fit the dtype; keep the input as it was."""


class Simplifier(Mutator):
    """One simplification run; caches are valid only while the analyzer's facts are unchanged."""

    def __init__(self, ana: Analyzer):
        self.ana = ana
        self.atoms: list[E.PrimExpr] = []
        self.atom_ids: dict[StructKey, int] = {}
        self.cbound = cb.ConstBound(ana.var_bound)
        self._facts: list[Lin] | None = None
        self.steps = 0  # proof attempts spent in this run
        self.max_steps = current().proof_steps  # its budget
        self.spent = False
        self.pairing = False  # inside _quotients_bound
        self.started = time.perf_counter()
        self.reset()

    def reset(self) -> None:
        self.emo: dict[int, tuple[Any, Any]] = {}
        self.lmemo: dict[int, tuple[Any, Lin]] = {}
        self.abound: dict[int, cb.Bound] = {}
        self.cbound = cb.ConstBound(self.ana.var_bound)
        self._facts = None

    # ---- entry points -------------------------------------------------------------------
    def visit(self, node: Any) -> Any:
        if isinstance(node, E.PrimExpr):
            return self.expr(node)
        return super().visit(node)

    def expr(self, e: E.PrimExpr) -> E.PrimExpr:
        hit = self.emo.get(id(e))
        if hit is not None and hit[0] is e:
            return hit[1]
        try:
            r = self.from_lin(self.lin(e), e.dtype) if is_index_dtype(e.dtype) else self.other(e)
        except _Overflow:
            r = self._rebuild(e)
        if r is not e and type(r) is type(e) and structural_equal(r, e):
            r = e  # nothing changed: hand back the input so that callers can test with `is`
        self.emo[id(e)] = (e, r)
        return r

    def _rebuild(self, e: E.PrimExpr) -> E.PrimExpr:
        """Children simplified, the node itself only constant-folded where its value fits: an
        index whose value leaves the dtype is exact until the index_dtype step widens it."""
        if isinstance(e, E.BinaryOp):
            return E.binary_exact(type(e), self.expr(e.a), self.expr(e.b))
        return self.generic_visit(e)

    # ---- atoms and forms ----------------------------------------------------------------
    def atom(self, x: E.PrimExpr) -> Lin:
        if isinstance(x, E.IntImm):
            return Lin({}, x.value)
        if isinstance(x, E.Add | E.Sub | E.Mul):
            return self.lin(x)
        return self.intern(x)

    def intern(self, x: E.PrimExpr) -> Lin:
        """``x`` as an opaque atom, whatever its shape."""
        key = StructKey(x)
        k = self.atom_ids.get(key)
        if k is None:
            k = len(self.atoms)
            self.atoms.append(x)
            self.atom_ids[key] = k
        return Lin.atom(k)

    def lin(self, e: E.PrimExpr) -> Lin:
        return memoized(self.lmemo, e, self._lin)

    def _lin(self, e: E.PrimExpr) -> Lin:
        t = type(e)
        if t is E.IntImm:
            return Lin({}, e.value)
        if t is E.Var:
            sub = self.ana.substitution(e)
            return self.lin(sub) if sub is not None else self.atom(e)
        if t is E.Add:
            return self._merge_divmod(self.lin(e.a) + self.lin(e.b))
        if t is E.Sub:
            return self._merge_divmod(self.lin(e.a) - self.lin(e.b))
        if t is E.Mul:
            a, b = self.lin(e.a), self.lin(e.b)
            r = a.mul(b)
            if r is None:
                return self.intern(E.Mul(self.from_lin(a, e.dtype), self.from_lin(b, e.dtype)))
            return r
        if t in (E.FloorDiv, E.FloorMod, E.Div, E.Mod):
            return self._div(e)
        if t in (E.Min, E.Max):
            return self._minmax(e)
        return self.atom(self.other(e))

    def mono_expr(self, m: Mono) -> E.PrimExpr:
        out = self.atoms[m[0]]
        for k in m[1:]:
            out = E.Mul(out, self.atoms[k])
        return out

    def from_lin(self, L: Lin, dt: DType) -> E.PrimExpr:
        def imm(v: int) -> E.IntImm:
            if not _fits(v, dt):
                raise _Overflow
            return E.IntImm(v, dt)

        def term(m: Mono, k: int) -> E.PrimExpr:
            base = self.mono_expr(m)
            return base if k == 1 else E.Mul(base, imm(k))

        items = list(L.terms.items())
        if items and items[0][1] < 0:  # lead with a positive term when there is one
            pos = next((i for i, (_, k) in enumerate(items) if k > 0), None)
            if pos is not None:
                items.insert(0, items.pop(pos))
        if not items:
            return imm(L.const)
        acc: E.PrimExpr | None = None
        if items[0][1] < 0:
            acc = imm(L.const)
        for m, k in items:
            if acc is None:
                acc = term(m, k)
            elif k > 0:
                acc = E.Add(acc, term(m, k))
            else:
                acc = E.Sub(acc, term(m, -k))
        if items[0][1] > 0 and L.const:
            acc = E.Add(acc, imm(L.const)) if L.const > 0 else E.Sub(acc, imm(-L.const))
        return acc

    # ---- bounds and proofs --------------------------------------------------------------
    def atom_bound(self, k: int) -> cb.Bound:
        b = self.abound.get(k)
        if b is None:
            b = self.cbound(self.atoms[k])
            self.abound[k] = b
        return b

    def _terms_bound(self, L: Lin) -> cb.Bound:
        """The bound of ``L`` from its atoms' bounds, one term at a time."""
        b: cb.Bound = (L.const, L.const)
        for m, k in L.terms.items():
            mb: cb.Bound = (1, 1)
            for a in m:
                mb = cb.mul(mb, self.atom_bound(a))
            b = cb.add(b, cb.mul(mb, (k, k)))
            if b == cb.EVERYTHING:
                break
        return b

    def lin_bound(self, L: Lin) -> cb.Bound:
        b = self._terms_bound(L)
        if (cb.INF in b or -cb.INF in b) and not self.pairing:
            self.pairing = True  # a numerator's form is found with proofs, which must not pair again
            try:
                g = self._quotients_bound(L)
            finally:
                self.pairing = False
            if g is not None:
                b = (max(b[0], g[0]), min(b[1], g[1]))
        return b

    def _quotients_bound(self, L: Lin) -> cb.Bound | None:
        """A bound of ``L`` from its quotients of numerators that differ by a constant, which
        bounded one by one are unbounded: the tails of a split nested in a split compare exactly
        such quotients (``n//27`` with ``(n + 8)//27``, ``n//9 - (n//27)*3``). With ``D`` the
        least common multiple of their divisors and ``x = D*q + r`` (``0 <= r < D``), each
        ``(x + a)//d`` is ``q*(D/d) + (r + a)//d``: where the multiples of ``q`` cancel, the sum
        depends on ``r`` alone and its range is found by trying every ``r``; else quotients by
        one divisor still pair up, ``(x + a)//d - (x + b)//d`` lying in ``[(a - b)//d,
        ceil((a - b)/d)]``. None when no two quotients share a numerator."""
        groups: dict[frozenset, list[tuple[Mono, int, int, int]]] = {}
        rest = Lin({}, L.const)
        for m, k in L.terms.items():
            q = self._quotient(m)
            if q is None:
                rest = rest + Lin({m: k})
            else:
                groups.setdefault(q[0], []).append((m, k, q[1], q[2]))
        if all(len(g) == 1 for g in groups.values()):
            return None
        b = self._terms_bound(rest)
        for g in groups.values():
            b = cb.add(b, self._group_bound(g))
        return b

    def _group_bound(self, g: list[tuple[Mono, int, int, int]]) -> cb.Bound:
        """The bound of ``sum(k * (x + a)//d)`` over one numerator's quotients ``(m, k, d, a)``."""
        D = math.lcm(*(d for _, _, d, _ in g))
        if D <= _RESIDUES and sum(k * (D // d) for _, k, d, _ in g) == 0:
            vals = [sum(k * ((r + a) // d) for _, k, d, a in g) for r in range(D)]
            return (min(vals), max(vals))
        out: cb.Bound = (0, 0)
        by_divisor: dict[int, list[tuple[Mono, int, int]]] = {}
        for m, k, d, a in g:
            by_divisor.setdefault(d, []).append((m, k, a))
        for d, same in by_divisor.items():
            m0, _, a0 = same[0]
            total = sum(k for _, k, _ in same)
            gb = cb.mul(self.atom_bound(m0[0]), (total, total)) if total else (0, 0)
            for _, k, a in same[1:]:
                c = a - a0
                gb = cb.add(gb, cb.mul((c // d, -(-c // d)), (k, k)))
            out = cb.add(out, gb)
        return out

    def _quotient(self, m: Mono) -> tuple[frozenset, int, int] | None:
        """For an atom ``(x + a)//d`` (``d`` a positive constant): ``(x's terms, d, a)``."""
        if len(m) != 1:
            return None
        x = self.atoms[m[0]]
        if not (isinstance(x, E.FloorDiv) and isinstance(x.b, E.IntImm) and x.b.value > 0):
            return None
        num = self.lin(x.a)
        return frozenset(num.terms.items()), x.b.value, num.const

    def facts(self) -> list[Lin]:
        if self._facts is None:
            self._facts = []  # facts are not used while the facts themselves are put in form
            self._facts = [self.lin(f) for f in self.ana.facts() if is_index_dtype(f.dtype)]
        return self._facts

    def prove_le0(self, L: Lin) -> bool:
        """Whether ``L <= 0`` holds for all values the analyzer allows (False also when the
        search through the facts has spent this run's budget: see ``arith.budget``)."""
        if self.lin_bound(L)[1] <= 0:
            return True
        facts = self.facts()
        self.steps += len(facts)
        if not charge(len(facts)):
            return False
        if self.steps > self.max_steps:
            if not self.spent:
                self.spent = True
                gave_up("simplifier", f"a bound over {len(facts)} facts", time.perf_counter() - self.started,
                        "what it could not prove is kept as written")
            return False
        for F in facts:
            ks = {1}
            for m, k in L.terms.items():
                f = F.terms.get(m)
                if f and k % f == 0 and k // f > 0:
                    ks.add(k // f)
            for k in ks:  # L = k*F + rest with F <= 0, so rest <= 0 suffices
                if self.lin_bound(L - F.scale(k))[1] <= 0:
                    return True
        Q = self._by_quotient(L)
        return Q is not None and self.prove_le0(Q)

    def _by_quotient(self, L: Lin) -> Lin | None:
        """``L`` with each ``v`` whose residue is known (``v % k == r``) written ``k*(v//k) + r``,
        the form in which a split's facts speak (``i.outer < n//8``); None when none is."""
        out, changed = Lin({}, L.const), False
        for m, k in L.terms.items():
            x = self.atoms[m[0]] if len(m) == 1 else None
            known = self.ana.residue(x) if isinstance(x, E.Var) else None
            if known is None:
                out = out + Lin({m: k})
                continue
            d = self._quotient_divisor(x, known[0])
            q = self.atom(E.FloorDiv(x, E.IntImm(d, x.dtype)))
            out, changed = out + q.scale(k * d).plus(k * (known[1] % d)), True
        return out if changed else None

    def _quotient_divisor(self, v: E.Var, k: int) -> int:
        """The divisor of a ``v // d`` already in sight (a split by 4 of an ``n`` known to be a
        multiple of 8 speaks of ``n//4``) that ``k`` is a multiple of, the smallest, else ``k``."""
        seen = [x.b.value for x in self.atoms if isinstance(x, E.FloorDiv) and x.a is v
                and isinstance(x.b, E.IntImm) and x.b.value > 1 and k % x.b.value == 0]
        return min(seen, default=k)

    # ---- division -----------------------------------------------------------------------
    def _div(self, e: E.BinaryOp) -> Lin:
        cls, dt = type(e), e.dtype
        a, b = self.lin(e.a), self.lin(e.b)
        if b.is_const and b.const > 0:
            c = b.const
            if cls in (E.Div, E.Mod) and not self.prove_le0(-a):
                ea = self.from_lin(a, dt)
                return self.atom(E.binary(cls, ea, E.IntImm(c, dt)))
            if cls in (E.FloorDiv, E.Div):
                return self.floordiv_const(a, c, dt)
            return self.floormod_const(a, c, dt)
        ea, eb = self.from_lin(a, dt), self.from_lin(b, dt)
        if not b.is_const and self.prove_le0(-a) and self.prove_le0(a - b + Lin({}, 1)):
            return Lin() if cls in (E.FloorDiv, E.Div) else a  # 0 <= a < b
        if isinstance(eb, E.IntImm) and eb.value == 0:  # left for the program to fail at run time
            return self.intern(cls(ea, eb))
        return self.atom(E.binary(cls, ea, eb))

    def _residue(self, R: Lin, c: int) -> int | None:
        """``x`` with ``R == x (mod c)`` when the analyzer's modular facts decide it (every
        variable term ``k*v`` has ``v % m == r`` known with ``c | k*m``), else None."""
        off = R.const
        for m, k in R.terms.items():
            x = self.atoms[m[0]] if len(m) == 1 else None
            known = self.ana.residue(x) if isinstance(x, E.Var) else None
            if known is None or (k * known[0]) % c:
                return None
            off += k * known[1]
        return off

    def _split_candidates(self, R: Lin, c: int) -> list[int]:
        gs = {math.gcd(c, k) for k in R.terms.values()}
        out: set[int] = set()
        for g in gs:
            d = 1
            while d * d <= g:
                if g % d == 0:
                    out.update((d, g // d))
                d += 1
        out.discard(1)
        return sorted(out, reverse=True)

    def _split(self, R: Lin, a: int) -> tuple[Lin, Lin]:
        """``R = a*big + small`` with the terms whose coefficient ``a`` divides in ``big``."""
        big, small = Lin(), Lin()
        for m, k in R.terms.items():
            if k % a == 0:
                big.terms[m] = k // a
            else:
                small.terms[m] = k
        big.const, small.const = R.const // a, R.const % a
        return big, small

    def _in_block(self, R: Lin, c: int) -> int | None:
        """``q`` when ``q*c <= R < (q+1)*c`` provably (the division is then constant)."""
        lo, hi = self.lin_bound(R)
        if lo != -INF and hi != INF and lo // c == hi // c:
            return int(lo // c)
        if self.prove_le0(-R) and self.prove_le0(R.plus(1 - c)):
            return 0
        return None

    def _outer(self, R: Lin, cls: type) -> tuple[E.FloorDiv | E.FloorMod, int] | None:
        """The atom ``cls(X, c1)`` when R is that atom plus a constant."""
        k = R.single_atom()
        if k is None:
            return None
        x = self.atoms[k]
        if isinstance(x, cls) and isinstance(x.b, E.IntImm) and x.b.value > 0:
            return x, x.b.value
        return None

    def _unresolved(self, L: Lin, cls: type) -> bool:
        """Whether a rewritten division is still just a division (so it gained nothing)."""
        k = L.single_atom()
        return k is not None and not L.const and isinstance(self.atoms[k], cls)

    def floordiv_const(self, L: Lin, c: int, dt: DType) -> Lin:
        if c == 1:
            return L
        q, R = Lin(), Lin({}, L.const)
        for m, k in L.terms.items():
            if k % c == 0:
                q.terms[m] = k // c
            else:
                R.terms[m] = k
        return q + self._fdiv_rest(R, c, dt)

    def _fdiv_rest(self, R: Lin, c: int, dt: DType) -> Lin:
        if R.is_const:
            return Lin({}, R.const // c)
        off = self._residue(R, c) if R.const else None
        if off is not None:  # V = R - const is c*(V//c) + (off - const) % c: (n + 7)//8 == n//8 when 8 | n
            return Lin({}, ((off - R.const) % c + R.const) // c) + self._fdiv_rest(R.plus(-R.const), c, dt)
        blk = self._in_block(R, c)
        if blk is not None:
            return Lin({}, blk)
        if R.const and R.const % c == 0:  # (x + 16)//8 == x//8 + 2; (x + 15)//8 stays as written
            return Lin({}, R.const // c) + self._fdiv_rest(R.plus(-R.const), c, dt)
        inner = self._outer(R, E.FloorDiv)
        if inner is not None:  # (X//c1 + k)//c == (X + k*c1)//(c1*c)
            x, c1 = inner
            return self.floordiv_const(self.lin(x.a).plus(R.const * c1), c1 * c, dt)
        for a in self._split_candidates(R, c):  # (a*X + Y)//c == X//(c/a) when 0 <= Y < a
            big, small = self._split(R, a)
            if self._in_block(small, a) == 0:
                out = self.floordiv_const(big, c // a, dt)
                if small.terms or not big.const or not self._unresolved(out, E.FloorDiv):
                    return out
        return self.atom(E.FloorDiv(self.from_lin(R, dt), E.IntImm(c, dt)))

    def floormod_const(self, L: Lin, c: int, dt: DType) -> Lin:
        if c == 1:
            return Lin()
        R = Lin({m: k for m, k in L.terms.items() if k % c}, L.const)
        return self._fmod_rest(R, c, dt)

    def _fmod_rest(self, R: Lin, c: int, dt: DType) -> Lin:
        if R.is_const:
            return Lin({}, R.const % c)
        off = self._residue(R, c)
        if off is not None:
            return Lin({}, off % c)
        blk = self._in_block(R, c)
        if blk is not None:
            return R.plus(-blk * c)
        if abs(R.const) >= c:  # drop whole periods of the constant, toward zero
            q = R.const // c if R.const > 0 else -((-R.const) // c)
            return self._fmod_rest(R.plus(-c * q), c, dt)
        inner = self._outer(R, E.FloorMod)
        if inner is not None and inner[1] % c == 0:  # (X%c1 + k)%c == (X + k)%c when c | c1
            return self.floormod_const(self.lin(inner[0].a).plus(R.const), c, dt)
        for a in self._split_candidates(R, c):  # (a*X + Y)%c == (X%(c/a))*a + Y when 0 <= Y < a
            big, small = self._split(R, a)
            if self._in_block(small, a) == 0:
                out = self.floormod_const(big, c // a, dt)
                if small.terms or not self._unresolved(out, E.FloorMod):
                    return out.scale(a) + small
        return self.atom(E.FloorMod(self.from_lin(R, dt), E.IntImm(c, dt)))

    def _merge_divmod(self, L: Lin) -> Lin:
        """``(x//c)*c*k + (x%c)*k -> x*k`` (also for truncating division)."""
        if len(L.terms) < 2:
            return L
        divs: dict[tuple, tuple[Mono, int]] = {}
        mods: list[tuple[tuple, Mono, int]] = []
        for m, k in L.terms.items():
            if len(m) != 1:
                continue
            x = self.atoms[m[0]]
            if isinstance(x, E.FloorDiv | E.Div | E.FloorMod | E.Mod) and isinstance(x.b, E.IntImm):
                is_div = isinstance(x, E.FloorDiv | E.Div)
                key = (StructKey(x.a), x.b.value, isinstance(x, E.FloorDiv | E.FloorMod))
                if is_div:
                    divs[key] = (m, k)
                else:
                    mods.append((key, m, k))
        for key, m, k in mods:
            hit = divs.get(key)
            if hit is not None and hit[1] == k * key[1]:
                merged, out = self.lin(key[0].node).scale(k), Lin({}, L.const)
                for mm, kk in L.terms.items():  # x*k takes the place of the first of the pair
                    if mm in (m, hit[0]):
                        out, merged = out + merged, Lin()
                    else:
                        out = out + Lin({mm: kk})
                return self._merge_divmod(out)
        return L

    # ---- min / max ----------------------------------------------------------------------
    def _minmax(self, e: E.Min | E.Max) -> Lin:
        return self.minmax(type(e), self.lin(e.a), self.lin(e.b), e.dtype)

    def minmax(self, cls: type, a: Lin, b: Lin, dt: DType) -> Lin:
        is_min = cls is E.Min
        if self.prove_le0(a - b):
            return a if is_min else b
        if self.prove_le0(b - a):
            return b if is_min else a
        common = Lin({m: k for m, k in a.terms.items() if b.terms.get(m) == k},
                     a.const if a.const == b.const else 0)
        if common.terms or common.const:  # min(x + c, y + c) == min(x, y) + c
            return common + self.minmax(cls, a - common, b - common, dt)
        ea, eb = self.from_lin(a, dt), self.from_lin(b, dt)
        order = self._floordiv_order(ea, eb)  # min((n + 7)//8, n//8) == n//8: floordiv is monotone
        if order is not None:
            return (a if order <= 0 else b) if is_min else (b if order <= 0 else a)
        for x, ly in ((ea, b), (eb, a)):  # min(min(p, q), y) == min(p, q) if y >= p or y >= q
            if isinstance(x, cls):
                for part in (x.a, x.b):
                    d = self.lin(part) - ly
                    if self.prove_le0(d if is_min else -d):
                        return self.atom(x)
        if isinstance(ea, E.IntImm):  # constants last: max(j, 0)
            ea, eb = eb, ea
        return self.atom(cls(ea, eb))

    def _floordiv_order(self, ea: E.PrimExpr, eb: E.PrimExpr) -> int | None:
        """-1 when ``ea <= eb`` always, 1 when ``ea >= eb``: both ``x//c`` of numerators a constant apart."""
        if not (isinstance(ea, E.FloorDiv) and isinstance(eb, E.FloorDiv)):
            return None
        ca, cb = E.const_value(ea.b), E.const_value(eb.b)
        if ca is None or ca != cb or ca <= 0:
            return None
        d = self.lin(ea.a) - self.lin(eb.a)
        if not d.is_const:
            return None
        return -1 if d.const <= 0 else 1

    # ---- everything that is not index arithmetic ----------------------------------------
    def other(self, e: E.PrimExpr) -> E.PrimExpr:
        t = type(e)
        if t in _CMP:
            if is_index_dtype(e.a.dtype):
                return self.compare(t, self.lin(e.a), self.lin(e.b), e.a.dtype)
            return E.binary(t, self.expr(e.a), self.expr(e.b))
        if t is E.And or t is E.Or:
            a, b = self.expr(e.a), self.expr(e.b)
            if structural_equal(a, b):
                return a
            return E.logical_and(a, b) if t is E.And else E.logical_or(a, b)
        if t is E.Not:
            return self.negate(self.expr(e.a))
        if t is E.Select:
            c = self.expr(e.condition)
            if isinstance(c, E.IntImm):
                return self.expr(e.true_value if c.value else e.false_value)
            tv, fv = self.expr(e.true_value), self.expr(e.false_value)
            return tv if structural_equal(tv, fv) else E.select(c, tv, fv)
        if t is E.Cast:
            return E.cast(self.expr(e.value), e.dtype)
        if t is E.Var:
            sub = self.ana.substitution(e)
            return self.expr(sub) if sub is not None else e
        if issubclass(t, E.BinaryOp):
            return E.binary(t, self.expr(e.a), self.expr(e.b))
        if t in (E.IntImm, E.FloatImm, E.StringImm):
            return e
        return self.generic_visit(e)

    def negate(self, c: E.PrimExpr) -> E.PrimExpr:
        if isinstance(c, E.IntImm):
            return E.IntImm(1 - c.value, c.dtype)
        if isinstance(c, E.Not):
            return c.a
        if isinstance(c, _CMP) and is_index_dtype(c.a.dtype):  # never for floats: NaN
            return self.expr(_FLIP[type(c)](c.a, c.b))
        return E.Not(c)

    def compare(self, cls: type, a: Lin, b: Lin, dt: DType) -> E.PrimExpr:
        if cls in (E.GT, E.GE):  # a > b  <=>  b < a
            cls, a, b = (E.LT if cls is E.GT else E.LE), b, a
            flipped = True
        else:
            flipped = False
        d = a - b
        one = Lin({}, 1)
        if cls is E.LT:
            verdict = True if self.prove_le0(d + one) else False if self.prove_le0(-d) else None
        elif cls is E.LE:
            verdict = True if self.prove_le0(d) else False if self.prove_le0(one - d) else None
        else:
            lo, hi = self.lin_bound(d)
            if d.is_const or lo > 0 or hi < 0 or self.prove_le0(d + one) or self.prove_le0(one - d):
                verdict = (d.is_const and d.const == 0) == (cls is E.EQ)
            else:
                verdict = None
        if verdict is not None:
            return E.IntImm(int(verdict), E.bool_)
        g = d.coeff_gcd()
        if g > 1:  # i*8 < 64  ->  i < 8
            t, c = Lin(dict(d.terms)).exact_div(g), d.const
            if cls is E.LT:
                d = t.plus(c // g)
            elif cls is E.LE:
                d = t.plus(-((-c) // g))
            elif c % g == 0:
                d = t.plus(c // g)
            else:  # g*t == -c has no integer solution
                return E.IntImm(int(cls is E.NE), E.bool_)
        lhs = Lin({m: k for m, k in d.terms.items() if k > 0}, max(d.const, 0))
        rhs = Lin({m: -k for m, k in d.terms.items() if k < 0}, max(-d.const, 0))
        el, er = self.from_lin(lhs, dt), self.from_lin(rhs, dt)
        if flipped:
            return (E.GT if cls is E.LT else E.GE)(er, el)
        return cls(el, er)

    # ---- statements ---------------------------------------------------------------------
    def visit_For(self, s: S.For) -> S.Stmt:
        lo, ext = self.expr(s.min), self.expr(s.extent)
        with self.ana.scoped_bind(s.loop_var, E.Range(lo, ext)):
            self.reset()
            body = self.visit(s.body)
        self.reset()
        if lo is s.min and ext is s.extent and body is s.body:
            return s
        return S.For(s.loop_var, lo, ext, s.kind, body, s.thread_tag)

    def visit_IfThenElse(self, s: S.IfThenElse) -> S.Stmt:
        c = self.expr(s.condition)
        if isinstance(c, E.IntImm):
            branch = s.then_case if c.value else s.else_case
            return self.visit(branch) if branch is not None else S.Evaluate(0)
        with self.ana.constraint_scope(c):
            self.reset()
            then = self.visit(s.then_case)
        els = None
        if s.else_case is not None:
            with self.ana.constraint_scope(self.negate(c)):
                self.reset()
                els = self.visit(s.else_case)
        self.reset()
        if c is s.condition and then is s.then_case and els is s.else_case:
            return s
        return S.IfThenElse(c, then, els)
