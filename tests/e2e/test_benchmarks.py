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

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # benchmarks/ lives at the root

from benchmarks import __main__ as harness
from benchmarks import auto_peers, kernels, machine, peer_base, peers_halide, peers_tvm, timing


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
    monkeypatch.setattr(harness, "_yardstick", lambda case, quick: (lambda: None, 8.0))
    row = harness.run_case(case, repeat=2, peers_on={"torch": False, "halide": False, "tvm": False})
    automatic = [*auto_peers.halide_names(), "halide_auto", "metaschedule"]
    assert row.notes == {p: "not installed" for p in ("torch", "halide", "tvm", *automatic)}
    assert set(row.rate) == {"tessel", "numpy", "between"} and row.build_s["tessel"] > 0
    assert row.cc_s is not None and 0 <= row.cc_s <= row.build_s["tessel"]
    assert row.cpu_s is not None and row.cpu_s[1] > 0  # the compiler ran, in a child process
    line = harness.table([row]).splitlines()[-1]
    assert line.count("not installed") == 10  # five rate cells and five ratios


# ---- the automatic peers: Halide's autoschedulers and TVM MetaSchedule ----------------------------

NO_PEERS = {"torch": False, "halide": False, "tvm": False}


def _fake_halide(wrong: str):
    """A stand-in for a Halide builder (no Halide needed): NumPy's sum, off by one under the
    autoscheduler named ``wrong``, so the harness's check is what keeps it out."""
    def build(a, b, autoscheduler=None):
        out = np.empty_like(a)

        def run():
            np.add(a, b, out=out)
            if autoscheduler == wrong:
                out[3] += 1.0
        return peer_base.PeerRun(run, lambda: out, 0.01, None if autoscheduler is None else 0.02)
    return build


def test_each_autoscheduler_is_checked_and_the_best_correct_one_is_halide_auto(monkeypatch):
    case = kernels.add(1 << 10)
    case.peers = {"halide": _fake_halide(wrong="Li2018")}
    monkeypatch.setattr(harness, "_yardstick", lambda case, quick: (lambda: None, 8.0))
    row = harness.run_case(case, repeat=2, peers_on={**NO_PEERS, "halide": True})
    assert row.notes["halide:Li2018"] == "WRONG RESULT" and "halide:Li2018" not in row.seconds
    ran = {"halide:Mullapudi2016", "halide:Adams2019"}
    assert ran <= set(row.seconds) and row.halide_auto in {"Mullapudi2016", "Adams2019"}
    assert row.seconds["halide_auto"] == min(row.seconds[n] for n in ran)
    assert row.tune_s["halide_auto"] == pytest.approx(0.03)  # its scheduling and its build
    line = harness.table([row], ms_trials=0).splitlines()[-1]
    assert f"({row.halide_auto})" in line


def test_a_missing_plugin_is_a_note_not_a_crash(monkeypatch, tmp_path):
    monkeypatch.setattr(peers_halide, "plugin_dir", lambda: tmp_path)
    with pytest.raises(peer_base.PeerUnavailable, match="Adams2019: no plugin at"):
        peers_halide.halide_add(np.zeros(8, "float32"), np.zeros(8, "float32"), autoscheduler="Adams2019")
    case = kernels.add(1 << 10)
    monkeypatch.setattr(harness, "_yardstick", lambda case, quick: (lambda: None, 8.0))
    row = harness.run_case(case, repeat=2, peers_on={**NO_PEERS, "halide": True})
    for name in auto_peers.halide_names():
        assert row.notes[name].startswith(f"{name.split(':')[1]}: no plugin at {tmp_path}")
    assert "halide_auto" not in row.seconds and "no plugin at" in row.notes["halide_auto"]
    assert {"tessel", "numpy"} <= set(row.seconds)  # the run went on


