"""``tvm.arith``: TVM's integer analyses, which are tessel's (:mod:`tessel.arith`): an
``Analyzer`` that simplifies and proves (``simplify``, ``can_prove``, ``bind``), interval sets."""

from __future__ import annotations

from ..arith import Analyzer, IntSet
from ._names import missing_names

__all__ = ["Analyzer", "IntSet"]

__getattr__ = missing_names(__name__, ("tessel.arith",))
