"""The kernels in Halide (``pip install halide``): each algorithm defined once, then
scheduled either by hand or by one of Halide's autoschedulers.

A definition (``_matmul``, ``_blur``, ...) writes the Funcs as tessel and NumPy compute the
kernel and returns an :class:`Algo`; a hand schedule (``_matmul_hand``, ...) is a schedule of
the same kind as tessel's, its numbers derived from the same Target (:data:`TARGET`); the
autoschedulers (Mullapudi2016, Adams2019, Li2018: plugins shipped in the wheel's ``lib64/``,
loaded by full path) schedule the same definition from estimates of every input's and the
output's extent and from the machine's parallelism and last-level cache. Both end in the
JIT. Halide's x is NumPy's last axis, so shapes are reversed on the way in.
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tessel.autosched.conv import stencil_tile
from tessel.target.tiles import register_tile, strip_rows

from .peer_base import PARTIALS, TARGET, PeerRun, PeerUnavailable, V, aligned_empty

# the autoschedulers the wheel ships, by the name Halide registers them under, and their plugin
AUTOSCHEDULERS = {"Mullapudi2016": "libautoschedule_mullapudi2016.so",
                  "Adams2019": "libautoschedule_adams2019.so",
                  "Li2018": "libautoschedule_li2018.so"}
_LOADED: set[str] = set()
_SERIAL = itertools.count()


def _hl():
    import halide as hl

    return hl


@dataclass
class Algo:
    """One kernel's algorithm: the output Func, its shape (NumPy's order), the input
    ImageParams with the arrays bound to them, and the Funcs, Vars and sizes a hand schedule
    names (``f``)."""

    out: object
    out_shape: tuple[int, ...]
    params: list
    arrays: list[np.ndarray]
    f: dict[str, object] = field(default_factory=dict)


# ---- the autoschedulers ---------------------------------------------------------------------
def plugin_dir() -> Path:
    """Where the ``halide`` wheel keeps its autoscheduler plugins."""
    import importlib.util

    spec = importlib.util.find_spec("halide")
    if spec is None or spec.origin is None:
        raise PeerUnavailable("halide is not installed")
    return Path(spec.origin).parent / "lib64"


def plugin_path(name: str, directory: str | Path | None = None) -> Path:
    """The plugin of autoscheduler ``name`` (in ``directory``, default the wheel's ``lib64/``)."""
    if name not in AUTOSCHEDULERS:
        raise PeerUnavailable(f"no autoscheduler {name!r} (one of {', '.join(AUTOSCHEDULERS)})")
    path = Path(directory if directory is not None else plugin_dir()) / AUTOSCHEDULERS[name]
    if not path.is_file():
        raise PeerUnavailable(f"{name}: no plugin at {path}")
    return path


def _load(name: str, directory: str | Path | None) -> None:
    path = str(plugin_path(name, directory))
    if path not in _LOADED:
        _hl().load_plugin(path)
        _LOADED.add(path)


def machine_params(name: str) -> dict[str, str]:
    """The autoscheduler's view of the machine: every core (as the harness runs every
    contender) and, for Mullapudi2016's cost model, the Target's last-level cache."""
    params = {"parallelism": str(os.cpu_count() or 1)}
    if name == "Mullapudi2016":
        params["last_level_cache_size"] = str(TARGET.l3_bytes or TARGET.l2_bytes)
    return params


def _autoschedule(g: Algo, name: str, directory: str | Path | None, pipe) -> None:
    hl = _hl()
    _load(name, directory)
    for p, a in zip(g.params, g.arrays):
        p.set_estimates([(0, n) for n in reversed(a.shape)])
    g.out.set_estimates([(0, n) for n in reversed(g.out_shape)])
    pipe.apply_autoscheduler(hl.get_jit_target_from_environment(),
                             hl.AutoschedulerParams(name, machine_params(name)))


def build(define: Callable[..., Algo], hand: Callable[[Algo], None], arrays: list[np.ndarray],
          autoscheduler: str | None = None, plugins: str | Path | None = None) -> PeerRun:
    """``define`` the algorithm on ``arrays``, schedule it (``hand``, or the autoscheduler
    named), JIT-compile it; buffers wrap the NumPy arrays."""
    if autoscheduler is not None:
        plugin_path(autoscheduler, plugins)  # a missing plugin is a note before anything is defined
    hl = _hl()
    g = define(hl, *arrays)
    pipe = hl.Pipeline(g.out)
    t0 = time.perf_counter()
    if autoscheduler is None:
        hand(g)
    else:
        _autoschedule(g, autoscheduler, plugins, pipe)
    tune = time.perf_counter() - t0
    for p, a in zip(g.params, g.arrays):
        p.set(hl.Buffer(a))
    t0 = time.perf_counter()
    pipe.compile_jit(hl.get_jit_target_from_environment())
    built = time.perf_counter() - t0
    out = aligned_empty(g.out_shape)
    buf = hl.Buffer(out)
    return PeerRun(lambda: pipe.realize(buf), lambda: np.asarray(out), built,
                   None if autoscheduler is None else tune)


def _unique(name: str) -> str:
    """``name`` with a serial number: the autoschedulers' plugins live for the whole process
    and see every pipeline of the run, so no two pipelines share a Func, Var or RDom name."""
    return f"{name}_{next(_SERIAL)}"


def _vars(hl, *names: str) -> list:
    return [hl.Var(_unique(s)) for s in names]


# ---- matmul -----------------------------------------------------------------------------------
def _matmul(hl, a: np.ndarray, b: np.ndarray) -> Algo:
    n = a.shape[0]
    x, y = _vars(hl, "x", "y")
    A, B = hl.ImageParam(hl.Float(32), 2, _unique("A")), hl.ImageParam(hl.Float(32), 2, _unique("B"))
    k = hl.RDom([(0, n)], _unique("k"))
    prod, out = hl.Func(_unique("prod")), hl.Func(_unique("out"))
    prod[x, y] = hl.f32(0)
    prod[x, y] += A[k.x, y] * B[x, k.x]
    out[x, y] = prod[x, y]
    return Algo(out, (n, n), [A, B], [a, b], {"prod": prod, "x": x, "y": y, "k": k, "n": n})


def _matmul_hand(g: Algo) -> None:
    hl, f = _hl(), g.f
    x, y, k, prod, out, n = f["x"], f["y"], f["k"], f["prod"], g.out, f["n"]
    xi, yi, xo, yo = _vars(hl, "xi", "yi", "xo", "yo")
    # the same register tile as tessel's (derived from the Target), k innermost but for the tile
    tile = register_tile(TARGET, max_rows=n, max_cols=n)
    out.split(x, xo, xi, tile.cols).split(y, yo, yi, tile.rows).reorder(xi, yi, yo, xo).vectorize(xi, V) \
       .unroll(yi).parallel(xo)
    prod.compute_at(out, yo).vectorize(x, V).unroll(x).unroll(y)
    prod.update().reorder(x, y, k.x).vectorize(x, V).unroll(x).unroll(y).unroll(k.x, tile.k_unroll)


def halide_matmul(a: np.ndarray, b: np.ndarray, autoscheduler: str | None = None) -> PeerRun:
    return build(_matmul, _matmul_hand, [a, b], autoscheduler)


# ---- blur -------------------------------------------------------------------------------------
def _blur(hl, a: np.ndarray) -> Algo:
    h, w = a.shape
    x, y = _vars(hl, "x", "y")
    inp = hl.ImageParam(hl.Float(32), 2, _unique("inp"))
    bx, by = hl.Func(_unique("bx")), hl.Func(_unique("by"))
    third = hl.f32(1.0 / 3.0)
    bx[x, y] = (inp[x, y] + inp[x + 1, y] + inp[x + 2, y]) * third
    by[x, y] = (bx[x, y] + bx[x, y + 1] + bx[x, y + 2]) * third
    return Algo(by, (h - 2, w - 2), [inp], [a], {"bx": bx, "x": x, "y": y, "w": w})


def _blur_hand(g: Algo) -> None:
    hl, f = _hl(), g.f
    x, y, bx, by = f["x"], f["y"], f["bx"], g.out
    yo, yi = _vars(hl, "yo", "yi")
    # row strips as tessel's (the fastest of Halide's classic blur schedules measured; the
    # 256x32 tiles of the Halide paper were ~20% slower), as many rows as tessel's strip
    by.split(y, yo, yi, strip_rows(TARGET, (f["w"] - 2) * 4, halo=2)).parallel(yo).vectorize(x, V)
    bx.compute_at(by, yo).vectorize(x, V)


def halide_blur(a: np.ndarray, autoscheduler: str | None = None) -> PeerRun:
    return build(_blur, _blur_hand, [a], autoscheduler)


# ---- conv2d -----------------------------------------------------------------------------------
def _conv2d(hl, xa: np.ndarray, wa: np.ndarray) -> Algo:
    """A square kernel (3x3, 1x1), stride 1, zero padding that keeps the size."""
    _, c, h, w = xa.shape
    k, kk = wa.shape[0], wa.shape[2]
    p = kk // 2
    x, y, co, n = _vars(hl, "x", "y", "co", "n")
    X = hl.ImageParam(hl.Float(32), 4, _unique("X"))  # X[x, y, c, n]
    W = hl.ImageParam(hl.Float(32), 4, _unique("W"))  # W[rx, ry, c, k]
    padded = hl.BoundaryConditions.constant_exterior(X, 0.0, [(0, w), (0, h)]) if p else None
    src = padded if p else X
    r = hl.RDom([(0, c), (0, kk), (0, kk)], _unique("r"))
    conv, out = hl.Func(_unique("conv")), hl.Func(_unique("out"))
    conv[x, y, co, n] = hl.f32(0)
    conv[x, y, co, n] += src[x + r.z - p, y + r.y - p, r.x, n] * W[r.z, r.y, r.x, co]
    out[x, y, co, n] = conv[x, y, co, n]
    return Algo(out, (1, k, h, w), [X, W], [xa, wa],
                {"conv": conv, "padded": padded, "r": r, "x": x, "y": y, "co": co, "n": n, "k": k, "w": w, "h": h, "kk": kk})


def _conv2d_hand(g: Algo) -> None:
    hl, f = _hl(), g.f
    x, y, co, n, r, conv, out = f["x"], f["y"], f["co"], f["n"], f["r"], f["conv"], g.out
    tile, along, yb = stencil_tile(TARGET, f["k"], f["w"], f["h"], f["kk"] ** 2)  # tessel's conv2d tile
    xb, kb = along * tile.lanes, tile.rows
    xo, xi, yo, yi, cho, chi = _vars(hl, "xo", "xi", "yo", "yi", "cho", "chi")
    # a register tile like tessel's: kb output channels x yb rows x xb pixels, accumulated in
    # registers, the window unrolled, bands of rows for the threads (reading through the
    # boundary condition instead of a padded copy ran at a tenth)
    xb = xb if f["w"] >= xb else V  # Halide shifts a partial last tile inwards: it must fit the row
    yb = yb if f["h"] >= yb else 1
    out.split(x, xo, xi, xb).split(y, yo, yi, yb).split(co, cho, chi, kb) \
       .reorder(xi, yi, chi, xo, cho, yo, n).vectorize(xi, V).unroll(yi).unroll(chi).parallel(yo)
    conv.compute_at(out, xo).vectorize(x, V).unroll(y).unroll(co)
    conv.update().reorder(x, y, co, r.z, r.y, r.x).vectorize(x, V).unroll(y).unroll(co).unroll(r.z).unroll(r.y)
    padded = f["padded"]
    if padded is not None:
        padded.compute_root().parallel(padded.args()[2])  # padding materialized first, like tessel's Xp stage


def halide_conv2d(xa: np.ndarray, wa: np.ndarray, autoscheduler: str | None = None) -> PeerRun:
    return build(_conv2d, _conv2d_hand, [xa, wa], autoscheduler)


def _depthwise(hl, xa: np.ndarray, wa: np.ndarray) -> Algo:
    """3x3 depthwise: each channel with its own filter ``wa[c, 3, 3]``, zero padding 1."""
    _, c, h, w = xa.shape
    x, y, ch, n = _vars(hl, "x", "y", "ch", "n")
    X = hl.ImageParam(hl.Float(32), 4, _unique("X"))  # X[x, y, c, n]
    W = hl.ImageParam(hl.Float(32), 3, _unique("W"))  # W[rx, ry, c]
    padded = hl.BoundaryConditions.constant_exterior(X, 0.0, [(0, w), (0, h)])
    r = hl.RDom([(0, 3), (0, 3)], _unique("r"))
    dw, out = hl.Func(_unique("dw")), hl.Func(_unique("out"))
    dw[x, y, ch, n] = hl.f32(0)
    dw[x, y, ch, n] += padded[x + r.x - 1, y + r.y - 1, ch, n] * W[r.x, r.y, ch]
    out[x, y, ch, n] = dw[x, y, ch, n]
    return Algo(out, (1, c, h, w), [X, W], [xa, wa])


def _no_hand_schedule(g: Algo) -> None:
    raise PeerUnavailable("no hand schedule")


def halide_depthwise(xa: np.ndarray, wa: np.ndarray, autoscheduler: str | None = None) -> PeerRun:
    """The autoschedulers only: there is no hand schedule of the depthwise conv in Halide here."""
    return build(_depthwise, _no_hand_schedule, [xa, wa], autoscheduler)


# ---- the row kernels: softmax, layernorm, row sum ----------------------------------------------
def _reduce(hl, expr_of, cols: int, name: str, y, combine: str = "sum"):
    """A row reduction over the ``cols`` columns, plainly (the hand schedule factors it), and
    its reduction domain."""
    r = hl.RDom([(0, cols)], _unique(f"r{name}"))
    red = hl.Func(_unique(name))
    red[y] = hl.f32(0) if combine == "sum" else hl.f32(-np.inf)
    if combine == "sum":
        red[y] += expr_of(r.x)
    else:
        red[y] = hl.max(red[y], expr_of(r.x))
    return red, r


def _vector_partials(hl, reduction, y) -> None:
    """The hand schedule of a row reduction: partial results over k % PARTIALS, in vectors,
    then those combined (tessel's rfactor)."""
    red, r = reduction
    u = hl.Var(_unique("u"))
    ri, ro = hl.RVar(_unique("ri")), hl.RVar(_unique("ro"))
    intm = red.update().split(r.x, ro, ri, PARTIALS).rfactor(ri, u)
    intm.compute_at(red, y).vectorize(u, V)
    intm.update().vectorize(u, V)


def _rows_hand(g: Algo) -> None:
    """One row at a time (every stage computed at the output's row), rows among threads,
    element-wise work in vectors, the row reductions factored into PARTIALS lanes."""
    hl, f = _hl(), g.f
    x, y, out = f["x"], f["y"], g.out
    for red in f["reductions"]:
        _vector_partials(hl, red, y)
    out.parallel(y).vectorize(x, V)
    for s in f["stages"]:
        s.compute_at(out, y)
        if s.dimensions() == 2:
            s.vectorize(x, V)


def _rows(hl, a: np.ndarray, extra: list[np.ndarray], define) -> Algo:
    rows, cols = a.shape
    x, y = _vars(hl, "x", "y")
    A = hl.ImageParam(hl.Float(32), 2, _unique("A"))
    params = [A] + [hl.ImageParam(hl.Float(32), 1, _unique(f"p{k}")) for k in range(len(extra))]
    out, stages, reductions = define(hl, x, y, cols, A, params[1:])
    return Algo(out, (rows, cols), params, [a, *extra],
                {"x": x, "y": y, "stages": stages, "reductions": reductions})


def _softmax(hl, a: np.ndarray) -> Algo:
    def define(hl, x, y, cols, A, _):
        m = _reduce(hl, lambda k: A[k, y], cols, "m", y, "max")
        e = hl.Func(_unique("e"))
        e[x, y] = hl.exp(A[x, y] - m[0][y])
        s = _reduce(hl, lambda k: e[k, y], cols, "s", y)
        out = hl.Func(_unique("out"))
        out[x, y] = e[x, y] / s[0][y]
        return out, [m[0], e, s[0]], [m, s]

    return _rows(hl, a, [], define)


def halide_softmax(a: np.ndarray, autoscheduler: str | None = None) -> PeerRun:
    return build(_softmax, _rows_hand, [a], autoscheduler)


def _layernorm(eps: float):
    def algo(hl, a: np.ndarray, g: np.ndarray, b: np.ndarray) -> Algo:
        def define(hl, x, y, cols, A, params):
            G, Bt = params
            s1 = _reduce(hl, lambda k: A[k, y], cols, "s1", y)
            mu = hl.Func(_unique("mu"))
            mu[y] = s1[0][y] / float(cols)
            s2 = _reduce(hl, lambda k: (A[k, y] - mu[y]) * (A[k, y] - mu[y]), cols, "s2", y)
            rs = hl.Func(_unique("rs"))
            rs[y] = 1.0 / hl.sqrt(s2[0][y] / float(cols) + hl.f32(eps))
            out = hl.Func(_unique("out"))
            out[x, y] = (A[x, y] - mu[y]) * rs[y] * G[x] + Bt[x]
            return out, [s1[0], mu, s2[0], rs], [s1, s2]

        return _rows(hl, a, [g, b], define)

    return algo


def halide_layernorm(a: np.ndarray, g: np.ndarray, b: np.ndarray, eps: float,
                     autoscheduler: str | None = None) -> PeerRun:
    return build(_layernorm(eps), _rows_hand, [a, g, b], autoscheduler)


def _row_sum(hl, a: np.ndarray) -> Algo:
    rows, cols = a.shape
    y = hl.Var(_unique("y"))
    A = hl.ImageParam(hl.Float(32), 2, _unique("A"))
    red, r = _reduce(hl, lambda k: A[k, y], cols, "rs", y)
    return Algo(red, (rows,), [A], [a], {"y": y, "r": r})


def _row_sum_hand(g: Algo) -> None:
    _vector_partials(_hl(), (g.out, g.f["r"]), g.f["y"])
    g.out.parallel(g.f["y"])


def halide_row_sum(a: np.ndarray, autoscheduler: str | None = None) -> PeerRun:
    return build(_row_sum, _row_sum_hand, [a], autoscheduler)


# ---- add --------------------------------------------------------------------------------------
def _add(hl, a: np.ndarray, b: np.ndarray) -> Algo:
    x = hl.Var(_unique("x"))
    A, B = hl.ImageParam(hl.Float(32), 1, _unique("A")), hl.ImageParam(hl.Float(32), 1, _unique("B"))
    out = hl.Func(_unique("out"))
    out[x] = A[x] + B[x]
    return Algo(out, a.shape, [A, B], [a, b], {"x": x})


def _add_hand(g: Algo) -> None:
    xo, xi = _vars(_hl(), "xo", "xi")
    g.out.split(g.f["x"], xo, xi, TARGET.l2_bytes // 8).parallel(xo).vectorize(xi, V)  # tessel's chunk


def halide_add(a: np.ndarray, b: np.ndarray, autoscheduler: str | None = None) -> PeerRun:
    return build(_add, _add_hand, [a, b], autoscheduler)
