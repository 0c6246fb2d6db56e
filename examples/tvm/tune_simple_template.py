"""A matrix multiplication tuned with AutoTVM's template API, as TVM's "Writing Tunable
Templates and Using the Auto-tuner" tutorial does it.

The template declares two splits (``cfg.define_split``) and a knob choosing whether the inner
loop is vectorized; ``autotvm.task.create`` makes a task of it, an ``XGBTuner`` measures a few
configs (built in parallel processes, run in an isolated one, each checked against the
unscheduled computation) and logs them; under ``apply_history_best`` the template then builds
with the best config, which is checked against NumPy here. The log lives in a temporary folder.
"""

import os
import sys
import tempfile

import numpy as np
import tvm
import tvm.testing
from tvm import autotvm, te


@autotvm.template("tutorial/matmul")
def matmul(N, L, M, dtype):
    A = te.placeholder((N, L), name="A", dtype=dtype)
    B = te.placeholder((L, M), name="B", dtype=dtype)
    k = te.reduce_axis((0, L), name="k")
    C = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)

    y, x = s[C].op.axis
    k = s[C].op.reduce_axis[0]

    cfg = autotvm.get_config()
    cfg.define_split("tile_y", y, num_outputs=2)
    cfg.define_split("tile_x", x, num_outputs=2)
    cfg.define_knob("vectorize", [0, 1])
    cfg.add_flop(2 * N * L * M)

    yo, yi = cfg["tile_y"].apply(s, C, y)
    xo, xi = cfg["tile_x"].apply(s, C, x)
    s[C].reorder(yo, xo, k, yi, xi)
    if cfg["vectorize"].val:
        s[C].vectorize(xi)
    return s, [A, B, C]


N, L, M = 48, 40, 56
task = autotvm.task.create("tutorial/matmul", args=(N, L, M, "float32"), target="llvm")
print(task.config_space)

trials = int(sys.argv[1]) if len(sys.argv) > 1 else 8
measure_option = autotvm.measure_option(builder=autotvm.LocalBuilder(timeout=20),
                                        runner=autotvm.LocalRunner(number=5, repeat=1, timeout=10))
with tempfile.TemporaryDirectory() as tmp:
    log = os.path.join(tmp, "matmul.log")
    tuner = autotvm.tuner.XGBTuner(task)
    tuner.tune(n_trial=trials, measure_option=measure_option,
               callbacks=[autotvm.callback.progress_bar(trials), autotvm.callback.log_to_file(log)])

    measured = list(autotvm.record.load_from_file(log))
    assert len(measured) == trials, len(measured)
    best_inp, best_res = min((p for p in measured if p[1].error_no == 0), key=lambda p: np.mean(p[1].costs))
    print("best config:", best_inp.config)

    with autotvm.apply_history_best(log):
        with tvm.target.Target("llvm"):
            s, arg_bufs = matmul(N, L, M, "float32")
            func = tvm.build(s, arg_bufs)

rng = np.random.default_rng(3)
a_np = rng.uniform(size=(N, L)).astype(np.float32)
b_np = rng.uniform(size=(L, M)).astype(np.float32)
c_tvm = tvm.nd.empty((N, M))
func(tvm.nd.array(a_np), tvm.nd.array(b_np), c_tvm)
tvm.testing.assert_allclose(c_np := c_tvm.numpy(), a_np @ b_np, rtol=1e-4)
print("the tuned matmul agrees with NumPy", c_np.shape)
