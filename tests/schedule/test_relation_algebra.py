"""The relation algebra (tessel.schedule.relations) against brute-force enumeration.

Random chains of split (by factor or nparts, divisible or not), fuse, rebase and singleton over
random root domains. The loop nest the passed-down ranges describe is enumerated point by
point and the indices passed up from it are evaluated:

* where the guards hold, every leaf point lands inside the root domain, and every root point
  is reached exactly once; every loop variable on the way stays inside its own range; the
  guards a relation marks unneeded never decide;
* passing a root point down and back up returns it, at a leaf point whose guards hold;
* each relation's output ranges are exactly what its inputs' points map to (at least, for an
  nparts split, whose last outer iterations may be all padding: TVM's rule);
* PassUpDomain of a leaf sub-box covers every root point the box reaches, exactly when the
  box is the whole nest or a single point (seed 000's rules);
* replaying the chain onto other roots gives the same ranges and the same index maps.

And the acceptance rule of issue 11: only relations.py asks what type a relation is.
"""

from __future__ import annotations

import ast
import itertools
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tessel
from tessel.arith import Analyzer, IntSet
from tessel.errors import InternalError
from tessel.ir import expr as E
from tessel.ir.evaluate import evaluate
from tessel.schedule import relations as R

KINDS = ("split_factor", "split_nparts", "fuse", "rebase", "singleton")


@st.composite
def chains(draw):
    """Roots with their (min, extent), the relations made on them, and the leaves in order."""
    roots = [E.IterVar(None, E.Var(f"r{k}")) for k in range(draw(st.integers(1, 3)))]
    dom = {iv: (draw(st.integers(0, 3)), draw(st.integers(1, 7))) for iv in roots}
    leaves, rels = list(roots), []
    for n in range(draw(st.integers(0, 5))):
        kind = draw(st.sampled_from(KINDS))
        k = draw(st.integers(0, len(leaves) - 1))
        iv = leaves[k]
        if kind.startswith("split"):
            amount = E.const(draw(st.integers(1, 5)), "int32")
            outer, inner = E.IterVar(None, E.Var(f"{iv.name}.o{n}")), E.IterVar(None, E.Var(f"{iv.name}.i{n}"))
            by_factor = kind == "split_factor"
            rels.append(R.Split(iv, outer, inner, amount if by_factor else None, None if by_factor else amount))
            leaves[k:k + 1] = [outer, inner]
        elif kind == "fuse" and k + 1 < len(leaves):
            fused = E.IterVar(None, E.Var(f"f{n}"))
            rels.append(R.Fuse(iv, leaves[k + 1], fused))
            leaves[k:k + 2] = [fused]
        elif kind == "rebase":
            rebased = E.IterVar(None, E.Var(f"{iv.name}.rb{n}"))
            rels.append(R.Rebase(iv, rebased))
            leaves[k] = rebased
        elif kind == "singleton":
            one = E.IterVar(E.Range(0, 1), E.Var(f"one{n}"))
            rels.append(R.Singleton(one))
            leaves.insert(k, one)
    return roots, dom, rels, leaves


def _ranges(roots, dom, rels) -> dict[E.IterVar, E.Range]:
    ana = Analyzer()
    rmap = {iv: E.Range(*dom[iv]) for iv in roots}

    def put(iv, r):
        rmap[iv] = E.Range(ana.simplify(r.min), ana.simplify(r.extent))

    R.pass_down_domain(rels, rmap, put)
    return rmap


def _span(r: E.Range) -> range:
    assert isinstance(r.min, E.IntImm) and isinstance(r.extent, E.IntImm), f"not constant: {r}"
    return range(r.min.value, r.min.value + r.extent.value)


def _leaf_points(leaves, rmap):
    for point in itertools.product(*(_span(rmap[iv]) for iv in leaves)):
        yield dict(zip(leaves, point))


def _up(rels, rmap, leaves):
    value = {iv: iv.var for iv in leaves}
    guards = R.pass_up_index(rels, rmap, value)
    return value, guards


def _at(exprs: dict, point: dict) -> dict:
    env = {iv.var: v for iv, v in point.items()}
    return {iv: evaluate(e, env) for iv, e in exprs.items()}


def _nest(chain):
    """The chain's ranges and the root indices (and guards) passed up from its leaf variables."""
    roots, dom, rels, leaves = chain
    rmap = _ranges(roots, dom, rels)
    value, guards = _up(rels, rmap, leaves)
    return roots, rels, leaves, rmap, value, guards


