"""The reads and writes of each statement as relations to storage elements.

A read under ``select``/``if_then_else`` (or a reduction's ``where``) happens only where its
condition holds; an affine condition restricts the relation exactly, any other keeps the read
as one that may happen (noted). An index that is not quasi-affine leaves its dimension free
(any element), noted with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import islpy as isl

from ..ir import expr as E
from ..ir.names import shown
from ..schedule.kinds import SCOPE
from ..te.tensor import Tensor
from .commands import stored
from .space import DIM, Converter, NotAffine, pw_to_map

if TYPE_CHECKING:
    from .model import Statement, _Builder


@dataclass(eq=False)
class Access:
    """A read or write of ``tensor`` by a statement: ``relation`` maps an instance to the
    storage element (enclosing realize loops' values, then the tensor's indices)."""

    tensor: Tensor
    relation: isl.Map
    write: bool
    exact: bool = True
    reason: str = ""
    text: str = ""
    #: where the instances touch an element of the tensor as written (before ``store_in`` maps
    #: it to its buffer), or None when ``tensor`` is that tensor or that set is not affine
    inside: isl.Set | None = None



def conditional_loads(e: E.PrimExpr) -> list[tuple[E.ProducerLoad, list[E.PrimExpr]]]:
    """Every load in ``e`` with the conditions (outermost first) under which it is evaluated."""
    out: list[tuple[E.ProducerLoad, list[E.PrimExpr]]] = []

    def walk(x, conds: list) -> None:
        if isinstance(x, E.ProducerLoad):
            out.append((x, conds))
            for i in x.indices:
                walk(i, conds)
        elif isinstance(x, E.Select) or (isinstance(x, E.Call) and x.op == "if_then_else" and len(x.args) == 3):
            c, a, b = (x.condition, x.true_value, x.false_value) if isinstance(x, E.Select) else x.args
            walk(c, conds)
            walk(a, [*conds, c])
            walk(b, [*conds, E.Not(c)])
        elif isinstance(x, E.Reduce):
            walk(x.condition, conds)
            for s in x.source:
                walk(s, [*conds, x.condition])
        elif isinstance(x, E.Node):
            for f in x.fields():
                for y in (f if isinstance(f, tuple) else (f,)):
                    if isinstance(y, E.Node):
                        walk(y, conds)

    walk(e, [])
    return out


def storage_name(b: _Builder, t: Tensor) -> str:
    """One storage per buffer: the definitions of one tensor (and an in-place update and the
    input it overwrites) share theirs, so their dependences are found."""
    t = t.op.storage(t)
    return b.namer.name(t, t.name, "A_")


def _realizer(t: Tensor) -> Tensor:
    """The tensor whose stage realizes ``t``'s storage: a recurrence's first definition (see
    ``DefinitionOp.build_realize``), or the input it is written into; any other tensor's own.
    Every definition's accesses then name the same loops, as they name the same storage."""
    defs = getattr(t.op, "definitions", ())
    if not defs:
        return t
    home = t.op.storage(t)
    return home if home.op.is_placeholder else defs[0]


def _scope_values(b: _Builder, stmt: Statement, t: Tensor, conv: Converter) -> list[isl.PwAff]:
    """The values, in ``stmt``, of the loops ``t`` is realized inside (its stage's attach path)
    that repeat: a loop that runs once per iteration of those around it makes no more copies."""
    st = b.sch.stage_map.get(_realizer(t).op)
    if st is None or st.attach_type != SCOPE:
        return []
    own = b.around(stmt.stage).ids
    out = []
    for c, iv in b.around(st).kept:
        if c is stmt.stage:
            coords = b.time_values(c).get(iv)
            if coords is None or len(coords) != 1:
                raise NotAffine(f"loop {iv.name} of {c.name} has no single coordinate")
            out.append(conv.aff(coords[0]))
        elif id(iv) in own:
            out.append(conv.aff(iv.var))
        else:
            raise NotAffine(f"{shown(t.name)} is realized inside {c.name}'s loop {iv.name}, which does not "
                            f"enclose {stmt.stage.name}")
    return out


def _scope_depth(b: _Builder, t: Tensor) -> int:
    """How many loops ``t``'s storage is realized inside (its leading storage dimensions)."""
    st = b.sch.stage_map.get(_realizer(t).op)
    if st is None or st.attach_type != SCOPE:
        return 0
    return len(b.around(st).kept)


