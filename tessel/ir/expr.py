"""Scalar expressions: their nodes, and how expressions are built from user values.

Nodes are plain immutable objects. Each class lists its constructor arguments in ``_fields``
so that one generic visitor, mutator, printer and structural comparison serve every node.
Raw constructors do no type conversion: both operands of a binary node must already share a
dtype. The builders below (``convert``, ``cast``, ``add`` ..., which the operator overloads
call) are the one place where Python numbers become IR constants and operands of different
dtypes are reconciled (``promote``), so that passes rebuilding nodes never change types
behind one's back. Folding here is exact for the operand dtype (integers wrap as they would
in C), so the IR never holds a constant its dtype cannot hold.

The nodes and their builders are one module because each needs the other: ``a + b`` builds
through ``add``, which builds an ``Add``.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from operator import attrgetter
from typing import Any

from ..errors import DefinitionError, InternalError
from .dtype import DType, DTypeLike, bool_, int64, promote
from .dtype import dtype as to_dtype
from .printer import to_text


def wrap_int(value: int, dt: DType) -> int:
    """Two's-complement wraparound of ``value`` to the width of integer dtype ``dt``."""
    if dt.is_bool:
        return int(bool(value))
    mask = (1 << dt.bits) - 1
    v = int(value) & mask
    if dt.is_int and v >= 1 << (dt.bits - 1):
        v -= 1 << dt.bits
    return v


def const(value, dtype: DTypeLike | None = None) -> PrimExpr:
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
        return Broadcast(const(value, dt.element), dt.lanes)
    if dt.is_float:
        return FloatImm(float(value), dt)
    if isinstance(value, float) and not value.is_integer():
        raise DefinitionError(f"constant {value} does not fit integer dtype {dt}")
    v = int(value)
    if not dt.is_bool and not (dt.min_value() <= v <= dt.max_value()):
        raise DefinitionError(f"constant {v} does not fit dtype {dt}")
    return IntImm(v, dt)


def convert(x) -> PrimExpr:
    """Turn a Python number, IterVar or expression into a PrimExpr."""
    if isinstance(x, PrimExpr):
        return x
    if isinstance(x, IterVar):
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


def _literal_like(value, other: PrimExpr) -> PrimExpr:
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


def match_types(a, b) -> tuple[PrimExpr, PrimExpr]:
    """Convert both operands to PrimExprs of one dtype."""
    if not isinstance(a, PrimExpr | IterVar) and isinstance(b, PrimExpr | IterVar):
        b = convert(b)
        a = _literal_like(a, b)
    elif not isinstance(b, PrimExpr | IterVar) and isinstance(a, PrimExpr | IterVar):
        a = convert(a)
        b = _literal_like(b, a)
    else:
        a, b = convert(a), convert(b)
    if a.dtype != b.dtype:
        t = promote(a.dtype, b.dtype)
        a, b = cast(a, t), cast(b, t)
    return a, b


def cast(x, dtype: DTypeLike) -> PrimExpr:
    x = convert(x)
    dt = to_dtype(dtype)
    if x.dtype == dt:
        return x
    if isinstance(x, IntImm) and dt.lanes == 1:
        if dt.is_float:
            return FloatImm(float(x.value), dt)
        return IntImm(wrap_int(x.value, dt), dt)
    if isinstance(x, FloatImm) and dt.lanes == 1:
        if dt.is_float:
            return FloatImm(x.value, dt)
        if math.isfinite(x.value):
            return IntImm(wrap_int(int(x.value), dt), dt)
    if dt.lanes > 1 and x.dtype.lanes == 1:
        return Broadcast(cast(x, dt.element), dt.lanes)
    return Cast(dt, x)


def fold_int(cls: type, a: int, b: int) -> int | None:
    """Exact integer value of ``cls(a, b)`` (before wrapping to a dtype); None for a zero
    divisor or a node with no integer meaning. Each class carries its meaning (``exact``), so
    the folder, the evaluator and the size guards share one definition."""
    exact = getattr(cls, "exact", None)
    if exact is None or (b == 0 and cls.divides):
        return None
    return exact(a, b)


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _trunc_mod(a: int, b: int) -> int:
    return a - b * _trunc_div(a, b)


