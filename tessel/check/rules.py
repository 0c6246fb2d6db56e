"""Every rule of a schedule in the order they can be judged, and the checker a schedule asks.

The tree rules come first (``schedule.legality``): while one is broken there is no tree, so no
InferBound and no polyhedral model. Then ``bind``'s rules on extents (InferBound's), then the
dependences of the program's order and of annotated loops (the model's). A rule later in the
list is judged only when the earlier ones hold, so each refusal speaks of a schedule that the
layers before it could derive.
"""

from __future__ import annotations

from typing import Any

import islpy as isl

from ..ir import expr as E
from ..poly.analysis import analysis
from ..schedule.legality import tree_violations
from ..schedule.schedule import Schedule
from ..schedule.stage import Stage
from ..schedule.violation import Violation
from .commands import check_command
from .dependences import annotation_rule, carried_words, order_rule
from .threads import thread_extent_violations


def find_violations(sch: Schedule, propose: bool = True) -> list[Violation]:
    """Every broken rule, the ones that keep the tree from being built first."""
    out = tree_violations(sch, propose)
    if not out:  # the tree is well formed: InferBound and the polyhedral model can be built from it
        out.extend(thread_extent_violations(sch, propose))
    if not out:
        out.extend(order_rule(sch, propose))
    if not out:
        out.extend(annotation_rule(sch, propose))
    return out


def verify(sch: Schedule) -> None:
    """Raise a ScheduleError for the first broken rule (all are in ``s.violations()``)."""
    found = find_violations(sch)
    if found:
        raise found[0].error(len(found) - 1)


class Checks:
    """The :class:`~tessel.schedule.checking.Checker` of tessel's schedules."""

    def violations(self, sch: Schedule, propose: bool = True) -> list[Violation]:
        return find_violations(sch, propose)

    def after_command(self, sch: Schedule, stage: Stage, command: Any) -> None:
        try:
            check_command(sch, stage, command)
        except isl.Error:
            # the model has no meaning while a tree rule is broken (a stage attached where a reader
            # cannot see it): that is refused at build, and the dependences checked once it is not
            if find_violations(sch, propose=False):
                return
            raise

    def carried(self, sch: Schedule, stage: Stage, iv: E.IterVar) -> str:
        return carried_words(sch, stage, iv)

    def dependences(self, sch: Schedule) -> list:
        return list(analysis(sch).dependences)


__all__ = ["Checks", "find_violations", "verify"]
