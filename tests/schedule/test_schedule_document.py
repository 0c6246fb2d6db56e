"""A schedule in an IR document: its computation and its steps, loaded as a schedule that
computes the same values with the same loops; what is not IR is refused naming the step."""

from __future__ import annotations

import json

import pytest
from helpers import check, rand

import tessel
from tessel import te
from tessel.errors import DefinitionError
from tessel.ir import load_json, save_json


def _scheduled():
    A = te.placeholder((13, 9), name="A")
    B = te.compute((13, 9), lambda i, j: A[i, j] * 2.0, name="B")
    k = te.reduce_axis((0, 9), name="k")
    C = te.compute((13,), lambda i: te.sum(B[i, k] + 1.0, axis=k), name="C")
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=4)
    s[B].compute_at(s[C], xo)
    s[B].set_scope("local")
    ko, ki = s[C].split(k, nparts=2)
    s[C].reorder(xo, ko, xi, ki)
    s[C].unroll(ki)
    return s, A, C


def test_a_loaded_schedule_has_the_same_loops_and_values():
    s, A, C = _scheduled()
    s2 = load_json(save_json(s))
    assert s2 is not s and len(s2.history) == len(s.history)
    A2, C2 = s2.outputs[0].input_tensors()[0].op.input_tensors()[0], s2.outputs[0].output(0)
    assert A2.name == "A" and A2 is not A
    text = str(tessel.lower(s, [A, C], simple_mode=True))
    assert str(tessel.lower(s2, [A2, C2], simple_mode=True)) == text
    a = rand(13, 9, seed=1)
    check(s2, [A2, C2], [a], [(2 * a + 1).sum(axis=1)], rtol=1e-4)


def test_what_is_not_ir_is_refused_and_a_forged_primitive_too():
    x = te.placeholder((4,), name="x")
    z = te.compute((4,), lambda i: x[i] * 3.0, name="z")
    intrin = te.decl_tensor_intrin(z.op, lambda ins, outs: te.call_packed("f", ins[0], outs[0]))
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] * 3.0, name="B")
    s = te.create_schedule(B.op)
    _, xi = s[B].split(B.op.axis[0], factor=4)
    s[B].tensorize(xi, intrin)
    with pytest.raises(DefinitionError, match="TensorIntrin"):
        save_json(s)
    s, _, _ = _scheduled()
    doc = json.loads(save_json(s))
    for node in doc["nodes"]:
        if node["type"] == "te.Schedule":
            node["fields"][1][0][0] = "__class__"
    with pytest.raises(DefinitionError, match="not a primitive"):
        load_json(json.dumps(doc))
