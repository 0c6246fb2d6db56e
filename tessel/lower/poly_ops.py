"""Code generation for schedules with Tiramisu's commands, through isl's AST generator.

The TE lowering (``schedule_ops``) builds one loop nest per stage from its leaf loops; a
command (``after``, ``shift``, ``skew``, ...) places instances where no TE loop nest puts
them, so such a schedule is lowered the way Tiramisu lowers everything (seed 004, §5): the
polyhedral model gives every statement its domain and its schedule (the TE nest's 2d+1 map
composed with the commands), isl builds the AST that visits the union of the statements'
instances in time order under the context of the sizes, and ``poly.astgen`` reads it back as
loops counting from zero. Each leaf names a statement and the values of its dimensions (isl
inverts the schedule), from which the statement's body is written: the stage's expression
with its axes replaced by those values, stored into its tensor -- or, after ``store_in``, into
the buffer the command names, where every read of the tensor goes too.

A loop's kind is the annotation the schedule gives the loops it fuses at that time dimension
(``parallel``, ``vectorized``, ``unrolled``), when they agree; loops of different kinds fused
together run serially. Storage: each computed tensor (or ``store_in`` buffer) that is not an
argument is realized whole around the kernel. The result speaks of te tensors like
``schedule_ops``'s, so the same passes and back ends follow.
"""

from __future__ import annotations

import islpy as isl

from ..bound.infer import BoundContext
from ..errors import LowerError
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.functor import Mutator, substitute
from ..ir.stmt import LoopKind
from ..poly.astgen import AstReader, scan
from ..poly.commands import check_storage
from ..poly.model import Model, Statement, build
from ..schedule.commands import describe
from ..schedule.kinds import INLINE, ROOT
from ..te.tensor import ComputeOp, Tensor, finished_value, reduction_update


def poly_ops(ctx: BoundContext, args: dict) -> S.Stmt:
    """The loop nest of every stage of ``ctx``'s schedule, from isl's AST of the model;
    ``args``: the tensors the kernel is called with (not realized here)."""
    sch = ctx.sch
    _check(ctx)
    model = build(sch, ctx)
    if model.unmodelled:
        name, why = next(iter(model.unmodelled.items()))
        raise LowerError(f"stage {name}: a schedule with commands (after, shift, skew, ...) is lowered from its "
                         f"polyhedral model, which cannot describe {name} ({why}); remove the commands or "
                         "make the stage's indices and ranges affine")
    check_storage(model)
    body = _scan(ctx, model)
    body = _Stored(sch).visit(body)
    return _realize(ctx, args, body)


def _check(ctx: BoundContext) -> None:
    if ctx.boxes:
        st = next(iter(ctx.boxes))
        raise LowerError(f"stage {st.name} shares loops with another stage (computeAt by position); commands "
                         "(after, shift, ...) need stages placed by compute_at or at the root")
    for o in ctx.sch.orders:
        moved = next((st for st in (o.stage, o.anchor) if st.attach_type != ROOT), None)
        if moved is not None:
            raise LowerError(f"{o.text()}: {moved.name} was moved off the root after the command (compute_at or "
                             f"compute_inline); orders need both stages at the root: call "
                             f"s[{moved.name}].compute_root(), or order the stage it is computed in")
    for st in ctx.sch.stages:
        if st.attach_type == INLINE and (st.commands or st.storage is not None):
            raise LowerError(f"stage {st.name} is inlined, so its commands ({', '.join(describe(st))}) have no "
                             f"loops to act on; call s[{st.name}].compute_root() or drop the commands")
        if st.is_placeholder or st.attach_type == INLINE:
            continue
        if not isinstance(st.op, ComputeOp):
            raise LowerError(f"stage {st.name} is a {type(st.op).__name__}; schedules with commands (after, "
                             "shift, skew, ...) lower te.compute stages only")
        kinds = {st.leaf_kind(iv) for iv in st.leaf_iter_vars}
        hints = any(a.pragmas or a.prefetch for a in st.iter_var_attrs.values()) or st.dim_align
        if kinds & {LoopKind.TENSORIZED, LoopKind.THREAD_BINDING} or st.store_predicate is not None or hints:
            raise LowerError(f"stage {st.name}: tensorize, bind, set_store_predicate, pragma, prefetch and "
                             "storage_align are not lowered with commands (after, shift, ...); use one or the other")