def _holds(guards, point) -> bool:
    env = {iv.var: v for iv, v in point.items()}
    return all(evaluate(g.predicate(), env) for g in guards)


@settings(max_examples=60, deadline=None)
@given(chains())
def test_the_leaf_nest_covers_the_root_domain_once(chain):
    roots, _, leaves, rmap, value, guards = _nest(chain)
    assert all(iv in value for iv in roots)
    hits: Counter = Counter()
    needed = [g for g in guards if g.needed]
    for point in _leaf_points(leaves, rmap):
        if not _holds(guards, point):
            assert not _holds(needed, point), "a guard the relation called unneeded was the one that failed"
            continue
        vals = _at(value, point)
        for iv, v in vals.items():  # no loop variable runs outside its own range
            assert v in _span(rmap[iv]), f"{iv.name} = {v} outside {rmap[iv]} at {point}"
        hits[tuple(vals[iv] for iv in roots)] += 1
    domain = set(itertools.product(*(_span(rmap[iv]) for iv in roots)))
    assert set(hits) == domain
    assert all(n == 1 for n in hits.values()), "a root point is computed twice"


@settings(max_examples=60, deadline=None)
@given(chains())
def test_down_then_up_is_the_identity(chain):
    roots, rels, leaves, rmap, value, guards = _nest(chain)
    down_exprs = {iv: iv.var for iv in roots}
    R.pass_down_index(rels, rmap, down_exprs)
    for root_point in itertools.product(*(_span(rmap[iv]) for iv in roots)):
        at = dict(zip(roots, root_point))
        down = _at(down_exprs, at)
        leaf_point = {iv: down[iv] for iv in leaves}
        for iv in leaves:
            assert down[iv] in _span(rmap[iv]), f"root point {root_point} lands outside leaf {iv.name}"
        assert _holds(guards, leaf_point)
        back = _at({iv: value[iv] for iv in roots}, leaf_point)
        assert tuple(back[iv] for iv in roots) == root_point


@settings(max_examples=60, deadline=None)
@given(chains())
def test_each_relation_passes_down_the_ranges_its_inputs_reach(chain):
    roots, dom, rels, _ = chain
    rmap = _ranges(roots, dom, rels)
    for rel in rels:
        down = {iv: iv.var for iv in rel.inputs}
        rel.index_down(rmap, down)
        reached: dict[E.IterVar, set[int]] = {iv: set() for iv in rel.outputs}
        for point in itertools.product(*(_span(rmap[iv]) for iv in rel.inputs)):
            vals = _at({iv: down[iv] for iv in rel.outputs}, dict(zip(rel.inputs, point)))
            for iv, v in vals.items():
                reached[iv].add(v)
        for iv in rel.outputs:
            full = set(_span(rmap[iv]))
            assert reached[iv] <= full
            if not (isinstance(rel, R.Split) and rel.nparts is not None and iv is rel.outer):
                assert reached[iv] == full, f"{rel.kind} gives {iv.name} {rmap[iv]}, reached {sorted(reached[iv])}"


def _const(e) -> int:
    e = Analyzer().simplify(e)
    assert isinstance(e, E.IntImm), f"not constant: {e}"
    return e.value


@settings(max_examples=60, deadline=None)
@given(chains(), st.data())
def test_pass_up_of_a_leaf_box_covers_what_it_reaches(chain, data):
    roots, rels, leaves, rmap, value, guards = _nest(chain)
    shape = data.draw(st.sampled_from(["whole", "point", "box"]))
    box: dict[E.IterVar, range] = {}
    for iv in leaves:
        span = _span(rmap[iv])
        if shape == "whole":
            box[iv] = span
        else:
            lo = data.draw(st.sampled_from(span))
            hi = lo if shape == "point" else data.draw(st.integers(lo, span[-1]))
            box[iv] = range(lo, hi + 1)
    up = {iv: IntSet.single_point(E.const(b[0], "int32")) if len(b) == 1 else IntSet.interval(b[0], b[-1])
          for iv, b in box.items()}
    R.pass_up_domain(rels, rmap, up, Analyzer())
    reached: dict[E.IterVar, set[int]] = {iv: set() for iv in roots}
    for point in itertools.product(*box.values()):
        point = dict(zip(box, point))
        if _holds(guards, point):
            vals = _at({iv: value[iv] for iv in roots}, point)
            for iv in roots:
                reached[iv].add(vals[iv])
    for iv in roots:
        s = up[iv]
        lo, hi = _const(s.min_value), _const(s.max_value)
        if reached[iv]:
            assert lo <= min(reached[iv]) and max(reached[iv]) <= hi, f"{iv.name}: {s} misses {sorted(reached[iv])}"
        if shape == "whole":
            assert (lo, hi) == (_span(rmap[iv])[0], _span(rmap[iv])[-1])
        if shape == "point" and reached[iv]:
            assert lo == hi == min(reached[iv])


