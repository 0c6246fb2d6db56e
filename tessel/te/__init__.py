"""The front end: *what* to compute, as tensor expressions."""

from ..ir.expr import IterVar, Range, Reduce, Var
from .autodiff import gradient
from .intrin import *
from .intrin import _FLOAT_UNARY, abs, all, any, cast, const, div, if_then_else, pow, select, size_var, var
from .operation import TensorList
from .reduce import Reducer, comm_reducer, max, max_value, min, min_value, reduce_axis, sum, thread_axis
from .scan import ScanOp, scan
from .tensor import ComputeOp, Operation, PlaceholderOp, Tensor, TensorSlice, compute, placeholder


def create_schedule(ops):
    from ..schedule import create_schedule as _cs

    return _cs(ops)


__all__ = [
    "ComputeOp", "IterVar", "Operation", "PlaceholderOp", "Range", "Reduce", "Reducer", "Tensor", "TensorList",
    "TensorSlice", "Var",
    "abs", "all", "any", "cast", "comm_reducer", "compute", "const", "create_schedule", "div", "gradient",
    "if_then_else", "max", "max_value", "min", "min_value", "placeholder", "pow", "reduce_axis",
    "scan", "ScanOp", "select", "size_var", "sum", "thread_axis", "var",
    "floordiv", "floormod", "truncdiv", "truncmod", "indexdiv", "indexmod", "fmod", "isnan", "power",
    *_FLOAT_UNARY,
]
