"""The sketch: which stages are inlined, which are anchors with a loop nest of their own, which
are computed inside an anchor, and the knobs of each, with defaults derived from the Target.

Why a plan before any schedule primitive: the decisions depend on each other (a producer is
computed inside its reader's row loop only if every reader is in that group), so they are
made on the compute definition, consumers first, as Ansor derives a sketch; the schedule is
then written from the plan and its knob values alone (:mod:`tessel.autosched.rules`), which is
what makes the knobs something a search can vary.

Anchor kinds:

* ``tile``: a reduction with reuse in two directions (matmul, conv2d) or at least a vector
  axis: a register tile (``cache_write`` to ``local``), multi-level tiling, operands packed
  into panels, threads over the outer tiles. ``fused`` names its elementwise reader when the
  tile is computed inside that reader's tiles instead (the reader is then the anchor's stage).
  A stencil reduction (conv2d) may stack the tile's vectors over a second pixel axis
  (``spread``), its window unrolled whole, and copy each thread's band of input rows with the
  channels side by side (``band``; :mod:`tessel.autosched.conv`).
* ``plain``: everything else, threads over the outer loop (in chunks of rows or of a stream),
  the innermost loop vectorized; its ``members`` are computed per chunk (a softmax row, a strip
  of a blur), row reductions among them and itself vectorized along the reduction by ``rfactor``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..ir import expr as E
from ..ir.dtype import dtype as as_dtype
from ..target.target import Target
from ..target.tiles import (
    panel_group,
    prefetch_step,
    reduction_lanes,
    register_tile,
    stencil_rows_divide,
    stream_chunk,
    strip_rows,
)
from ..te.tensor import ComputeOp, Operation, Tensor
from . import analysis as A
from . import conv

MIN_PARALLEL = 8  # outer loops are fused for threads until they have at least this many iterations


@dataclass
class Knob:
    """One choice a search may vary: its name (``C.rows``), its candidates, its default, and
    when it matters: ``matters(values)`` (all knobs' values by name) is False where this
    knob's value writes the schedule its default writes (the panel group of a tile whose
    operands are not packed, a ``k_unroll`` no longer than the window unrolled whole). The
    search keeps only the default there, rather than spend trials on a schedule twice."""

    name: str
    candidates: tuple
    default: object
    matters: Callable[[dict], bool] | None = None


@dataclass
class Anchor:
    op: ComputeOp
    kind: str                                    # "tile" or "plain"
    members: list[ComputeOp] = field(default_factory=list)  # computed at its chunk (tile: thread) loop, readers first
    fused: ComputeOp | None = None               # tile: the elementwise reader it is computed inside
    inner: int | None = None                     # tile: positions of the vector and row axes
    rows: int | None = None
    spread: int | None = None                    # tile: position of the axis its vectors may stack over (conv.py)
    pack: list = field(default_factory=list)     # tile: operands copied into panels
    band: list[Tensor] = field(default_factory=list)  # tile: operands copied a band of rows at a time (conv.py)
    reread: tuple[ComputeOp, Tensor] | None = None  # plain: (stage, input) it reads again (reread_input)
    transposed: list[tuple[Tensor, int]] = field(default_factory=list)  # tile: turned around, these
    # operands copied with that dimension last (conv.channels_in_lanes)

    @property
    def stage_op(self) -> ComputeOp:
        """The operation whose loops are the anchor's outer loops."""
        return self.fused or self.op


@dataclass
class Plan:
    graph: A.Graph
    target: Target
    inline: list[ComputeOp]
    anchors: list[Anchor]                        # readers first
    knobs: list[Knob]

    def defaults(self) -> dict[str, object]:
        return {k.name: k.default for k in self.knobs}

    def distinct(self, values: dict) -> bool:
        """False for knob values that write the schedule of other values: a knob whose value
        there does what its default does (``Knob.matters``), away from its default."""
        return all(k.matters is None or k.matters(values) or values[k.name] == k.default for k in self.knobs)