def float_min(a: float, b: float) -> float:
    """``min`` as NumPy's ``minimum``: a NaN operand gives NaN, whatever the order. Python's
    ``min`` keeps the first operand on an unordered comparison, so the answer would depend on
    the order of a reduction (and so on the schedule); every target follows this one rule."""
    return a if (a < b or a != a) else b


def float_max(a: float, b: float) -> float:
    """``max`` as NumPy's ``maximum``: a NaN operand gives NaN (see ``float_min``)."""
    return a if (a > b or a != a) else b


def binary(cls: type, a, b) -> PrimExpr:
    """Build ``cls(a, b)`` after type matching, folding constants and trivial identities."""
    a, b = match_types(a, b)
    dt = a.dtype
    ca, cb = const_value(a), const_value(b)
    if ca is not None and cb is not None:
        if issubclass(cls, CmpOp):
            return IntImm(int(cls.exact(ca, cb)), bool_)
        if dt.is_integer or dt.is_bool:
            v = fold_int(cls, int(ca), int(cb))
            if v is not None:
                return IntImm(wrap_int(v, dt), dt)
        elif cls in (Add, Sub, Mul, Min, Max) or (cls is Div and cb != 0):
            fn = {Add: lambda: ca + cb, Sub: lambda: ca - cb, Mul: lambda: ca * cb,
                  Min: lambda: float_min(ca, cb), Max: lambda: float_max(ca, cb), Div: lambda: ca / cb}
            return FloatImm(fn[cls](), dt)
    if dt.is_integer:
        if cls is Add:
            if cb == 0:
                return a
            if ca == 0:
                return b
        elif cls is Sub and cb == 0:
            return a
        elif cls is Mul:
            if cb == 1:
                return a
            if ca == 1:
                return b
            if ca == 0 or cb == 0:
                return IntImm(0, dt)
        elif cls in (FloorDiv, Div) and cb == 1:
            return a
        elif cls in (FloorMod, Mod) and cb == 1:
            return IntImm(0, dt)
    if cls in (FloorDiv, FloorMod, Div, Mod) and cb == 0 and not dt.is_float:
        raise DefinitionError(f"division by the constant zero in `{a} {cls.symbol} {b}`")
    return cls(a, b)


def binary_exact(cls: type, a, b) -> PrimExpr:
    """``binary`` for index arithmetic, whose integers are exact until the index_dtype step.

    Folding two constants wraps to their dtype, which is right for data (C and NumPy wrap) but
    wrong for an index: ``49999*50000`` as an int32 row offset must not become -1795017296.
    So a result that does not fit the dtype (but fits the widest index dtype) stays an unfolded
    node; ``tessel.passes.index_dtype`` later computes it in a dtype that holds it.
    """
    a, b = match_types(a, b)
    if isinstance(a, IntImm) and isinstance(b, IntImm) and a.dtype.is_int:
        v = fold_int(cls, a.value, b.value)
        if v is not None and not a.dtype.min_value() <= v <= a.dtype.max_value() \
                and int64.min_value() <= v <= int64.max_value():
            return cls(a, b)
    return binary(cls, a, b)


def add(a, b):
    return binary(Add, a, b)


def sub(a, b):
    return binary(Sub, a, b)


def mul(a, b):
    return binary(Mul, a, b)


def floordiv(a, b):
    return binary(FloorDiv, a, b)


def floormod(a, b):
    return binary(FloorMod, a, b)


def truncdiv(a, b):
    return binary(Div, a, b)


def truncmod(a, b):
    return binary(Mod, a, b)


def min_(a, b):
    return binary(Min, a, b)


def max_(a, b):
    return binary(Max, a, b)


def true_div(a, b):
    """``a / b``: true division for floats; an error for two integers (ambiguous rounding)."""
    a2, b2 = match_types(a, b)
    if not a2.dtype.is_float:
        raise DefinitionError(
            f"`{a2} / {b2}` divides integers: write `//` (floor division), te.truncdiv for C-style "
            "truncation, or cast to a float type first"
        )
    return binary(Div, a2, b2)


