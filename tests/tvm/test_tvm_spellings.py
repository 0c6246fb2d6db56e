"""TVM's runtime spellings over tessel: tir, nd arrays and devices, targets, lower/build, Module."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import rand

import tessel
import tessel.tvm as tvm
from tessel.errors import ArgumentError, BuildError, DefinitionError, ScheduleError, TesselError
from tessel.tvm import te


def _vector_add():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute(A.shape, lambda i: A[i] * 2 + B[i], name="C")
    return A, B, C


def test_tir_builds_what_te_code_writes():
    n = tvm.tir.Var("n", "int32")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: tvm.tir.Select(A[i] > tvm.tir.const(0, "float32"), A[i],
                                                  A[tvm.tir.indexmod(i + 3, n)] * tvm.tir.FloatImm("float32", 0.5)),
                   name="B")
    C = te.compute((tvm.tir.indexdiv(n, 2),), lambda i: B[tvm.tir.truncdiv(i * 4, 2)] + B[tvm.tir.floordiv(i, 1)],
                   name="C")
    s = te.create_schedule(C.op)
    f = tvm.build(s, [A, C], "llvm")
    a = rand(31, seed=3)
    c = tvm.nd.array(np.zeros(15, "float32"))
    f(tvm.nd.array(a), c)
    b = np.where(a > 0, a, a[(np.arange(31) + 3) % 31] * 0.5)
    np.testing.assert_allclose(c.numpy(), b[np.arange(15) * 2] + b[np.arange(15)], rtol=1e-6)


def test_tir_constructors_take_tvms_argument_order():
    assert tvm.tir.IntImm("int64", 7).dtype == "int64"
    assert int(tvm.tir.IntImm("int64", 7)) == 7
    assert tvm.tir.const(1.5).dtype == "float32" and tvm.tir.const(2).dtype == "int32"
    assert tvm.tir.Cast("float64", tvm.tir.Var("x")).dtype == "float64"
    assert isinstance(tvm.tir.const(1) + tvm.tir.Var("y"), tvm.tir.Add)


def test_nd_arrays_copy_in_and_out():
    src = rand(3, 4)
    a = tvm.nd.array(src, tvm.cpu(0))
    src[0, 0] = 99.0
    assert a.numpy()[0, 0] != 99.0  # tvm.nd.array copies
    out = a.numpy()
    out[1, 1] = 42.0
    assert a.numpy()[1, 1] != 42.0  # .numpy() copies
    b = tvm.nd.empty((3, 4), "float32")
    a.copyto(b)
    np.testing.assert_array_equal(b.numpy(), a.numpy())
    assert (a.shape, a.dtype, str(a.device)) == ((3, 4), "float32", "cpu(0)")


def test_devices_are_the_cpu_and_cuda():
    assert tvm.device("llvm", 0) == tvm.cpu(0) == tvm.device("cpu")
    assert tvm.device("cuda", 0).exist  # its kernels run on the GPU or on the simulator
    other = tvm.device("rocm", 0)
    assert not other.exist
    with pytest.raises(ArgumentError, match="live on the CPU"):
        tvm.nd.array(np.zeros(3), other)
    with pytest.raises(ArgumentError, match="unknown device"):
        tvm.device("tpu")


@pytest.mark.parametrize("text, kind, mcpu, flags", [
    ("llvm", "c", None, ()),
    ("llvm -mcpu=x86-64", "c", "x86-64", ()),
    ("llvm -mattr=+avx2,-fma", "c", None, ("-mavx2", "-mno-fma")),
    ("c", "c", None, ()),
    ("python", "python", None, ()),
])
def test_target_strings_map_onto_tessels_targets(text, kind, mcpu, flags):
    t = tvm.target.Target(text, host="llvm")
    assert (t.tessel.kind, t.tessel.mcpu, t.tessel.flags) == (kind, mcpu, flags)
    assert t.kind.name == text.split()[0]


@pytest.mark.parametrize("text, match", [
    ("llvm -opt-level=3", "not one tessel honours"),
    ("llvm -mtriple=riscv64-unknown-linux", "this machine"),
    ("tpu", "unknown kind"),
])
def test_target_strings_tessel_cannot_honour_are_refused(text, match):
    with pytest.raises(BuildError, match=match):
        tvm.target.Target(text)


def test_gpu_targets_other_than_cuda_exist_but_refuse_to_build():
    t = tvm.target.Target("rocm")
    assert t.kind.name == "rocm" and t.keys == ("gpu",)
    A, B, C = _vector_add()
    with pytest.raises(BuildError, match="tessel's GPU target is CUDA"):
        tvm.build(te.create_schedule(C.op), [A, B, C], t)


def test_a_cuda_build_needs_its_loops_bound_to_threads():
    A, B, C = _vector_add()
    with pytest.raises(BuildError, match="computed outside every thread_binding loop"):
        tvm.build(te.create_schedule(C.op), [A, B, C], "cuda")


def test_build_of_a_lowered_module_is_the_lowered_kernel():
    A, B, C = _vector_add()
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=8)
    mod = tvm.lower(s, [A, B, C], name="main")
    text = str(mod)
    assert "C[" in text and text == str(mod["main"])
    assert str(tvm.lower(s, [A, B, C], simple_mode=True)) == str(mod["main"].body)
    fresh = tvm.build(mod, target="llvm -mattr=+sse2")  # no step since: built from the schedule for the target
    assert fresh.kernel.func.body is not mod["main"].body and "-msse2" in fresh.kernel.compile_flags
    s[C].vectorize(xi)  # after lowering: not in the module (as in TVM)
    assert str(mod) == text and str(tvm.lower(s, [A, B, C])) != text
    for target in ("llvm", "python"):
        f = tvm.build(mod, target=target)
        assert str(f.kernel.func.body) == str(mod["main"].body)  # the kernel as lowered then
        a, b = rand(29), rand(29, seed=1)
        c = tvm.nd.array(np.zeros(29, "float32"))
        f(tvm.nd.array(a), tvm.nd.array(b), c)
        np.testing.assert_allclose(c.numpy(), a * 2 + b, rtol=1e-6)


def test_target_in_scope_is_the_default():
    A, B, C = _vector_add()
    s = te.create_schedule(C.op)
    with tvm.target.Target("python"):
        f = tvm.build(s, [A, B, C])
    assert f.kernel.target == "python" and f.type_key == "python"
    assert tvm.target.Target.current() is None


def test_module_time_evaluator_runs_the_kernel():
    A, B, C = _vector_add()
    f = tvm.build(te.create_schedule(C.op), [A, B, C], "llvm", name="myadd")
    calls = []
    kernel = f.kernel

    class Counting:  # the kernel, counting its calls
        name = kernel.name

        def __call__(self, *arrays):
            calls.append(1)
            kernel(*arrays)

    f.kernel = Counting()
    a, b = tvm.nd.array(rand(17)), tvm.nd.array(rand(17, seed=2))
    c = tvm.nd.array(np.zeros(17, "float32"))
    res = f.time_evaluator(f.entry_name, tvm.cpu(0), number=4, repeat=3)(a, b, c)
    assert len(calls) == 1 + 4 * 3  # one warm-up call, then repeat rounds of number calls
    assert len(res.results) == 3 and res.mean > 0 and res.min <= res.mean <= res.max
    np.testing.assert_allclose(c.numpy(), a.numpy() * 2 + b.numpy(), rtol=1e-6)
    assert f["myadd"] is f and f.get_function(f.entry_name) is f
    with pytest.raises(ArgumentError, match="no function 'other'"):
        f.time_evaluator("other", tvm.cpu(0))


def test_build_defaults_and_refusals():
    A, B, C = _vector_add()
    s = te.create_schedule(C.op)
    assert tvm.build(s, [A, B, C]).kernel.name == "default_function"  # TVM's default name
    with pytest.raises(DefinitionError, match="pass the tensors"):
        tvm.build(s)
    with pytest.raises(DefinitionError, match="binds"):
        tvm.lower(s, [A, B, C], binds={A: None})
    with pytest.raises(DefinitionError, match="schedule"):
        tvm.build("not a schedule", [A])


def test_testing_assert_allclose_compares_ndarrays_and_shapes():
    a = tvm.nd.array(np.ones(4, "float32"))
    tvm.testing.assert_allclose(a, np.ones(4))
    with pytest.raises(AssertionError):
        tvm.testing.assert_allclose(a, np.ones(4) + 1e-3)
    with pytest.raises(AssertionError, match="shapes"):
        tvm.testing.assert_allclose(np.ones((4, 1)), np.ones(4))  # no broadcasting


def test_tvm_error_catches_tessels_errors():
    A, B, C = _vector_add()
    s = te.create_schedule(C.op)
    with pytest.raises(tvm.error.TVMError):
        s[C].compute_at(s[C], C.op.axis[0])
    assert issubclass(ScheduleError, tvm.error.TVMError) and tvm.error.TVMError in (TesselError,
                                                                                     getattr(tessel.errors, "TVMError", None))


def test_tedd_writes_the_three_views(tmp_path):
    A, B, C = _vector_add()
    s = te.create_schedule(C.op)
    s[C].split(C.op.axis[0], factor=4)
    for fn, name in ((tvm.contrib.tedd.viz_dataflow_graph, "dfg"), (tvm.contrib.tedd.viz_schedule_tree, "tree"),
                     (tvm.contrib.tedd.viz_itervar_relationship_graph, "itervar")):
        path = tmp_path / f"{name}.dot"
        assert fn(s, dot_file_path=str(path)) is None
        text = path.read_text()
        assert text.startswith("digraph") and text == fn(s, output_dot_string=True)
    assert "i.outer" in (tmp_path / "itervar.dot").read_text()


def test_te_is_tessels_te():
    assert tvm.te.compute is tessel.te.compute and tvm.te.create_schedule(_vector_add()[2].op).outputs
    assert not hasattr(tvm.te, "E") and not hasattr(tvm.te, "INTRINSICS")  # tessel's plumbing stays hidden


def test_tir_node_spellings_answer_isinstance_and_walks():
    x = tvm.tir.Var("x", "float32")
    assert isinstance(x, tvm.tir.Var) and isinstance(tvm.tir.IntImm("int64", 3), tvm.tir.IntImm)
    assert not isinstance(x, tvm.tir.IntImm) and isinstance(tvm.tir.Select(x > 0, x, -x), tvm.tir.Select)
    A, B, C = _vector_add()
    s = te.create_schedule(C.op)
    s[C].split(C.op.axis[0], factor=4)
    loops = []
    tvm.tir.stmt_functor.post_order_visit(tvm.lower(s, [A, B, C])["main"].body,
                                          lambda node: loops.append(node) if isinstance(node, tvm.tir.For) else None)
    assert {str(f.loop_var) for f in loops} >= {"i.outer", "i.inner"}


def test_rank_zero_arrays_stay_rank_zero_through_a_kernel():
    A = te.placeholder((), name="A")
    B = te.compute((), lambda: A() * 3.0, name="B")
    f = tvm.build(te.create_schedule(B.op), [A, B], "llvm")
    a, b = tvm.nd.array(np.array(1.5, "float32")), tvm.nd.array(np.array(0.0, "float32"))
    assert a.shape == () and a.ndim == 0
    f(a, b)
    assert b.numpy().shape == () and b.numpy() == np.float32(4.5)


def test_te_tensor_and_schedule_modules_hold_the_classes():
    A, B, C = _vector_add()
    assert isinstance(A.op, tvm.te.tensor.PlaceholderOp) and isinstance(C.op, tvm.te.tensor.ComputeOp)
    assert isinstance(C, tvm.te.tensor.Tensor)
    seen = []
    D = te.extern(A.shape, [A], lambda ins, outs: seen.append(ins[0]) or tvm.tir.call_packed("f", ins[0].data))
    assert D.shape == A.shape and isinstance(seen[0], tvm.te.schedule.Buffer)


def test_tir_stmt_holds_the_statement_classes():
    A, B, C = _vector_add()
    s = te.create_schedule(C.op)
    body = tvm.lower(s, [A, B, C])["main"].body
    fors = []
    tvm.tir.stmt_functor.post_order_visit(body, lambda n: fors.append(n) if isinstance(n, tvm.tir.stmt.For) else None)
    assert fors and tvm.tir.stmt.For is tessel.ir.stmt.For and tvm.tir.stmt.SeqStmt is tessel.ir.stmt.SeqStmt
