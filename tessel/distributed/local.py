"""One rank's program: the user's computation over the rank's boxes, and the user's schedule.

Every operation is rebuilt over the box of its root axes the plan gives this rank (a
distributed stage: its block; another compute stage: what its readers need here), with every
read re-pointed at the local tensors and shifted by their boxes' origins, and every size
replaced by its value. The axes keep their names and order, so the user's recorded steps
replay onto it (``History.replay``): the split, vectorize or parallel given for one process
schedules each rank's block. Why not one kernel with the block's bounds as arguments: a
rank's arrays are smaller than the global ones, and a kernel over them is an ordinary tessel
kernel that needs nothing of MPI.
"""

from __future__ import annotations

from ..errors import DistributionError
from ..ir import expr as E
from ..ir.functor import Mutator
from ..poly.distribute import Box, RankPart
from ..schedule.schedule import Schedule
from ..te.tensor import ComputeOp, PlaceholderOp, Tensor
from ..te.tensor import placeholder as make_placeholder


class _Localize(Mutator):
    """Reads re-pointed at local tensors (indices minus the box origin); reduce axes renewed."""

    def __init__(self, tmap: dict[Tensor, tuple[Tensor, Box]], vmap: dict, raxes: dict):
        self.tmap, self.vmap, self.raxes = tmap, vmap, raxes

    def visit_Var(self, v: E.Var):
        return self.vmap.get(v, v)

    def visit_ProducerLoad(self, e: E.ProducerLoad):
        idx = [self.visit(i) for i in e.indices]
        t, box = self.tmap[e.producer]
        return E.ProducerLoad(t, [i - lo if lo else i for i, lo in zip(idx, box.lo)])

    def visit_Reduce(self, r: E.Reduce):
        return E.Reduce(r.combiner, [self.visit(x) for x in r.source], [self.raxes[iv] for iv in r.axis],
                        self.visit(r.condition), r.value_index, r.init, r.finish, r.acc)


def _box_of(op: ComputeOp, part: RankPart, piece: dict | None) -> dict[str, tuple[int, int]]:
    got = piece[op.name] if piece is not None and op.name in piece else part.instances.get(op.name)
    if got is None:  # no instance here: a one-point placeholder box, never read
        return {iv.var.name: (0, 1) for iv in op.root_iter_vars}
    return got


def local_program(ops: list, part: RankPart, sizes: dict[E.Var, int], piece: dict | None = None) -> dict[str, Tensor]:
    """The rank's tensors by name (placeholders and computes), producers first; ``piece``
    (stage name -> root-axis ranges) narrows a stage to one box of its block (a core or rim)."""
    consts = {v: E.IntImm(n, v.dtype) for v, n in sizes.items()}
    tmap: dict[Tensor, tuple[Tensor, Box]] = {}
    out: dict[str, Tensor] = {}
    for op in ops:
        if isinstance(op, PlaceholderOp):
            t = op.output(0)
            box = part.storage.get(t.name) or Box(tuple(0 for _ in t.shape), tuple(1 for _ in t.shape))
            new = make_placeholder(tuple(b - a for a, b in zip(box.lo, box.hi)), t.dtype, t.name)
            tmap[t], out[t.name] = (new, box), new
            continue
        if type(op) is not ComputeOp:  # a recurrence's definitions share a storage: not rebuilt as computes
            raise DistributionError(f"stage {op.name}: a {type(op).__name__} cannot be part of a distributed "
                                    "program yet; compute it before and pass it as an input")
        ranges = _box_of(op, part, piece)
        vmap, raxes = dict(consts), {}
        new_axes = []
        for iv in op.root_iter_vars:
            lo, hi = ranges.get(iv.var.name, (0, 1))
            nv = E.IterVar(E.Range(0, max(1, hi - lo)), E.Var(iv.var.name, iv.var.dtype), iv.iter_type)
            vmap[iv.var] = nv.var + lo if lo else nv.var
            if iv in op.reduce_axis:
                raxes[iv] = nv
            else:
                new_axes.append(nv)
        mut = _Localize(tmap, vmap, raxes)
        bodies = [mut.visit(b) for b in op.body]
        where = mut.visit(op.where) if op.where is not None else None
        new_op = ComputeOp(op.name, op.tag, op.attrs, new_axes, bodies, where)
        box = Box(tuple(ranges.get(iv.var.name, (0, 1))[0] for iv in op.axis),
                  tuple(ranges.get(iv.var.name, (0, 1))[1] for iv in op.axis))
        for k, t in enumerate(op.outputs):
            tmap[t] = (new_op.output(k), box)
        out[op.name] = new_op.output(0)
    return out


def local_schedule(sch: Schedule, tensors: dict[str, Tensor]) -> Schedule:
    """The user's steps replayed onto the rank's program (the same stages, axes and names)."""
    outs = [tensors[op.name].op for op in sch.history.origin.outputs]
    return sch.history.replay(onto=outs)

