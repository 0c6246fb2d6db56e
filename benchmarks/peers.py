"""The same kernels in Halide (``pip install halide``), TVM (``pip install apache-tvm``,
TensorIR) and PyTorch on the CPU (``pip install torch``).

Each compiler peer gets the algorithm exactly as tessel and NumPy compute it (same
expressions, same packed layouts where tessel's algorithm packs) and a schedule of the same
kind as tessel's: the same tiling, vector width, unrolling, producer placement and threading,
in the peer's own vocabulary, with the numbers derived from the same Target as tessel's
(:data:`TARGET`: the vector lanes, the register tile of ``tessel.target.tiles``), so neither
side runs code tuned for another machine. PyTorch is the library a user would call instead:
its own operator (``torch.mm``, ``conv2d``, ``softmax``, ``layer_norm``, ...) at the same
thread count, writing into a preallocated output where the operator takes one (``out=``). Where a peer has a better-known idiom for a kernel (Halide's strip schedule
for the blur), that is used instead; tile sizes are chosen so that they divide the problem
(TVM's TensorIR would otherwise guard every iteration).

A builder returns a :class:`PeerRun`: ``run()`` computes into preallocated buffers,
``result()`` hands the output back as NumPy, and ``build_s`` is the compile time. Nothing here
is imported unless the peer is installed; a missing peer is reported by :func:`available`.
"""

from __future__ import annotations

import importlib.util
import os
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from tessel.autosched.conv import split_vectors
from tessel.target import host
from tessel.target.tiles import reduction_lanes, register_tile, strip_rows

TARGET = host()  # the machine both tessel's and the peers' schedules are derived from
V = TARGET.vector_lanes("float32")  # the peers vectorize by the width tessel's kernels use
PARTIALS = reduction_lanes(TARGET)  # and keep as many partial results per row reduction


@dataclass
class PeerRun:
    run: Callable[[], None]
    result: Callable[[], np.ndarray]
    build_s: float


def available(peer: str) -> bool:
    module = {"halide": "halide", "tvm": "tvm", "torch": "torch"}[peer]
    return importlib.util.find_spec(module) is not None


def _divisor(n: int, at_most: int) -> int:
    """The largest divisor of ``n`` not above ``at_most`` (TensorIR guards tiles that do not divide)."""
    return max(d for d in range(1, max(at_most, 1) + 1) if n % d == 0)


# ============================================================================================
# Halide
# ============================================================================================
def _hl():
    import halide as hl

    return hl


def _hl_realize(out_func, out_shape: tuple[int, ...], params: list, arrays: list[np.ndarray]) -> PeerRun:
    """JIT-compile ``out_func``; buffers wrap the NumPy arrays (Halide's x is NumPy's last axis)."""
    hl = _hl()
    for p, a in zip(params, arrays):
        p.set(hl.Buffer(a))
    t0 = time.perf_counter()
    out_func.compile_jit()
    build = time.perf_counter() - t0
    out = np.empty(out_shape, "float32")
    buf = hl.Buffer(out)
    return PeerRun(lambda: out_func.realize(buf), lambda: np.asarray(out), build)


def halide_matmul(a: np.ndarray, b: np.ndarray) -> PeerRun:
    hl = _hl()
    n = a.shape[0]
    x, y, xi, yi, xo, yo = (hl.Var(s) for s in ("x", "y", "xi", "yi", "xo", "yo"))
    A, B = hl.ImageParam(hl.Float(32), 2, "A"), hl.ImageParam(hl.Float(32), 2, "B")
    k = hl.RDom([(0, n)], "k")
    prod, out = hl.Func("prod"), hl.Func("out")
    prod[x, y] = hl.f32(0)
    prod[x, y] += A[k.x, y] * B[x, k.x]
    out[x, y] = prod[x, y]
    # the same register tile as tessel's (derived from the Target), k innermost but for the tile
    tile = register_tile(TARGET, max_rows=n, max_cols=n)
    out.split(x, xo, xi, tile.cols).split(y, yo, yi, tile.rows).reorder(xi, yi, yo, xo).vectorize(xi, V) \
       .unroll(yi).parallel(xo)
    prod.compute_at(out, yo).vectorize(x, V).unroll(x).unroll(y)
    prod.update().reorder(x, y, k.x).vectorize(x, V).unroll(x).unroll(y).unroll(k.x, 4)
    return _hl_realize(out, (n, n), [A, B], [a, b])


