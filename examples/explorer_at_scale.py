"""A schedule of the size real kernels reach: twelve stages and more than forty steps.

A dense layer with a bias, ReLU, a row softmax and a smoothing filter, with caches, tiles,
fusion and annotations. It is the explorer's test of scale (the pictures stay readable, stages
collapse, the IR pane is resized and searched); step through it with

    tessel explain examples/explorer_at_scale.py -o scale.html
"""

import numpy as np

import tessel
from tessel import te

N, K, M = 48, 40, 64
X = te.placeholder((N, K), name="X")
W = te.placeholder((K, M), name="W")
bias = te.placeholder((M,), name="bias")

Xs = te.compute((N, K), lambda i, k: X[i, k] * 0.5, name="Xs")
r = te.reduce_axis((0, K), name="r")
Y = te.compute((N, M), lambda i, j: te.sum(Xs[i, r] * W[r, j], axis=r), name="Y")
Yb = te.compute((N, M), lambda i, j: Y[i, j] + bias[j], name="Yb")
R = te.compute((N, M), lambda i, j: te.max(Yb[i, j], 0.0), name="R")
c = te.reduce_axis((0, M), name="c")
Mx = te.compute((N,), lambda i: te.max(R[i, c], axis=c), name="Mx")
E = te.compute((N, M), lambda i, j: te.exp(R[i, j] - Mx[i]), name="E")
d = te.reduce_axis((0, M), name="d")
Sm = te.compute((N,), lambda i: te.sum(E[i, d], axis=d), name="Sm")
P = te.compute((N, M), lambda i, j: E[i, j] / Sm[i], name="P")
Q = te.compute((N, M - 2), lambda i, j: (P[i, j] + P[i, j + 1] + P[i, j + 2]) / 3, name="Q")
O = te.compute((N, M - 2), lambda i, j: Q[i, j] * 2.0, name="O")

s = te.create_schedule(O.op)
s[Xs].compute_inline()
YL = s.cache_write(Y, "local")
WL = s.cache_read(W, "local", readers=[YL])
s[Yb].compute_inline()
s[R].compute_inline()

# the dense layer: row tiles, a register tile, the weights copied per row tile
io, ii = s[Y].split(s[Y].op.axis[0], factor=8)
jo, ji = s[Y].split(s[Y].op.axis[1], factor=16)
s[Y].reorder(io, jo, ii, ji)
s[Y].parallel(io)
s[YL].compute_at(s[Y], jo)
ro, ri = s[YL].split(s[YL].op.reduce_axis[0], factor=4)
s[YL].reorder(ro, ri, *s[YL].op.axis)
s[YL].vectorize(s[YL].op.axis[1])
s[WL].compute_at(s[YL], ro)
s[WL].vectorize(s[WL].op.axis[1])
s[YL].unroll(ri)
s[Y].vectorize(ji)

# the softmax per row, fused under the output's row loop
oi, oj = s[O].op.axis
oo, oin = s[O].split(oi, factor=4)
s[O].parallel(oo)
s[Q].compute_at(s[O], oin)
s[P].compute_at(s[O], oin)
s[Sm].compute_at(s[O], oin)
s[E].compute_at(s[O], oin)
s[Mx].compute_at(s[O], oin)
ojo, oji = s[O].split(oj, factor=8)
s[O].vectorize(oji)
s[Q].vectorize(s[Q].split(s[Q].op.axis[1], factor=8)[1])
s[P].vectorize(s[P].split(s[P].op.axis[1], factor=8)[1])
s[E].vectorize(s[E].split(s[E].op.axis[1], factor=8)[1])
s[E].unroll(s[E].leaf_iter_vars[-2])
do, di = s[Sm].split(s[Sm].op.reduce_axis[0], factor=8)
s[Sm].unroll(di)
co, ci = s[Mx].split(s[Mx].op.reduce_axis[0], factor=8)
s[Mx].unroll(ci)
s[O].reorder(oo, oin, ojo, oji)
s[O].unroll(ojo)
s[Y].unroll(ii)

if __name__ == "__main__":
    f = tessel.build(s, [X, W, bias, O])
    rng = np.random.default_rng(0)
    x, w, b = (rng.standard_normal(a).astype("float32") for a in ((N, K), (K, M), (M,)))
    y = np.maximum((x * 0.5) @ w + b, 0)
    e = np.exp(y - y.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    want = (p[:, :-2] + p[:, 1:-1] + p[:, 2:]) / 3 * 2
    got = np.empty((N, M - 2), "float32")
    f(x, w, b, got)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
    print(f"{len(s.stages)} stages, {len(s.history)} steps: values match NumPy")
