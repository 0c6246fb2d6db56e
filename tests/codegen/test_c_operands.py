"""Register-tile operands in C (tessel/codegen/c_operands.py): a vector load that several
accumulator updates of an unrolled tile share is written once, into a variable pinned to a
vector register, and the kernel still computes NumPy's values on both targets. The checks read
the generated source, so nothing here depends on the machine's vector unit.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
from helpers import TARGETS, check, rand

import tessel
from tessel import te
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
    lines = _tile_lines(src, "X_local")  # the tile reads its thread's band of X, copied first
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


def _guarded_tile(guard):
    """A 4-row tile kept in variables whose rows share ``A``'s vector, read only where
    ``guard(k)`` holds: at ``k = 0`` its address is 16 floats before ``A``."""
    m, n, kk = 4, 16, 5
    A = te.placeholder((kk, n), name="A")
    B = te.placeholder((m, kk), name="B")
    k = te.reduce_axis((0, kk), name="k")
    C = te.compute((m, n), lambda i, j: te.sum(te.if_then_else(guard(B, k), A[k - 1, j], 0.0) * B[i, k], axis=k),
                   name="C")
    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "local")
    jo, ji = s[C].split(C.op.axis[1], factor=8)
    s[C].reorder(jo, C.op.axis[0], ji)
    s[C].vectorize(ji)
    s[C].unroll(C.op.axis[0])
    s[CC].compute_at(s[C], jo)
    ic, jc = s[CC].op.axis
    s[CC].reorder(s[CC].op.reduce_axis[0], ic, jc)
    s[CC].unroll(ic)
    s[CC].vectorize(jc)
    return s, [A, B, C]


def test_a_guarded_load_is_not_read_before_its_guard():
    # k * k >= 1, not k >= 1: a test singling out the loop's first iteration is peeled off it
    # (passes/peel.py), and the guard is gone
    s, args = _guarded_tile(lambda B, k: k * k >= 1)
    src = tessel.build(s, args, target=AVX2).source
    lines = _tile_lines(src, "A")
    assert len(lines) == 4 and all("k * k >= 1 ? tsl_ld_f32x8(A +" in ln for ln in lines), lines
    assert "operand" not in src
    a, b = rand(5, 16), rand(4, 5, seed=1)
    shifted = np.vstack([np.zeros((1, 16), "float32"), a[:-1]])
    check(s, args, [a, b], [b @ shifted], targets=[AVX2.with_(kind=k) for k in TARGETS], rtol=1e-4, atol=1e-4)


_GUARD_PAGE = """
import ctypes, mmap, sys
import numpy as np
sys.path[:0] = {paths!r}
import tessel
from test_c_operands import AVX2, _guarded_tile
s, args = _guarded_tile(lambda B, k: B[0, k] > 100.0)  # never true, and no compiler can know it
f = tessel.build(s, args, target=AVX2)
page = mmap.PAGESIZE
mem = mmap.mmap(-1, 2 * page, prot=mmap.PROT_READ | mmap.PROT_WRITE)
start = ctypes.addressof(ctypes.c_char.from_buffer(mem))
assert ctypes.CDLL(None).mprotect(ctypes.c_void_p(start), page, 0) == 0  # the page before A: no access
a = np.frombuffer(mem, "float32", 80, offset=page).reshape(5, 16)
a[:] = 1.5
c = np.full((4, 16), np.nan, "float32")
f(a, np.ones((4, 5), "float32"), c)
assert (c == 0).all(), c
"""


def test_a_guarded_load_before_its_tensor_is_never_read():
    """The same tile with a data-dependent guard, ``A`` just after a page no one may read: a
    read hoisted out of the ``?:`` faults (it did: SIGSEGV)."""
    here = Path(__file__).resolve()
    paths = [str(here.parents[2]), str(here.parent), str(here.parents[1])]
    code = _GUARD_PAGE.format(paths=paths)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])


def test_only_loads_every_evaluation_reads_may_move_earlier():
    """A load under a ``Let`` (its variable is declared only inside), right of a scalar ``&&``
    or on a side of a scalar ``?:`` is not read unless its statement gets there."""
    from tessel.codegen.c_operands import _always_read
    from tessel.ir import expr as E
    from tessel.ir import stmt as S

    a = S.Buffer("A", "float32", (64,))
    i, t = E.Var("i", "int32"), E.Var("t", "int32")

    def load(base: E.PrimExpr) -> E.BufferLoad:
        return E.BufferLoad(a, [E.Ramp(base, E.const(1, "int32"), 8)])

    plain, in_let, in_branch = load(i), load(t), load(i + 8)
    cond = E.lt(i, E.const(4, "int32"))
    value = E.add(E.add(plain, E.Let(t, i + 16, in_let)), E.Select(cond, in_branch, plain))
    got = [n for n in _always_read(value) if isinstance(n, E.BufferLoad)]
    assert any(n is plain for n in got)
    assert not any(n is in_let or n is in_branch for n in got)
    right = E.And(cond, E.lt(E.BufferLoad(a, [i]), E.const(0.0, "float32")))
    assert not any(isinstance(n, E.BufferLoad) for n in _always_read(right))


def test_c_source_is_the_built_source_with_the_checking_walks_facts_handed_on():
    """``c_source`` (what ``Kernel.source`` shows) and the build's generator give the same C:
    the facts of the one checking walk stand in for the generator's own."""
    from tessel.codegen.c import c_source, generate_c

    for s, args in (fast_conv2d.conv2d(1, 6, 8, 4, 24, AVX2, kernel=1), fast_matmul.matmul(45, AVX2),
                    fast_conv2d.depthwise(1, 5, 11, 40, AVX2)):
        f = tessel.lower(s, args, target=AVX2)
        assert c_source(f) == generate_c(f, AVX2).source