def halide_blur(a: np.ndarray) -> PeerRun:
    hl = _hl()
    h, w = a.shape
    x, y, yo, yi = hl.Var("x"), hl.Var("y"), hl.Var("yo"), hl.Var("yi")
    inp = hl.ImageParam(hl.Float(32), 2, "inp")
    bx, by = hl.Func("bx"), hl.Func("by")
    third = hl.f32(1.0 / 3.0)
    bx[x, y] = (inp[x, y] + inp[x + 1, y] + inp[x + 2, y]) * third
    by[x, y] = (bx[x, y] + bx[x, y + 1] + bx[x, y + 2]) * third
    # row strips as tessel's (the fastest of Halide's classic blur schedules measured; the
    # 256x32 tiles of the Halide paper were ~20% slower), as many rows as tessel's strip
    by.split(y, yo, yi, strip_rows(TARGET, (w - 2) * 4, halo=2)).parallel(yo).vectorize(x, V)
    bx.compute_at(by, yo).vectorize(x, V)
    return _hl_realize(by, (h - 2, w - 2), [inp], [a])


def halide_conv2d(xa: np.ndarray, wa: np.ndarray) -> PeerRun:
    hl = _hl()
    _, c, h, w = xa.shape
    k = wa.shape[0]
    tile = register_tile(TARGET, max_rows=k, max_cols=w, rows_divide=k)  # tessel's conv2d tile
    along, yb = split_vectors(tile.vectors, tile.lanes, w, h)
    xb, kb = along * tile.lanes, tile.rows
    x, y, co, n = (hl.Var(s) for s in ("x", "y", "co", "n"))
    xo, xi, yo, yi, cho, chi = (hl.Var(s) for s in ("xo", "xi", "yo", "yi", "cho", "chi"))
    X = hl.ImageParam(hl.Float(32), 4, "X")  # X[x, y, c, n]
    W = hl.ImageParam(hl.Float(32), 4, "W")  # W[rx, ry, c, k]
    padded = hl.BoundaryConditions.constant_exterior(X, 0.0, [(0, w), (0, h)])
    r = hl.RDom([(0, c), (0, 3), (0, 3)], "r")
    conv, out = hl.Func("conv"), hl.Func("out")
    conv[x, y, co, n] = hl.f32(0)
    conv[x, y, co, n] += padded[x + r.z - 1, y + r.y - 1, r.x, n] * W[r.z, r.y, r.x, co]
    out[x, y, co, n] = conv[x, y, co, n]
    # a register tile like tessel's: kb output channels x yb rows x xb pixels, accumulated in
    # registers, the 3x3 window unrolled, bands of rows for the threads (reading through the
    # boundary condition instead of a padded copy ran at a tenth)
    xb = xb if w >= xb else V  # Halide shifts a partial last tile inwards: it must fit the row
    yb = yb if h >= yb else 1
    out.split(x, xo, xi, xb).split(y, yo, yi, yb).split(co, cho, chi, kb) \
       .reorder(xi, yi, chi, xo, cho, yo, n).vectorize(xi, V).unroll(yi).unroll(chi).parallel(yo)
    conv.compute_at(out, xo).vectorize(x, V).unroll(y).unroll(co)
    conv.update().reorder(x, y, co, r.z, r.y, r.x).vectorize(x, V).unroll(y).unroll(co).unroll(r.z).unroll(r.y)
    padded.compute_root().parallel(padded.args()[2])  # padding materialized first, like tessel's Xp stage
    return _hl_realize(out, (1, k, h, w), [X, W], [xa, wa])


