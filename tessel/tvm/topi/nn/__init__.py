"""``tvm.topi.nn``: the neural-network operators TE programs reach for, as ``te.compute`` stages."""

from __future__ import annotations

from ....errors import DefinitionError
from ....ir import expr as E
from ....te import compute, const, exp, reduce_axis
from ....te import max as _max_reduce
from ....te import sum as _sum_reduce
from .pad import pad
from .pooling import pool2d


def relu(x):
    """``max(x, 0)``, elementwise."""
    return compute(x.shape, lambda *i: E.max_(x[i], const(0, x.dtype)), name="T_relu", tag="elemwise")


def get_pad_tuple(padding, kernel) -> tuple[int, int, int, int]:
    """TVM's padding spellings as (top, left, bottom, right): an int, (h, w), four ints, "SAME"
    (the output the input's size at stride 1) or "VALID" (none)."""
    kh, kw = (int(k) for k in kernel)
    if isinstance(padding, str):
        if padding == "VALID":
            return 0, 0, 0, 0
        if padding == "SAME":
            ph, pw = kh - 1, kw - 1
            return (ph + 1) // 2, (pw + 1) // 2, ph - (ph + 1) // 2, pw - (pw + 1) // 2
        raise DefinitionError(f"padding {padding!r}: TVM's strings are 'SAME' and 'VALID'")
    if isinstance(padding, int):
        return padding, padding, padding, padding
    padding = tuple(int(p) for p in padding)
    if len(padding) == 2:
        return padding[0], padding[1], padding[0], padding[1]
    if len(padding) == 4:
        return padding
    raise DefinitionError(f"padding {padding!r}: an int, two ints, four ints, 'SAME' or 'VALID'")


def _pair(x) -> tuple[int, int]:
    return (int(x), int(x)) if isinstance(x, int | E.IntImm) else tuple(int(v) for v in x)


def _out(size, before: int, after: int, k: int, stride: int, dilation: int):
    return E.add(E.floordiv(E.sub(E.add(E.add(size, before), after), (k - 1) * dilation + 1), stride), 1)


def _window(Input, h: int, kernel: tuple[int, int], stride, padding, dilation):
    """What both layouts of conv2d share: ``Input`` padded along its axes ``h, h + 1``, the
    output's height and width, the reduce axes over the window, strides and dilations."""
    (sh, sw), (dh, dw) = _pair(stride), _pair(dilation)
    kh, kw = kernel
    top, left, bottom, right = get_pad_tuple(padding, kernel)
    before, after = [0] * len(Input.shape), [0] * len(Input.shape)
    before[h:h + 2], after[h:h + 2] = (top, left), (bottom, right)
    padded = pad(Input, tuple(before), tuple(after), name="pad_temp")
    oh, ow = _out(Input.shape[h], top, bottom, kh, sh, dh), _out(Input.shape[h + 1], left, right, kw, sw, dw)
    ry, rx = reduce_axis((0, kh), name="ry"), reduce_axis((0, kw), name="rx")
    return padded, oh, ow, ry, rx, (sh, sw, dh, dw)


def conv2d_hwcn(Input, Filter, stride, padding, dilation, out_dtype=None):
    """Input [H, W, C, N], Filter [KH, KW, C, F] -> [OH, OW, F, N]."""
    dt = out_dtype or Input.dtype
    kernel = (int(Filter.shape[0]), int(Filter.shape[1]))
    padded, oh, ow, ry, rx, (sh, sw, dh, dw) = _window(Input, 0, kernel, stride, padding, dilation)
    rc = reduce_axis((0, Input.shape[2]), name="rc")
    return compute((oh, ow, Filter.shape[3], Input.shape[3]),
                   lambda y, x, f, n: _sum_reduce(
                       (padded[y * sh + ry * dh, x * sw + rx * dw, rc, n] * Filter[ry, rx, rc, f]).astype(dt),
                       axis=[ry, rx, rc]),
                   name="Conv2dOutput", tag="conv2d_hwcn")


def conv2d_nchw(Input, Filter, stride, padding, dilation, out_dtype=None):
    """Input [N, C, H, W], Filter [F, C, KH, KW] -> [N, F, OH, OW]."""
    dt = out_dtype or Input.dtype
    kernel = (int(Filter.shape[2]), int(Filter.shape[3]))
    padded, oh, ow, ry, rx, (sh, sw, dh, dw) = _window(Input, 2, kernel, stride, padding, dilation)
    rc = reduce_axis((0, Input.shape[1]), name="rc")
    return compute((Input.shape[0], Filter.shape[0], oh, ow),
                   lambda n, f, y, x: _sum_reduce(
                       (padded[n, rc, y * sh + ry * dh, x * sw + rx * dw] * Filter[f, rc, ry, rx]).astype(dt),
                       axis=[rc, ry, rx]),
                   name="conv2d_nchw", tag="conv2d_nchw")


def dense(data, weight, bias=None, out_dtype=None):
    """data [B, K] @ weight[O, K]^T (+ bias [O])."""
    k = reduce_axis((0, data.shape[1]), name="k")
    dt = out_dtype or data.dtype
    out = compute((data.shape[0], weight.shape[0]),
                  lambda i, j: _sum_reduce((data[i, k] * weight[j, k]).astype(dt), axis=k), name="T_dense", tag="dense")
    if bias is None:
        return out
    return compute(out.shape, lambda i, j: out[i, j] + bias[j].astype(dt), name="T_add", tag="broadcast")


def softmax(x, axis: int = -1):
    """``exp(x - max) / sum(exp(x - max))`` along ``axis`` of a 2-d tensor's last axis."""
    if len(x.shape) != 2 or axis not in (-1, 1):
        raise DefinitionError("topi.nn.softmax: tessel's topi takes a 2-d tensor along its last axis")
    n, m = x.shape
    k = reduce_axis((0, m), name="k")
    mx = compute((n,), lambda i: _max_reduce(x[i, k], axis=k), name="T_softmax_maxelem")
    ex = compute((n, m), lambda i, j: exp(x[i, j] - mx[i]), name="T_softmax_exp")
    k2 = reduce_axis((0, m), name="k2")
    sm = compute((n,), lambda i: _sum_reduce(ex[i, k2], axis=k2), name="T_softmax_expsum")
    return compute((n, m), lambda i, j: ex[i, j] / sm[i], name="T_softmax_norm", tag="softmax_output")


__all__ = ["conv2d_hwcn", "conv2d_nchw", "dense", "get_pad_tuple", "pad", "pool2d", "relu", "softmax"]
