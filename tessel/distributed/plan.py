"""The communication plan of a distributed schedule, for given sizes and a rank count.

Made from the program's polyhedral model (``tessel.poly.distribute`` computes the sets): which
root-axis values each rank runs, which part of each placeholder it keeps, every message with
the reads that cause it, and the stages whose results are partial (reduced over a distributed
axis: combined by an Allreduce after the kernel). Plain data, so it is tested, printed and
explained without MPI.

Where a placeholder lives is inferred: split along the dimension a distributed stage indexes
with its distributed axis (``A[i - 1, j]`` under ``distribute(i)``: dimension 0), followed
through the stages between them; a copy on every rank if no such dimension exists (the ``B``
of a row-distributed matmul).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..arith.analyzer import Analyzer
from ..errors import DistributionError
from ..ir import expr as E
from ..ir.functor import free_vars, substitute
from ..poly.distribute import (
    Box,
    Layout,
    Message,
    PlanData,
    RankPart,
    blocks,
    check_transfers,
    derive,
    overlap_refusal,
    owned_box,
)
from ..poly.model import build as build_model
from ..schedule.schedule import Schedule, create_schedule
from ..te.tensor import ComputeOp, PlaceholderOp, Tensor


@dataclass(frozen=True)
class Transfer:
    """A message a user declares (Tiramisu's ``send``/``receive``): rank ``dst`` receives the
    ``boxes`` of ``tensor`` (global indices) from rank ``src``; see ``Plan.with_transfers``."""

    tensor: str
    src: int
    dst: int
    boxes: tuple[Box, ...]


@dataclass(frozen=True)
class Split:
    """How one tensor is laid over ``ranks`` ranks: dimension ``dim`` of ``shape`` in parts, one
    contiguous block per rank, or (``block``) blocks of that many dealt to the ranks in turn,
    part ``k`` to rank ``k % ranks``; ``dim`` None: a full copy on every rank."""

    shape: tuple[int, ...]
    dim: int | None
    ranks: int
    block: int | None = None
    #: a 2-D grid of ranks (P0, P1): ``dim`` is split along its rows, ``dim2`` along its columns
    #: (None: not split there, held by the ranks of column 0)
    dim2: int | None = None
    grid: tuple[int, ...] = ()

    @property
    def copied(self) -> bool:
        """Whether every rank holds the whole tensor (split along no dimension)."""
        return self.dim is None and self.dim2 is None

    @property
    def parts(self) -> int:
        if self.dim is None or self.block is None:
            return self.ranks
        return max(1, -(-self.shape[self.dim] // self.block))

    def parts_of(self, rank: int) -> list[int | None]:
        """The parts rank ``rank`` holds (``[None]``: the whole copy)."""
        if self.copied:
            return [None]
        return [k for k in range(rank, self.parts, self.ranks) if self.box(k) is not None]

    def box(self, part: int | None) -> Box | None:
        """The elements of part ``part`` (None: the whole tensor), None if it has none."""
        if self.copied or part is None:
            return Box(tuple(0 for _ in self.shape), self.shape)
        dims = (self.dim, self.dim2) if self.grid else (self.dim,)
        return owned_box(self.shape, dims, self.grid, part, self.ranks, self.block)


class Plan:
    """Everything a distributed run of ``outputs`` on ``ranks`` ranks does, for ``sizes``."""

    def __init__(self, sch: Schedule, args: list[Tensor], ranks: int, sizes: dict[E.Var, int], data: PlanData,
                 splits: dict[str, Split], axes: dict[str, tuple[str, int]]):
        self.schedule, self.args, self.ranks, self.sizes = sch, args, ranks, sizes
        self.data, self.splits, self.axes = data, splits, axes
        #: a 2-D grid of ranks (rows, columns) and each stage's second distributed axis (else empty)
        self.grid: tuple[int, ...] = ()
        self.axes2: dict[str, tuple[str, int]] = {}

    @property
    def messages(self) -> list[Message]:
        return self.data.messages

    @property
    def partial(self) -> list[str]:
        return self.data.partial

    def part(self, rank: int) -> RankPart:
        return self.data.parts[rank]

    def received(self, rank: int) -> list[Message]:
        return [m for m in self.messages if m.dst == rank]

    def sent(self, rank: int) -> list[Message]:
        return [m for m in self.messages if m.src == rank]

    def partners(self, rank: int, tensor: str | None = None) -> list[int]:
        return sorted({m.src for m in self.received(rank) if tensor in (None, m.tensor)})

    def halo(self, rank: int, tensor: str, second: bool = False) -> tuple[int, int]:
        """Ghost widths (below, above) of ``tensor`` on ``rank`` along its split dimension (on a
        grid of ranks, ``second``: along the dimension split over its columns)."""
        split, part = self.splits[tensor], self.part(rank)
        own, kept = part.owned.get(tensor), part.storage.get(tensor)
        d = split.dim2 if second else split.dim if split.dim is not None else split.dim2
        if d is None or own is None or kept is None:
            return (0, 0)
        return (max(0, own.lo[d] - kept.lo[d]), max(0, kept.hi[d] - own.hi[d]))

    def volume(self) -> int:
        """Elements received per call, over all ranks."""
        return sum(m.count for m in self.messages)

    def with_transfers(self, given: list[Transfer]) -> Plan:
        """This plan with the user's messages (Tiramisu's explicit ``send``/``receive``) in place
        of the derived ones, once checked against them: a ``DistributionError`` lists every
        element needed and not brought, brought twice, sent by a rank that does not own it, or
        brought and not needed, each with a witness."""
        msgs = [Message(t.tensor, t.src, t.dst, tuple(t.boxes), sum(b.size for b in t.boxes), ("declared",))
                for t in given]
        problems = check_transfers(self.data, msgs)
        if problems:
            raise DistributionError("the declared transfers do not match the communication the accesses need:\n  "
                                    + "\n  ".join(problems) + "\n(plan.explain() lists the messages needed)")
        out = Plan(self.schedule, self.args, self.ranks, self.sizes, self.data, self.splits, self.axes)
        out.data = PlanData(self.data.ranks, self.data.parts, msgs, self.data.partial)
        return out

    def whole_row_volume(self) -> int:
        """Elements per call had every message carried whole rows (every element of the split
        dimension's indices it touches), as a halo exchange of declared width does: what the
        exact plan saves (a 5-point stencil: the two corner elements of each row)."""
        total = 0
        for m in self.messages:
            split = self.splits[m.tensor]
            d = split.dim if split.dim is not None else 0
            rows = {x for b in m.boxes for x in range(b.lo[d], b.hi[d])}
            rest = 1
            for k, n in enumerate(split.shape):
                rest *= n if k != d else 1
            total += len(rows) * rest
        return total

    def explain(self, rank: int | None = None) -> str:
        """Each message (of ``rank``'s receives, or all) in the model's words."""
        msgs = self.messages if rank is None else self.received(rank)
        if not msgs:
            return "no messages: every rank reads only what it owns"
        return "\n".join(m.explain() for m in msgs)

    def text(self) -> str:
        lines = [f"distributed plan: {self.ranks} rank(s), sizes "
                 + (", ".join(f"{v.name}={n}" for v, n in self.sizes.items()) or "fixed")]
        block = next(iter(self.splits.values())).block if self.splits else None
        for name, (axis, extent) in self.axes.items():
            if self.grid:
                (axis2, extent2) = self.axes2[name]
                lines.append(f"  {name}: axes {axis} ({extent}) x {axis2} ({extent2}) on a {self.grid[0]}x"
                             f"{self.grid[1]} grid of ranks (rank r at row r // {self.grid[1]}, column r % "
                             f"{self.grid[1]}): rows " + " ".join(f"[{a}, {b})" for a, b in blocks(extent, self.grid[0]))
                             + ", columns " + " ".join(f"[{a}, {b})" for a, b in blocks(extent2, self.grid[1])))
                continue
            how = (f"blocks of {block} dealt to the ranks in turn" if block is not None else
                   "blocks " + " ".join(f"[{a}, {b})" for a, b in blocks(extent, self.ranks)))
            lines.append(f"  {name}: axis {axis} ({extent}) in {how}")
        for r in range(len(self.data.parts)):
            halos = ", ".join(f"{t} {self.halo(r, t)}" + (f" x {self.halo(r, t, True)}" if self.grid else "") for t, sp in self.splits.items() if not sp.copied
                              and t in self.part(r).storage)
            got = sum(m.count for m in self.received(r))
            who = f"rank {r % self.ranks} block {r}" if block is not None else f"rank {r}"
            lines.append(f"  {who}: partners {self.partners(r)}, ghost widths {halos or '-'}, receives {got}")
        lines += ["  " + m.explain() for m in self.messages]
        lines += [f"  {name}: partial on every rank, combined by Allreduce" for name in self.partial]
        return "\n".join(lines)

    __str__ = text


def plan(s: Schedule, args: list[Tensor], ranks: int, sizes: dict | None = None, *,
         shapes: dict | None = None, multi_hop: bool = False, overlap: bool = False,
         placement: dict[str, int | None] | None = None, grid: tuple[int, int] | None = None) -> Plan:
    """The plan of ``s`` (distributed with ``s[T].distribute(axis)``) on ``ranks`` ranks.

    ``sizes`` binds the symbolic sizes (``{n: 13}``, by Var or by name); ``shapes`` may give
    them instead as the global shape of argument tensors (``{"A": (13, 7)}``). Refuses, with a
    ``DistributionError`` naming the stage and axis, what cannot run as messages before the
    kernel (see ``tessel.poly.distribute``). ``overlap``: also split each rank's block into the
    core that reads only what the rank owns and the rim (``RankPart.core``/``rim``).
    ``placement`` declares where inputs live instead of inferring it: ``{"A": 1}`` splits
    placeholder A's dimension 1 in blocks, ``{"W": None}`` copies W to every rank. ``grid``:
    the (rows, columns) of ranks when two axes are distributed (default: ``grid_shape``)."""
    if ranks < 1:
        raise DistributionError(f"a distributed plan needs at least one rank, got {ranks}")
    fresh = create_schedule(list(s.history.origin.outputs) if s.history is not None else s.outputs)
    _check_kinds(fresh)
    bound = _bind(args, sizes or {}, shapes or {})
    axes = _distributed(s, bound)
    if not axes:
        raise DistributionError("no stage of the schedule is distributed: call s[T].distribute(T.op.axis[k]) "
                                "on the stage whose rows the ranks should share")
    for t in args:
        if not isinstance(t.op, PlaceholderOp) and t.op.name not in axes:
            raise DistributionError(f"argument {t.name}: a distributed kernel's arguments are its inputs and its "
                                    f"distributed stages; distribute {t.name} too (s[{t.name}].distribute(...)) or "
                                    "leave it out of the arguments")
    block = block_of(s)
    axes2 = _distributed(s, bound, second=True)
    shape_of = _grid(s, axes, axes2, ranks, grid)
    splits = _splits(s, axes, bound, ranks, block, axes2, shape_of)
    for name, dim in _placement(s, placement).items():
        if shape_of:
            raise DistributionError("placement= with a 2-D grid of ranks is not built: each input is split along "
                                    "the dimensions the distributed axes index")
        splits[name] = Split(splits[name].shape, dim, ranks, block)
    layout = _layout(splits, (axes, axes2), bound, ranks, block, shape_of, multi_hop, overlap)
    model = build_model(fresh)
    why = overlap_refusal(model, layout) if overlap else None
    if why is not None:
        raise DistributionError(f"overlap of computation with messages: {why}; build without overlap=True")
    data = derive(model, layout)
    for name in axes:
        st = next(st for st in s.stages if st.op.name == name)
        splits[name] = _output_split(st.op, axes[name][0], bound, name in data.partial, ranks, block)
        if shape_of:
            names = [iv.var.name for iv in st.op.axis]
            splits[name] = Split(splits[name].shape, splits[name].dim, ranks, None, names.index(axes2[name][0]),
                                 shape_of)
    out = Plan(s, list(args), ranks, bound, data, splits, axes)
    out.grid, out.axes2 = shape_of, axes2
    return out


def _layout(splits: dict[str, Split], axes: tuple[dict, dict], bound: dict, ranks: int, block: int | None,
            grid: tuple[int, ...], multi_hop: bool, overlap: bool) -> Layout:
    """What ``derive`` is asked: with ``block``, as many parts as the longest split extent has blocks."""
    first, second = axes
    parts = ranks
    if block is not None:
        extents = [e for _, e in first.values()] + [sp.shape[sp.dim] for sp in splits.values() if sp.dim is not None]
        parts = max(1, max(-(-e // block) for e in extents))
    return Layout(parts, {n: a for n, (a, _) in first.items()}, {n: sp.dim for n, sp in splits.items()},
                  {n: sp.shape for n, sp in splits.items()}, bound, multi_hop, overlap,
                  {n: e for n, (_, e) in first.items()}, block, ranks, grid,
                  {n: a for n, (a, _) in second.items()}, {n: e for n, (_, e) in second.items()},
                  {n: sp.dim2 for n, sp in splits.items()})


def grid_shape(ranks: int) -> tuple[int, int]:
    """The 2-D grid of ``ranks`` ranks closest to a square (rows >= columns): 4 -> 2x2, 6 -> 3x2,
    a prime p -> p x 1."""
    cols = max(c for c in range(1, int(ranks ** 0.5) + 1) if ranks % c == 0)
    return (ranks // cols, cols)


def _grid(s: Schedule, axes: dict, axes2: dict, ranks: int, grid: tuple[int, int] | None) -> tuple[int, ...]:
    """The grid of ranks (empty: one dimension), checked: every distributed stage on two data
    axes when any is, blocks (not block-cyclic), ``grid`` (or its default) of ``ranks`` ranks."""
    if not axes2:
        if grid is not None:
            raise DistributionError(f"grid={grid}: the schedule distributes one axis per stage; distribute two "
                                    "(s[T].distribute(i); s[T].distribute(j)) for a 2-D grid of ranks")
        return ()
    one = sorted(set(axes) - set(axes2))
    if one:
        raise DistributionError(f"a 2-D grid of ranks: stage {one[0]} distributes one axis, others two; "
                                "distribute two axes of every distributed stage")
    for name in axes:
        st = next(st for st in s.stages if st.op.name == name)
        if any(iv in st.op.reduce_axis for iv in st.distributed_axes):
            raise DistributionError(f"distribute on stage {name}: a 2-D grid of ranks over a reduce axis is not "
                                    "built (its partial results would be combined per row of ranks); distribute "
                                    "two data axes, or one axis")
    got = tuple(grid) if grid is not None else grid_shape(ranks)
    if len(got) != 2 or got[0] * got[1] != ranks or min(got) < 1:
        raise DistributionError(f"grid={grid}: a 2-D grid of {ranks} ranks is (rows, columns) with rows * columns "
                                f"= {ranks}, e.g. {grid_shape(ranks)}")
    return got


def _check_kinds(fresh: Schedule) -> None:
    """Only te.compute and te.placeholder: a rank's program is rebuilt from them; a recurrence's
    definitions share one storage and a scan or extern stage has no box of its own to rebuild."""
    for st in fresh.stages:
        if type(st.op) is not ComputeOp and not isinstance(st.op, PlaceholderOp):
            raise DistributionError(
                f"stage {st.op.name}: a {type(st.op).__name__} cannot be part of a distributed program of other "
                "stages (only te.compute and te.placeholder); distribute a recurrence or scan itself on a data "
                "axis (its steps then run with a halo exchange each, docs/distributed.md), write the time loop "
                "as a Python loop of distributed kernel calls, or compute this stage before and pass it as an input")


def block_of(s: Schedule) -> int | None:
    """The block size of the schedule's block-cyclic distribution (None: one block per rank);
    every distributed stage must use the same (their parts line up, block k on rank k % P)."""
    found = {st.distributed_block for st in s.stages if getattr(st, "distributed_axis", None) is not None}
    if len(found) > 1:
        raise DistributionError("distributed stages with different block sizes ("
                                + ", ".join(sorted(str(b) for b in found)) + "): give every distribute the same "
                                "block=, so that block k of every tensor is on the same rank")
    return next(iter(found), None)


def _const(e: E.PrimExpr, bound: dict[E.Var, int], what: str) -> int:
    v = Analyzer().simplify(substitute(e, {k: E.IntImm(val, k.dtype) for k, val in bound.items()}))
    if not isinstance(v, E.IntImm):
        names = ", ".join(sorted(x.name for x in free_vars(v))) or str(v)
        raise DistributionError(f"the distributed plan needs every size: {what} depends on {names}; pass "
                                f"sizes={{{names.split(', ')[0]}: ...}} or the arrays' global shapes")
    return int(v.value)


def _bind(args: list[Tensor], sizes: dict, shapes: dict) -> dict[E.Var, int]:
    out: dict[E.Var, int] = {}
    by_name = {}
    for t in args:
        for e in t.shape:
            for v in free_vars(e):
                by_name.setdefault(v.name, v)
    for k, val in sizes.items():
        v = k if isinstance(k, E.Var) else by_name.get(k)
        if v is not None:
            out[v] = int(val)
    for t in args:
        got = shapes.get(t.name)
        if got is None:
            continue
        for e, n in zip(t.shape, got):
            if isinstance(e, E.Var):
                out.setdefault(e, int(n))
    return out


def _distributed(s: Schedule, bound: dict[E.Var, int], second: bool = False) -> dict[str, tuple[str, int]]:
    """Per distributed stage, its (first, or ``second``) distributed axis and its extent."""
    out = {}
    for st in s.stages:
        ivs = getattr(st, "distributed_axes", [])
        iv = (ivs[1] if len(ivs) > 1 else None) if second else (ivs[0] if ivs else None)
        if iv is None:
            continue
        if type(st.op) is not ComputeOp:
            raise DistributionError(f"distribute on stage {st.name}: only te.compute stages are distributed here "
                                    f"(a {type(st.op).__name__} is not); run a time loop in Python, one "
                                    "distributed kernel call per step, which exchanges halos every step")
        out[st.op.name] = (iv.var.name, _const(iv.dom.extent, bound, f"the extent of axis {iv.var.name}"))
        _check_reducer(st.op, iv)
    return out


_COMBINE = {"sum": E.Add, "max": E.Max, "min": E.Min}


def reducer_kind(op: ComputeOp) -> str | None:
    """``"sum"``/``"max"``/``"min"`` when the reduction is one of those (an MPI operation)."""
    r = op.body[0]
    if not isinstance(r, E.Reduce) or len(op.body) != 1 or r.finish is not None or r.init:
        return None
    kind = _COMBINE.get(r.combiner.name)
    return r.combiner.name if kind is not None and isinstance(r.combiner.result[0], kind) else None


def _check_reducer(op: ComputeOp, iv: E.IterVar) -> None:
    if iv in op.reduce_axis and reducer_kind(op) is None:
        raise DistributionError(
            f"distribute on stage {op.name}, axis {iv.var.name}: the ranks' partial results are combined by an "
            "MPI Allreduce, which tessel does for te.sum, te.max and te.min of one output without init or "
            "finishing step; distribute a data axis of this stage instead")


def _splits(s: Schedule, axes: dict[str, tuple[str, int]], bound: dict[E.Var, int], ranks: int,
            block: int | None, axes2: dict | None = None, grid: tuple[int, ...] = ()) -> dict[str, Split]:
    """Each placeholder's dimension followed from a distributed axis (see the module docstring);
    on a grid, its dimension followed from the second distributed axis too."""
    dims, dims2 = _followed(s, axes), _followed(s, axes2 or {})
    out = {}
    for st in s.stages:
        if isinstance(st.op, PlaceholderOp):
            t = st.op.output(0)
            shape = tuple(_const(e, bound, f"the shape of {t.name}") for e in t.shape)
            out[t.name] = Split(shape, dims.get(t.name), ranks, block, dims2.get(t.name), grid)
    return out


def _followed(s: Schedule, axes: dict[str, tuple[str, int]]) -> dict[str, int]:
    dims: dict[str, int] = {}
    for st in s.stages:
        if st.op.name in axes:
            iv = next(a for a in st.op.root_iter_vars if a.var.name == axes[st.op.name][0])
            _follow(st.op, iv.var, dims, set())
    return dims


def _follow(op: ComputeOp, var: E.Var, dims: dict[str, int], seen: set) -> None:
    for load in _loads(op):
        t = load.producer
        for d, idx in enumerate(load.indices):
            if {v.name for v in free_vars(idx)} != {var.name} or (t.op.name, d) in seen:
                continue
            seen.add((t.op.name, d))
            if isinstance(t.op, PlaceholderOp):
                dims.setdefault(t.name, d)
            elif isinstance(t.op, ComputeOp):
                _follow(t.op, t.op.axis[d].var, dims, seen)


def _loads(op: ComputeOp) -> list[E.ProducerLoad]:
    from ..ir.functor import post_order_visit

    out: list[E.ProducerLoad] = []
    for b in op.body:
        post_order_visit(b, lambda x: out.append(x) if isinstance(x, E.ProducerLoad) else None)
    return out


def _output_split(op: ComputeOp, axis: str, bound: dict[E.Var, int], partial: bool, ranks: int,
                  block: int | None) -> Split:
    shape = tuple(_const(iv.dom.extent, bound, f"the shape of {op.name}") for iv in op.axis)
    names = [iv.var.name for iv in op.axis]
    return Split(shape, None if partial or axis not in names else names.index(axis), ranks, block)


def _placement(s: Schedule, given: dict | None) -> dict[str, int | None]:
    """The declared placement, checked: placeholders of the program, dimensions they have."""
    inputs = {st.op.name: st.op for st in s.stages if isinstance(st.op, PlaceholderOp)}
    for name, dim in (given or {}).items():
        op = inputs.get(name)
        if op is None:
            raise DistributionError(f"placement of {name!r}: not an input (placeholder) of the program; its inputs: "
                                    f"{', '.join(sorted(inputs)) or 'none'}")
        nd = len(op.output(0).shape)
        if dim is not None and not (isinstance(dim, int) and 0 <= dim < nd):
            raise DistributionError(f"placement of {name}: dimension {dim!r} is not one of its {nd} dimensions "
                                    "(0-based); give one, or None for a copy on every rank")
    return dict(given or {})


def split_of(s: Schedule, t: Tensor, shape: tuple[int, ...], ranks: int, placement: dict | None = None,
             grid: tuple[int, int] | None = None) -> Split:
    """How argument ``t`` of global ``shape`` is laid over the ranks (no sizes needed): what
    ``plan(...).splits[t.name]`` says, known before every size is."""
    two = any(len(getattr(st, "distributed_axes", [])) > 1 for st in s.stages)
    shape_of = (tuple(grid) if grid is not None else grid_shape(ranks)) if two else ()
    for st in s.stages:
        ivs = getattr(st, "distributed_axes", [])
        if ivs and st.op is t.op:
            at = [None if iv in st.op.reduce_axis else next((k for k, a in enumerate(st.op.axis) if a is iv), None)
                  for iv in ivs]
            return Split(tuple(shape), at[0], ranks, block_of(s), at[1] if two else None, shape_of)
    declared = _placement(s, placement)
    if t.name in declared:
        return Split(tuple(shape), declared[t.name], ranks, block_of(s))
    dims: list[dict[str, int]] = [{}, {}]
    for st in s.stages:
        if isinstance(st.op, ComputeOp):
            for k, iv in enumerate(getattr(st, "distributed_axes", [])[:2]):
                _follow(st.op, iv.var, dims[k], set())
    return Split(tuple(shape), dims[0].get(t.name), ranks, block_of(s), dims[1].get(t.name) if two else None,
                 shape_of)
