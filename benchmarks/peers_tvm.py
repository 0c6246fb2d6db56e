"""The kernels in TVM (``pip install apache-tvm``, TensorIR): each algorithm defined once as
a PrimFunc (``te.create_prim_func``), then scheduled either by hand with a TensorIR
schedule or by MetaSchedule's search at a stated number of trials.

The hand schedules are of the same kind as tessel's, their numbers derived from the same
Target (tile sizes cut to divisors of the problem: TensorIR guards every iteration
otherwise). MetaSchedule (``tvm.s_tir.meta_schedule``; it also needs ``psutil``,
``cloudpickle`` and ``xgboost``) tunes the very PrimFunc the hand schedule starts from, in a
temporary work directory, with its default search (evolutionary, an XGBoost cost model,
candidates built and run in worker processes).

MetaSchedule's build workers: its default build imports ``tvm.s_tir.tensor_intrin`` (every
tensor intrinsic of every architecture, parsed from TVMScript: 1-7 minutes on the loaded
2-core machine at nice 19) inside the timed build, so every build times out unless the
workers import it first, and its pool of workers is started afresh for every batch, so
pre-importing pays that price once per worker per batch. The float32 kernels here tensorize nothing, so the workers build
exactly as the default build does, without that import (:func:`_ms_build`).
"""

from __future__ import annotations

import importlib.util
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from tessel.target.tiles import register_tile, resized, stencil_rows_divide, strip_rows

from .peer_base import PARTIALS, TARGET, PeerRun, PeerUnavailable, V, aligned_empty, divisor

# what MetaSchedule needs beside TVM itself (its runner, its workers' pickling, its cost model)
METASCHEDULE_NEEDS = ("psutil", "cloudpickle", "xgboost")
MS_PER_BATCH = 8  # candidates per round of MetaSchedule's search (its default, 64, exceeds small budgets)
MS_BUILD_TIMEOUT = 60.0  # seconds a candidate may take to build on a loaded machine
IMPORT_S: list[float] = []  # seconds MetaSchedule's one-time imports took in this process (once)


def _tvm():
    import tvm
    from tvm import te

    return tvm, te


@dataclass
class TirAlgo:
    """One kernel's algorithm: the PrimFunc, its output's shape, the input arrays, and the
    sizes a hand schedule needs (``info``)."""

    func: object
    out_shape: tuple[int, ...]
    arrays: list[np.ndarray]
    info: dict[str, object] = field(default_factory=dict)


def _schedule(func):
    tvm, _ = _tvm()
    mod = getattr(tvm, "s_tir", None) or tvm.tir  # TVM >= 0.22 moved TensorIR scheduling to s_tir
    return mod.Schedule(func)


def _block(sch, name: str):
    return sch.get_sblock(name) if hasattr(sch, "get_sblock") else sch.get_block(name)


def _target(cores: bool = False):
    """This machine's LLVM target; with ``cores``, its core count too (MetaSchedule wants it)."""
    tvm, _ = _tvm()
    cpu = tvm.get_global_func("target.llvm_get_system_cpu")()
    spec = {"kind": "llvm", "mcpu": cpu}
    if cores:
        spec["num-cores"] = os.cpu_count() or 1
    try:
        return tvm.target.Target(spec)
    except Exception:  # older TVM: the string form
        return tvm.target.Target(f"llvm -mcpu={cpu}" + (f" -num-cores={spec['num-cores']}" if cores else ""))


# ---- MetaSchedule -------------------------------------------------------------------------------
def metaschedule_missing() -> str | None:
    """Why MetaSchedule cannot run here (a module it needs is absent), or None."""
    missing = [m for m in ("tvm", *METASCHEDULE_NEEDS) if importlib.util.find_spec(m) is None]
    return f"needs {', '.join(missing)}" if missing else None


def _ms_build():
    """MetaSchedule's default build minus its import of every tensor intrinsic (see the module
    docstring); a closure, so cloudpickle ships it to the workers by value."""

    def build(mod, target, _params):
        from tvm.driver import build as tvm_build
        from tvm.s_tir.transform import RemoveWeightLayoutRewriteBlock

        return tvm_build(RemoveWeightLayoutRewriteBlock(skip_tensor_rewrite=True)(mod), target=target)

    return build


