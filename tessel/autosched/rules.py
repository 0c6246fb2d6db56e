"""Writing a schedule from a plan and knob values: the sketch rules, as schedule primitives.

Every decision goes through the ordinary primitives, so the result is an ordinary schedule:
each call a recorded step (history, explorer, ``tessel explain``, ``s.python()``). A rule that
tessel refuses (a :class:`ScheduleError` from a primitive, or the legality rules) is dropped
whole: it is applied to a copy of the schedule, and the copy is kept only if every step of the
rule went through. The caller then lowers the result, and falls back to a plainer plan if even
that fails (:func:`tessel.autosched.auto_schedule`).
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import ScheduleError
from ..ir import expr as E
from ..schedule import create_schedule
from ..schedule.dataflow import loop_ranges
from ..schedule.schedule import Schedule
from ..te.tensor import ComputeOp, Tensor
from . import analysis as A
from . import partials
from .conv import transposed_copy, window_loops
from .plan import Anchor, Plan, loops_for_threads, row_prefetch, tile_order
from .recurrences import schedule_recurrences

# what a rule may leave out: the plan without tiles, without fusion, or nothing but inlining
LEVELS = ("full", "no_tile", "inline_only", "none")


def build(plan: Plan, knobs: dict[str, object], level: str = "full") -> Schedule:
    """The schedule ``plan`` describes, with ``knobs`` (names of ``plan.knobs``; defaults for
    any missing), at ``level`` of :data:`LEVELS`."""
    kn = {**plan.defaults(), **knobs}
    s = create_schedule(plan.graph.outputs, notify=False)
    if level == "none":
        return s
    for op in plan.inline:
        s = _attempt(s, lambda t, op=op: t[op].compute_inline())
    if level == "inline_only":
        return schedule_recurrences(s)
    for a in plan.anchors:
        if a.kind == "tile" and level == "full":
            s = _attempt(s, lambda t, a=a: _tile(t, plan, a, kn))
        else:
            s = _attempt(s, lambda t, a=a: _plain(t, plan, a, kn, fuse=level == "full" or a.kind == "plain"))
    return schedule_recurrences(s)


def _attempt(s: Schedule, rule: Callable[[Schedule], object]) -> Schedule:
    """``rule`` applied to a copy of ``s``; ``s`` itself if tessel refuses any of its steps."""
    t = s.copy()
    try:
        rule(t)
    except ScheduleError:
        return s
    return t


# ---- threads and vectors -------------------------------------------------------------------
def _parallel_prefix(s: Schedule, op, loops: list[E.IterVar]) -> E.IterVar | None:
    """Fuse the leading ``loops`` until they run at least MIN_PARALLEL times; parallel that."""
    if not loops:
        return None
    rng = loop_ranges(s[op], s[op].op.root_iter_vars)
    exts = [rng[lp].extent if lp in rng else None for lp in loops]
    k = loops_for_threads([e.value if isinstance(e, E.IntImm) else None for e in exts])
    top = s[op].fuse(*loops[:k]) if k > 1 else loops[0]
    in_threads(s, op, top)
    return top


def in_threads(s: Schedule, op, loop: E.IterVar) -> bool:
    """Mark ``loop`` parallel unless it is known to run fewer than twice: such a loop costs the
    threads' fork and join and runs on one core (a search once kept a softmax whose every row
    was one chunk, issue 37). Every parallel loop the rules write goes through here."""
    ext = trips(s, op, loop)
    if ext is not None and ext < 2:
        return False
    s[op].parallel(loop)
    return True


def trips(s: Schedule, op, loop: E.IterVar) -> int | None:
    """``loop``'s trip count in ``op``'s stage as written so far, when it is a constant."""
    rng = loop_ranges(s[op], s[op].op.root_iter_vars).get(loop)
    return rng.extent.value if rng is not None and isinstance(rng.extent, E.IntImm) else None


# ---- register tiles ------------------------------------------------------------------------
def _tile(s: Schedule, plan: Plan, a: Anchor, kn: dict) -> None:
    """Multi-level tiling of a reduction (see the plan's module): outer tiles over threads, a
    ``rows x vectors`` register tile computed in ``local`` inside them, reduction outside the
    tile's loops and unrolled by ``k_unroll``, operands packed per group of panels."""
    name = plan.graph.label(a.op)
    lanes = plan.target.vector_lanes(str(a.op.outputs[0].dtype))
    rows, cols = int(kn[f"{name}.rows"]), int(kn[f"{name}.vectors"]) * lanes
    T = a.stage_op
    order = None  # the local tile's axes, by position in T's, where they differ
    if a.fused is not None:
        s[a.op].set_scope("local")
        local = a.op.output(0)
    else:
        if a.transposed:  # the tile's vectors run along T's rows axis: laid out last in it
            axes = list(s[T].op.axis)
            order = [k for k in range(len(axes)) if k != a.inner] + [a.inner]
            s[T].reorder(*[axes[k] for k in order])
        local = s.cache_write(a.op.output(0), "local")
    axes = list(s[T].op.axis)
    xo, xi = s[T].split(axes[a.inner], factor=cols)
    ro = ri = None
    if a.rows is not None:
        ro, ri = s[T].split(axes[a.rows], factor=rows)
    stacked = int(kn.get(f"{name}.spread", 1))
    so = si = None
    if a.spread is not None and stacked > 1:  # the tile's vectors stacked over a second pixel axis (conv.py)
        so, si = s[T].split(axes[a.spread], factor=stacked)
    outer_of = {k: iv for k, iv in ((a.rows, ro), (a.spread, so)) if iv is not None}
    others = [outer_of.get(k, axes[k]) for k in tile_order(a)]
    pack = a.pack and bool(kn.get(f"{name}.pack", False))
    if pack:  # panel groups outermost: a group of packed panels is reused by every row block
        group = int(kn[f"{name}.group"])
        xg, xp = s[T].split(xo, factor=group) if group > 1 else (xo, None)
        outer = [xg, *others] + ([xp] if xp is not None else [])
    else:
        outer = [*others, xo]
    tile_loops = [iv for iv in (ri, si) if iv is not None]
    s[T].reorder(*outer, *tile_loops, xi)
    for iv in tile_loops:
        s[T].unroll(iv)
    s[T].vectorize(xi)
    at = outer[-1]
    # packed panels: threads over the groups only, each packing its own (fusing more loops in
    # would pack again per row block)
    top = _parallel_prefix(s, T, outer[:1] if pack else outer[:-1])
    s[local].compute_at(s[T], at)
    _tile_body(s, a, local, int(kn[f"{name}.k_unroll"]), order)
    for operand, dim in a.transposed:
        transposed_copy(s, operand, dim, [local])
    for m in a.members:  # a padded input, each thread's slice right before its tiles read it
        s[m].compute_at(s[T], top if top is not None else at)
        s[m].vectorize(s[m].op.axis[-1])
    band = so if so is not None else axes[a.spread] if a.spread is not None else None
    if kn.get(f"{name}.band", False):
        _band_copies(s, a, local, T, band, top, ro)
    if pack:
        for operand in a.pack:
            p = s.cache_read(operand, "global", [local])
            s[p].compute_at(s[T], top if top is not None else at)
            s[p].vectorize(s[p].op.axis[-1])


def _band_copies(s: Schedule, a: Anchor, local: Tensor, T: ComputeOp, band: E.IterVar | None,
                 top: E.IterVar | None, ro: E.IterVar | None) -> None:
    """Each band of rows of the operands the tile reads across planes, copied right before the
    band's tiles (conv.band_operands): at the band loop where it stands alone (a batch of
    images may be the threads' loop around it), else at the threads' loop it was fused into,
    but not where that loop takes in the channel blocks too (the band would be copied again
    for each block)."""
    leaves = s[T].leaf_iter_vars
    if band is not None and band in leaves:
        at = band
    elif top is not None and (ro is None or ro in leaves):
        at = top
    else:
        return
    for operand in a.band:
        c = s.cache_read(operand, "local", [local])
        s[c].compute_at(s[T], at)
        s[c].vectorize(s[c].op.axis[-1])


def _tile_body(s: Schedule, a: Anchor, local: Tensor, ku: int, order: list[int] | None = None) -> None:
    """The register tile's loops: the other data-parallel loops (one iteration each here), the
    reduction (a short trailing window unrolled whole, else the innermost reduction unrolled by
    ``k_unroll``), then rows and stacked rows unrolled, vectors. ``order``: the stage's axis
    each of the tile's stands for, where the tile was laid out in another order."""
    st = s[local]
    axes, red = list(st.op.axis), list(st.op.reduce_axis)
    keep = [k for k in (a.rows, a.spread, a.inner) if k is not None]
    if order is not None:
        keep = [order.index(k) for k in keep]
    outer = [iv for k, iv in enumerate(axes) if k not in keep]
    rest, window, steps = window_loops(red)
    if rest and ku > 1 and steps < ku:
        ko, ki = st.split(rest[-1], factor=ku)
        red_loops, unroll = [*rest[:-1], ko, ki, *window], [ki, *window]
    else:
        red_loops, unroll = red, window
    inner = [axes[k] for k in keep]
    st.reorder(*outer, *red_loops, *inner)
    for iv in unroll + inner[:-1]:
        st.unroll(iv)
    st.vectorize(inner[-1])


# ---- plain anchors: threads over chunks, members per chunk -----------------------------------
def _plain(s: Schedule, plan: Plan, a: Anchor, kn: dict, fuse: bool = True) -> None:
    op = a.op
    info = plan.graph.infos[op]
    name = plan.graph.label(op)
    chunk = int(kn.get(f"{name}.chunk", 1))
    v = int(kn.get(f"{name}.partials", 0))
    if int(kn.get(f"{name}.split_k", 0)):
        _split_reduction(s, op, int(kn[f"{name}.split_k"]), v, _lanes(plan, op))
        return
    rf = partials.factor(s, op.output(0), v, _lanes(plan, op)) if v else None
    axes = list(s[op].op.axis)
    if not axes:
        return
    if len(axes) == 1 and not info.is_reduction and not a.members:  # a stream
        if not _one_chunk(axes[0], chunk):
            xo, xi = s[op].split(axes[0], factor=chunk)
            in_threads(s, op, xo)
            s[op].vectorize(xi)
        else:
            s[op].vectorize(axes[0])
        return
    if chunk > 1 and not _one_chunk(axes[0], chunk):
        outer, _ = s[op].split(axes[0], factor=chunk)
        in_threads(s, op, outer)
    else:  # leading loops too short for the threads (a batch of 1) are fused with the next
        outer = _parallel_prefix(s, op, axes[:-1] or axes)
    hint = row_prefetch(a, name, kn, plan.target) if fuse else None
    hinted = a.reread[0] if hint is not None and a.reread is not None else None  # the stage it is for
    if not info.is_reduction and len(axes) >= 2:
        _vector_rows(s, op, hint if hinted is op else None)
    if rf is not None:
        partials.attach(s, rf, op, outer)
    if fuse:
        for m in a.members:
            _member(s, plan, m, op, outer, kn, hint if hinted is m else None)


def _one_chunk(axis: E.IterVar, chunk: int) -> bool:
    """Whether chunks of ``chunk`` rows leave the threads fewer than two whole chunks of
    ``axis``: a last partial chunk runs apart, after the parallel loop (loop_partition), so 3
    rows in chunks of 2 are one parallel iteration, which lowering drops. The leading loops are
    then fused for the threads instead, as with no chunk (a stream is then vectorized alone)."""
    ext = A.extent(axis)
    return ext is not None and ext // chunk < 2


def _member(s: Schedule, plan: Plan, m: ComputeOp, anchor: ComputeOp, at: E.IterVar, kn: dict,
            hint: tuple[Tensor, int, int] | None = None) -> None:
    """A producer computed once per chunk of its anchor, vectorized like the anchor."""
    v = int(kn.get(f"{plan.graph.label(m)}.partials", 0))
    rf = partials.factor(s, m.output(0), v, _lanes(plan, m)) if v else None
    s[m].compute_at(s[anchor], at)
    if rf is not None:
        partials.attach(s, rf, anchor, at)
    elif not plan.graph.infos[m].is_reduction and len(m.axis) >= 2:
        _vector_rows(s, m, hint)


def _vector_rows(s: Schedule, op: ComputeOp, hint: tuple[Tensor, int, int] | None) -> None:
    """The stage's last loop vectorized; with a prefetch hint (plan.row_prefetch: tensor, step,
    steps ahead), first split by the step, the hint at the top of each step."""
    st = s[op]
    if hint is None:
        st.vectorize(st.op.axis[-1])
        return
    tensor, step, ahead = hint
    jo, ji = st.split(st.op.axis[-1], factor=step)
    st.vectorize(ji)
    st.prefetch(tensor, jo, ahead)


def _lanes(plan: Plan, op) -> int:
    """Lanes of a vector of ``op``'s partials (its first output's type)."""
    return plan.target.vector_lanes(str(op.outputs[0].dtype))


def _split_reduction(s: Schedule, op, parts: int, v: int, lanes: int) -> None:
    """Few long rows: too few for the threads. The reduction is cut into ``parts`` pieces
    (``rfactor`` over the outer part of a split), the pieces are shared among threads, each
    reduced in ``v`` vector partials, and the few results per row are summed at the end."""
    kp, _ = s[op].split(s[op].op.reduce_axis[-1], nparts=parts)
    pieces = s.rfactor(op.output(0), kp)
    in_threads(s, pieces.op, s[pieces].op.axis[0])
    if v:
        rf = partials.factor(s, pieces, v, lanes)
        partials.attach(s, rf, pieces.op, s[pieces].op.axis[0])
