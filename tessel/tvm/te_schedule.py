"""``tvm.te.schedule``: the schedule classes, the IterVar relations and the two steps TVM's own
tests call one by one, ``InferBound`` (a range for every loop) and ``ScheduleOps`` (the loop nest
of a bounded schedule) — tessel's seed-000 InferBound and its ScheduleOps, unchanged — and the
graph queries (``CreateReadGraph``, ``PostDFSOrder``, ``CreateAttachPath``, ``ScanGetBody``).

``ScheduleOps(s, bounds)`` lowers ``s`` with the ranges InferBound gives it; ``bounds`` is the
map ``InferBound(s)`` returned for this schedule (TVM passes it along; a map edited by hand is
not followed, and one that is not InferBound's for ``s`` is refused)."""

from __future__ import annotations

from ..bound.infer import run_infer_bound
from ..errors import DefinitionError
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.buffer import DeclBuffer as Buffer
from ..lower import schedule_ops as _schedule_ops
from ..lower.schedule_ops import loop_builder
from ..runtime.extern import register_func
from ..schedule import create_schedule as _create_schedule
from ..schedule.auto_inline import auto_inline_broadcast as AutoInlineBroadcast
from ..schedule.auto_inline import auto_inline_elemwise as AutoInlineElemWise
from ..schedule.auto_inline import auto_inline_injective as AutoInlineInjective
from ..schedule.graph import attach_path
from ..schedule.history import keep_records
from ..schedule.relations import Fuse, Rebase, Singleton, Split
from ..schedule.schedule import Schedule
from ..schedule.stage import Stage
from ..te.operation import Operation
from ..te.operation import create_read_graph as CreateReadGraph
from ..te.operation import post_dfs_order as PostDFSOrder
from ..te.scan_fixpoint import fixed_point_axes
from ..te.tensor_intrin import tensorize_body, tensorize_regions
from ._driver import without_produce_marks

#: TVM's ``tvm.te.schedule.IterVar`` (its iter types: ``IterVar.Unrolled``, ``IterVar.Vectorized`` ...)
IterVar = E.IterVar


def create_schedule(ops) -> Schedule:
    """``te.create_schedule``; under ``PassContext(config={"te.keep_schedule_record": True})``
    the schedule keeps TVM's record (``s.schedule_record``, ``s.primitive_record``)."""
    from .transform import PassContext

    sch = _create_schedule(ops)
    if PassContext.current().config.get("te.keep_schedule_record"):
        keep_records(sch)
    return sch


def InferBound(sch: Schedule) -> dict[E.IterVar, E.Range]:
    """The range of every loop of every stage that is not inlined (TVM's ``Map<IterVar, Range>``)."""
    _check(sch, "InferBound")
    return dict(run_infer_bound(sch).rmap)


def ScheduleOps(sch: Schedule, dom_map: dict, debug_keep_trivial_loop: bool = False) -> S.Stmt:
    """The loop nest of ``sch`` over its tensors (``ProducerRealize``/``ProducerStore``), before
    storage flattening: what ``tvm.lower`` simplifies and flattens next."""
    _check(sch, "ScheduleOps")
    ctx = run_infer_bound(sch)
    if not isinstance(dom_map, dict) or any(k not in ctx.rmap for k in dom_map):
        raise DefinitionError("tvm.te.schedule.ScheduleOps(s, bounds): bounds must be the map "
                              "tvm.te.schedule.InferBound(s) returned for this schedule")
    return without_produce_marks(_schedule_ops(ctx))


def CreateAttachPath(sch: Schedule) -> dict[Operation, list[E.IterVar]]:
    """Each operation's enclosing loops, innermost first (TVM's attach paths)."""
    _check(sch, "CreateAttachPath")
    return {st.op: attach_path(st) for st in sch.stages}


def ScanGetBody(scan: Operation) -> list[Operation]:
    """The operations a scan runs once per step: those computed from its states."""
    return list(scan.body_ops())


def ScanFixPointAnalysis(scan: Operation) -> dict[E.IterVar, E.IntImm]:
    """1 for each spatial axis of the scan that is a fixed point, else 0 (see scan_fixpoint.py)."""
    return {iv: E.IntImm(int(fixed), "int32") for iv, fixed in fixed_point_axes(scan).items()}


class _ListedMap(dict):
    """A map whose ``items()`` is a list, as TVM's ``Map`` has it (``m.items()[0]``)."""

    def items(self):
        return list(super().items())


def _tensorized(stage: Stage, what: str):
    """The loop builder ScheduleOps would write ``stage`` through, and the stage's body."""
    if not isinstance(stage, Stage) or stage.schedule.stage_map.get(stage.op) is not stage:
        raise DefinitionError(f"{what}: expected a stage of a schedule (s[C]), got {stage!r}")
    ctx = run_infer_bound(stage.schedule)
    return loop_builder(ctx), ctx.bodies[stage.op]


def InferTensorizeRegion(stage: Stage, dom_map: dict):
    """TVM's test hook ``test.op.InferTensorizeRegion``: the range of each root axis and the
    region of each tensor read that one call of the stage's tensor intrinsic covers."""
    nest, body = _tensorized(stage, "test.op.InferTensorizeRegion")
    out_dom, in_region = tensorize_regions(stage, nest, body)
    return _ListedMap(out_dom), _ListedMap(in_region)


def MatchTensorizeBody(stage: Stage, out_dom: dict, in_region: dict, intrin) -> list:
    """TVM's test hook ``test.op.MatchTensorizeBody``: the stage's body over those regions in
    the intrinsic's terms (refused, saying where, unless it is the intrinsic's)."""
    nest, body = _tensorized(stage, "test.op.MatchTensorizeBody")
    return tensorize_body(stage, nest, body, out_dom, in_region, intrin)


def _check(sch, what: str) -> None:
    if not isinstance(sch, Schedule):
        raise DefinitionError(f"tvm.te.schedule.{what}: expected a schedule (te.create_schedule(...)), "
                              f"got {type(sch).__name__}")


__all__ = ["AutoInlineBroadcast", "AutoInlineElemWise", "AutoInlineInjective", "Buffer", "CreateAttachPath", "CreateReadGraph", "Fuse", "InferBound", "InferTensorizeRegion", "MatchTensorizeBody", "IterVar", "PostDFSOrder", "Rebase", "ScanFixPointAnalysis", "ScanGetBody", "Schedule", "ScheduleOps", "Singleton", "Split", "Stage", "create_schedule"]

# TVM registers these two analyses of tensorize as global functions for its tests
for _name, _fn in (("test.op.InferTensorizeRegion", InferTensorizeRegion),
                   ("test.op.MatchTensorizeBody", MatchTensorizeBody)):
    register_func(_name, _fn, override=True)
