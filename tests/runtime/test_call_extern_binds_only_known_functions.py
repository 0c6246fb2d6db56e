"""Issue 30, item 6: ``call_extern`` of an unregistered name binds only C math functions
(``LIBM_FUNCTIONS``); any other name (``abort``, ``exit``, ``free``) is refused at build time with
the registered names listed, instead of ending or corrupting the process mid-call. Probed in
a subprocess: on a tessel that bound it, the call itself ends the process."""

from __future__ import annotations

import numpy as np
import pytest
from faults_util import probe
from helpers import TARGETS, rand

import tessel
from tessel import te

_CALL = """
import numpy as np, tessel
from tessel import te
tessel.register_func("my_registered_fn", lambda x: x, override=True)
A = te.placeholder((13,), name="A")
B = te.compute((13,), lambda i: te.call_extern("float32", {name!r}, A[i]), name="B")
try:
    f = tessel.build(te.create_schedule(B.op), [A, B], target={target!r})
    f(np.ones(13, "float32"), np.zeros(13, "float32"))
    print("called")
except tessel.BuildError as e:
    print("refused", "'my_registered_fn'" in str(e) and {name!r} in str(e))
"""


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", ["abort", "exit", "free", "raise"])
def test_an_unregistered_c_library_function_is_refused_at_build_time(tmp_path, target, name):
    out = probe(_CALL.format(name=name, target=target), tmp_path / "cache", timeout=300)
    assert out.split() == ["refused", "True"]


@pytest.mark.parametrize("target", TARGETS)
def test_math_functions_still_bind_without_registration(target):
    A = te.placeholder((13,), name="A")
    B = te.compute((13,), lambda i: te.call_extern("float32", "expf", A[i])
                   + te.call_pure_extern("float64", "hypot", A[i].astype("float64"), te.const(2.0, "float64")).astype("float32"), name="B")
    f = tessel.build(te.create_schedule(B.op), [A, B], target=target)
    a = rand(13, seed=11)
    b = np.full(13, np.nan, "float32")
    f(a, b)
    np.testing.assert_allclose(b, np.exp(a) + np.hypot(a.astype("float64"), 2.0), rtol=1e-5)


@pytest.mark.parametrize("target", TARGETS)
def test_a_math_function_given_other_dtypes_is_refused_not_miscalled(target):
    A = te.placeholder((13,), name="A")
    B = te.compute((13,), lambda i: te.call_pure_extern("float64", "hypot", A[i].astype("float64"), 2.0)
                   .astype("float32"), name="B")  # 2.0 is a float32 constant: hypot would read wrong bits
    with pytest.raises(tessel.BuildError, match=r"hypot returns float64 and takes \(float64, float64\)"):
        tessel.build(te.create_schedule(B.op), [A, B], target=target)
