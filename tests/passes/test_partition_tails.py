"""Loop partitioning of the last, partial tile of a split whose tiles are themselves tiled.

A matmul's column group of four 16-column panels at n = 1000 leaves 40 columns for the last
group: two full panels, one of 8 columns and an empty one. The partitioned nest must run the
full panels as the main body does (constant extents, no guard), the partial one with constant
extents, and not the empty one; never a loop whose extent is a ``min``/``max`` of an outer
loop's variable inside the unrolled tile. The lowering is inspected for a fixed target (the
tile and group come from it, not from this machine); the values are NumPy's on both targets.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import check, rand

import tessel
from tessel import te
from tessel.driver import lower_steps
from tessel.ir import expr as E
from tessel.ir import stmt as S
from tessel.ir.functor import collect, free_vars
from tessel.target import Target
from tessel.target.tiles import RegisterTile

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # examples/ and benchmarks/ live at the root

from benchmarks import definitions
from examples import fast_conv2d, fast_matmul

KIB, MIB = 1 << 10, 1 << 20
AVX2 = Target(vector_bytes=32, vector_registers=16, fma_units=2, caches=(32 * KIB, 512 * KIB, 32 * MIB),
              features=frozenset({"avx2", "fma", "x86_64"}))


def _loops(stmt: S.Stmt) -> list[S.For]:
    """The loops, except in the branch kept for inputs smaller than a split factor."""
    small = collect(stmt, lambda n: isinstance(n, S.AttrStmt) and n.key == "small_sizes")
    skip = {id(f) for a in small for f in collect(a, lambda n: isinstance(n, S.For))}
    return [f for f in collect(stmt, lambda n: isinstance(n, S.For)) if id(f) not in skip]


def _partitioned(s, args) -> S.Stmt:
    _, steps = lower_steps(s, args, target=AVX2)
    return next(st.ir for st in steps if st.name == "loop_partition")


def _symbolic_extents(stmt: S.Stmt) -> list[S.For]:
    """Loops whose extent is a min/max of another loop's variable: a tile edge left to run time.
    A padded copy's rows are no tile: computed per band of rows, its border is cut where the
    band starts (a scalar loop of at most the padding's rows)."""
    loop_vars = {f.loop_var for f in collect(stmt, lambda n: isinstance(n, S.For))}
    return [f for f in _loops(stmt) if free_vars(f.extent) & loop_vars
            and collect(f.extent, lambda n: isinstance(n, E.Min | E.Max)) and not _copies_padding(f)]


def _copies_padding(loop: S.For) -> bool:
    stores = collect(loop, lambda n: isinstance(n, S.BufferStore))
    return bool(stores) and all(st.buffer.name == "Xp" for st in stores)


@pytest.mark.parametrize("n", [1000, 1001, 37])
def test_partial_panel_group_runs_constant_panels(n):
    s, args = fast_matmul.matmul(n, AVX2)
    body = _partitioned(s, args)
    assert not _symbolic_extents(body), "\n".join(str(f.extent) for f in _symbolic_extents(body))
    extents = [f.extent for f in _loops(body)]
    assert all(isinstance(e, E.IntImm) and e.value > 0 for e in extents), [str(e) for e in extents]


def test_partial_panel_group_of_1000_columns_is_two_full_panels_and_one_of_8():
    s, args = fast_matmul.matmul(1000, AVX2, tile=RegisterTile(5, 2, 8), group=4)
    body = _partitioned(s, args)
    c = next(p for p in collect(body, lambda n: isinstance(n, S.AttrStmt) and n.key == "produce")
             if getattr(p.node, "name", "") == "C")
    vec = {f.extent.value for f in collect(c, lambda n: isinstance(n, S.For) and n.kind == "vectorized")}
    assert vec == {16, 8}  # the full panels' 16 columns and the last one's 8 (1000 = 15*64 + 2*16 + 8)
    panels = [f for f in collect(c, lambda n: isinstance(n, S.For)) if f.loop_var.name == "j.inner.outer"]
    assert sorted(f.extent.value for f in panels) == [2, 4]  # main groups; the last group's full panels


@pytest.mark.parametrize("n, group", [(37, 4), (83, 2), (100, 2), (101, 3)])
def test_partial_panel_groups_equal_numpy(n, group):
    a, b = rand(n, n), rand(n, n, seed=1)
    s, args = fast_matmul.matmul(n, AVX2, tile=RegisterTile(5, 2, 8), group=group)
    check(s, args, [a, b], [a @ b], rtol=1e-4, atol=1e-4)


def _two_level(n, m):
    """An elementwise kernel tiled twice over its columns (64, then 16 vectorized), rows unrolled."""
    A = te.placeholder((n, m), name="A")
    B = te.compute((n, m), lambda i, j: A[i, j] * 3.0 - 1.0, name="B")
    s = te.create_schedule(B.op)
    io, jo, ii, jj = s[B].tile(B.op.axis[0], B.op.axis[1], 4, 64)
    jp, ji = s[B].split(jj, factor=16)
    s[B].reorder(jo, io, jp, ii, ji)
    s[B].unroll(ii)
    s[B].vectorize(ji)
    return s, [A, B]


@pytest.mark.parametrize("shape", [(5, 37), (9, 1001), (4, 200), (3, 65)])
def test_twice_tiled_kernel_has_constant_tail_tiles(shape):
    s, args = _two_level(*shape)
    body = _partitioned(s, args)
    assert not _symbolic_extents(body)
    assert all(isinstance(f.extent, E.IntImm) and f.extent.value > 0 for f in _loops(body))
    a = rand(*shape)
    check(s, args, [a], [a * 3 - 1])


@pytest.mark.parametrize("size", [1, 37, 130])
def test_twice_tiled_kernel_of_symbolic_size_equals_numpy(size):
    n = te.var("n")
    s, args = _two_level(n, n)
    a = rand(size, size)
    check(s, args, [a], [a * 3 - 1])


@pytest.mark.parametrize("make", [
    lambda: fast_conv2d.conv2d(1, 5, 7, 9, 19, AVX2),
    lambda: fast_conv2d.conv2d(1, 5, 12, 9, 24, AVX2, kernel=1),
    lambda: fast_conv2d.depthwise(1, 5, 9, 24, AVX2),
], ids=["conv2d", "conv2d-1x1", "depthwise"])
def test_conv2d_examples_have_no_symbolic_tile_extents(make):
    assert not _symbolic_extents(_partitioned(*make()))


@pytest.mark.parametrize("d", [definitions.matmul(37), definitions.matmul(70, 45, 29), definitions.conv2d(5, 7, 9, 19),
                               definitions.depthwise(6, 7, 19)], ids=["matmul37", "matmul70x45x29", "conv2d", "depthwise"])
def test_auto_scheduled_kernels_have_no_symbolic_tile_extents(d):
    s = tessel.auto_schedule(d.outputs, target=AVX2, budget=0)
    args = d.params + d.outputs
    assert not _symbolic_extents(_partitioned(s, args))
    inputs = d.inputs(np.random.default_rng(0))
    check(s, args, inputs, [d.reference(*inputs)], rtol=d.rtol, atol=d.atol)


@pytest.mark.parametrize("rows", [7, 8, 10])
def test_partial_row_tile_in_a_fused_loop_is_versioned(rows):
    """The row tiles of every channel fused into one loop: the last one's guard ``y.c + f%3*3 <
    rows`` is not linear in the fused variable, so the tile is versioned on it instead of cut
    (``if (f%3 < 2) {constant tile} else {guarded tile}``)."""
    c, w = 3, 13
    A = te.placeholder((c, rows, w), name="A")
    B = te.compute((c, rows, w), lambda ch, y, x: A[ch, y, x] * 2.0 + 1.0, name="B")
    s = te.create_schedule(B.op)
    yo, yi = s[B].split(B.op.axis[1], factor=3)
    xo, xi = s[B].split(B.op.axis[2], factor=8)
    fused = s[B].fuse(B.op.axis[0], yo)
    s[B].reorder(fused, xo, yi, xi)
    s[B].unroll(yi)
    s[B].vectorize(xi)
    s[B].parallel(fused)
    body = _partitioned(s, [A, B])
    assert not _symbolic_extents(body)
    unrolled = [f for f in _loops(body) if f.kind == "unrolled"]
    assert any(isinstance(f.extent, E.IntImm) and f.extent.value == 3 for f in unrolled)  # the full tiles
    if rows % 3:
        assert collect(body, lambda n: isinstance(n, S.IfThenElse) and n.else_case is not None)
    a = rand(c, rows, w)
    check(s, [A, B], [a], [a * 2 + 1])


def _nested_split(depth: int):
    """The row axis of ``A*2 + 1`` over symbolic sizes split by 3, ``depth`` times (build_growth's)."""
    from benchmarks.build_growth import program

    return program("splits", depth)


def test_split_nested_three_deep_cuts_at_plain_quotients():
    """The cut points of a split of a split of a split are quotients of n (``n//27``,
    ``(n + 2)//27``): the simplifier orders quotients of one numerator, so no cut is a
    min/max of them (at issue 31's filing each was, nested four deep, and the build grew as
    the square of the depth)."""
    s, args = _nested_split(3)
    _, steps = lower_steps(s, args, target=AVX2)
    body = next(st.ir for st in steps if st.name == "loop_partition")
    outer = [f for f in _loops(body) if f.loop_var.name == "i.outer.outer.outer"]
    assert len(outer) >= 2
    for f in outer:
        assert not collect(f.min, lambda x: isinstance(x, E.Min | E.Max)), str(f.min)


@pytest.mark.parametrize("target", ["c", "python"])
def test_split_nested_four_deep_equals_numpy_at_every_size(target):
    s, args = _nested_split(4)
    f = tessel.build(s, args, target=target)
    for n in [0, 1, 2, 3, 8, 9, 26, 27, 28, 80, 81, 82, 161, 162, 163]:
        a = rand(n, 3)
        b = np.full((n, 3), np.nan, dtype=np.float32)
        f(a, b)
        np.testing.assert_allclose(b, a * 2 + 1, rtol=1e-6)


def test_nested_symbolic_splits_grow_the_code_linearly():
    """Each level of a nest of symbolic splits adds a bounded number of loops: the outer loop is
    cut once at the tightest point (where every level's test holds), and a tail's tail (a
    corner of symbolic size) is tightened, not cut again. Cut per level and condition, the code
    was a nest per level, each nest as deep as the split (quadratic, and the build with it)."""
    loops = {d: len(_loops(_partitioned(*_nested_split(d)))) for d in (2, 4, 6)}
    assert loops[6] - loops[4] == loops[4] - loops[2], loops
    assert loops[6] - loops[4] <= 10, loops


@pytest.mark.parametrize("depth", [2, 3, 5])
def test_nested_symbolic_splits_run_the_main_piece_without_tests(depth):
    """The first piece of the outer loop runs every whole tile: its nest has constant inner
    extents and no test, and it is the one piece whose outer extent is the plain quotient."""
    body = _partitioned(*_nested_split(depth))
    outer = [f for f in _loops(body) if f.loop_var.name == "i" + ".outer" * depth]
    main = outer[0]
    assert str(main.extent) == f"n//{3 ** depth}", str(main.extent)
    inner = [f for f in collect(main.body, lambda n: isinstance(n, S.For))]
    assert all(isinstance(f.extent, E.IntImm) or f.loop_var.name == "j" for f in inner), str(main)
    assert not collect(main, lambda n: isinstance(n, S.IfThenElse)), str(main)


@pytest.mark.parametrize("target", ["c", "python"])
def test_split_nested_six_deep_equals_numpy_around_each_tile_edge(target):
    s, args = _nested_split(6)
    f = tessel.build(s, args, target=target)
    for n in [1, 2, 3, 4, 26, 28, 728, 729, 730, 1457, 1459, 2186]:
        a = rand(n, 2)
        b = np.full((n, 2), np.nan, dtype=np.float32)
        f(a, b)
        np.testing.assert_allclose(b, a * 2 + 1, rtol=1e-6)
