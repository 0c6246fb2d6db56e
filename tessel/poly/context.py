"""What is known of the symbolic sizes before any instance runs: the model's context.

Every size a tensor is declared with is at least zero; a user's assumptions
(``s.assume("n % 8 == 0")``) add theirs. isl then answers questions (emptiness, dependences,
out-of-bounds witnesses) only for sizes a call can have.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import islpy as isl

from ..ir import expr as E
from ..ir.functor import collect
from ..schedule.schedule import Schedule
from .space import Converter, NotAffine, set_space

if TYPE_CHECKING:
    from .model import _Builder


def size_vars(sch: Schedule, extra: Iterable[E.PrimExpr] = ()) -> list[E.Var]:
    """The symbolic sizes: free variables of shapes, declared domains and ``extra`` (ranges)
    that are no stage's loop, in order of appearance."""
    loops = {iv.var for st in sch.stages for iv in st.all_iter_vars}
    exprs = [n for st in sch.stages for t in st.op.outputs for n in t.shape]
    exprs += [x for st in sch.stages for iv in st.all_iter_vars if iv.dom is not None
              for x in (iv.dom.min, iv.dom.extent)]
    found: dict[E.Var, None] = {}
    for e in [*exprs, *extra]:
        for v in collect(e, lambda n: isinstance(n, E.Var)):
            if v not in loops:
                found.setdefault(v, None)
    return list(found)


def context_conditions(sch: Schedule) -> list[E.PrimExpr]:
    """What holds of the sizes for any call: every symbolic dimension is at least zero, and the
    user's assumptions."""
    out = [E.ge(n, 0) for st in sch.stages for t in st.op.outputs for n in t.shape if not isinstance(n, E.IntImm)]
    return out + sch.assumption_exprs()


def params_converter(b: _Builder) -> Converter:
    space = set_space([], b.pnames)
    return Converter(space, {}, {v: k for k, v in enumerate(b.params)})


def context_of(b: _Builder) -> isl.Set:
    conv = params_converter(b)
    ctx = isl.Set.universe(conv.space)
    for cond in context_conditions(b.sch):
        try:
            ctx = ctx.intersect(conv.set(cond))
        except NotAffine:
            continue
    return ctx.coalesce()


__all__ = ["context_conditions", "context_of", "params_converter", "size_vars"]
