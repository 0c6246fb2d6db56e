"""Issue 30, item 7: the cuda target guards names that collide with header macros (``M_E``,
``EOF``, ``INT32_MAX``) as the C target does: each identifier made from a user's name is
``#undef``'d after the headers, so nvcc compiles the kernel; the simulator computes NumPy's
values from the same program."""

from __future__ import annotations

import numpy as np
from cuda_helpers import elementwise, need_nvcc, source

import tessel


def _program(a_name: str, b_name: str):
    return elementwise(13, lambda A, i: A[i] * 2.0 + 1.0, 4, name=b_name, a_name=a_name)


def test_macro_names_are_undefined_after_the_headers():
    s, args = _program("M_E", "INT32_MAX")
    text = source(s, args)
    head, _ = text.split("extern \"C\"", 1)
    assert "#undef M_E" in head and "#undef INT32_MAX" in head
    assert head.index("#include <math.h>") < head.index("#undef M_E")


def test_nvcc_compiles_a_kernel_whose_names_are_header_macros():
    need_nvcc()
    for a_name, b_name in (("M_E", "EOF"), ("EOF", "INT32_MAX")):
        s, args = _program(a_name, b_name)
        mod = tessel.build(s, args, target="cuda")
        assert mod.symbols


def test_the_simulator_computes_with_such_names():
    s, args = _program("M_E", "EOF")
    f = tessel.build(s, args, target="cuda-sim")
    a = np.random.default_rng(2).uniform(-2, 2, 13).astype("float32")
    b = np.full(13, np.nan, "float32")
    f(a, b)
    np.testing.assert_allclose(b, a * 2 + 1, rtol=1e-6)
