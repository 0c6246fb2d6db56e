"""The automatic scheduler's rules for stencil reductions (tessel/autosched/conv.py): a conv's
register tile stacks its vectors over image rows where the row would leave a partial tile, its
stencil window is unrolled whole, row bands come before channel blocks, and the padding stays
stored. Every schedule is checked against NumPy on both targets at awkward sizes; the tiles are
asked of explicit Targets, so nothing here depends on the machine.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import TARGETS, check

import tessel
from tessel import te
from tessel.autosched import auto_schedule_result, make_plan
from tessel.autosched.analysis import Graph
from tessel.autosched.conv import split_vectors, spread_axis, window_loops
from tessel.target import Target, resolve

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # benchmarks/ lives at the root

from benchmarks import definitions

AVX2 = Target("c", vector_bytes=32, vector_registers=16, fma_units=2, caches=(32 << 10, 512 << 10, 8 << 20))
AVX512 = Target("c", vector_bytes=64, vector_registers=32, fma_units=2, caches=(48 << 10, 2 << 20, 32 << 20))
NEON = Target("c", vector_bytes=16, vector_registers=32, fma_units=2, caches=(64 << 10, 1 << 20, 8 << 20))


def auto(d, target):
    return auto_schedule_result(d.outputs, target=target, budget=0)


def _check_both(r, d, target):
    ins = d.inputs(np.random.default_rng(5))
    targets = [target.with_(kind=k) for k in TARGETS]
    check(r.schedule, d.params + d.outputs, ins, [d.reference(*ins)], targets=targets, rtol=d.rtol, atol=d.atol)


def test_split_vectors_keeps_the_row_whole_then_the_most_vectors():
    assert split_vectors(2, 8, 56, 56) == (1, 2)   # 16 pixels leave 8 of a 56-pixel row: two rows of 8
    assert split_vectors(2, 8, 64, 56) == (2, 1)   # a row of 64 takes both vectors
    assert split_vectors(2, 8, 24, 9) == (1, 2)    # a partial band (9 rows) beats half the accumulators
    assert split_vectors(3, 16, 56, 56) == (3, 1)  # no tile divides the row: the most along it
    assert split_vectors(4, 8, 56, 1) == (1, 1)    # one row: nothing to stack over
    assert split_vectors(4, 16, 56, 56) == (2, 2)  # 64 pixels are wider than the row: half stacked
    assert split_vectors(2, 8, None, None) == (2, 1)  # symbolic sizes: matmul's layout
    # with a window over the rows, stacked rows share the input rows it reads: stacking wins ties
    assert split_vectors(7, 8, 56, 56) == (7, 1) and split_vectors(7, 8, 56, 56, window=True) == (1, 7)
    assert split_vectors(2, 8, 64, 56, window=True) == (1, 2)
    assert split_vectors(2, 8, 56, 1, window=True) == (1, 1)  # one row: still nothing to stack over


def test_the_spread_axis_is_the_second_pixel_axis_and_matmul_has_none():
    conv = definitions.conv2d(4, 8, 6, 10)
    info = Graph([conv.outputs[0].op]).infos[conv.outputs[0].op]
    ax = conv.outputs[0].op.axis
    assert spread_axis(info, ax[3], ax[1]) is ax[2]
    mm = definitions.matmul(16, 24, 8)
    info = Graph([mm.outputs[0].op]).infos[mm.outputs[0].op]
    assert spread_axis(info, mm.outputs[0].op.axis[1], mm.outputs[0].op.axis[0]) is None


def test_window_loops_unroll_a_stencil_window_whole_and_leave_long_reductions():
    rc, ry, rx = (te.reduce_axis((0, n), name=nm) for n, nm in ((64, "rc"), (3, "ry"), (3, "rx")))
    assert window_loops([rc, ry, rx]) == ([rc], [ry, rx], 9)
    k = te.reduce_axis((0, 1024), name="k")
    assert window_loops([k]) == ([k], [], 1)
    big = te.reduce_axis((0, 5), name="big")
    assert window_loops([rc, big, big]) == ([rc, big], [big], 5)  # 25 steps: the last loop alone


@pytest.mark.parametrize("target, k", [(AVX2, 16), (AVX512, 12), (NEON, 16)], ids=["avx2", "avx512", "neon"])
def test_conv2d_tile_stacks_rows_where_the_row_would_leave_a_partial_tile(target, k):
    """(AVX-512 with 12 channels: 16 would be one whole vector of them, and the tile turned.)"""
    d = definitions.conv2d(6, k, 9, 24)  # 9 rows: the last band of stacked rows is partial
    r = auto(d, target)
    lanes = resolve(target).vector_lanes("float32")
    along, stacked = r.knobs["Y.vectors"], r.knobs["Y.spread"]
    plan = make_plan([d.outputs[0].op], resolve(target))
    assert (along, stacked) == split_vectors(along * stacked, lanes, 24, 9, window=True)  # a 3 x 3 stencil
    if 24 % (along * stacked * lanes):
        assert 24 % (along * lanes) == 0 or all(24 % (a * lanes) for a in range(1, along * stacked + 1))
    assert plan.anchors[0].spread == 2
    _check_both(r, d, target)


def test_a_row_of_partial_vectors_turns_the_tile_channels_in_the_lanes():
    """24 pixels are a vector and a half of 16 lanes, 16 channels one whole vector: on AVX-512
    the tile's vectors run along the channels, its rows along the pixels (a divisor of the row,
    around the window), with the weights copied once, channel last."""
    d = definitions.conv2d(6, 16, 9, 24)
    plan = make_plan([d.outputs[0].op], resolve(AVX512))
    a = plan.anchors[0]
    assert [(t.name, dim) for t, dim in a.transposed] == [("W", 0)]
    assert (a.op.axis[a.inner].var.name, a.op.axis[a.rows].var.name, a.spread) == ("o", "x", None)
    r = auto(d, AVX512)
    assert 24 % r.knobs["Y.rows"] == 0 and r.knobs["Y.vectors"] == 1 and "Y.spread" not in r.knobs
    st = {s.name: s for s in r.schedule.stages}
    wt = st["W.global.global"]
    assert [iv.var.name for iv in wt.op.axis] == ["ax1.c", "ax2.c", "ax3.c", "ax0.c"]  # W's channel last
    assert st["W.global"].attach_type == "inline" and wt.attach_type == "root"
    local = [iv.var.name for iv in st["Y.local"].op.axis]
    assert local[-1] == "o.c"  # the tile's vectors contiguous in it
    src = tessel.build(r.schedule, d.params + d.outputs, target=AVX512).source
    assert "kept in registers" in src and "tsl_ld_f32x16(W_global_global" in src
    _check_both(r, d, AVX512)


@pytest.mark.parametrize("w", [14, 19, 40])
def test_a_turned_tiles_pixels_divide_the_row(w):
    """A turned tile's rows are pixels of an image row and divide it (a partial block would be a
    second, slower loop nest), in the rules' default and in every candidate the search may try."""
    d = definitions.conv2d(3, 64, 4, w)
    plan = make_plan([d.outputs[0].op], resolve(AVX512))
    assert plan.anchors[0].transposed
    rows = next(k for k in plan.knobs if k.name == "Y.rows")
    assert all(w % r == 0 for r in rows.candidates) and rows.default in rows.candidates
    vectors = next(k for k in plan.knobs if k.name == "Y.vectors")
    assert max(vectors.candidates) <= 2
    r = auto(d, AVX512)
    assert w % r.knobs["Y.rows"] == 0
    _check_both(r, d, AVX512)


