"""Reads outside a tensor, proved (or refuted) exactly, with a witness.

For every read of every compute stage, isl computes the instances of the stage's declared
domain (for every size the context allows) whose index leaves the tensor's shape. If there
are any, the program is refused with one of them: concrete sizes and loop values at which
the read happens ("for n = 7, i = 6 it reads A[7], but A has 7 elements along dimension 0").
If there are none the read is proved inside, however loose an interval evaluation of its
index would be (``A[min(3*i, 4*i) + min(-3*i, -2*i)]`` is always ``A[0]``).

A read under ``select``/``if_then_else`` (or a reduction's ``where``) is checked only where
its condition holds, when the condition is affine; under any other condition it is the
user's promise and is not checked, as before. A read whose index is not quasi-affine falls
back to the interval check (``bound/check.py``), which refuses only what it proves outside.
A stage whose domain is empty for some sizes reads nothing there, so it cannot be refuted
there; and a read of a tensor with no elements at all (``W[0]`` when ``W``'s size ``m`` is 0) is
not refused either: every index is outside an empty tensor, and whether a call passes one is a
matter of that call (as with the interval check before).
"""

from __future__ import annotations

import islpy as isl

from ..bound.check import check_reads_in_bounds
from ..errors import BoundError
from ..ir import expr as E
from ..ir.functor import substitute
from ..ir.names import shown
from ..schedule.schedule import Schedule
from ..schedule.stage import Stage
from ..te.tensor import ComputeOp
from .accesses import conditional_loads
from .context import context_conditions, size_vars
from .space import DIM, Converter, Namer, NotAffine, point_values, set_space


class _StageSpace:
    """A stage's declared domain over its root axes, parametric in the sizes."""

    def __init__(self, st: Stage, sizes: list[E.Var], context: list[E.PrimExpr], steps: E.Range | None = None):
        namer = Namer()
        self.roots = list(st.op.root_iter_vars)
        self.sizes = sizes
        dims = [namer.name(iv.var, iv.name) for iv in self.roots]
        params = [namer.name(v, v.name, "p_") for v in sizes]
        space = set_space(dims, params, namer.name(st, st.name, "S_"))
        self.conv = Converter(space, {iv.var: k for k, iv in enumerate(self.roots)}, {v: k for k, v in enumerate(sizes)})
        dom = isl.Set.universe(space)
        for iv in self.roots:
            x, lo, ext = (self.conv.aff(a) for a in (iv.var, iv.dom.min, iv.dom.extent))
            dom = dom.intersect(x.ge_set(lo)).intersect(x.lt_set(lo.add(ext)))
        for c in context:
            dom = dom.intersect(self.conv.set(c))
        if steps is not None and self.roots:  # inside a scan: its time axis runs the scan's steps only
            t, lo, ext = (self.conv.aff(a) for a in (self.roots[0].var, steps.min, steps.extent))
            dom = dom.intersect(t.ge_set(lo)).intersect(t.lt_set(lo.add(ext)))
        if st.op.where is not None:  # a declared domain: only its points run (and read)
            dom = dom.intersect(self.conv.set(st.op.where))
        self.domain = dom


def check_accesses(sch: Schedule) -> None:
    """Refuse the first read that can leave its tensor (BoundError with ``witness``); reads
    whose index isl cannot represent are left to the interval check."""
    # each stage's own body, inlined or not: inlining changes where a value is computed, not
    # which reads the program makes, so it must not change what is refused (fuzz F20: a read of
    # an empty B, left to the caller, became a read of A once B was inlined, and was refused)
    bodies = {st.op: st.op.body for st in sch.stages if isinstance(st.op, ComputeOp)}
    sizes = size_vars(sch)
    context = context_conditions(sch)
    fallback: set[int] = set()
    # a recurrence's states are read at earlier steps only for the steps it runs, which te.scan
    # checks when it is defined: their step index (dimension 0) is not this check's to refute
    states = {id(t) for st in sch.stages for t in st.op.state_placeholders()}
    # a scan runs its body (the update and what it reads inside the scan) for its steps only,
    # not from step 0: an update reading an input at t - 1 never reads it at t = 0
    steps = {id(op): st.op.scan_axis.dom for st in sch.stages if hasattr(st.op, "scan_axis")
             for op in st.op.body_ops()}
    for st in sch.stages:
        if st.is_placeholder or not isinstance(st.op, ComputeOp):
            continue
        try:
            sp = _StageSpace(st, sizes, context, steps.get(id(st.op)))
        except NotAffine:
            fallback.update(id(ld) for b in bodies[st.op] for ld, _ in conditional_loads(b))
            continue
        for body in bodies[st.op]:
            for ld, conds in conditional_loads(body):
                if not _check_load(st, sp, ld, conds, id(ld.producer) in states):
                    fallback.add(id(ld))
    if fallback:
        check_reads_in_bounds(sch, bodies, select=lambda ld: id(ld) in fallback)


