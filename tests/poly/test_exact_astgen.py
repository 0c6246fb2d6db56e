"""isl's AST read back as tessel loops: the loops visit exactly the points of the set.

Each set is scanned by isl, turned into tessel IR by ``tessel.poly.astgen``, and that IR is
run by a small interpreter (tessel's own expression evaluator for every bound and condition);
the points it visits must be the set's points, each once, in the schedule's order.
"""

from __future__ import annotations

import islpy as isl
import pytest

from tessel.errors import InternalError
from tessel.ir import expr as E
from tessel.ir import stmt as S
from tessel.ir.evaluate import evaluate
from tessel.poly.astgen import AstReader, condition, scan


def _point(name, args):
    """A leaf of the test: a store whose indices are its statement's dimensions."""
    return S.ProducerStore(name, E.const(0), args)


def _run(stmt, env, out):
    if isinstance(stmt, S.ProducerStore):
        out.append((stmt.producer, *[evaluate(a, env) for a in stmt.indices]))
    elif isinstance(stmt, S.SeqStmt):
        for s in stmt.seq:
            _run(s, env, out)
    elif isinstance(stmt, S.For):
        assert stmt.kind == "serial" and isinstance(stmt.loop_var, E.Var)
        lo, ext = evaluate(stmt.min, env), evaluate(stmt.extent, env)
        for k in range(lo, lo + ext):
            _run(stmt.body, {**env, stmt.loop_var: k}, out)
    elif isinstance(stmt, S.IfThenElse):
        if evaluate(stmt.condition, env):
            _run(stmt.then_case, env, out)
        elif stmt.else_case is not None:
            _run(stmt.else_case, env, out)
    else:
        raise AssertionError(f"unexpected statement {type(stmt).__name__}")


def _points(umap: isl.UnionMap, params: dict[str, int]) -> list[tuple]:
    """isl's own enumeration of the schedule's domain for the given parameter values."""
    text = " and ".join(f"{k} = {v}" for k, v in params.items()) or "true"
    fixed = umap.intersect_params(isl.Set(f"[{', '.join(params)}] -> {{ : {text} }}"))
    pts: list[tuple] = []

    def each(m):
        dom = m.domain()
        name, n = dom.get_tuple_name(), dom.dim(isl.dim_type.set)
        dom.foreach_point(lambda p: pts.append((name, *[p.get_coordinate_val(isl.dim_type.set, k).to_python()
                                                        for k in range(n)])))

    fixed.foreach_map(each)
    return pts


CASES = [
    ("{ S[i, j] -> [i, j] : 0 <= i < 7 and 0 <= j <= i }", {}),  # a triangle
    ("[n] -> { S[i, j] -> [i, j] : 0 <= i < n and 0 <= j < 20 and "
     "((i < 2 and j < 2) or (2 <= i < 4 and 2 <= j < 4)) }", {"n": 3}),  # disjoint pieces
    ("{ S[i] -> [i] : 0 <= i < 23 and i mod 3 = 1 }", {}),  # a stride
    ("[n] -> { S[o, i] -> [o, i] : 0 <= o and 0 <= i < 16 and 16o + i < n }", {"n": 37}),  # a split's tail
    ("[n] -> { S[i, j] -> [i, j] : 0 <= i < n and i <= 2j <= i + 5 and j < 9 }", {"n": 11}),  # floor bounds
    ("{ S[i] -> [i] : 0 <= i < 5; T[i] -> [i] : 3 <= i < 8 }", {}),  # two statements
]


@pytest.mark.parametrize("text,params", CASES)
def test_the_loops_visit_every_point_once_in_order(text, params):
    umap = isl.UnionMap(text)
    names = {k: E.Var(k, "int32") for k in params}
    reader = AstReader(names, _point)
    dims = isl.Set.from_union_set(umap.range()).dim(isl.dim_type.set)
    stmt = scan(umap, isl.Set(f"[{', '.join(params)}] -> {{ : }}"), [f"c{k}" for k in range(dims)], reader)
    got: list[tuple] = []
    _run(stmt, {names[k]: v for k, v in params.items()}, got)
    assert sorted(got) == sorted(_points(umap, params))  # every point, once
    order = [p[1:] for p in got]
    assert order == sorted(order)  # in the schedule's order (the identity here)


def test_a_condition_holds_exactly_on_the_set():
    i, n = E.Var("i", "int32"), E.Var("n", "int32")
    s = isl.Set("[i, n] -> { : 0 <= i < n and i mod 4 != 3 and i < 2n - 9 }")
    reader = AstReader({"i": i, "n": n}, lambda *_: S.Evaluate(0))
    cond = condition(s, isl.Set("[i, n] -> { : }"), reader)
    for nv in range(0, 14):
        for iv in range(-2, 16):
            want = 0 <= iv < nv and iv % 4 != 3 and iv < 2 * nv - 9
            assert bool(evaluate(cond, {i: iv, n: nv})) == want, (iv, nv)


def test_a_loop_annotated_by_the_caller_keeps_its_kind():
    umap = isl.UnionMap("{ S[i] -> [i] : 0 <= i < 10 }")
    v = E.Var("x", "int32")

    def loop(_it, counter, extent, body):
        return S.For(counter, E.const(0), extent, "parallel", body)

    stmt = scan(umap, isl.Set("{ : }"), ["c0"], AstReader({}, lambda *_: S.Evaluate(0), loop, {"c0": v}))
    assert isinstance(stmt, S.For) and stmt.kind == "parallel" and stmt.loop_var.name == "x"
    assert stmt.loop_var is not v  # a fresh variable per loop, named like the caller's


def test_a_name_isl_invents_without_a_tessel_meaning_is_refused():
    umap = isl.UnionMap("[m] -> { S[i] -> [i] : 0 <= i < m }")
    with pytest.raises(InternalError, match="stands for nothing"):
        scan(umap, isl.Set("[m] -> { : }"), ["c0"], AstReader({}, lambda *_: S.Evaluate(0)))
