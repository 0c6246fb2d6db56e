"""The front end: *what* to compute, as tensor expressions."""

from ..ir.expr import IterVar, Range, Reduce, Var
from . import ir_builder
from .autodiff import gradient
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
from .operation import TensorList
from .recurrence import Definition, DefinitionOp, define, recurrence
from .reduce import (
    Reducer,
    argmax,
    argmin,
    comm_reducer,
    max,
    max_value,
    min,
    min_value,
    reduce_axis,
    sum,
    thread_axis,
)
from .scan import ScanOp, scan
from .tag import TagScope, tag_scope
from .tensor import ComputeOp, Operation, PlaceholderOp, Tensor, TensorSlice, compute, placeholder
from .tensor_compute import TensorComputeOp, TensorIntrinCall
from .tensor_intrin import TensorIntrin, decl_tensor_intrin


def create_schedule(ops):
    from ..schedule import create_schedule as _cs

    return _cs(ops)


__all__ = [
    "ComputeOp", "ExternOp", "IterVar", "Operation", "PlaceholderOp", "Range", "Reduce", "Reducer", "Tensor",
    "TensorComputeOp", "TensorIntrin", "TensorIntrinCall", "TensorList", "TensorSlice", "Var",
    "abs", "all", "any", "argmax", "argmin", "call_extern", "call_packed", "call_pure_extern", "cast", "comm_reducer", "compute",
    "const", "create_schedule", "decl_buffer", "decl_tensor_intrin", "div", "extern", "gradient", "ir_builder",
    "popcount",
    "if_then_else", "max", "max_value", "min", "min_value", "placeholder", "pow", "reduce_axis",
    "scan", "ScanOp", "tag_scope", "TagScope", "Definition", "DefinitionOp", "define", "recurrence", "select", "size_var", "sum", "thread_axis", "var",
    "floordiv", "floormod", "truncdiv", "truncmod", "indexdiv", "indexmod", "fmod", "isnan", "power",
    *_FLOAT_UNARY,
]