def test_metaschedule_says_which_packages_it_lacks(monkeypatch):
    # every other module present, whatever this machine has installed (CI has no peers)
    monkeypatch.setattr(peers_tvm.importlib.util, "find_spec",
                        lambda name, *a: None if name in ("xgboost", "cloudpickle") else object())
    assert peers_tvm.metaschedule_missing() == "needs cloudpickle, xgboost"
    with pytest.raises(peer_base.PeerUnavailable, match="needs cloudpickle, xgboost"):
        peers_tvm.metaschedule(None, 4)
    row = harness.Row("add", "2^10", "GB/s", "2")
    case = kernels.add(1 << 10)
    assert auto_peers.contenders(case, [], row, {"tvm": True, "halide": False}, ms_trials=4) == {}
    assert row.notes["metaschedule"] == "needs cloudpickle, xgboost"


def test_metaschedule_off_and_peers_missing_are_notes_and_the_header_states_the_trials():
    case = kernels.add(1 << 10)
    off, absent = harness.Row("add", "2^10", "GB/s", "2"), harness.Row("add", "2^10", "GB/s", "2")
    peers_on = {"tvm": True, "halide": False}
    if peers_tvm.metaschedule_missing() is None:
        assert auto_peers.contenders(case, [], off, peers_on, ms_trials=0) == {}
        assert off.notes["metaschedule"] == "off"
    assert auto_peers.contenders(case, [], absent, NO_PEERS, ms_trials=8) == {}
    assert absent.notes["metaschedule"] == absent.notes["halide:Adams2019"] == "not installed"
    auto_peers.summarize(absent)
    assert absent.notes["halide_auto"] == "not installed"
    head = harness.table([absent], ms_trials=8).splitlines()[0]
    assert "MetaSchedule (8 trials)" in head and "tuning + build (s): auto / Halide auto / MetaSchedule" in head


def test_halide_autoschedulers_compute_numpys_values():
    """With Halide installed: every autoscheduler's schedule of the row kernels, run for real."""
    pytest.importorskip("halide")
    rng = np.random.default_rng(2)
    a, g, b = rng.standard_normal((37, 70), dtype="float32"), rng.standard_normal(70, dtype="float32"), \
        rng.standard_normal(70, dtype="float32")
    for name in peers_halide.AUTOSCHEDULERS:
        pr = peers_halide.halide_layernorm(a, g, b, 1e-5, autoscheduler=name)
        pr.run()
        mu = a.mean(1, keepdims=True)
        want = (a - mu) / np.sqrt(((a - mu) ** 2).mean(1, keepdims=True) + 1e-5) * g + b
        np.testing.assert_allclose(pr.result(), want, rtol=1e-4, atol=1e-4)
        assert pr.tune_s is not None and pr.tune_s >= 0


def test_auto_seconds_reaches_auto_schedule_and_its_time_is_reported(monkeypatch, capsys):
    case = kernels.row_sum(64)
    monkeypatch.setattr(harness, "_yardstick", lambda case, quick: (lambda: None, 8.0))
    import tessel.autosched as autosched

    seen: dict = {}
    real = autosched.auto_schedule_result

    def recording(*a, **kw):
        seen.update(kw)
        return real(*a, **kw)
    monkeypatch.setattr(autosched, "auto_schedule_result", recording)
    row = harness.run_case(case, repeat=2, peers_on=NO_PEERS, auto_budget=4, auto_seconds=1e-3)
    assert seen.get("timeout") == 1e-3 and seen.get("budget") == 4
    assert "auto" in row.seconds and "auto" not in row.notes  # checked against NumPy, then timed
    assert row.tune_s["auto"] == row.auto_s and row.auto_s > 0
    assert harness._tuning(row).startswith(f"{row.auto_s:.1f} / ")
    with pytest.raises(SystemExit):
        harness.main(["--auto-seconds", "nan", "--only", "add"])
    assert "--auto-seconds: give the seconds as a number above zero" in capsys.readouterr().err


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


class _SpinningPool:
    """A fake process whose worker threads keep ``busy`` cores spinning for ``steps`` pauses."""

    def __init__(self, steps: int, busy: float = 1.0):
        self.left, self.busy, self.cpu_s, self.now = steps, busy, 0.0, 0.0

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        if self.left > 0:
            self.cpu_s += self.busy * seconds
            self.left -= 1

    def cpu(self) -> float:
        return self.cpu_s

    def wall(self) -> float:
        return self.now


