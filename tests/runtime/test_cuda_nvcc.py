"""Every GPU example compiles with nvcc for sm_80 and sm_90, and its module reports what nvcc
says: registers, shared memory, spills, instruction counts, an occupancy estimate. Calling a
module runs it on a CUDA device or says clearly that there is none."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
from cuda_helpers import elementwise, need_nvcc

import tessel
from examples.gpu import conv2d, gemm, row_reduce, softmax
from tessel import te
from tessel.errors import BuildError, NoDeviceError, TesselWarning
from tessel.runtime.cubin import cubin_instructions
from tessel.runtime.cuda import occupancy, parse_ptx, parse_resources

# (schedule, kwargs, shared bytes nvcc must report per kernel, kernels)
EXAMPLES = {
    "gemm": (gemm.schedule, {"n": 128, "m": 128, "k": 64}, [2 * 512 * 4]),
    "conv2d": (conv2d.schedule, {}, [2 * 256 * 4]),
    "row_reduce": (row_reduce.schedule, {"n": 64, "m": 100}, [0]),
    "row_reduce_256": (row_reduce.schedule, {"n": 16, "m": 1000, "threads": 256, "rows_per_block": 1}, [8 * 4]),
    "softmax": (softmax.schedule, {"n": 8, "m": 100}, [2 * 4, 2 * 4, 0]),
}


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_examples_compile_and_report_resources(name, arch):
    need_nvcc()
    make, kwargs, shared = EXAMPLES[name]
    s, args = make(**kwargs)
    mod = tessel.build(s, args, target=f"cuda -arch={arch}")
    assert mod.arch == arch and f".target {arch}" in mod.ptx
    assert sorted(mod.resources) == sorted(mod.symbols) and len(mod.symbols) == len(shared)
    for sym, smem in zip(mod.symbols, shared):
        r = mod.resources[sym]
        assert 0 < r["registers"] <= 255
        assert r["shared_bytes"] == smem
        assert r["spill_stores"] == 0 == r["spill_loads"]
        assert mod.sass_stats[sym]["total"] > 10
        o = mod.occupancy[sym]
        assert 0 < o["occupancy"] <= 1 and o["limited_by"] in ("warps", "blocks", "registers", "shared")
    rows = mod.figures()
    assert [r["kernel"] for r in rows] == list(mod.symbols)


def test_machine_instructions_are_read_from_the_cubin():
    need_nvcc()
    s, args = gemm.schedule(128, 128, 64)
    mod = tessel.build(s, args, target="cuda")
    (big,) = mod.figures()
    assert set(mod.sass_instructions) == set(mod.symbols)
    # every FMA of the register tile is one machine instruction, among loads, address arithmetic...
    assert big["sass_instructions"] > big["fma"] >= 64
    s, args = row_reduce.schedule(16, 1000)
    (small,) = tessel.build(s, args, target="cuda").figures()
    assert 0 < small["sass_instructions"] < big["sass_instructions"]
    with pytest.raises(BuildError, match="not a 64-bit little-endian ELF"):
        cubin_instructions(b"\x7fELF\x01\x01" + bytes(60))


def test_instruction_counts_see_the_shuffles_and_barriers():
    need_nvcc()
    s, args = row_reduce.schedule(16, 1000, threads=256, rows_per_block=1)
    (row,) = tessel.build(s, args, target="cuda").figures()
    assert row["shuffles"] == 8 and row["barriers"] >= 1
    s, args = gemm.schedule(128, 128, 64)
    (row,) = tessel.build(s, args, target="cuda").figures()
    assert row["fma"] >= 4 * 4 * 4  # the 4 x 4 register tile, per virtual thread at least
    assert row["shuffles"] == 0


def test_calling_without_a_device_says_so_and_points_at_the_simulator():
    need_nvcc()
    s, args = elementwise(1000, lambda A, i: A[i] * 2.0 + 1.0, 128)
    mod = tessel.build(s, args, target="cuda -features=no_simulator")  # the GPU or nothing
    a = np.random.default_rng(1).standard_normal(1000).astype("float32")
    b = np.full(1000, np.nan, "float32")
    try:
        mod(a, b)
    except NoDeviceError as e:
        assert "cuda-sim" in str(e)
        assert np.isnan(b).all()  # nothing was written
    else:  # a machine with a CUDA device: the values are checked
        np.testing.assert_allclose(b, a * 2 + 1, rtol=1e-6)
    assert mod.launch_dims([]) == [((8, 1, 1), (128, 1, 1))]


def test_a_call_with_no_device_runs_on_the_simulator_and_says_so():
    """TVM's GPU tutorials build for target="cuda" and call the module: with no device (or no
    nvcc) the kernels run on the fast simulator, the first call saying so; on a GPU, on it."""
    s, args = elementwise(1000, lambda A, i: A[i] * 2.0 + 1.0, 128)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always", TesselWarning)
        mod = tessel.build(s, args, target="cuda")
        a = np.random.default_rng(2).standard_normal(1000).astype("float32")
        for _ in range(2):
            b = np.full(1000, np.nan, "float32")
            mod(a, b)
            np.testing.assert_allclose(b, a * 2 + 1, rtol=1e-6)
    simulated = getattr(mod, "simulated", True)  # without nvcc the build is the simulator's kernel
    notes = [str(w.message) for w in said if "simulator" in str(w.message)]
    assert len(notes) == (1 if simulated else 0)  # once, not per call


def test_symbolic_launch_extents_are_evaluated_per_call():
    need_nvcc()
    s, args = elementwise(te.var("n"), lambda A, i: A[i] + 1.0, 64)
    mod = tessel.build(s, args, target="cuda")
    assert mod.launch_dims([1000]) == [((16, 1, 1), (64, 1, 1))]
    assert mod.occupancy["main_kernel0"]["warps_per_sm"] > 0


def test_a_second_build_comes_from_the_cache():
    need_nvcc()
    s, args = row_reduce.schedule(32, 64)
    first = tessel.build(s, args, target="cuda")
    again = tessel.build(s, args, target="cuda")
    assert again.cache_hit and again.ptx == first.ptx and again.resources == first.resources


def test_float16_compiles():
    need_nvcc()
    s, args = elementwise(256, lambda A, i: A[i] * te.const(2.0, "float16") + A[i], 64, dtype="float16")
    mod = tessel.build(s, args, target="cuda -arch=sm_90")
    assert "cuda_fp16.h" in mod.source and mod.resources["main_kernel0"]["registers"] > 0


def test_resource_and_ptx_parsers_on_known_text():
    report = ("ptxas info    : Compiling entry function 'k0' for 'sm_80'\n"
              "ptxas info    : Function properties for k0\n"
              "    16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\n"
              "ptxas info    : Used 40 registers, used 1 barriers, 2048 bytes smem, 368 bytes cmem[0]\n")
    assert parse_resources(report) == {"k0": {"registers": 40, "shared_bytes": 2048, "stack_bytes": 16,
                                              "spill_stores": 8, "spill_loads": 4}}
    ptx = ".visible .entry k0(\n)\n{\n\tld.global.f32 \t%f1, [%rd1];\n\tfma.rn.f32 \t%f2, %f1, %f1, %f1;\n" \
          "\t@%p1 bra \t$L__BB0_2;\n\tbar.sync \t0;\n}\n"
    assert parse_ptx(ptx) == {"k0": {"total": 4, "LD": 1, "FMA": 1, "BRA": 1, "BAR": 1}}


def test_occupancy_estimate_follows_the_limits():
    assert occupancy("sm_80", 256, 32, 0) == {"blocks_per_sm": 8, "warps_per_sm": 64, "occupancy": 1.0,
                                              "limited_by": "warps"}
    regs = occupancy("sm_80", 256, 128, 0)  # 128 x 32 = 4096 registers a warp: 16 warps
    assert regs["warps_per_sm"] == 16 and regs["limited_by"] == "registers"
    smem = occupancy("sm_80", 128, 32, 48 * 1024)  # 49 KiB with the reserve: 3 blocks in 164 KiB
    assert smem["blocks_per_sm"] == 3 and smem["limited_by"] == "shared"
    assert occupancy("sm_90", 128, 32, 48 * 1024)["blocks_per_sm"] == 4  # 228 KiB


def test_warp_memory_compiles_to_shuffles():
    need_nvcc()
    from test_cuda_codegen import _warp_neighbours

    s, args = _warp_neighbours()
    (row,) = tessel.build(s, args, target="cuda -arch=sm_90").figures()
    assert row["shuffles"] == 1 and row["shared_bytes"] == 0 and row["barriers"] == 0


@pytest.mark.parametrize("name", ['"); system("touch pwned"); //', "x\n#include </etc/passwd>\n", "*/ }} /*",
                                  "x\\", "\u00e9\u202e\ud800", "threadIdx", "__global__", "float4"])
def test_hostile_names_are_identifiers_or_comments_that_nvcc_compiles(name):
    """Every user name in the kernel (tensors, stages, a size, the kernel) is hostile, and the
    source still compiles: no name reached it as code, a directive or a broken comment."""
    need_nvcc()
    n = te.var(name)
    A = te.placeholder((n,), name=name)
    B = te.compute((n,), lambda i: A[i] * 2.0, name=name + ".out")
    s = te.create_schedule(B.op)
    bx, tx = s[B].split(B.op.axis[0], factor=64)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    mod = tessel.build(s, [A, B], target="cuda", name=name)
    assert mod.symbols and ".entry" in mod.ptx
    code = [ln for ln in mod.source.splitlines() if not ln.lstrip().startswith("//")]
    assert not any("system(" in ln or "</etc" in ln for ln in code)  # identifiers may read system_touch
    directives = [ln for ln in code if ln.startswith("#")]  # the headers, then each name #undef'd
    assert directives[:2] == ["#include <stdint.h>", "#include <math.h>"]
    assert all(re.fullmatch(r"#undef [A-Za-z_][A-Za-z0-9_]*", d) for d in directives[2:])
    mod.source.encode("ascii")  # names outside ASCII are escaped in comments, spelled anew in identifiers
