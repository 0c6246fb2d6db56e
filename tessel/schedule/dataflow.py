"""Dataflow rewrites: ``cache_read``, ``cache_write`` and ``rfactor`` (seed 001, TVM TE v0.14).

Each primitive inserts a stage into the dataflow graph and rewrites the operations around it.
Two invariants make the user's old handles keep working and keep lowering simple:

* **A stage is never replaced, only re-pointed.** ``s[C]`` is the same Stage object before and
  after, its ``op`` is swapped for a rewritten operation, and every operation the stage ever had
  stays a key of ``stage_map`` (so ``s[C.op]`` with the user's original ``C`` still works).
* **A rewritten operation reuses the IterVar objects of the one it replaces** wherever the loop
  means the same thing, so ``C.op.axis[0]`` of the original op is still a loop of ``s[C]``.
  Where a loop moves to another stage (cache_write moves C's reduction into ``C.local``,
  rfactor moves B's loops into ``B.rf``), the schedule keeps a note so that using the old
  handle on the old stage fails with an error naming the stage that owns it now.

Whenever an operation is rewritten its output tensors change (a Tensor belongs to one
operation), so every later stage reading them is rewritten as well, in dataflow order. The
schedule maps any tensor the user holds to the current one (``Schedule.current_tensor``), which
is how ``lower(s, [A, C])`` with the user's original ``C`` finds the right buffer.

Primitives validate everything before changing anything: a failed call leaves the schedule as
it was.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ..errors import InternalError, ScheduleError
from ..ir import expr as E
from ..ir.functor import substitute, uses_var
from ..ir.names import identifier
from ..te.tensor import ComputeOp, Operation, Tensor
from . import relations as R
from .kinds import INLINE, SCOPE

if TYPE_CHECKING:
    from .schedule import Schedule
    from .stage import Stage

SCOPES = ("global", "shared", "local", "warp")


# ---- naming -------------------------------------------------------------------------------
def py_name(name: str) -> str:
    """A Python identifier for a stage or tensor name, for code in messages and fixes
    (``B.local`` -> ``B_local``): made by the one name-safety function, so that the code runs
    whatever the name (a keyword, ``None``, ``x²``)."""
    return identifier(name, "python", reserved={"s", "te", "None", "True", "False"})


# ---- reading and rewriting operations -------------------------------------------------------
def reads_any(op: Operation, tensors) -> bool:
    ids = {id(t) for t in tensors}
    return any(id(t) in ids for t in op.input_tensors())


def set_stage_op(sch: Schedule, stage: Stage, new_op: Operation) -> None:
    """Re-point ``stage`` at ``new_op`` and rewrite every later reader of its old outputs."""
    apply_stage_ops(sch, plan_stage_op(sch, stage, new_op))


def plan_stage_op(sch: Schedule, stage: Stage, new_op: Operation) -> list[tuple[Stage, Operation]]:
    """The new operation of ``stage`` and of every later reader of its old outputs, changing
    nothing yet: a reader refusing the rewrite (ScheduleError) leaves the schedule as it was."""
    tmap: dict[Tensor, Tensor] = {}
    plan: list[tuple[Stage, Operation]] = []

    def put(st: Stage, op: Operation) -> None:
        for a, b in zip(st.op.outputs, op.outputs):
            tmap[a] = b
        plan.append((st, op))

    put(stage, new_op)
    old_defs, new_defs = getattr(stage.op, "definitions", ()), getattr(new_op, "definitions", ())
    if new_op is not stage.op and len(old_defs) == len(new_defs):  # a recurrence rebuilt whole
        tmap.update((a, b) for a, b in zip(old_defs, new_defs) if a.op is not stage.op)
    for st in sch.stages[sch.stages.index(stage) + 1:]:
        if reads_any(st.op, tmap) or any(t in tmap for t in st.op.outputs):
            put(st, st.op.replace_inputs(tmap))
    # a recurrence is rebuilt whole: its definitions before the first that read a new tensor too
    planned = {id(st) for st, _ in plan}
    for st in sch.stages:
        if id(st) not in planned and st.op.outputs and all(t in tmap for t in st.op.outputs):
            plan.append((st, tmap[st.op.outputs[0]].op))
            planned.add(id(st))
    stale = [st for st in sch.stages if id(st) not in planned and reads_any(st.op, tmap)]
    if stale:
        raise ScheduleError(f"stage {stale[0].name} reads {', '.join(t.name for t in stale[0].op.input_tensors() if t in tmap)}, "
                            f"which this rewrite replaces, but runs before it; rewrite a stage that runs earlier")
    return plan


def apply_stage_ops(sch: Schedule, plan: list[tuple[Stage, Operation]]) -> None:
    for st, op in plan:
        old = st.op
        st.op = op
        sch.stage_map[op] = st
        sch.outputs = [op if o is old else o for o in sch.outputs]


def _insert_stage(sch: Schedule, stage: Stage, pos: int) -> None:
    sch.stages.insert(pos, stage)
    sch.stage_map[stage.op] = stage


def _unique_name(sch: Schedule, base: str, scope: str) -> str:
    """``B.local``; a second cache of B in the same scope is ``B.d.local`` (TVM's rule)."""
    names = {st.name for st in sch.stages}
    while f"{base}.{scope}" in names:
        base += ".d"
    return f"{base}.{scope}"


def check_scope(scope, what: str) -> str:
    if scope not in SCOPES:
        raise ScheduleError(f"{what}: unknown storage scope {scope!r}; use one of {', '.join(SCOPES)}")
    return scope


# ---- the loops a rewrite makes: the relation algebra over a stage's own domains ---------------
def loop_ranges(stage: Stage, roots) -> dict[E.IterVar, E.Range]:
    """Ranges of the IterVars below ``roots`` from their domains alone (no consumer requests).

    InferBound's PassDownDomain for an output stage, so that the loops a rewrite makes agree
    with the ones lowering will make; these extents become tensor shapes, so a split's factor
    is cut to its parent only where both are constants (``relations.Cut``), and the
    extents are left as the relations write them.
    """
    rng: dict[E.IterVar, E.Range] = {iv: iv.dom for iv in roots if iv.dom is not None}
    R.pass_down_domain(stage.relations, rng, cut=R.Cut(R.bound_to_thread(stage.iter_var_attrs)))
    return rng


def _index_up(rels: list[R.Relation], rng: dict[E.IterVar, E.Range],
              value: dict[E.IterVar, E.PrimExpr]) -> list[E.PrimExpr]:
    """Extend ``value`` (leaf -> index) to the parents; return the guards a non-divisible split needs."""
    guards = R.pass_up_index(rels, rng, value)
    return [g.predicate() for g in reversed(guards) if g.needed]


def descendants(stage: Stage, roots) -> set[int]:
    """Ids of ``roots`` and every IterVar derived from them."""
    out = {id(iv) for iv in roots}
    for rel in stage.relations:
        if any(id(i) in out for i in rel.inputs):
            out.update(id(o) for o in rel.outputs)
    return out


def connected(stage: Stage, axis: E.IterVar) -> set[int]:
    """IterVars tied to ``axis`` by relations: its ancestors, then everything derived from those."""
    out = {id(axis)}
    for rel in reversed(stage.relations):
        if any(id(o) in out for o in rel.outputs):
            out.update(id(i) for i in rel.inputs)
    for rel in stage.relations:
        if any(id(i) in out for i in rel.inputs):
            out.update(id(o) for o in rel.outputs)
    return out


# ---- moving what was scheduled on a loop that changes stage ---------------------------------
def _move_loops(sch: Schedule, src: Stage, dst: Stage, mapping: dict[int, E.IterVar]) -> None:
    """Stages attached at, and annotations on, ``src``'s loops in ``mapping`` follow them to ``dst``."""
    for st in sch.stages:
        if st.attach_type == SCOPE and st.attach_stage is src and id(st.attach_ivar) in mapping:
            st.placement = st.placement.moved(dst, mapping[id(st.attach_ivar)])
    for iv in list(src.iter_var_attrs):
        if id(iv) in mapping:
            attr = src.iter_var_attrs.pop(iv)
            dst.iter_var_attrs[mapping[id(iv)]] = attr


def _stage_of(sch: Schedule, tensor, what: str) -> Stage:
    if not isinstance(tensor, Tensor):
        raise ScheduleError(f"{what} expects a tensor (the result of te.compute or te.placeholder), got {tensor!r}")
    return sch[tensor]


def _check_computable(stage: Stage, what: str) -> ComputeOp:
    if stage.is_placeholder:
        raise ScheduleError(f"{what}: {stage.name} is an input placeholder, not a computed stage")
    if type(stage.op) is not ComputeOp:  # the rewrite rebuilds te.compute bodies (not a recurrence's)
        raise ScheduleError(f"{what}: {stage.name} is a {type(stage.op).__name__}; {what} rewrites "
                            "te.compute stages only")
    if stage.attach_type == INLINE:
        raise ScheduleError(
            f"{what}: stage {stage.name} is inlined, so it has no loops or storage of its own; "
            f"call s[{py_name(stage.name)}].compute_root() first, or choose a stage that is not inlined"
        )
    return stage.op


# ---- cache_read ----------------------------------------------------------------------------
def cache_read(sch: Schedule, tensor: Tensor, scope: str, readers) -> Tensor:
    """A new stage ``T.scope`` copying ``tensor``; each reader is rewritten to read the copy.

    The copy is placed at the root, right after ``tensor``'s producer in the stage list, as in
    TVM; where it should live (usually inside the reader's loops) is the user's next
    ``compute_at``, and a schedule that leaves it above a producer attached lower down is
    illegal (seed 001, Example 5), which ``Schedule.verify`` explains.
    """
    check_scope(scope, f"cache_read of {getattr(tensor, 'name', tensor)}")
    prod = _stage_of(sch, tensor, "cache_read")
    cur = sch.current_tensor(tensor)
    if readers is None:
        raise ScheduleError(f"cache_read of {tensor.name} needs readers=[...]: the stages that should read the copy")
    if not isinstance(readers, list | tuple):  # one reader: a tensor, an operation or a stage
        readers = [readers]
    rstages: list[Stage] = []
    for r in readers:
        st = sch[r]
        if getattr(st.op, "definitions", ()) and not reads_any(st.op, [cur]):
            # a recurrence is one reader: the first of its definitions that reads the tensor
            # (the recurrence is rebuilt whole, every definition reading the copy)
            st = next((sch[d.op] for d in st.op.definitions if reads_any(d.op, [cur])), st)
        if st in rstages:
            continue
        if not reads_any(st.op, [cur]):
            reading = [s.name for s in sch.stages if reads_any(s.op, [cur])]
            raise ScheduleError(
                f"cache_read of {tensor.name}: {st.name} does not read {tensor.name}, so it cannot be made to read "
                f"the copy; the stages reading {tensor.name} are: {', '.join(reading) or 'none'}"
            )
        rstages.append(st)
    _in_place_read_refusal(sch, tensor, cur)
    # first on a copy: a reader refusing the copy (a recurrence's definition) must leave the
    # schedule as it was, not with the cache stage added and some readers rewritten
    trial = sch.copy(record=False)
    _cache_read_into(trial, trial.stages[sch.stages.index(prod)], tensor, cur, scope,
                     [trial.stages[sch.stages.index(st)] for st in rstages])
    return _cache_read_into(sch, prod, tensor, cur, scope, rstages)


def _in_place_read_refusal(sch: Schedule, tensor: Tensor, cur: Tensor) -> None:
    """A tensor a stage updates in place (``store_in``, or a recurrence's ``inplace=``) changes
    while the kernel runs: each reader reads what the writes before it left. A copy holds the
    values of one moment, so its readers would read other values than the program's (fuzz F13:
    a Gauss-Seidel stencil given a copy of its own storage computed a Jacobi step); refused."""
    for st in sch.stages:
        storage = st.storage
        into = storage.buffer if storage is not None and not getattr(storage, "folded", False) else None
        if into is None and getattr(st.op, "base", None) is not None and st.op.base.op.is_placeholder:
            into = st.op.base
        if into is not None and into.op is cur.op:
            raise ScheduleError(
                f"cache_read of {tensor.name} is refused: stage {st.name} writes its values into {tensor.name} in "
                f"place ({'store_in' if storage is not None else 'inplace='}), so {tensor.name} changes while the "
                f"kernel runs, and a copy would give its readers the values of one moment instead of what the "
                f"writes before each read left there. Drop the cache_read, or store {st.name} in a fresh buffer")


def _cache_read_into(sch: Schedule, prod: Stage, tensor: Tensor, cur: Tensor, scope: str,
                     rstages: list[Stage]) -> Tensor:
    name = _unique_name(sch, cur.name, scope)
    axes = [E.IterVar(E.Range(0, n), E.Var(f"ax{k}", n.dtype), E.IterVar.DATA_PAR) for k, n in enumerate(cur.shape)]
    cache_op = ComputeOp(name, "", {}, axes, [E.ProducerLoad(cur, [iv.var for iv in axes])])
    cstage = type(prod)(cache_op, sch)
    cstage.scope, cstage.scope_given = scope, True
    cstage.created_by = f"cache_read({tensor.name}, {scope!r})"
    _insert_stage(sch, cstage, sch.stages.index(prod) + 1)
    cache = cache_op.output(0)
    for st in rstages:
        set_stage_op(sch, st, st.op.replace_inputs({cur: cache}))
    return cache


# ---- cache_write ---------------------------------------------------------------------------
def _in_place_refusal(stage, scope: str) -> None:
    """A stage stored (``store_in``) in a tensor it reads updates it in place: each point reads
    what the earlier points left there. A cache would compute every point from the old values
    and copy them back afterwards, another program; refused."""
    storage = stage.storage
    if storage is None or getattr(storage, "folded", False):
        return
    buf = storage.buffer
    if not any(t.op is buf.op for t in stage.op.input_tensors()):
        return
    raise ScheduleError(
        f"stage {stage.name}: cache_write({stage.name}, {scope!r}) is refused: {stage.name} is stored in "
        f"{buf.name} (store_in), which it reads, so it updates {buf.name} in place (each point reads what the "
        f"earlier points wrote); a cache would compute every point from {buf.name}'s old values. Drop the "
        f"cache_write, or store {stage.name} in a fresh buffer (s[{stage.name}].store_in(te.placeholder(...)))")


def cache_write(sch: Schedule, tensor, scope: str):
    """A new stage ``C.scope`` computing what C computed; C becomes a copy of it.

    As in TVM the cache takes the layout of C's data-parallel loops as they are now (a split
    or reordered C gives a split or reordered cache, its axes named ``i.c``), takes over the
    reduction (with the same reduce IterVars, so ``C.op.reduce_axis[0]`` is now a loop of
    ``C.local``), and C's loops are reset to its original axes. Stages attached at, and
    annotations on, loops of C that disappear follow the loop into the cache stage.
    """
    stage, op, tensors = _cache_write_target(sch, tensor, scope)
    _in_place_refusal(stage, scope)
    red_ids = descendants(stage, op.reduce_axis)
    data_leaves = [iv for iv in stage.leaf_iter_vars if id(iv) not in red_ids]
    rng = loop_ranges(stage, op.axis)
    data_rels = [r for r in stage.relations if not any(id(i) in red_ids for i in r.inputs)]
    new_axes = [E.IterVar(E.Range(0, rng[iv].extent), E.Var(iv.name + ".c", iv.dtype), E.IterVar.DATA_PAR)
                for iv in data_leaves]
    value: dict[E.IterVar, E.PrimExpr] = {iv: nv.var for iv, nv in zip(data_leaves, new_axes)}
    preds = _index_up(data_rels, rng, value)
    axis_values = {iv.var: value[iv] for iv in op.axis}
    reduce_axes = _reduce_axes_over(op.reduce_axis, axis_values)
    bodies = _guarded_bodies([_with_reduce_axes(substitute(b, axis_values), reduce_axes) for b in op.body], preds)
    where = substitute(op.where, axis_values) if op.where is not None else None
    cache_op = ComputeOp(_unique_name(sch, stage.name, scope), op.tag, op.attrs, new_axes, bodies, where)
    # C reads its value back from the cache, at the place its old loops put it
    down: dict[E.IterVar, E.PrimExpr] = {iv: iv.var for iv in op.axis}
    R.pass_down_index(data_rels, rng, down)
    copy_op = ComputeOp(op.name, op.tag, op.attrs, op.axis,
                        [t[tuple(down[iv] for iv in data_leaves)] for t in cache_op.outputs], op.where)

    plan = plan_stage_op(sch, stage, copy_op)  # a reader refusing C's new op refuses before anything changes
    cstage = type(stage)(cache_op, sch)
    cstage.scope, cstage.scope_given = scope, True
    cstage.created_by = f"cache_write({stage.name}, {scope!r})"
    for iv, nv in zip(data_leaves, new_axes):
        cstage.derived_from[nv] = f"cache_write copy of {stage.name}'s loop {iv.name}"
    # loops of C that vanish move into the cache: data loops to their `.c` axis, reduction
    # loops to the reduce axis they came from
    keep = {id(iv) for iv in op.axis}
    mapping: dict[int, E.IterVar] = {id(iv): nv for iv, nv in zip(data_leaves, new_axes) if id(iv) not in keep}
    for root in op.reduce_axis:
        for k in descendants(stage, [root]):
            mapping[k] = reduce_axes.get(root, root)
    _move_loops(sch, stage, cstage, mapping)
    _note_cache_write_loops(sch, stage, cstage, keep, mapping)
    stage.relations = []
    stage.all_iter_vars = list(op.axis)
    stage.leaf_iter_vars = list(op.axis)
    stage.iter_var_attrs = {iv: a for iv, a in stage.iter_var_attrs.items() if id(iv) in keep}
    _insert_stage(sch, cstage, sch.stages.index(stage))
    apply_stage_ops(sch, plan)
    return cache_op.outputs if len(tensors) > 1 else cache_op.output(tensors[0].value_index)


def _reduce_axes_over(axes, axis_values: dict) -> dict[E.IterVar, E.IterVar]:
    """The reduce axes whose range is written over the data axes (``reduce_axis((i + 1, m))``,
    a triangle), each remade over the cache's axes: the cache's loops are ``i.c``, and a range
    over ``i`` would leave ``i`` free in its code. The others stay the same IterVars (so
    ``C.op.reduce_axis[0]`` is a loop of the cache, as in TVM)."""
    out = {}
    for iv in axes:
        if iv.dom is not None and uses_var(iv.dom, lambda v: v in axis_values):
            dom = E.Range(substitute(iv.dom.min, axis_values), substitute(iv.dom.extent, axis_values))
            out[iv] = E.IterVar(dom, iv.var, iv.iter_type, iv.thread_tag)
    return out


def _with_reduce_axes(body: E.PrimExpr, remade: dict[E.IterVar, E.IterVar]) -> E.PrimExpr:
    if not remade or not isinstance(body, E.Reduce):
        return body
    return E.Reduce(body.combiner, body.source, tuple(remade.get(a, a) for a in body.axis), body.condition,
                    body.value_index, body.init, body.finish, body.acc)


def _cache_write_target(sch: Schedule, tensor, scope: str) -> tuple[Stage, ComputeOp, list]:
    """The stage whose outputs ``tensor`` names, refused unless it is one whole operation."""
    tensors = list(tensor) if isinstance(tensor, list | tuple) else [tensor]
    if not tensors:
        raise ScheduleError("cache_write needs a tensor (or the list of outputs of one operation)")
    stage = _stage_of(sch, tensors[0], "cache_write")
    check_scope(scope, f"cache_write of {stage.name}")
    for t in tensors[1:]:
        if _stage_of(sch, t, "cache_write") is not stage:
            raise ScheduleError(
                f"cache_write: {tensors[0].name} and {t.name} are outputs of different operations; "
                "cache the outputs of one operation at a time"
            )
    op = _check_computable(stage, "cache_write")
    if len({t.value_index for t in tensors}) != op.num_outputs:
        names = ", ".join(py_name(t.name) for t in op.outputs)
        raise ScheduleError(
            f"cache_write of {stage.name}: the operation has {op.num_outputs} outputs and all of them are computed "
            f"together, so all must be cached together: s.cache_write([{names}], {scope!r})"
        )
    return stage, op, tensors


def _guarded_bodies(bodies: list, preds: list[E.PrimExpr]) -> list:
    """``bodies`` computed only where the non-divisible splits' guards hold (a reduction adds
    them to its condition; an elementwise body gives 0 outside)."""
    if not preds:
        return bodies
    guard = E.all_(*preds)
    if isinstance(bodies[0], E.Reduce):
        return [E.Reduce(b.combiner, b.source, b.axis, E.logical_and(b.condition, guard), b.value_index, b.init,
                         b.finish, b.acc) for b in bodies]
    from ..te.intrin import if_then_else

    return [if_then_else(guard, b, E.const(0, b.dtype)) for b in bodies]


def _note_cache_write_loops(sch: Schedule, stage: Stage, cstage: Stage, keep: set[int],
                            mapping: dict[int, E.IterVar]) -> None:
    """For each loop of C that cache_write takes away, what a later use of it should say."""
    op, cname = stage.op, py_name(cstage.name)
    for iv in stage.all_iter_vars:
        if id(iv) in keep:
            continue
        if id(iv) in mapping:
            sch.iv_notes[iv] = (f"cache_write({stage.name}) moved this loop into {cstage.name} "
                                f"(as {mapping[id(iv)].name}); use s[{cname}] for it")
        else:
            sch.iv_notes[iv] = (f"cache_write({stage.name}) reset {stage.name}'s loops to its axes "
                                f"{', '.join(a.name for a in op.axis)}; the computation now runs in {cstage.name}, "
                                f"whose loops are {cname}.op.axis")


# ---- rfactor -------------------------------------------------------------------------------
def rfactor(sch: Schedule, tensor: Tensor, axis: E.IterVar, factor_axis: int = 0):
    """Factor the reduction of ``tensor`` over the loop ``axis`` into a new stage ``B.rf``.

    ``B.rf`` computes one partial result per value of ``axis``: it takes over B's loops (the
    same IterVars, with their splits, annotations and attached stages), ``axis`` becomes its
    data-parallel axis number ``factor_axis``, and the loops of the reduction tied to ``axis``
    are re-expressed through it. B becomes a reduction over that axis (``k.inner.v``) with
    fresh loops of its own. Splitting one reduction into partial ones changes the order in
    which values are combined, so the reducer must be commutative and associative; a reducer
    for which this is refuted is rejected instead of silently giving other results.
    """
    stage = _stage_of(sch, tensor, "rfactor")
    op = _check_computable(stage, "rfactor")
    pos = _rfactor_position(stage, op, axis, factor_axis)
    red: E.Reduce = op.body[0]
    from .reducer_checks import check_reducer_reorderable

    check_reducer_reorderable(stage, red.combiner, axis)
    touched = connected(stage, axis)
    mixed = [iv.name for iv in op.axis if id(iv) in touched]
    if mixed:  # as TVM: the factored loop must not carry an output axis
        raise ScheduleError(
            f"rfactor of {stage.name}: {axis.name} is fused with data-parallel axis {', '.join(mixed)}, so it is not "
            f"a loop of the reduction alone; rfactor a loop made of reduction axes only (split or fuse "
            f"{', '.join(iv.name for iv in op.reduce_axis)} without {', '.join(mixed)})")
    rf_op, fiv, rest = _partial_op(stage, axis, pos, touched)
    ext = fiv.dom.extent
    # B: a reduction over the factored axis, on fresh loops
    new_axis = [E.IterVar(iv.dom, E.Var(iv.name, iv.dtype), E.IterVar.DATA_PAR) for iv in op.axis]
    kv = E.IterVar(E.Range(0, ext), E.Var(axis.name + ".v", axis.dtype), E.IterVar.REDUCE)
    idx = [iv.var for iv in new_axis]
    idx.insert(pos, kv.var)
    loads = tuple(t[tuple(idx)] for t in rf_op.outputs)
    renamed = {a.var: b.var for a, b in zip(op.axis, new_axis)}
    init = tuple(substitute(i, renamed) for i in red.init)
    finish = substitute(red.finish, renamed) if red.finish is not None else None  # the total is finished as before
    new_op = ComputeOp(op.name, op.tag, op.attrs, new_axis,
                       [E.Reduce(red.combiner, loads, (kv,), E.const(True), k, init, finish, red.acc)
                        for k in range(len(loads))],
                       substitute(op.where, {a.var: b.var for a, b in zip(op.axis, new_axis)}) if op.where is not None else None)

    plan = plan_stage_op(sch, stage, new_op)  # a reader refusing B's new op refuses before anything changes
    rfs = _partial_stage(sch, stage, rf_op, axis, fiv, rest, pos, touched, factor_axis)
    _note_rfactor_loops(sch, stage, rfs, axis, fiv, kv, pos)
    stage.relations = []
    stage.all_iter_vars = list(new_op.root_iter_vars)
    stage.leaf_iter_vars = list(new_op.root_iter_vars)
    stage.iter_var_attrs = {}
    if stage.storage is not None:  # B's values are still B's to store: its index speaks of B's new axes
        stage.storage = replace(stage.storage, indices=tuple(substitute(x, renamed) for x in stage.storage.indices))
    _insert_stage(sch, rfs, sch.stages.index(stage))
    apply_stage_ops(sch, plan)
    return rf_op.outputs if rf_op.num_outputs > 1 else rf_op.output(0)


def _rfactor_position(stage: Stage, op: ComputeOp, axis: E.IterVar, factor_axis: int) -> int:
    """Where the factored axis goes among B.rf's axes; refuses what rfactor cannot factor."""
    if not op.is_reduction:
        raise ScheduleError(f"rfactor: stage {stage.name} is not a reduction, so there is nothing to factor")
    if not isinstance(axis, E.IterVar) or axis not in stage.leaf_iter_vars:
        stage._check_leaf(axis, "rfactor")
    if not axis.is_reduce:
        raise ScheduleError(
            f"rfactor of {stage.name}: {axis.name} is a data-parallel loop; rfactor needs one of {stage.name}'s "
            f"reduction loops: {', '.join(iv.name for iv in stage.leaf_iter_vars if iv.is_reduce)}"
        )
    ndim = len(op.axis)
    pos = factor_axis if factor_axis >= 0 else ndim + 1 + factor_axis
    if not 0 <= pos <= ndim:
        raise ScheduleError(
            f"rfactor of {stage.name}: factor_axis={factor_axis} is out of range; the factored axis can go at "
            f"positions 0..{ndim} (or -1..{-ndim - 1}) of {stage.name}.rf's {ndim + 1} axes"
        )
    return pos


def _partial_op(stage: Stage, axis: E.IterVar, pos: int, touched: set[int]):
    """B.rf's operation: B's reduction with ``axis`` made data-parallel axis ``pos``; also the
    new axis and the other reduction loops tied to ``axis`` (B.rf's reduce roots now)."""
    op = stage.op
    red: E.Reduce = op.body[0]
    rng = loop_ranges(stage, [iv for iv in op.reduce_axis if id(iv) in touched])
    trels = [r for r in stage.relations if any(id(i) in touched for i in r.inputs)]
    fiv = E.IterVar(E.Range(0, rng[axis].extent), E.Var(axis.name, axis.dtype), E.IterVar.DATA_PAR)
    value: dict[E.IterVar, E.PrimExpr] = {}
    for iv in stage.leaf_iter_vars:
        if id(iv) in touched:
            value[iv] = fiv.var if iv is axis else iv.var
    if not E.is_const_int(rng[axis].min, 0):
        value[axis] = E.add(fiv.var, rng[axis].min)
    preds = _index_up(trels, rng, value)
    sub = {iv.var: value[iv] for iv in op.reduce_axis if id(iv) in touched}
    rest = [iv for iv in stage.leaf_iter_vars if id(iv) in touched and iv is not axis]
    for iv in rest:  # split/fuse outputs made by this schedule become B.rf's reduce roots, with the
        if iv.dom is None:  # domain they were given when made (IR is never changed afterwards)
            raise InternalError(f"rfactor of {stage.name}: reduction loop {iv.name} was made without a domain")
    rf_reduce = [iv for iv in op.reduce_axis if id(iv) not in touched] + rest
    src = tuple(substitute(s, sub) for s in red.source)
    cond = E.all_(substitute(red.condition, sub), *preds)
    rf_axis = [*op.axis[:pos], fiv, *op.axis[pos:]]
    if rf_reduce:
        rf_bodies = [E.Reduce(red.combiner, src, rf_reduce, cond, k, ()) for k in range(len(src))]
    else:  # nothing left to reduce: one value per point, the identity where `where` is false
        ident = red.combiner.identity
        rf_bodies = [s if E.is_const_int(cond, 1) else E.select(cond, s, i) for s, i in zip(src, ident)]
    return ComputeOp(f"{op.name}.rf", op.tag, op.attrs, rf_axis, rf_bodies, op.where), fiv, rest


def _partial_stage(sch: Schedule, stage: Stage, rf_op: ComputeOp, axis: E.IterVar, fiv: E.IterVar,
                   rest: list[E.IterVar], pos: int, touched: set[int], factor_axis: int) -> Stage:
    """B.rf's stage: it takes over B's loops (untouched relations, their IterVars, attachments,
    annotations), with the factored axis placed among them where axis ``pos`` lands."""
    op = stage.op
    rfs = type(stage)(rf_op, sch)  # the class of the stage it factors (stage.py calls this module)
    rfs.created_by = f"rfactor({stage.name}, {axis.name}, factor_axis={factor_axis})"
    rfs.derived_from[fiv] = f"rfactor of {stage.name}'s reduction loop {axis.name}"
    rfs.relations = [r for r in stage.relations if not any(id(i) in touched for i in r.inputs)]
    rfs.all_iter_vars = list(rf_op.root_iter_vars) + [o for r in rfs.relations for o in r.outputs]
    kept = [iv for iv in stage.leaf_iter_vars if id(iv) not in touched]
    from_root = {k: j for j, a in enumerate(op.axis) for k in descendants(stage, [a])}
    at = next((n for n, iv in enumerate(kept) if from_root.get(id(iv), -1) >= pos), None)
    if at is None:
        at = max((n + 1 for n, iv in enumerate(kept) if id(iv) in from_root), default=0)
    rfs.leaf_iter_vars = [*kept[:at], fiv, *kept[at:], *rest]
    mapping = {id(iv): iv for iv in rfs.all_iter_vars}
    mapping[id(axis)] = fiv
    _move_loops(sch, stage, rfs, mapping)
    return rfs


def _note_rfactor_loops(sch: Schedule, stage: Stage, rfs: Stage, axis: E.IterVar, fiv: E.IterVar,
                        kv: E.IterVar, pos: int) -> None:
    """For each of B's old loops, what a later use of it should say."""
    sname = py_name(stage.name)
    moved = {id(iv) for iv in rfs.all_iter_vars}
    for iv in stage.all_iter_vars:
        if id(iv) in moved and iv is not axis:
            sch.iv_notes[iv] = (f"rfactor({stage.name}) moved this loop into {rfs.name}; use s[{sname}_rf] for it, "
                                f"and s[{sname}].op.axis / s[{sname}].op.reduce_axis for {stage.name}'s new loops")
        else:
            sch.iv_notes[iv] = (f"rfactor({stage.name}) factored this reduction loop: {rfs.name} now loops over "
                                f"{sname}_rf.op.axis[{pos}] ({fiv.name}) and {stage.name} reduces over "
                                f"s[{sname}].op.reduce_axis[0] ({kv.name})")


__all__ = ["SCOPES", "cache_read", "cache_write", "loop_ranges", "py_name", "rfactor", "set_stage_op"]
