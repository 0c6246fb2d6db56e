"""``s.parallelize_all_like(reference)``: every stage's loops annotated as the reference's loops
they map to (nvFuser's ``scheduler_utils::parallelizeAllLike``).

nvFuser's schedulers transform and parallelize one reference tensor, propagate the transforms
(``s.propagate``) and then copy the parallel types to every tensor whose loops the loop map
ties to the reference's. Here a loop "maps" as in computeAt by position: through each reader's
indices and the replayed relations (``transform_replay.leaf_images``, broadcasts forwarded),
along any path of producers and consumers from the reference. Each annotation is made by the
stage's own primitive (``parallel``, ``vectorize``, ``unroll``, ``bind``), so a loop that
primitive refuses (a reduction loop made parallel, say) keeps its kind, and the answer says
why; nvFuser instead parallelizes reduction loops too (a GPU reduction across threads).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import ScheduleError
from ..ir import expr as E
from ..ir.stmt import LoopKind
from .axis_map import Graph
from .transform_replay import leaf_images

if TYPE_CHECKING:
    from .schedule import Schedule
    from .stage import Stage

_COPIED = (LoopKind.PARALLEL, LoopKind.VECTORIZED, LoopKind.UNROLLED, LoopKind.THREAD_BINDING)


def loop_maps(g: Graph, ref: Stage) -> dict[int, dict[int, E.IterVar]]:
    """For every stage connected to ``ref``: ref leaf (by id) -> the stage's leaf it maps to."""
    maps: dict[int, dict[int, E.IterVar]] = {id(ref): {id(iv): iv for iv in ref.leaf_iter_vars}}
    for y, x, root_map in g.spread(ref):
        img = leaf_images(y, x, root_map)
        leaves = {id(iv) for iv in x.leaf_iter_vars}
        maps[id(x)] = {r: img[v] for r, v in maps[id(y)].items() if v in img and id(img[v]) in leaves}
    return maps


def parallelize_all_like(sch: Schedule, ref: Stage, stages=None, kinds=None) -> dict[str, list[str]]:
    """Copy ``ref``'s loop kinds (``kinds``: a subset of parallel, vectorized, unrolled,
    thread_binding; all by default) to ``stages`` (default: every stage); returns, per stage,
    ``"loop: kind"`` for each copy made and ``"loop: kind refused: why"`` for each refused."""
    wanted = _kinds(ref, kinds)
    chosen = {id(sch[s]) for s in stages} if stages is not None else None
    maps = loop_maps(Graph(sch), ref)
    out: dict[str, list[str]] = {}
    for st in sch.stages:
        if st is ref or id(st) not in maps or (chosen is not None and id(st) not in chosen):
            continue
        for riv in ref.leaf_iter_vars:
            kind = ref.leaf_kind(riv)
            iv = maps[id(st)].get(id(riv))
            if iv is None or kind not in wanted or st.leaf_kind(iv) == kind:
                continue
            try:
                _annotate(st, iv, kind, ref.iter_var_attrs.get(riv))
                out.setdefault(st.name, []).append(f"{iv.name}: {kind}")
            except ScheduleError as err:
                out.setdefault(st.name, []).append(f"{iv.name}: {kind} refused: {err}")
    return out


def _kinds(ref: Stage, kinds) -> set[LoopKind]:
    if kinds is None:
        return set(_COPIED)
    bad = [k for k in kinds if k not in {str(c) for c in _COPIED}]
    if bad:
        raise ScheduleError(f"parallelize_all_like({ref.name}): unknown loop kind {bad[0]!r}; give some of "
                            f"{', '.join(map(str, _COPIED))}")
    return {LoopKind(k) for k in kinds}


def _annotate(st: Stage, iv: E.IterVar, kind: LoopKind, attr) -> None:
    if kind == LoopKind.THREAD_BINDING:
        st.bind(iv, attr.bind_thread)
    elif kind == LoopKind.PARALLEL:
        st.parallel(iv)
    elif kind == LoopKind.VECTORIZED:
        st.vectorize(iv)
    else:
        st.unroll(iv)


__all__ = ["loop_maps", "parallelize_all_like"]
