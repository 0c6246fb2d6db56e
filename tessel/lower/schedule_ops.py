"""ScheduleOps: the loop nest of every stage, producers placed where the schedule puts them.

The result speaks of te tensors (``realize`` / ``produce`` / ``T[i, j] = ...``), as the
listings of seed 000 do. A stage at the root is realized around itself and everything after
it; a stage computed at loop ``x`` of a consumer is realized inside ``x`` over only the region
InferBound found it needs there, and its loops count from zero with the region's minimum added
to its indices (seed 000, Ex. 4). Iterations past the end of a non-divisible split are
skipped by a guard, so no stage ever reads or writes outside its tensor or runs its body for
an index that does not exist.
"""

from __future__ import annotations

from collections import ChainMap, defaultdict

from ..arith import IntSet, eval_set
from ..bound.infer import BoundContext
from ..bound.propagate import pass_up_index
from ..errors import LowerError
from ..ir import expr as E
from ..ir import op as O
from ..ir import stmt as S
from ..ir.functor import substitute
from ..schedule.relations import Rebase
from ..schedule.stage import INLINE, SCOPE, Stage


def schedule_ops(ctx: BoundContext) -> S.Stmt:
    # producers before consumers (the read graph's order, see BoundContext.order)
    attached: dict[tuple[int, int], list[Stage]] = defaultdict(list)
    for st in ctx.order:
        if st.attach_type == SCOPE:
            attached[(id(st.attach_stage), id(st.attach_ivar))].append(st)
    builder = _Builder(ctx, attached)
    body: S.Stmt = S.Evaluate(0)
    for st in reversed(ctx.order):
        if st.is_placeholder or st.attach_type in (INLINE, SCOPE):
            continue
        body = builder.pipeline(st, body)
    return body


class _Builder:
    """The loop builder an operation's ``build_provide`` writes its loop nest through."""

    def __init__(self, ctx: BoundContext, attached: dict):
        self.ctx = ctx
        self.rmap = ctx.rmap
        self.attached = attached
        self.iset = {iv.var: IntSet.from_range(r) for iv, r in ctx.rmap.items()}

    # ---- one stage: realize { produce { loops }; rest } --------------------------------
    def pipeline(self, st: Stage, rest: S.Stmt) -> S.Stmt:
        op = st.op
        produce = S.AttrStmt(op, "produce", 0, op.build_provide(self, st, self.ctx.bodies[op]))
        box = self.ctx.boxes.get(st)  # a stage sharing a host's loops is stored over its slice
        return op.build_realize(st, ChainMap(box, self.rmap) if box else self.rmap, S.seq(produce, rest))

    def _shared(self, st: Stage) -> dict[E.IterVar, E.IterVar]:
        """The loops of ``st`` that are a host's loops (seed 003): not emitted, taken from the host."""
        return st.shared_loops if st in self.ctx.boxes else {}

    def index_values(self, st: Stage) -> dict[E.IterVar, E.PrimExpr]:
        """Every IterVar of ``st`` as an expression of its leaf loop variables."""
        shared = self._shared(st)
        value = {iv: shared[iv].var if iv in shared else iv.var for iv in st.leaf_iter_vars}
        pass_up_index(st, self.rmap, value)
        return value

    @staticmethod
    def guarded(preds: list[E.PrimExpr], body: S.Stmt) -> S.Stmt:
        """``body`` run only where every predicate holds."""
        return _guard(preds, body)

    # ---- loops ---------------------------------------------------------------------------
    def nest(self, st: Stage, begin: int, end: int, body: S.Stmt) -> S.Stmt:
        shared = self._shared(st)
        for iv in reversed(st.leaf_iter_vars[begin:end]):
            body = self.attach(st, iv, body)
            body = body if iv in shared else self.loop(st, iv, body)
        return body

    def attach(self, st: Stage, iv: E.IterVar, body: S.Stmt) -> S.Stmt:
        """Place the stages computed at loop ``iv`` of ``st`` at the top of its body."""
        for child in reversed(self.attached.get((id(st), id(iv)), [])):
            body = self.pipeline(child, body)
        return body

    def loop(self, st: Stage, iv: E.IterVar, body: S.Stmt) -> S.Stmt:
        r = self.rmap[iv]
        kind = st.leaf_kind(iv)
        attr = st.iter_var_attrs.get(iv)
        tag = attr.bind_thread.thread_tag if attr and attr.bind_thread is not None else ""
        var = iv.var
        if not E.is_const_int(r.min, 0):  # counted from zero: TVM's normalize rebases such a leaf
            rebase = Rebase.of_leaf(iv, r)
            value = {rebase.rebased: rebase.rebased.var}
            rebase.index_up(self.rmap, value)
            var = rebase.rebased.var
            body = substitute(body, {iv.var: value[iv]})
        if kind == "thread_binding" and not tag:
            kind = "serial"
        loop: S.Stmt = S.For(var, O.const(0, r.extent.dtype), r.extent, kind, body, tag)
        pragmas = attr.pragmas if attr else {}
        if "debug_skip_region" in pragmas:
            return S.AttrStmt(st.op, "pragma_debug_skip_region", iv.var.name, S.Evaluate(0))
        if pragmas.get("auto_unroll_max_step"):
            loop = _auto_unroll(loop, pragmas["auto_unroll_max_step"], self.ctx.analyzer)
        return loop

    # ---- guards for non-divisible splits and regions beyond a tensor ---------------------
    def bound_checks(self, st: Stage, value: dict[E.IterVar, E.PrimExpr]) -> list[E.PrimExpr]:
        """The predicates under which ``st``'s body runs: the guards of its non-divisible splits
        and, where the realized region is smaller than an axis's domain, that axis's range."""
        ana = self.ctx.analyzer
        guards = [g for rel in st.relations for g in rel.guards(self.rmap, value)]
        preds: list[E.PrimExpr] = []

        def check(v: E.PrimExpr, lo: E.PrimExpr, ext: E.PrimExpr, lower: bool) -> None:
            off = ana.simplify(O.sub(v, lo))
            s = eval_set(off, self.iset)
            if lower and (s.min_value is None or not ana.can_prove(O.ge(s.min_value, 0))):
                preds.append(O.ge(off, 0))
            if s.max_value is None or not ana.can_prove(O.lt(s.max_value, ext)):
                preds.append(O.lt(off, ext))

        for g in guards:  # checked here even where the split is exact: its outputs may not be
            check(g.index, g.min, g.extent, lower=False)
        for iv in st.op.root_iter_vars:
            r = self.rmap[iv]
            if iv.dom is not None and not (ana.can_prove_equal(r.min, iv.dom.min) and ana.can_prove_equal(r.extent, iv.dom.extent)):
                check(value[iv], iv.dom.min, iv.dom.extent, lower=True)
        out: list[E.PrimExpr] = []
        for p in preds:
            if not any(_same(p, q) for q in out):
                out.append(p)
        return out


