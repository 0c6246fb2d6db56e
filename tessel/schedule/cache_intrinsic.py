"""``cache_write`` of a stage computed by a tensor intrinsic's call (te/tensor_compute.py): the
cache is the same call writing the cache's storage, and the stage becomes a copy of it (TVM's
rule for a TensorComputeOp). Only an untransformed stage is cached: its loops are the call's
axes, so the cache's loops are their copies and nothing needs re-laying out."""

from __future__ import annotations

from ..errors import ScheduleError
from ..ir import expr as E
from ..ir.functor import substitute
from ..te.tensor import ComputeOp
from ..te.tensor_compute import TensorComputeOp
from .dataflow import _insert_stage, _move_loops, _unique_name, apply_stage_ops, check_scope, plan_stage_op


def cache_write_intrinsic_call(sch, stage, op: TensorComputeOp, scope: str):
    check_scope(scope, f"cache_write of {stage.name}")
    if stage.relations:
        raise ScheduleError(f"cache_write of {stage.name}: it is computed by the intrinsic {op.intrin.name} and its "
                            "loops were already split, fused or reordered; cache_write it first, then schedule "
                            "the cache")
    sched = op.axis[:op.schedulable_ndim]
    new_axes = [E.IterVar(iv.dom, E.Var(iv.var.name + ".c", iv.var.dtype), iv.iter_type) for iv in op.axis]
    vmap = {iv.var: nv.var for iv, nv in zip(op.axis, new_axes)}
    regions = [[E.Range(substitute(r.min, vmap), substitute(r.extent, vmap)) for r in reg] for reg in op.regions]
    scalars = [substitute(x, vmap) for x in op.scalar_inputs]
    cache_op = TensorComputeOp(_unique_name(sch, stage.name, scope), op.tag, op.attrs, new_axes, op.schedulable_ndim,
                               op.reduce_axis, op.intrin, op.inputs, regions, scalars)
    # the stage reads its value back, over loops of its own for the intrinsic's axes too
    copy_axes = list(sched) + [E.IterVar(iv.dom, E.Var(iv.var.name, iv.var.dtype), E.IterVar.DATA_PAR)
                               for iv in op.axis[op.schedulable_ndim:]]
    idx = tuple(iv.var for iv in copy_axes)
    copy_op = ComputeOp(op.name, op.tag, op.attrs, copy_axes, [t[idx] for t in cache_op.outputs])
    plan = plan_stage_op(sch, stage, copy_op)
    cstage = type(stage)(cache_op, sch)
    cstage.scope, cstage.scope_given = scope, True
    cstage.created_by = f"cache_write({stage.name}, {scope!r})"
    mapping = {id(iv): nv for iv, nv in zip(sched, new_axes)} | {id(iv): iv for iv in op.reduce_axis}
    _move_loops(sch, stage, cstage, mapping)
    stage.all_iter_vars = list(copy_axes)
    stage.leaf_iter_vars = list(copy_axes)
    stage.iter_var_attrs = {}
    _insert_stage(sch, cstage, sch.stages.index(stage))
    apply_stage_ops(sch, plan)
    return cache_op.outputs if len(cache_op.outputs) > 1 else cache_op.output(0)