def neg(a):
    a = convert(a)
    if isinstance(a, IntImm):
        return IntImm(wrap_int(-a.value, a.dtype), a.dtype)
    if isinstance(a, FloatImm):
        return FloatImm(-a.value, a.dtype)
    return binary(Sub, _literal_like(0, a), a)


def eq(a, b):
    return binary(EQ, a, b)


def ne(a, b):
    return binary(NE, a, b)


def lt(a, b):
    return binary(LT, a, b)


def le(a, b):
    return binary(LE, a, b)


def gt(a, b):
    return binary(GT, a, b)


def ge(a, b):
    return binary(GE, a, b)


def _as_bool(x) -> PrimExpr:
    x = convert(x)
    if not x.dtype.element.is_bool:
        raise DefinitionError(f"`{x}` has dtype {x.dtype}; a logical operation needs bool operands")
    return x


def logical_and(a, b):
    a, b = _as_bool(a), _as_bool(b)
    if isinstance(a, IntImm):
        return b if a.value else a
    if isinstance(b, IntImm):
        return a if b.value else b
    return And(a, b)


def logical_or(a, b):
    a, b = _as_bool(a), _as_bool(b)
    if isinstance(a, IntImm):
        return a if a.value else b
    if isinstance(b, IntImm):
        return b if b.value else a
    return Or(a, b)


def logical_not(a):
    a = _as_bool(a)
    if isinstance(a, IntImm):
        return IntImm(1 - a.value, a.dtype)
    return Not(a)


def select(cond, t, f) -> PrimExpr:
    cond = _as_bool(cond)
    t, f = match_types(t, f)
    if isinstance(cond, IntImm):
        return t if cond.value else f
    return Select(cond, t, f)


def all_(*conds) -> PrimExpr:
    out: PrimExpr = const(True)
    for c in conds:
        out = logical_and(out, c)
    return out


def _swapped(fn: Callable) -> Callable:
    """The reflected operator of ``fn`` (``3 - x`` is ``sub(3, x)``)."""
    return lambda self, o: fn(o, self)


def _deferring(fn: Callable) -> Callable:
    """``fn`` as an operator that leaves an operand declaring ``__tessel_defers__`` (a whole
    tensor: ``n + A`` is a tensor) to its own reflected operator."""

    def op(self, o):
        return NotImplemented if getattr(o, "__tessel_defers__", False) else fn(self, o)

    return op


class Node:
    """Base of every IR node (expressions, statements, ranges, IterVars, buffers)."""

    __slots__ = ()
    _fields: tuple[str, ...] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        names = cls.__dict__.get("_fields")
        if names is not None:  # one getter per class: fields() is the walks' innermost call
            cls._getter = staticmethod(_fields_getter(tuple(names)))

    @staticmethod
    def _getter(node: Node) -> tuple[Any, ...]:
        return ()

    def fields(self) -> tuple[Any, ...]:
        return self._getter(self)

    def __repr__(self) -> str:
        return to_text(self)

    __str__ = __repr__


def _fields_getter(names: tuple[str, ...]):
    """A function returning a node's fields as a tuple (``attrgetter`` gives a bare value for
    one name and nothing for none)."""
    if not names:
        return lambda node: ()
    if len(names) == 1:
        get = attrgetter(names[0])
        return lambda node: (get(node),)
    return attrgetter(*names)

class ExprOp:
    """Python operators that build expression nodes (shared by PrimExpr and IterVar): each is
    the builder of the same meaning, so ``a + b`` folds and promotes as ``add(a, b)`` does."""

    __slots__ = ()

    __add__, __radd__ = _deferring(add), _swapped(add)
    __sub__, __rsub__ = _deferring(sub), _swapped(sub)
    __mul__, __rmul__ = _deferring(mul), _swapped(mul)
    __truediv__, __rtruediv__ = _deferring(true_div), _swapped(true_div)
    __floordiv__, __rfloordiv__ = floordiv, _swapped(floordiv)
    __mod__, __rmod__ = floormod, _swapped(floormod)
    __and__, __rand__ = logical_and, _swapped(logical_and)
    __or__, __ror__ = logical_or, _swapped(logical_or)
    __lt__, __le__, __gt__, __ge__ = lt, le, gt, ge
    __eq__, __ne__ = eq, ne  # type: ignore[assignment]
    __neg__, __invert__ = neg, logical_not
    __hash__ = object.__hash__

    def equal(self, o):
        """``self == o`` as an expression (TVM's spelling, where ``==`` of two expressions may
        mean object identity)."""
        return eq(self, o)

    def astype(self, dtype: DTypeLike):
        return cast(self, dtype)

    def __bool__(self) -> bool:
        raise DefinitionError(
            f"the symbolic expression `{self}` was used where Python needs True/False; "
            "use te.if_then_else / te.select for a data-dependent choice, "
            "or tessel.arith.Analyzer().can_prove(...) to reason about it"
        )


