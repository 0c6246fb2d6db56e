"""The two answers to "is this linear": ``linear.affine_terms`` reads an expression as written
(every index of a kernel, cheaply), ``Analyzer.linear_in`` proves it through the simplifier."""

from __future__ import annotations

import pytest

from tessel.arith import Analyzer
from tessel.arith.linear import affine_terms
from tessel.ir import expr as E

i, j, n = E.Var("i", "int32"), E.Var("j", "int32"), E.Var("n", "int32")


def c(v, dt="int32"):
    return E.IntImm(v, dt)


@pytest.mark.parametrize("expr, vs, want", [
    (E.add(E.mul(i, c(4)), E.sub(j, c(3))), None, ({i: 4, j: 1}, -3)),
    (E.mul(c(2), E.add(i, n)), {i}, ({i: 2}, "n*2")),
    (E.sub(E.add(i, j), i), None, ({j: 1}, 0)),  # a term that cancels is no term
    (E.cast(E.add(i, c(1)), "int64"), None, ({i: 1}, 1)),  # a widening cast keeps the form
])
def test_affine_terms_reads_the_form_as_written(expr, vs, want):
    terms, rest = affine_terms(expr, vs)
    assert terms == want[0]
    assert (rest.value if isinstance(rest, E.IntImm) else str(rest)) == want[1]


@pytest.mark.parametrize("expr", [
    E.mul(i, j),  # a product of two variables
    E.mul(i, n),  # a coefficient that is not a constant
    E.FloorDiv(i, c(2)),
    E.cast(E.mul(i, c(4)), "int16"),  # a narrowing cast wraps
])
def test_affine_terms_refuses_what_is_not_affine(expr):
    assert affine_terms(expr) is None


def test_linear_in_proves_what_the_written_form_does_not_show():
    ana = Analyzer()
    ana.bind(j, E.Range(c(0), c(4)))
    # (i*8 + j)//4 - i*2 is j//4 == 0 over j < 4: linear in i with coefficient 0
    e = E.sub(E.FloorDiv(E.add(E.mul(i, c(8)), j), c(4)), E.mul(i, c(2)))
    assert affine_terms(e, {i}) is None
    coeff, rest = ana.linear_in(e, i)
    assert coeff == 0 and E.is_const_int(rest, 0)
    coeff, rest = ana.linear_in(E.add(E.mul(i, c(3)), n), i)
    assert coeff == 3 and str(rest) == "n"
    assert ana.linear_in(E.FloorDiv(i, c(2)), i) is None
