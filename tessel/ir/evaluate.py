"""A direct interpreter for scalar expressions, with the exact semantics of the generated C.

It is the oracle that the simplifier, the interval sets and the code generators are checked
against, so it never takes shortcuts: integers wrap at their dtype's width, ``Div``/``Mod``
truncate toward zero while ``FloorDiv``/``FloorMod`` round down (on floats as NumPy's
``floor_divide``/``remainder``), ``min``/``max`` with a NaN operand are NaN (NumPy's
``minimum``/``maximum``), ``select`` evaluates only the chosen side, and float results are
rounded to their dtype after every operation.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..errors import DefinitionError
from . import expr as E
from .dtype import DType
from .expr import convert, float_max, float_min, fold_int, wrap_int
from .intrinsics import lookup

Value = int | float | bool


def _round_float(x: float, dt: DType) -> float:
    if dt.bits == 64:
        return float(x)
    with np.errstate(over="ignore", invalid="ignore"):
        return float(np.dtype(f"float{dt.bits}").type(x))


def _to_dtype(x: Any, dt: DType) -> Value:
    """A Python value as dtype ``dt`` would hold it (C conversion rules, wrap on overflow)."""
    if dt.is_bool:
        return bool(x)
    if dt.is_float:
        return _round_float(float(x), dt)
    if isinstance(x, float):
        if not math.isfinite(x):
            raise DefinitionError(f"cannot convert {x} to {dt}")
        x = math.trunc(x)
    return wrap_int(int(x), dt)


def _fdiv(a: float, b: float) -> float:
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.float64(a) / np.float64(b))


def _int_binop(cls: type, a: int, b: int) -> int:
    value = fold_int(cls, a, b)
    if value is None:
        raise ZeroDivisionError("integer division by zero in evaluated expression")
    return value


def _float_binop(cls: type, a: float, b: float) -> float:
    if cls is E.Add:
        return a + b
    if cls is E.Sub:
        return a - b
    if cls is E.Mul:
        return a * b
    if cls is E.Div:
        return _fdiv(a, b)
    if cls is E.Mod:
        return math.fmod(a, b) if b != 0 else math.nan
    if cls is E.Min:
        return float_min(a, b)
    return float_max(a, b)


def _float_floor_op(cls: type, a: float, b: float, dt: DType) -> float:
    """Float ``//`` and ``%`` as NumPy's ``floor_divide`` and ``remainder`` in ``dt`` (not
    ``floor(a / b)``: ``1 // 0.1`` is 9, ``inf // 2`` NaN and ``-5 % inf`` inf there, as in
    Python); the generated C and the python target compute the same."""
    t = np.dtype(f"float{dt.bits}").type
    fn = np.floor_divide if cls is E.FloorDiv else np.remainder
    with np.errstate(all="ignore"):
        return float(fn(t(a), t(b)))


class _Evaluator:
    def __init__(self, env: Mapping[Any, Any]):
        self.env = env

    def run(self, e: Any) -> Any:
        fn = getattr(self, "ev_" + type(e).__name__, None)
        if fn is None:
            raise DefinitionError(f"cannot evaluate a {type(e).__name__} node: `{e}`")
        return fn(e)

    def ev_IntImm(self, e: E.IntImm) -> Value:
        return bool(e.value) if e.dtype.is_bool else e.value

    def ev_FloatImm(self, e: E.FloatImm) -> Value:
        return _round_float(e.value, e.dtype)

    def ev_StringImm(self, e: E.StringImm) -> str:
        return e.value

    def ev_Var(self, e: E.Var) -> Value:
        if e not in self.env:
            raise DefinitionError(f"evaluate: no value given for variable `{e.name}`")
        return _to_dtype(self.env[e], e.dtype)

    def _binary(self, e: E.BinaryOp) -> Value:
        a, b = self.run(e.a), self.run(e.b)
        cls, dt = type(e), e.a.dtype
        if isinstance(a, list) or isinstance(b, list):
            return _lanes(cls, dt, a, b, e.dtype)
        return _scalar_binop(cls, dt, a, b)

    ev_Add = ev_Sub = ev_Mul = ev_Div = ev_Mod = ev_FloorDiv = ev_FloorMod = _binary
    ev_Min = ev_Max = ev_EQ = ev_NE = ev_LT = ev_LE = ev_GT = ev_GE = _binary

    def ev_And(self, e: E.And) -> Value:
        return bool(self.run(e.a)) and bool(self.run(e.b))

    def ev_Or(self, e: E.Or) -> Value:
        return bool(self.run(e.a)) or bool(self.run(e.b))

    def ev_Not(self, e: E.Not) -> Value:
        return not self.run(e.a)

    def ev_Select(self, e: E.Select) -> Value:
        return self.run(e.true_value) if self.run(e.condition) else self.run(e.false_value)

    def ev_Cast(self, e: E.Cast) -> Value:
        v = self.run(e.value)
        if isinstance(v, list):
            return [_to_dtype(x, e.dtype.element) for x in v]
        return _to_dtype(v, e.dtype)

    def ev_Let(self, e: E.Let) -> Value:
        inner = _Evaluator({**self.env, e.var: self.run(e.value)})
        return inner.run(e.body)

    def ev_Call(self, e: E.Call) -> Value:
        if e.op in ("if_then_else", "tir.if_then_else"):
            c, t, f = e.args
            return self.run(t) if self.run(c) else self.run(f)
        args = [self.run(a) for a in e.args]
        if e.op in ("likely", "tir.likely"):
            return args[0]
        if e.op == "popcount":  # of the two's-complement pattern at the argument's width
            return _to_dtype(bin(int(args[0]) & ((1 << e.args[0].dtype.bits) - 1)).count("1"), e.dtype)
        spec = lookup(e.op)
        fn = spec.scalar if spec is not None else None
        if fn is None:
            raise DefinitionError(f"evaluate: unknown intrinsic `{e.op}`")
        return _to_dtype(fn(*args), e.dtype)

    def ev_Ramp(self, e: E.Ramp) -> list:
        base, stride = self.run(e.base), self.run(e.stride)
        dt = e.dtype.element
        return [_to_dtype(base + k * stride, dt) for k in range(e.lanes)]

    def ev_Broadcast(self, e: E.Broadcast) -> list:
        return [self.run(e.value)] * e.lanes

    def _load(self, holder: Any, indices: tuple) -> Value:
        if holder not in self.env:
            raise DefinitionError(f"evaluate: no array given for `{getattr(holder, 'name', holder)}`")
        arr = self.env[holder]
        idx = tuple(self.run(i) for i in indices)
        got = np.asarray(arr)[idx]  # a vector index (a Ramp gives a list) reads several lanes
        return got.tolist() if got.ndim else got.item()

    def ev_ProducerLoad(self, e: E.ProducerLoad) -> Value:
        return self._load(e.producer, e.indices)

    def ev_BufferLoad(self, e: E.BufferLoad) -> Value:
        return self._load(e.buffer, e.indices)


def _scalar_binop(cls: type, dt: DType, a: Value, b: Value) -> Value:
    if issubclass(cls, E.CmpOp):
        return bool(cls.exact(a, b))
    if dt.is_float and cls in (E.FloorDiv, E.FloorMod):
        return _float_floor_op(cls, float(a), float(b), dt)
    if dt.is_float:
        return _round_float(_float_binop(cls, float(a), float(b)), dt)
    return _to_dtype(_int_binop(cls, int(a), int(b)), dt)


def _lanes(cls: type, dt: DType, a: Any, b: Any, out: DType) -> list:
    n = len(a) if isinstance(a, list) else len(b)
    aa = a if isinstance(a, list) else [a] * n
    bb = b if isinstance(b, list) else [b] * n
    return [_scalar_binop(cls, dt.element, x, y) for x, y in zip(aa, bb)]


def evaluate(expr: Any, env: Mapping[Any, Any] | None = None) -> Any:
    """The value of ``expr`` with each free variable taken from ``env``.

    ``env`` maps Vars (or IterVars) to Python numbers; buffers and te tensors may map to NumPy
    arrays so that loads can be evaluated too. Vector expressions give lists of lane values.
    """
    env = dict(env or {})
    for k in [k for k in env if isinstance(k, E.IterVar)]:
        env[k.var] = env.pop(k)
    return _Evaluator(env).run(convert(expr))