class PrimExpr(Node, ExprOp):
    __slots__ = ("dtype",)
    dtype: DType


class Var(PrimExpr):
    """A named scalar variable. Two Vars are the same variable only if they are the same object."""

    __slots__ = ("name",)
    _fields = ("name", "dtype")

    def __init__(self, name: str = "v", dtype: DTypeLike = "int32"):
        self.name = name
        self.dtype = to_dtype(dtype)


class IntImm(PrimExpr):
    __slots__ = ("value",)
    _fields = ("value", "dtype")

    def __init__(self, value: int, dtype: DTypeLike = "int32"):
        dt = to_dtype(dtype)
        if not (dt.is_integer or dt.is_bool):
            raise InternalError(f"IntImm with non-integer dtype {dt}")
        self.value = int(value)
        self.dtype = dt

    def __bool__(self) -> bool:
        return self.value != 0

    def __int__(self) -> int:
        return self.value

    def __index__(self) -> int:
        return self.value


class FloatImm(PrimExpr):
    __slots__ = ("value",)
    _fields = ("value", "dtype")

    def __init__(self, value: float, dtype: DTypeLike = "float32"):
        self.value = float(value)
        self.dtype = to_dtype(dtype)

    def __float__(self) -> float:
        return self.value


class StringImm(PrimExpr):
    """A string argument of an intrinsic call (never a value computed by a kernel)."""

    __slots__ = ("value",)
    _fields = ("value",)

    def __init__(self, value: str):
        self.value = value
        self.dtype = to_dtype("int8")


class BinaryOp(PrimExpr):
    """``exact``: the operation on Python numbers before any wrapping (a comparison's on
    floats too); ``divides``: a zero right operand has no value."""

    __slots__ = ("a", "b")
    _fields = ("a", "b")
    symbol = "?"
    divides = False

    def __init__(self, a: PrimExpr, b: PrimExpr):
        if a.dtype != b.dtype:
            raise InternalError(f"{type(self).__name__} operands differ in dtype: {a.dtype} vs {b.dtype}")
        self.a, self.b = a, b
        self.dtype = self._result_dtype(a.dtype)

    @staticmethod
    def _result_dtype(t: DType) -> DType:
        return t


class Add(BinaryOp):
    __slots__ = ()
    exact = staticmethod(operator.add)
    symbol = "+"


class Sub(BinaryOp):
    __slots__ = ()
    exact = staticmethod(operator.sub)
    symbol = "-"


class Mul(BinaryOp):
    __slots__ = ()
    exact = staticmethod(operator.mul)
    symbol = "*"


class Div(BinaryOp):
    """Division that truncates toward zero for integers (C semantics); true division for floats."""

    __slots__ = ()
    exact = staticmethod(_trunc_div)
    divides = True
    symbol = "/"


class Mod(BinaryOp):
    """Remainder with the sign of the dividend (C semantics)."""

    __slots__ = ()
    exact = staticmethod(_trunc_mod)
    divides = True
    symbol = "%"


class FloorDiv(BinaryOp):
    __slots__ = ()
    exact = staticmethod(operator.floordiv)
    divides = True
    symbol = "//"


class FloorMod(BinaryOp):
    __slots__ = ()
    exact = staticmethod(operator.mod)
    divides = True
    symbol = "%"


class Min(BinaryOp):
    __slots__ = ()
    exact = staticmethod(min)


class Max(BinaryOp):
    __slots__ = ()
    exact = staticmethod(max)


class CmpOp(BinaryOp):
    __slots__ = ()

    @staticmethod
    def _result_dtype(t: DType) -> DType:
        return bool_.with_lanes(t.lanes)


