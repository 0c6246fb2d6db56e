"""Building expressions from user values: conversion, dtype promotion and constant folding.

This is the one place where Python numbers become IR constants and where operands of
different dtypes are reconciled (``promote``). Folding here is exact for the operand dtype
(integers wrap as they would in C), so the IR never holds a constant its dtype cannot hold.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from ..errors import DefinitionError
from . import expr as E
from .dtype import DType, DTypeLike, int64, promote
from .dtype import dtype as to_dtype


def wrap_int(value: int, dt: DType) -> int:
    """Two's-complement wraparound of ``value`` to the width of integer dtype ``dt``."""
    if dt.is_bool:
        return int(bool(value))
    mask = (1 << dt.bits) - 1
    v = int(value) & mask
    if dt.is_int and v >= 1 << (dt.bits - 1):
        v -= 1 << dt.bits
    return v


def const(value, dtype: DTypeLike | None = None) -> E.PrimExpr:
    """A constant; without a dtype, ints are int32 (int64 when they do not fit) and floats float32."""
    if dtype is None:
        if isinstance(value, bool):
            dtype = "bool"
        elif isinstance(value, int):
            dtype = "int32" if -(2**31) <= value < 2**31 else "int64"
        elif isinstance(value, float):
            dtype = "float32"
        else:
            raise DefinitionError(f"cannot make a constant from {value!r}")
    dt = to_dtype(dtype)
    if dt.lanes > 1:
        return E.Broadcast(const(value, dt.element), dt.lanes)
    if dt.is_float:
        return E.FloatImm(float(value), dt)
    if isinstance(value, float) and not value.is_integer():
        raise DefinitionError(f"constant {value} does not fit integer dtype {dt}")
    v = int(value)
    if not dt.is_bool and not (dt.min_value() <= v <= dt.max_value()):
        raise DefinitionError(f"constant {v} does not fit dtype {dt}")
    return E.IntImm(v, dt)


def convert(x) -> E.PrimExpr:
    """Turn a Python number, IterVar or expression into a PrimExpr."""
    if isinstance(x, E.PrimExpr):
        return x
    if isinstance(x, E.IterVar):
        return x.var
    if isinstance(x, bool | int | float):
        return const(x)
    if hasattr(x, "asobject"):  # a te.TensorSlice (``A[i]`` of a 2-d A, completed by ``[j]``)
        return convert(x.asobject())
    try:
        import numpy as np

        if isinstance(x, np.generic):
            return const(x.item(), to_dtype(x.dtype))
    except ImportError:  # pragma: no cover
        pass
    raise DefinitionError(f"cannot use {x!r} (of type {type(x).__name__}) in a tensor expression")


def _literal_like(value, other: E.PrimExpr) -> E.PrimExpr:
    """A Python literal adopts the dtype of the expression it is combined with (when it fits)."""
    dt = other.dtype
    if isinstance(value, bool):
        return const(value, dt if (dt.is_bool or dt.is_integer or dt.is_float) else "bool")
    if isinstance(value, int):
        if dt.is_float:
            return const(value, dt)
        if dt.is_integer and dt.min_value() <= value <= dt.max_value():
            return const(value, dt)
        return const(value)
    if isinstance(value, float):
        return const(value, dt if dt.is_float else "float32")
    return convert(value)


def match_types(a, b) -> tuple[E.PrimExpr, E.PrimExpr]:
    """Convert both operands to PrimExprs of one dtype."""
    if not isinstance(a, E.PrimExpr | E.IterVar) and isinstance(b, E.PrimExpr | E.IterVar):
        b = convert(b)
        a = _literal_like(a, b)
    elif not isinstance(b, E.PrimExpr | E.IterVar) and isinstance(a, E.PrimExpr | E.IterVar):
        a = convert(a)
        b = _literal_like(b, a)
    else:
        a, b = convert(a), convert(b)
    if a.dtype != b.dtype:
        t = promote(a.dtype, b.dtype)
        a, b = cast(a, t), cast(b, t)
    return a, b


