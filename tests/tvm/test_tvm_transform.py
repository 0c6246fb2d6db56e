"""A user's lowering pass (``tvm.tir.transform.prim_func_pass`` added with ``PassContext``'s
``tir.add_lower_pass``) runs as one more named step of tessel's pipeline, on its IR."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import rand

import tessel.tvm as tvm
from tessel import pipeline
from tessel.driver import lower_steps
from tessel.errors import ArgumentError
from tessel.tvm import te


def _add(n=128):
    a = te.placeholder((n,), name="a")
    b = te.placeholder((n,), name="b")
    c = te.compute((n,), lambda i: a[i] + b[i], name="c")
    return te.create_schedule(c.op), [a, b, c]


def _split_by_8():
    """Split each loop whose extent is a multiple of 8, the inner part vectorized (the
    low-level pass tutorial's pass, in tessel's words)."""

    def rewrite(op):
        if isinstance(op.extent, tvm.tir.IntImm) and op.extent.value % 8 == 0 and op.kind == "serial":
            lo, li = te.var(op.loop_var.name + ".o"), te.var(op.loop_var.name + ".i")
            body = tvm.tir.stmt_functor.substitute(op.body, {op.loop_var: lo * 8 + li})
            body = tvm.tir.For(li, 0, 8, tvm.tir.ForKind.VECTORIZED, body)
            return tvm.tir.For(lo, 0, op.extent.value // 8, tvm.tir.ForKind.SERIAL, body)
        return None

    @tvm.tir.transform.prim_func_pass(opt_level=0)
    def split8(f, mod, ctx):
        return f.with_body(tvm.tir.stmt_functor.ir_transform(f.body, None, rewrite, ["tir.For"]))

    return split8


@pytest.mark.parametrize("phase", [1, 3])
def test_a_user_pass_rewrites_the_loops_and_the_kernel_computes_with_them(phase):
    s, args = _add()
    plain = str(tvm.lower(s, args))
    with tvm.transform.PassContext(config={"tir.add_lower_pass": [(phase, _split_by_8())]}):
        text = str(tvm.lower(s, args))
        _, steps = lower_steps(s, args)
        f = tvm.build(s, args, "llvm")
    assert text != plain and "i.o" in text
    # phase 1 runs before the vectorize pass, which makes the inner loop vector code; a later
    # phase runs after it, and the loop stays a vectorized loop (the C compiler's)
    assert ("ramp(" in text) == (phase == 1)
    assert "user:split8" in [st.name for st in steps]
    a, b = rand(128), rand(128, seed=1)
    c = tvm.nd.array(np.full(128, np.nan, "float32"))
    f(tvm.nd.array(a), tvm.nd.array(b), c)
    np.testing.assert_allclose(c.numpy(), a + b, rtol=1e-6)
    assert pipeline.standard() and str(tvm.lower(s, args)) == plain  # the block's passes are gone after it


def test_a_pass_called_on_a_module_rewrites_its_functions():
    s, args = _add(64)
    mod = _split_by_8()(tvm.lower(s, args))
    assert "ramp(" not in str(mod) and "i.i" in str(mod)  # rewritten, the vectorize pass not run on it


def test_add_lower_pass_takes_phase_and_pass_pairs():
    with pytest.raises(ArgumentError, match="phase, pass"):
        tvm.transform.PassContext(config={"tir.add_lower_pass": [_split_by_8()]})
    with pytest.raises(ArgumentError, match="prim_func_pass"):
        with tvm.transform.PassContext(config={"tir.add_lower_pass": [(1, lambda f: f)]}):
            pass
    assert pipeline.standard()
