"""The one dispatch by node type (``Functor``) that the code generators print through."""

from __future__ import annotations

import pytest

from tessel.ir import expr as E
from tessel.ir.expr import const
from tessel.ir.functor import Functor


class _Kinds(Functor):
    def visit_Add(self, e, tag):
        return ("add", tag)

    def visit_CmpOp(self, e, tag):
        return ("cmp", tag)

    def visit_BinaryOp(self, e, tag):
        return ("binary", tag)


class _Narrower(_Kinds):
    def visit_LT(self, e, tag):
        return ("lt", tag)


def test_a_node_without_its_own_method_takes_its_nearest_base_class_method():
    x, y = E.Var("x", "int32"), E.Var("y", "int32")
    k = _Kinds()
    assert k.visit(E.Add(x, y), 1) == ("add", 1)
    assert k.visit(E.LT(x, y), 2) == ("cmp", 2)  # LT -> CmpOp, before BinaryOp
    assert k.visit(E.Mul(x, y), 3) == ("binary", 3)


def test_a_subclass_resolves_its_own_methods_apart_from_its_base():
    x, y = E.Var("x", "int32"), E.Var("y", "int32")
    assert _Narrower().visit(E.LT(x, y), 0) == ("lt", 0)
    assert _Kinds().visit(E.LT(x, y), 0) == ("cmp", 0)  # the base's resolution was not polluted


def test_a_node_nobody_handles_is_a_type_error_naming_it():
    with pytest.raises(TypeError, match="_Kinds has no visit_ method for IntImm"):
        _Kinds().visit(const(3, "int32"), 0)