def _same(a, b) -> bool:
    from ..ir.functor import structural_equal

    return structural_equal(a, b)


def _guard(preds: list[E.PrimExpr], body: S.Stmt) -> S.Stmt:
    if not preds:
        return body
    return S.IfThenElse(O.all_(*preds), body)


__all__ = ["LowerError", "schedule_ops"]


def _auto_unroll(stmt: S.Stmt, max_steps: int, ana) -> S.Stmt:
    """``pragma(x, "auto_unroll_max_step", n)``: serial loops of constant extent in the nest
    whose iterations, counting those of the loops inside them, are at most ``n`` become
    ``unrolled``; the unroll pass then makes them straight-line code. Vectorized, parallel and
    bound loops keep their kind and count as one step (a vector statement is one step)."""

    def visit(s: S.Stmt) -> tuple[S.Stmt, int | None]:
        """The rewritten statement and its number of steps (None: not a constant)."""
        if isinstance(s, S.For):
            body, inner = visit(s.body)
            ext = ana.simplify(s.extent)
            if s.kind not in ("serial", "unrolled"):
                steps = inner
            else:
                steps = ext.value * inner if isinstance(ext, E.IntImm) and inner is not None else None
            kind = "unrolled" if s.kind == "serial" and steps is not None and steps <= max_steps else s.kind
            if body is s.body and kind == s.kind:
                return s, steps
            return S.For(s.loop_var, s.min, s.extent, kind, body, s.thread_tag), steps
        if isinstance(s, S.SeqStmt):
            parts = [visit(x) for x in s.seq]
            counts = [c for _, c in parts]
            total = None if any(c is None for c in counts) else sum(counts)
            return S.seq(*[x for x, _ in parts]), total
        body = getattr(s, "body", None)
        if isinstance(body, S.Stmt) and isinstance(s, S.AttrStmt | S.LetStmt | S.Allocate | S.ProducerRealize):
            new, steps = visit(body)
            if new is body:
                return s, steps
            return _with_body(s, new), steps
        if isinstance(s, S.IfThenElse):
            then, a = visit(s.then_case)
            els, b = visit(s.else_case) if s.else_case is not None else (None, 0)
            steps = None if a is None or b is None else max(a, b)
            return S.IfThenElse(s.condition, then, els), steps
        return s, 1

    return visit(stmt)[0]


def _with_body(s: S.Stmt, body: S.Stmt) -> S.Stmt:
    fields = [body if f == "body" else getattr(s, f) for f in s._fields]
    return type(s)(*fields)