def _check_load(st: Stage, sp: _StageSpace, ld: E.ProducerLoad, conds: list, is_state: bool) -> bool:
    """Check one read exactly; False when it cannot be (the interval check takes it)."""
    conv = sp.conv
    where = sp.domain
    try:
        for c in conds:
            where = where.intersect(conv.set(c))
    except NotAffine:
        return True  # a read under a condition isl cannot follow: the user's promise, as before
    try:
        idx = [conv.aff(i) for i in ld.indices]
        shape = [conv.aff(n) for n in ld.producer.shape]
    except NotAffine:
        return False
    for n in shape:  # a read of an empty tensor has no element to be inside of: left to the caller
        where = where.intersect(n.ge_set(conv.const(1)))
    for k, (i, n) in enumerate(zip(idx, shape)):
        if k == 0 and is_state:
            continue
        bad = where.intersect(i.lt_set(conv.const(0)).union(i.ge_set(n)))
        if not bad.is_empty():
            raise _error(st, sp, ld, k, where, i, bad)
    _check_defined(st, sp, ld, where)
    return True


def _check_defined(st: Stage, sp: _StageSpace, ld: E.ProducerLoad, where: isl.Set) -> None:
    """A read of a tensor computed over a declared domain (``where=``) must stay in that domain:
    elsewhere the tensor holds nothing it computed. (A recurrence's tensor is left out: its
    definitions together, or the input it is written into, define it.)"""
    op = ld.producer.op
    if op.where is None or op.storage(ld.producer) is not ld.producer or getattr(op, "definitions", ()):
        return
    cond = substitute(op.where, {iv.var: i for iv, i in zip(op.axis, ld.indices)})
    try:
        inside = sp.conv.set(cond)
    except NotAffine:
        return  # not decidable here: the reader's promise
    bad = where.subtract(inside)
    if bad.is_empty():
        return
    pt = bad.sample_point()
    witness = {iv.var: x for iv, x in zip(sp.roots, point_values(pt, DIM.set, len(sp.roots)))}
    witness.update({v: x for v, x in zip(sp.sizes, point_values(pt, DIM.param, len(sp.sizes)))})
    from ..ir.evaluate import evaluate

    t = shown(ld.producer.name)
    at = ", ".join(f"{shown(iv.name)} = {witness[iv.var]}" for iv in sp.roots)
    read = ", ".join(str(evaluate(i, witness)) for i in ld.indices)
    err = BoundError(
        f"stage {shown(st.name)} reads {t}[{', '.join(str(i) for i in ld.indices)}] outside {t}'s domain "
        f"({shown(str(op.where))}): for {at} it reads {t}[{read}], which {t} does not compute; restrict "
        f"{shown(st.name)}'s domain (where=) or its read (te.if_then_else), or widen {t}'s domain")
    err.witness = witness  # type: ignore[attr-defined]
    err.load = ld  # type: ignore[attr-defined]
    raise err