def make_plan(outputs: list[Operation], target: Target) -> Plan:
    g = A.Graph(outputs)
    inline = [i.op for i in g.computed() if A.inlinable(g, i)]
    inl = {id(op) for op in inline}
    group: dict[int, Anchor] = {}   # id(op) -> the anchor it belongs to
    anchors: list[Anchor] = []
    for info in reversed(g.computed()):
        if id(info.op) in inl or id(info.op) in group or getattr(info.op, "definitions", ()):
            continue  # a recurrence's definitions: recurrences.py schedules them
        staged = _staged_in(g, info, group)
        if staged is not None:
            staged.members.append(info.op)
            group[id(info.op)] = staged
            continue
        owner = _owner(g, info, group, inl)
        if owner is not None and owner.kind == "plain" and not info.is_output and not A.tileable(info):
            owner.members.append(info.op)
            group[id(info.op)] = owner
            continue
        a = _new_anchor(g, info, group, target)
        if a.fused is not None:  # the reader's own anchor gives way to the tile computed inside it
            anchors.remove(group[id(a.fused)])
        anchors.append(a)
        group[id(info.op)] = a
        if a.fused is not None:
            group[id(a.fused)] = a
    plan = Plan(g, target, inline, anchors, [])
    for a in anchors:
        if a.kind == "tile" and a.spread is not None:
            a.band = _band(g, a, inl)
        if a.kind == "plain":
            a.reread = reread_input(g, a, inl)
        plan.knobs += _knobs(g, a, target)
    return plan


def _readers(g: A.Graph, op: Operation, inl: set[int]) -> list[tuple[A.OpInfo, A.Read]] | None:
    """(reader, read) pairs of ``op``'s values, looking through inlined readers to theirs;
    None when an inlined reader reads it other than along its own rows (no owner then)."""
    out: list[tuple[A.OpInfo, A.Read]] = []
    for c in g.infos[op].consumers:
        cinfo = g.infos[c]
        if id(c) not in inl:
            out += [(cinfo, r) for r in cinfo.reads_of(op)]
            continue
        further = _readers(g, c, inl)
        if further is None or not all(A.row_aligned(r, cinfo) for r in cinfo.reads_of(op)):
            return None
        out += further
    return out


def _band(g: A.Graph, a: Anchor, inl: set[int]) -> list[Tensor]:
    """The tile's operands copied per band (conv.band_operands), but for those computed per band
    already (a padded input among its members) or inlined into it."""
    info = g.infos[a.op]
    ax = a.op.axis
    rows = ax[a.rows] if a.rows is not None else None
    skip = {id(m) for m in a.members} | inl
    return [t for t in conv.band_operands(info, ax[a.inner], ax[a.spread], rows) if id(t.op) not in skip]


def _reads(g: A.Graph, op: Operation, inl: set[int], memo: dict[int, list[Tensor]] | None = None) -> list[Tensor]:
    """The tensors ``op`` reads, looking through the stages inlined into it, in order (each
    inlined stage walked once: a chain of stages each reading the last twice would otherwise
    double the walk per stage)."""
    memo = {} if memo is None else memo
    if id(op) in memo:
        return memo[id(op)]
    out: list[Tensor] = []
    for t in {id(r.tensor): r.tensor for r in g.infos[op].reads}.values():
        more = _reads(g, t.op, inl, memo) if id(t.op) in inl else [t]
        out += [x for x in more if x not in out]
    memo[id(op)] = out
    return out


def reread_input(g: A.Graph, a: Anchor, inl: set[int]) -> tuple[ComputeOp, Tensor] | None:
    """A tensor from outside a plain anchor's chunk that two of the chunk's stages read (the
    first such, in the order the stages run), and the first data-parallel, vectorizable stage
    to read it again (softmax: the exponentials' pass rereads the row its max read).

    The first reader brings each row in from memory; the later ones find it in cache and only
    compute, while memory idles. A prefetch hint in that stage for the next chunk's rows keeps
    memory busy meanwhile (rules._vector_rows); without it a softmax row waits for memory, then
    computes, then waits (Zen 5, two threads: 27 against 34 GB/s with the hint). Not an
    output's stage: its own stores are memory traffic already (a layer norm's output pass,
    hinted, ran at 0.9x)."""
    if not a.members or len(a.op.axis) < 2:
        return None
    stages = [*reversed(a.members), a.op]
    inside = {id(op) for op in stages}
    memo: dict[int, list[Tensor]] = {}
    reads = {id(op): _reads(g, op, inl, memo) for op in stages}
    read = [t for op in stages for t in reads[id(op)]]
    for t in {id(t): t for t in read}.values():
        if id(t.op) in inside or any(not isinstance(n, E.IntImm) for n in t.shape) or len(t.shape) < 2:
            continue
        readers = [op for op in stages if t in reads[id(op)]]
        for op in readers[1:]:
            info = g.infos[op]
            if not (info.is_reduction or info.is_output) and len(op.axis) >= 2 and A.vector_axis(info) is not None:
                return op, t
    return None


