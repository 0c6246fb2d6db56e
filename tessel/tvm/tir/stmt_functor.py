"""``tvm.tir.stmt_functor``: walking and rewriting IR, with tessel's visitor (:mod:`tessel.ir.functor`)."""

from __future__ import annotations

from ...ir.functor import post_order_visit, substitute
from .._names import missing_names

__all__ = ["post_order_visit", "substitute"]

__getattr__ = missing_names(__name__, ("tessel.ir.functor",))