def _error(st: Stage, sp: _StageSpace, ld: E.ProducerLoad, k: int, where: isl.Set, idx: isl.PwAff,
           bad: isl.Set) -> BoundError:
    pt = bad.sample_point()
    loops = point_values(pt, DIM.set, len(sp.roots))
    sizes = point_values(pt, DIM.param, len(sp.sizes))
    witness: dict[E.Var, int] = {v: x for v, x in zip(sp.sizes, sizes)}
    witness.update({iv.var: x for iv, x in zip(sp.roots, loops)})
    from ..ir.evaluate import evaluate

    read = [evaluate(i, witness) for i in ld.indices]
    extent = [evaluate(n, witness) for n in ld.producer.shape]
    t = shown(ld.producer.name)
    shown_load = ", ".join(str(i) for i in ld.indices)
    used_sizes = [v for v in sp.sizes if any(v is x for x in _vars_of(ld, st))]
    at = ", ".join([f"{shown(v.name)} = {witness[v]}" for v in used_sizes] +
                   [f"{shown(iv.name)} = {witness[iv.var]}" for iv in sp.roots])
    rng = _range_text(where, idx)
    err = BoundError(
        f"stage {shown(st.name)} reads {t}[{shown_load}] outside {t}'s shape "
        f"({', '.join(str(x) for x in ld.producer.shape)}): for {at} it reads {t}[{', '.join(map(str, read))}], "
        f"but {t} has {extent[k]} element(s) along dimension {k}{rng}; shrink {shown(st.name)}'s shape, or guard "
        f"the read with te.if_then_else(cond, {t}[...], value)"
    )
    err.witness = witness  # type: ignore[attr-defined]
    err.load = ld  # type: ignore[attr-defined]
    err.dimension = k  # type: ignore[attr-defined]
    return err


def _vars_of(ld: E.ProducerLoad, st: Stage) -> list[E.Var]:
    from ..ir.functor import collect

    exprs = [*ld.indices, *ld.producer.shape, *(x for iv in st.op.root_iter_vars for x in (iv.dom.min, iv.dom.extent))]
    return [v for e in exprs for v in collect(e, lambda n: isinstance(n, E.Var))]


def _range_text(where: isl.Set, idx: isl.PwAff) -> str:
    """`` (over its domain the index ranges over [lo, hi])`` when both ends are constants."""
    vals = isl.Map.from_pw_aff(idx.intersect_domain(where)).range()
    ends = []
    for pa in (vals.dim_min(0), vals.dim_max(0)):
        pieces = pa.get_pieces()
        if len(pieces) != 1 or not pa.is_cst():
            return ""
        ends.append(pieces[0][1].get_constant_val().to_python())
    return f" (over its domain the index ranges over [{ends[0]}, {ends[1]}])"


__all__ = ["check_accesses"]


def check_in_place_coverage(model) -> None:
    """Refuse a stage stored in place in a tensor the caller sees (``seen_by_caller``) but
    computed inside another stage's loops where its readers need only part of it: the elements
    no reader asks for would never be written, and the caller would see the old values (at the
    root InferBound computes such a stage whole; inside a loop its region is its readers')."""
    from ..errors import ScheduleError
    from ..schedule.commands import seen_by_caller
    from ..schedule.kinds import SCOPE
    from .model import _declared

    for stmt in model.statements:
        st = stmt.stage
        if st.attach_type != SCOPE or not seen_by_caller(st) or stmt.role == "update":
            continue
        roots = list(st.op.axis) if stmt.role in ("init", "finish") else list(st.op.root_iter_vars)
        conv = stmt.converter
        outer = len(stmt.dim_vars) - len(roots)
        whole = _declared(conv, st.op, []) if stmt.role not in ("init", "finish") else isl.Set.universe(conv.space)
        try:
            for iv in roots:
                if iv.dom is not None:
                    x = conv.aff(iv.var)
                    lo, ext = conv.aff(iv.dom.min), conv.aff(iv.dom.extent)
                    whole = whole.intersect(x.ge_set(lo)).intersect(x.lt_set(lo.add(ext)))
        except NotAffine:
            continue  # not decidable here: lowering computes what InferBound found
        whole = whole.project_out(DIM.set, 0, outer).intersect_params(model.context)
        missed = whole.subtract(stmt.domain.project_out(DIM.set, 0, outer))
        if missed.is_empty():
            continue
        p = missed.sample_point()
        at = ", ".join(f"{iv.var.name} = {p.get_coordinate_val(DIM.set, k).to_python()}" for k, iv in enumerate(roots))
        buf = st.storage.buffer.name if st.storage is not None else st.name
        raise ScheduleError(
            f"stage {shown(st.name)} is stored in place in {shown(buf)}, which the caller sees, but it is computed "
            f"inside {shown(st.attach_stage.name)}'s loop {shown(st.attach_ivar.name)}, where its readers need only part "
            f"of it: its element at {at} would never be written; compute it at the root: "
            f"s[{shown(st.name)}].compute_root()")
