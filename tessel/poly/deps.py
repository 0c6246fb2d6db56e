"""Exact dependences between statement instances, and which loops carry them.

Two instances depend on each other when they touch the same storage element, at least one
writes it, and the schedule runs one before the other: *flow* (write then read), *anti* (read
then write), *output* (write then write). These are memory-based dependences over the
polyhedral model (``model.py``): exactly the orders a transformation or an annotation must keep.

A loop *carries* a dependence when its two instances run in the same iteration of every loop
outside it but in different iterations of it: running that loop's iterations at once
(``parallel``, ``vectorize``) could then reorder them. A loop that carries none may run its
iterations in any order. Each answer comes with a witness: concrete sizes, source instance and
sink instance, found by isl.
"""

from __future__ import annotations

from dataclasses import dataclass

import islpy as isl

from ..ir.names import shown
from ..ir.stmt import LoopKind
from .model import Access, Loop, Model, Statement
from .space import DIM, point_values, pw_to_map

KINDS = {(True, False): "flow", (False, True): "anti", (True, True): "output"}


@dataclass(eq=False)
class Instance:
    """A concrete statement instance: its dimensions' values (by the user's names)."""

    stmt: Statement
    values: dict[str, int]

    def __str__(self) -> str:
        vals = ", ".join(f"{shown(k)}={v}" for k, v in self.values.items())
        return f"{self.stmt.label()}({vals})"


@dataclass(eq=False)
class Witness:
    sizes: dict[str, int]
    source: Instance
    sink: Instance
    distance: dict[str, int]

    def __str__(self) -> str:
        sizes = ", ".join(f"{shown(k)} = {v}" for k, v in self.sizes.items())
        dist = ", ".join(f"{shown(k)}: {v}" for k, v in self.distance.items()) or "none"
        where = f"for {sizes}, " if sizes else ""
        return f"{where}{self.source} then {self.sink} (distance {dist})"


@dataclass(eq=False)
class Dependence:
    """``kind`` dependence from ``source`` to ``sink`` instances through ``tensor``, kept as a
    relation between their time vectors (``in_time()``); ``relation`` gives it between
    instances (the schedules are one-to-one)."""

    kind: str
    source: Statement
    sink: Statement
    tensor_name: str
    time: isl.Map
    model: Model

    @property
    def relation(self) -> isl.Map:
        """Source instance -> sink instance."""
        return self.instances(self.time)

    def instances(self, part: isl.Map) -> isl.Map:
        """``part`` (a sub-relation of ``in_time()``) between instances."""
        assert self.source.schedule is not None and self.sink.schedule is not None
        return part.apply_domain(self.source.schedule.reverse()).apply_range(self.sink.schedule.reverse())

    def common_loops(self) -> list[Loop]:
        out = []
        for a, b in zip(self.source.loops, self.sink.loops):
            if a is not b:
                break
            out.append(a)
        return out

    def in_time(self) -> isl.Map:
        """The dependence between time vectors (source time -> sink time)."""
        return self.time

    def distances(self) -> isl.Set:
        """The distance vectors over the loops enclosing both ends (one coordinate per time
        dimension of those loops)."""
        keep = {d for lp in self.common_loops() for d in range(lp.pos, lp.pos + lp.width)}
        out = self.in_time().deltas()
        for k in reversed(range(out.dim(DIM.set))):
            if k not in keep:
                out = out.project_out(DIM.set, k, 1)
        return out.coalesce()

    def carried_by(self, loop: Loop) -> isl.Map:
        """The part of the dependence (time vectors) that ``loop`` carries; empty if none."""
        t = self.in_time()
        eq_before = _equal_prefix(t, loop.pos)
        return eq_before.subtract(_equal_prefix(eq_before, loop.pos + loop.width))

    def is_carried_by(self, loop: Loop, context: isl.Set) -> bool:
        """Whether ``carried_by(loop)`` has a point under ``context``, decided without isl's
        ``subtract``: a pair of instances equal on the time dimensions before the loop's and
        apart on one of the loop's own (the time relation orders them: source first)."""
        t = self.in_time().intersect_params(context)
        space = t.get_space()
        for k in range(loop.pos, loop.pos + loop.width):
            apart = t.intersect(isl.Map.from_basic_map(isl.BasicMap.equal(space, k))).order_lt(DIM.in_, k, DIM.out, k)
            if not apart.is_empty():
                return True
        return False

    def witness(self, part: isl.Map | None = None) -> Witness | None:
        """Concrete sizes and instances of the dependence (of ``part`` of it, a time relation
        such as ``carried_by``'s); None if there are none."""
        rel = self.instances(self.time if part is None else part)
        rel = rel.intersect_params(self.model.context)
        if rel.is_empty():
            return None
        pt = rel.wrap().sample_point()
        nsrc = len(self.source.dim_vars)
        vals = point_values(pt, DIM.set, nsrc + len(self.sink.dim_vars))
        params = point_values(pt, DIM.param, rel.dim(DIM.param))
        sizes = {v.name: params[k] for k, v in enumerate(self.model.params)}
        src = Instance(self.source, {v.name: x for v, x in zip(self.source.dim_vars, vals[:nsrc])})
        snk = Instance(self.sink, {v.name: x for v, x in zip(self.sink.dim_vars, vals[nsrc:])})
        return Witness(sizes, src, snk, self._distance_at(pt, nsrc))

    def _distance_at(self, pt: isl.Point, nsrc: int) -> dict[str, int]:
        src_t = _time_at(self.source, pt, 0, nsrc, self.model)
        snk_t = _time_at(self.sink, pt, nsrc, len(self.sink.dim_vars), self.model)
        out: dict[str, int] = {}
        for lp in self.common_loops():
            for k in range(lp.pos, lp.pos + lp.width):
                label = lp.name if lp.width == 1 else f"{lp.name}#{k - lp.pos}"
                out[label] = snk_t[k] - src_t[k]
        return out

    def describe(self, part: isl.Map | None = None) -> str:
        """``flow dependence B -> C through B: <witness>`` (of ``part`` of it, when given)."""
        w = self.witness(part)
        return (f"{self.kind} dependence {self.source.label()} -> {self.sink.label()} through "
                f"{shown(self.tensor_name)}" + (f": {w}" if w else ""))

    __str__ = describe


