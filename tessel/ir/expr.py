"""Scalar expression nodes.

Nodes are plain immutable objects. Each class lists its constructor arguments in ``_fields``
so that one generic visitor, mutator, printer and structural comparison serve every node.
Raw constructors do no type conversion: both operands of a binary node must already share a
dtype. The operator overloads (and :mod:`tessel.ir.op`) are where Python numbers are converted
and dtypes promoted, so that passes rebuilding nodes never change types behind one's back.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any

from ..errors import DefinitionError, InternalError
from .dtype import DType, DTypeLike, bool_
from .dtype import dtype as to_dtype


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
        from .printer import to_text

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
    """Python operators that build expression nodes (shared by PrimExpr and IterVar)."""

    __slots__ = ()

    def __add__(self, o):
        return _op().add(self, o)

    def __radd__(self, o):
        return _op().add(o, self)

    def __sub__(self, o):
        return _op().sub(self, o)

    def __rsub__(self, o):
        return _op().sub(o, self)

    def __mul__(self, o):
        return _op().mul(self, o)

    def __rmul__(self, o):
        return _op().mul(o, self)

    def __truediv__(self, o):
        return _op().true_div(self, o)

    def __rtruediv__(self, o):
        return _op().true_div(o, self)

    def __floordiv__(self, o):
        return _op().floordiv(self, o)

    def __rfloordiv__(self, o):
        return _op().floordiv(o, self)

    def __mod__(self, o):
        return _op().floormod(self, o)

    def __rmod__(self, o):
        return _op().floormod(o, self)

    def __neg__(self):
        return _op().neg(self)

    def __lt__(self, o):
        return _op().lt(self, o)

    def __le__(self, o):
        return _op().le(self, o)

    def __gt__(self, o):
        return _op().gt(self, o)

    def __ge__(self, o):
        return _op().ge(self, o)

    def __eq__(self, o):  # type: ignore[override]
        return _op().eq(self, o)

    def __ne__(self, o):  # type: ignore[override]
        return _op().ne(self, o)

    def __and__(self, o):
        return _op().logical_and(self, o)

    def __rand__(self, o):
        return _op().logical_and(o, self)

    def __or__(self, o):
        return _op().logical_or(self, o)

    def __ror__(self, o):
        return _op().logical_or(o, self)

    def __invert__(self):
        return _op().logical_not(self)

    __hash__ = object.__hash__

    def equal(self, o):
        """``self == o`` as an expression (TVM's spelling, where ``==`` of two expressions may
        mean object identity)."""
        return _op().eq(self, o)

    def astype(self, dtype: DTypeLike):
        return _op().cast(self, dtype)

    def __bool__(self) -> bool:
        raise DefinitionError(
            f"the symbolic expression `{self}` was used where Python needs True/False; "
            "use te.if_then_else / te.select for a data-dependent choice, "
            "or tessel.arith.Analyzer().can_prove(...) to reason about it"
        )


def _op():
    from . import op

    return op


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
    __slots__ = ("a", "b")
    _fields = ("a", "b")
    symbol = "?"

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
    symbol = "+"


class Sub(BinaryOp):
    __slots__ = ()
    symbol = "-"


class Mul(BinaryOp):
    __slots__ = ()
    symbol = "*"


class Div(BinaryOp):
    """Division that truncates toward zero for integers (C semantics); true division for floats."""

    __slots__ = ()
    symbol = "/"


class Mod(BinaryOp):
    """Remainder with the sign of the dividend (C semantics)."""

    __slots__ = ()
    symbol = "%"


class FloorDiv(BinaryOp):
    __slots__ = ()
    symbol = "//"


class FloorMod(BinaryOp):
    __slots__ = ()
    symbol = "%"


class Min(BinaryOp):
    __slots__ = ()


class Max(BinaryOp):
    __slots__ = ()


class CmpOp(BinaryOp):
    __slots__ = ()

    @staticmethod
    def _result_dtype(t: DType) -> DType:
        return bool_.with_lanes(t.lanes)


class EQ(CmpOp):
    __slots__ = ()
    symbol = "=="

    def __bool__(self) -> bool:  # lets `iv in some_list` and dict lookups work by identity
        return self.a is self.b


class NE(CmpOp):
    __slots__ = ()
    symbol = "!="

    def __bool__(self) -> bool:
        return self.a is not self.b


class LT(CmpOp):
    __slots__ = ()
    symbol = "<"


class LE(CmpOp):
    __slots__ = ()
    symbol = "<="


class GT(CmpOp):
    __slots__ = ()
    symbol = ">"


class GE(CmpOp):
    __slots__ = ()
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
        from .op import convert

        self.min = convert(min)
        self.extent = convert(extent)

    @staticmethod
    def from_begin_end(begin, end) -> Range:
        from .op import convert, sub

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

    def combine(self, a, b) -> tuple[PrimExpr, ...]:
        """The combined value(s) of accumulator(s) ``a`` with new value(s) ``b``."""
        from .functor import substitute

        vmap = dict(zip(self.lhs, a)) | dict(zip(self.rhs, b))
        return tuple(substitute(r, vmap) for r in self.result)


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
