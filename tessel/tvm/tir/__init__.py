"""``tvm.tir``: scalar expressions under TVM's names, over tessel's IR (:mod:`tessel.ir.expr`).

The functions TE code calls (``const``, ``indexdiv``, ``if_then_else``, ``exp`` ...) are
tessel's; ``Var``/``IntImm``/``FloatImm``/``Cast``/``Select`` build tessel's nodes with TVM's
argument order and answer ``isinstance`` for them; the other node and statement classes are
tessel's own (``tvm.tir.Add``, ``tvm.tir.For``). Anything else is looked up in :mod:`tessel.te` and
tessel's top level (where TE features are added), else refused with what to use.
"""

from __future__ import annotations

from ...ir import expr as _E
from ...ir.stmt import LoopKind as ForKind  # TVM spells it tvm.tir.ForKind.SERIAL ...
from ...te import *
from ...te import cast, const, select
from ...te import var as _var
from .._names import missing_names


class _Spelling(type):
    """A TVM node class whose call builds tessel's node with TVM's arguments, and against which
    ``isinstance`` tests tessel's node class (``isinstance(x, tvm.tir.Var)``)."""

    node: type

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, cls.node)

    def __subclasscheck__(cls, sub) -> bool:
        return issubclass(sub, cls.node)


class Var(metaclass=_Spelling):
    """``tvm.tir.Var(name, dtype)``: a scalar variable (as ``te.var``)."""

    node = _E.Var

    def __new__(cls, name: str = "v", dtype="int32"):
        return _var(name, dtype)


class SizeVar(Var):
    """tessel does not tell size vars apart from other vars."""


class IntImm(metaclass=_Spelling):
    """``tvm.tir.IntImm(dtype, value)`` (TVM's order: the dtype first)."""

    node = _E.IntImm

    def __new__(cls, dtype, value):
        return const(int(value), dtype)


class FloatImm(metaclass=_Spelling):
    node = _E.FloatImm

    def __new__(cls, dtype, value):
        return const(float(value), dtype)


class Cast(metaclass=_Spelling):
    node = _E.Cast

    def __new__(cls, dtype, value):
        return cast(value, dtype) if not isinstance(value, int | float) else const(value, dtype)


class Select(metaclass=_Spelling):
    """``tvm.tir.Select(c, a, b)``: both branches may be evaluated (as TVM's Select)."""

    node = _E.Select

    def __new__(cls, condition, true_value, false_value):
        return select(condition, true_value, false_value)


__getattr__ = missing_names(__name__, ("tessel.te", "tessel", "tessel.ir.stmt", "tessel.ir.expr"))