def _equal_prefix(m: isl.Map, n: int) -> isl.Map:
    for k in range(n):
        m = m.equate(DIM.in_, k, DIM.out, k)
    return m


def _time_at(stmt: Statement, pt: isl.Point, first: int, n: int, model: Model) -> list[int]:
    """The time vector of the instance whose dimensions are coordinates ``first..first+n`` of ``pt``."""
    assert stmt.schedule is not None
    vals = point_values(pt, DIM.set, first + n)[first:]
    params = point_values(pt, DIM.param, pt.get_space().dim(DIM.param))
    inst = isl.Set.universe(stmt.domain.get_space())
    for k, v in enumerate(vals):
        inst = inst.fix_val(DIM.set, k, isl.Val.int_from_si(inst.get_ctx(), v))
    for k, v in enumerate(params):
        inst = inst.fix_val(DIM.param, k, isl.Val.int_from_si(inst.get_ctx(), v))
    image = inst.apply(stmt.schedule).sample_point()
    return point_values(image, DIM.set, model.time_dims)


def _in_time(stmt: Statement, a: Access) -> isl.Map:
    """The access as a relation from time vectors to elements."""
    assert stmt.schedule is not None
    return a.relation.apply_domain(stmt.schedule)


def in_program_order(model: Model, among: list[Statement] | None = None) -> Model:
    """``model``'s statements (their domains and accesses) run in the program's own order: the
    stages one after another in the schedule's order, each over its root axes in their order
    (a recurrence's in its directions), a reduction's init before its update. That order is what
    the program means, so its dependences are the ones every schedule must keep -- whatever made
    the schedule (TE primitives, positions, commands). The loops a stage is computed inside
    (its copies) come last: copies of a value never depend on each other through the program.
    ``among``: those statements alone."""
    stmts, width = [], 0
    vectors: dict[int, list] = {}
    loops: dict[tuple, Loop] = {}
    chosen = model.statements if among is None else among
    pos = {id(st): k for k, st in enumerate(model.sch.stages)}
    for s in chosen:
        st, conv = s.stage, s.converter
        assert conv is not None
        roots = list(st.op.axis) if s.role in ("init", "finish") else list(st.op.root_iter_vars)
        outer = len(s.dim_vars) - len(roots)
        vec: list = [conv.const(pos[id(st)])]
        for k, iv in enumerate(roots):
            if iv.is_reduce and not any(x.is_reduce for x in roots[:k]):
                vec.append(conv.const(1))  # the update after the init, inside the data axes
            loops.setdefault((id(st), id(iv)), Loop(st, iv, len(vec), 1, LoopKind.SERIAL))
            vec += [conv.aff(st.op.reindex(iv, iv.var)), conv.const(0)]
        if s.role in ("init", "finish"):  # where the update has its mark (1): before it, and after
            vec.append(conv.const(0 if s.role == "init" else 2))  # the copies' dims below must not meet it
        for v in s.dim_vars[:outer]:
            vec += [conv.aff(v), conv.const(0)]
        vectors[id(s)] = vec
        width = max(width, len(vec))
    for s in chosen:
        vec = vectors[id(s)]
        vec += [s.converter.const(0)] * (width - len(vec))
        copy = Statement(s.name, s.stage, s.role, s.dim_vars, s.domain,
                         [lp for lp in loops.values() if lp.stage is s.stage and (s.role == "update" or not lp.iter_var.is_reduce)],
                         pw_to_map(vec, s.domain, "T", [f"t{k}" for k in range(width)]), s.accesses, s.notes, s.converter)
        stmts.append(copy)
    return Model(model.sch, model.namer, model.params, model.context, stmts, list(loops.values()), width,
                 model.unmodelled, model.ranges)


