"""Scalar helpers of the front end: variables, constants, choices and math intrinsics."""

from __future__ import annotations

from ..errors import DefinitionError
from ..ir import expr as E
from ..ir.dtype import DTypeLike
from ..ir.intrinsics import INTRINSICS, Intrinsic


def var(name: str = "tindex", dtype: DTypeLike = "int32") -> E.Var:
    """A symbolic scalar, typically a size bound when the kernel is called."""
    return E.Var(name, dtype)


size_var = var


def const(value, dtype: DTypeLike | None = None) -> E.PrimExpr:
    return E.const(value, dtype)


def select(cond, t, f) -> E.PrimExpr:
    """``cond ? t : f``."""
    return E.select(cond, t, f)


def if_then_else(cond, t, f) -> E.PrimExpr:
    """``cond ? t : f`` where only the chosen side is evaluated: use it to guard a read."""
    cond = E.convert(cond)
    if not cond.dtype.is_bool:
        raise DefinitionError(f"if_then_else condition `{cond}` must be bool, not {cond.dtype}")
    t, f = E.match_types(t, f)
    if isinstance(cond, E.IntImm):
        return t if cond.value else f
    return E.Call(t.dtype, "if_then_else", (cond, t, f))


def _float_args(name: str, args) -> list[E.PrimExpr]:
    args = list(E.match_types(*args)) if len(args) > 1 else [E.convert(args[0])]
    if not args[0].dtype.is_float:
        raise DefinitionError(
            f"te.{name} needs a floating-point argument, but `{args[0]}` is {args[0].dtype}; cast it first, "
            f"e.g. te.{name}(x.astype('float32'))"
        )
    return args


def _make(spec: Intrinsic):
    """The te function of one public intrinsic of the table (math functions need floats; a
    predicate of an integer is a constant)."""
    if spec.rule == "predicate":
        def fn(x):
            x = E.convert(x)
            if not x.dtype.is_float:
                return E.const(spec.name == "isfinite")
            return E.Call("bool", spec.name, (x,))
    else:
        def fn(*args):
            if len(args) != spec.arity:
                raise DefinitionError(f"te.{spec.name} takes {spec.arity} argument(s), got {len(args)}")
            args = _float_args(spec.name, args)
            return E.Call(args[0].dtype, spec.name, tuple(args))

    fn.__name__ = fn.__qualname__ = spec.name
    fn.__doc__ = f"Elementwise {spec.name} of floating-point expressions (see tessel.ir.intrinsics)."
    return fn


# every public intrinsic of the table; abs, pow and fmod are written out below
_FLOAT_UNARY = tuple(n for n, i in INTRINSICS.items() if i.public and n not in ("pow", "fmod"))
globals().update({n: _make(INTRINSICS[n]) for n in _FLOAT_UNARY})


def abs(x) -> E.PrimExpr:
    x = E.convert(x)
    if x.dtype.is_float:
        return E.Call(x.dtype, "fabs", (x,))
    if x.dtype.is_uint or x.dtype.is_bool:
        return x
    return E.select(x < 0, -x, x)


def pow(x, y) -> E.PrimExpr:
    x, y = E.match_types(x, y)
    if not x.dtype.is_float:
        raise DefinitionError(f"te.pow needs floating-point arguments, got {x.dtype}")
    return E.Call(x.dtype, "pow", (x, y))


power = pow


def fmod(x, y) -> E.PrimExpr:
    x, y = E.match_types(x, y)
    return E.Call(x.dtype, "fmod", (x, y))


floordiv = E.floordiv
floormod = E.floormod
truncdiv = E.truncdiv
truncmod = E.truncmod
indexdiv = E.floordiv
indexmod = E.floormod


def div(a, b) -> E.PrimExpr:
    """Truncating division for integers, true division for floats."""
    return E.truncdiv(a, b)


def popcount(x) -> E.PrimExpr:
    """The number of set bits of an integer (of its two's-complement pattern), in its dtype."""
    x = E.convert(x)
    if not x.dtype.is_integer or x.dtype.lanes != 1:
        raise DefinitionError(f"te.popcount needs an integer argument, but `{x}` is {x.dtype}")
    return E.Call(x.dtype, "popcount", (x,))


def cast(x, dtype: DTypeLike) -> E.PrimExpr:
    return E.cast(x, dtype)


def all(*conds) -> E.PrimExpr:
    return E.all_(*conds)


def any(*conds) -> E.PrimExpr:
    out = E.const(False)
    for c in conds:
        out = E.logical_or(out, c)
    return out


# te name -> the intrinsic it builds, for every exported one (what the tests run on both targets)
EXPORTED: dict[str, str] = {**{n: n for n in _FLOAT_UNARY}, "abs": "fabs", "pow": "pow", "power": "pow",
                            "fmod": "fmod"}
