"""A candidate that raises, crashes, hangs or computes wrong values is a recorded failure; the
tuner goes on and keeps the candidate that works."""

from __future__ import annotations

import io
import subprocess

import numpy as np
from kernels import MODES

import tessel
from tessel import te
from tessel.runtime.compiler import find_compiler
from tessel.runtime.export import contract
from tessel.tune import Task, tune
from tessel.tune.measure import Measurer


def test_the_tuner_survives_every_kind_of_failure(tmp_path):
    log = tmp_path / "t.log"
    result = tune("tests/troublesome", (33,), trials=len(MODES), tuner="grid", target="c", log=log,
                  timeout=1.5, build_timeout=10, n_parallel=2, progress=io.StringIO())
    by_mode = {r.config["mode"].val: r for r in result.records}
    assert set(by_mode) == set(MODES)
    assert by_mode["ok"].ok and by_mode["ok"].costs
    assert (by_mode["raise"].kind, "cannot be built" in by_mode["raise"].error) == ("build", True)
    assert by_mode["crash"].kind == "crash" and "SIGSEGV" in by_mode["crash"].error
    assert by_mode["slow_build"].kind == "timeout" and "build" in by_mode["slow_build"].error
    assert by_mode["slow_run"].kind == "timeout" and "run" in by_mode["slow_run"].error
    assert by_mode["wrong"].kind == "wrong" and "wrong values" in by_mode["wrong"].error
    assert result.config["mode"].val == "ok" and np.isfinite(result.cost)
    assert len(log.read_text().splitlines()) == len(MODES)


def _segfaulting_library(tmp_path) -> str:
    src = tmp_path / "bad.c"
    src.write_text("int bad(void *a, void *b) { *(volatile int *)0 = 1; return 0; }\n")
    out = tmp_path / "bad.so"
    subprocess.run([find_compiler(None).path, "-shared", "-fPIC", "-o", str(out), str(src)], check=True)
    return str(out)


def test_a_kernel_that_crashes_the_runner_costs_only_itself(tmp_path):
    A = te.placeholder((16,), name="A")
    B = te.compute((16,), lambda i: A[i] + 1.0, name="B")
    task = Task(lambda cfg: (te.create_schedule(B.op), [A, B]))
    good = contract(tessel.build(te.create_schedule(B.op), [A, B], target="c"))
    bad = {**good, "lib_path": _segfaulting_library(tmp_path), "symbol": "bad", "parallel": False}
    measurer = Measurer(task, str(tmp_path), run_timeout=20)
    try:
        crashed = measurer.runner.run(bad, 1, 1)
        assert crashed["kind"] == "crash" and "SIGSEGV" in crashed["error"]
        assert measurer.runner.run(good, 2, 1)["costs"]  # a fresh runner took over
    finally:
        measurer.close()
