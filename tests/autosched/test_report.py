"""auto_schedule says what it chose and why (tessel/autosched/report.py): a line per stage, its
facts read off the bounded schedule (they agree with the loops lowering makes), and the schedule
as Python before them."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from tessel import te
from tessel.autosched import auto_schedule_result
from tessel.target import Target

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # benchmarks/ lives at the root

from benchmarks import definitions

AVX2 = Target("c", vector_bytes=32, vector_registers=16, fma_units=2, caches=(32 << 10, 512 << 10, 8 << 20))


def _line(lines: list[str], stage: str) -> str:
    return next(x for x in lines if x.startswith(f"{stage}: "))


def test_a_row_kernel_names_its_threads_its_vectors_and_why():
    d = definitions.softmax(37, 203)
    r = auto_schedule_result(d.outputs, target=AVX2, budget=0)
    lines = r.summary()
    assert lines[0] == "auto_schedule: every rule applied"
    out = _line(lines, "O")
    assert "its own loop nest" in out and "parallel i (37 iterations)" in out and "vectorized j" in out
    assert "threads over the rows" in out
    assert "inside O's loop i" in _line(lines, "E") and "per chunk of O's rows" in _line(lines, "E")
    # every stage the schedule has, placeholders aside, has its line
    assert {x.split(":")[0] for x in lines[1:]} == {st.name for st in r.schedule.stages if not st.op.is_placeholder}


def test_a_tiled_reduction_reports_its_register_tile_and_the_trips_lowering_makes():
    d = definitions.matmul(96, 80, 40)
    r = auto_schedule_result(d.outputs, target=AVX2, budget=0)
    c = _line(r.summary(), "C")
    assert "a register tile" in c
    par = re.search(r"parallel (\S+) \((\d+) iterations\)", c)
    assert par is not None, c
    assert f"unrolled i.inner ({r.knobs['C.rows']} iterations)" in c
    loop = f"parallel ({par.group(1)}, 0, {par.group(2)})"
    assert loop in str(__import__("tessel").lower(r.schedule, r.args))


def test_inlined_stages_are_said_and_the_report_is_the_python_then_the_summary():
    A = te.placeholder((50, 70), name="A")
    B = te.compute((50, 70), lambda i, j: A[i, j] * 2, name="B")
    C = te.compute((50, 70), lambda i, j: B[i, j] + 1, name="C")
    r = auto_schedule_result(C, target=AVX2, budget=0)
    assert _line(r.summary(), "B") == "B: inlined -- elementwise, inlined into its readers"
    text = r.report()
    assert text.startswith(r.schedule.python()) and "# auto_schedule: every rule applied" in text
