"""Scalar helpers of the front end: variables, constants, choices and math intrinsics."""

from __future__ import annotations

from ..errors import DefinitionError
from ..ir import expr as E
from ..ir import op as O
from ..ir.dtype import DTypeLike


def var(name: str = "tindex", dtype: DTypeLike = "int32") -> E.Var:
    """A symbolic scalar, typically a size bound when the kernel is called."""
    return E.Var(name, dtype)


size_var = var


def const(value, dtype: DTypeLike | None = None) -> E.PrimExpr:
    return O.const(value, dtype)


def select(cond, t, f) -> E.PrimExpr:
    """``cond ? t : f``."""
    return O.select(cond, t, f)


def if_then_else(cond, t, f) -> E.PrimExpr:
    """``cond ? t : f`` where only the chosen side is evaluated: use it to guard a read."""
    cond = O.convert(cond)
    if not cond.dtype.is_bool:
        raise DefinitionError(f"if_then_else condition `{cond}` must be bool, not {cond.dtype}")
    t, f = O.match_types(t, f)
    if isinstance(cond, E.IntImm):
        return t if cond.value else f
    return E.Call(t.dtype, "if_then_else", (cond, t, f))


_FLOAT_UNARY = ("exp", "exp2", "exp10", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "sin", "cos",
                "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "sigmoid", "erf", "floor",
                "ceil", "round", "trunc", "nearbyint")


def _float_call(name: str, x) -> E.PrimExpr:
    x = O.convert(x)
    if not x.dtype.is_float:
        raise DefinitionError(
            f"te.{name} needs a floating-point argument, but `{x}` is {x.dtype}; cast it first, "
            f"e.g. te.{name}(x.astype('float32'))"
        )
    return E.Call(x.dtype, name, (x,))


def _make_unary(name: str):
    def fn(x):
        return _float_call(name, x)

    fn.__name__ = name
    fn.__doc__ = f"Elementwise {name} of a floating-point expression."
    return fn


globals().update({n: _make_unary(n) for n in _FLOAT_UNARY})


def abs(x) -> E.PrimExpr:
    x = O.convert(x)
    if x.dtype.is_float:
        return E.Call(x.dtype, "fabs", (x,))
    if x.dtype.is_uint or x.dtype.is_bool:
        return x
    return O.select(x < 0, -x, x)


def pow(x, y) -> E.PrimExpr:
    x, y = O.match_types(x, y)
    if not x.dtype.is_float:
        raise DefinitionError(f"te.pow needs floating-point arguments, got {x.dtype}")
    return E.Call(x.dtype, "pow", (x, y))


power = pow


def fmod(x, y) -> E.PrimExpr:
    x, y = O.match_types(x, y)
    return E.Call(x.dtype, "fmod", (x, y))


def isnan(x) -> E.PrimExpr:
    x = O.convert(x)
    if not x.dtype.is_float:
        return O.const(False)
    return E.Call("bool", "isnan", (x,))


floordiv = O.floordiv
floormod = O.floormod
truncdiv = O.truncdiv
truncmod = O.truncmod
indexdiv = O.floordiv
indexmod = O.floormod


def div(a, b) -> E.PrimExpr:
    """Truncating division for integers, true division for floats."""
    return O.truncdiv(a, b)


def cast(x, dtype: DTypeLike) -> E.PrimExpr:
    return O.cast(x, dtype)


def all(*conds) -> E.PrimExpr:
    return O.all_(*conds)


def any(*conds) -> E.PrimExpr:
    out = O.const(False)
    for c in conds:
        out = O.logical_or(out, c)
    return out