def _scan(ctx: BoundContext, model: Model) -> S.Stmt:
    by_name = {s.name: s for s in model.statements}
    names = {isl: v for v, isl in model.params.items()}
    iterators = [f"c{k}" for k in range(model.time_dims)]
    counters: dict[str, E.Var] = {}
    for s in model.statements:
        for lp in s.loops:
            counters.setdefault(f"c{lp.pos}", E.Var(lp.iter_var.var.name, lp.iter_var.var.dtype))

    def user(name: str, values: list[E.PrimExpr]) -> S.Stmt:
        return _instance(ctx, by_name[name], values)

    def loop(it: str, counter: E.Var, extent: E.PrimExpr, body: S.Stmt, under: frozenset[str]) -> S.Stmt:
        pos = int(it[1:])
        kinds = {lp.kind for n in under for lp in by_name[n].loops if lp.pos == pos}
        kind = kinds.pop() if len(kinds) == 1 else LoopKind.SERIAL
        if kind not in (LoopKind.PARALLEL, LoopKind.VECTORIZED, LoopKind.UNROLLED):
            kind = LoopKind.SERIAL
        return S.For(counter, E.const(0, extent.dtype), extent, kind, body)

    umap = None
    for s in model.statements:
        assert s.schedule is not None
        m = s.schedule.intersect_domain(s.domain).reset_tuple_id(isl.dim_type.out)
        umap = m.to_union_map() if umap is None else umap.union(m.to_union_map())
    if umap is None:
        return S.Evaluate(0)
    reader = AstReader(names, user, counters=counters, tagged=loop)
    return scan(umap, model.context.params(), iterators, reader)


def _instance(ctx: BoundContext, stmt: Statement, values: list[E.PrimExpr]) -> S.Stmt:
    """One instance of ``stmt`` with its dimensions at ``values``: the stage's body, stored."""
    vals = _as_typed({v: x for v, x in zip(stmt.dim_vars, values)})
    op = stmt.stage.op
    body = ctx.bodies[op]
    idx = [vals[iv.var] for iv in op.axis]
    if stmt.role == "compute":
        return S.seq(*[S.ProducerStore(t, substitute(e, vals), idx) for t, e in zip(op.outputs, body)])
    red = body[0]
    if stmt.role == "init":
        start = red.init if red.init else red.combiner.identity
        return S.seq(*[S.ProducerStore(t, substitute(v, vals), idx) for t, v in zip(op.outputs, start)])
    if stmt.role == "finish":
        return S.ProducerStore(op.outputs[0], finished_value(op, red, vals, idx), idx)
    return reduction_update(op, red, vals, idx)


def _as_typed(values: dict[E.Var, E.PrimExpr]) -> dict[E.Var, E.PrimExpr]:
    """Each value in the type of the variable it stands for, the body being arithmetic in the
    variables' types: a narrower one (a constant ``0`` of ``where=t == 0`` against an int64
    axis) widened; a wider one (isl's AST writes a skew of an int64 loop with an int32 one in
    int64) cast down, which the index dtype pass keeps only where it proves the value fits --
    else it refuses, saying which sizes to declare int64."""
    return {v: x if x.dtype == v.dtype else E.cast(x, v.dtype) for v, x in values.items()}