@settings(max_examples=40, deadline=None)
@given(chains())
def test_a_replayed_chain_has_the_same_ranges_and_index_maps(chain):
    roots, dom, rels, leaves = chain
    rmap = _ranges(roots, dom, rels)
    others = [E.IterVar(None, E.Var(f"x{k}")) for k in range(len(roots))]
    axis_map = dict(zip(roots, others))
    replayed = R.replay(rels, axis_map)
    assert [type(r) for r in replayed] == [type(r) for r in rels]
    assert all(axis_map[iv] is not iv for rel in rels for iv in rel.outputs)
    rmap2 = _ranges(others, {axis_map[iv]: dom[iv] for iv in roots}, replayed)
    for iv, r in rmap.items():
        assert _span(rmap2[axis_map[iv]]) == _span(r)
    value, _ = _up(rels, rmap, leaves)
    value2, _ = _up(replayed, rmap2, [axis_map[iv] for iv in leaves])
    for point in itertools.islice(_leaf_points(leaves, rmap), 50):
        a = _at({iv: value[iv] for iv in roots}, point)
        b = _at({axis_map[iv]: value2[axis_map[iv]] for iv in roots}, {axis_map[iv]: v for iv, v in point.items()})
        assert [a[iv] for iv in roots] == [b[axis_map[iv]] for iv in roots]


def test_replay_needs_every_input_mapped():
    p, o, i = (E.IterVar(None, E.Var(k)) for k in "poi")
    split = R.Split(p, o, i, E.const(4, "int32"), None)
    with pytest.raises(InternalError, match="no loop for p"):
        split.replay({})
    q = E.IterVar(None, E.Var("q", "int64"))
    again = split.replay({p: q})
    assert again.parent is q and again.outer.name == "q.outer" and again.factor.dtype == q.dtype


def test_a_nonzero_parent_min_is_added_back():
    p, o, i = (E.IterVar(None, E.Var(n)) for n in "poi")
    rel = R.Split(p, o, i, E.const(4, "int32"), None)
    rmap = {p: E.Range(3, 10)}
    R.pass_down_domain([rel], rmap)
    value = {o: E.const(2, "int32"), i: E.const(3, "int32")}
    (guard,) = R.pass_up_index([rel], rmap, value)
    assert evaluate(value[p], {}) == 2 * 4 + 3 + 3
    assert guard.needed and not evaluate(guard.predicate(), {})  # 14 is past the end, 3 + 10


# ---- only relations.py dispatches on the type of a relation ------------------------------------
RELATION_TYPES = {"Split", "Fuse", "Rebase", "Singleton", "Relation", "LoopMap", "Shift", "Skew", "Reverse",
                  "Interchange"}


def _names_in(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}


