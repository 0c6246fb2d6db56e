"""Tensors and the operations that produce them.

An :class:`Operation` says *what* is computed; a :class:`Tensor` is one of its outputs.
Indexing a tensor builds a :class:`~tessel.ir.ProducerLoad` and checks the number of indices
right away, so a wrong program fails where it is written, not deep inside lowering.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence

from ..errors import DefinitionError
from ..ir import expr as E
from ..ir.dtype import DType, DTypeLike
from ..ir.dtype import dtype as to_dtype
from ..ir.functor import collect
from ..ir.op import convert


class Tensor:
    """The ``value_index``-th output of ``op``; ``shape`` and ``dtype`` are fixed at definition."""

    __slots__ = ("dtype", "op", "shape", "value_index")

    def __init__(self, op: Operation, value_index: int, shape: Sequence[E.PrimExpr], dtype: DType):
        self.op = op
        self.value_index = value_index
        self.shape = tuple(shape)
        self.dtype = dtype

    @property
    def name(self) -> str:
        return self.op.name if self.op.num_outputs == 1 else f"{self.op.name}.v{self.value_index}"

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __getitem__(self, indices) -> E.ProducerLoad:
        if not isinstance(indices, tuple):
            indices = (indices,)
        if len(indices) != self.ndim:
            raise DefinitionError(
                f"tensor {self.name} has {self.ndim} dimension(s) (shape {_shape_text(self.shape)}) "
                f"but was indexed with {len(indices)} index(es): write {self.name}[{', '.join(f'i{k}' for k in range(self.ndim))}]"
            )
        conv = []
        for k, x in enumerate(indices):
            e = convert(x)
            if not (e.dtype.is_integer and e.dtype.lanes == 1):
                raise DefinitionError(f"index {k} of {self.name} is `{e}` of dtype {e.dtype}; indices must be integers")
            conv.append(e)
        return E.ProducerLoad(self, conv)

    def __call__(self, *indices) -> E.ProducerLoad:
        return self[indices]

    def __repr__(self) -> str:
        return f"Tensor({self.name}, shape={_shape_text(self.shape)}, dtype={self.dtype})"

    def __len__(self) -> int:
        raise DefinitionError(f"len() of tensor {self.name} is not defined; use {self.name}.shape")

    def __iter__(self):
        raise DefinitionError(f"tensor {self.name} cannot be iterated; index it with {self.name}[...]")


def _shape_text(shape) -> str:
    return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


class Operation:
    """Base of every operation; ``outputs`` are created once so tensors keep their identity."""

    name: str
    tag: str
    attrs: dict
    outputs: tuple[Tensor, ...]

    @property
    def num_outputs(self) -> int:
        return len(self.outputs)

    def output(self, i: int) -> Tensor:
        return self.outputs[i]

    @property
    def root_iter_vars(self) -> tuple[E.IterVar, ...]:
        return ()

    def input_tensors(self) -> list[Tensor]:
        return []

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name})"


class PlaceholderOp(Operation):
    def __init__(self, name: str, shape, dtype: DType):
        self.name, self.tag, self.attrs = name, "", {}
        self.shape = tuple(shape)
        self.dtype = dtype
        self.outputs = (Tensor(self, 0, self.shape, dtype),)


class ComputeOp(Operation):
    """``out[axis] = body`` for every point of ``axis``; a body may be a top-level Reduce."""

    def __init__(self, name: str, tag: str, attrs: dict | None, axis, body):
        self.name, self.tag, self.attrs = name, tag, dict(attrs or {})
        self.axis = tuple(axis)
        self.body = tuple(body)
        first = self.body[0]
        self.reduce_axis: tuple[E.IterVar, ...] = first.axis if isinstance(first, E.Reduce) else ()
        shape = tuple(iv.dom.extent for iv in self.axis)
        self.outputs = tuple(Tensor(self, k, shape, b.dtype) for k, b in enumerate(self.body))

    @property
    def root_iter_vars(self) -> tuple[E.IterVar, ...]:
        return self.axis + self.reduce_axis

    def input_tensors(self) -> list[Tensor]:
        seen: dict[int, Tensor] = {}
        for b in self.body:
            for load in collect(b, lambda n: isinstance(n, E.ProducerLoad)):
                seen.setdefault(id(load.producer), load.producer)
        return list(seen.values())

    @property
    def is_reduction(self) -> bool:
        return bool(self.reduce_axis)


def placeholder(shape, dtype: DTypeLike = "float32", name: str = "placeholder") -> Tensor:
    """An input tensor of the given shape (ints or symbolic ``te.var`` sizes)."""
    shape = _check_shape(shape, name)
    return PlaceholderOp(name, shape, to_dtype(dtype)).output(0)


def _check_shape(shape, name: str) -> tuple[E.PrimExpr, ...]:
    if isinstance(shape, int | E.PrimExpr):
        shape = (shape,)
    out = []
    for k, s in enumerate(shape):
        e = convert(s)
        if not e.dtype.is_integer:
            raise DefinitionError(f"dimension {k} of {name} is `{e}` of dtype {e.dtype}; sizes must be integers")
        if isinstance(e, E.IntImm) and e.value < 0:
            raise DefinitionError(f"dimension {k} of {name} is {e.value}; sizes must not be negative")
        out.append(e)
    return tuple(out)


def _axis_names(fcompute: Callable, ndim: int) -> list[str]:
    try:
        params = list(inspect.signature(fcompute).parameters.values())
    except (TypeError, ValueError):
        params = []
    if params and params[0].kind == inspect.Parameter.VAR_POSITIONAL:
        return [f"i{k}" for k in range(ndim)]
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(names) != ndim:
        raise DefinitionError(
            f"compute of shape with {ndim} dimension(s) was given a function of {len(names)} argument(s); "
            f"it needs one index argument per dimension"
        )
    return names


def compute(shape, fcompute: Callable, name: str = "compute", tag: str = "", attrs: dict | None = None):
    """Define ``name[i, j, ...] = fcompute(i, j, ...)`` over ``shape``.

    ``fcompute`` may return a tuple: the operation then has several outputs of one shape (for
    a tuple reduction such as argmax all parts must be reductions over the same axes).
    """
    shape = _check_shape(shape, name)
    names = _axis_names(fcompute, len(shape))
    axis = [E.IterVar(E.Range(0, s), E.Var(n, s.dtype), E.IterVar.DATA_PAR) for n, s in zip(names, shape)]
    result = fcompute(*[iv.var for iv in axis])
    bodies = list(result) if isinstance(result, list | tuple) else [result]
    bodies = [convert(b) for b in bodies]
    _check_body(name, bodies)
    op = ComputeOp(name, tag, attrs, axis, bodies)
    return op.outputs if len(op.outputs) > 1 else op.outputs[0]


def _check_body(name: str, bodies: list[E.PrimExpr]) -> None:
    for b in bodies:
        nested = collect(b, lambda n: isinstance(n, E.Reduce))
        if nested and not (isinstance(b, E.Reduce) and len(nested) == 1):
            raise DefinitionError(
                f"compute {name}: a reduction (te.sum/min/max or a comm_reducer) must be the whole "
                "body of a compute, not part of a larger expression; compute the reduction in its "
                "own te.compute and use its result"
            )
    reds = [b for b in bodies if isinstance(b, E.Reduce)]
    if reds and len(reds) != len(bodies):
        raise DefinitionError(f"compute {name}: either every output or none must be a reduction")
    if len(reds) > 1:
        first = reds[0]
        for r in reds[1:]:
            if r.combiner is not first.combiner or r.axis != first.axis or r.source != first.source:
                raise DefinitionError(
                    f"compute {name}: the outputs of a multi-output reduction must come from one "
                    "comm_reducer call over the same axes"
                )
