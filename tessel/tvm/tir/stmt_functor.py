"""``tvm.tir.stmt_functor``: walking and rewriting IR, with tessel's visitor (:mod:`tessel.ir.functor`)."""

from __future__ import annotations

from ...ir.functor import ir_transform, post_order_visit, substitute
from .._names import missing_names

__all__ = ["ir_transform", "post_order_visit", "substitute"]

__getattr__ = missing_names(__name__, ("tessel.ir.functor",))
