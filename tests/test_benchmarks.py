"""The benchmark harness is honest: NumPy's timed baselines compute what its references do
(into preallocated outputs), a contender above the measured FMA peak is flagged, a peer that
is not installed is reported as such, and the table renders every case. No timing is asserted.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

import tessel

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/ lives at the root

from benchmarks import __main__ as harness
from benchmarks import kernels, machine


@pytest.mark.parametrize("case", kernels.cases(quick=True), ids=lambda c: f"{c.kernel} {c.size}")
def test_numpy_baselines_write_into_buffers_made_once_and_agree_with_the_reference(case):
    inputs = case.make_inputs(np.random.default_rng(0))
    want = case.numpy(*inputs)
    run = case.numpy_fast(*inputs)
    first = run()
    np.testing.assert_allclose(first, want, rtol=case.rtol or 1e-6, atol=max(case.atol, 1e-6))
    assert run() is first  # the same output buffer every call: no allocation is timed
    assert first.shape == case.out_shape


def _machine(peak_1t: float, peak_all: float) -> machine.Machine:
    return machine.Machine(cores=2, vector_bytes=32, vector_registers=16, fma_chains=14,
                           caches=(32 << 10, 512 << 10, 32 << 20), fma_gflops_1t=peak_1t,
                           fma_gflops_all=peak_all, copy_gbs_1t=20.0, copy_gbs_all=30.0, numpy_copy_gbs=15.0)


def test_a_contender_above_the_measured_peak_is_flagged():
    row = harness.Row("matmul", "1024", "GFLOP/s", "2", rate={"tessel": 150.0, "numpy": 161.0, "torch": 90.0})
    one = harness.Row("matmul", "1024 (1 thread)", "GFLOP/s", "1", rate={"tessel": 80.0})
    bw = harness.Row("add", "2^24", "GB/s", "2", rate={"tessel": 900.0})
    harness.flag_peaks([row, one, bw], _machine(75.0, 155.0))
    assert "numpy_peak" in row.notes and "tessel_peak" not in row.notes and "torch_peak" not in row.notes
    assert row.peak == 155.0 and one.peak == 75.0 and "tessel_peak" in one.notes
    assert bw.peak is None and not bw.notes  # bandwidth rows have the copy as their yardstick
    text = harness.table([row, one, bw])
    assert text.count("above peak") == 2 and "97% of 155.0" in text


def test_the_best_of_two_measurements_is_the_peak():
    best = machine.best_of(_machine(75.0, 120.0), _machine(70.0, 150.0))
    assert (best.fma_gflops_1t, best.fma_gflops_all) == (75.0, 150.0)


def test_missing_peers_are_reported_not_fatal(monkeypatch):
    case = kernels.add(1 << 10)
    monkeypatch.setattr(harness, "_copy_yardstick", lambda threads, quick: (lambda: None, 8.0))
    row = harness.run_case(case, repeat=2, peers_on={"torch": False, "halide": False, "tvm": False})
    assert row.notes == {"torch": "not installed", "halide": "not installed", "tvm": "not installed"}
    assert set(row.rate) == {"tessel", "numpy"} and row.build_s["tessel"] > 0
    assert row.cc_s is not None and 0 <= row.cc_s <= row.build_s["tessel"]
    assert row.cpu_s is not None and row.cpu_s[1] > 0  # the compiler ran, in a child process
    line = harness.table([row]).splitlines()[-1]
    assert line.count("not installed") == 6  # three rate cells and three ratios


def test_a_cold_build_is_cold_and_leaves_the_cache_directory_as_it_was(monkeypatch, tmp_path):
    from benchmarks import build_time
    from tessel import te

    def small():
        A = te.placeholder((8,), name="A")
        B = te.compute((8,), lambda i: A[i] * 2.0, name="B")
        kernel = tessel.build(te.create_schedule(B.op), [A, B])
        built.append((kernel.cache_hit, os.environ["TESSEL_CACHE_DIR"]))
        return kernel

    built: list = []
    monkeypatch.setenv("TESSEL_CACHE_DIR", str(tmp_path))
    for _ in range(2):
        wall, ours, cc = build_time.cold(build_time.Kernel("small", small))
        assert min(wall, ours, cc) >= 0
    assert [hit for hit, _ in built] == [False, False]  # the second build finds nothing of the first
    assert all(d != str(tmp_path) and not os.path.exists(d) for _, d in built)
    assert os.environ["TESSEL_CACHE_DIR"] == str(tmp_path)  # the caller's directory, given back