def _hl_rows(a: np.ndarray, extra: list[np.ndarray], define) -> PeerRun:
    hl = _hl()
    rows, cols = a.shape
    x, y = hl.Var("x"), hl.Var("y")
    A = hl.ImageParam(hl.Float(32), 2, "A")
    params = [A] + [hl.ImageParam(hl.Float(32), 1, f"p{k}") for k in range(len(extra))]
    out, stages = define(hl, x, y, cols, A, params[1:])
    # one row at a time (every stage computed at the output's row), rows among threads,
    # element-wise work in vectors; the row reductions are rfactor-ed into PARTIALS lanes as in tessel
    out.parallel(y).vectorize(x, V)
    for f in stages:
        f.compute_at(out, y)
        if f.dimensions() == 2:
            f.vectorize(x, V)
    return _hl_realize(out, (rows, cols), params, [a, *extra])


def _hl_vector_sum(hl, expr_of, cols: int, name: str, y, combine="sum"):
    """A row reduction in PARTIALS lanes: partial results over k % PARTIALS, then those combined."""
    r = hl.RDom([(0, cols)], f"r{name}")
    red = hl.Func(name)
    u = hl.Var(f"u{name}")
    red[y] = hl.f32(0) if combine == "sum" else hl.f32(-np.inf)
    if combine == "sum":
        red[y] += expr_of(r.x)
    else:
        red[y] = hl.max(red[y], expr_of(r.x))
    ri, ro = hl.RVar(f"ri{name}"), hl.RVar(f"ro{name}")
    intm = red.update().split(r.x, ro, ri, PARTIALS).rfactor(ri, u)
    intm.compute_at(red, y).vectorize(u, V)
    intm.update().vectorize(u, V)
    return red


def halide_softmax(a: np.ndarray) -> PeerRun:
    def define(hl, x, y, cols, A, _):
        m = _hl_vector_sum(hl, lambda k: A[k, y], cols, "m", y, "max")
        e = hl.Func("e")
        e[x, y] = hl.exp(A[x, y] - m[y])
        s = _hl_vector_sum(hl, lambda k: e[k, y], cols, "s", y)
        out = hl.Func("out")
        out[x, y] = e[x, y] / s[y]
        return out, [m, e, s]

    return _hl_rows(a, [], define)


def halide_layernorm(a: np.ndarray, g: np.ndarray, b: np.ndarray, eps: float) -> PeerRun:
    def define(hl, x, y, cols, A, params):
        G, Bt = params
        s1 = _hl_vector_sum(hl, lambda k: A[k, y], cols, "s1", y)
        mu = hl.Func("mu")
        mu[y] = s1[y] / float(cols)
        s2 = _hl_vector_sum(hl, lambda k: (A[k, y] - mu[y]) * (A[k, y] - mu[y]), cols, "s2", y)
        rs = hl.Func("rs")
        rs[y] = 1.0 / hl.sqrt(s2[y] / float(cols) + hl.f32(eps))
        out = hl.Func("out")
        out[x, y] = (A[x, y] - mu[y]) * rs[y] * G[x] + Bt[x]
        return out, [s1, mu, s2, rs]

    return _hl_rows(a, [g, b], define)


