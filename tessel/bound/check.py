"""Reads outside a tensor, found before any code runs.

A compute body that reads ``A[i + 1]`` over ``i`` in ``[0, n)`` asks for an element ``A`` does
not have. Nothing later would notice: native code would read past the caller's array (or a
producer's uninitialised storage) and return garbage. The check evaluates every unguarded
index over the reading stage's whole domain and refuses the program when the interval provably
leaves the tensor's shape. Reads under ``if_then_else``/``select`` or a reduction's ``where``
are the user's way of saying "only when in range" and are not checked, and so are the reads
of a stage with a declared domain (``where=``), which ``poly/bounds.py`` decides exactly.

A stage whose domain is empty reads nothing, so the check assumes every extent of the domain
is at least 1: with symbolic sizes, ``i*(n - 2) + j`` over ``i < 17, j < n - 2`` stays within
``17*(n - 2)`` only because ``n - 2 >= 1`` whenever it is evaluated at all. Without that
assumption the product's interval reaches down to ``16*(n - 2) < 0`` and a legal program
(a flattened ``cache_write`` of a fused stage, for one) was refused. The index is also
evaluated as written, not only simplified: simplifying distributes ``i*(n - 2)`` into
``i*n - i*2``, whose interval ``[-32, ...]`` loses that both terms share ``i``.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack

from ..arith import Analyzer, IntSet, eval_set
from ..errors import BoundError
from ..ir import expr as E
from ..ir.functor import Visitor
from ..schedule.schedule import Schedule
from ..schedule.stage import Stage


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


def check_reads_in_bounds(sch: Schedule, bodies: dict,
                          select: Callable[[E.ProducerLoad], bool] | None = None) -> None:
    """Refuse a read that intervals place outside its tensor; ``select`` limits the check to
    some reads (the polyhedral check in ``poly/bounds.py`` decides the others exactly)."""
    # a recurrence's states are read at earlier steps (``state[t - 1]``) only for the steps the
    # recurrence runs, which the reading stage's own domain does not say: their first index is
    # the recurrence's to keep in range
    states = {id(t) for st in sch.stages for t in st.op.state_placeholders()}
    ana = Analyzer()
    for st in sch.stages:
        if st.op not in bodies or st.is_placeholder or st.op.where is not None:
            continue  # a declared domain (where=) guards every read, as a select's condition does;
            # ``bodies`` has an inlined stage's own body when its reads are checked as its own
        ivs = [iv for iv in st.op.root_iter_vars if iv.dom is not None]
        dom = {iv.var: IntSet.from_range(iv.dom) for iv in ivs}
        v = _Unguarded()
        for b in bodies[st.op]:
            v.visit(b)
        with ExitStack() as scope:
            for iv in ivs:  # a read happens only if the domain is not empty, at values in it
                scope.enter_context(ana.constraint_scope(E.ge(iv.dom.extent, 1)))
                scope.enter_context(ana.constraint_scope(E.logical_and(
                    E.ge(iv.var, iv.dom.min), E.lt(iv.var, E.add(iv.dom.min, iv.dom.extent)))))
            _check_loads(st, [ld for ld in v.loads if select is None or select(ld)], dom, ana, states)


def _check_loads(st: Stage, loads: list[E.ProducerLoad], dom: dict, ana: Analyzer, states: set[int]) -> None:
    """Refuse the first load of ``st`` whose index provably leaves its tensor (BoundError)."""
    for load in loads:
        t = load.producer
        for k, (idx, size) in enumerate(zip(load.indices, t.shape)):
            if k == 0 and id(t) in states:
                continue
            # both evaluations over-approximate the index's range; each is looser for some
            # forms (see eval_set), so refuse only what both place outside the shape
            below = above = True
            for s in (eval_set(idx, dom, ana), eval_set(idx, dom, ana, presimplify=False)):
                lo, hi = s.min_value, s.max_value
                below = below and lo is not None and ana.can_prove(E.lt(lo, 0))
                above = above and hi is not None and ana.can_prove(E.ge(hi, size))
            if below or above:
                shown = ", ".join(str(i) for i in load.indices)
                raise BoundError(
                    f"stage {st.name} reads {t.name}[{shown}] outside {t.name}'s shape "
                    f"({', '.join(str(x) for x in t.shape)}): over {st.name}'s domain, index {k} "
                    f"ranges over [{lo}, {hi}] but must stay within [0, {size} - 1]; shrink "
                    f"{st.name}'s shape, or guard the read with te.if_then_else(cond, {t.name}[...], value)"
                )