class EQ(CmpOp):
    __slots__ = ()
    exact = staticmethod(operator.eq)
    symbol = "=="

    def __bool__(self) -> bool:  # lets `iv in some_list` and dict lookups work by identity
        return self.a is self.b


class NE(CmpOp):
    __slots__ = ()
    exact = staticmethod(operator.ne)
    symbol = "!="

    def __bool__(self) -> bool:
        return self.a is not self.b


class LT(CmpOp):
    __slots__ = ()
    exact = staticmethod(operator.lt)
    symbol = "<"


class LE(CmpOp):
    __slots__ = ()
    exact = staticmethod(operator.le)
    symbol = "<="


class GT(CmpOp):
    __slots__ = ()
    exact = staticmethod(operator.gt)
    symbol = ">"


class GE(CmpOp):
    __slots__ = ()
    exact = staticmethod(operator.ge)
    symbol = ">="


class And(BinaryOp):
    __slots__ = ()
    symbol = "&&"


class Or(BinaryOp):
    __slots__ = ()
    symbol = "||"


class Not(PrimExpr):
    __slots__ = ("a",)
    _fields = ("a",)

    def __init__(self, a: PrimExpr):
        self.a = a
        self.dtype = a.dtype


class Select(PrimExpr):
    """``condition ? true_value : false_value``; only the chosen side is evaluated."""

    __slots__ = ("condition", "true_value", "false_value")
    _fields = ("condition", "true_value", "false_value")

    def __init__(self, condition: PrimExpr, true_value: PrimExpr, false_value: PrimExpr):
        if true_value.dtype != false_value.dtype:
            raise InternalError(f"Select branches differ: {true_value.dtype} vs {false_value.dtype}")
        self.condition, self.true_value, self.false_value = condition, true_value, false_value
        self.dtype = true_value.dtype


class Cast(PrimExpr):
    __slots__ = ("value",)
    _fields = ("dtype", "value")

    def __init__(self, dtype: DTypeLike, value: PrimExpr):
        self.dtype = to_dtype(dtype)
        self.value = value


class Call(PrimExpr):
    """A call of a named intrinsic (``exp``, ``sqrt``, ``pow`` ...)."""

    __slots__ = ("op", "args")
    _fields = ("dtype", "op", "args")

    def __init__(self, dtype: DTypeLike, op: str, args):
        self.dtype = to_dtype(dtype)
        self.op = op
        self.args = tuple(args)


class Let(PrimExpr):
    __slots__ = ("var", "value", "body")
    _fields = ("var", "value", "body")

    def __init__(self, var: Var, value: PrimExpr, body: PrimExpr):
        self.var, self.value, self.body = var, value, body
        self.dtype = body.dtype


class Ramp(PrimExpr):
    """The vector ``[base, base+stride, ..., base+(lanes-1)*stride]``."""

    __slots__ = ("base", "stride", "lanes")
    _fields = ("base", "stride", "lanes")

    def __init__(self, base: PrimExpr, stride: PrimExpr, lanes: int):
        self.base, self.stride, self.lanes = base, stride, int(lanes)
        self.dtype = base.dtype.with_lanes(self.lanes)


class Broadcast(PrimExpr):
    __slots__ = ("value", "lanes")
    _fields = ("value", "lanes")

    def __init__(self, value: PrimExpr, lanes: int):
        self.value, self.lanes = value, int(lanes)
        self.dtype = value.dtype.with_lanes(self.lanes)


class ProducerLoad(PrimExpr):
    """A read of a te tensor (before storage flattening): ``A[i, j]``."""

    __slots__ = ("producer", "indices")
    _fields = ("producer", "indices")

    def __init__(self, producer, indices):
        self.producer = producer
        self.indices = tuple(indices)
        self.dtype = producer.dtype


class BufferLoad(PrimExpr):
    """A read of a buffer in the lowered IR (one flat index after storage flattening).

    A vector index (a ``Ramp``, or any index of ``lanes > 1``) reads that many elements at
    once, so the load's dtype takes its lanes from the last index, as TVM's does.
    """

    __slots__ = ("buffer", "indices")
    _fields = ("buffer", "indices")

    def __init__(self, buffer, indices):
        self.buffer = buffer
        self.indices = tuple(indices)
        lanes = self.indices[-1].dtype.lanes if self.indices else 1
        self.dtype = buffer.dtype.with_lanes(lanes) if lanes > 1 else buffer.dtype


