"""The cuda target's device passes and generated source: barriers exactly where threads share
data, ``__shared__`` sizes, warp shuffles for cross-thread reductions, float4 moves, fp16,
launch extents, and the refusals (work outside bound loops, oversized blocks)."""

from __future__ import annotations

import re

import pytest
from cuda_helpers import elementwise, kernels, source

import tessel
from examples.gpu import conv2d, gemm, row_reduce, softmax
from tessel import te
from tessel.errors import GpuError
from tessel.ir import expr as E
from tessel.ir import stmt as S
from tessel.ir.functor import collect
from tessel.passes.gpu import device_pipeline, is_barrier
from tessel.target import Target, parse


def _barriers(stmt) -> int:
    return len(collect(stmt, lambda n: isinstance(n, S.Evaluate) and is_barrier(n)))


def _shared_reduction(n=64, m=48):
    """A shared tile of A copied by every thread of a block, then read by each thread: a barrier."""
    A = te.placeholder((n, m), name="A")
    k = te.reduce_axis((0, m), name="k")
    B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    AS = s.cache_read(A, "shared", [B])
    bx, tx = s[B].split(B.op.axis[0], factor=16)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    s[AS].compute_at(s[B], bx)
    return s, [A, B]


def test_a_barrier_separates_the_shared_copy_from_the_reads_of_other_threads():
    s, args = _shared_reduction()
    src = source(s, args)
    assert src.count("__syncthreads();") == 1
    copy = src.index("A_shared[")  # the first store into the tile
    sync = src.index("__syncthreads();")
    read = src.index("+ A_shared[")
    assert copy < sync < read
    assert re.search(r"__shared__ __align__\(16\) float A_shared\[768\];", src)  # 16 rows x 48: the block's tile


def test_no_barrier_for_local_or_global_only_kernels():
    A = te.placeholder((256,), name="A")
    B = te.compute((256,), lambda i: A[i] * 2.0, name="B")
    s = te.create_schedule(B.op)
    AL = s.cache_read(A, "local", [B])
    bx, tx = s[B].split(B.op.axis[0], factor=64)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    s[AL].compute_at(s[B], tx)
    src = source(s, [A, B])
    assert "__syncthreads" not in src and "__shared__" not in src
    assert re.search(r"float A_local\[1\];", src)


def _hand_kernel(read_index):
    """blockIdx.x { shared S[64] { threadIdx.x { S[tx] = A[..]; B[..] = S[read_index(tx)] } } }"""
    A = S.Buffer("A", "float32", (E.IntImm(256, "int32"),))
    B = S.Buffer("B", "float32", (E.IntImm(256, "int32"),))
    sh = S.Buffer("S", "float32", (E.IntImm(64, "int32"),), scope="shared")
    bx, tx = E.Var("bx", "int32"), E.Var("tx", "int32")
    g = bx * 64 + tx
    body = S.SeqStmt([S.BufferStore(sh, E.BufferLoad(A, [g]), [tx]),
                      S.BufferStore(B, E.BufferLoad(sh, [read_index(tx)]) * 2.0, [g])])
    inner = S.For(tx, E.IntImm(0, "int32"), E.IntImm(64, "int32"), "thread_binding", body, "threadIdx.x")
    outer = S.For(bx, E.IntImm(0, "int32"), E.IntImm(4, "int32"), "thread_binding", S.Allocate(sh, inner),
                  "blockIdx.x")
    return S.PrimFunc("hand", [A, B], [], outer)


def test_a_thread_reading_back_its_own_shared_element_needs_no_barrier():
    (k,) = device_pipeline(_hand_kernel(lambda tx: tx))
    assert _barriers(k.body) == 0
    (k,) = device_pipeline(_hand_kernel(lambda tx: 63 - tx))  # another thread's element
    assert _barriers(k.body) == 1
    seq = collect(k.body, lambda n: isinstance(n, S.SeqStmt))[0].seq
    assert isinstance(seq[0], S.BufferStore) and is_barrier(seq[1])  # between the write and the read