def program_dependences(model: Model, moved: frozenset[int] | None = None) -> list[Dependence]:
    """The dependences of ``model``'s statements in the program's order (``in_program_order``),
    but for a reduction's update with itself through its accumulator: the order of combination
    is not part of what the program computes (TE reorders and splits reduction loops freely).
    ``moved``: the positions of the stages a schedule may have moved (commands, storage); only
    dependences with an end in one of them are found (the others are the tree rules' to keep),
    so that a long program with one stage in place pays for that stage's neighbours alone."""
    among = None
    if moved is not None:
        pos = {id(st): k for k, st in enumerate(model.sch.stages)}
        mine = [x for x in model.statements if pos[id(x.stage)] in moved]
        written = {a.relation.get_tuple_name(DIM.out) for x in mine for a in x.writes}
        touched = {a.relation.get_tuple_name(DIM.out) for x in mine for a in x.accesses}
        among = [x for x in model.statements if pos[id(x.stage)] in moved
                 or any(a.relation.get_tuple_name(DIM.out) in (touched if a.write else written) for a in x.accesses)]
    base = in_program_order(model, among)
    return [d for d in dependences(base) if not _accumulates(d)]


def _accumulates(d: Dependence) -> bool:
    """A reduction's update with itself through its accumulator, its reducer found reorderable
    (one refuted on sample values keeps its order: ``reorder_counterexample``)."""
    from ..ir import expr as E
    from ..schedule.reducer_checks import reorder_counterexample

    s = d.source
    if s is not d.sink or s.role != "update":
        return False
    body = getattr(s.stage.op, "body", ())
    if any(isinstance(b, E.Reduce) and reorder_counterexample(b.combiner) for b in body):
        return False
    own = {a.relation.get_tuple_name(DIM.out) for a in s.writes}
    return d.tensor_name in {a.tensor.name for a in s.writes} and all(
        r.relation.is_equal(w.relation) for w in s.writes for r in s.reads
        if r.relation.get_tuple_name(DIM.out) in own)


def dependences(model: Model, among: list[Statement] | None = None, pairs: dict | None = None) -> list[Dependence]:
    """Every flow, anti and output dependence of the model (between ``among`` only, when given),
    one per (kind, source statement, sink statement, tensor); the union over the accesses.
    ``pairs``: the relations of pairs of accesses, and the dependences made of them, found by
    earlier calls on the same model (the statements of an inner loop are among those of the
    loops around it), kept with their accesses so that no id is reused meanwhile."""
    stmts = model.statements if among is None else among
    parts: dict[tuple, list[tuple]] = {}  # (kind, source, sink, tensor) -> its pairs' keys, in order
    pairs = {} if pairs is None else pairs
    timed: dict[tuple, isl.Map] = {}

    def in_time(st: Statement, a: Access) -> isl.Map:
        k = (id(st), id(a))
        if k not in timed:
            timed[k] = _in_time(st, a)
        return timed[k]

    by_tensor: dict[str, list[tuple[Statement, Access]]] = {}  # storage -> its accesses, in order
    for s2 in stmts:
        for a2 in s2.accesses:
            by_tensor.setdefault(a2.relation.get_tuple_name(DIM.out), []).append((s2, a2))
    earlier = _Earlier(model.time_dims)
    for s1 in stmts:
        for a1 in s1.accesses:
            for s2, a2 in by_tensor[a1.relation.get_tuple_name(DIM.out)]:
                if not (a1.write or a2.write):
                    continue
                key = (id(s1), id(a1), id(s2), id(a2))
                if key not in pairs:
                    same = in_time(s1, a1).apply_range(in_time(s2, a2).reverse())
                    rel = earlier.part_of(same).intersect_params(model.context)
                    pairs[key] = (s1, a1, s2, a2, None if rel.is_empty() else rel)
                if pairs[key][4] is not None:
                    kind = KINDS[(a1.write, a2.write)]
                    parts.setdefault((kind, id(s1), id(s2), id(a1.tensor)), []).append(key)
    return [_union(model, key, keys, pairs) for key, keys in parts.items()]