def _staged_in(g: A.Graph, info: A.OpInfo, group: dict[int, Anchor]) -> Anchor | None:
    """The tile anchor whose thread loop ``info`` is computed in (conv.per_thread_producer)."""
    if len(info.consumers) != 1:
        return None
    a = group.get(id(info.consumers[0]))
    if a is None or a.kind != "tile" or a.fused is not None or a.op is not info.consumers[0]:
        return None
    axes = {k for k in (a.inner, a.rows, a.spread) if k is not None}
    return a if conv.per_thread_producer(g, info, g.infos[a.op], axes) else None


def _owner(g: A.Graph, info: A.OpInfo, group: dict[int, Anchor], inl: set[int]) -> Anchor | None:
    """The one plain anchor every reader belongs to, when every read is row-aligned."""
    pairs = _readers(g, info.op, inl)
    if not pairs or not info.op.axis:
        return None
    owners = {id(group.get(id(c.op))): group.get(id(c.op)) for c, _ in pairs}
    owner = next(iter(owners.values())) if len(owners) == 1 else None
    if owner is None or not all(A.row_aligned(r, c) for c, r in pairs):
        return None
    return owner


def _new_anchor(g: A.Graph, info: A.OpInfo, group: dict[int, Anchor], target: Target) -> Anchor:
    if not A.tileable(info):
        return Anchor(info.op, "plain")
    inner = A.vector_axis(info)
    assert inner is not None
    rows = A.rows_axis(info, inner)
    ax = info.op.axis
    fused = _fusable_reader(g, info, group)
    # turned around only where no reader computes it inside its tiles (the reader's own loops,
    # channel not last, would then lay the tile out: not measured)
    turned = None if fused is not None else conv.channels_in_lanes(info, inner, rows, target)
    if turned and rows is not None:  # vectors along the rows axis, rows along the vector axis
        return Anchor(info.op, "tile", inner=ax.index(rows), rows=ax.index(inner), transposed=turned)
    spread = conv.spread_axis(info, inner, rows)
    return Anchor(info.op, "tile", inner=ax.index(inner), rows=None if rows is None else ax.index(rows),
                  spread=None if spread is None else ax.index(spread), pack=A.packable(info, inner, rows),
                  fused=fused)


def _fusable_reader(g: A.Graph, info: A.OpInfo, group: dict[int, Anchor]) -> ComputeOp | None:
    """The one elementwise reader (a bias-add, an activation) a tile is computed inside, if any."""
    if info.is_output or len(info.consumers) != 1:
        return None
    d = g.infos[info.consumers[0]]
    reads = d.reads_of(info.op)
    owner = group.get(id(d.op))
    if (owner is not None and owner.op is d.op and owner.kind == "plain" and not owner.members
            and not d.is_reduction and len(reads) == 1 and A.elementwise_read(reads[0], d) and d.single_output):
        return d.op
    return None


def _knobs(g: A.Graph, a: Anchor, target: Target) -> list[Knob]:
    return _tile_knobs(g, a, target) if a.kind == "tile" else _plain_knobs(g, a, target)


def _tile_knobs(g: A.Graph, a: Anchor, target: Target) -> list[Knob]:
    name = g.label(a.op)
    info = g.infos[a.op]
    ax = a.op.axis
    rows_ext = A.extent(ax[a.rows]) if a.rows is not None else 1
    cols_ext = A.extent(ax[a.inner])
    # a window is the trailing reduction unrolled whole (window_loops): a stencil's, or a
    # short channel loop (a 1x1 conv over 16 channels or fewer), whose copy for a partial
    # channel block would be as costly
    rest, _, steps = conv.window_loops(list(a.op.reduce_axis))
    if a.transposed:  # pixels of a row by vectors of channels, the pixels dividing the row
        tile = conv.channel_tile(target, cols_ext, rows_ext, info.dtype)
    else:
        divide = stencil_rows_divide(rows_ext, steps) if rows_ext and rows_ext % 4 == 0 and not a.pack else None
        tile = register_tile(target, info.dtype, max_rows=rows_ext, max_cols=cols_ext, rows_divide=divide)
    rows = tile.rows if a.rows is not None else 1
    along, stacked = tile.vectors, 1
    if a.spread is not None:
        along, stacked = conv.split_vectors(tile.vectors, tile.lanes, cols_ext, A.extent(ax[a.spread]),
                                            window=steps > 1)
    # a stencil's tile may trade broadcast rows for stacked rows, the accumulators kept (4 x 2
    # -> 8 x 1 or 2 x 4 channels x rows): halving one and doubling the other are candidates;
    # a turned tile's rows stay divisors of the image row
    row_cands = (conv.row_divisors(rows, rows_ext) if a.transposed else
                 (_around if a.spread is None else _traded)(rows, 1, 8))
    knobs = [Knob(f"{name}.rows", row_cands, rows, None if a.rows is not None else _never),
             Knob(f"{name}.vectors", _around(along, 1, conv.CHANNEL_VECTORS if a.transposed else 6), along),
             Knob(f"{name}.k_unroll", (1, 2, 4, 8), tile.k_unroll,
                  _unroll_matters(f"{name}.k_unroll", tile.k_unroll, bool(rest), steps))]
    if a.spread is not None:
        knobs.append(Knob(f"{name}.spread", _traded(stacked, 1, 8), stacked))
    if a.band:
        on = conv.band_by_default(info, a.band, ax[a.inner], ax[a.spread], stacked, target)
        knobs.append(Knob(f"{name}.band", (True, False), on, _band_placed(a, name)))
    if a.pack:
        red = 1
        for iv in a.op.reduce_axis:
            red *= A.extent(iv) or 256
        # the copy made per group keeps the operand's row-major layout: only a group of one
        # panel is contiguous (a wider one is k rows of group x cols, each panel a stride
        # through it), which measured faster than the reuse a wider group buys (AVX2, matmul
        # 1024 and 2048, one thread: 1.16x and 1.14x the half-L2 group of 4 and 2 panels)
        group = panel_group(target, tile, red)
        knobs += [Knob(f"{name}.group", tuple(sorted({1, 2, 4, 8, 16, group})), 1,
                       lambda kn, pack=f"{name}.pack": bool(kn[pack])),
                  Knob(f"{name}.pack", (True, False), True)]
    return knobs