def access(b: _Builder, stmt: Statement, t: Tensor, indices, conds, write: bool, text: str) -> Access:



    conv = stmt.converter
    assert conv is not None
    orig, indices_before = t, list(indices)
    t, indices = stored(b.sch, t, indices)  # store_in: the element the value lives in
    dom = stmt.domain
    reasons: list[str] = []
    for c in conds:
        try:
            dom = dom.intersect(conv.set(c))
        except NotAffine as err:
            reasons.append(f"counted as always happening ({err.reason})")
    name = storage_name(b, t)
    free: list[int] = []
    try:
        vals = _scope_values(b, stmt, t, conv)
    except NotAffine as err:  # any copy: as many dimensions as every other access of the storage has
        reasons.append(err.reason)
        free = list(range(_scope_depth(b, t)))
        vals = [conv.const(0) for _ in free]
    for k, idx in enumerate(indices):
        try:
            vals.append(conv.aff(idx))
        except NotAffine as err:
            reasons.append(f"index {k} is not quasi-affine: {err.reason}")
            free.append(len(vals))
            vals.append(conv.const(0))
    rel = pw_to_map(vals, dom, name)
    for pos in free:  # any element along a dimension whose index is unknown
        rel = rel.project_out(DIM.out, pos, 1).insert_dims(DIM.out, pos, 1).set_tuple_name(DIM.out, name)
    inside = _inside(conv, dom, orig, indices_before) if orig is not t else None
    return Access(t, rel, write, not reasons, "; ".join(reasons), text, inside)


def _inside(conv, dom: isl.Set, t: Tensor, indices) -> isl.Set | None:
    """The instances of ``dom`` whose ``indices`` lie inside ``t``'s shape (None: not affine)."""
    try:
        for idx, n in zip(indices, t.shape):
            i = conv.aff(idx)
            dom = dom.intersect(i.ge_set(conv.const(0)).intersect(i.lt_set(conv.aff(n))))
    except NotAffine:
        return None
    return dom


def add_accesses(b: _Builder, stmt: Statement) -> None:
    op = stmt.stage.op
    body = b.ctx.bodies[op]
    idx = [iv.var for iv in op.axis]
    out: list = []
    if stmt.role == "compute":
        for t, e in zip(op.outputs, body):
            out += [_read(b, stmt, ld, conds) for ld, conds in conditional_loads(e)]
            out.append(access(b, stmt, t, idx, [], True, _shown(t, idx)))
    elif stmt.role == "finish":
        red = body[0]
        out += [_read(b, stmt, ld, conds) for ld, conds in conditional_loads(red.finish)]
        out.append(access(b, stmt, op.outputs[0], idx, [], False, _shown(op.outputs[0], idx)))
        out.append(access(b, stmt, op.outputs[0], idx, [], True, _shown(op.outputs[0], idx)))
    elif stmt.role == "init":
        red = body[0]
        for t, e in zip(op.outputs, red.init or red.combiner.identity):
            out += [_read(b, stmt, ld, conds) for ld, conds in conditional_loads(e)]
            out.append(access(b, stmt, t, idx, [], True, _shown(t, idx)))
    else:
        red = body[0]
        for s in red.source:
            out += [_read(b, stmt, ld, [red.condition, *conds]) for ld, conds in conditional_loads(s)]
        for t in op.outputs:
            out.append(access(b, stmt, t, idx, [red.condition], False, _shown(t, idx)))
            out.append(access(b, stmt, t, idx, [red.condition], True, _shown(t, idx)))
    stmt.accesses = out
    stmt.notes += [f"{'writes' if a.write else 'reads'} {a.text}: {a.reason}" for a in out if not a.exact]


def _read(b: _Builder, stmt: Statement, ld: E.ProducerLoad, conds) -> Access:
    return access(b, stmt, ld.producer, ld.indices, conds, False, _shown(ld.producer, ld.indices))


def _shown(t: Tensor, indices) -> str:
    return f"{shown(t.name)}[{', '.join(str(i) for i in indices)}]"


__all__ = ["access", "add_accesses", "conditional_loads", "storage_name"]
