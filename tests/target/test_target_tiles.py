"""Schedules derived from a Target: what the target learns about the machine, the tile shapes
derived from it for several machines, and that every derived schedule computes NumPy's values.

Every target here is written out in full (registers, lanes, FMA pipes, caches), so what is
asserted holds on any machine; GCC's vector extensions compile 64-byte vectors on an AVX2 (or
SSE) host as pairs of operations, so the AVX-512 schedules run here too.
"""

from __future__ import annotations

import importlib
import sys
from itertools import product
from pathlib import Path

import numpy as np
import pytest
from helpers import check, rand

import tessel
from tessel.autosched.conv import CHANNEL_VECTORS, channel_tile, turns
from tessel.errors import DefinitionError
from tessel.target import Target, host, parse, resolve
from tessel.target.tiles import (
    FMA_LATENCY,
    FULL_K_UNROLL,
    K_UNROLL,
    LOAD_PORTS,
    MIN_GROUPS,
    PEAK_OPERANDS,
    REUSE_COLUMNS,
    RegisterTile,
    fma_chains,
    panel_group,
    reduction_lanes,
    register_tile,
    stencil_rows_divide,
    stream_chunk,
    strip_rows,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # examples/ and benchmarks/ live at the root

from examples import fast_blur, fast_conv2d, fast_matmul, fast_rows, fast_streams

host_mod = importlib.import_module("tessel.target.host")  # the module (the package exports host())
KIB, MIB = 1 << 10, 1 << 20
MACHINES = {
    "avx2": Target(vector_bytes=32, vector_registers=16, fma_units=2, caches=(32 * KIB, 512 * KIB, 32 * MIB),
                   features=frozenset({"avx2", "fma", "x86_64"})),
    "avx512": Target(vector_bytes=64, vector_registers=32, fma_units=2, caches=(48 * KIB, 2 * MIB, 32 * MIB),
                     features=frozenset({"avx512f", "fma", "x86_64"})),
    "neon": Target(vector_bytes=16, vector_registers=32, fma_units=2, caches=(64 * KIB, 1 * MIB, 8 * MIB),
                   features=frozenset({"neon", "aarch64"})),
    # no vector unit worth the name: the narrowest vectors tessel plans (2 float32 lanes), 8 registers, no FMA
    "scalar": Target(vector_bytes=8, vector_registers=8, fma_units=1, caches=(16 * KIB, 128 * KIB, 1 * MIB),
                     features=frozenset()),
}


# ---- what a target learns -------------------------------------------------------------------------
def test_machine_fields_round_trip_through_the_target_string():
    t = parse("c -vector-bytes=64 -vector-registers=32 -fma-units=2 -caches=48K,2M,32M")
    assert (t.vector_registers, t.fma_units, t.caches) == (32, 2, (48 * KIB, 2 * MIB, 32 * MIB))
    assert (t.l1d_bytes, t.l2_bytes, t.l3_bytes) == (48 * KIB, 2 * MIB, 32 * MIB)
    assert parse(t.describe()) == t
    assert parse("c -caches=32768,524288,1000000").caches == (32768, 524288, 1000000)
    assert t.vector_lanes("float32") == 16 and t.vector_lanes("float64") == 8 and t.vector_lanes("int8") == 64


@pytest.mark.parametrize("text, message", [
    ("c -vector-registers=many", "number of registers"),
    ("c -vector-registers=1", "vector_registers=1"),
    ("c -fma-units=0", "fma_units=0"),
    ("c -caches=32K,512K", "three positive byte counts"),
    ("c -caches=32K,big,1M", "three sizes"),
])
def test_bad_machine_fields_say_what_to_give(text, message):
    with pytest.raises(tessel.BuildError, match=message):
        parse(text)


def test_resolution_fills_the_machine_fields_and_keeps_those_given():
    h = host()
    assert h.vector_registers in (8, 16, 32) and h.fma_units in (1, 2)
    assert h.caches is not None and all(c > 0 for c in h.caches)
    assert resolve(Target("python")).vector_registers is not None  # the reference plans like the host
    given = MACHINES["avx512"].with_(kind="python")
    assert resolve(given) == given.with_(vector_bytes=64)


@pytest.mark.parametrize("isa, native, width, registers", [
    ({"avx2", "fma", "x86_64", "sse2"}, 32, 32, 16),
    ({"avx512f", "fma", "x86_64", "sse2"}, 64, 64, 32),
    ({"avx2", "fma", "x86_64", "sse2"}, 32, 64, 8),  # 64-byte vectors on AVX2: GCC pairs ymm registers
    ({"avx2", "fma", "x86_64", "sse2"}, 32, 16, 16),  # xmm are the same 16 registers
    ({"neon", "aarch64"}, 16, 16, 32),
    ({"sse2"}, 16, 16, 8),  # 32-bit x86
])
def test_registers_are_counted_in_vectors_of_the_targets_width(isa, native, width, registers):
    done = host_mod._complete(Target(vector_bytes=width, caches=(1, 2, 3)), frozenset(isa), native)
    assert done.vector_registers == registers
    assert done.fma_units == (2 if {"fma", "aarch64"} & isa else 1)


def test_cache_sizes_are_read_from_sysfs(tmp_path):
    for k, (level, kind, size) in enumerate([(1, "Data", "48K"), (1, "Instruction", "32K"),
                                             (2, "Unified", "2048K"), (3, "Unified", "96M")]):
        d = tmp_path / f"index{k}"
        d.mkdir()
        (d / "level").write_text(f"{level}\n")
        (d / "type").write_text(f"{kind}\n")
        (d / "size").write_text(f"{size}\n")
    (tmp_path / "index9").mkdir()  # damaged entry: skipped
    assert host_mod._sysfs_caches(str(tmp_path)) == {1: 48 * KIB, 2: 2 * MIB, 3: 96 * MIB}
    assert host_mod._sysfs_caches(str(tmp_path / "missing")) == {}


# ---- derivations --------------------------------------------------------------------------------
def _every_tile(t: Target) -> list[RegisterTile]:
    lanes = t.vector_lanes("float32")
    return [x for r, v in product(range(1, t.registers + 1), repeat=2)
            if (x := RegisterTile(r, v, lanes)).registers <= t.registers]


@pytest.mark.parametrize("name", MACHINES)
def test_the_register_tile_fits_the_register_file_and_is_the_models_best(name):
    t = MACHINES[name]
    tile = register_tile(t)
    assert tile.lanes == t.vector_lanes("float32")
    assert tile.registers <= t.registers
    need, ratio = FMA_LATENCY * t.fma_pipes, t.fma_pipes / LOAD_PORTS
    every = _every_tile(t)
    good = [x for x in every if x.accumulators >= need and x.fmas_per_load >= ratio]
    # a tile that fills the register file only where no roomier one has a chain to spare
    roomy = [x for x in every if x.registers < t.registers]
    if any(x.accumulators > need for x in roomy if x in good):
        good = [x for x in good if x.registers < t.registers]
    if good:
        assert (tile.rows, tile.vectors) in [(x.rows, x.vectors) for x in good]
        assert tile.fmas_per_load == max(x.fmas_per_load for x in good)
    else:  # 8 registers cannot hide the latency (the scalar-like machine): as many chains as fit
        assert name == "scalar"
        assert tile.accumulators == max(x.accumulators for x in every)
    # a tile that fills the register file is unrolled less: the compiler has no register left
    # for the next steps' loads
    assert tile.k_unroll == (FULL_K_UNROLL if tile.registers == t.registers else K_UNROLL)


def test_avx512_gets_a_tile_only_its_32_registers_hold():
    avx512, avx2 = register_tile(MACHINES["avx512"]), register_tile(MACHINES["avx2"])
    # the measured tiles: AVX2's fills its 16 registers (k by 2), AVX-512's is the hand-tuned 6 x 64
    assert (avx2.rows, avx2.vectors, avx2.k_unroll) == (6, 2, 2)
    assert (avx512.rows, avx512.vectors, avx512.k_unroll) == (6, 4, 4)
    # one-vector outputs keep the roomy tile where it has chains to spare
    assert register_tile(MACHINES["avx512"], max_cols=16).registers < 32
    assert 16 < avx512.registers <= 32 and avx512.lanes == 16
    assert avx2.registers <= 16 and avx2.lanes == 8
    assert avx512.accumulators > 16  # more accumulators than AVX2 has registers at all
    # the tile the examples used to hard-code (6 x 64, 24 accumulators) fits AVX-512 but spills on AVX2
    assert RegisterTile(6, 4, 16).registers <= 32 < RegisterTile(6, 8, 8).registers
    assert RegisterTile(6, 8, 8).accumulators > 16


def test_a_conv_tile_divides_the_channels_only_around_a_window():
    assert stencil_rows_divide(64, 9) == 64 and stencil_rows_divide(64, 1) is None
    t = MACHINES["avx2"]
    three = fast_conv2d._tile_shape(t, 64, 56, 56, 9)
    one = fast_conv2d._tile_shape(t, 64, 56, 56, 1)
    assert 64 % three[0] == 0
    # without a window the channel block may leave a partial one: the 12-accumulator tile
    assert one[0] * one[1] * one[2] // t.vector_lanes("float32") > three[0] * three[1] * three[2] // 8
    assert 64 % one[0] != 0 and one[3] == register_tile(t, max_rows=64, max_cols=56).k_unroll
    depthwise = fast_conv2d._tile_shape(t, 1, 56, 56, 9)
    assert depthwise[0] == 1 and depthwise[1] > 1  # the window's rows shared by stacked rows


def test_tiles_respect_the_extents_and_prefer_divisors():
    t = MACHINES["avx2"]
    narrow = register_tile(t, max_cols=9, max_rows=3)
    assert narrow.rows <= 3 and narrow.vectors == 2  # 9 columns: two vectors cover them
    conv = register_tile(MACHINES["avx512"], max_cols=56, rows_divide=64)
    assert 64 % conv.rows == 0 and conv.cols <= 64
    assert register_tile(Target(vector_bytes=32, vector_registers=3)) == RegisterTile(1, 1, 8)


@pytest.mark.parametrize("name", MACHINES)
def test_cache_blocks_follow_the_caches(name):
    t = MACHINES[name]
    tile = register_tile(t)
    g = panel_group(t, tile, 1024)
    assert g * 1024 * tile.cols * 4 <= max(t.l2_bytes // 2, 1024 * tile.cols * 4)
    assert panel_group(t.with_(caches=(t.l1d_bytes, 4 * t.l2_bytes, t.l3_bytes)), tile, 1024) >= 2 * g
    # given the panels there are: never fewer than fit, never more than all; narrow panels as
    # many as leave MIN_GROUPS groups, panels REUSE_COLUMNS wide (AVX-512's 64) just those that fit
    many = 64 * MIN_GROUPS * g
    wide = tile.cols >= REUSE_COLUMNS
    assert wide == (name == "avx512")
    assert panel_group(t, tile, 1024, panels=many) == (g if wide else 64 * g)
    assert panel_group(t, tile, 1024, panels=MIN_GROUPS * g) == g
    assert panel_group(t, tile, 1024, panels=1) == 1
    # however much fits, the panels there are leave MIN_GROUPS groups (or one per panel) for the
    # threads: a 512 product's 8 AVX-512 panels all fitted a 2 MiB L2, one group, one thread busy
    for panels in (2, MIN_GROUPS, 3 * MIN_GROUPS):
        assert -(-panels // panel_group(t, tile, 64, panels=panels)) >= min(panels, MIN_GROUPS)
    ty = strip_rows(t, 4094 * 4, halo=2)
    assert ty >= 1 and (ty + 2) * 4094 * 4 <= max(t.l2_bytes // 2, 3 * 4094 * 4)
    assert stream_chunk(t) * 4 == t.l2_bytes // 2
    v = reduction_lanes(t)
    assert v % t.vector_lanes("float32") == 0 and v // t.vector_lanes("float32") <= t.registers // 2


@pytest.mark.parametrize("name", MACHINES)
def test_the_peak_loop_keeps_as_many_chains_as_the_registers_allow(name):
    from benchmarks.machine import fma_source

    t = MACHINES[name]
    chains = fma_chains(t)
    assert chains == t.registers - PEAK_OPERANDS
    src = fma_source(t)
    assert src.count(" * x + y;") == chains  # one FMA per chain and step, nothing spilled by construction
    assert f"vector_size({t.vector_bytes})" in src
    with pytest.raises(tessel.BuildError, match="leave none"):
        fma_chains(Target(vector_bytes=32, vector_registers=2))


# ---- every derived schedule computes NumPy's values -----------------------------------------------
@pytest.mark.parametrize("name", MACHINES)
def test_derived_matmul_matches_numpy(name):
    t, n = MACHINES[name], 37  # divisible by no tile: every edge piece runs
    a, b = rand(n, n), rand(n, n, seed=1)
    check(*fast_matmul.matmul(n, t), [a, b], [a @ b], targets=(t, t.with_(kind="python")), rtol=1e-4, atol=1e-4)


def test_a_panel_group_wider_than_the_matrix_compiles():
    """The last panel's columns split into vectors of another width than the full panels'
    (a register tile promoted twice, at two widths): the C generator keeps them apart."""
    a, b = rand(37, 37), rand(37, 37, seed=1)
    s, args = fast_matmul.matmul(37, MACHINES["avx2"], tile=RegisterTile(6, 2, 8), group=3)
    check(s, args, [a, b], [a @ b], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", MACHINES)
def test_derived_row_and_stream_kernels_match_numpy(name):
    t = MACHINES[name]
    targets = (t, t.with_(kind="python"))
    a = rand(13, 203)
    g, bias = rand(203, seed=2), rand(203, seed=3)
    check(*fast_rows.softmax(13, 203, t), [a], [fast_rows.softmax_reference(a)], targets=targets,
          rtol=1e-5, atol=1e-6)
    check(*fast_rows.layernorm(13, 203, t), [a, g, bias], [fast_rows.layernorm_reference(a, g, bias)],
          targets=targets, rtol=1e-4, atol=1e-4)
    check(*fast_streams.row_sum(13, 203, t), [a], [a.sum(axis=1)], targets=targets, rtol=1e-4, atol=1e-4)
    x, y = rand(1001), rand(1001, seed=5)
    check(*fast_streams.add(1001, t), [x, y], [x + y], targets=targets)
    img = rand(41, 67)
    check(*fast_blur.blur(41, 67, t), [img], [fast_blur.reference(img)], targets=targets, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", MACHINES)
def test_derived_conv2d_matches_numpy(name):
    t = MACHINES[name]
    x, w = rand(1, 5, 9, 19), rand(7, 5, 3, 3, seed=1)
    check(*fast_conv2d.conv2d(1, 5, 7, 9, 19, t), [x, w], [fast_conv2d.reference(x, w)],
          targets=(t, t.with_(kind="python")), rtol=1e-4, atol=1e-4)
    x, w1 = rand(1, 5, 9, 24), rand(12, 5, 1, 1, seed=2)  # 24 pixels: rows of whole vectors, stacked on AVX2
    check(*fast_conv2d.conv2d(1, 5, 12, 9, 24, t, kernel=1), [x, w1], [fast_conv2d.reference(x, w1)],
          targets=(t, t.with_(kind="python")), rtol=1e-4, atol=1e-4)
    wd = rand(5, 3, 3, seed=3)
    check(*fast_conv2d.depthwise(1, 5, 9, 24, t), [x, wd], [fast_conv2d.depthwise_reference(x, wd)],
          targets=(t, t.with_(kind="python")), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", MACHINES)
def test_a_row_of_partial_vectors_turns_the_hand_conv_around(name):
    """20 pixels are no whole number of vectors on AVX2 and AVX-512, 16 channels are: the hand
    schedule puts the channels in the lanes, as the auto-scheduler does (conv.channels_in_lanes),
    with the weights copied channel last and a tile whose pixels divide the row. On NEON and the
    scalar target 20 pixels are whole vectors; a prime row (37) leaves too few accumulators."""
    t = MACHINES[name]
    x, w = rand(1, 5, 9, 20), rand(16, 5, 3, 3, seed=4)
    s, args = fast_conv2d.conv2d(1, 5, 16, 9, 20, t)
    st = {stage.name: stage for stage in s.stages}
    turned = "W.global.global" in st
    assert turned == turns(t, 20, 16) == (name in ("avx2", "avx512"))
    if turned:
        assert st["Y.local"].op.axis[-1].var.name == "ko.c"  # the tile's vectors: channels
        pixels = [r.factor for r in st["Y"].relations if getattr(r, "parent", None) is st["Y"].op.axis[3]]
        assert pixels and 20 % pixels[0].value == 0
        tile = channel_tile(t, 16, 20)
        assert pixels[0].value == tile.rows and tile.accumulators >= 10 and tile.vectors <= CHANNEL_VECTORS
    check(s, args, [x, w], [fast_conv2d.reference(x, w)], targets=(t, t.with_(kind="python")), rtol=1e-4, atol=1e-4)
    assert not turns(t, 37, 16)  # 1 x 37 or 37 x 1: not enough accumulators either way


@pytest.mark.parametrize("kernel", (2, 0, -3))
def test_conv2d_refuses_a_window_without_a_centre(kernel):
    """An even window (or none) cannot keep the image size with symmetric padding: it used to
    build a kernel unlike its reference (2) or one writing zeros (0)."""
    with pytest.raises(DefinitionError, match=r"conv2d: kernel=.*odd and positive"):
        fast_conv2d.conv2d(1, 4, 8, 6, 16, MACHINES["avx2"], kernel=kernel)


def test_row_kernels_reduce_in_whole_vectors_of_partial_sums():
    t = MACHINES["avx2"]
    src = tessel.build(*fast_streams.row_sum(8, 1027, t), target=t).source
    assert "tsl_f32x8" in src and "tsl_f32x16" not in src
    a = rand(8, 1027)
    out = np.empty(8, "float32")
    tessel.build(*fast_streams.row_sum(8, 1027, t), target=t)(a, out)
    np.testing.assert_allclose(out, a.sum(axis=1), rtol=1e-4, atol=1e-4)