def _plain_knobs(g: A.Graph, a: Anchor, target: Target) -> list[Knob]:
    name = g.label(a.op)
    # a chunk that leaves the threads one whole chunk writes what no chunk writes (rules._one_chunk)
    rows = A.extent(a.op.axis[0]) if a.op.axis else None
    chunks = tuple(c for c in (1, 2, 4, 8, 16, 32, 64, 4096, 65536) if c == 1 or rows is None or rows // c >= 2)
    knobs = [Knob(f"{name}.chunk", chunks, _chunk(g, a, target),
                  lambda kn, split=f"{name}.split_k": not int(kn.get(split, 0)))]  # a split reduction has no chunks
    for op in [a.op, *a.members]:
        info = g.infos[op]
        if A.row_reduction(info):
            v = reduction_lanes(target, info.dtype)
            lanes = target.vector_lanes(info.dtype)
            if not info.single_output:  # an argmax: each combine is a chain of compares and selects,
                v = min(v, 4 * lanes)    # longer than an add (Zen 5, 4096^2, 1 thread: 4 vectors 1.4x 2)
            ext = A.extent(op.reduce_axis[-1])
            while ext is not None and v > lanes and v > ext // 2:
                v //= 2
            v = v if ext is None or ext >= 2 * lanes else 0
            knobs.append(Knob(f"{g.label(op)}.partials", tuple(sorted({0, lanes, 2 * lanes, 4 * lanes, v})), v))
            if op is a.op and not a.members:
                knobs.append(_split_knob(g, info, v))
    if a.reread is not None:
        knobs.append(Knob(f"{name}.prefetch", (True, False), True, _prefetch_placed(a, name, target)))
    return knobs


def row_prefetch(a: Anchor, name: str, kn: dict, target: Target) -> tuple[Tensor, int, int] | None:
    """The hint of a plain anchor's reread input (reread_input) at the knob values ``kn``: the
    tensor, elements between hints along the stage's last axis, and hints ahead (the next
    chunk's rows: past a row's end is the next row, schedule_ops.prefetches); None when the
    knob is off, or the chunk is too large for the next one to stay in L2 until it is read."""
    if a.reread is None or not kn.get(f"{name}.prefetch", False):
        return None
    t = a.reread[1]
    itemsize = as_dtype(str(t.dtype)).bits // 8
    chunk = int(kn.get(f"{name}.chunk", 1))
    # the loops the threads' loop takes in (rules._plain): a chunk of the first, else the leading
    # loops fused until they run MIN_PARALLEL times; a chunk is the elements of the rest
    if chunk > 1:
        lead, rows = 1, chunk
    else:
        lead, rows = loops_for_threads([A.extent(iv) for iv in a.op.axis[:-1]]), 1
    per = rows
    for n in t.shape[lead:] if len(t.shape) == len(a.op.axis) else t.shape[1:]:
        per *= n.value
    if per * itemsize > target.l2_bytes // 2:
        return None
    step = prefetch_step(target, str(t.dtype))
    return t, step, -(-per // step)


def _prefetch_placed(a: Anchor, name: str, target: Target) -> Callable[[dict], bool]:
    return lambda kn: row_prefetch(a, name, {**kn, f"{name}.prefetch": True}, target) is not None


def _chunk(g: A.Graph, a: Anchor, target: Target) -> int:
    """Rows (or elements, for a 1-d stream) per parallel chunk of a plain anchor."""
    op = a.op
    if len(op.axis) == 1 and not op.reduce_axis and not a.members:
        return stream_chunk(target, as_dtype(g.infos[op].dtype).bits // 8)
    if any(g.infos[m].is_reduction for m in a.members) or len(op.axis) < 2:
        return 1
    row = 1
    for iv in op.axis[1:]:
        row *= A.extent(iv) or 1024
    return strip_rows(target, row * 4, halo=2) if a.members else 1


def _around(x: int, lo: int, hi: int) -> tuple[int, ...]:
    return tuple(sorted({max(lo, min(hi, v)) for v in (x - 1, x, x + 1, lo)}))


def _traded(x: int, lo: int, hi: int) -> tuple[int, ...]:
    """:func:`_around` and also half and twice ``x``: one tile axis traded for another."""
    return tuple(sorted({*_around(x, lo, hi), *(v for v in (x // 2, 2 * x) if lo <= v <= hi)}))


SPLIT_PARTS = 16  # pieces a reduction over few long rows is cut into, for the threads


def _split_knob(g: A.Graph, info: A.OpInfo, v: int) -> Knob:
    """``rfactor`` for little outer parallelism: fewer rows than MIN_PARALLEL, each long enough
    that a piece of it is many vectors, are reduced in SPLIT_PARTS pieces shared by the threads."""
    rows = 1
    for iv in info.op.axis:
        rows *= A.extent(iv) or MIN_PARALLEL
    k = A.extent(info.op.reduce_axis[-1])
    few = rows < MIN_PARALLEL and k is not None and k >= SPLIT_PARTS * max(v, 1) * 4
    return Knob(f"{g.label(info.op)}.split_k", (0, 4, 8, SPLIT_PARTS, 32), SPLIT_PARTS if few else 0)


def tile_order(a: Anchor) -> list[int]:
    """The anchor's axes (by position) in the order of a tile's outer loops, the vector axis
    left out: a band of image rows (``spread``) before the channel blocks (``rows``), so that
    the band's input stays in L2 for every block of weights (rules._tile, _band_placed)."""
    order = [k for k in range(len(a.stage_op.axis)) if k != a.inner]
    if a.spread is not None and a.rows is not None:
        order.remove(a.spread)
        order.insert(order.index(a.rows), a.spread)
    return order


def _never(values: dict) -> bool:
    return False


def _unroll_matters(knob: str, default: int, rest: bool, steps: int) -> Callable[[dict], bool]:
    """Whether a ``k_unroll`` value writes another schedule than the default: the rules split
    the reduction only where a loop is left beside the window and the unroll is longer than
    the window's steps (rules._tile_body); every other value leaves the loop as it is."""
    def effect(ku: int) -> int:
        return ku if rest and ku > 1 and steps < ku else 1
    return lambda kn: effect(int(kn[knob])) != effect(int(default))


def loops_for_threads(extents: list[int | None]) -> int:
    """How many leading loops of these trip counts the threads' loop fuses: until together
    they run MIN_PARALLEL times (a count unknown here counts as enough), or all of them."""
    n = 1
    for k, ext in enumerate(extents):
        n *= MIN_PARALLEL if ext is None else ext
        if n >= MIN_PARALLEL:
            return k + 1
    return len(extents)


def _band_placed(a: Anchor, name: str) -> Callable[[dict], bool]:
    """Whether the rules place the band copy: not where the threads' loop takes in the
    channel blocks too (rules._band_copies: the band would be copied again for each block);
    always where the operands are packed (the threads then take the panel groups alone)."""
    axes, order = a.stage_op.axis, tile_order(a)
    before = order[:order.index(a.rows)] if a.rows is not None else []

    def placed(kn: dict) -> bool:
        if a.rows is None or (a.pack and kn.get(f"{name}.pack")):
            return True
        stacked = int(kn.get(f"{name}.spread", 1))

        def trips(k: int) -> int | None:  # the band loop runs once per `stacked` rows
            e = A.extent(axes[k])
            return -(-e // stacked) if e is not None and k == a.spread else e
        return loops_for_threads([*map(trips, before), None]) <= len(before)  # None: the channel blocks
    return placed
