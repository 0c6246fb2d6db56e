"""Recurrences with ``te.scan`` (TVM's scan tutorial): a cumulative sum over rows (on the CPU,
then built for ``"cuda"`` with the host launching one kernel per step), a scan whose update has
two stages, and a scan carrying two states. Each is checked against NumPy.
"""

import numpy as np
import tvm
import tvm.testing
from tvm import te

dev = tvm.cpu(0)
rng = np.random.default_rng(8)
mm, nn = 11, 19

# the cumulative sum along the first axis: state[t] = state[t-1] + X[t]
m = te.var("m")
n = te.var("n")
X = te.placeholder((m, n), name="X")
s_state = te.placeholder((m, n))
s_init = te.compute((1, n), lambda _, i: X[0, i])
s_update = te.compute((m, n), lambda t, i: s_state[t - 1, i] + X[t, i])
s_scan = tvm.te.scan(s_init, s_update, s_state, inputs=[X])
s = te.create_schedule(s_scan.op)
xo, xi = s[s_update].split(s_update.op.axis[1], factor=4)
print(tvm.lower(s, [X, s_scan], simple_mode=True))
fscan = tvm.build(s, [X, s_scan], "llvm", name="myscan")
a_np = rng.uniform(size=(mm, nn)).astype(s_scan.dtype)
a = tvm.nd.array(a_np, dev)
b = tvm.nd.array(np.zeros((mm, nn), dtype=s_scan.dtype), dev)
fscan(a, b)
tvm.testing.assert_allclose(b.numpy(), np.cumsum(a_np, axis=0), rtol=1e-5)

# the same scan on a GPU: the init and each step one kernel over blocks of 256 threads, the steps
# launched one after another by the host (on the simulator where there is no GPU)
s = te.create_schedule(s_scan.op)
for stage in (s_init, s_update):
    xo, xi = s[stage].split(stage.op.axis[1], factor=256)
    s[stage].bind(xo, te.thread_axis("blockIdx.x"))
    s[stage].bind(xi, te.thread_axis("threadIdx.x"))
fscan = tvm.build(s, [X, s_scan], "cuda", name="myscan")
gpu = tvm.cuda(0)
b = tvm.nd.array(np.zeros((mm, nn), dtype=s_scan.dtype), gpu)
fscan(tvm.nd.array(a_np, gpu), b)
tvm.testing.assert_allclose(b.numpy(), np.cumsum(a_np, axis=0), rtol=1e-5)

# an update of two stages, the first computed inside the second
m = te.var("m")
n = te.var("n")
X = te.placeholder((m, n), name="X")
s_state = te.placeholder((m, n))
s_init = te.compute((1, n), lambda _, i: X[0, i])
s_update_s1 = te.compute((m, n), lambda t, i: s_state[t - 1, i] * 2, name="s1")
s_update_s2 = te.compute((m, n), lambda t, i: s_update_s1[t, i] + X[t, i], name="s2")
s_scan = tvm.te.scan(s_init, s_update_s2, s_state, inputs=[X])
s = te.create_schedule(s_scan.op)
xo, xi = s[s_update_s2].split(s_update_s2.op.axis[1], factor=32)
s[s_update_s1].compute_at(s[s_update_s2], xo)
print(tvm.lower(s, [X, s_scan], simple_mode=True))
want = np.empty_like(a_np)
want[0] = a_np[0]
for t in range(1, mm):
    want[t] = want[t - 1] * 2 + a_np[t]
b = tvm.nd.array(np.zeros((mm, nn), dtype="float32"), dev)
tvm.build(s, [X, s_scan], "llvm")(a, b)
tvm.testing.assert_allclose(b.numpy(), want, rtol=1e-5)

# two states updated together: state1 follows X, state2 follows state1
m = te.var("m")
n = te.var("n")
l = te.var("l")
X = te.placeholder((m, n), name="X")
s_state1 = te.placeholder((m, n))
s_state2 = te.placeholder((m, l))
s_init1 = te.compute((1, n), lambda _, i: X[0, i])
s_init2 = te.compute((1, l), lambda _, i: 0.0)
s_update1 = te.compute((m, n), lambda t, i: s_state1[t - 1, i] + X[t, i])
s_update2 = te.compute((m, l), lambda t, i: s_state2[t - 1, i] + s_state1[t - 1, 0])
s_scan1, s_scan2 = tvm.te.scan([s_init1, s_init2], [s_update1, s_update2], [s_state1, s_state2])
s = te.create_schedule(s_scan1.op)
print(tvm.lower(s, [X, s_scan1, s_scan2], simple_mode=True))
ll = 5
b1 = tvm.nd.array(np.zeros((mm, nn), dtype="float32"), dev)
b2 = tvm.nd.array(np.zeros((mm, ll), dtype="float32"), dev)
tvm.build(s, [X, s_scan1, s_scan2], "llvm")(a, b1, b2)
cum = np.cumsum(a_np, axis=0)
want2 = np.zeros((mm, ll), dtype="float32")
for t in range(1, mm):
    want2[t] = want2[t - 1] + cum[t - 1, 0]
tvm.testing.assert_allclose(b1.numpy(), cum, rtol=1e-5)
tvm.testing.assert_allclose(b2.numpy(), want2, rtol=1e-5)
