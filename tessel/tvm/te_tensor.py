"""``tvm.te.tensor``: the tensor and operation classes, which are tessel's own (``isinstance``
against them is what TVM's tests ask of a loaded or built tensor)."""

from __future__ import annotations

from ..te.extern_op import ExternOp
from ..te.operation import Operation
from ..te.scan import ScanOp
from ..te.tensor import ComputeOp, PlaceholderOp, Tensor, TensorSlice
from ..te.tensor_compute import TensorComputeOp, TensorIntrinCall
from ._names import missing_names

__all__ = ["ComputeOp", "ExternOp", "Operation", "PlaceholderOp", "ScanOp", "Tensor", "TensorComputeOp", "TensorIntrinCall", "TensorSlice"]

__getattr__ = missing_names(__name__, ("tessel.te",))
