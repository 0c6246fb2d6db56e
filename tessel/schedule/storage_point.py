"""A stage stored at one loop and computed at a deeper one (nvFuser's separate allocation and
compute points): ``Placement.store``.

Two things need it, both nvFuser's and both seed 003's loop sharing taken one loop further:

* **Two reductions sharing one reduction loop** (nvFuser's ReductionMultiConsumer): ``t2 =
  max(t1[i, r])`` and ``t3 = min(t1[i, r])`` with ``t1`` computed inside the reduction loop.
  ``t1`` is then computed once per ``(i, r)`` only if ``t3`` runs its update inside ``t2``'s
  loop ``r``; its init cannot run there (it would start the minimum over on every ``r``), so
  ``t3`` is *stored* at the loop around ``r`` (the row loop both share), where its init runs,
  and *computed* (its update) at ``t2``'s ``r``. :func:`share_reduction_loop` makes that
  placement when a position primitive finds two readers of a stage running its loop as two
  reduction loops.
* **``compute_with``** (nvFuser's ComputeWith1): a stage computed inside a reader's loops
  deeper than its position, its storage kept at the position so its other readers still see
  all of it (:func:`compute_with`).

Either way the stage's outer loops are its hosts' (``Placement.shared``, exactly, as lowering
requires), its storage is the slice of the loops outside the store point
(``bound.shared.stored_leaves``), and its readers outside the compute loop run after that loop
(``bound.infer.stage_order``), inside the storage (the schedule tree's ``storage``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..ir import expr as E
from ..ir.stmt import LoopKind
from .kinds import ROOT, SCOPE, Placement

if TYPE_CHECKING:
    from .stage import Stage


def share_reduction_loop(x: Stage, xl: E.IterVar, h: Stage, hl: E.IterVar) -> bool:
    """Make ``x`` compute its reduction loop ``xl`` as ``h``'s reduction loop ``hl``, its init
    (and storage) at the loop around it; True when done. Both must be the first loop after the
    loops the two already share (the same loops, exactly), over the same values; ``x`` a
    reduction whose value is its accumulator (no ``finish``), in a serial loop."""
    from .compute_at_pos import exact_share, host_loops_around, real_loop

    sch = x.schedule
    if x is h or not (xl.is_reduce and hl.is_reduce) or not _plain_reduction(x):
        return False
    p = next((k for k, iv in enumerate(x.leaf_iter_vars) if iv is xl), None)
    if p is None or any(iv.is_reduce for iv in x.leaf_iter_vars[:p]) or not any(hl is iv for iv in h.leaf_iter_vars):
        return False
    around = [lent for _, lent in host_loops_around(h, hl)][:-1]
    mine = [x.shared_loops.get(iv) for iv in x.leaf_iter_vars[:p]]
    if len(around) != p or any(m is None for m in mine):
        return False
    if any(real_loop(sch, m) is not real_loop(sch, a) for m, a in zip(mine, around)):
        return False
    if p == 0 and not (x.attach_type == ROOT and h.attach_type == ROOT):
        return False
    if p and (x.attach_type != SCOPE or real_loop(sch, x.attach_ivar) is not real_loop(sch, around[-1])):
        return False
    if x.leaf_kind(xl) not in (LoopKind.SERIAL, LoopKind.UNROLLED) or not exact_share(x, xl, h, hl):
        return False
    store = (real_loop(sch, around[-1]),) if p else ()
    shared = (*zip(x.leaf_iter_vars[:p], mine), (xl, hl))
    x.placement = Placement(SCOPE, h, hl, shared, x.compute_at_pos, store)
    return True


def _plain_reduction(st: Stage) -> bool:
    """A te.compute reduction whose stored value is its accumulator (no ``finish`` step after
    the loop), so its init and update are all there is to place."""
    from ..te.tensor import ComputeOp

    op = st.op
    return isinstance(op, ComputeOp) and op.is_reduction and getattr(op.body[0], "finish", None) is None \
        and st.store_predicate is None and not st.commands and st.storage is None


__all__ = ["share_reduction_loop"]
