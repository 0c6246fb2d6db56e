"""What is known of the symbolic sizes before any instance runs: the model's context.

Every size a tensor is declared with is at least zero; a user's assumptions
(``s.assume("n % 8 == 0")``) add theirs. isl then answers questions (emptiness, dependences,
out-of-bounds witnesses) only for sizes a call can have.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import islpy as isl

from .space import Converter, NotAffine, set_space

if TYPE_CHECKING:
    from .model import _Builder


def params_converter(b: _Builder) -> Converter:
    space = set_space([], b.pnames)
    return Converter(space, {}, {v: k for k, v in enumerate(b.params)})


def context_of(b: _Builder) -> isl.Set:
    conv = params_converter(b)
    ctx = isl.Set.universe(conv.space)
    for st in b.sch.stages:
        for t in st.op.outputs:
            for n in t.shape:
                try:
                    ctx = ctx.intersect(conv.aff(n).ge_set(conv.const(0)))
                except NotAffine:
                    continue
    for cond in b.sch.assumption_exprs():
        try:
            ctx = ctx.intersect(conv.set(cond))
        except NotAffine:
            continue
    return ctx.coalesce()


__all__ = ["context_of", "params_converter"]
