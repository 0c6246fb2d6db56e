"""``tvm.ir``: the module type ``tvm.lower`` returns, and TVM's IR utilities where tessel has them."""

from __future__ import annotations

from ..errors import NotOfferedError
from ..ir import functor
from ..ir.expr import PrimExpr, Range
from ._driver import IRModule
from ._names import missing_names
from .runtime import convert

__all__ = ["IRModule", "PrimExpr", "Range", "structural_equal"]


def _node(x):
    x = convert(x)
    return tuple(_node(v) for v in x) if isinstance(x, list | tuple) else x


def structural_equal(lhs, rhs, map_free_vars: bool = False) -> bool:
    """TVM's ``tvm.ir.structural_equal``: tessel's, after Python numbers and lists are converted
    as TVM converts them (``structural_equal(r.extent, 16)``)."""
    if map_free_vars:
        raise NotOfferedError("tvm.ir.structural_equal(map_free_vars=True): tessel compares variables by "
                              "identity; substitute one side's variables by the other's first")
    return functor.structural_equal(_node(lhs), _node(rhs))

# save_json/load_json and the other IR utilities come from tessel.ir when it offers them
__getattr__ = missing_names(__name__, ("tessel.ir",))
