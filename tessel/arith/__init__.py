"""Integer reasoning for bound inference, lowering and passes, behind one Analyzer facade.

``simplify`` brings index arithmetic to a canonical, readable form; ``IntSet``/``eval_set``
evaluate index expressions over interval domains with symbolic ends (seed 000);
``Analyzer.const_int_bound`` and ``Analyzer.can_prove`` answer the questions passes ask.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .analyzer import Analyzer
from .canonical import is_index_dtype
from .int_set import IntSet, eval_set, intersect, union


def simplify(e: Any, bounds: Mapping[Any, Any] | None = None) -> Any:
    """``e`` simplified, knowing that each variable of ``bounds`` lies in its Range."""
    ana = Analyzer()
    if bounds:
        ana.bind(dict(bounds))
    return ana.simplify(e)


__all__ = ["Analyzer", "IntSet", "eval_set", "intersect", "is_index_dtype", "simplify", "union"]