def test_settle_waits_while_a_pool_spins_and_not_after():
    pool = _SpinningPool(steps=10)  # OpenBLAS: one core busy for ~100 ms after its last call
    waited = timing.settle(0.01, 2.0, cpu=pool.cpu, sleep=pool.sleep, wall=pool.wall)
    assert pool.left == 0 and waited == pytest.approx(0.11)  # ten busy steps, then one quiet one
    quiet = _SpinningPool(steps=0)
    assert timing.settle(0.01, 2.0, cpu=quiet.cpu, sleep=quiet.sleep, wall=quiet.wall) == pytest.approx(0.01)


def test_settle_gives_up_on_a_pool_that_never_sleeps():
    pool = _SpinningPool(steps=10**9, busy=0.5)
    assert timing.settle(0.01, 0.2, cpu=pool.cpu, sleep=pool.sleep, wall=pool.wall) == pytest.approx(0.2)


def test_every_contenders_arrays_are_aligned_alike():
    """Inputs and NumPy's outputs start on a 128-byte boundary, as tessel's and the peers' do:
    a kernel's vector loads split across cache lines (NumPy's large arrays start 16 bytes past
    a page) would otherwise time the allocator, not the kernel."""
    for case in kernels.cases(quick=True):
        inputs = case.make_inputs(np.random.default_rng(0))
        out = case.numpy_fast(*inputs)()
        for a in (*inputs, out):
            assert a.ctypes.data % 128 == 0 and a.flags.c_contiguous
        assert np.all(np.isfinite(inputs[0])) and np.unique(inputs[0]).size > 1  # random, not zeros


def test_compute_bound_rows_take_their_share_of_the_peak_timed_in_their_own_rounds():
    """The peak loop timed beside the kernel is the bound of "% of peak"; the run's best peak
    stays the bound where the rounds timed none (and the one a contender may never beat)."""
    row = harness.Row("matmul", "1024", "GFLOP/s", "2", rate={"tessel": 150.0, "auto": 160.0},
                      peak=200.0, peak_rounds=180.0)
    assert harness._of_bound(row) == "83% / 89% of 180.0"
    row.peak_rounds = None
    assert harness._of_bound(row) == "75% / 80% of 200.0"
    bw = harness.Row("add", "2^24", "GB/s", "2", rate={"tessel": 30.0}, peak_rounds=180.0, copy_rate=40.0)
    assert harness._of_bound(bw) == "75% of 40.0"


def test_the_fma_yardstick_counts_the_flops_of_the_threads_it_runs_on():
    from tessel.target import host
    from tessel.target.tiles import fma_chains

    t = host()
    one, flops_1 = machine.fma_yardstick(1)
    both, flops_2 = machine.fma_yardstick(2)
    assert flops_1 == 2.0 * machine.YARD_ITERS * fma_chains(t) * t.vector_lanes("float32")
    assert flops_2 == 2 * flops_1
    assert np.isfinite(one()) and np.isfinite(both())  # the loop runs (its sum is returned, not dropped)
    assert machine._peak_loop(t) is machine._peak_loop(t)  # compiled once


def test_a_gflops_row_times_the_peak_loop_after_tessels_blocks(monkeypatch):
    calls: list[str] = []
    monkeypatch.setattr(machine, "fma_yardstick", lambda threads: (lambda: calls.append("peak"), 1e9))
    real = harness._tessel

    def tessel_logged(case, inputs):
        fn, *rest = real(case, inputs)
        return (lambda: (calls.append("tessel"), fn())[1]), *rest
    monkeypatch.setattr(harness, "_tessel", tessel_logged)
    case = kernels.matmul(64)
    numpy_fast = case.numpy_fast

    def numpy_logged(*inputs):
        fn = numpy_fast(*inputs)
        return lambda: (calls.append("numpy"), fn())[1]
    case.numpy_fast = numpy_logged
    row = harness.run_case(case, repeat=12, peers_on=NO_PEERS)
    assert row.peak_rounds is not None and row.peak_rounds > 0 and row.copy_rate is None
    blocks = [c for k, c in enumerate(calls) if k == 0 or calls[k - 1] != c]
    assert blocks.count("peak") == 6 and "numpy" in blocks  # six rounds of two calls
    assert all(blocks[k - 1] == "tessel" for k, c in enumerate(blocks) if c == "peak")  # never after NumPy's
    assert "% of" in harness.table([row]).splitlines()[-1]


