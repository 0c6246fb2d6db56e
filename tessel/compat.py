"""The TVM-0.6-era spellings, so that ``import tessel as tvm`` runs the seeds' programs verbatim.

Before TVM moved tensor expressions into ``tvm.te``, they lived at the top level
(``tvm.placeholder``, ``tvm.compute``, ``tvm.create_schedule``, ``tvm.sum`` ...), and that is
how the seed documents and years of tutorials write them. These are the same functions as in
:mod:`tessel.te`, re-exported under the old names; nothing here has behaviour of its own.
"""

from __future__ import annotations

from .te import (
    abs,
    all,
    any,
    ceil,
    comm_reducer,
    compute,
    const,
    cos,
    div,
    erf,
    exp,
    exp2,
    exp10,
    floor,
    floordiv,
    floormod,
    if_then_else,
    indexdiv,
    indexmod,
    isnan,
    log,
    log1p,
    log2,
    log10,
    max,
    max_value,
    min,
    min_value,
    placeholder,
    pow,
    power,
    reduce_axis,
    round,
    rsqrt,
    select,
    sigmoid,
    sin,
    size_var,
    sqrt,
    sum,
    tan,
    tanh,
    thread_axis,
    trunc,
    truncdiv,
    truncmod,
    var,
)
from .te.intrin import cast


def create_schedule(ops):
    """``tvm.create_schedule(C.op)``: a default schedule for one operation or a list of them."""
    from .schedule import create_schedule as _create

    return _create(ops)


__all__ = [
    "abs", "all", "any", "cast", "ceil", "comm_reducer", "compute", "const", "cos", "create_schedule", "div",
    "erf", "exp", "exp2", "exp10", "floor", "floordiv", "floormod", "if_then_else", "indexdiv", "indexmod",
    "isnan", "log", "log1p", "log2", "log10", "max", "max_value", "min", "min_value", "placeholder", "pow",
    "power", "reduce_axis", "round", "rsqrt", "select", "sigmoid", "sin", "size_var", "sqrt", "sum", "tan",
    "tanh", "thread_axis", "trunc", "truncdiv", "truncmod", "var",
]
