"""The front end: *what* to compute, as tensor expressions."""

from ..ir.expr import IterVar, Range, Reduce, Var
from . import ir_builder
from .extern_op import ExternOp, call_extern, call_packed, call_pure_extern, decl_buffer, extern
from .intrin import *
from .intrin import (
    _FLOAT_UNARY,
    abs,
    all,
    any,
    cast,
    const,
    div,
    if_then_else,
    popcount,
    pow,
    select,
    size_var,
    var,
)
from .reduce import Reducer, comm_reducer, max, max_value, min, min_value, reduce_axis, sum, thread_axis
from .tensor import ComputeOp, Operation, PlaceholderOp, Tensor, compute, placeholder
from .tensor_intrin import TensorIntrin, decl_tensor_intrin


def create_schedule(ops):
    from ..schedule import create_schedule as _cs

    return _cs(ops)


__all__ = [
    "ComputeOp", "ExternOp", "ir_builder", "IterVar", "TensorIntrin", "decl_tensor_intrin", "Operation", "PlaceholderOp", "Range", "Reduce", "Reducer", "Tensor", "Var",
    "abs", "all", "any", "call_extern", "call_packed", "call_pure_extern", "cast", "decl_buffer", "extern",
    "popcount", "comm_reducer", "compute", "const", "create_schedule", "div",
    "if_then_else", "max", "max_value", "min", "min_value", "placeholder", "pow", "reduce_axis",
    "select", "size_var", "sum", "thread_axis", "var",
    "floordiv", "floormod", "truncdiv", "truncmod", "indexdiv", "indexmod", "fmod", "isnan", "power",
    *_FLOAT_UNARY,
]
