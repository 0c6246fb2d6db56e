"""``tvm.topi.nn.pooling``: max and average pooling over the two spatial axes of any layout.

The window of output ``(y, x)`` starts at ``y * stride - pad_top`` and takes ``kernel``
samples ``dilation`` apart. Max pooling reads padding as the dtype's lowest value, so a pad
never wins; average pooling divides by the window's size (``count_include_pad``) or by the
samples that fall inside the input, counted in closed form rather than by a second
reduction, so the pool stays one stage that tensorize can match.
"""

from __future__ import annotations

from ....errors import DefinitionError
from ....ir import expr as E
from ....te import compute, const, min_value, reduce_axis
from ....te import max as _max_reduce
from ....te import sum as _sum_reduce
from ..utils import get_const_tuple
from .pad import pad

POOL_TYPES = ("max", "avg")


def _spatial_axes(layout: str, ndim: int) -> tuple[int, int]:
    """Where H and W sit in ``layout`` (``NCHW``, ``NHWC``, ``NCHW16c`` ...); they may not be split."""
    if len(layout) - sum(c.isdigit() for c in layout) != ndim or not layout.isalnum():
        raise DefinitionError(f"topi.nn.pool2d: layout {layout!r} does not describe a {ndim}-d tensor; "
                              "write one letter per axis, such as 'NCHW' or 'NHWC'")
    letters = [c for c in layout if not c.isdigit()]
    if "h" in letters or "w" in letters or "H" not in letters or "W" not in letters:
        raise DefinitionError(f"topi.nn.pool2d: layout {layout!r} must hold H and W once each, unsplit")
    return letters.index("H"), letters.index("W")


def _pair(x) -> tuple[int, int]:
    """``3`` or ``(3, 2)`` as a pair of ints."""
    return get_const_tuple((x, x) if isinstance(x, int | E.IntImm) else x)


def _inside_count(start, k: int, d: int, lo, hi):
    """How many of ``start + r*d`` for ``r`` in ``[0, k)`` lie in ``[lo, hi)``."""
    first = E.max_(E.floordiv(E.add(E.sub(lo, start), d - 1), d), 0)
    last = E.min_(E.floordiv(E.sub(E.sub(hi, 1), start), d), k - 1)
    return E.max_(E.add(E.sub(last, first), 1), 0)


def pool2d(data, kernel, stride, dilation, padding, pool_type: str, ceil_mode: bool = False,
           layout: str = "NCHW", count_include_pad: bool = True):
    """Pool ``data`` over its H and W axes; ``padding`` is (top, left, bottom, right)."""
    if pool_type not in POOL_TYPES:
        raise DefinitionError(f"topi.nn.pool2d: pool_type {pool_type!r}; write one of {POOL_TYPES}")
    n = len(data.shape)
    h, w = _spatial_axes(layout, n)
    (kh, kw), (sh, sw), (dh, dw) = _pair(kernel), _pair(stride), _pair(dilation)
    if len(padding) != 4:
        raise DefinitionError(f"topi.nn.pool2d: padding {padding!r} must be (top, left, bottom, right)")
    top, left, bottom, right = (int(p) for p in padding)
    extra_h, extra_w = (sh - 1, sw - 1) if ceil_mode else (0, 0)
    out_h = E.add(E.floordiv(E.sub(E.add(data.shape[h], top + bottom + extra_h), (kh - 1) * dh + 1), sh), 1)
    out_w = E.add(E.floordiv(E.sub(E.add(data.shape[w], left + right + extra_w), (kw - 1) * dw + 1), sw), 1)
    before, after = [0] * n, [0] * n
    before[h], before[w], after[h], after[w] = top, left, bottom + extra_h, right + extra_w
    src = data
    if any(before) or any(after):
        fill = min_value(data.dtype) if pool_type == "max" else const(0, data.dtype)
        src = pad(data, before, after, pad_value=fill, name="pad_temp")
    rh, rw = reduce_axis((0, kh), name="rv0"), reduce_axis((0, kw), name="rv1")
    shape = tuple(out_h if k == h else out_w if k == w else data.shape[k] for k in range(n))

    def window(idx):
        at = list(idx)
        at[h], at[w] = idx[h] * sh + rh * dh, idx[w] * sw + rw * dw
        return src[tuple(at)]

    if pool_type == "max":
        return compute(shape, lambda *i: _max_reduce(window(i), axis=[rh, rw]), name="pool_max", tag="pool_max")
    total = compute(shape, lambda *i: _sum_reduce(window(i), axis=[rh, rw]), name="pool_sum", tag="elemwise")

    def average(*i):
        y0, x0 = E.sub(i[h] * sh, top), E.sub(i[w] * sw, left)
        lo_h, hi_h = (-top, E.add(data.shape[h], bottom)) if count_include_pad else (0, data.shape[h])
        lo_w, hi_w = (-left, E.add(data.shape[w], right)) if count_include_pad else (0, data.shape[w])
        count = E.mul(_inside_count(y0, kh, dh, lo_h, hi_h), _inside_count(x0, kw, dw, lo_w, hi_w))
        return total[i] / E.max_(count, 1).astype(data.dtype)

    return compute(shape, average, name="pool_avg", tag="pool_avg")


__all__ = ["POOL_TYPES", "pool2d"]
