"""How much straight-line code an unrolled loop nest may become, and the error past that.

An unrolled loop is copied once per iteration, so nested unrolls multiply: three nested
40-way unrolls are 64,000 copies of the body, and the C compiler's time and memory grow faster
than the code (GCC took 22 s on one 4096-way unroll and ran out of memory on the 40^3 nest).
So the *straight-line size* of an unrolled loop, the product of the extents of the nested
unrolled loops times the statements of the body inside them (a loop that stays a loop counts
its body once), may be at most ``tunables.max_unroll_statements``. Past it the schedule is
refused with a ScheduleError naming the stage and loop and proposing a split, whose inner
loop (which keeps the ``unroll``) fits. ``unroll()`` checks a loop whose extent it already
knows; a loop whose extent only InferBound gives (a split's inner loop) is checked when the
schedule is lowered.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import ScheduleError
from ..ir import expr as E
from ..ir.stmt import LoopKind
from ..tunables import current

if TYPE_CHECKING:
    from .stage import Stage

def unroll_limit_error(stage: Stage, iv: E.IterVar, extent: int, body: int) -> ScheduleError:
    """The error for unrolling ``iv`` (``extent`` copies of a ``body``-statement body); the fix
    is a split, which hands the unroll to the inner loop."""
    from .fixes import Names

    names = Names(stage.schedule)
    st, axis = names.stage(stage), names.axis(stage, iv)
    factor = _split_factor(extent, body)
    explanation = (
        f"stage {stage.name}: unrolling loop {iv.name} ({extent} iterations of a body of {body} "
        f"statement(s), its own unrolled loops included) makes {extent * body} statements of "
        f"straight-line code, over the limit of {current().max_unroll_statements} "
        "(tessel.tunables: max_unroll_statements), past which the C compiler's time "
        "and memory explode; "
    )
    if factor >= 2:
        fix = f"s[{st}].split({axis}, factor={factor})"
        explanation += f"split the loop: its inner loop of {factor} iterations keeps the unroll"
    else:
        fix = None
        explanation += "unroll fewer of the loops inside it, or do not unroll this one"
    err = ScheduleError(explanation, fix=fix)
    err.rule = "unroll_limit"  # type: ignore[attr-defined]
    err.fix_names = dict(names.names)  # type: ignore[attr-defined]
    err.stage = stage.name  # type: ignore[attr-defined]
    return err


def _split_factor(extent: int, body: int) -> int:
    """The largest factor that fits, preferring one that divides ``extent``: a split that does
    not divide adds a guard to every copy of the body, which would double its size."""
    limit = current().max_unroll_statements
    fits = [f for f in range(2, min(current().max_unroll_factor, extent - 1) + 1) if f * body <= limit]
    exact = [f for f in fits if extent % f == 0]
    if exact:
        return exact[-1]
    guarded = [f for f in fits if f * 2 * body <= limit]
    return guarded[-1] if guarded else 1


def unrolled_owner(stages, var: E.Var) -> tuple[Stage, E.IterVar] | None:
    """The stage and leaf IterVar whose loop variable is ``var``, if the user unrolled it."""
    for st in stages:
        for iv in st.leaf_iter_vars:
            attr = st.iter_var_attrs.get(iv)
            if iv.var is var and attr is not None and attr.kind == LoopKind.UNROLLED:
                return st, iv
    return None


__all__ = ["unroll_limit_error", "unrolled_owner"]
