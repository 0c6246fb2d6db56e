"""Whether statement schedules keep every exact dependence: no sink before its source.

The dependences (``deps.py``) are computed once, under the program's order -- the stages in
order, each over its root axes (``deps.in_program_order``), not the loop nest TE primitives
made of them. They are facts about *instances* (this write of
``B[3, 4]`` is read by that instance of ``C``), so they do not move when a command changes the
schedules. A new set of schedules is legal exactly when, for every dependence, the sink
instance still runs strictly after its source: mapping each pair through the new schedules
must give a sink time lexicographically greater than the source time. The pairs for which it
does not are a :class:`Conflict`, reported with the dependence's kind, statements, tensor and
distance vectors, and a concrete instance pair found by isl (seed 004 §4, Tiramisu's
``check_legality_of_function``, but with the reason kept instead of a boolean).

Schedules are given per statement (isl tuple name -> map into one time space ``T``); maps of
different lengths are padded with zeros, which is what the 2d+1 encoding means by a shorter
vector. The same machinery answers which time dimensions carry a dependence after a
transformation (a parallel loop must carry none).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import islpy as isl

from ..ir.names import shown
from .deps import Dependence, Witness
from .space import DIM, point_values

Schedules = Mapping[str, isl.Map]


def pad(sched: isl.Map, n: int) -> isl.Map:
    """``sched`` with its time vector padded by zeros to ``n`` dimensions."""
    have = sched.dim(DIM.out)
    if have >= n:
        return sched
    out = sched.add_dims(DIM.out, n - have)
    for k in range(have, n):
        out = out.fix_si(DIM.out, k, 0)
    return out.set_tuple_name(DIM.out, "T")


def align(scheds: Schedules) -> dict[str, isl.Map]:
    """Every schedule padded to the longest one (the 2d+1 vectors compared position by position)."""
    n = max((m.dim(DIM.out) for m in scheds.values()), default=0)
    return {k: pad(m, n).set_tuple_name(DIM.out, "T") for k, m in scheds.items()}


def time_pairs(dep: Dependence, scheds: Schedules) -> isl.Map:
    """The dependence's instance pairs as (source time, sink time) under ``scheds``."""
    return dep.relation.apply_domain(scheds[dep.source.name]).apply_range(scheds[dep.sink.name])


def lex(n: int, how: str) -> isl.Map:
    """The order ``how`` ("lt", "gt", "ge") between time vectors of ``n`` dimensions."""
    space = isl.Space.set_alloc(isl.DEFAULT_CONTEXT, 0, n).set_tuple_name(DIM.set, "T")
    return {"lt": isl.Map.lex_lt, "gt": isl.Map.lex_gt, "ge": isl.Map.lex_ge}[how](space)


def union(maps: Sequence[isl.Map]) -> isl.Map | None:
    """The union of ``maps`` (None for none)."""
    out = None
    for m in maps:
        out = m if out is None else out.union(m)
    return out.coalesce() if out is not None else None


def backwards(pairs: isl.Map) -> isl.Map:
    """The pairs whose sink does not run strictly after the source."""
    return pairs.intersect(lex(pairs.dim(DIM.in_), "ge"))


@dataclass(eq=False)
class Conflict:
    """The instance pairs of ``dep`` that ``scheds`` would run sink-first (or at once), as
    (source time, sink time) pairs in the new schedules."""

    dep: Dependence
    pairs: isl.Map
    scheds: dict[str, isl.Map]

    def instances(self) -> isl.Map:
        """The violated pairs between instances."""
        src, snk = self.scheds[self.dep.source.name], self.scheds[self.dep.sink.name]
        return self.pairs.apply_domain(src.reverse()).apply_range(snk.reverse())

    def witness(self) -> Witness | None:
        """A concrete violated pair (with the sizes and the dependence's distance at it)."""
        d = self.dep
        assert d.source.schedule is not None and d.sink.schedule is not None
        part = self.instances().apply_domain(d.source.schedule).apply_range(d.sink.schedule)
        return d.witness(part.intersect(d.time))

    def describe(self) -> str:
        d = self.dep
        w = self.witness()
        tail = ""
        if w is not None:
            tail = f": {w.sink} would no longer run after {w.source}, which it depends on"
            if w.sizes:
                tail += " (" + ", ".join(f"{shown(k)} = {v}" for k, v in w.sizes.items()) + ")"
        return (f"it reverses the {d.kind} dependence {d.source.label()} -> {d.sink.label()} through "
                f"{shown(d.tensor_name)} (distance {distance_text(d)}){tail}")

    __str__ = describe


