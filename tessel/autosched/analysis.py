"""What the automatic scheduler reads off a compute definition before it writes a schedule.

Why from the reads alone: the rules of a sketch (Ansor's, Halide's) depend on which loops a
stage's operands follow. A reduction with an operand that ignores one data-parallel axis and
another operand that ignores a second one has reuse in both directions, and a register tile
pays off (matmul: ``A[i, k]`` ignores ``j``, ``B[k, j]`` ignores ``i``; conv2d: the weights
ignore the pixel, the input ignores the output channel). An axis that is the last index of a
read is contiguous there and is the one to vectorize. A reduction whose axis is the last index
of its reads (a row sum) vectorizes only after ``rfactor``. A producer read once, at the
consumer's own point, costs nothing to recompute and is inlined; one read at several offsets
(a stencil) or by a reduction that reuses it is stored instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..ir import expr as E
from ..ir.functor import collect
from ..schedule.reducer_checks import reorderable
from ..te.tensor import ComputeOp, Operation, Tensor

# calls a recomputation would repeat at a cost (exp, log, sqrt ...): a producer using one is
# not inlined into a consumer reading it more than once
_CHEAP_NODES = (E.Add, E.Sub, E.Mul, E.Var, E.IntImm, E.FloatImm, E.ProducerLoad, E.Cast)


@dataclass
class Read:
    """One read ``tensor[indices]`` in a body."""

    tensor: Tensor
    indices: tuple

    def vars_at(self, d: int) -> set[E.Var]:
        return set(collect(self.indices[d], lambda n: isinstance(n, E.Var)))

    def all_vars(self) -> set[E.Var]:
        out: set[E.Var] = set()
        for d in range(len(self.indices)):
            out |= self.vars_at(d)
        return out


@dataclass
class OpInfo:
    """A computed operation, its reads and readers, and the shape of its loops."""

    op: ComputeOp
    reads: list[Read]
    consumers: list[Operation] = field(default_factory=list)
    is_output: bool = False

    @property
    def name(self) -> str:
        return self.op.name

    @property
    def is_reduction(self) -> bool:
        return bool(self.op.reduce_axis)

    @property
    def single_output(self) -> bool:
        return len(self.op.outputs) == 1

    @property
    def dtype(self) -> str:
        return str(self.op.outputs[0].dtype)

    def reads_of(self, producer: Operation) -> list[Read]:
        return [r for r in self.reads if r.tensor.op is producer]

    def cheap(self) -> bool:
        """Whether recomputing the body costs about as much as loading its value."""
        return all(isinstance(n, _CHEAP_NODES) for b in self.op.body
                   for n in collect(b, lambda n: isinstance(n, E.PrimExpr)))


def extent(iv: E.IterVar) -> int | None:
    """A loop's constant trip count; None for a symbolic one."""
    ext = iv.dom.extent
    return ext.value if isinstance(ext, E.IntImm) else None


def _is_unit_var(idx: E.PrimExpr, v: E.Var) -> bool:
    """``v`` or ``v + c`` / ``c + v`` / ``v - c``: a read that walks unit steps along ``v``."""
    if idx is v:
        return True
    if isinstance(idx, E.Add | E.Sub):
        a, b = idx.a, idx.b
        if a is v and isinstance(b, E.IntImm):
            return True
        if isinstance(idx, E.Add) and b is v and isinstance(a, E.IntImm):
            return True
        if isinstance(a, E.Var | E.Add | E.Sub) and isinstance(b, E.Var):  # y + ry, x + rx: a stencil
            return a is v or b is v
    return False


class Graph:
    """The computed operations reachable from ``outputs``, producers first."""

    def __init__(self, outputs: list[Operation]):
        from ..te.operation import post_dfs_order

        self.outputs = list(outputs)
        self.order = [op for op in post_dfs_order(self.outputs)]
        self.infos: dict[Operation, OpInfo] = {}
        for op in self.order:
            if isinstance(op, ComputeOp):
                loads = [ld for b in op.body for ld in collect(b, lambda n: isinstance(n, E.ProducerLoad))]
                self.infos[op] = OpInfo(op, [Read(ld.producer, ld.indices) for ld in loads],
                                        is_output=any(op is o for o in self.outputs))
        for info in self.infos.values():
            for t in {id(r.tensor.op): r.tensor.op for r in info.reads}.values():
                if t in self.infos and all(c is not info.op for c in self.infos[t].consumers):
                    self.infos[t].consumers.append(info.op)
        names = [op.name for op in self.infos]
        self.labels = {id(op): op.name if names.count(op.name) == 1 else f"{op.name}#{k}"
                       for k, op in enumerate(self.infos)}

    def label(self, op: Operation) -> str:
        """The stage's name in knob names (``C.rows``), numbered where two stages share a name."""
        return self.labels[id(op)]

    def computed(self) -> list[OpInfo]:
        return [self.infos[op] for op in self.order if op in self.infos]

    def inputs(self) -> list[Tensor]:
        """Every tensor the computation reads that nothing computes (placeholders), in order."""
        return [op.output(0) for op in self.order if op not in self.infos and op.num_outputs == 1]