def halide_add(a: np.ndarray, b: np.ndarray) -> PeerRun:
    hl = _hl()
    x, xo, xi = hl.Var("x"), hl.Var("xo"), hl.Var("xi")
    A, B = hl.ImageParam(hl.Float(32), 1, "A"), hl.ImageParam(hl.Float(32), 1, "B")
    out = hl.Func("out")
    out[x] = A[x] + B[x]
    out.split(x, xo, xi, TARGET.l2_bytes // 8).parallel(xo).vectorize(xi, V)  # tessel's chunk
    return _hl_realize(out, a.shape, [A, B], [a, b])


def halide_row_sum(a: np.ndarray) -> PeerRun:
    hl = _hl()
    rows, cols = a.shape
    y = hl.Var("y")
    A = hl.ImageParam(hl.Float(32), 2, "A")
    red = _hl_vector_sum(hl, lambda k: A[k, y], cols, "rs", y)
    red.parallel(y)
    return _hl_realize(red, (rows,), [A], [a])


# ============================================================================================
# TVM (TensorIR: te.create_prim_func + a tir Schedule)
# ============================================================================================
def _tvm():
    import tvm
    from tvm import te

    return tvm, te


def _tvm_schedule(func):
    tvm, _ = _tvm()
    mod = getattr(tvm, "s_tir", None) or tvm.tir  # TVM >= 0.22 moved TensorIR scheduling to s_tir
    return mod.Schedule(func)


def _block(sch, name: str):
    return sch.get_sblock(name) if hasattr(sch, "get_sblock") else sch.get_block(name)


def _tvm_target():
    tvm, _ = _tvm()
    cpu = tvm.get_global_func("target.llvm_get_system_cpu")()
    try:
        return tvm.target.Target({"kind": "llvm", "mcpu": cpu})
    except Exception:  # older TVM: the string form
        return tvm.target.Target(f"llvm -mcpu={cpu}")


def _tvm_build(sch, arrays: list[np.ndarray], out_shape: tuple[int, ...]) -> PeerRun:
    tvm, _ = _tvm()
    t0 = time.perf_counter()
    compile_fn = getattr(tvm, "compile", None) or tvm.build
    f = compile_fn(sch.mod, target=_tvm_target())
    build = time.perf_counter() - t0
    dev = tvm.cpu()
    make = getattr(tvm.runtime, "tensor", None) or tvm.nd.array
    args = [make(a, dev) for a in arrays]
    out = make(np.empty(out_shape, "float32"), dev)
    return PeerRun(lambda: f(*args, out), lambda: out.numpy(), build)


def tvm_matmul(a: np.ndarray, b: np.ndarray) -> PeerRun:
    _, te = _tvm()
    n = a.shape[0]
    # tessel's register tile, its rows cut to a divisor of n (TensorIR would guard the tile otherwise)
    tile = register_tile(TARGET, max_rows=n, max_cols=n)
    mr, nr, ku = _divisor(n, tile.rows), _divisor(n, tile.cols), tile.k_unroll
    A, B = te.placeholder((n, n), name="A"), te.placeholder((n, n), name="B")
    Bp = te.compute((n // nr, n, nr), lambda jo, k, ji: B[k, jo * nr + ji], name="Bp")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * Bp[j // nr, k, j % nr], axis=k), name="C")
    sch = _tvm_schedule(te.create_prim_func([A, B, C]))
    blk = _block(sch, "C")
    i, j, kk = sch.get_loops(blk)
    io, ii = sch.split(i, [None, mr])
    jo, ji = sch.split(j, [None, nr])
    ko, ki = sch.split(kk, [None, ku])
    sch.reorder(jo, io, ko, ki, ii, ji)
    cl = sch.cache_write(blk, 0, "local")
    sch.reverse_compute_at(cl, io)
    sch.vectorize(ji)
    sch.unroll(ii)
    sch.unroll(ki)
    sch.vectorize(sch.get_loops(cl)[-1])
    sch.parallel(jo)
    init = sch.decompose_reduction(blk, ko)  # after the loop annotations, or TensorIR refuses them
    sch.vectorize(sch.get_loops(init)[-1])
    po, _, pi = sch.get_loops(_block(sch, "Bp"))
    sch.vectorize(pi)
    sch.parallel(po)
    return _tvm_build(sch, [a, b], (n, n))


def tvm_blur(a: np.ndarray) -> PeerRun:
    _, te = _tvm()
    h, w = a.shape
    ty = strip_rows(TARGET, (w - 2) * 4, halo=2)
    third = 1.0 / 3.0
    A = te.placeholder((h, w), name="A")
    Bx = te.compute((h, w - 2), lambda y, x: (A[y, x] + A[y, x + 1] + A[y, x + 2]) * third, name="Bx")
    By = te.compute((h - 2, w - 2), lambda y, x: (Bx[y, x] + Bx[y + 1, x] + Bx[y + 2, x]) * third, name="By")
    sch = _tvm_schedule(te.create_prim_func([A, By]))
    y, x = sch.get_loops(_block(sch, "By"))
    yo, _ = sch.split(y, [None, ty])
    _, xi = sch.split(x, [None, V])
    sch.vectorize(xi)
    sch.compute_at(_block(sch, "Bx"), yo)
    _, bx_x = sch.get_loops(_block(sch, "Bx"))[-2:]
    _, bxi = sch.split(bx_x, [None, V])
    sch.vectorize(bxi)
    sch.parallel(yo)
    return _tvm_build(sch, [a], (h - 2, w - 2))


def tvm_conv2d(xa: np.ndarray, wa: np.ndarray) -> PeerRun:
    _, te = _tvm()
    nb, c, h, w = xa.shape
    k = wa.shape[0]
    tile = register_tile(TARGET, max_rows=k, max_cols=w, rows_divide=k)  # tessel's, cut to divisors
    kb, xb = _divisor(k, tile.rows), _divisor(w, tile.cols)
    X = te.placeholder((nb, c, h, w), name="X")
    Wt = te.placeholder((k, c, 3, 3), name="W")
    Xp = te.compute((nb, c, h + 2, w + 2), lambda b, ci, yy, xx: te.if_then_else(
        te.all(yy >= 1, yy < h + 1, xx >= 1, xx < w + 1), X[b, ci, yy - 1, xx - 1], 0.0), name="Xp")
    Wp = te.compute((k // kb, c, 3, 3, kb), lambda ko, ci, ry, rx, ki: Wt[ko * kb + ki, ci, ry, rx], name="Wp")
    rc, ry, rx = te.reduce_axis((0, c), "rc"), te.reduce_axis((0, 3), "ry"), te.reduce_axis((0, 3), "rx")
    Y = te.compute((nb, k, h, w), lambda b, ko, yy, xx: te.sum(
        Xp[b, rc, yy + ry, xx + rx] * Wp[ko // kb, rc, ry, rx, ko % kb], axis=[rc, ry, rx]), name="Y")
    sch = _tvm_schedule(te.create_prim_func([X, Wt, Y]))
    blk = _block(sch, "Y")
    b, ko, yy, xx, r_c, r_y, r_x = sch.get_loops(blk)
    kto, kti = sch.split(ko, [None, kb])
    # TensorIR tiles must divide the row to stay unguarded (28 and 56 wide tiles ran at a tenth of the speed)
    xo, xi = sch.split(xx, [None, xb])
    sch.reorder(b, kto, yy, xo, r_c, r_y, r_x, kti, xi)
    cl = sch.cache_write(blk, 0, "local")
    sch.reverse_compute_at(cl, xo)
    sch.unroll(r_x)
    sch.unroll(kti)
    sch.vectorize(xi)
    sch.vectorize(sch.get_loops(cl)[-1])
    sch.parallel(sch.fuse(kto, yy))
    init = sch.decompose_reduction(blk, r_c)
    sch.vectorize(sch.get_loops(init)[-1])
    sch.parallel(sch.get_loops(_block(sch, "Xp"))[1])
    sch.parallel(sch.get_loops(_block(sch, "Wp"))[0])
    return _tvm_build(sch, [xa, wa], (nb, k, h, w))


def _tvm_vector_reduce(sch, name: str):
    """Split the block's (innermost) reduction loop by PARTIALS and rfactor those lanes out, vectorized."""
    blk = _block(sch, name)
    _, ki = sch.split(sch.get_loops(blk)[-1], [None, PARTIALS])
    rf = sch.rfactor(ki, 1)
    loops = sch.get_loops(rf)
    vec = next(x for x in reversed(loops) if int(sch.get(x).extent) == PARTIALS)
    red = next(x for x in reversed(loops) if x is not vec and not sch.get(x).same_as(sch.get(vec)))
    sch.reorder(red, vec)  # the factored lanes innermost (no decompose_reduction: it blocks vectorize)
    sch.vectorize(vec)
    return rf


def _tvm_rows(sch, out_name: str, producers: list[str], reductions: list[str]) -> None:
    """Every producer at the output's row loop (consumers first), element-wise loops and the
    output in vectors, reductions rfactor-ed into PARTIALS lanes, rows among threads."""
    # rfactor first (TensorIR wants the reduction to be the first block under its loop), then
    # each partial-sum block lands at the row loop right after the reduction that reads it
    order: list[str] = []
    for name in producers:
        order.append(name)
        if name in reductions:
            _tvm_vector_reduce(sch, name)
            order.append(f"{name}_rf")
    row, col = sch.get_loops(_block(sch, out_name))
    for name in order:
        sch.compute_at(_block(sch, name), row)
    for name in producers:
        if name not in reductions and len(sch.get_loops(_block(sch, name))) > 1:
            _, ec = sch.split(sch.get_loops(_block(sch, name))[-1], [None, V])
            sch.vectorize(ec)
    _, ci = sch.split(col, [None, V])
    sch.vectorize(ci)
    sch.parallel(row)


def tvm_softmax(a: np.ndarray) -> PeerRun:
    _, te = _tvm()
    rows, cols = a.shape
    A = te.placeholder((rows, cols), name="A")
    k1, k2 = te.reduce_axis((0, cols), "k1"), te.reduce_axis((0, cols), "k2")
    M = te.compute((rows,), lambda i: te.max(A[i, k1], axis=k1), name="M")
    E = te.compute((rows, cols), lambda i, j: te.exp(A[i, j] - M[i]), name="E")
    S = te.compute((rows,), lambda i: te.sum(E[i, k2], axis=k2), name="S")
    O = te.compute((rows, cols), lambda i, j: E[i, j] / S[i], name="O")
    sch = _tvm_schedule(te.create_prim_func([A, O]))
    _tvm_rows(sch, "O", ["S", "E", "M"], ["S", "M"])
    return _tvm_build(sch, [a], (rows, cols))


def tvm_layernorm(a: np.ndarray, g: np.ndarray, b: np.ndarray, eps: float) -> PeerRun:
    _, te = _tvm()
    rows, cols = a.shape
    A, G, Bt = te.placeholder((rows, cols), name="A"), te.placeholder((cols,), name="G"), te.placeholder((cols,), name="B")
    k1, k2 = te.reduce_axis((0, cols), "k1"), te.reduce_axis((0, cols), "k2")
    S1 = te.compute((rows,), lambda i: te.sum(A[i, k1], axis=k1), name="S1")
    Mu = te.compute((rows,), lambda i: S1[i] / float(cols), name="Mu")
    S2 = te.compute((rows,), lambda i: te.sum((A[i, k2] - Mu[i]) * (A[i, k2] - Mu[i]), axis=k2), name="S2")
    R = te.compute((rows,), lambda i: te.rsqrt(S2[i] / float(cols) + eps), name="R")
    O = te.compute((rows, cols), lambda i, j: (A[i, j] - Mu[i]) * R[i] * G[j] + Bt[j], name="O")
    sch = _tvm_schedule(te.create_prim_func([A, G, Bt, O]))
    _tvm_rows(sch, "O", ["R", "S2", "Mu", "S1"], ["S2", "S1"])
    return _tvm_build(sch, [a, g, b], (rows, cols))


def tvm_add(a: np.ndarray, b: np.ndarray) -> PeerRun:
    _, te = _tvm()
    n = a.shape[0]
    A, B = te.placeholder((n,), name="A"), te.placeholder((n,), name="B")
    C = te.compute((n,), lambda i: A[i] + B[i], name="C")
    sch = _tvm_schedule(te.create_prim_func([A, B, C]))
    (i,) = sch.get_loops(_block(sch, "C"))
    xo, xi = sch.split(i, [None, _divisor(n, TARGET.l2_bytes // 8)])
    _, xv = sch.split(xi, [None, V])
    sch.vectorize(xv)
    sch.parallel(xo)
    return _tvm_build(sch, [a, b], (n,))


def tvm_row_sum(a: np.ndarray) -> PeerRun:
    _, te = _tvm()
    rows, cols = a.shape
    A = te.placeholder((rows, cols), name="A")
    k = te.reduce_axis((0, cols), "k")
    B = te.compute((rows,), lambda i: te.sum(A[i, k], axis=k), name="B")
    sch = _tvm_schedule(te.create_prim_func([A, B]))
    (i, _) = sch.get_loops(_block(sch, "B"))
    rf = _tvm_vector_reduce(sch, "B")
    sch.parallel(sch.get_loops(rf)[0])  # the partial sums' row loop
    sch.parallel(i)
    return _tvm_build(sch, [a], (rows,))


# ============================================================================================
# PyTorch on the CPU: the library call a user would make instead, at the same thread count
# ============================================================================================
def _torch_run(threads: int | None, op: Callable[[], object], result: Callable[[], np.ndarray]) -> PeerRun:
    import torch

    nt = threads or os.cpu_count() or 1

    def run() -> None:
        if torch.get_num_threads() != nt:  # a case on one thread may have run just before
            torch.set_num_threads(nt)
        op()

    torch.set_num_threads(nt)
    return PeerRun(run, result, 0.0)


def _t(a: np.ndarray):
    import torch

    return torch.from_numpy(a)  # shares the NumPy array's memory: no copy


def torch_matmul(a: np.ndarray, b: np.ndarray, threads: int | None = None) -> PeerRun:
    import torch

    out = np.empty((a.shape[0], b.shape[1]), "float32")
    ta, tb, to = _t(a), _t(b), _t(out)
    return _torch_run(threads, lambda: torch.mm(ta, tb, out=to), lambda: out)


def torch_blur(a: np.ndarray) -> PeerRun:
    import torch.nn.functional as F

    x = _t(a)[None, None]
    box = [None]  # avg_pool2d takes no out=: the result of the last call
    return _torch_run(None, lambda: box.__setitem__(0, F.avg_pool2d(x, 3, stride=1)),
                      lambda: box[0][0, 0].numpy())


def torch_conv2d(x: np.ndarray, w: np.ndarray) -> PeerRun:
    """``F.conv2d`` with the padding that keeps the size (1 for 3x3, 0 for 1x1)."""
    import torch.nn.functional as F

    tx, tw, box = _t(x), _t(w), [None]
    pad = w.shape[2] // 2
    return _torch_run(None, lambda: box.__setitem__(0, F.conv2d(tx, tw, padding=pad)), lambda: box[0].numpy())


def torch_depthwise(x: np.ndarray, w: np.ndarray) -> PeerRun:
    """``F.conv2d`` with one group per channel; ``w`` is ``[c, 3, 3]``, torch's ``[c, 1, 3, 3]``."""
    import torch.nn.functional as F

    tx, tw, box = _t(x), _t(w)[:, None], [None]
    c = x.shape[1]
    return _torch_run(None, lambda: box.__setitem__(0, F.conv2d(tx, tw, padding=1, groups=c)),
                      lambda: box[0].numpy())


def torch_softmax(a: np.ndarray) -> PeerRun:
    import torch

    ta, box = _t(a), [None]
    return _torch_run(None, lambda: box.__setitem__(0, torch.softmax(ta, dim=1)), lambda: box[0].numpy())


def torch_layernorm(a: np.ndarray, g: np.ndarray, b: np.ndarray, eps: float) -> PeerRun:
    import torch.nn.functional as F

    ta, tg, tb, box = _t(a), _t(g), _t(b), [None]
    shape = (a.shape[1],)
    return _torch_run(None, lambda: box.__setitem__(0, F.layer_norm(ta, shape, tg, tb, eps)),
                      lambda: box[0].numpy())


def torch_add(a: np.ndarray, b: np.ndarray) -> PeerRun:
    import torch

    out = np.empty_like(a)
    ta, tb, to = _t(a), _t(b), _t(out)
    return _torch_run(None, lambda: torch.add(ta, tb, out=to), lambda: out)


def torch_row_sum(a: np.ndarray) -> PeerRun:
    import torch

    out = np.empty(a.shape[0], "float32")
    ta, to = _t(a), _t(out)
    return _torch_run(None, lambda: torch.sum(ta, dim=1, out=to), lambda: out)