def test_more_calls_make_more_rounds_in_alternating_order(monkeypatch):
    monkeypatch.setattr(timing, "settle", lambda: 0.0)
    monkeypatch.setattr(timing, "warm_up", lambda fn: None)
    seen: list[str] = []
    runners = {name: (lambda name=name: seen.append(name), None) for name in ("tessel", "numpy")}
    times, yard = timing.rounds(runners, 30, lambda: seen.append("peak"))
    assert [len(t) for t in times.values()] == [30, 30] and len(yard) == 30
    # ten rounds of 3 calls, the order reversed each round, the yardstick (one untimed call,
    # then timed ones) right after tessel's block
    one = ["tessel"] * 3 + ["peak"] * 4
    assert seen == (one + ["numpy"] * 3 + ["numpy"] * 3 + one) * 5
    _, yard = timing.rounds({"tessel": runners["tessel"]}, 6, lambda: None)
    assert len(yard) == 6 * 2  # six rounds at least, two calls a block at least


def test_the_build_growth_table_measures_each_point_in_its_own_process(capsys):
    from benchmarks import build_growth

    assert build_growth.main(["--only", "splits", "--sizes", "1,2", "--limit", "120"]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line.startswith("splits ")]
    assert [r[1] for r in rows[:2]] == ["1", "2"] and all(float(r[2]) > 0 and float(r[3]) > 0 for r in rows[:2])
    assert "growth ~ size^" in out


def test_a_point_whose_build_fails_is_a_row_and_the_table_goes_on(capsys, monkeypatch):
    """A failed point says why, the other families are still measured, and the status is 1."""
    from benchmarks import build_growth

    real = build_growth._measure
    monkeypatch.setattr(build_growth, "_measure", lambda family, size, limit: {"error": "NameError: S"}
                        if family == "chain-root" else real(family, size, limit))
    assert build_growth.main(["--only", "chain-", "--sizes", "10", "--limit", "120"]) == 1
    out = capsys.readouterr().out
    assert "chain-root         10 failed: NameError: S" in out
    assert [line.split()[0] for line in out.splitlines() if line.split()[1:2] == ["10"] and "failed" not in line] \
        == ["chain-inline", "chain-at"]


def test_between_numpy_calls_times_the_kernel_alone_each_right_after_numpys_call(monkeypatch):
    """The "between NumPy calls" column: each timed call of the kernel follows an untimed call
    of NumPy's own (nothing waits for NumPy's pool to go quiet in between), and only the kernel
    is in the time."""
    clock = [0.0]
    calls: list[str] = []
    monkeypatch.setattr(timing.time, "perf_counter", lambda: clock[0])
    monkeypatch.setattr(timing, "settle", lambda: 0.0)
    monkeypatch.setattr(timing, "warm_up", lambda fn: None)

    def kernel():
        calls.append("kernel")
        clock[0] += 0.001

    def numpy_call():
        calls.append("numpy")
        clock[0] += 0.05

    times = timing.between_calls(kernel, numpy_call, 4)
    assert times == pytest.approx([0.001] * 4)
    assert calls == ["numpy", "kernel"] * 4
    row = harness.Row("matmul", "64", "GFLOP/s", "2", seconds={"tessel": 0.001, "between": 0.002},
                      rate={"tessel": 2.0, "between": 1.0})
    head, _, line = harness.table([row]).splitlines()
    cells = [c.strip() for c in line.split("|")]
    assert cells[head.split("|").index(" between / alone ")] == "0.50x"
