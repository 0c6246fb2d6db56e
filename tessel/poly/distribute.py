"""Which elements each MPI rank owns, needs and receives from which rank, from the access relations.

Owner computes: a distributed stage's instances are split in contiguous blocks of its
distributed axis, one per rank. Every other compute stage is computed by each rank on the box
its readers there need (redundant work rather than a message in the middle of the program); a
placeholder lives where the user puts it (blocks of one dimension, or a copy on every rank).
Then, per rank ``r`` and placeholder ``T``, exactly as Tiramisu's islpy prototype and the
feasibility study (``DISTRIBUTED.md``) derive them::

    need(r)     = reads of T by the instances rank r runs
    recv(r, q)  = (need(r) - have(r)) & have(q)          for every other rank q

so the halo widths and the partners are not assumed (r +- 1, width from a stencil order) but
computed, and each message carries the reads that cause it. Sizes are fixed (the plan is made
for one call's shapes), so every set here is a finite set of points and the answer is exact.

The result is plain data (boxes of integers, strings): the executor, the views and the tests
read it without islpy. Refusals (a halo wider than a neighbour's block, a read of another
rank's computed value inside the program) raise :class:`~tessel.errors.DistributionError` with
a witness: the element, the instance that reads it and the access.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import islpy as isl

from ..errors import DistributionError
from ..ir import expr as E
from .model import Model, Statement

Interval = tuple[int, int]  # [lo, hi)


@dataclass(frozen=True)
class Box:
    """The elements ``lo[d] <= x[d] < hi[d]`` of a tensor (global indices)."""

    lo: tuple[int, ...]
    hi: tuple[int, ...]

    @property
    def size(self) -> int:
        n = 1
        for a, b in zip(self.lo, self.hi):
            n *= max(0, b - a)
        return n

    def text(self, name: str) -> str:
        """``A[63, 1:7]``: one index where the box is one element wide, a slice elsewhere."""
        parts = [str(a) if b == a + 1 else f"{a}:{b}" for a, b in zip(self.lo, self.hi)]
        return f"{name}[{', '.join(parts)}]"


@dataclass(frozen=True)
class Message:
    """Part ``dst`` receives ``boxes`` of ``tensor`` from part ``src`` before it computes (a part
    is a rank's block: the rank itself, or block ``k`` of rank ``k % ranks`` when block-cyclic)."""

    tensor: str
    src: int
    dst: int
    boxes: tuple[Box, ...]
    count: int
    reasons: tuple[str, ...]
    #: block-cyclic: the number of MPI ranks the parts are dealt to (0: a part is a rank)
    ranks: int = 0

    def who(self, part: int) -> str:
        return f"rank {part % self.ranks} (block {part})" if self.ranks else f"rank {part}"

    def explain(self) -> str:
        what = ", ".join(b.text(self.tensor) for b in self.boxes)
        return f"{self.who(self.dst)} needs {what} from {self.who(self.src)} because " + "; ".join(self.reasons)


@dataclass
class Layout:
    """What the plan is asked: the blocks of every distributed stage, where each placeholder lives."""

    ranks: int
    #: statement-domain name of the distributed axis per distributed stage
    axes: dict[str, str]
    #: placeholder name -> the dimension split in blocks (None: a copy on every rank)
    placement: dict[str, int | None]
    #: placeholder name -> shape; size variable -> value
    shapes: dict[str, tuple[int, ...]]
    sizes: dict[E.Var, int]
    multi_hop: bool = False
    #: also split each rank's block into a core (reads only what the rank owns) and a rim
    overlap: bool = False
    #: the extent of each distributed stage's distributed axis
    extents: dict[str, int] = field(default_factory=dict)
    #: block-cyclic: blocks of this many values, ``ranks`` of them, block k on MPI rank k % mpi_ranks
    block: int | None = None
    mpi_ranks: int = 0
    #: a 2-D grid of ranks (P0, P1), rank r at (r // P1, r % P1): each distributed stage's second
    #: axis and extent, and each placeholder's dimension split along the grid's columns
    grid: tuple[int, ...] = ()
    axes2: dict[str, str] = field(default_factory=dict)
    extents2: dict[str, int] = field(default_factory=dict)
    placement2: dict[str, int | None] = field(default_factory=dict)

    def who(self, part: int) -> str:
        """How a message names part ``part``: its rank, and its block when block-cyclic."""
        return f"rank {part % self.mpi_ranks} (block {part})" if self.block else f"rank {part}"


@dataclass
class RankPart:
    """One rank's share: the box of root-axis values each compute stage runs (None: none), the
    box of each placeholder it keeps (owned plus ghosts), and its owned block of each."""

    rank: int
    instances: dict[str, dict[str, Interval] | None] = field(default_factory=dict)
    storage: dict[str, Box | None] = field(default_factory=dict)
    owned: dict[str, Box | None] = field(default_factory=dict)
    #: with ``Layout.overlap``: the distributed stage's block as boxes of root-axis values whose
    #: reads need no message (``core``, computed while messages travel) and the rest (``rim``)
    core: list[dict[str, Interval]] = field(default_factory=list)
    rim: list[dict[str, Interval]] = field(default_factory=list)


@dataclass
class PlanData:
    ranks: int
    parts: list[RankPart]
    messages: list[Message]
    #: stages whose every rank writes partial results (reduced over a distributed axis)
    partial: list[str]


def owned_box(shape: tuple[int, ...], dims: tuple[int | None, ...], grid: tuple[int, ...], part: int,
              ranks: int, block: int | None = None) -> Box | None:
    """The elements part ``part`` owns of a tensor of ``shape`` split along ``dims`` (one per
    dimension of the grid of ranks; None: not split along that grid dimension, so copied along
    it: every rank of a grid row holds the row's block); None if it owns none. ``grid`` empty:
    one dimension of ``ranks`` parts (block-cyclic with ``block``)."""
    lo, hi = [0] * len(shape), list(shape)
    coords = divmod(part, grid[1]) if grid else (part,)
    counts = grid or (ranks,)
    for dim, c, n in zip(dims, coords, counts):
        if dim is None:
            continue
        ext = shape[dim]
        lo[dim], hi[dim] = ((min(c * block, ext), min((c + 1) * block, ext)) if block is not None
                            else blocks(ext, n)[c])  # block-cyclic: part c is block c, whatever the ranks
        if hi[dim] <= lo[dim]:
            return None
    return Box(tuple(lo), tuple(hi))


def grid_coords(layout: Layout, part: int) -> tuple[int, ...]:
    return divmod(part, layout.grid[1]) if layout.grid else (part,)


def blocks(extent: int, ranks: int, block: int | None = None) -> list[Interval]:
    """Contiguous blocks of ``range(extent)`` whose sizes differ by at most one (the first
    ``extent % ranks`` one larger), for any extent, including fewer elements than ranks; with
    ``block``, blocks of that size (the last one shorter, any beyond the extent empty)."""
    if block is not None:
        return [(min(k * block, extent), min((k + 1) * block, extent)) for k in range(ranks)]
    q, rem = divmod(extent, ranks)
    out, lo = [], 0
    for r in range(ranks):
        hi = lo + q + (1 if r < rem else 0)
        out.append((lo, hi))
        lo = hi
    return out


class _Sets:
    """The model's sets with the sizes fixed and the parameters dropped."""

    def __init__(self, model: Model, sizes: dict[E.Var, int]):
        eqs = [f"{name} = {int(sizes[v])}" for v, name in model.params.items() if v in sizes]
        names = ", ".join(model.params.values())
        fix = isl.Set(f"[{names}] -> {{ : {' and '.join(eqs) or '0 = 0'} }}")
        self.ctx = model.context.params().intersect(fix) if model.params else model.context.params()
        self.nparams = len(model.params)

    def fixed(self, x):
        x = x.intersect_params(self.ctx)
        return x.project_out(isl.dim_type.param, 0, self.nparams) if self.nparams else x


def _box_set(name: str, box: Box) -> isl.Set:
    dims = [f"x{d}" for d in range(len(box.lo))]
    cons = " and ".join(f"{a} <= {v} < {b}" for v, a, b in zip(dims, box.lo, box.hi)) or "0 = 0"
    return isl.Set(f"{{ {name}[{', '.join(dims)}] : {cons} }}")


def bounding_box(s: isl.Set) -> Box | None:
    if s.is_empty():
        return None
    n = s.dim(isl.dim_type.set)
    return Box(tuple(s.dim_min_val(d).to_python() for d in range(n)),
               tuple(s.dim_max_val(d).to_python() + 1 for d in range(n)))


def boxes_of(s: isl.Set) -> tuple[Box, ...]:
    """``s`` as few disjoint boxes: isl's disjoint pieces (one that is not a box becomes its
    points), then neighbours that line up merged (a row cut in two by isl is one row again)."""
    out: list[Box] = []
    for bset in s.make_disjoint().get_basic_sets():
        piece = isl.Set.from_basic_set(bset)
        box = bounding_box(piece)
        if box is None:
            continue
        if _box_set(bset.get_tuple_name(), box).is_subset(piece):
            out.append(box)
        else:
            piece.foreach_point(lambda p: out.append(Box(*_point_box(p))))
    return tuple(sorted(_merged(out), key=lambda b: (b.lo, b.hi)))


def _merged(boxes: list[Box]) -> list[Box]:
    """Join two boxes that are equal in all dimensions but one, where they touch, until none do."""
    boxes = list(boxes)
    joined = True
    while joined:
        joined = False
        for x in range(len(boxes)):
            for y in range(len(boxes)):
                a, b = boxes[x], boxes[y]
                if x == y:
                    continue
                diff = [d for d in range(len(a.lo)) if (a.lo[d], a.hi[d]) != (b.lo[d], b.hi[d])]
                if len(diff) == 1 and a.hi[diff[0]] == b.lo[diff[0]]:
                    d = diff[0]
                    boxes[x] = Box(a.lo, (*a.hi[:d], b.hi[d], *a.hi[d + 1:]))
                    del boxes[y]
                    joined = True
                    break
            if joined:
                break
    return boxes


def _point_box(p: isl.Point) -> tuple[tuple[int, ...], tuple[int, ...]]:
    n = p.get_space().dim(isl.dim_type.set)
    xs = tuple(p.get_coordinate_val(isl.dim_type.set, d).to_python() for d in range(n))
    return xs, tuple(x + 1 for x in xs)


def _restrict(dom: isl.Set, stmt: Statement, axis: str, iv: Interval) -> isl.Set:
    names = [v.name for v in stmt.dim_vars]
    if axis not in names:
        return dom
    d = names.index(axis)
    return dom.lower_bound_val(isl.dim_type.set, d, isl.Val(iv[0])).upper_bound_val(
        isl.dim_type.set, d, isl.Val(iv[1] - 1))


def derive(model: Model, layout: Layout) -> PlanData:
    """The plan for ``layout`` (see the module's docstring); refuses what owner-computes with
    messages before the kernel cannot do, with a witness."""
    sets = _Sets(model, layout.sizes)
    stmts = {st: [s for s in model.statements if s.stage is st] for st in model.sch.stages}
    parts = [RankPart(r) for r in range(layout.ranks)]
    rows = layout.grid[0] if layout.grid else layout.ranks
    dist_blocks = {name: blocks(layout.extents[name], rows, layout.block) for name in layout.axes}
    dist_blocks2 = {name: blocks(layout.extents2[name], layout.grid[1]) for name in layout.axes2}
    doms: list[dict[Statement, isl.Set]] = [{} for _ in parts]
    for st in reversed(model.sch.stages):  # readers first: a stage's instances follow from theirs
        if st.is_placeholder:
            continue
        for part, dom in zip(parts, doms):
            for s in stmts[st]:
                dom[s] = _instances(s, st.op.name, layout, (dist_blocks, dist_blocks2), part.rank, dom, sets)
            part.instances[st.op.name] = _instance_box(stmts[st], dom)
    _check_computed_reads(model, layout, doms, sets)
    messages: list[Message] = []
    for st in model.sch.stages:
        if st.is_placeholder:
            messages += _placeholder(st.op.name, model, layout, parts, doms, sets)
    partial = [name for name, ax in layout.axes.items() if _reduces_over(stmts, model, name, ax)]
    if layout.overlap:
        (axis,) = layout.axes.values()
        for part, dom in zip(parts, doms):
            _core_and_rim(model, part, dom, sets, axis)
    return PlanData(layout.ranks, parts, messages, partial)


def overlap_refusal(model: Model, layout: Layout) -> str | None:
    """Why the ranks' blocks cannot be split into core and rim (None: they can): one distributed
    stage of one statement (no reduction), so that a box of its instances is a kernel's domain."""
    comp = [st for st in model.sch.stages if not st.is_placeholder]
    if layout.grid:
        return "the ranks form a 2-D grid (overlap splits the blocks of one distributed axis)"
    if len(comp) != 1 or comp[0].op.name not in layout.axes:
        return "the program has several compute stages (overlap splits a program of one distributed stage)"
    if len([s for s in model.statements if s.stage is comp[0]]) != 1:
        return f"stage {comp[0].op.name} is a reduction (overlap splits a stage of one statement)"
    return None


def _core_and_rim(model: Model, part: RankPart, dom: dict[Statement, isl.Set], sets: _Sets, axis: str) -> None:
    """``core``: the rank's rows (values of the distributed ``axis``) none of whose instances
    reads an element the rank does not own; ``rim``: the other rows. Whole rows, so that a
    stencil's block is one core and two rim boxes rather than one box per border element."""
    (stmt, inst), = dom.items()
    names = [v.name for v in stmt.dim_vars]
    whole = bounding_box(inst)
    if whole is None or axis not in names:
        return
    d = names.index(axis)
    bad: set[int] = set()
    for a in stmt.reads:
        own = part.owned.get(a.tensor.name)
        rel = sets.fixed(a.relation).intersect_domain(inst)
        if own is not None:
            rel = rel.subtract_range(_box_set(a.relation.get_tuple_name(isl.dim_type.out), own))
        for b in boxes_of(rel.domain()):
            bad.update(range(b.lo[d], b.hi[d]))
    rows = range(whole.lo[d], whole.hi[d])
    core = _runs([x for x in rows if x not in bad])
    rim = _runs([x for x in rows if x in bad])
    if len(core) + len(rim) <= MAX_PIECES:  # else too many kernel calls a step: no overlap here
        box = {n: (lo, hi) for n, lo, hi in zip(names, whole.lo, whole.hi)}
        part.core = [box | {axis: iv} for iv in core]
        part.rim = [box | {axis: iv} for iv in rim]


def _runs(xs: list[int]) -> list[Interval]:
    """Sorted integers as maximal intervals ``[lo, hi)``."""
    out: list[Interval] = []
    for x in xs:
        if out and out[-1][1] == x:
            out[-1] = (out[-1][0], x + 1)
        else:
            out.append((x, x + 1))
    return out


#: the most boxes a rank's core and rim may take together (each is one kernel call per step)
MAX_PIECES = 8


def _reduces_over(stmts, model: Model, name: str, axis: str) -> bool:
    """Whether ``axis`` of stage ``name`` is a reduce axis (its writes are partial on every rank)."""
    st = next(st for st in stmts if st.op.name == name)
    return any(iv.var.name == axis for iv in getattr(st.op, "reduce_axis", ()))


def _instances(s: Statement, name: str, layout: Layout, dist_blocks, rank: int,
               dom: dict[Statement, isl.Set], sets: _Sets) -> isl.Set:
    full = sets.fixed(s.domain)
    if name in layout.axes:
        c = grid_coords(layout, rank)
        got = _restrict(full, s, layout.axes[name], dist_blocks[0][name][c[0]])
        return _restrict(got, s, layout.axes2[name], dist_blocks[1][name][c[1]]) if name in layout.axes2 else got
    write = s.writes[0]
    needed = _reads_of(write.relation.get_tuple_name(isl.dim_type.out), dom, sets)
    if needed is None:
        return full.subtract(full)
    box = bounding_box(needed)
    if box is None:
        return full.subtract(full)
    target = _box_set(needed.get_tuple_name(), box)
    return sets.fixed(write.relation).intersect_range(target).domain().intersect(full)


def _reads_of(tuple_name: str, dom: dict[Statement, isl.Set], sets: _Sets) -> isl.Set | None:
    """The elements of storage ``tuple_name`` the given instances read (None: no read)."""
    out = None
    for s, inst in dom.items():
        for a in s.reads:
            if a.relation.get_tuple_name(isl.dim_type.out) != tuple_name:
                continue
            got = sets.fixed(a.relation).intersect_domain(inst).range()
            out = got if out is None else out.union(got)
    return out


def _instance_box(ss: list[Statement], dom: dict[Statement, isl.Set]) -> dict[str, Interval] | None:
    """Per root axis, the range of values the rank's instances take (None: it runs none)."""
    out: dict[str, Interval] = {}
    for s in ss:
        box = bounding_box(dom[s])
        if box is None:
            continue
        for v, a, b in zip(s.dim_vars, box.lo, box.hi):
            lo, hi = out.get(v.name, (a, b))
            out[v.name] = (min(lo, a), max(hi, b))
    return out or None


def _check_computed_reads(model: Model, layout: Layout, doms, sets: _Sets) -> None:
    """A distributed stage's value read by another stage must be the reader's own rank's: the
    kernel of one rank runs without messages once it started."""
    for st in model.sch.stages:
        if st.op.name not in layout.axes:
            continue
        tname = next(s.writes[0].relation.get_tuple_name(isl.dim_type.out) for s in model.statements
                     if s.stage is st)
        for r, dom in enumerate(doms):
            mine = {s: d for s, d in dom.items() if s.stage is st}
            written = _writes_of(tname, mine, sets)
            others = {s: d for s, d in dom.items() if s.stage is not st}
            for s, inst in others.items():
                for a in s.reads:
                    if a.relation.get_tuple_name(isl.dim_type.out) != tname:
                        continue
                    hit = sets.fixed(a.relation).intersect_domain(inst)
                    if written is not None:
                        hit = hit.subtract_range(written)
                    if not hit.is_empty():
                        raise DistributionError(
                            f"distribute on stage {st.op.name}: rank {r} runs {s.label()}, which reads "
                            f"{a.text} ({_witness(hit, s, st.op.name)}), a value another rank computes inside the same "
                            f"kernel. Distribute {s.stage.op.name} alike so that it reads only its own "
                            f"block, or build {st.op.name} and {s.stage.op.name} as two distributed "
                            "kernels (the second's input is then exchanged before it runs)")


def _writes_of(tuple_name: str, dom: dict[Statement, isl.Set], sets: _Sets) -> isl.Set | None:
    out = None
    for s, inst in dom.items():
        for a in s.writes:
            if a.relation.get_tuple_name(isl.dim_type.out) == tuple_name:
                got = sets.fixed(a.relation).intersect_domain(inst).range()
                out = got if out is None else out.union(got)
    return out


def _witness(m: isl.Map, s: Statement, tensor: str) -> str:
    """``B at i=4, j=1 reads A[3, 1]``: one instance of a relation and the element it touches."""
    p = m.wrap().sample_point()
    n_in = m.dim(isl.dim_type.in_)
    xs = [p.get_coordinate_val(isl.dim_type.set, d).to_python() for d in range(p.get_space().dim(isl.dim_type.set))]
    at = ", ".join(f"{v.name}={x}" for v, x in zip(s.dim_vars, xs[:n_in]))
    return f"{s.label()} at {at} reads {tensor}[{', '.join(map(str, xs[n_in:]))}]"


def _placeholder(name: str, model: Model, layout: Layout, parts: list[RankPart], doms, sets: _Sets) -> list[Message]:
    shape = layout.shapes[name]
    st = next(st for st in model.sch.stages if st.op.name == name)
    tname = model.namer.known(st.op.output(0)) or f"unread_{len(shape)}"
    whole = Box(tuple(0 for _ in shape), tuple(shape))
    dims = (layout.placement.get(name), layout.placement2.get(name)) if layout.grid else (layout.placement.get(name),)
    dim = next((d for d in dims if d is not None), None)  # None: a copy on every rank
    have = []
    for part in parts:
        own = whole if dim is None else owned_box(shape, dims, layout.grid, part.rank, layout.ranks, layout.block)
        part.owned[name] = own
        have.append(_box_set(tname, own) if own is not None else None)
    messages: list[Message] = []
    for part, dom in zip(parts, doms):
        need = _reads_of(tname, dom, sets)
        own = part.owned[name]
        union = need if own is None else (have[part.rank] if need is None else need.union(have[part.rank]))
        box = bounding_box(union) if union is not None else None
        part.storage[name] = _full_but(box, whole, dims if dim is not None else None) if box is not None else None
        if need is None or dim is None:
            continue
        missing = need if have[part.rank] is None else need.subtract(have[part.rank])
        for q in _sources(layout, part.rank):
            if have[q] is None:
                continue
            got = missing.intersect(have[q])
            if got.is_empty():
                continue
            missing = missing.subtract(got)  # on a grid an input may have copies: the nearest sends it
            reasons = _reasons(got, dom, tname, sets, name)
            if not layout.multi_hop and q not in _neighbours(parts, name, part.rank, layout):
                _too_wide(name, dim, part.rank, q, got, parts, (dom, tname, sets), layout)
            messages.append(Message(name, q, part.rank, boxes_of(got), got.count_val().to_python(), reasons,
                                    layout.mpi_ranks if layout.block else 0))
    return messages


def _sources(layout: Layout, rank: int) -> list[int]:
    """The other ranks, nearest first on a grid of ranks (where an input not split along one
    grid dimension is copied along it, and the copy in the rank's own row or column sends)."""
    others = [q for q in range(layout.ranks) if q != rank]
    if not layout.grid:
        return others
    mine = grid_coords(layout, rank)
    return sorted(others, key=lambda q: (sum(abs(a - b) for a, b in zip(grid_coords(layout, q), mine)), q))


def _full_but(box: Box, whole: Box, dims: tuple[int | None, ...] | None) -> Box:
    """The storage a rank keeps: the box along the split dimensions, whole along the others."""
    if dims is None:
        return whole
    return Box(tuple(box.lo[d] if d in dims else 0 for d in range(len(whole.lo))),
               tuple(box.hi[d] if d in dims else whole.hi[d] for d in range(len(whole.lo))))


def _neighbours(parts: list[RankPart], name: str, rank: int, layout: Layout | None = None) -> set[int]:
    """The nearest ranks before and after ``rank`` that own some of ``name``; on a grid, the
    (up to eight) ranks around it."""
    if layout is not None and layout.grid:
        mine = grid_coords(layout, rank)
        return {p.rank for p in parts if p.rank != rank and p.owned.get(name) is not None
                and all(abs(a - b) <= 1 for a, b in zip(grid_coords(layout, p.rank), mine))}
    nonempty = [p.rank for p in parts if p.owned.get(name) is not None]
    before = [q for q in nonempty if q < rank]
    after = [q for q in nonempty if q > rank]
    return {q for q in (before[-1] if before else None, after[0] if after else None) if q is not None}


def _reasons(got: isl.Set, dom, tname: str, sets: _Sets, name: str = "") -> tuple[str, ...]:
    out = []
    for s, inst in dom.items():
        for a in s.reads:
            if a.relation.get_tuple_name(isl.dim_type.out) != tname:
                continue
            hit = sets.fixed(a.relation).intersect_domain(inst).intersect_range(got)
            if not hit.is_empty():
                out.append(f"{s.label()} reads {a.text} (e.g. {_witness(hit, s, name or tname)})")
    return tuple(dict.fromkeys(out))


def _too_wide(name: str, dim: int, rank: int, q: int, got: isl.Set, parts, reads: tuple, layout: Layout):
    dom, tname, sets = reads
    near = sorted(_neighbours(parts, name, rank, layout))
    sizes = ", ".join(f"{layout.who(n)}: {parts[n].owned[name].hi[dim] - parts[n].owned[name].lo[dim]}" for n in near)
    reasons = "; ".join(_reasons(got, dom, tname, sets, name))
    cure = "a larger block= for distribute" if layout.block else "fewer ranks (larger blocks)"
    raise DistributionError(
        f"distributed placeholder {name} (dimension {dim}): {layout.who(rank)} needs "
        f"{', '.join(b.text(name) for b in boxes_of(got))} from {layout.who(q)}, beyond its neighbours "
        f"({sizes or 'none'} along dimension {dim}), because {reasons}: the halo is wider than a "
        f"neighbour's block. Use {cure}, or pass multi_hop=True to "
        "tessel.distributed.plan/build to let ranks receive from beyond their neighbours")


def check_transfers(data: PlanData, given: list[Message]) -> list[str]:
    """What is wrong with messages a user wrote (Tiramisu's explicit send/receive) against the
    derived plan ``data``, one witness each: an element a rank needs that no message brings, one
    brought twice, one sent by a rank that does not own it, one nobody needs. Empty: they are
    exactly the plan's messages, possibly grouped otherwise."""
    def as_set(boxes, name: str) -> isl.Set | None:
        out = None
        for b in boxes:
            s = _box_set(f"T_{len(b.lo)}", b)
            out = s if out is None else out.union(s)
        return out

    problems: list[str] = []
    keys = {(m.tensor, m.dst) for m in data.messages} | {(m.tensor, m.dst) for m in given}
    for tensor, dst in sorted(keys):
        need = as_set([b for m in data.messages if (m.tensor, m.dst) == (tensor, dst) for b in m.boxes], tensor)
        got = None
        for m in (m for m in given if (m.tensor, m.dst) == (tensor, dst)):
            s = as_set(m.boxes, tensor)
            if s is None:
                continue
            own = data.parts[m.src].owned.get(tensor) if 0 <= m.src < data.ranks else None
            foreign = s if own is None else s.subtract(_box_set(f"T_{len(own.lo)}", own))
            if not foreign.is_empty():
                problems.append(f"rank {m.src} sends {_element(foreign, tensor)} to rank {dst}, but does not own it")
            if got is not None and not got.intersect(s).is_empty():
                problems.append(f"rank {dst} receives {_element(got.intersect(s), tensor)} twice")
            got = s if got is None else got.union(s)
        if need is not None and (got is None or not need.is_subset(got)):
            miss = need if got is None else need.subtract(got)
            x = _coords(miss.sample_point())
            why = next(m for m in data.messages if (m.tensor, m.dst) == (tensor, dst) and any(
                all(a <= v < b for v, a, b in zip(x, bx.lo, bx.hi)) for bx in m.boxes))
            problems.append(f"rank {dst} needs {tensor}[{', '.join(map(str, x))}] from rank {why.src} but no message "
                            f"brings it ({'; '.join(why.reasons)})")
        if got is not None and (need is None or not got.is_subset(need)):
            extra = got if need is None else got.subtract(need)
            problems.append(f"rank {dst} receives {_element(extra, tensor)}, which no instance it runs reads "
                            "from another rank")
    return problems


def _coords(p: isl.Point) -> list[int]:
    return [p.get_coordinate_val(isl.dim_type.set, d).to_python() for d in range(p.get_space().dim(isl.dim_type.set))]


def _element(s: isl.Set, tensor: str) -> str:
    return f"{tensor}[{', '.join(map(str, _coords(s.sample_point())))}]"
