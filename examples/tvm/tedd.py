"""Drawing a schedule with TEDD (TVM's tedd tutorial): a convolution, a bias and a ReLU.

The operator is written by hand (the tutorial takes it from topi): a padded 3x3 convolution
in NCHW, a per-channel bias and a ReLU, with the convolution computed at the rows of the
output and the bias inlined. ``tvm.contrib.tedd`` writes the three views (dataflow graph,
schedule tree, IterVar relationship graph) as DOT files; the kernel is checked against NumPy.
"""

import numpy as np
import tvm
import tvm.testing
from tvm import te
from tvm.contrib import tedd, utils

batch, in_channel, out_channel, size = 1, 3, 4, 10
data = te.placeholder((batch, in_channel, size, size), name="data")
weight = te.placeholder((out_channel, in_channel, 3, 3), name="weight")
bias = te.placeholder((1, out_channel, 1, 1), name="bias")
padded = te.compute(
    (batch, in_channel, size + 2, size + 2),
    lambda n, c, y, x: tvm.tir.if_then_else(
        tvm.tir.all(y >= 1, y <= size, x >= 1, x <= size), data[n, c, y - 1, x - 1], tvm.tir.const(0.0, "float32")
    ),
    name="pad",
)
rc = te.reduce_axis((0, in_channel), name="rc")
ry = te.reduce_axis((0, 3), name="ry")
rx = te.reduce_axis((0, 3), name="rx")
conv = te.compute(
    (batch, out_channel, size, size),
    lambda n, f, y, x: te.sum(padded[n, rc, y + ry, x + rx] * weight[f, rc, ry, rx], axis=[rc, ry, rx]),
    name="conv",
)
biased = te.compute(conv.shape, lambda n, f, y, x: conv[n, f, y, x] + bias[0, f, 0, 0], name="bias_add")
relu = te.compute(conv.shape, lambda n, f, y, x: te.max(biased[n, f, y, x], tvm.tir.const(0.0, "float32")),
                  name="relu")

s = te.create_schedule(relu.op)
s[padded].compute_inline()
s[biased].compute_inline()
n, f, y, x = s[relu].op.axis
xo, xi = s[relu].split(x, factor=4)
s[conv].compute_at(s[relu], y)
s[relu].vectorize(xi)

temp = utils.tempdir()
tedd.viz_dataflow_graph(s, dot_file_path=temp.relpath("dfg.dot"))
tedd.viz_schedule_tree(s, dot_file_path=temp.relpath("scheduletree.dot"))
s = s.normalize()
tedd.viz_schedule_tree(s, dot_file_path=temp.relpath("scheduletree2.dot"))
tedd.viz_itervar_relationship_graph(s, dot_file_path=temp.relpath("itervar.dot"))
for name in ("dfg.dot", "scheduletree.dot", "scheduletree2.dot", "itervar.dot"):
    text = open(temp.relpath(name)).read()
    assert text.startswith("digraph") and "relu" in text, name
    print(f"{name}: {len(text.splitlines())} lines of DOT")
assert "conv" in tedd.viz_dataflow_graph(s, output_dot_string=True)

func = tvm.build(s, [data, weight, bias, relu], "llvm")
rng = np.random.default_rng(4)
d = rng.uniform(-1, 1, size=(batch, in_channel, size, size)).astype("float32")
w = rng.uniform(-1, 1, size=(out_channel, in_channel, 3, 3)).astype("float32")
b = rng.uniform(-1, 1, size=(1, out_channel, 1, 1)).astype("float32")
out = tvm.nd.array(np.full((batch, out_channel, size, size), np.nan, "float32"))
func(tvm.nd.array(d), tvm.nd.array(w), tvm.nd.array(b), out)
p = np.pad(d, ((0, 0), (0, 0), (1, 1), (1, 1)))
want = sum(np.einsum("ncyx,fc->nfyx", p[:, :, i:i + size, j:j + size], w[:, :, i, j]) for i in range(3) for j in range(3))
tvm.testing.assert_allclose(out.numpy(), np.maximum(want + b, 0), rtol=1e-4, atol=1e-5)
