"""The rules judged on the exact dependences of the polyhedral model (seed 004).

Once the tree rules hold, the model can be built, and two more rules are decided on it: the
final schedule keeps every dependence of the program's order (``order_rule``; each command was
checked when given too, by ``commands.check_command``), and a ``parallel`` or ``vectorize`` loop
carries no dependence, an ``unroll`` loop has a constant extent (``annotation_rule``). Each
judgement is remembered per state of the schedule (``poly.analysis.remember_clean``): a build
verifies more than once.
"""

from __future__ import annotations

from ..arith import Analyzer
from ..errors import TesselError
from ..ir import expr as E
from ..ir.stmt import LoopKind
from ..poly.analysis import analysis, known_clean, remember_clean
from ..schedule.commands import has_commands
from ..schedule.fixes import Fix, FixBuilder, Names, choose
from ..schedule.schedule import Schedule
from ..schedule.stage import Stage
from ..schedule.violation import Violation, ViolationKind
from .commands import order_violations
from .proposals import wavefront


def order_rule(sch: Schedule, propose: bool) -> list[Violation]:
    """The final schedule keeps every dependence of the program's order, whatever made it (TE
    primitives, positions, commands, storage); each command was checked when given too, but a
    primitive applied after it could still break one. Judged once per state of the schedule
    (a build verifies more than once); without commands or storage no loop order changes a value
    (``poly.order.order_conflicts``), and a recurrence's order is judged on its reads (``recurrence.py``)."""
    if not has_commands(sch):
        return []
    if known_clean(sch, "order"):
        return []
    try:
        found = order_violations(sch, propose)
    except TesselError:  # the model cannot be built: lowering reports why
        return []
    if not found:
        remember_clean(sch, "order")
    return found


def annotation_rule(sch: Schedule, propose: bool) -> list[Violation]:
    """Seed 004: ``parallel``/``vectorize`` are legal on a loop iff it carries no dependence
    (decided exactly on the polyhedral model), ``unroll`` iff its extent is a constant."""
    todo = [(st, iv, a.kind) for st in sch.stages for iv, a in st.iter_var_attrs.items()
            if a.kind in (LoopKind.PARALLEL, LoopKind.VECTORIZED, LoopKind.UNROLLED) and any(iv is x for x in st.leaf_iter_vars)
            and not (iv.is_reduce and a.kind != LoopKind.UNROLLED)]  # a reduction loop has its own rule
    if not todo:
        return []
    if known_clean(sch, "annotations"):  # an identical schedule was judged already (a cached build)
        return []
    found = analysis(sch)
    try:
        found.model  # noqa: B018 -- InferBound and the model; what fails here, lowering reports
    except TesselError:
        return []
    out: list[Violation] = []
    for st, iv, kind in todo:
        if kind == LoopKind.UNROLLED:
            ext = found.model.ranges.get(iv)
            # a constant, or at most one (a split's inner loop cut to its parent: min(n, 4))
            if ext is None or Analyzer().const_int_bound(ext.extent)[1] is not None:
                continue
            text = (f"stage {st.name}: cannot unroll {iv.name}: its extent {ext.extent} has no constant bound, "
                    f"so there is no fixed number of copies to make; split it by a constant factor and unroll "
                    f"the inner loop, or leave it a loop")
            v = Violation(ViolationKind.SYMBOLIC_UNROLL, st, text, (st,), (iv,))
        else:
            got = found.carried(st, iv)
            if got is None:
                continue
            dep, part = got
            verb = "parallelize" if kind == LoopKind.PARALLEL else "vectorize"
            text = (f"stage {st.name}: cannot {verb} {iv.name}: it carries the {dep.describe(part)}; its "
                    f"iterations must run in order. Annotate a loop that carries no dependence instead")
            v = Violation(ViolationKind.CARRIED_DEPENDENCE, st, text, (st,), (iv,))
            v.dependence = dep  # type: ignore[attr-defined]
        fixes: list = [FixBuilder(Names(sch)).drop_annotation(st, iv)]
        if kind == LoopKind.PARALLEL and propose:  # a wavefront: the loop outside it skewed to carry everything
            fixes[0:0] = _wavefront(sch, st, iv)
        if kind == LoopKind.UNROLLED:  # the inner loop of a split by a constant keeps the unroll, bounded
            fixes.insert(0, FixBuilder(Names(sch)).split(st, iv, 8))
        out.append(choose(sch, v, fixes) if propose else v)
    if not out:
        remember_clean(sch, "annotations")
    return out


class _Ready:
    """A fix already built and checked (by ``proposals.py``), as a candidate for ``choose``."""

    def __init__(self, fix: Fix):
        self.fix = fix

    def build(self) -> Fix:
        return self.fix


def _wavefront(sch: Schedule, st: Stage, iv: E.IterVar) -> list:
    """The skew of the loop just outside ``iv`` with it after which ``iv`` carries nothing."""
    k = next((n for n, x in enumerate(st.leaf_iter_vars) if x is iv), 0)
    if k == 0:
        return []
    try:
        p = wavefront(sch, st, st.leaf_iter_vars[k - 1], iv, parallel=False)
    except TesselError:
        return []
    return [_Ready(p.fix)] if p.possible and p.fix is not None and p.steps else []


def carried_words(sch: Schedule, st: Stage, iv: E.IterVar) -> str:
    """The dependence loop ``iv`` of ``st`` carries, in words; "" when none or when the model
    cannot be built (a schedule broken otherwise too: the rule asking stands on its own)."""
    try:
        got = analysis(sch).carried(st, iv)
    except TesselError:
        return ""
    return "" if got is None else got[0].describe(got[1])


__all__ = ["annotation_rule", "carried_words", "order_rule"]
