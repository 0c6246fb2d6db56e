"""Issue 15, difference 7: tessel's errors are caught where TVM's would be.

TVM raises ``tvm.error.TVMError`` (a ``RuntimeError``); tessel may refuse earlier (at the
primitive, where TVM refuses at ``lower``: ``s[C].compute_at(s[C], ...)``), but code written
for TVM catches it with the same ``except``.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import tessel
from tessel import te


def _chain():
    A = te.placeholder((8, 8), name="A")
    B = te.compute((8, 8), lambda i, j: A[i, j] + 1, name="B")
    C = te.compute((8, 8), lambda i, j: B[i, j] * 2, name="C")
    return A, B, C


def test_the_error_namespace_has_tvms_base_class():
    err = importlib.import_module("tessel.error")
    assert err is tessel.error and tessel.error.TVMError is tessel.TesselError is tessel.TVMError
    assert issubclass(tessel.TesselError, RuntimeError)
    from tessel.error import TVMError

    assert TVMError is tessel.TesselError


def test_compute_at_itself_is_refused_early_and_caught_as_tvm_errors():
    A, B, C = _chain()
    s = te.create_schedule(C.op)
    for catch in (tessel.error.TVMError, RuntimeError, tessel.ScheduleError):
        with pytest.raises(catch, match="cannot compute_at itself"):
            s[C].compute_at(s[C], C.op.axis[0])


def _refusals():
    """One refusal of each kind a user can cause."""
    A, B, C = _chain()
    s = te.create_schedule(C.op)

    def schedule():
        s[C].fuse(C.op.axis[0], B.op.axis[1])

    def definition():
        te.compute((8,), lambda i: A[i, i, i], name="D")

    def lowering():
        tessel.lower(s, [A, 3])

    def call():
        tessel.build(s, [A, C], target="python")(np.zeros((8, 8), "float32"), np.zeros((7, 8), "float32"))

    return {"schedule": schedule, "definition": definition, "lower": lowering, "call": call}


@pytest.mark.parametrize("kind", ["schedule", "definition", "lower", "call"])
def test_every_kind_of_refusal_is_a_tvm_error_and_a_runtime_error(kind):
    fn = _refusals()[kind]
    for catch in (tessel.error.TVMError, RuntimeError, tessel.TesselError):
        with pytest.raises(catch):
            fn()


def test_the_python_bases_a_caller_expects_are_kept():
    fns = _refusals()
    with pytest.raises(TypeError):  # a malformed expression
        fns["definition"]()
    with pytest.raises(ValueError):  # a bad array
        fns["call"]()


def test_tvm_style_handler_sees_the_message():
    A, B, C = _chain()
    s = te.create_schedule(C.op)
    try:
        s[B].compute_at(s[C], B.op.axis[0])
    except tessel.error.TVMError as e:  # as a TVM script would write it
        msg = str(e)
    else:  # pragma: no cover - the call must fail
        pytest.fail("compute_at at another stage's axis was accepted")
    assert "compute_at target i is not a loop of stage C" in msg
