"""The canonical form of integer index arithmetic: a sum of monomials with integer coefficients.

``Lin`` stands for ``sum(coeff * atom_a * atom_b * ...) + const``. Atoms are whatever the
form cannot see through (variables, divisions that did not resolve, ``min``/``max``, casts,
loads); the simplifier numbers them in order of first appearance and a monomial is the sorted
tuple of its atoms' numbers. Two expressions that differ only by associativity, commutativity
or distribution of constants thus get equal forms, which is what makes ``(i*8 + j) - i*8``
collapse to ``j``. The dict keeps insertion order, which is how printed terms keep the order
the user wrote them in.
"""

from __future__ import annotations

import math

from ..ir import expr as E
from ..ir.functor import free_vars
from ..tunables import current

Mono = tuple[int, ...]


class Lin:
    __slots__ = ("const", "terms")

    def __init__(self, terms: dict[Mono, int] | None = None, const: int = 0):
        self.terms: dict[Mono, int] = terms if terms is not None else {}
        self.const = const

    @staticmethod
    def atom(k: int) -> Lin:
        return Lin({(k,): 1})

    @property
    def is_const(self) -> bool:
        return not self.terms

    def __add__(self, o: Lin) -> Lin:
        terms = dict(self.terms)
        for m, k in o.terms.items():
            v = terms.get(m, 0) + k
            if v:
                terms[m] = v
            else:
                terms.pop(m, None)
        return Lin(terms, self.const + o.const)

    def __neg__(self) -> Lin:
        return Lin({m: -k for m, k in self.terms.items()}, -self.const)

    def __sub__(self, o: Lin) -> Lin:
        return self + (-o)

    def plus(self, c: int) -> Lin:
        return Lin(dict(self.terms), self.const + c)

    def scale(self, c: int) -> Lin:
        if c == 0:
            return Lin()
        return Lin({m: k * c for m, k in self.terms.items()}, self.const * c)

    def exact_div(self, c: int) -> Lin:
        """``self / c`` for a form whose coefficients and constant ``c`` divides."""
        return Lin({m: k // c for m, k in self.terms.items()}, self.const // c)

    def single_monomial(self) -> tuple[Mono, int] | None:
        """``(mono, coeff)`` when the form is one term and no constant."""
        if self.const == 0 and len(self.terms) == 1:
            return next(iter(self.terms.items()))
        return None

    def single_atom(self) -> int | None:
        """The atom number when the form is exactly one atom with coefficient 1 (any constant)."""
        if len(self.terms) == 1:
            (m, k), = self.terms.items()
            if k == 1 and len(m) == 1:
                return m[0]
        return None

    def mul(self, o: Lin) -> Lin | None:
        """The product, distributed when one side is a constant or a single monomial.

        Products of two sums stay unexpanded (the caller makes an atom of them): expanding
        ``(i + 1)*(j + 1)`` would make the text longer without enabling a cancellation we need.
        """
        if self.is_const:
            return o.scale(self.const)
        if o.is_const:
            return self.scale(o.const)
        for x, y in ((self, o), (o, self)):
            sm = y.single_monomial()
            if sm is not None:
                mono, k = sm
                out = Lin()
                for m, c in x.terms.items():
                    out = out + Lin({tuple(sorted(m + mono)): c * k})
                if x.const:
                    out = out + Lin({mono: x.const * k})
                return out
        return None

    def coeff_gcd(self) -> int:
        from math import gcd

        g = 0
        for k in self.terms.values():
            g = gcd(g, k)
        return g

    def __repr__(self) -> str:
        return f"Lin({self.terms}, {self.const})"


def affine_terms(e: E.PrimExpr, vs: set[E.Var] | None = None) -> tuple[dict[E.Var, int], E.PrimExpr] | None:
    """``e == sum(c_v * v) + rest`` with constant ``c_v`` and ``rest`` free of ``vs`` (of every
    variable when ``vs`` is None), read off ``e`` as written: no simplification, so it is cheap
    enough for every index of a kernel (the Analyzer's ``linear_in`` is the semantic question).
    None when ``e`` is not of that form: a product of two of them, a division of one, a cast
    that narrows (which wraps, and so is not affine)."""
    if vs is not None and not free_vars(e) & vs:
        return {}, e
    if isinstance(e, E.Var):
        return {e: 1}, E.const(0, e.dtype)
    if isinstance(e, E.IntImm):
        return {}, e
    if isinstance(e, E.Add | E.Sub):
        a, b = affine_terms(e.a, vs), affine_terms(e.b, vs)
        if a is None or b is None:
            return None
        sign = 1 if isinstance(e, E.Add) else -1
        coeffs = dict(a[0])
        for v, c in b[0].items():
            coeffs[v] = coeffs.get(v, 0) + sign * c
        rest = E.add(a[1], b[1]) if sign == 1 else E.sub(a[1], b[1])
        return {v: c for v, c in coeffs.items() if c}, rest
    if isinstance(e, E.Mul):
        a, b = affine_terms(e.a, vs), affine_terms(e.b, vs)
        if a is None or b is None:
            return None
        for (terms, rest), (other, k) in ((a, b), (b, a)):
            if not other and isinstance(k, E.IntImm):
                return {v: c * k.value for v, c in terms.items() if c * k.value}, E.mul(rest, k)
        return None
    if isinstance(e, E.Cast) and e.dtype.is_integer and e.value.dtype.is_integer and e.dtype.bits >= e.value.dtype.bits:
        inner = affine_terms(e.value, vs)
        return None if inner is None else (inner[0], E.cast(inner[1], e.dtype))
    return None

# ---- integer forms and their solutions in a box (the dependence test of passes/carried.py) ----
#: ``({key: coefficient}, constant)``: a sum of integer multiples of variables (keyed by id, or
#: by any hashable name a caller gives a copy of one) plus a constant
IntForm = tuple[dict, int]


def add_terms(a: dict, b: dict) -> dict:
    out = dict(a)
    for k, c in b.items():
        out[k] = out.get(k, 0) + c
    return out


def int_form(e: E.PrimExpr) -> IntForm | None:
    """``e`` as a sum of integer multiples of variables (by id) plus a constant; None when
    it is not one."""
    got = affine_terms(e)
    if got is None or not isinstance(got[1], E.IntImm):
        return None
    return {id(v): c for v, c in got[0].items()}, got[1].value


def form_bounds(f: IntForm, ranges: dict) -> tuple[int, int] | None:
    """The least and greatest value of ``f`` over the box ``ranges`` (None: a variable without one)."""
    lo = hi = f[1]
    for k, c in f[0].items():
        if k not in ranges:
            return None
        a, b = ranges[k]
        lo, hi = lo + min(c * a, c * b), hi + max(c * a, c * b)
    return lo, hi


def solvable_in_box(terms: list[tuple[object, int, int, int]], target: int, accept) -> bool:
    """Whether ``sum(c * x) == target`` for integers ``lo <= x <= hi``, for ``(key, c, lo, hi)``
    in ``terms``, at values (by key) that ``accept``: a search over the largest coefficients
    first, each cut to the values the rest can still make up (and to the multiples of their
    gcd); past ``tunables.max_steps`` tries, True."""
    terms = sorted(terms, key=lambda t: -abs(t[1]))
    n = len(terms)
    lo_rest, hi_rest, gcd_rest = [0] * (n + 1), [0] * (n + 1), [0] * (n + 1)
    for k in range(n - 1, -1, -1):
        _, c, a, b = terms[k]
        lo_rest[k] = lo_rest[k + 1] + min(c * a, c * b)
        hi_rest[k] = hi_rest[k + 1] + max(c * a, c * b)
        gcd_rest[k] = math.gcd(gcd_rest[k + 1], c)
    steps, values, most = 0, {}, current().max_steps

    def search(k: int, want: int) -> bool:
        nonlocal steps
        if not lo_rest[k] <= want <= hi_rest[k] or (gcd_rest[k] and want % gcd_rest[k]):
            return False
        if k == n:
            return want == 0 and accept(values)
        key, c, a, b = terms[k]
        lo, hi = want - hi_rest[k + 1], want - lo_rest[k + 1]  # what c*x may be
        first, last = (-(-lo // c), hi // c) if c > 0 else (-(-hi // c), lo // c)
        for x in range(max(a, first), min(b, last) + 1):
            steps += 1
            values[key] = x
            if steps > most or search(k + 1, want - c * x):
                return True
        values.pop(key, None)
        return False

    return search(0, target)
