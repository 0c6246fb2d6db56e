"""``tvm.topi``: TVM's operator library, in tessel's own words (each operator a ``te.compute``).

What TE programs reach for most: elementwise operators with NumPy's broadcasting
(``add``, ``subtract``, ``multiply``, ``divide``, ``maximum``, ``minimum``, ``power``), the
unary math functions, reductions over axes (``sum``, ``max``, ``min``, ``prod``) and
``nn`` (``relu``, ``pad``, ``conv2d_nchw``, ``conv2d_hwcn``, ``dense``, ``softmax``), with
``generic``'s schedules (a plain schedule of the outputs, which tessel's own primitives or
``tessel.auto_schedule`` then shape). Every operator is an ordinary stage: it can be scheduled,
auto-scheduled and differentiated like any other. The rest of TVM's ``topi`` is not here yet
and is refused by name.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence

from ...errors import DefinitionError
from ...ir import expr as E
from ...te import compute, reduce_axis
from ...te import max as _max_reduce
from ...te import min as _min_reduce
from ...te import power as _power
from ...te import sum as _sum_reduce
from ...te.tensor import broadcast_op, broadcast_shape
from .._names import missing_names
from . import cuda, generic, nn, tag, utils


def _binary(fn, name: str):
    def op(lhs, rhs):
        return broadcast_op(fn, lhs, rhs, name)

    op.__name__ = name
    op.__doc__ = f"``{name}`` of two tensors (or a tensor and a scalar), broadcast as NumPy does."
    return op


add = _binary(lambda a, b: a + b, "add")
subtract = _binary(lambda a, b: a - b, "subtract")
multiply = _binary(lambda a, b: a * b, "multiply")
divide = _binary(lambda a, b: a / b, "divide")
maximum = _binary(E.max_, "maximum")
minimum = _binary(E.min_, "minimum")
power = _binary(lambda a, b: _power(a, b), "power")


def _unary(fname: str):
    from ... import te as _te

    fn = getattr(_te, fname)

    def op(x):
        return compute(x.shape, lambda *i: fn(x[i]), name=f"T_{fname}", tag="elemwise")

    op.__name__ = fname
    return op


exp, log, sqrt, tanh, sigmoid = (_unary(n) for n in ("exp", "log", "sqrt", "tanh", "sigmoid"))


def negative(x):
    return compute(x.shape, lambda *i: -x[i], name="T_negative", tag="elemwise")


def _reduce(reducer, name: str):
    def op(data, axis=None, keepdims: bool = False):
        n = len(data.shape)
        axes = list(range(n)) if axis is None else [a % n for a in ([axis] if isinstance(axis, int) else axis)]
        kept = [k for k in range(n) if k not in axes]
        shape = [E.IntImm(1, "int32") if k in axes else data.shape[k] for k in range(n)] if keepdims \
            else [data.shape[k] for k in kept]
        rs = [reduce_axis((0, data.shape[k]), name=f"k{k}") for k in axes]

        def body(*idx):
            out_idx = list(idx)
            full, r = [], iter(rs)
            for k in range(n):
                if k in axes:
                    full.append(next(r))
                    if keepdims:
                        out_idx.pop(0)
                else:
                    full.append(out_idx.pop(0))
            return reducer(data[tuple(full)], axis=rs)

        return compute(tuple(shape), body, name=f"T_{name}", tag="comm_reduce")

    op.__name__ = name
    op.__doc__ = f"``{name}`` over ``axis`` (all axes when None), as NumPy's ``{name}``."
    return op


sum = _reduce(_sum_reduce, "sum")
max = _reduce(_max_reduce, "max")
min = _reduce(_min_reduce, "min")

__all__ = ["add", "broadcast_shape", "divide", "cuda", "exp", "generic", "log", "max", "maximum", "min", "minimum", "multiply",
           "negative", "nn", "power", "sigmoid", "sqrt", "subtract", "sum", "tag", "tanh", "utils"]

__getattr__ = missing_names(__name__)