class Range(Node):
    """The half-open integer interval ``[min, min + extent)``."""

    __slots__ = ("min", "extent")
    _fields = ("min", "extent")

    def __init__(self, min: PrimExpr, extent: PrimExpr):
        self.min = convert(min)
        self.extent = convert(extent)

    @staticmethod
    def from_begin_end(begin, end) -> Range:
        begin = convert(begin)
        return Range(begin, sub(end, begin))

    @property
    def dtype(self) -> DType:
        return self.extent.dtype


class IterVar(Node, ExprOp):
    """A loop iterator of a stage: a variable, its domain and its kind.

    Kinds are TVM's ``IterVarType`` numbers, so code written against TVM compares them as it
    does there (``iv.iter_type == te.IterVar.CommReduce``): ``DATA_PAR`` (an output axis),
    ``THREAD`` (bound to a hardware thread), ``REDUCE`` (a reduction axis), ``OPAQUE``. The loop
    kinds a schedule gives a loop (``Unrolled`` ...) are those of a stage's annotation
    (``IterVarAttr.iter_type``), as in TVM.
    """

    __slots__ = ("dom", "var", "iter_type", "thread_tag")
    _fields = ("dom", "var", "iter_type", "thread_tag")
    # TVM's names and numbers (include/tvm/tir/var.h, IterVarType)
    DataPar, ThreadIndex, CommReduce, Ordered, Opaque = 0, 1, 2, 3, 4
    Unrolled, Vectorized, Parallelized, Tensorized = 5, 6, 7, 8
    DATA_PAR, THREAD, REDUCE, OPAQUE = DataPar, ThreadIndex, CommReduce, Opaque

    def __init__(self, dom: Range | None, var: Var, iter_type: int = 0, thread_tag: str = ""):
        self.dom = dom
        self.var = var
        self.iter_type = iter_type
        self.thread_tag = thread_tag

    @property
    def dtype(self) -> DType:
        return self.var.dtype

    @property
    def name(self) -> str:
        return self.var.name

    @property
    def is_reduce(self) -> bool:
        return self.iter_type == IterVar.REDUCE


class CommReducer(Node):
    """A commutative reducer: ``result(lhs, rhs)`` combines, ``identity`` starts the fold."""

    __slots__ = ("lhs", "rhs", "result", "identity", "name")
    _fields = ("lhs", "rhs", "result", "identity", "name")

    def __init__(self, lhs, rhs, result, identity, name: str = "reducer"):
        self.lhs, self.rhs = tuple(lhs), tuple(rhs)
        self.result, self.identity = tuple(result), tuple(identity)
        self.name = name


class Reduce(PrimExpr):
    """A reduction of ``source`` over ``axis``; ``value_index`` selects one output of a tuple.

    ``finish``: what is done with the reduced value, ``acc`` standing for it (``(A[i, j] - acc)
    / d``, ``sqrt(acc)``): the solvers' ``(init - sum) / d`` is one definition, the value
    finished once its sum is complete; None: the value is the reduction's."""

    __slots__ = ("combiner", "source", "axis", "condition", "value_index", "init", "finish", "acc")
    _fields = ("combiner", "source", "axis", "condition", "value_index", "init", "finish", "acc")

    def __init__(self, combiner: CommReducer, source, axis, condition: PrimExpr, value_index: int = 0, init=(),
                 finish: PrimExpr | None = None, acc: Var | None = None):
        self.combiner = combiner
        self.source = tuple(source)
        self.axis = tuple(axis)
        self.condition = condition
        self.value_index = value_index
        self.init = tuple(init)
        self.finish, self.acc = finish, acc
        self.dtype = self.source[value_index].dtype

def is_const_int(e: Any, value: int | None = None) -> bool:
    return isinstance(e, IntImm) and (value is None or e.value == value)


def const_value(e: Any) -> int | float | None:
    return e.value if isinstance(e, IntImm | FloatImm) else None