def conflicts(deps: Sequence[Dependence], scheds: Schedules, context: isl.Set | None = None) -> list[Conflict]:
    """Every dependence ``scheds`` break (for sizes in ``context``), flow dependences first."""
    al = align(scheds)
    order = {"flow": 0, "anti": 1, "output": 2}
    out = []
    for d in sorted(deps, key=lambda d: order.get(d.kind, 3)):
        if d.source.name not in al or d.sink.name not in al:
            continue
        bad = backwards(time_pairs(d, al))
        if context is not None:
            bad = bad.intersect_params(context)
        if not bad.is_empty():
            out.append(Conflict(d, bad.coalesce(), al))
    return out


def equal_prefix(m: isl.Map, n: int) -> isl.Map:
    """The pairs of ``m`` equal on the first ``n`` time dimensions."""
    for k in range(n):
        m = m.equate(DIM.in_, k, DIM.out, k)
    return m


def carried_part(dep: Dependence, scheds: Schedules, pos: int, width: int = 1) -> isl.Map:
    """The pairs of ``dep`` the loop at time dimensions ``[pos, pos + width)`` carries under
    ``scheds``: equal before it, different within it."""
    pairs = time_pairs(dep, align(scheds))
    tied = equal_prefix(pairs, pos)
    return tied.subtract(equal_prefix(tied, pos + width))


def distance_set(dep: Dependence) -> tuple[isl.Set, list[str]]:
    """The dependence's distance vectors and the names of their coordinates: over the
    statements' dimensions (sink minus source) when they have as many, else over the loops
    enclosing both."""
    if len(dep.source.dim_vars) == len(dep.sink.dim_vars):
        rel = dep.relation.set_tuple_name(DIM.in_, "X").set_tuple_name(DIM.out, "X")
        return rel.deltas().coalesce(), [v.name for v in dep.sink.dim_vars]
    names = [lp.name if lp.width == 1 else f"{lp.name}#{k}" for lp in dep.common_loops() for k in range(lp.width)]
    return dep.distances(), names


def points(s: isl.Set, limit: int = 8) -> list[list[int]] | None:
    """The points of a parameter-free bounded set, at most ``limit`` (None: more, or unbounded)."""
    if s.dim(DIM.param):
        s = s.project_out(DIM.param, 0, s.dim(DIM.param))
    if not s.is_bounded():
        return None
    got: list[list[int]] = []

    def take(p: isl.Point) -> None:
        got.append(point_values(p, DIM.set, s.dim(DIM.set)))

    s.foreach_point(take)
    return sorted(got) if len(got) <= limit else None


def distance_text(dep: Dependence) -> str:
    """``(1, -1)`` or ``(1, 0), (0, 1)``; the set in isl's words when it is not a few points."""
    s, names = distance_set(dep)
    pts = points(s)
    if pts is None:
        return f"{{{', '.join(shown(n) for n in names)}}} in {s}"
    if not pts:
        return "none"
    return ", ".join("(" + ", ".join(str(x) for x in p) + ")" for p in pts)


__all__ = ["Conflict", "align", "backwards", "carried_part", "conflicts", "distance_set", "distance_text",
           "equal_prefix", "lex", "pad", "points", "time_pairs", "union"]
