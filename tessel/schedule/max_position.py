"""The inliner's own limits on a position (nvFuser's ``MaxPosCalculator``), beside the ones any
position primitive has (``compute_at_pos.self_limit``: reduction, vectorized and unmappable
loops; a reader without the loop):

* **uninlinable axes** -- loops the caller names (``s.inline_most(uninlinable=[...])``): no
  stage is computed inside one, of its own or of a reader's (nvFuser's ``uninlinable_ids``,
  which its schedulers use to keep a persistent buffer's inner loops apart);
* **unrolled loops block best effort** -- an unrolled loop of the stage or the reader's loop it
  would share stops ``best_effort`` and ``most_inlined`` (nvFuser's InlineRepro1803: a Welford
  read inside an unrolled loop stays outside it); standard mode may still ask for one.

``inlining.max_position`` answers the deepest position ``inline_at(-1, best_effort=True)`` would give,
without applying it (nvFuser's ``getMaxPosAll``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..ir.stmt import LoopKind
from .promises import Refusal
from .transform_replay import leaf_images

if TYPE_CHECKING:
    from .axis_map import Graph
    from .stage import Stage


def inliner_limit(g: Graph, st: Stage, want: int, best_effort: bool, uninlinable: frozenset[int]) -> Refusal | None:
    """The first of ``st``'s first ``want`` loops the inliner may not share, and why."""
    if not uninlinable and not best_effort:
        return None
    readers = [(c, leaf_images(st, c, dict(g.map(st, c).p2c))) for c in g.consumers[id(st)]]
    for k, iv in enumerate(st.leaf_iter_vars[:want]):
        for who, loop in [(st, iv)] + [(c, m.get(iv)) for c, m in readers]:
            if loop is None or not any(loop is x for x in who.leaf_iter_vars):
                continue
            if id(loop) in uninlinable:
                return Refusal("UNMAPPABLE_AXIS", st, f"{who.name}'s loop {loop.name} is uninlinable, as the caller "
                               f"asked", k, (st, who), (loop,))
            if best_effort and who.leaf_kind(loop) == LoopKind.UNROLLED:
                return Refusal("UNMAPPABLE_AXIS", st, f"{who.name}'s loop {loop.name} is unrolled; best effort does "
                               f"not compute {st.name} inside an unrolled loop (nvFuser's rule)", k, (st, who), (loop,))
    return None


__all__ = ["inliner_limit"]