def test_a_conv_with_an_activation_is_fused_not_turned():
    """A conv whose one reader is elementwise (a ReLU) is computed inside the reader's tiles, as
    it was; a turned tile would be laid out by the reader's loops, channel not last."""
    X = te.placeholder((1, 4, 9, 26), name="X")
    W = te.placeholder((32, 4, 3, 3), name="W")
    rc, ry, rx = (te.reduce_axis((0, n), name=nm) for n, nm in ((4, "rc"), (3, "ry"), (3, "rx")))
    Y = te.compute((1, 32, 7, 24), lambda b, o, y, x: te.sum(X[b, rc, y + ry, x + rx] * W[o, rc, ry, rx],
                                                              axis=[rc, ry, rx]), name="Y")
    R = te.compute(Y.shape, lambda *i: te.max(Y(*i), 0.0), name="R")
    plan = make_plan([R.op], resolve(AVX512))
    tile = next(a for a in plan.anchors if a.kind == "tile")
    assert tile.fused is R.op and not tile.transposed
    r = auto_schedule_result([R], target=AVX512, budget=0)
    x, w = np.random.default_rng(1).uniform(-1, 1, (1, 4, 9, 26)).astype("float32"), \
        np.random.default_rng(2).uniform(-1, 1, (32, 4, 3, 3)).astype("float32")
    ref = sum(np.einsum("oc,bchw->bohw", w[:, :, dy, dx], x[:, :, dy:dy + 7, dx:dx + 24])
              for dy in range(3) for dx in range(3))
    check(r.schedule, [X, W, R], [x, w], [np.maximum(ref, 0).astype("float32")],
          targets=[AVX512.with_(kind=k) for k in TARGETS], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("target", [AVX2, AVX512], ids=["avx2", "avx512"])
def test_whole_vectors_of_pixels_or_no_window_keep_the_tile_as_it_is(target):
    """Rows of whole vectors (32 pixels) are not turned on either target; neither is a 1 x 1
    conv, whose input the tile as it is reads through a band copy."""
    for d in (definitions.conv2d(6, 16, 9, 32), definitions.conv2d(6, 16, 9, 24, kernel=1)):
        plan = make_plan([d.outputs[0].op], resolve(target))
        assert not plan.anchors[0].transposed, d.name
        assert plan.anchors[0].op.axis[plan.anchors[0].inner].var.name == "x"


def test_conv2d_schedule_unrolls_the_window_and_puts_row_bands_outside_channel_blocks():
    d = definitions.conv2d(8, 16, 10, 24)
    r = auto(d, AVX2)
    assert (r.knobs["Y.rows"], r.knobs["Y.vectors"], r.knobs["Y.spread"]) == (4, 1, 2)
    text = r.schedule.python()
    assert "s[Y_local].unroll(ry)" in text and "s[Y_local].unroll(rx)" in text
    st = {s.name: s for s in r.schedule.stages}
    loops = " ".join(iv.var.name for iv in st["Y"].leaf_iter_vars)  # outermost first, fused names joined
    assert loops.index("y.outer") < loops.index("o.outer") < loops.index("x.outer"), loops
    assert st["Xp"].attach_type == "root"
    _check_both(r, d, AVX2)


def test_a_1x1_conv_unrolls_its_channel_loop_instead_of_a_window():
    d = definitions.conv2d(21, 8, 6, 16, kernel=1)  # 21 channels: too long to unroll whole
    r = auto(d, AVX2)
    text = r.schedule.python()
    ku = r.knobs["Y.k_unroll"]  # the tile's (2 where it fills the register file)
    assert ku > 1 and f"split(rc, factor={ku})" in text and "unroll(rc_inner)" in text
    _check_both(r, d, AVX2)


@pytest.mark.parametrize("target", [AVX2, AVX512], ids=["avx2", "avx512"])
def test_a_1x1_conv_copies_each_threads_band_of_input_with_the_channels_side_by_side(target):
    """The 1x1 conv reads its input in place, a plane apart per channel: each thread copies its
    band of rows first (conv.band_operands), and the copy is per band, not per channel block."""
    d = definitions.conv2d(21, 10, 17, 24, kernel=1)  # partial channel blocks and bands, 5 to 17 bands
    r = auto(d, target)
    assert [t.name for t in next(a for a in r.plan.anchors if a.kind == "tile").band] == ["X"]
    box = re.search(r"allocate X\.local\[float32 \* 1 \* 21 \* (\d+) \* \d+\]", str(tessel.lower(r.schedule, r.args)))
    assert box and int(box.group(1)) == r.knobs["Y.spread"]  # one band of rows, every channel
    st = {s.name: s for s in r.schedule.stages}
    band = st["X.local"]
    attrs = st["Y"].iter_var_attrs
    top = next(iv for iv in st["Y"].leaf_iter_vars if iv in attrs and attrs[iv].kind == "parallel")
    assert band.attach_type == "scope" and band.attach_stage is st["Y"] and band.attach_ivar is top
    assert "o.outer" not in top.var.name  # threads over bands of rows: one copy serves every channel block
    _check_both(r, d, target)
    from tessel.autosched import _legal

    off, level = _legal(r.plan, {**r.knobs, "Y.band": False}, [*r.plan.graph.inputs(), *d.outputs])
    assert level == "full" and "X.local" not in {s.name for s in off.stages}  # the search may read in place


def _batched_1x1(n: int, c: int, k: int, h: int, w: int):
    X = te.placeholder((n, c, h, w), name="X")
    W = te.placeholder((k, c, 1, 1), name="W")
    rc = te.reduce_axis((0, c), name="rc")
    Y = te.compute((n, k, h, w), lambda b, o, y, x: te.sum(X[b, rc, y, x] * W[o, rc, 0, 0], axis=rc), name="Y")
    return X, W, Y


def test_a_batch_as_the_threads_loop_copies_one_band_not_the_image():
    """With 8 images the threads' loop is the batch alone: the copy goes to the band loop inside
    it (a copy at the batch loop would be the whole image again, in the same layout)."""
    X, W, Y = _batched_1x1(8, 19, 10, 12, 16)
    r = auto_schedule_result([Y], target=AVX2, budget=0)
    text = str(tessel.lower(r.schedule, r.args))
    assert f"X.local[float32 * 1 * 19 * {r.knobs['Y.spread']} * 16]" in text, text[:2000]
    st = {s.name: s for s in r.schedule.stages}
    assert st["X.local"].attach_ivar.var.name.startswith("y")  # the band loop, not b
    rng = np.random.default_rng(4)
    x, wt = rng.standard_normal((8, 19, 12, 16), "float32"), rng.standard_normal((10, 19, 1, 1), "float32")
    want = np.einsum("oc,bcyx->boyx", wt[:, :, 0, 0], x)
    check(r.schedule, [X, W, Y], [x, wt], [want], targets=[AVX2.with_(kind=t) for t in TARGETS], rtol=1e-4, atol=1e-4)


def test_a_conv_computed_inside_its_activation_copies_its_band_too():
    """conv + ReLU: the tile is computed in the activation's tiles (``fused``), whose loops the
    band copy is attached to."""
    X, W, Y = _batched_1x1(1, 19, 10, 17, 16)
    Z = te.compute(Y.shape, lambda b, o, y, x: te.max(Y[b, o, y, x], 0.0), name="Z")
    r = auto_schedule_result([Z], target=AVX2, budget=0)
    assert next(a for a in r.plan.anchors if a.kind == "tile").fused is not None
    st = {s.name: s for s in r.schedule.stages}
    assert st["X.local"].attach_stage is st["Z"]
    rng = np.random.default_rng(6)
    x, wt = rng.standard_normal((1, 19, 17, 16), "float32"), rng.standard_normal((10, 19, 1, 1), "float32")
    want = np.maximum(np.einsum("oc,bcyx->boyx", wt[:, :, 0, 0], x), 0)
    check(r.schedule, [X, W, Z], [x, wt], [want], targets=[AVX2.with_(kind=t) for t in TARGETS], rtol=1e-4, atol=1e-4)


def test_no_band_copy_where_the_threads_take_the_channel_blocks_too_or_the_band_is_large():
    """Three bands are too few for the threads, whose loop then takes in the channel blocks:
    a copy there would be made once per block, so there is none. A band larger than half of L2
    starts off (the search may turn it on); a 1x1 conv over few channels starts on."""
    d = definitions.conv2d(21, 10, 5, 24, kernel=1)
    r = auto(d, AVX2)
    assert r.knobs["Y.band"] is True and "X.local" not in {s.name for s in r.schedule.stages}
    _check_both(r, d, AVX2)
    big = make_plan([definitions.conv2d(512, 64, 8, 224, kernel=1).outputs[0].op], resolve(AVX2))
    assert {k.name: k.default for k in big.knobs}["Y.band"] is False  # 512 x 2 x 224 floats: 917 KB
    few = make_plan([definitions.conv2d(12, 10, 17, 24, kernel=1).outputs[0].op], resolve(AVX2))
    assert {k.name: k.default for k in few.knobs}["Y.band"] is True


def test_a_3x3_convs_band_copy_is_the_searchs_choice_and_a_depthwise_conv_has_none():
    """The padded input of a 3x3 conv, a pass of its own, is read across planes like a 1x1
    conv's input: its band copy is a knob, off by default (little gain, a longer build), and
    correct when on. A depthwise conv's input follows the output channel (no reuse across
    channel blocks), and is computed per channel already."""
    from tessel.autosched import _legal

    d = definitions.conv2d(5, 12, 17, 19)
    conv3 = make_plan([d.outputs[0].op], resolve(AVX2))
    assert [[t.name for t in a.band] for a in conv3.anchors if a.kind == "tile"] == [["Xp"]]
    assert {k.name: k.default for k in conv3.knobs}["Y.band"] is False
    on, _ = _legal(conv3, {**conv3.defaults(), "Y.band": True}, [*conv3.graph.inputs(), *d.outputs])
    assert "Xp.local" in {s.name for s in on.stages}
    ins = d.inputs(np.random.default_rng(3))
    check(on, d.params + d.outputs, ins, [d.reference(*ins)], targets=[AVX2.with_(kind=t) for t in TARGETS],
          rtol=d.rtol, atol=d.atol)
    dw = make_plan([definitions.depthwise(5, 11, 40).outputs[0].op], resolve(AVX2))
    assert all(not a.band for a in dw.anchors)
    assert "Y.band" not in {k.name for k in dw.knobs}


@pytest.mark.parametrize("target", [AVX2, AVX512], ids=["avx2", "avx512"])
def test_depthwise_keeps_its_padding_stored_and_stacks_rows(target):
    d = definitions.depthwise(5, 11, 40)
    r = auto(d, target)
    st = {s.name: s for s in r.schedule.stages}
    # a stencil read nine times: stored, not inlined; each thread's planes in its own loop
    assert st["Xp"].attach_type not in ("inline", "root")
    assert r.knobs["Y.rows"] == 1 and r.knobs["Y.spread"] >= 1
    _check_both(r, d, target)


@pytest.mark.parametrize("target", [AVX2, AVX512, NEON], ids=["avx2", "avx512", "neon"])
def test_the_search_space_trades_channel_rows_for_stacked_rows(target):
    """The rules' tile is the space's default, and the tiles with the same accumulators split
    the other way (channels halved and rows doubled, or the reverse) are points of it."""
    d = definitions.conv2d(64, 64, 56, 56, kernel=1)
    plan = make_plan([d.outputs[0].op], resolve(target))
    knobs = {k.name: k for k in plan.knobs}
    rows, spread = knobs["Y.rows"], knobs["Y.spread"]
    assert rows.candidates[0] <= rows.default and rows.default in rows.candidates
    checked = 0
    for r, s in ((rows.default * 2, spread.default // 2), (rows.default // 2, spread.default * 2)):
        if 1 <= r <= 8 and 1 <= s <= 8:
            assert r in rows.candidates and s in spread.candidates
            checked += 1
    assert checked >= 1  # some trade is in range on every target, or the test would check nothing


@pytest.mark.parametrize("kernel, c, k, h, w", [(1, 5, 12, 9, 24), (3, 5, 12, 9, 19)])
def test_traded_tiles_compute_numpys_values_on_awkward_sizes(kernel, c, k, h, w):
    """Every traded point the search may pick (8 x 1, 2 x 4 on AVX2) is a correct schedule,
    with partial channel blocks and bands, on both targets."""
    from tessel.autosched import _legal

    d = definitions.conv2d(c, k, h, w, kernel=kernel)
    plan = make_plan([d.outputs[0].op], resolve(AVX2))
    args = [*plan.graph.inputs(), *d.outputs]
    base = plan.defaults()
    for rows, spread in ((base["Y.rows"] * 2, base["Y.spread"] // 2), (base["Y.rows"] // 2, base["Y.spread"] * 2)):
        sch, _ = _legal(plan, {**base, "Y.rows": rows, "Y.spread": spread}, args)
        ins = d.inputs(np.random.default_rng(rows))
        check(sch, d.params + d.outputs, ins, [d.reference(*ins)], targets=[AVX2.with_(kind=t) for t in TARGETS],
              rtol=d.rtol, atol=d.atol)


@pytest.mark.parametrize("shape", [(1, 21, 5, 24), (1, 21, 14, 24), (8, 19, 6, 16), (2, 19, 7, 16), (1, 21, 40, 24)])
def test_the_band_knob_is_searched_only_where_the_rules_make_the_copy(shape):
    """Where the threads' loop takes in the channel blocks the rules make no band copy, so the
    knob on writes the schedule it writes off: the search's space keeps one of the two
    (``Knob.matters``, ``Plan.distinct``), exactly where the built schedule has no copy."""
    from tessel.autosched import _legal
    from tessel.autosched.search import task

    n, c, h, w = shape
    X, W, Y = _batched_1x1(n, c, 10, h, w)
    plan = make_plan([Y.op], resolve(AVX2))
    knobs = {k.name: k for k in plan.knobs}
    band, args = knobs["Y.band"], [*plan.graph.inputs(), Y]
    placed = []
    for sp in knobs["Y.spread"].candidates:
        values = {**plan.defaults(), "Y.spread": sp, "Y.band": True}
        sch, level = _legal(plan, values, args)
        copied = "X.local" in {s.name for s in sch.stages}
        assert level == "full" and band.matters(values) is copied, (shape, sp)
        assert plan.distinct({**values, "Y.band": not band.default}) is copied
        placed.append(copied)
    space = task(plan, lambda kn: (_legal(plan, kn, args)[0], args)).config_space
    per_spread = len(space) // len(placed)  # spread x band x the rest: the band's half drops where not placed
    valid = sum(space.is_index_valid(i) for i in range(len(space)))
    assert valid == sum(per_spread if p else per_spread // 2 for p in placed)


def test_the_band_knob_matters_for_some_spreads_and_not_others():
    """14 rows: 14 bands of one row are enough for the threads, 7 of two are not (the loop
    then takes in the channel blocks, and the copy is left out)."""
    X, W, Y = _batched_1x1(1, 21, 10, 14, 24)
    plan = make_plan([Y.op], resolve(AVX2))
    band = next(k for k in plan.knobs if k.name == "Y.band")
    assert [band.matters({"Y.spread": sp}) for sp in (1, 2)] == [True, False]


@pytest.mark.parametrize("kernel", ["conv2d 3x3", "depthwise"])
def test_a_window_unrolled_whole_leaves_k_unroll_nothing_to_change(kernel):
    """The 3x3 conv's window (9 steps) is longer than every k_unroll candidate and a depthwise
    conv has no loop beside its window: every k_unroll writes one schedule, and the search
    keeps only the default; the 1x1 conv's channel loop is split by it, and keeps them all."""
    from tessel.autosched import _legal

    d = definitions.conv2d(16, 8, 9, 12, kernel=3) if kernel == "conv2d 3x3" else definitions.depthwise(8, 9, 12)
    plan = make_plan([d.outputs[0].op], resolve(AVX2))
    ku = next(k for k in plan.knobs if k.name.endswith(".k_unroll"))
    args = [*plan.graph.inputs(), *d.outputs]
    texts = {str(tessel.lower(_legal(plan, {**plan.defaults(), ku.name: v}, args)[0], args)) for v in ku.candidates}
    assert len(texts) == 1 and not any(ku.matters({**plan.defaults(), ku.name: v}) for v in ku.candidates)
    one = make_plan([definitions.conv2d(32, 8, 9, 12, kernel=1).outputs[0].op], resolve(AVX2))
    ku1 = next(k for k in one.knobs if k.name.endswith(".k_unroll"))
    assert all(ku1.matters({**one.defaults(), ku1.name: v}) for v in ku1.candidates if v != ku1.default)