def metaschedule_ready() -> None:
    """Import MetaSchedule and the tensor intrinsics its tuning context loads, once per process
    and timed apart (:data:`IMPORT_S`): a one-time cost, like importing tessel, not a kernel's."""
    reason = metaschedule_missing()
    if reason:
        raise PeerUnavailable(reason)
    if not IMPORT_S:
        t0 = time.perf_counter()
        import tvm.s_tir.meta_schedule
        import tvm.s_tir.tensor_intrin  # noqa: F401 (registers the intrinsics)

        IMPORT_S.append(time.perf_counter() - t0)


def metaschedule(func, trials: int):
    """MetaSchedule's best schedule of ``func`` after ``trials`` measured candidates."""
    metaschedule_ready()
    import logging

    from tvm.s_tir import meta_schedule as ms

    logging.getLogger("tvm.s_tir.meta_schedule").setLevel(logging.WARNING)
    target = _target(cores=True)
    cores = os.cpu_count() or 1
    with tempfile.TemporaryDirectory(prefix="tessel-bench-ms-") as work:
        db = ms.tune_tir(func, target, work, max_trials_global=trials, num_trials_per_iter=min(trials, MS_PER_BATCH),
                         builder=ms.builder.LocalBuilder(max_workers=cores, f_build=_ms_build(),
                                                         timeout_sec=MS_BUILD_TIMEOUT),
                         runner=ms.runner.LocalRunner(), num_tuning_cores=cores, seed=0)
        sch = ms.tir_integration.compile_tir(db, func, target)
    if sch is None:
        raise RuntimeError(f"MetaSchedule found no valid schedule in {trials} trials")
    return sch


def build(define: Callable[..., TirAlgo], hand: Callable[[object, dict], None], arrays: list[np.ndarray],
          trials: int | None = None) -> PeerRun:
    """``define`` the PrimFunc on ``arrays``, schedule it (``hand``, or MetaSchedule with
    ``trials`` candidates), compile it; ``run()`` calls it on TVM copies of the arrays."""
    tvm, te = _tvm()
    g = define(te, *arrays)
    if trials is not None:
        metaschedule_ready()
    t0 = time.perf_counter()
    if trials is None:
        sch = _schedule(g.func)
        hand(sch, g.info)
    else:
        sch = metaschedule(g.func, trials)
    tune = time.perf_counter() - t0
    t0 = time.perf_counter()
    compile_fn = getattr(tvm, "compile", None) or tvm.build
    f = compile_fn(sch.mod, target=_target(cores=trials is not None))
    built = time.perf_counter() - t0
    dev = tvm.cpu()
    make = getattr(tvm.runtime, "tensor", None) or tvm.nd.array
    args = [make(a, dev) for a in g.arrays]
    out = make(aligned_empty(g.out_shape), dev)  # TVM copies into its own 64-byte-aligned tensors
    return PeerRun(lambda: f(*args, out), lambda: out.numpy(), built, None if trials is None else tune)


