"""The pipeline is data (tessel/pipeline.py): two named lists of passes that lowering reads when
it runs, steps that carry their time, and instruments that watch without patching anything."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import rand

import tessel
from tessel import pipeline, te
from tessel.driver import lower_steps
from tessel.ir import stmt as S
from tessel.ir.functor import collect


def _kernel(n=37):
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0 + 1.0, name="B")
    s = te.create_schedule(B.op)
    _, i = s[B].split(B.op.axis[0], factor=8)
    s[B].vectorize(i)
    return s, [A, B]


def test_the_steps_are_the_lists_in_order_each_with_its_time():
    _, steps = lower_steps(*_kernel())
    shown = [p.name for p in (*pipeline.FRONT_PASSES, *pipeline.FAST_PASSES)
             if p.name in {st.name for st in steps}]
    assert [st.name for st in steps] == shown
    assert {"schedule_ops", "storage_flatten", "loop_partition", "vectorize", "index_dtype"} <= set(shown)
    assert all(st.seconds >= 0 for st in steps) and sum(st.seconds for st in steps) > 0


def test_trace_prints_each_step_with_its_time(capsys):
    tessel.lower(*_kernel(), trace=True)
    out = capsys.readouterr().out
    heads = [line for line in out.splitlines() if line.startswith("---- after ")]
    assert heads[0].startswith("---- after schedule_ops (") and heads[0].endswith(" ms) ----")
    assert heads[-1].startswith("---- after index_dtype (")


def test_an_instrument_sees_every_step_and_each_lowered_front():
    seen, fronts = [], []

    class Watch(pipeline.Instrument):
        def after_pass(self, step):
            seen.append(step.name)

        def after_front(self, sch, args, func, lower_again):
            fronts.append(func)
            again = lower_again(sch, args)  # lowering the same schedule again gives the same loops
            assert str(again.body) == str(func.body)

    watch = Watch()
    pipeline.INSTRUMENTS.append(watch)
    try:
        _, steps = lower_steps(*_kernel())
    finally:
        pipeline.INSTRUMENTS.remove(watch)
    assert len(fronts) == 1  # the lowering an instrument asked for is not reported again
    front_names = [p.name for p in pipeline.FRONT_PASSES]
    last = pipeline.TARGET_PASSES["c"][-1].name  # the target's own passes come last, seen even when they change nothing
    assert seen[:4] == front_names and seen[-1] == last  # the repeat's passes are seen as well
    lower_steps(*_kernel())
    assert len(fronts) == 1  # removed: told nothing more


@pytest.mark.parametrize("target", ["c", "python"])
def test_a_pass_added_to_the_list_runs_and_its_code_is_not_taken_from_the_memo(monkeypatch, target):
    """A pass that doubles every stored value: the kernel computes 2*(2a + 1), on every build (a
    pipeline other than tessel's own never reuses code remembered under tessel's)."""
    runs = []

    def double(stmt, ctx):
        runs.append(1)

        def twice(n):
            if isinstance(n, S.BufferStore):
                return S.BufferStore(n.buffer, n.value * 2.0, n.indices)
            return None

        from tessel.ir.functor import ir_transform
        return ir_transform(stmt, None, twice)

    extra = pipeline.Pass("double_stores", double, (double,))
    monkeypatch.setattr(pipeline, "FAST_PASSES", (*pipeline.FAST_PASSES[:-1], extra, pipeline.FAST_PASSES[-1]))
    assert not pipeline.standard()
    a = rand(37)
    for k in (1, 2):
        f = tessel.build(*_kernel(), target=target)
        b = np.zeros(37, dtype=np.float32)
        f(a, b)
        np.testing.assert_allclose(b, (a * 2 + 1) * 2, rtol=1e-6)
        assert len(runs) == k
    _, steps = lower_steps(*_kernel())
    assert [st.name for st in steps][-2:] == ["double_stores", "index_dtype"]
    assert collect(steps[-1].ir, lambda n: isinstance(n, S.BufferStore))


def test_a_device_pass_added_to_the_list_runs_on_every_kernel(monkeypatch):
    """The GPU targets' per-kernel passes are data too: a pass added to DEVICE_PASSES sees each
    kernel of a launch sequence, after the launch check and before the generator."""
    from gpu_cases import softmax_launches

    from tessel.passes import gpu

    seen = []
    extra = pipeline.Pass("count_kernels", lambda k, t: (seen.append(k.name), k)[1], ())
    monkeypatch.setattr(gpu, "DEVICE_PASSES", (*gpu.DEVICE_PASSES, extra))
    s, args, inputs, want = softmax_launches()
    f = tessel.build(s, args, target="cuda-sim")
    out = np.zeros_like(want[0])
    f(*inputs, out)
    np.testing.assert_allclose(out, want[0], rtol=1e-5)
    assert len(seen) >= 2 and len(set(seen)) == len(seen)  # softmax launches several kernels, each once


def test_a_pass_function_rebound_by_name_is_another_pipeline(monkeypatch):
    """The lists call their functions by name: rebinding one here is a pipeline of its own, whose
    code is never remembered under tessel's key (the review found the disk memo handing it back to
    a later plain build)."""
    assert pipeline.standard()
    real = pipeline.unroll
    monkeypatch.setattr(pipeline, "unroll", lambda stmt, **kw: real(stmt, **kw))
    assert not pipeline.standard()
    monkeypatch.setattr(pipeline, "unroll", real)
    assert pipeline.standard()
    with tessel.tunables.using(max_unroll_statements=2048):  # a limit is no other pipeline: it is in the key
        assert pipeline.standard()
