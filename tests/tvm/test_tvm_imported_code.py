"""A micro-kernel brought along by a pragma (``import_c``, and ``import_llvm`` with IR from
``tvm.contrib.clang.create_llvm``): its functions are compiled, registered, and called by the
tensorized stage, checked against NumPy; bad code is refused saying so."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from helpers import rand

import tessel
from tessel.errors import BuildError, ScheduleError
from tessel.tvm import te

SRC = """
int tsl_row_scale(float *out, const float *in, int n, float k) {
  for (int i = 0; i < n; ++i) out[i] = in[i] * k;
  return 0;
}
"""


@pytest.fixture(autouse=True)
def _forget_imported():
    yield
    if "tsl_row_scale" in tessel.runtime.extern.list_global_func_names():
        tessel.remove_global_func("tsl_row_scale")


def _scaled(rows: int, cols: int, tile: int):
    x = te.placeholder((tile,), name="x")
    y = te.compute((tile,), lambda i: x[i] * 3.0, name="y")
    intrin = te.decl_tensor_intrin(
        y.op, lambda ins, outs: te.call_extern("int32", "tsl_row_scale", outs[0].access_ptr("w"),
                                               ins[0].access_ptr("r"), tile, 3.0),
        default_buffer_params={"offset_factor": 1})
    A = te.placeholder((rows, cols), name="A")
    B = te.compute((rows, cols), lambda i, j: A[i, j] * 3.0, name="B")
    s = te.create_schedule(B.op)
    jo, ji = s[B].split(B.op.axis[1], factor=tile)
    s[B].tensorize(ji, intrin)
    return s, A, B


@pytest.mark.parametrize("key", ["import_c", "import_llvm"])
def test_the_stage_calls_the_imported_micro_kernel(key):
    if key == "import_llvm" and shutil.which("clang++") is None:
        pytest.skip("clang++ is not on PATH: LLVM IR cannot be made here")
    code = SRC if key == "import_c" else tessel.tvm.contrib.clang.create_llvm('extern "C" ' + SRC.strip())
    assert key == "import_c" or "define" in code
    s, A, B = _scaled(5, 24, 8)
    s[B].pragma(B.op.axis[0], key, code)
    assert tessel.get_global_func("tsl_row_scale") is not None
    f = tessel.build(s, [A, B])
    a = rand(5, 24, seed=3)
    b = np.full((5, 24), np.nan, "float32")
    f(a, b)
    np.testing.assert_allclose(b, a * 3.0, rtol=1e-6)
    assert "tsl_row_scale" in str(tessel.lower(s, [A, B], simple_mode=True))


def test_code_that_does_not_compile_or_is_not_text_is_refused():
    s, A, B = _scaled(2, 8, 8)
    with pytest.raises(BuildError, match="does not compile"):
        s[B].pragma(B.op.axis[0], "import_c", "int broken( {")
    with pytest.raises(ScheduleError, match="C or LLVM IR text"):
        s[B].pragma(B.op.axis[0], "import_c", 42)
    with pytest.raises(BuildError, match="options are not taken"):
        tessel.tvm.contrib.clang.create_llvm("int f() { return 0; }", options=["-O3"])
