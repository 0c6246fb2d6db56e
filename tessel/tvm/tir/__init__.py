"""``tvm.tir``: scalar expressions under TVM's names, over tessel's IR (:mod:`tessel.ir.expr`).

The functions TE code calls (``const``, ``Select``, ``indexdiv``, ``if_then_else``, ``exp`` ...)
are tessel's; ``Var``/``IntImm``/``FloatImm``/``Cast`` build nodes with TVM's argument order;
the node classes answer ``isinstance``. Anything else is looked up in :mod:`tessel.te` and
tessel's top level (where TE features are added), else refused with what to use.
"""

from __future__ import annotations

from ...ir import expr as _E
from ...ir.expr import EQ as EQ
from ...ir.expr import GE as GE
from ...ir.expr import GT as GT
from ...ir.expr import LE as LE
from ...ir.expr import LT as LT
from ...ir.expr import NE as NE
from ...ir.expr import (
    Add,
    And,
    Broadcast,
    Call,
    CmpOp,
    Div,
    FloorDiv,
    FloorMod,
    IterVar,
    Let,
    Max,
    Min,
    Mod,
    Mul,
    Not,
    Or,
    PrimExpr,
    ProducerLoad,
    Ramp,
    Range,
    Reduce,
    StringImm,
    Sub,
)
from ...te import *
from ...te import cast, const, select
from ...te import var as _var
from .._names import missing_names

SizeVar = _E.Var  # tessel does not tell size vars apart from other vars


def Var(name: str, dtype="int32"):
    """``tvm.tir.Var(name, dtype)``: a scalar variable (as ``te.var``)."""
    return _var(name, dtype)


def IntImm(dtype, value):
    """``tvm.tir.IntImm(dtype, value)`` (TVM's order: the dtype first)."""
    return const(int(value), dtype)


def FloatImm(dtype, value):
    return const(float(value), dtype)


def Cast(dtype, value):
    return cast(value, dtype) if not isinstance(value, int | float) else const(value, dtype)


def Select(condition, true_value, false_value):
    """``tvm.tir.Select(c, a, b)``: both branches may be evaluated (as TVM's Select)."""
    return select(condition, true_value, false_value)


__getattr__ = missing_names(__name__, ("tessel.te", "tessel"))
