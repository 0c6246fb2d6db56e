"""Register-tile operands in C (tessel/codegen/c_operands.py): a vector load that several
accumulator updates of an unrolled tile share is written once, into a variable pinned to a
vector register, and the kernel still computes NumPy's values on both targets. The checks read
the generated source, so nothing here depends on the machine's vector unit.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from helpers import TARGETS, check, rand

import tessel
from tessel.codegen.c_operands import keep_macro
from tessel.target import Target

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # examples/ lives at the root

from examples import fast_conv2d, fast_matmul

AVX2 = Target("c", vector_bytes=32, vector_registers=16, fma_units=2, caches=(32 << 10, 512 << 10, 8 << 20))


def _tile_lines(src: str, operand: str) -> list[str]:
    """Lines loading ``operand`` into a tile kept in variables (a tile in memory, as a partial
    copy's may be, is stored through ``tsl_st_`` and left alone: its loads cannot move past those
    stores)."""
    return [ln.strip() for ln in src.splitlines() if f"tsl_ld_f32x8({operand} +" in ln and "tsl_st_" not in ln]


def test_shared_loads_of_a_conv_tile_are_read_once_and_pinned():
    s, args = fast_conv2d.conv2d(1, 6, 8, 4, 24, AVX2, kernel=1)  # 4 channels x 2 rows x 8 pixels
    src = tessel.build(s, args, target=AVX2).source
    lines = _tile_lines(src, "X")
    assert lines and all(ln.startswith("tsl_f32x8 operand") for ln in lines), lines
    assert src.count("tsl_keep_f32x8(operand") == len(lines)
    assert "#define tsl_keep_f32x8(v)" in src
    x, w = rand(1, 6, 4, 24), rand(8, 6, 1, 1, seed=1)
    check(s, args, [x, w], [fast_conv2d.reference(x, w)], targets=[AVX2.with_(kind=k) for k in TARGETS],
          rtol=1e-4, atol=1e-4)


def test_matmul_tile_reads_each_panel_vector_once_per_step():
    s, args = fast_matmul.matmul(45, AVX2)
    src = tessel.build(s, args, target=AVX2).source
    lines = _tile_lines(src, "Bp")
    assert lines and all(ln.startswith("tsl_f32x8 operand") for ln in lines), lines
    a, b = rand(45, 45), rand(45, 45, seed=2)
    c = np.empty((45, 45), "float32")
    tessel.build(s, args, target=AVX2)(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


def test_loads_used_once_are_left_inline():
    s, args = fast_conv2d.depthwise(1, 3, 5, 16, AVX2)  # one channel per tile: each load feeds one update
    src = tessel.build(s, args, target=AVX2).source
    assert "operand" not in src


def test_the_pin_exists_only_where_a_register_holds_the_vector():
    assert '"+x"' in keep_macro("k", 32) and "__AVX__" in keep_macro("k", 32)
    assert '"+v"' in keep_macro("k", 64) and "__AVX512F__" in keep_macro("k", 64)
    m16 = keep_macro("k", 16)
    assert '"+x"' in m16 and '"+w"' in m16 and "__aarch64__" in m16
    assert keep_macro("k", 8) == "#define k(v) ((void)0)"
    for m in (keep_macro("k", 16), keep_macro("k", 32), keep_macro("k", 64)):
        assert m.count("#if") == 1 and m.endswith("#endif") and "#define k(v) ((void)0)" in m