class _Stored(Mutator):
    """Writes and reads of a tensor whose stage has ``store_in`` go to the command's buffer (of
    arrays taking turns, to the one its first index chooses)."""

    def __init__(self, sch):
        self.where: dict[Tensor, tuple[Tensor, tuple, tuple]] = {}
        self.parts = {id(st.storage.buffer): st.storage.parts for st in sch.stages
                      if st.storage is not None and st.storage.parts}
        for st in sch.stages:
            axes = tuple(iv.var for iv in st.op.axis)
            if st.storage is not None:
                self.where[st.op.output(0)] = (st.storage.buffer, axes, st.storage.indices)
                continue
            for t in st.op.outputs:
                home = _home(st.op, t)
                if home is t:
                    continue
                hst = sch.stage_map.get(home.op)
                if hst is not None and hst.storage is not None:  # the recurrence's store_in holds every definition
                    sub = dict(zip((iv.var for iv in hst.op.axis), axes))
                    self.where[t] = (hst.storage.buffer, axes,
                                     tuple(substitute(x, sub) for x in hst.storage.indices))
                else:
                    self.where[t] = (home, axes, axes)

    def _moved(self, t: Tensor, indices) -> tuple[Tensor, tuple]:
        """The buffer and index an access of ``t`` goes to (see ``_as_typed``)."""
        buf, axes, index = self.where[t]
        return buf, tuple(substitute(x, _as_typed(dict(zip(axes, indices)))) for x in index)

    def visit_ProducerStore(self, s: S.ProducerStore):
        value = self.visit(s.value)
        indices = tuple(self.visit(i) for i in s.indices)
        if s.producer in self.where:
            buf, idx = self._moved(s.producer, indices)
            parts = self.parts.get(id(buf))
            if parts:  # the store goes to the array its slot chooses
                return _chosen(parts, idx[0], lambda t: S.ProducerStore(t, value, idx[1:]),
                               lambda c, a, b: S.IfThenElse(c, a, b))
            return S.ProducerStore(buf, value, idx)
        return S.ProducerStore(s.producer, value, indices)

    def visit_ProducerLoad(self, e: E.ProducerLoad):
        indices = tuple(self.visit(i) for i in e.indices)
        if e.producer in self.where:
            buf, idx = self._moved(e.producer, indices)
            parts = self.parts.get(id(buf))
            if parts:  # every array holds an element there (one shape): a select of loads is safe
                return _chosen(parts, idx[0], lambda t: E.ProducerLoad(t, idx[1:]), E.select)
            return E.ProducerLoad(buf, idx)
        return E.ProducerLoad(e.producer, indices)


def _chosen(parts: tuple, slot: E.PrimExpr, access, choose):
    """``access`` of the array ``slot`` chooses among ``parts`` (``slot`` is inside them:
    ``check_storage`` proved it): that one when the slot is a constant, else a choice by its
    value, which the passes resolve where a loop's residues run apart (passes/peel.py)."""
    if isinstance(slot, E.IntImm):
        return access(parts[slot.value])
    out = access(parts[-1])
    for k in range(len(parts) - 2, -1, -1):
        out = choose(E.eq(slot, E.const(k, slot.dtype)), access(parts[k]), out)
    return out


def _home(op, t: Tensor) -> Tensor:
    """Where an operation keeps output ``t`` (the definitions of one recurrence share one
    storage, ``Operation.storage``; any other operation keeps its own tensor)."""
    storage = getattr(op, "storage", None)
    return storage(t) if callable(storage) else t


def _realize(ctx: BoundContext, args: dict, body: S.Stmt) -> S.Stmt:
    """Storage for every computed tensor (its ``store_in`` buffer, its recurrence's storage)
    that is no argument."""
    seen: dict[int, tuple[Tensor, str]] = {}
    turns = {id(st.storage.buffer) for st in ctx.sch.stages if st.storage is not None and st.storage.parts}
    for st in ctx.order:
        if st.is_placeholder or st.attach_type == INLINE:
            continue
        for t in st.op.outputs:
            target = t
            if st.storage is not None and st.storage.parts:  # the caller's arrays, taking turns
                missing = [p.name for p in st.storage.parts if p not in args]
                if missing:
                    raise LowerError(f"stage {st.name} is stored in {', '.join(p.name for p in st.storage.parts)} "
                                     f"(store_in), the caller's arrays; pass {', '.join(missing)} to lower/build")
                continue
            if st.storage is not None:
                if t in args:
                    raise LowerError(f"stage {st.name} is stored in {st.storage.buffer.name} (store_in), so its "
                                     f"tensor {t.name} is never written; pass {st.storage.buffer.name} to "
                                     f"lower/build instead of {t.name}")
                target = st.storage.buffer
            if target is t:
                target = _home(st.op, target)
                hst = ctx.sch.stage_map.get(target.op) if target is not t else None
                if hst is not None and hst.storage is not None:
                    target = hst.storage.buffer
            # an input of the program written in place is the caller's (storage_flatten asks for it),
            # as are the arrays taking turns (never the tensor that stands for them)
            is_input = target.op.is_placeholder and (target.op in ctx.sch.stage_map or id(target) in turns)
            if target not in args and not is_input:
                seen.setdefault(id(target), (target, st.scope))
    for t, scope in reversed(list(seen.values())):
        body = S.ProducerRealize(t, tuple(E.Range(0, n) for n in t.shape), body, scope)
    return body


__all__ = ["poly_ops"]
