"""``tvm.ir``: the module type ``tvm.lower`` returns, and TVM's IR utilities where tessel has them."""

from __future__ import annotations

from ..ir.expr import PrimExpr, Range
from ._driver import IRModule
from ._names import missing_names

__all__ = ["IRModule", "PrimExpr", "Range"]

# save_json/load_json and the other IR utilities come from tessel.ir when it offers them
__getattr__ = missing_names(__name__, ("tessel.ir",))