def cast(x, dtype: DTypeLike) -> E.PrimExpr:
    x = convert(x)
    dt = to_dtype(dtype)
    if x.dtype == dt:
        return x
    if isinstance(x, E.IntImm) and dt.lanes == 1:
        if dt.is_float:
            return E.FloatImm(float(x.value), dt)
        return E.IntImm(wrap_int(x.value, dt), dt)
    if isinstance(x, E.FloatImm) and dt.lanes == 1:
        if dt.is_float:
            return E.FloatImm(x.value, dt)
        if math.isfinite(x.value):
            return E.IntImm(wrap_int(int(x.value), dt), dt)
    if dt.lanes > 1 and x.dtype.lanes == 1:
        return E.Broadcast(cast(x, dt.element), dt.lanes)
    return E.Cast(dt, x)


def fold_int(cls: type, a: int, b: int) -> int | None:
    """Exact integer value of ``cls(a, b)`` (before wrapping to a dtype); None for a zero divisor."""
    if cls is E.Add:
        return a + b
    if cls is E.Sub:
        return a - b
    if cls is E.Mul:
        return a * b
    if cls is E.Min:
        return min(a, b)
    if cls is E.Max:
        return max(a, b)
    if b == 0:
        return None
    if cls is E.FloorDiv:
        return a // b
    if cls is E.FloorMod:
        return a % b
    if cls is E.Div:
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b >= 0) else -q
    if cls is E.Mod:
        return a - b * fold_int(E.Div, a, b)  # type: ignore[operator]
    return None


def float_min(a: float, b: float) -> float:
    """``min`` as NumPy's ``minimum``: a NaN operand gives NaN, whatever the order. Python's
    ``min`` keeps the first operand on an unordered comparison, so the answer would depend on
    the order of a reduction (and so on the schedule); every target follows this one rule."""
    return a if (a < b or a != a) else b


def float_max(a: float, b: float) -> float:
    """``max`` as NumPy's ``maximum``: a NaN operand gives NaN (see ``float_min``)."""
    return a if (a > b or a != a) else b


_CMP: dict[type, Callable] = {
    E.EQ: lambda x, y: x == y,
    E.NE: lambda x, y: x != y,
    E.LT: lambda x, y: x < y,
    E.LE: lambda x, y: x <= y,
    E.GT: lambda x, y: x > y,
    E.GE: lambda x, y: x >= y,
}


def binary(cls: type, a, b) -> E.PrimExpr:
    """Build ``cls(a, b)`` after type matching, folding constants and trivial identities."""
    a, b = match_types(a, b)
    dt = a.dtype
    ca, cb = E.const_value(a), E.const_value(b)
    if ca is not None and cb is not None:
        if cls in _CMP:
            return E.IntImm(int(_CMP[cls](ca, cb)), E.bool_)
        if dt.is_integer or dt.is_bool:
            v = fold_int(cls, int(ca), int(cb))
            if v is not None:
                return E.IntImm(wrap_int(v, dt), dt)
        elif cls in (E.Add, E.Sub, E.Mul, E.Min, E.Max) or (cls is E.Div and cb != 0):
            fn = {E.Add: lambda: ca + cb, E.Sub: lambda: ca - cb, E.Mul: lambda: ca * cb,
                  E.Min: lambda: float_min(ca, cb), E.Max: lambda: float_max(ca, cb), E.Div: lambda: ca / cb}
            return E.FloatImm(fn[cls](), dt)
    if dt.is_integer:
        if cls is E.Add:
            if cb == 0:
                return a
            if ca == 0:
                return b
        elif cls is E.Sub and cb == 0:
            return a
        elif cls is E.Mul:
            if cb == 1:
                return a
            if ca == 1:
                return b
            if ca == 0 or cb == 0:
                return E.IntImm(0, dt)
        elif cls in (E.FloorDiv, E.Div) and cb == 1:
            return a
        elif cls in (E.FloorMod, E.Mod) and cb == 1:
            return E.IntImm(0, dt)
    if cls in (E.FloorDiv, E.FloorMod, E.Div, E.Mod) and cb == 0 and not dt.is_float:
        raise DefinitionError(f"division by the constant zero in `{a} {cls.symbol} {b}`")
    return cls(a, b)