def test_gemm_has_one_barrier_before_the_reads_and_one_at_the_end_of_each_k_step():
    s, args = gemm.schedule(128, 128, 64)
    _, (k,) = kernels(s, args)
    assert _barriers(k.body) == 2
    (ko,) = collect(k.body, lambda n: isinstance(n, S.For) and n.loop_var.name == "k.outer")
    assert is_barrier(ko.body.seq[-1])  # the next step's copy overwrites tiles this one still reads
    src = source(s, args)
    assert "__shared__ __align__(16) float A_shared[512];" in src and "__shared__ __align__(16) float B_shared[512];" in src
    # the virtual threads injected (gpu-bound's pass): one copy of each tile per k step, and each thread's
    # registers hold the 2 x 2 virtual threads' 4 x 4 tiles
    assert "float C_local[64];" in src and "float A_shared_local[8];" in src
    assert src.count("A_shared[threadIdx_y * 64 + threadIdx_x * 8 + ax1_inner]") == 1


def test_barrier_insertion_can_be_switched_off_for_the_race_detector():
    s, args = gemm.schedule(128, 128, 64)
    _, (k,) = kernels(s, args, features={"no_barriers"})
    assert _barriers(k.body) == 0


def test_cross_thread_reduction_is_warp_shuffles():
    s, args = row_reduce.schedule(64, 100)
    src = source(s, args)
    assert src.count("__shfl_down_sync(") == 5 and "__syncthreads" not in src
    for d in (16, 8, 4, 2, 1):
        assert f"red_buf1[0], {d}, 32)" in src
    assert re.search(r"if \(threadIdx_x == 0\) \{\s+B\[[^]]+\] = 0\.0f \+ red_buf1\[0\];", src)
    # the initial store went into the final one: no thread may overwrite the sum with 0 late
    assert not re.search(r"B\[[^]]+\] = 0\.0f;", src)


def test_a_reduction_over_more_than_a_warp_goes_through_shared_partials():
    s, args = row_reduce.schedule(16, 1000, threads=256, rows_per_block=1)
    src = source(s, args)
    assert "__shared__ __align__(16) float red_part1[8];" in src
    assert src.count("__syncthreads();") == 1
    assert src.count("__shfl_down_sync(") == 5 + 3  # 32 lanes, then 8 partials


