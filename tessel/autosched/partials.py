"""A row reduction in vector partials: the one way tessel's schedules (``auto_schedule``'s rules
and the hand schedules of ``examples/``) reassociate a row reduction so that it vectorizes.

The reduction is split by ``v`` and its inner part factored out (``rfactor``): ``v`` partial
results in vector lanes, several whole vectors of them so that a row in L1 is reduced at the
pipes' pace rather than the add latency's (``tiles.reduction_lanes``). What is left is to
combine the ``v`` partials into the row's result, and done lane by lane that is a chain of
``v`` dependent scalar steps per row: with 128 partials (AVX-512) about 512 cycles of add
latency for a 16 KiB row that memory delivers in about 2500, a fifth of a row sum's time.
So where ``v`` is several vectors, the partials are first combined a vector at a time into
one vector of ``lanes`` partials (a second ``rfactor``: ``v / lanes`` vector steps), and only
those are combined lane by lane (Zen 5, 4096 x 4096 row sum, one thread, CPU time: 0.9x
PyTorch's speed with the 128-step chain, 1.05-1.1x with the two levels).

The order of the combine changes (a reassociation, as the first ``rfactor`` already is): for a
sum the result is as close to the exact sum as before (a tree is never worse than the chain);
an argmax's combine is order-free (ties broken by the index), so its answer is the same.
"""

from __future__ import annotations

from ..ir import expr as E
from ..schedule.schedule import Schedule
from ..te.tensor import Tensor


def _one(rf) -> Tensor:
    return rf[0] if isinstance(rf, list | tuple) else rf  # an argmax's partials: one stage, two outputs


def factor(s: Schedule, R: Tensor, v: int, lanes: int = 0) -> list[Tensor]:
    """Split ``R``'s innermost reduction by ``v`` and factor out the inner part; where ``v`` is
    a multiple of ``lanes`` larger than it, factor the combine of those partials again by
    ``lanes``. Returns the stages of partials, first to last (attach them with :func:`attach`)."""
    _, ki = s[R].split(s[R].op.reduce_axis[-1], factor=v)
    out = [_one(s.rfactor(R, ki))]
    if lanes > 1 and v > lanes and v % lanes == 0:
        _, li = s[R].split(s[R].op.reduce_axis[-1], factor=lanes)
        out.append(_one(s.rfactor(R, li)))
        s[R].unroll(s[R].op.reduce_axis[-1])  # the last lanes, straight-line (see attach)
    return out


def attach(s: Schedule, stages: list[Tensor], anchor, at: E.IterVar) -> None:
    """Each stage of partials computed at ``anchor``'s loop ``at``, its reduction outside its
    lanes, the lanes vectorized, in local memory."""
    for level, rf in enumerate(stages):
        st = s[rf]
        st.compute_at(s[anchor], at)
        st.reorder(*st.op.reduce_axis, st.op.axis[0])
        st.vectorize(st.op.axis[0])
        st.set_scope("local")
        if level:  # the few vector steps of the combine, straight-line: the first level's
            st.unroll(st.op.reduce_axis[-1])  # partials are then read at constant offsets, kept in registers


__all__ = ["attach", "factor"]
