"""AutoTVM's spellings (``tvm.autotvm``) over tessel's tuner, beyond the tutorial example."""

from __future__ import annotations

import numpy as np
import pytest

from tessel.errors import NotOfferedError
from tessel.tvm.shim import tvm_imports


def test_a_knob_template_tunes_and_the_best_is_picked(tmp_path):
    with tvm_imports():
        import tvm
        from tvm import autotvm, te
        from tvm.autotvm.task.space import OtherOptionEntity

        @autotvm.template("tests/autotvm/scale")
        def scale(n, dtype):
            A = te.placeholder((n,), name="A", dtype=dtype)
            B = te.compute((n,), lambda i: A[i] * 2.0 + 1.0, name="B")
            s = te.create_schedule(B.op)
            cfg = autotvm.get_config()
            cfg.define_knob("tile", [1, 4, 8])
            if cfg["tile"].val > 1:
                s[B].split(B.op.axis[0], factor=cfg["tile"].val)
            return s, [A, B]

        task = autotvm.task.create("tests/autotvm/scale", args=(37, "float32"), target="llvm")
        assert len(task.config_space) == 3
        log, best_log = tmp_path / "s.log", tmp_path / "best.log"
        tuner = autotvm.tuner.GridSearchTuner(task)
        tuner.tune(n_trial=3, measure_option=autotvm.measure_option(builder="local",
                                                                    runner=autotvm.LocalRunner(number=2)),
                   callbacks=[autotvm.callback.log_to_file(str(log))])
        pairs = list(autotvm.record.load_from_file(str(log)))
        assert sorted(inp.config["tile"].val for inp, _ in pairs) == [1, 4, 8]
        assert all(res.error_no == 0 and len(res.costs) == 3 for _, res in pairs)  # LocalRunner's repeat=3
        autotvm.record.pick_best(str(log), str(best_log))
        (best_inp, _), = autotvm.record.load_from_file(str(best_log))
        assert isinstance(best_inp.config["tile"], OtherOptionEntity)
        with autotvm.apply_history_best(str(best_log)):
            s, args = scale(37, "float32")
        f = tvm.build(s, args, "llvm")
        a = tvm.nd.array(np.linspace(-1, 1, 37, dtype="float32"))
        b = tvm.nd.empty((37,))
        f(a, b)
        np.testing.assert_allclose(b.numpy(), a.numpy() * 2 + 1, rtol=1e-6)
        with pytest.raises(NotOfferedError, match="tvm.autotvm.register_topi_compute"):
            autotvm.register_topi_compute  # noqa: B018 (the attribute access is the test)