def _type_dispatch(tree: ast.AST) -> list[int]:
    """Lines of ``isinstance(x, <relation type>)``, ``type(x) is/== <relation type>`` and
    ``match`` class patterns naming a relation type."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("isinstance", "issubclass"):
            if len(node.args) == 2 and _names_in(node.args[1]) & RELATION_TYPES:
                lines.append(node.lineno)
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            typed = any(isinstance(s, ast.Call) and getattr(s.func, "id", None) == "type" for s in sides)
            if typed and any(_names_in(s) & RELATION_TYPES for s in sides):
                lines.append(node.lineno)
        elif isinstance(node, ast.MatchClass) and _names_in(node.cls) & RELATION_TYPES:
            lines.append(node.lineno)
    return lines


def test_only_the_relations_module_inspects_relation_types():
    root = Path(tessel.__file__).parent
    found = []
    for path in sorted(root.rglob("*.py")):
        if path == root / "schedule" / "relations.py":
            continue
        found += [f"{path.relative_to(root)}:{line}" for line in _type_dispatch(ast.parse(path.read_text()))]
    assert not found, "relation types inspected outside tessel/schedule/relations.py:\n" + "\n".join(found)


def test_the_dispatch_scan_finds_what_it_looks_for():
    src = ("if isinstance(rel, Split): pass\n"
           "if isinstance(r, (R.Fuse, int)): pass\n"
           "if type(r) is Rebase: pass\n"
           "match r:\n    case Singleton(): pass\n"
           "if isinstance(r, E.IterVar): pass\n")
    assert _type_dispatch(ast.parse(src)) == [1, 2, 3, 5]


def test_a_factor_larger_than_its_parent_is_cut_only_when_proved_and_never_on_a_thread():
    """TVM v0.14: the inner loop gets the factor unless the parent is provably shorter."""
    n = E.Var("n")
    p, o, i = (E.IterVar(None, E.Var(k)) for k in "poi")
    split = R.Split(p, o, i, E.const(16, "int32"), None)

    def inner_extent(ext, cut):
        rmap = {p: E.Range(0, ext)}
        R.pass_down_domain([split], rmap, cut=cut)
        return Analyzer().simplify(rmap[i].extent)

    ana = Analyzer()
    assert inner_extent(5, R.Cut()).value == 5
    assert inner_extent(5, R.Cut(analyzer=ana)).value == 5
    assert inner_extent(5, R.Cut(thread_bound=lambda iv: iv is i)).value == 16  # the launch fixes 16 threads
    assert inner_extent(5, R.Cut(thread_bound=lambda iv: iv is o)).value == 5
    assert inner_extent(n, R.Cut(analyzer=ana)).value == 16  # not min(n, 16): the tail is guarded
    assert inner_extent(n, R.Cut()).value == 16
    small = Analyzer()
    small.bind(n, E.Range(0, 10))  # n < 16 is provable: the loop runs over n
    assert str(inner_extent(n, R.Cut(analyzer=small))) == "n"


# ---- loop maps: Tiramisu's loop commands as relations (issue 32) --------------------------------
def _loop_maps(i: E.IterVar, j: E.IterVar) -> list[R.LoopMap]:
    return [R.Shift(i, 3), R.Reverse(j), R.Interchange(i, j), R.Skew(i, j, 1, 1, 0, 1), R.Skew(i, j, 2, 1, 1, 1),
            R.Skew(i, j, 3, 2, 1, 1), R.Skew(i, j, 0, 1, 1, 0)]


@pytest.mark.parametrize("k", range(7))
def test_a_loop_map_passes_points_down_and_up_and_its_box_holds_them(k):
    """Every point of a 7 x 13 nest (from 2, 1) maps down into the passed-down box, back up
    to itself, the map is one-to-one, and time_down is index_down's value (one coordinate)."""
    i = E.IterVar(E.Range(2, 7), E.Var("i", "int32"), E.IterVar.DATA_PAR)
    j = E.IterVar(E.Range(1, 13), E.Var("j", "int32"), E.IterVar.DATA_PAR)
    rel = _loop_maps(i, j)[k]
    rmap = {i: i.dom, j: j.dom}
    box = dict(rel.pass_down(rmap, R.Cut()))
    seen = set()
    for x, y in itertools.product(range(2, 9), range(1, 14)):
        down: dict = {i: E.const(x), j: E.const(y)}
        rel.index_down(rmap, down)
        got = tuple(evaluate(down[v]) for v in (i, j))
        for v, g in zip((i, j), got):
            if v not in rel.inputs:
                continue
            lo, ext = evaluate(box[v].min), evaluate(box[v].extent)
            assert lo <= g < lo + ext, (rel.text(), v.name, g)
        seen.add(got)
        times: dict = {i: (E.const(x),), j: (E.const(y),)}
        rel.time_down(rmap, times)
        assert tuple(evaluate(times[v][0]) for v in (i, j)) == got
        up: dict = {i: E.const(got[0]), j: E.const(got[1])}
        rel.index_up(rmap, up)
        assert (evaluate(up[i]), evaluate(up[j])) == (x, y)
    assert len(seen) == 7 * 13


def test_a_loop_map_replays_onto_other_loops_and_keeps_its_text():
    i, j, p, q = (E.IterVar(E.Range(0, 5), E.Var(n, "int32"), E.IterVar.DATA_PAR) for n in "ijpq")
    for rel in _loop_maps(i, j):
        again = rel.replay({i: p, j: q})
        assert type(again) is type(rel) and again.matrix == rel.matrix and again.places == rel.places
        assert set(again.inputs) <= {p, q} and again.text().split("(")[0] == rel.text().split("(")[0]
    assert R.Skew(i, j, 2, 1, -1, 0).text() == "skew(i, j, 2, 1)"  # the completion is not repeated
    assert R.Skew(i, j, 2, 1, 1, 1).text() == "skew(i, j, 2, 1, 1, 1)"