# ---- the questions the rules ask -------------------------------------------------------------
def vector_axis(info: OpInfo) -> E.IterVar | None:
    """The innermost data-parallel axis, when every read that uses it has it as a unit-step last
    index (so the loop over it loads whole vectors) and some read does."""
    if not info.op.axis:
        return None
    v = info.op.axis[-1].var
    used = False
    for r in info.reads:
        if v not in r.all_vars():
            continue
        if not r.indices or not _is_unit_var(r.indices[-1], v) or any(v in r.vars_at(d)
                                                                        for d in range(len(r.indices) - 1)):
            return None
        used = True
    return info.op.axis[-1] if used else None


def rows_axis(info: OpInfo, inner: E.IterVar) -> E.IterVar | None:
    """A second data-parallel axis for the register tile's rows: one read follows it and not
    the vector axis (its value is broadcast along a row), another follows the vector axis and
    not it (its vectors are reused by every row). The outermost such axis nearest the inner one."""
    found = None
    for iv in info.op.axis[:-1]:
        if extent(iv) == 1:
            continue
        bcast = any(iv.var in r.all_vars() and inner.var not in r.all_vars() for r in info.reads)
        reuse = any(inner.var in r.all_vars() and iv.var not in r.all_vars() for r in info.reads)
        if bcast and reuse:
            found = iv
    return found


def tileable(info: OpInfo) -> bool:
    """A reduction a register tile suits: one output, computed by a reduction, with a vector axis."""
    return (info.is_reduction and info.single_output and isinstance(info.op.body[0], E.Reduce)
            and vector_axis(info) is not None)


def row_reduction(info: OpInfo) -> bool:
    """A reduction whose innermost reduction axis is the unit-step last index of every read
    using it (a row sum, an argmax): vectorizable along the reduction, after rfactor, when its
    reducer gives the same result combined in another order (``reducer_checks.reorderable``:
    auto_schedule never changes what a kernel computes, ties of an argmax included)."""
    if not info.is_reduction:
        return False
    body = info.op.body[0]
    if not isinstance(body, E.Reduce) or not reorderable(body.combiner):
        return False
    k = info.op.reduce_axis[-1].var
    used = [r for r in info.reads if k in r.all_vars()]
    return bool(used) and all(r.indices and r.indices[-1] is k for r in used)


def packable(info: OpInfo, inner: E.IterVar, rows: E.IterVar | None) -> list[Tensor]:
    """Operands worth copying into a panel before the tile loops: read along the vector axis
    with a reduction axis as another index (each reduction step jumps a whole row of them, as
    ``B[k, j]`` does), following no other data-parallel axis (so one panel serves every row
    block, and the copy costs one pass over the operand)."""
    red = {iv.var for iv in info.op.reduce_axis}
    out: list[Tensor] = []
    for r in info.reads:
        vs = r.all_vars()
        if (inner.var in vs and vs & red and vs <= red | {inner.var} and (rows is None or rows.var not in vs)
                and all(isinstance(i, E.Var) for i in r.indices) and r.tensor not in out):
            out.append(r.tensor)
    return out


def inlinable(g: Graph, info: OpInfo) -> bool:
    """Injective, not an output, and inlining repeats no work: every reader reads it at one
    point of its own loops (no stencil); a reader that ignores one of its loops in the read
    (a row value read along the row, an operand a reduction reuses) would recompute it along
    that loop, which only a cheap body or a data-parallel reader of it affords; and an
    expensive body is read once."""
    if info.is_output or info.is_reduction or not info.consumers:
        return False
    total = 0
    for c in info.consumers:
        cinfo = g.infos.get(c)
        if cinfo is None:
            return False
        reads = cinfo.reads_of(info.op)
        if len({tuple(map(str, r.indices)) for r in reads}) > 1:
            return False
        total += len(reads)
        if (not follows_all(reads[0], cinfo) or stencil(reads[0])) and (cinfo.is_reduction or not info.cheap()):
            return False
    return total <= 1 or info.cheap()


def follows_all(read: Read, reader: OpInfo) -> bool:
    """Whether the read's indices use every loop of its reader (no reuse along any loop)."""
    vs = read.all_vars()
    return all(iv.var in vs for iv in reader.op.axis + reader.op.reduce_axis)


def stencil(read: Read) -> bool:
    """Whether the read's indices combine more loops than it has dimensions (``Xp[c, y + ry,
    x + rx]``): several iterations read each element, as a window slides over it."""
    return len(read.all_vars()) > len(read.indices)


def row_aligned(read: Read, reader: OpInfo) -> bool:
    """Whether the read's first index walks the reader's first loop (so the producer's rows can
    be computed one block of the reader's rows at a time)."""
    return bool(read.indices and reader.op.axis) and _is_unit_var(read.indices[0], reader.op.axis[0].var)


def elementwise_read(read: Read, reader: OpInfo) -> bool:
    """``reader`` reads exactly ``T[axes]`` at its own point: a pure elementwise consumer."""
    return len(read.indices) == len(reader.op.axis) and all(
        i is iv.var for i, iv in zip(read.indices, reader.op.axis))
