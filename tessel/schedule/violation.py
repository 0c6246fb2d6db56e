"""A broken rule of a schedule, as data: its kind, the stages and loops involved, the
explanation in the operational model's terms, and a fix as steps (``fixes.py``).

Every rule, wherever it is judged (the tree rules in ``legality.py``, ``bind``'s in
``threads.py``, positions, reducers, and the dependences in ``tessel.check``), reports one of
these, so a refusal reads alike and its fix is applied alike (``err.fix_steps.apply(s)``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

from ..errors import ScheduleError
from ..ir import expr as E

if TYPE_CHECKING:
    from .fixes import Fix
    from .stage import Stage


class ViolationKind(Enum):
    """Which rule is broken; the value is the stable short name (``err.rule``)."""

    INLINED_OUTPUT = "inlined-output"
    ATTACHED_OUTPUT = "attached-output"
    SELF_ATTACHMENT = "self-attachment"
    ATTACHMENT_CYCLE = "attachment-cycle"
    INLINED_TARGET = "inlined-target"
    STALE_ATTACHMENT = "stale-attachment"
    BAD_ATTACHMENT = "bad-attachment"
    ATTACHED_TO_NON_CONSUMER = "attached-to-non-consumer"
    LCA = "lca"
    INIT_ATTACHMENT = "init-attachment"
    SCAN_BODY_PLACEMENT = "scan-body-placement"
    PARALLEL_REDUCTION = "parallel-reduction"
    VECTORIZED_REDUCTION = "vectorized-reduction"
    THREAD_BOUND_TWICE = "thread-bound-twice"
    THREAD_EXTENT_DECLARED = "thread-extent-declared"
    THREAD_TWO_EXTENTS = "thread-two-extents"
    RFACTOR_ORDER_DEPENDENT_REDUCER = "rfactor-order-dependent-reducer"
    CARRIED_DEPENDENCE = "carried-dependence"
    SYMBOLIC_UNROLL = "symbolic-unroll"
    # seed 004's commands: a schedule that runs a dependence's sink before its source
    DEPENDENCE_ORDER = "dependence-order"
    # computeAt by position (seed 003): patterns that would need a stage recomputed
    RECOMPUTE_REDUCTION = "recompute-reduction"
    BROADCAST_TWO_WAYS = "broadcast-two-ways"
    UNMAPPABLE_AXIS = "unmappable-axis"
    FIXED_LOOPS = "fixed-loops"


@dataclass
class Violation:
    """One broken rule: its ``kind``, the ``stage`` at fault, every stage and loop involved,
    the explanation, and the fix as steps (``proposed``; None when no candidate works)."""

    kind: ViolationKind
    stage: Stage
    explanation: str
    stages: tuple[Stage, ...] = ()
    loops: tuple[E.IterVar, ...] = ()
    proposed: Fix | None = None

    @property
    def rule(self) -> str:
        return self.kind.value

    @property
    def fix(self) -> str | None:
        """The fix as code, as a user would type it."""
        return self.proposed.code if self.proposed is not None else None

    @property
    def names(self) -> dict:
        return dict(self.proposed.names) if self.proposed is not None else {}

    def error(self, others: int = 0) -> ScheduleError:
        msg = f"illegal schedule: {self.explanation}"
        if others:
            msg += f"\n  ({others} more problem(s); s.violations() lists them all)"
        err = ScheduleError(msg, explanation=self.explanation, fix=self.fix)
        err.rule = self.rule  # type: ignore[attr-defined]
        err.kind = self.kind  # type: ignore[attr-defined]
        err.fix_names = self.names  # type: ignore[attr-defined]
        err.fix_steps = self.proposed  # type: ignore[attr-defined]
        err.stage = self.stage.name  # type: ignore[attr-defined]
        err.stages = tuple(st.name for st in (self.stages or (self.stage,)))  # type: ignore[attr-defined]
        err.loops = tuple(iv.name for iv in self.loops)  # type: ignore[attr-defined]
        return err


__all__ = ["Violation", "ViolationKind"]
