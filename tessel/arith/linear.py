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

from ..ir import expr as E
from ..ir import op as O
from ..ir.functor import free_vars

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
        return {e: 1}, O.const(0, e.dtype)
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
        rest = O.add(a[1], b[1]) if sign == 1 else O.sub(a[1], b[1])
        return {v: c for v, c in coeffs.items() if c}, rest
    if isinstance(e, E.Mul):
        a, b = affine_terms(e.a, vs), affine_terms(e.b, vs)
        if a is None or b is None:
            return None
        for (terms, rest), (other, k) in ((a, b), (b, a)):
            if not other and isinstance(k, E.IntImm):
                return {v: c * k.value for v, c in terms.items() if c * k.value}, O.mul(rest, k)
        return None
    if isinstance(e, E.Cast) and e.dtype.is_integer and e.value.dtype.is_integer and e.dtype.bits >= e.value.dtype.bits:
        inner = affine_terms(e.value, vs)
        return None if inner is None else (inner[0], O.cast(inner[1], e.dtype))
    return None
