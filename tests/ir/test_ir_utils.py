"""TVM's IR utilities that TE users call: save_json/load_json round trips, and the stmt functor
walks (post_order_visit, ir_transform, substitute) over tessel's one visitor."""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers import TARGETS, rand

import tessel
from tessel import te
from tessel.errors import DefinitionError
from tessel.ir import expr as E
from tessel.ir import stmt as S
from tessel.ir.functor import collect, ir_transform, post_order_visit, substitute
from tessel.ir.serialize import load_json, save_json


def _kernel():
    n = te.var("n")
    A = te.placeholder((n, 8), name="A")
    k = te.reduce_axis((0, 8), name="k")
    B = te.compute((n,), lambda i: te.sum(te.exp(A[i, k]) * 0.5, axis=k), name="B")
    s = te.create_schedule(B.op)
    s[B].split(B.op.axis[0], factor=4)
    return s, A, B


def test_expression_round_trip_keeps_text_and_sharing():
    x, y = te.var("x"), te.var("y")
    e = te.select(x < y, x * 3 + y, te.max(x, y) // 2)
    back = load_json(save_json(e))
    assert str(back) == str(e)
    assert back is not e
    vars_ = {id(v) for v in collect(back, lambda n: isinstance(n, E.Var) and n.name == "x")}
    assert len(vars_) == 1  # every use of x is the one loaded variable
    assert save_json(back) == save_json(e)


def test_special_floats_dtypes_and_big_integers_survive():
    e = te.const(float("inf"), "float64") + te.const(1.5, "float64")
    assert str(load_json(save_json(e))) == str(e)
    big = te.const(2 ** 62, "int64")
    loaded = load_json(save_json(big))
    assert loaded.value == 2 ** 62 and loaded.dtype == "int64"
    nan = load_json(save_json(te.const(float("nan"), "float32")))
    assert np.isnan(nan.value) and nan.dtype == "float32"


def test_statement_and_function_round_trip():
    s, A, B = _kernel()
    stmt = tessel.lower(s, [A, B], simple_mode=True)
    assert str(load_json(save_json(stmt))) == str(stmt)
    func = tessel.lower(s, [A, B])
    assert str(load_json(save_json(func))) == str(func)


def test_a_loaded_compute_builds_and_runs():
    """A te compute saved and loaded is a program again: schedule it, build it, run it."""
    _, A, B = _kernel()
    B2 = load_json(save_json(B))
    A2 = B2.op.input_tensors()[0]
    assert A2.name == "A" and A2 is not A
    s = te.create_schedule(B2.op)
    a = rand(5, 8)
    for target in TARGETS:
        f = tessel.build(s, [A2, B2], target=target)
        out = np.zeros(5, "float32")
        f(a, out)
        np.testing.assert_allclose(out, (np.exp(a) * 0.5).sum(axis=1), rtol=1e-5)


@pytest.mark.parametrize("doc", [
    "not json",
    json.dumps({"format": "other", "version": 1, "root": None, "nodes": []}),
    json.dumps({"format": "tessel-ir", "version": 99, "root": None, "nodes": []}),
    json.dumps({"format": "tessel-ir", "version": 1, "root": {"ref": 0},
                "nodes": [{"type": "os.system", "fields": ["echo hi"]}]}),
    json.dumps({"format": "tessel-ir", "version": 1, "root": {"ref": 0},
                "nodes": [{"type": "__import__", "fields": ["os"]}]}),
    json.dumps({"format": "tessel-ir", "version": 1, "root": {"ref": 3}, "nodes": []}),
    json.dumps({"format": "tessel-ir", "version": 1, "root": {"ref": 0},
                "nodes": [{"type": "Add", "fields": [1]}]}),
    json.dumps({"format": "tessel-ir", "version": 1, "root": {"ref": 2}, "nodes": [
        {"type": "Var", "fields": ["a", {"dtype": "int32"}]}, {"type": "Var", "fields": ["b", {"dtype": "float32"}]},
        {"type": "Add", "fields": [{"ref": 0}, {"ref": 1}]}]}),
    json.dumps({"format": "tessel-ir", "version": 1, "root": {"ref": 0},
                "nodes": [{"type": "BinaryOp", "fields": [1, 2]}]}),
])
def test_bad_documents_are_refused_without_running_anything(doc):
    with pytest.raises(DefinitionError, match="load_json"):
        load_json(doc)


def test_save_json_refuses_what_is_not_ir():
    with pytest.raises(DefinitionError, match="save_json"):
        save_json(object())


def test_post_order_visit_children_first_and_unique():
    x = te.var("x")
    e = x * x + 1
    seen: list = []
    post_order_visit(e, seen.append)
    assert seen[-1] is e
    assert sum(1 for n in seen if n is x) == 2  # as a recursive walk reaches it
    once: list = []
    post_order_visit(e, once.append, unique=True)
    assert sum(1 for n in once if n is x) == 1  # TVM's post_order_visit: each node once
    assert once.index(x) < once.index(e)


def test_ir_transform_rewrites_loops_and_keeps_the_rest():
    s, A, B = _kernel()
    stmt = tessel.lower(s, [A, B], simple_mode=True)
    loops = collect(stmt, lambda n: isinstance(n, S.For))
    visited: list = []

    def post(node):
        visited.append(type(node).__name__)
        if node.kind == "serial":
            return S.For(node.loop_var, node.min, node.extent, "unrolled", node.body, node.thread_tag)
        return None

    out = ir_transform(stmt, None, post, only_enable=["tir.For"])
    assert set(visited) == {"For"} and len(visited) == len(loops)
    assert all(f.kind == "unrolled" for f in collect(out, lambda n: isinstance(n, S.For)))
    assert ir_transform(stmt, None, lambda n: None) is stmt  # nothing replaced: the same object


def test_ir_transform_preorder_replacement_stops_descent():
    x, y = te.var("x"), te.var("y")
    e = (x + y) * (x - y)
    calls: list = []

    def pre(node):
        calls.append(node)
        return te.const(7) if isinstance(node, E.Add) else None

    out = ir_transform(e, pre, None)
    assert str(out) == str(7 * (x - y))
    assert not any(c is y for c in calls[:2])  # the children of the replaced Add are not visited


def test_substitute_replaces_variables_in_statements():
    s, A, B = _kernel()
    stmt = tessel.lower(s, [A, B], simple_mode=True)
    n = next(v for v in collect(stmt, lambda v: isinstance(v, E.Var)) if v.name == "n")
    out = substitute(stmt, {n: te.const(12)})
    assert not any(v is n for v in collect(out, lambda v: isinstance(v, E.Var)))
    assert "12" in str(out)