def test_a_reduction_bound_to_threadIdx_y_is_refused_with_what_to_bind():
    A = te.placeholder((64, 32), name="A")
    k = te.reduce_axis((0, 32), name="k")
    B = te.compute((64,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    _, ki = s[B].split(B.op.reduce_axis[0], factor=8)
    BF = s.rfactor(B, ki)
    s[B].bind(s[B].op.axis[0], te.thread_axis("blockIdx.x"))
    s[B].bind(s[B].op.reduce_axis[0], te.thread_axis("threadIdx.y"))
    s[BF].compute_at(s[B], s[B].op.reduce_axis[0])
    with pytest.raises(GpuError, match="threadIdx.x"):
        kernels(s, [A, B])


def test_softmax_is_three_kernels_with_global_temporaries():
    s, args = softmax.schedule(8, 100)
    func, ks = kernels(s, args)
    assert len(ks) == 3
    assert [b.name for b in ks[1].params] == ["x", "max_elem", "expsum"]
    assert [b.name for b in ks[2].temporaries] == ["max_elem", "expsum"]
    src = source(s, args)
    assert src.count('extern "C" __global__') == 3


def test_aligned_vector_copies_are_float4_and_unaligned_ones_lane_by_lane():
    def copy(offset):
        A = te.placeholder((1030,), name="A")
        B = te.compute((1024,), lambda i: A[i + offset], name="B")
        s = te.create_schedule(B.op)
        bx, r = s[B].split(B.op.axis[0], factor=256)
        tx, v = s[B].split(r, factor=4)
        s[B].bind(bx, te.thread_axis("blockIdx.x"))
        s[B].bind(tx, te.thread_axis("threadIdx.x"))
        s[B].vectorize(v)
        return source(s, [A, B])

    assert "*(float4*)(B + " in copy(0) and "*(const float4*)(A + " in copy(0)
    odd = copy(1)
    assert "float4" not in odd and odd.count("B[") == 4  # one scalar store per lane


def test_conv2d_tiles_are_shared_and_local():
    s, args = conv2d.schedule(batch=32, in_channel=16, out_channel=32, in_size=6)
    src = source(s, args)
    assert "__shared__ __align__(16) float Apad_shared[256];" in src
    assert "__shared__ __align__(16) float W_shared[256];" in src
    assert "float Apad_shared_local[4];" in src and "float W_shared_local[4];" in src  # 2 per virtual thread
    assert "*(float4*)(W_shared + " in src


def test_symbolic_sizes_are_kernel_parameters_and_launch_extents():
    s, (A, B) = elementwise(te.var("n"), lambda A, i: A[i] + 1.0, 128)
    func, (k,) = kernels(s, [A, B])
    assert [v.name for v in k.scalars] == ["n"]
    assert str(k.grid[0]) == "(n + 127)//128" and k.block[0].value == 128
    src = source(s, [A, B])
    assert re.search(r"main_kernel0\(const float\* __restrict__ A, float\* __restrict__ B, int32_t n\)", src)


def test_float16_uses_cuda_fp16():
    s, args = elementwise(256, lambda A, i: A[i] * te.const(2.0, "float16"), 64, dtype="float16")
    src = source(s, args)
    assert "#include <cuda_fp16.h>" in src and "const __half* __restrict__ A" in src and "_Float16" not in src


def test_float16_spelling_leaves_user_identifiers_alone():
    """Half is spelled __half by rewriting the C printer's _Float16: only the type, so tensors
    named x_Float16 and x__half stay two parameters."""
    s, args = elementwise(256, lambda A, i: A[i] * te.const(2.0, "float16"), 64, dtype="float16",
                          name="x__half", a_name="x_Float16")
    src = source(s, args)
    assert "const __half* __restrict__ x_Float16" in src and "__half* __restrict__ x__half" in src


def test_work_outside_every_bound_loop_is_refused_naming_the_stage():
    A = te.placeholder((64,), name="A")
    B = te.compute((64,), lambda i: A[i] + 1.0, name="Bout")
    s = te.create_schedule(B.op)
    with pytest.raises(GpuError, match=r"stage 'Bout' is computed outside every thread_binding loop.*bind"):
        kernels(s, [A, B])


def test_a_block_over_1024_threads_is_refused():
    s, args = elementwise(4096, lambda A, i: A[i] + 1.0, 2048)
    with pytest.raises(GpuError, match="threadIdx.x has extent 2048, over the block limit 1024"):
        kernels(s, args)


def test_user_names_cannot_reach_the_cuda_source_as_code():
    A = te.placeholder((64,), name="threadIdx")
    B = te.compute((64,), lambda i: A[i] + 1.0, name="B */ __syncthreads(); //")
    s = te.create_schedule(B.op)
    s[B].bind(B.op.axis[0], te.thread_axis("threadIdx.x"))
    src = source(s, [A, B])
    assert "__syncthreads()" not in src
    assert "threadIdx_1" in src or re.search(r"float\* __restrict__ threadIdx\w+", src)


def test_cuda_target_strings():
    assert parse("cuda").kind == "cuda"
    assert parse("cuda -arch=sm_90").mcpu == "sm_90"
    assert str(parse("cuda -arch=sm_90")) == "cuda -arch=sm_90"
    with pytest.raises(tessel.BuildError, match="sm_70 is not supported; use one of sm_80"):
        parse("cuda -arch=sm_70")
    with pytest.raises(tessel.BuildError, match="-arch is an option of the cuda target"):
        parse("c -arch=sm_80")
    assert Target("cuda").kind == "cuda"
    # the architecture becomes nvcc's -arch, however the target was spelled
    for make in (lambda: parse("cuda -mcpu=sm_10"), lambda: Target("cuda", mcpu="sm_10"),
                 lambda: Target("cuda-sim", mcpu="-o/tmp/x")):
        with pytest.raises(tessel.BuildError, match="is not supported; use -arch= one of sm_80"):
            make()


def test_a_barrier_needed_under_a_thread_guard_is_refused():
    """Threads 60..63 skip the second loop, so a barrier in it would hang the block."""
    A = S.Buffer("A", "float32", (E.IntImm(256, "int32"),))
    B = S.Buffer("B", "float32", (E.IntImm(256, "int32"),))
    sh = S.Buffer("S", "float32", (E.IntImm(64, "int32"),), scope="shared")
    bx, t1, t2 = E.Var("bx", "int32"), E.Var("t1", "int32"), E.Var("t2", "int32")
    full = S.For(t1, E.IntImm(0, "int32"), E.IntImm(64, "int32"), "thread_binding",
                 S.BufferStore(B, E.BufferLoad(A, [bx * 64 + t1]), [bx * 64 + t1]), "threadIdx.x")
    body = S.SeqStmt([S.BufferStore(sh, E.BufferLoad(A, [bx * 64 + t2]), [t2]),
                      S.BufferStore(B, E.BufferLoad(sh, [59 - t2]), [bx * 64 + t2])])
    guarded = S.For(t2, E.IntImm(0, "int32"), E.IntImm(60, "int32"), "thread_binding", body, "threadIdx.x")
    outer = S.For(bx, E.IntImm(0, "int32"), E.IntImm(4, "int32"), "thread_binding",
                  S.Allocate(sh, S.SeqStmt([full, guarded])), "blockIdx.x")
    with pytest.raises(GpuError, match=r"shared buffer 'S' is written and then read by other threads under a condition"):
        device_pipeline(S.PrimFunc("hand", [A, B], [], outer))


def _warp_neighbours(lanes=32):
    """``B[i] = W[next lane] + W[i]`` with ``W`` in warp scope, one element per lane."""
    A = te.placeholder((256,), name="A")
    W = te.compute((256,), lambda i: A[i] * 2.0, name="W")
    B = te.compute((256,), lambda i: W[i // lanes * lanes + (i % lanes + 1) % lanes] + W[i], name="B")
    s = te.create_schedule(B.op)
    s[W].set_scope("warp")
    bx, tx = s[B].split(B.op.axis[0], factor=lanes)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    thread = te.thread_axis("threadIdx.x")
    s[B].bind(tx, thread)
    s[W].compute_at(s[B], bx)
    s[W].bind(s[W].op.axis[0], thread)
    return s, [A, B]


def test_warp_memory_is_registers_and_shuffles():
    s, args = _warp_neighbours()
    src = source(s, args)
    assert "__shared__" not in src and "__syncthreads" not in src
    assert "float W_reg[1];" in src
    # the next lane's element by a shuffle, the lane's own straight from its register
    assert "= __shfl_sync(__activemask(), W_reg[0], tsl_floormod_i32(threadIdx_x + 1, 32), 32) + W_reg[0];" in src


def test_warp_memory_wider_than_the_lanes_is_refused():
    s, args = _warp_neighbours(lanes=64)
    with pytest.raises(GpuError, match="warp buffer 'W' has 64 elements.*use scope 'shared'"):
        kernels(s, args)


def test_a_cross_thread_update_that_is_not_a_supported_reduction_is_refused():
    """Every thread adds into B[bx] but the add is not the loop's last statement: it would race."""
    A = S.Buffer("A", "float32", (E.IntImm(256, "int32"),))
    B = S.Buffer("B", "float32", (E.IntImm(8, "int32"),))
    C = S.Buffer("C", "float32", (E.IntImm(256, "int32"),))
    bx, tx = E.Var("bx", "int32"), E.Var("tx", "int32")
    g = bx * 32 + tx
    body = S.SeqStmt([S.BufferStore(B, E.BufferLoad(B, [bx]) + E.BufferLoad(A, [g]), [bx]),
                      S.BufferStore(C, E.BufferLoad(A, [g]), [g])])
    inner = S.For(tx, E.IntImm(0, "int32"), E.IntImm(32, "int32"), "thread_binding", body, "threadIdx.x")
    outer = S.For(bx, E.IntImm(0, "int32"), E.IntImm(8, "int32"), "thread_binding", inner, "blockIdx.x")
    with pytest.raises(GpuError, match=r"every thread of threadIdx.x \(loop 'tx'\) updates B\[bx\]"):
        device_pipeline(S.PrimFunc("hand", [A, B, C], [], outer))
