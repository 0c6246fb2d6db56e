"""Reads outside a tensor, found before any code runs.

A compute body that reads ``A[i + 1]`` over ``i`` in ``[0, n)`` asks for an element ``A`` does
not have. Nothing later would notice: native code would read past the caller's array (or a
producer's uninitialised storage) and return garbage. The check evaluates every unguarded
index over the reading stage's whole domain and refuses the program when the interval provably
leaves the tensor's shape. Reads under ``if_then_else``/``select`` or a reduction's ``where``
are the user's way of saying "only when in range" and are not checked.
"""

from __future__ import annotations

from ..arith import Analyzer, IntSet, eval_set
from ..errors import BoundError
from ..ir import expr as E
from ..ir import op as O
from ..ir.functor import Visitor
from ..schedule.schedule import Schedule
from ..schedule.stage import INLINE


class _Unguarded(Visitor):
    def __init__(self) -> None:
        self.loads: list[E.ProducerLoad] = []

    def visit_ProducerLoad(self, e: E.ProducerLoad) -> None:
        self.loads.append(e)
        self.generic_visit(e)

    def visit_Select(self, e: E.Select) -> None:
        self.visit(e.condition)

    def visit_Call(self, e: E.Call) -> None:
        if e.op == "if_then_else":
            self.visit(e.args[0])
        else:
            self.generic_visit(e)

    def visit_Reduce(self, e: E.Reduce) -> None:
        self.visit(e.condition)
        if isinstance(e.condition, E.IntImm) and e.condition.value:
            for s in e.source:
                self.visit(s)


def check_reads_in_bounds(sch: Schedule, bodies: dict) -> None:
    ana = Analyzer()
    for st in sch.stages:
        if st.attach_type == INLINE or st.is_placeholder:
            continue
        dom = {iv.var: IntSet.from_range(iv.dom) for iv in st.op.root_iter_vars if iv.dom is not None}
        v = _Unguarded()
        for b in bodies[st.op]:
            v.visit(b)
        for load in v.loads:
            t = load.producer
            for k, (idx, size) in enumerate(zip(load.indices, t.shape)):
                s = eval_set(ana.simplify(idx), dom)
                lo, hi = s.min_value, s.max_value
                below = lo is not None and ana.can_prove(O.lt(lo, 0))
                above = hi is not None and ana.can_prove(O.ge(hi, size))
                if below or above:
                    shown = ", ".join(str(i) for i in load.indices)
                    raise BoundError(
                        f"stage {st.name} reads {t.name}[{shown}] outside {t.name}'s shape "
                        f"({', '.join(str(x) for x in t.shape)}): over {st.name}'s domain, index {k} "
                        f"ranges over [{lo}, {hi}] but must stay within [0, {size} - 1]; shrink "
                        f"{st.name}'s shape, or guard the read with te.if_then_else(cond, {t.name}[...], value)"
                    )