def binary_exact(cls: type, a, b) -> E.PrimExpr:
    """``binary`` for index arithmetic, whose integers are exact until the index_dtype step.

    Folding two constants wraps to their dtype, which is right for data (C and NumPy wrap) but
    wrong for an index: ``49999*50000`` as an int32 row offset must not become -1795017296.
    So a result that does not fit the dtype (but fits the widest index dtype) stays an unfolded
    node; ``tessel.passes.index_dtype`` later computes it in a dtype that holds it.
    """
    a, b = match_types(a, b)
    if isinstance(a, E.IntImm) and isinstance(b, E.IntImm) and a.dtype.is_int:
        v = fold_int(cls, a.value, b.value)
        if v is not None and not a.dtype.min_value() <= v <= a.dtype.max_value() \
                and int64.min_value() <= v <= int64.max_value():
            return cls(a, b)
    return binary(cls, a, b)


def add(a, b):
    return binary(E.Add, a, b)


def sub(a, b):
    return binary(E.Sub, a, b)


def mul(a, b):
    return binary(E.Mul, a, b)


def floordiv(a, b):
    return binary(E.FloorDiv, a, b)


def floormod(a, b):
    return binary(E.FloorMod, a, b)


def truncdiv(a, b):
    return binary(E.Div, a, b)


def truncmod(a, b):
    return binary(E.Mod, a, b)


def min_(a, b):
    return binary(E.Min, a, b)


def max_(a, b):
    return binary(E.Max, a, b)


def true_div(a, b):
    """``a / b``: true division for floats; an error for two integers (ambiguous rounding)."""
    a2, b2 = match_types(a, b)
    if not a2.dtype.is_float:
        raise DefinitionError(
            f"`{a2} / {b2}` divides integers: write `//` (floor division), te.truncdiv for C-style "
            "truncation, or cast to a float type first"
        )
    return binary(E.Div, a2, b2)


def neg(a):
    a = convert(a)
    if isinstance(a, E.IntImm):
        return E.IntImm(wrap_int(-a.value, a.dtype), a.dtype)
    if isinstance(a, E.FloatImm):
        return E.FloatImm(-a.value, a.dtype)
    return binary(E.Sub, _literal_like(0, a), a)


def eq(a, b):
    return binary(E.EQ, a, b)


def ne(a, b):
    return binary(E.NE, a, b)


def lt(a, b):
    return binary(E.LT, a, b)


def le(a, b):
    return binary(E.LE, a, b)


def gt(a, b):
    return binary(E.GT, a, b)


def ge(a, b):
    return binary(E.GE, a, b)


def _as_bool(x) -> E.PrimExpr:
    x = convert(x)
    if not x.dtype.element.is_bool:
        raise DefinitionError(f"`{x}` has dtype {x.dtype}; a logical operation needs bool operands")
    return x


def logical_and(a, b):
    a, b = _as_bool(a), _as_bool(b)
    if isinstance(a, E.IntImm):
        return b if a.value else a
    if isinstance(b, E.IntImm):
        return a if b.value else b
    return E.And(a, b)


def logical_or(a, b):
    a, b = _as_bool(a), _as_bool(b)
    if isinstance(a, E.IntImm):
        return a if a.value else b
    if isinstance(b, E.IntImm):
        return b if b.value else a
    return E.Or(a, b)


def logical_not(a):
    a = _as_bool(a)
    if isinstance(a, E.IntImm):
        return E.IntImm(1 - a.value, a.dtype)
    return E.Not(a)


def select(cond, t, f) -> E.PrimExpr:
    cond = _as_bool(cond)
    t, f = match_types(t, f)
    if isinstance(cond, E.IntImm):
        return t if cond.value else f
    return E.Select(cond, t, f)


def all_(*conds) -> E.PrimExpr:
    out: E.PrimExpr = const(True)
    for c in conds:
        out = logical_and(out, c)
    return out