# ---- matmul -----------------------------------------------------------------------------------
def _matmul(te, a: np.ndarray, b: np.ndarray) -> TirAlgo:
    n = a.shape[0]
    # tessel's register tile, its rows cut to a divisor of n (TensorIR would guard the tile otherwise)
    tile = register_tile(TARGET, max_rows=n, max_cols=n)
    mr, nr = divisor(n, tile.rows), divisor(n, tile.cols)
    ku = resized(TARGET, tile, mr).k_unroll  # a cut tile may leave registers free: k unrolled as the model does
    A, B = te.placeholder((n, n), name="A"), te.placeholder((n, n), name="B")
    Bp = te.compute((n // nr, n, nr), lambda jo, k, ji: B[k, jo * nr + ji], name="Bp")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * Bp[j // nr, k, j % nr], axis=k), name="C")
    return TirAlgo(te.create_prim_func([A, B, C]), (n, n), [a, b], {"mr": mr, "nr": nr, "ku": ku})


def _local_tile(sch, blk, at):
    """The accumulators in a local buffer, written back inside loop ``at``."""
    cl = sch.cache_write(blk, 0, "local")
    sch.reverse_compute_at(cl, at)
    return cl


def _vector_init(sch, blk, at) -> None:
    """The reduction's initialization split off at loop ``at`` and vectorized; only after the
    loop annotations, or TensorIR refuses them."""
    init = sch.decompose_reduction(blk, at)
    sch.vectorize(sch.get_loops(init)[-1])


def _matmul_hand(sch, info: dict) -> None:
    blk = _block(sch, "C")
    i, j, kk = sch.get_loops(blk)
    io, ii = sch.split(i, [None, info["mr"]])
    jo, ji = sch.split(j, [None, info["nr"]])
    ko, ki = sch.split(kk, [None, info["ku"]])
    sch.reorder(jo, io, ko, ki, ii, ji)
    cl = _local_tile(sch, blk, io)
    sch.vectorize(ji)
    sch.unroll(ii)
    sch.unroll(ki)
    sch.vectorize(sch.get_loops(cl)[-1])
    sch.parallel(jo)
    _vector_init(sch, blk, ko)
    po, _, pi = sch.get_loops(_block(sch, "Bp"))
    sch.vectorize(pi)
    sch.parallel(po)


def tvm_matmul(a: np.ndarray, b: np.ndarray, trials: int | None = None) -> PeerRun:
    return build(_matmul, _matmul_hand, [a, b], trials)


# ---- blur -------------------------------------------------------------------------------------
def _blur(te, a: np.ndarray) -> TirAlgo:
    h, w = a.shape
    third = 1.0 / 3.0
    A = te.placeholder((h, w), name="A")
    Bx = te.compute((h, w - 2), lambda y, x: (A[y, x] + A[y, x + 1] + A[y, x + 2]) * third, name="Bx")
    By = te.compute((h - 2, w - 2), lambda y, x: (Bx[y, x] + Bx[y + 1, x] + Bx[y + 2, x]) * third, name="By")
    return TirAlgo(te.create_prim_func([A, By]), (h - 2, w - 2), [a], {"w": w})


def _blur_hand(sch, info: dict) -> None:
    y, x = sch.get_loops(_block(sch, "By"))
    yo, _ = sch.split(y, [None, strip_rows(TARGET, (info["w"] - 2) * 4, halo=2)])
    _, xi = sch.split(x, [None, V])
    sch.vectorize(xi)
    sch.compute_at(_block(sch, "Bx"), yo)
    _, bx_x = sch.get_loops(_block(sch, "Bx"))[-2:]
    _, bxi = sch.split(bx_x, [None, V])
    sch.vectorize(bxi)
    sch.parallel(yo)


def tvm_blur(a: np.ndarray, trials: int | None = None) -> PeerRun:
    return build(_blur, _blur_hand, [a], trials)


# ---- conv2d -----------------------------------------------------------------------------------
def _padded(te, X, p: int):
    """``X`` with ``p`` zeros around each image (``X`` itself for ``p == 0``)."""
    if not p:
        return X
    nb, c, h, w = (int(d) for d in X.shape)
    return te.compute((nb, c, h + 2 * p, w + 2 * p), lambda b, ci, yy, xx: te.if_then_else(
        te.all(yy >= p, yy < h + p, xx >= p, xx < w + p), X[b, ci, yy - p, xx - p], 0.0), name="Xp")


def _conv2d(te, xa: np.ndarray, wa: np.ndarray) -> TirAlgo:
    """A square kernel (3x3, 1x1), stride 1, zero padding that keeps the size."""
    nb, c, h, w = xa.shape
    k, kk = wa.shape[0], wa.shape[2]
    tile = register_tile(TARGET, max_rows=k, max_cols=w, rows_divide=stencil_rows_divide(k, kk * kk))  # tessel's, cut to divisors
    kb, xb = divisor(k, tile.rows), divisor(w, tile.cols)
    X = te.placeholder((nb, c, h, w), name="X")
    Wt = te.placeholder((k, c, kk, kk), name="W")
    Xp = _padded(te, X, kk // 2)
    Wp = te.compute((k // kb, c, kk, kk, kb), lambda ko, ci, ry, rx, ki: Wt[ko * kb + ki, ci, ry, rx], name="Wp")
    rc, ry, rx = te.reduce_axis((0, c), "rc"), te.reduce_axis((0, kk), "ry"), te.reduce_axis((0, kk), "rx")
    Y = te.compute((nb, k, h, w), lambda b, ko, yy, xx: te.sum(
        Xp[b, rc, yy + ry, xx + rx] * Wp[ko // kb, rc, ry, rx, ko % kb], axis=[rc, ry, rx]), name="Y")
    return TirAlgo(te.create_prim_func([X, Wt, Y]), (nb, k, h, w), [xa, wa], {"kb": kb, "xb": xb, "pad": kk // 2})


def _conv2d_hand(sch, info: dict) -> None:
    blk = _block(sch, "Y")
    b, ko, yy, xx, r_c, r_y, r_x = sch.get_loops(blk)
    kto, kti = sch.split(ko, [None, info["kb"]])
    # TensorIR tiles must divide the row to stay unguarded (28 and 56 wide tiles ran at a tenth of the speed)
    xo, xi = sch.split(xx, [None, info["xb"]])
    sch.reorder(b, kto, yy, xo, r_c, r_y, r_x, kti, xi)
    cl = _local_tile(sch, blk, xo)
    sch.unroll(r_x)
    sch.unroll(kti)
    sch.vectorize(xi)
    sch.vectorize(sch.get_loops(cl)[-1])
    sch.parallel(sch.fuse(kto, yy))
    _vector_init(sch, blk, r_c)
    if info["pad"]:
        sch.parallel(sch.get_loops(_block(sch, "Xp"))[1])
    sch.parallel(sch.get_loops(_block(sch, "Wp"))[0])


def tvm_conv2d(xa: np.ndarray, wa: np.ndarray, trials: int | None = None) -> PeerRun:
    return build(_conv2d, _conv2d_hand, [xa, wa], trials)


def _depthwise(te, xa: np.ndarray, wa: np.ndarray) -> TirAlgo:
    """3x3 depthwise: each channel with its own filter ``wa[c, 3, 3]``, zero padding 1."""
    nb, c, h, w = xa.shape
    X, Wt = te.placeholder((nb, c, h, w), name="X"), te.placeholder((c, 3, 3), name="W")
    Xp = _padded(te, X, 1)
    ry, rx = te.reduce_axis((0, 3), "ry"), te.reduce_axis((0, 3), "rx")
    Y = te.compute((nb, c, h, w), lambda b, ch, yy, xx: te.sum(
        Xp[b, ch, yy + ry, xx + rx] * Wt[ch, ry, rx], axis=[ry, rx]), name="Y")
    return TirAlgo(te.create_prim_func([X, Wt, Y]), (nb, c, h, w), [xa, wa])


def _no_hand_schedule(sch, info: dict) -> None:
    raise PeerUnavailable("no hand schedule")


def tvm_depthwise(xa: np.ndarray, wa: np.ndarray, trials: int | None = None) -> PeerRun:
    """MetaSchedule only: there is no hand schedule of the depthwise conv in TensorIR here."""
    return build(_depthwise, _no_hand_schedule, [xa, wa], trials)


# ---- the row kernels: softmax, layernorm, row sum ----------------------------------------------
def _vector_reduce(sch, name: str):
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


def _rows_hand(sch, info: dict) -> None:
    """Every producer at the output's row loop (consumers first), element-wise loops and the
    output in vectors, reductions rfactor-ed into PARTIALS lanes, rows among threads."""
    producers, reductions = info["producers"], info["reductions"]
    # rfactor first (TensorIR wants the reduction to be the first block under its loop), then
    # each partial-sum block lands at the row loop right after the reduction that reads it
    order: list[str] = []
    for name in producers:
        order.append(name)
        if name in reductions:
            _vector_reduce(sch, name)
            order.append(f"{name}_rf")
    row, col = sch.get_loops(_block(sch, "O"))
    for name in order:
        sch.compute_at(_block(sch, name), row)
    for name in producers:
        if name not in reductions and len(sch.get_loops(_block(sch, name))) > 1:
            _, ec = sch.split(sch.get_loops(_block(sch, name))[-1], [None, V])
            sch.vectorize(ec)
    _, ci = sch.split(col, [None, V])
    sch.vectorize(ci)
    sch.parallel(row)


def _softmax(te, a: np.ndarray) -> TirAlgo:
    rows, cols = a.shape
    A = te.placeholder((rows, cols), name="A")
    k1, k2 = te.reduce_axis((0, cols), "k1"), te.reduce_axis((0, cols), "k2")
    M = te.compute((rows,), lambda i: te.max(A[i, k1], axis=k1), name="M")
    E = te.compute((rows, cols), lambda i, j: te.exp(A[i, j] - M[i]), name="E")
    S = te.compute((rows,), lambda i: te.sum(E[i, k2], axis=k2), name="S")
    O = te.compute((rows, cols), lambda i, j: E[i, j] / S[i], name="O")
    return TirAlgo(te.create_prim_func([A, O]), (rows, cols), [a],
                   {"producers": ["S", "E", "M"], "reductions": ["S", "M"]})


def tvm_softmax(a: np.ndarray, trials: int | None = None) -> PeerRun:
    return build(_softmax, _rows_hand, [a], trials)


def _layernorm(eps: float):
    def define(te, a: np.ndarray, g: np.ndarray, b: np.ndarray) -> TirAlgo:
        rows, cols = a.shape
        A, G = te.placeholder((rows, cols), name="A"), te.placeholder((cols,), name="G")
        Bt = te.placeholder((cols,), name="B")
        k1, k2 = te.reduce_axis((0, cols), "k1"), te.reduce_axis((0, cols), "k2")
        S1 = te.compute((rows,), lambda i: te.sum(A[i, k1], axis=k1), name="S1")
        Mu = te.compute((rows,), lambda i: S1[i] / float(cols), name="Mu")
        S2 = te.compute((rows,), lambda i: te.sum((A[i, k2] - Mu[i]) * (A[i, k2] - Mu[i]), axis=k2), name="S2")
        R = te.compute((rows,), lambda i: te.rsqrt(S2[i] / float(cols) + eps), name="R")
        O = te.compute((rows, cols), lambda i, j: (A[i, j] - Mu[i]) * R[i] * G[j] + Bt[j], name="O")
        return TirAlgo(te.create_prim_func([A, G, Bt, O]), (rows, cols), [a, g, b],
                       {"producers": ["R", "S2", "Mu", "S1"], "reductions": ["S2", "S1"]})

    return define


def tvm_layernorm(a: np.ndarray, g: np.ndarray, b: np.ndarray, eps: float, trials: int | None = None) -> PeerRun:
    return build(_layernorm(eps), _rows_hand, [a, g, b], trials)


def _row_sum(te, a: np.ndarray) -> TirAlgo:
    rows, cols = a.shape
    A = te.placeholder((rows, cols), name="A")
    k = te.reduce_axis((0, cols), "k")
    B = te.compute((rows,), lambda i: te.sum(A[i, k], axis=k), name="B")
    return TirAlgo(te.create_prim_func([A, B]), (rows,), [a])


def _row_sum_hand(sch, info: dict) -> None:
    (i, _) = sch.get_loops(_block(sch, "B"))
    rf = _vector_reduce(sch, "B")
    sch.parallel(sch.get_loops(rf)[0])  # the partial sums' row loop
    sch.parallel(i)


def tvm_row_sum(a: np.ndarray, trials: int | None = None) -> PeerRun:
    return build(_row_sum, _row_sum_hand, [a], trials)


# ---- add --------------------------------------------------------------------------------------
def _add(te, a: np.ndarray, b: np.ndarray) -> TirAlgo:
    n = a.shape[0]
    A, B = te.placeholder((n,), name="A"), te.placeholder((n,), name="B")
    C = te.compute((n,), lambda i: A[i] + B[i], name="C")
    return TirAlgo(te.create_prim_func([A, B, C]), (n,), [a, b], {"n": n})


def _add_hand(sch, info: dict) -> None:
    (i,) = sch.get_loops(_block(sch, "C"))
    xo, xi = sch.split(i, [None, divisor(info["n"], TARGET.l2_bytes // 8)])
    _, xv = sch.split(xi, [None, V])
    sch.vectorize(xv)
    sch.parallel(xo)


def tvm_add(a: np.ndarray, b: np.ndarray, trials: int | None = None) -> PeerRun:
    return build(_add, _add_hand, [a, b], trials)