class _Earlier:
    """Time vectors before others (lexicographic order), asked of one relation at a time.

    The order is a union of one piece per time dimension ``k`` (equal before ``k``, smaller at
    ``k``), and a deep nest has many dimensions (a compute_at chain had 4 a stage, before the
    loops that run once took none): intersecting a relation with all of them cost a chain of N
    stages N^3. The relation's differences (``deltas``) say where its source and sink times
    differ by a fixed amount (an explicit equality: a difference fixed only implicitly keeps its
    piece, which is then merely intersected for nothing): a piece at a dimension fixed to differ
    by 0 is empty, and none after one fixed to differ otherwise can hold. Only the others are
    intersected: the same relation, from one or two pieces."""

    def __init__(self, width: int):
        self.space = isl.Space.set_alloc(isl.DEFAULT_CONTEXT, 0, width).set_tuple_name(DIM.set, "T")
        self.width = width
        self.pieces: dict[int, isl.Map] = {}

    def piece(self, k: int) -> isl.Map:
        """Equal before dimension ``k``, smaller at ``k``."""
        if k not in self.pieces:
            space = isl.Space.map_from_set(self.space)
            self.pieces[k] = isl.Map.from_basic_map(isl.BasicMap.equal(space, k)).order_lt(DIM.in_, k, DIM.out, k)
        return self.pieces[k]

    def candidates(self, same: isl.Map) -> list[int]:
        """The dimensions whose piece may meet ``same``, in order."""
        apart = same.deltas()  # sink time - source time; its equalities are explicit enough
        out = []
        for k in range(self.width):
            d = apart.plain_get_val_if_fixed(DIM.set, k)
            if d.is_nan() or d.is_pos():
                out.append(k)
            if not (d.is_nan() or d.is_zero()):
                break  # the times differ here by a fixed amount: no later piece holds
        return out

    def part_of(self, same: isl.Map) -> isl.Map:
        """``same`` restricted to its pairs whose source time is earlier."""
        out = isl.Map.empty(same.get_space())
        for k in self.candidates(same):
            out = out.union(same.intersect(self.piece(k)))
        return out


def _union(model: Model, key: tuple, keys: list[tuple], pairs: dict) -> Dependence:
    """The dependence ``key`` (kind, source, sink, tensor) made of the relations of the pairs of
    accesses ``keys``, in that order; kept in ``pairs`` beside them, since the calls for the
    statements of nested loops find the same ones again (and coalescing is isl's work)."""
    memo = ("dependence", key, tuple(keys))
    found = pairs.get(memo)
    if found is None:
        s1, a1, s2, _, rel = pairs[keys[0]]
        found = Dependence(key[0], s1, s2, a1.tensor.name, rel.coalesce(), model)
        for k in keys[1:]:
            found.time = found.time.union(pairs[k][4]).coalesce()
        pairs[memo] = found
    return found


def carried(model: Model, deps: list[Dependence], loop: Loop) -> tuple[Dependence, isl.Map] | None:
    """The first dependence ``loop`` carries, with the carried part (None: the loop's
    iterations are independent)."""
    inside = {id(s) for s in model.statements_in(loop)}
    for d in deps:
        if id(d.source) not in inside or id(d.sink) not in inside:
            continue
        if not d.is_carried_by(loop, model.context):
            continue
        part = d.carried_by(loop).intersect_params(model.context)  # what the report shows a point of
        if not part.is_empty():
            return d, part
    return None


__all__ = ["Dependence", "Instance", "Witness", "carried", "dependences", "in_program_order", "program_dependences"]
